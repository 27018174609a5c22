//! Errors: every failure names where it happened (PTX line, CTA, thread).

use std::fmt;

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The PTX text does not parse or refers to undeclared names.
    Parse,
    /// A well-formed instruction (or form of one) the emulator does not implement.
    Unsupported,
    /// The launch itself is wrong: unknown entry, wrong argument count, bad grid.
    Launch,
    /// A memory access outside every buffer, or misaligned.
    Memory,
    /// Two warps touched the same shared-memory byte between barriers, one writing.
    Race,
    /// Warps wait at a barrier that can never complete.
    Deadlock,
    /// `trap`, a step limit, or another failure while running.
    Runtime,
    /// Machine code (the SASS emulator, trident-sass-emu) read a register before its value
    /// was ready, or overwrote one still being read: a schedule the hardware would run wrong.
    Hazard,
}

/// An emulator error: a message plus, when known, where in the PTX and in the grid it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmuError {
    pub kind: ErrorKind,
    pub message: String,
    /// 1-based PTX line number, and the text of that line.
    pub line: Option<(u32, String)>,
    pub cta: Option<[u32; 3]>,
    pub thread: Option<[u32; 3]>,
    /// For an access outside a buffer argument: which, and where (boxed: errors travel in
    /// every `Result` of the executor).
    pub access: Option<Box<Access>>,
}

/// A global access outside buffer argument `param`: `len` bytes at byte `offset` from its
/// start (negative: before it), the buffer being `region_bytes` long.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Access {
    pub param: usize,
    pub offset: i64,
    pub len: usize,
    pub write: bool,
    pub region_bytes: usize,
}

impl EmuError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> EmuError {
        EmuError { kind, message: message.into(), line: None, cta: None, thread: None, access: None }
    }

    pub fn parse(line: u32, text: &str, message: impl Into<String>) -> EmuError {
        EmuError::new(ErrorKind::Parse, message).at_line(line, text)
    }

    pub fn launch(message: impl Into<String>) -> EmuError {
        EmuError::new(ErrorKind::Launch, message)
    }

    pub fn at_line(mut self, line: u32, text: &str) -> EmuError {
        self.line = Some((line, text.trim().to_string()));
        self
    }

    pub fn at_thread(mut self, cta: [u32; 3], thread: [u32; 3]) -> EmuError {
        self.cta = Some(cta);
        self.thread = Some(thread);
        self
    }
}

impl fmt::Display for EmuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some((n, text)) = &self.line {
            write!(f, " at line {n}: `{text}`")?;
        }
        if let Some(c) = self.cta {
            write!(f, ", CTA ({},{},{})", c[0], c[1], c[2])?;
        }
        if let Some(t) = self.thread {
            write!(f, ", thread ({},{},{})", t[0], t[1], t[2])?;
        }
        Ok(())
    }
}

impl std::error::Error for EmuError {}
