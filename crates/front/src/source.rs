//! Source positions: byte offsets from the parser to 1-based `line:col` [`Loc`]s,
//! and small helpers to build diagnostics that point at a syntax node.

use ruff_text_size::{TextRange, TextSize};
use trident_ir::{Diagnostic, Loc};

/// Start offsets of every line of a file, for offset → line/column conversion by binary search.
#[derive(Clone, Debug)]
pub(crate) struct LineIndex {
    starts: Vec<u32>,
}

impl LineIndex {
    pub(crate) fn new(text: &str) -> LineIndex {
        let mut starts = vec![0u32];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                starts.push(i as u32 + 1);
            }
        }
        LineIndex { starts }
    }

    /// The 1-based line and 1-based byte column of a byte offset.
    pub(crate) fn line_col(&self, offset: u32) -> (u32, u32) {
        let line = match self.starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        (line as u32 + 1, offset - self.starts[line] + 1)
    }
}

/// One source file as the lowering sees it: its index in `Module::files` and its line table.
#[derive(Copy, Clone)]
pub(crate) struct SrcRef<'a> {
    pub file: u32,
    pub lines: &'a LineIndex,
}

impl SrcRef<'_> {
    pub(crate) fn loc(&self, offset: TextSize) -> Loc {
        let (line, col) = self.lines.line_col(offset.to_u32());
        Loc { file: self.file, line, col }
    }

    /// A diagnostic pointing at `range`.
    pub(crate) fn error(&self, range: TextRange, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(msg).at(self.loc(range.start()), range.len().to_u32().max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_map_to_one_based_lines_and_columns() {
        let idx = LineIndex::new("ab\ncde\n\nf");
        assert_eq!(idx.line_col(0), (1, 1));
        assert_eq!(idx.line_col(1), (1, 2));
        assert_eq!(idx.line_col(3), (2, 1));
        assert_eq!(idx.line_col(5), (2, 3));
        assert_eq!(idx.line_col(7), (3, 1));
        assert_eq!(idx.line_col(8), (4, 1));
    }
}
