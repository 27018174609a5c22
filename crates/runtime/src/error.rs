//! The error every launch-path operation returns: [`RunError`], text ready for a terminal.
//!
//! It sits at the bottom of the crate (it imports nothing above it) so that every
//! module can return it without depending on the launch flow.

use std::fmt;

use trident_ir::{Diagnostic, SourceFile};

/// A failed load, compile or launch, rendered for humans.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunError {
    /// The full text: `error: ...` with source snippets where there are any.
    pub text: String,
}

impl RunError {
    /// An error from a one-line message; `error: ` is put in front unless it is there already.
    pub fn msg(m: impl Into<String>) -> RunError {
        let m = m.into();
        RunError { text: if m.starts_with("error") { m } else { format!("error: {m}") } }
    }

    /// Diagnostics rendered with the source lines they point at.
    pub fn from_diags(ds: &[Diagnostic], files: &[SourceFile]) -> RunError {
        RunError { text: trident_ir::diag::render(ds, files, false) }
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text.trim_end())
    }
}

impl std::error::Error for RunError {}
