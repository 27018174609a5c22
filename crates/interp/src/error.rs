//! Launch errors: what went wrong, where in the kernel source, in which program.

use std::fmt;
use trident_ir::{Diagnostic, Module, SourceFile};

/// What kind of failure stopped a launch (for callers and tests that branch on it).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad launch request: unknown kernel, wrong argument count or types, bad grid.
    Launch,
    /// A load, store or atomic outside the buffer its pointer came from.
    OutOfBounds,
    /// A pointer not inside any buffer (null, or computed from an integer).
    InvalidPointer,
    /// An access whose address is not a multiple of the element size.
    Misaligned,
    /// Integer division or remainder by zero.
    DivisionByZero,
    /// `tl.device_assert` failed.
    AssertFailed,
    /// A construct the interpreter does not run, or malformed IR it cannot make sense of.
    Unsupported,
}

/// A failed launch. Renders as a diagnostic pointing at the op's source location;
/// use [`InterpError::render`] with the module to get the source line and a caret.
#[derive(Clone, Debug)]
pub struct InterpError {
    pub kind: ErrorKind,
    pub diag: Box<Diagnostic>,
}

impl InterpError {
    pub(crate) fn launch(msg: impl Into<String>) -> InterpError {
        InterpError { kind: ErrorKind::Launch, diag: Box::new(Diagnostic::error(msg)) }
    }

    pub fn message(&self) -> &str {
        &self.diag.message
    }

    /// The full diagnostic text (`error: ...`, ` --> file:line:col`, source line, caret).
    pub fn render(&self, module: &Module) -> String {
        self.diag.render(&module.files)
    }

    /// As [`InterpError::render`], with the source files given directly.
    pub fn render_with(&self, files: &[SourceFile]) -> String {
        self.diag.render(files)
    }
}

impl fmt::Display for InterpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.diag)
    }
}

impl std::error::Error for InterpError {}

/// An op's failure before the executor adds the location and program.
#[derive(Clone, Debug)]
pub(crate) struct Fault {
    pub kind: ErrorKind,
    pub msg: String,
    /// Flat index of the offending element in the op's block value, with that value's shape.
    pub element: Option<(usize, Vec<u32>)>,
}

impl Fault {
    pub fn new(kind: ErrorKind, msg: String) -> Fault {
        Fault { kind, msg, element: None }
    }

    /// IR the interpreter cannot execute (the verifier should have caught it).
    pub fn internal(msg: String) -> Fault {
        Fault::new(ErrorKind::Unsupported, msg)
    }

    pub fn at_element(mut self, flat: usize, shape: &[u32]) -> Fault {
        self.element = Some((flat, shape.to_vec()));
        self
    }
}

/// Why execution of a program stopped early.
#[derive(Debug)]
pub(crate) enum Stop {
    /// A failure of the op being executed; the executor adds its location.
    Fault(Fault),
    /// A failure already located (at an op in a nested region or callee).
    Located(Box<InterpError>),
    /// Another program with a lower index failed: this one's outcome no longer matters.
    Abort,
}

impl From<Fault> for Stop {
    fn from(f: Fault) -> Stop {
        Stop::Fault(f)
    }
}
