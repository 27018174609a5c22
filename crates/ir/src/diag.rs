//! Diagnostics: errors and warnings that point at kernel source.
//!
//! Every stage that reports a problem in user code (front end, verifier,
//! interpreter, launch checks) builds a [`Diagnostic`] from [`Loc`]s and renders
//! it with the source line and a caret. Rendering is done with
//! `codespan-reporting`; locations are `file:line:col` with 1-based lines and
//! 1-based *byte* columns within the line.

use crate::loc::{Loc, SourceFile};
use codespan_reporting::diagnostic::{Diagnostic as CsDiag, Label as CsLabel, Severity as CsSeverity};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, termcolor::Buffer};
use std::fmt;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
    Note,
}

/// A marked span of source: `len` bytes starting at `loc` (at least one is marked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub loc: Loc,
    pub len: u32,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    /// Where the problem is; `None` for problems with no source position (e.g. a launch argument).
    pub primary: Option<Label>,
    pub secondary: Vec<Label>,
    /// Extra lines shown after the snippet (`= note: ...`).
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            primary: None,
            secondary: vec![],
            notes: vec![],
        }
    }

    pub fn warning(message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::error(message) }
    }

    /// Points the diagnostic at `len` bytes from `loc`.
    pub fn at(mut self, loc: Loc, len: u32) -> Diagnostic {
        self.primary = Some(Label { loc, len, message: String::new() });
        self
    }

    /// Sets the text shown under the primary caret.
    pub fn label(mut self, text: impl Into<String>) -> Diagnostic {
        if let Some(p) = &mut self.primary {
            p.message = text.into();
        }
        self
    }

    pub fn secondary(mut self, loc: Loc, len: u32, text: impl Into<String>) -> Diagnostic {
        self.secondary.push(Label { loc, len, message: text.into() });
        self
    }

    pub fn note(mut self, text: impl Into<String>) -> Diagnostic {
        self.notes.push(text.into());
        self
    }

    pub fn loc(&self) -> Option<Loc> {
        self.primary.as_ref().map(|l| l.loc)
    }

    /// Renders as text: `error: message`, ` --> file:line:col`, the source line and a caret.
    pub fn render(&self, files: &[SourceFile]) -> String {
        render(std::slice::from_ref(self), files, false)
    }
}

impl fmt::Display for Diagnostic {
    /// Without the source files at hand: `message (at file#line:col)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some(p) = &self.primary {
            if !p.loc.is_unknown() {
                write!(f, " (at line {}, column {})", p.loc.line, p.loc.col)?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}

/// Byte offset of a `Loc` in `text`, clamped to the text.
fn byte_offset(text: &str, loc: Loc) -> usize {
    let mut line_start = 0usize;
    for _ in 1..loc.line.max(1) {
        match text[line_start..].find('\n') {
            Some(i) => line_start += i + 1,
            None => return text.len(),
        }
    }
    let line_end = text[line_start..].find('\n').map_or(text.len(), |i| line_start + i);
    let mut off = (line_start + loc.col.max(1) as usize - 1).min(line_end);
    while !text.is_char_boundary(off) {
        off -= 1;
    }
    off
}

/// Renders diagnostics as plain text (or with ANSI colours when `color`).
pub fn render(diags: &[Diagnostic], files: &[SourceFile], color: bool) -> String {
    let mut db = SimpleFiles::new();
    let ids: Vec<usize> = files.iter().map(|f| db.add(f.path.clone(), f.text.clone())).collect();
    let mut buf = if color { Buffer::ansi() } else { Buffer::no_color() };
    let config = term::Config::default();
    for d in diags {
        let sev = match d.severity {
            Severity::Error => CsSeverity::Error,
            Severity::Warning => CsSeverity::Warning,
            Severity::Note => CsSeverity::Note,
        };
        let mut cs = CsDiag::new(sev).with_message(&d.message).with_notes(d.notes.clone());
        let mut labels = vec![];
        let mut to_label = |l: &Label, primary: bool| {
            if l.loc.is_unknown() {
                return;
            }
            let Some(&id) = ids.get(l.loc.file as usize) else { return };
            let text = &files[l.loc.file as usize].text;
            let start = byte_offset(text, l.loc);
            let mut end = (start + l.len.max(1) as usize).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            let lab = if primary { CsLabel::primary(id, start..end) } else { CsLabel::secondary(id, start..end) };
            labels.push(lab.with_message(&l.message));
        };
        if let Some(p) = &d.primary {
            to_label(p, true);
        }
        for s in &d.secondary {
            to_label(s, false);
        }
        cs = cs.with_labels(labels);
        if term::emit_to_write_style(&mut buf, &config, &db, &cs).is_err() {
            // Rendering failed (e.g. a stale location): fall back to the bare message.
            return diags.iter().map(|d| format!("error: {d}\n")).collect();
        }
    }
    String::from_utf8_lossy(buf.as_slice()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_line_and_caret() {
        let files = vec![SourceFile { path: "k.py".into(), text: "def f():\n    x = tl.foo(1)\n".into() }];
        let d = Diagnostic::error("unknown function `tl.foo`")
            .at(Loc { file: 0, line: 2, col: 9 }, 6)
            .label("not in triton.language");
        let s = d.render(&files);
        assert!(s.contains("error: unknown function `tl.foo`"), "{s}");
        assert!(s.contains("k.py:2:9"), "{s}");
        assert!(s.contains("x = tl.foo(1)"), "{s}");
        assert!(s.contains("^^^^^^ not in triton.language"), "{s}");
    }

    #[test]
    fn out_of_range_locations_do_not_panic() {
        let files = vec![SourceFile { path: "k.py".into(), text: "ab".into() }];
        let d = Diagnostic::error("x").at(Loc { file: 0, line: 9, col: 99 }, 3);
        let _ = d.render(&files);
        let d = Diagnostic::error("x").at(Loc { file: 7, line: 1, col: 1 }, 3);
        assert!(d.render(&files).contains("error: x"));
    }
}
