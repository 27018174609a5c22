//! The harness of the text-format pass tests ("filetests") every crate with passes uses
//! (`trident-opt`, `trident-gpu`, `trident-profile`): IR in, passes, IR out.
//!
//! A filetest is a `.tir` file: IR text, with directives in `//` comments —
//!
//! * `// RUN: pass, pass{options}, ...` — the passes, in order (the crate's [`Runner`]
//!   knows their names);
//! * `// PRINT: locs` — print the result with source locations; other `// KEY: value`
//!   lines are the runner's (e.g. the GPU crate's `// OPTIONS:`), see [`FileTest::directive`];
//! * then either `// EXPECTED:` followed by the IR the passes must produce, or
//!   `// EXPECTED-ERROR: text` — the passes must fail with a diagnostic containing `text`.
//!
//! The input is verified before the passes run; the output must parse back to itself.
//! `BLESS=1` rewrites every `// EXPECTED:` section with what the passes produce (review the
//! diff: a blessed expectation is a claim that the output is right); `FILETEST=part` runs
//! only the files whose name contains `part`. The module's source file is the `.tir` file
//! itself (named by its file name), so names passes derive from locations read
//! `NAME.tir:LINE`.

use std::path::{Path, PathBuf};

use trident_ir::{
    diag, parse_module, parse_module_with, print_module, verify_module, Module, ParseOptions, PrintOptions, SourceFile,
};

use crate::PassManager;

const EXPECTED: &str = "// EXPECTED:";
const EXPECTED_ERROR: &str = "// EXPECTED-ERROR:";

/// One filetest, split into its parts.
#[derive(Clone, Debug)]
pub struct FileTest {
    /// The `// RUN:` line's pipeline.
    pub pipeline: String,
    /// The text before the `// EXPECTED` marker: the input IR with its directives.
    pub input: String,
    /// Byte offset of the `// EXPECTED` marker (for rewriting).
    expected_at: Option<usize>,
    expected: Option<String>,
    expected_error: Option<String>,
}

impl FileTest {
    /// Splits a filetest's text; `Err` when it has no `// RUN:` line.
    pub fn parse(text: &str) -> Result<FileTest, String> {
        let pipeline = directive(text, "RUN").ok_or("no `// RUN: <passes>` line")?.to_string();
        let mut case =
            FileTest { pipeline, input: text.to_string(), expected_at: None, expected: None, expected_error: None };
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            let t = line.trim();
            if t == EXPECTED {
                case.input = text[..offset].to_string();
                case.expected_at = Some(offset);
                case.expected = Some(text[offset + line.len()..].to_string());
                break;
            }
            if let Some(msg) = t.strip_prefix(EXPECTED_ERROR) {
                case.input = text[..offset].to_string();
                case.expected_error = Some(msg.trim().to_string());
                break;
            }
            offset += line.len();
        }
        Ok(case)
    }

    /// The value of the input's `// KEY: value` line, if it has one.
    pub fn directive(&self, key: &str) -> Option<&str> {
        directive(&self.input, key)
    }

    /// Whether the input has the line `// PRINT: what`.
    pub fn prints(&self, what: &str) -> bool {
        self.input.lines().any(|l| l.trim().strip_prefix("// PRINT:").is_some_and(|w| w.trim() == what))
    }
}

fn directive<'t>(text: &'t str, key: &str) -> Option<&'t str> {
    let prefix = format!("// {key}:");
    text.lines().find_map(|l| l.trim().strip_prefix(prefix.as_str())).map(str::trim)
}

/// What a crate supplies to run its filetests.
pub trait Runner {
    /// The pass manager for a test's `// RUN:` line (and the crate's other directives).
    fn passes(&self, test: &FileTest) -> Result<PassManager, String>;

    /// Text appended to the printed result (e.g. an analysis of it, as `//` comments).
    fn extra_output(&self, _m: &Module, _test: &FileTest) -> Result<String, String> {
        Ok(String::new())
    }
}

/// Lines without trailing blanks, and without leading/trailing empty lines.
fn normalize(s: &str) -> String {
    let lines: Vec<&str> = s.lines().map(str::trim_end).collect();
    let start = lines.iter().position(|l| !l.is_empty()).unwrap_or(lines.len());
    let end = lines.iter().rposition(|l| !l.is_empty()).map_or(start, |i| i + 1);
    lines[start..end].join("\n")
}

/// A line diff (longest common subsequence), `-` expected, `+` actual.
pub fn diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push_str(&format!("  {}\n", a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push_str(&format!("+ {}\n", b[j]));
            j += 1;
        } else {
            out.push_str(&format!("- {}\n", a[i]));
            i += 1;
        }
    }
    out
}

