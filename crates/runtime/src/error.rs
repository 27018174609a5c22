//! The error every launch-path operation returns: [`RunError`], text ready for a terminal.
//!
//! It sits at the bottom of the crate (it imports nothing above it) so that every
//! module can return it without depending on the launch flow.

use std::fmt;

use trident_ir::{Diagnostic, SourceFile};

/// What went wrong, for callers that react differently (the Python package raises
/// `CompilationError` for [`ErrorKind::Compile`], `TypeError`/`ValueError` for
/// [`ErrorKind::Argument`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum ErrorKind {
    /// The kernel's source: diagnostics with source lines (the front end, the compiler).
    Compile,
    /// A launch argument: missing, extra, of the wrong type or value.
    Argument,
    /// Anything else: a fault while running, a tool, the cache, the GPU.
    #[default]
    Other,
}

/// A failed load, compile or launch, rendered for humans.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunError {
    /// The full text: `error: ...` with source snippets where there are any.
    pub text: String,
    /// What kind of failure it is.
    pub kind: ErrorKind,
}

impl RunError {
    /// An error from a one-line message; `error: ` is put in front unless it is there already.
    pub fn msg(m: impl Into<String>) -> RunError {
        let m = m.into();
        RunError::other(if m.starts_with("error") { m } else { format!("error: {m}") })
    }

    /// A bad launch argument ([`ErrorKind::Argument`]); `error: ` is put in front.
    pub fn argument(m: impl Into<String>) -> RunError {
        RunError { kind: ErrorKind::Argument, ..RunError::msg(m) }
    }

    /// An error of kind [`ErrorKind::Other`] with this full text.
    pub fn other(text: impl Into<String>) -> RunError {
        RunError { text: text.into(), kind: ErrorKind::Other }
    }

    /// Diagnostics rendered with the source lines they point at.
    pub fn from_diags(ds: &[Diagnostic], files: &[SourceFile]) -> RunError {
        RunError { text: trident_ir::diag::render(ds, files, false), kind: ErrorKind::Compile }
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text.trim_end())
    }
}

impl std::error::Error for RunError {}
