//! Source locations. Every op carries the `file:line:col` it came from so that
//! diagnostics, IR dumps, PTX `.loc` lines and profiles point at kernel source.

use std::fmt;

/// Index of a source file in [`crate::Module::files`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// A position in kernel source; lines and columns are 1-based, 0 means unknown.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Loc {
    pub file: u32,
    pub line: u32,
    pub col: u32,
}

impl Loc {
    pub const UNKNOWN: Loc = Loc { file: 0, line: 0, col: 0 };

    pub fn new(file: FileId, line: u32, col: u32) -> Loc {
        Loc { file: file.0, line, col }
    }

    pub fn is_unknown(self) -> bool {
        self.line == 0
    }

    pub fn file_id(self) -> FileId {
        FileId(self.file)
    }
}

/// A source file known to a module: its path (as given by the user) and text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    pub path: String,
    pub text: String,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}