/// Runs one filetest (rewriting its expectation when `bless`); `Err` describes the failure.
pub fn run_file(path: &Path, bless: bool, runner: &dyn Runner) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let test = FileTest::parse(&text)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let files = vec![SourceFile { path: name, text: test.input.clone() }];
    let opts = ParseOptions { text_locs: true, ..Default::default() };
    let mut m = parse_module_with(&test.input, &opts).map_err(|d| d.render(&files))?;
    m.files = files.clone();
    verify_module(&m).map_err(|e| format!("input does not verify:\n{}", diag::render(&e, &files, false)))?;
    let mut pm = runner.passes(&test)?;
    pm.print_ir_after_all = false;
    let result = pm.run(&mut m);
    if let Some(want) = &test.expected_error {
        return match result {
            Ok(()) => Err(format!("expected an error containing {want:?}, but the passes succeeded:\n{m}")),
            Err(e) => {
                let got = diag::render(&e, &files, false);
                if got.contains(want.as_str()) {
                    Ok(())
                } else {
                    Err(format!("expected an error containing {want:?}, got:\n{got}"))
                }
            }
        };
    }
    result.map_err(|e| format!("the passes failed:\n{}", diag::render(&e, &files, false)))?;
    // Printed without the file list: the output is compared as text and parsed back.
    let mut shown = m.clone();
    shown.files.clear();
    let popts = PrintOptions { locs: test.prints("locs") };
    let ir = print_module(&shown, &popts);
    // The output must itself be valid text that parses back to the same thing.
    let back = parse_module(&ir).map_err(|d| format!("output does not parse back: {d}\n{ir}"))?;
    if print_module(&back, &popts) != ir {
        return Err("output does not round-trip through the parser".into());
    }
    let actual = ir + &runner.extra_output(&m, &test)?;
    if bless {
        let at = test.expected_at.unwrap_or(text.len());
        let mut new = text[..at].to_string();
        if !new.ends_with('\n') {
            new.push('\n');
        }
        new.push_str(EXPECTED);
        new.push('\n');
        new.push_str(&actual);
        if new != text {
            std::fs::write(path, new).map_err(|e| e.to_string())?;
        }
        return Ok(());
    }
    let Some(want) = &test.expected else {
        return Err(format!("no `{EXPECTED}` section (run with BLESS=1 to create it); the output is:\n{actual}"));
    };
    let (want, got) = (normalize(want), normalize(&actual));
    if want == got {
        Ok(())
    } else {
        Err(format!("output differs from `{EXPECTED}` (- expected, + actual):\n{}", diff(&want, &got)))
    }
}

/// Every `.tir` file in `dir`, sorted.
fn paths(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tir"))
        .collect();
    paths.sort();
    paths
}

/// Runs every filetest in `dir` (honouring `BLESS=1` and `FILETEST=part`) and panics with
/// every failure: the body of a crate's `#[test] fn filetests()`.
pub fn run_dir(dir: &Path, runner: &dyn Runner) {
    let bless = std::env::var_os("BLESS").is_some_and(|v| v == "1");
    let only = std::env::var("FILETEST").ok();
    let all = paths(dir);
    assert!(!all.is_empty(), "no filetests in {}", dir.display());
    let mut failures = vec![];
    let mut ran = 0;
    for p in &all {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if only.as_ref().is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        ran += 1;
        if let Err(e) = run_file(p, bless, runner) {
            failures.push(format!("---- {name} ----\n{e}"));
        }
    }
    assert!(ran > 0, "FILETEST matched no file");
    if !failures.is_empty() {
        panic!("{} of {ran} filetests failed:\n\n{}", failures.len(), failures.join("\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_directives_and_sections() {
        let t = FileTest::parse("// RUN: cse, dce\n// OPTIONS: num_warps=2\n// PRINT: locs\nkernel @k() {\n  return\n}\n// EXPECTED:\nkernel @k() {\n  return\n}\n").unwrap();
        assert_eq!(t.pipeline, "cse, dce");
        assert_eq!(t.directive("OPTIONS"), Some("num_warps=2"));
        assert!(t.prints("locs") && !t.prints("regions"));
        assert!(t.input.ends_with("}\n") && !t.input.contains("EXPECTED"));
        assert_eq!(t.expected.as_deref(), Some("kernel @k() {\n  return\n}\n"));
        let e = FileTest::parse("// RUN: x\nkernel @k() {\n}\n// EXPECTED-ERROR: boom\n").unwrap();
        assert_eq!(e.expected_error.as_deref(), Some("boom"));
        assert!(FileTest::parse("kernel @k() {}\n").is_err());
    }

    #[test]
    fn diff_marks_removed_and_added_lines() {
        assert_eq!(diff("a\nb\nc", "a\nx\nc"), "  a\n+ x\n- b\n  c\n");
    }
}
