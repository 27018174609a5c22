//! Runs every `tests/filetests/*.tir`: parse the input, run the passes named on the
//! `// RUN:` line (this crate's and `trident-opt`'s, see `passes::add_pipeline`), and
//! compare the printed result with the `// EXPECTED:` section (or check the error
//! against `// EXPECTED-ERROR:`). `BLESS=1` rewrites the expected sections;
//! `FILETEST=part` runs only the files whose name contains `part`.
//!
//! The module's source file is the `.tir` file itself, so region names read
//! `loop@NAME.tir:LINE` with the line of the op in the test. `// PRINT: locs` prints
//! locations; `// PRINT: regions` appends `regions_of` for each function as comments.

use std::path::{Path, PathBuf};
use trident_ir::{
    diag, parse_module, parse_module_with, print_module, verify_module, ParseOptions, PrintOptions, SourceFile,
};
use trident_opt::PassManager;
use trident_profile::passes::add_pipeline;
use trident_profile::regions_of;

const EXPECTED: &str = "// EXPECTED:";
const EXPECTED_ERROR: &str = "// EXPECTED-ERROR:";

struct Case {
    pipeline: String,
    locs: bool,
    regions: bool,
    input: String,
    expected_at: Option<usize>,
    expected: Option<String>,
    expected_error: Option<String>,
}

fn split(text: &str) -> Result<Case, String> {
    let pipeline = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("// RUN:"))
        .ok_or("no `// RUN: <passes>` line")?
        .trim()
        .to_string();
    let locs = text.lines().any(|l| l.trim() == "// PRINT: locs");
    let regions = text.lines().any(|l| l.trim() == "// PRINT: regions");
    let mut case = Case {
        pipeline,
        locs,
        regions,
        input: text.to_string(),
        expected_at: None,
        expected: None,
        expected_error: None,
    };
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

fn normalize(s: &str) -> String {
    let lines: Vec<&str> = s.lines().map(str::trim_end).collect();
    let start = lines.iter().position(|l| !l.is_empty()).unwrap_or(lines.len());
    let end = lines.iter().rposition(|l| !l.is_empty()).map_or(start, |i| i + 1);
    lines[start..end].join("\n")
}

fn run_file(path: &Path, bless: bool) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let case = split(&text)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let files = vec![SourceFile { path: name, text: case.input.clone() }];
    let opts = ParseOptions { text_locs: true, ..Default::default() };
    let mut m = parse_module_with(&case.input, &opts).map_err(|d| d.render(&files))?;
    m.files = files.clone();
    verify_module(&m).map_err(|e| format!("input does not verify:\n{}", diag::render(&e, &files, false)))?;
    let mut pm = PassManager::new();
    pm.print_ir_after_all = false;
    add_pipeline(&mut pm, &case.pipeline)?;
    let result = pm.run(&mut m);
    if let Some(want) = &case.expected_error {
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
    let popts = PrintOptions { locs: case.locs };
    let ir = print_module(&shown, &popts);
    let back = parse_module(&ir).map_err(|d| format!("output does not parse back: {d}\n{ir}"))?;
    if print_module(&back, &popts) != ir {
        return Err("output does not round-trip through the parser".into());
    }
    let mut actual = ir;
    if case.regions {
        for f in &m.funcs {
            let t = regions_of(f, &m.files).map_err(|d| d.render(&files))?;
            actual.push_str(&format!("// regions of @{}:\n", f.name));
            for r in &t.regions {
                let at = r.loc.as_ref().map_or("?".to_string(), |l| l.to_string());
                actual.push_str(&format!("//   {} {} {:?} at {at}\n", r.id, r.kind.as_str(), r.name));
            }
            for op in f.all_ops() {
                if matches!(f.ops[op].kind, trident_ir::OpKind::Record { .. }) && t.id_of(op).is_none() {
                    return Err(format!("record {op} has no region id"));
                }
            }
        }
    }
    if bless {
        let at = case.expected_at.unwrap_or(text.len());
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
    let Some(want) = &case.expected else {
        return Err(format!("no `{EXPECTED}` section (run with BLESS=1 to create it); the output is:\n{actual}"));
    };
    let (want, got) = (normalize(want), normalize(&actual));
    if want == got {
        Ok(())
    } else {
        Err(format!("output differs from `{EXPECTED}`:\n--- expected\n{want}\n--- actual\n{got}"))
    }
}

fn filetest_paths() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/filetests");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tir"))
        .collect();
    paths.sort();
    paths
}

#[test]
fn filetests() {
    let bless = std::env::var_os("BLESS").is_some_and(|v| v == "1");
    let only = std::env::var("FILETEST").ok();
    let mut failures = vec![];
    let mut ran = 0;
    for p in &filetest_paths() {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if only.as_ref().is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        ran += 1;
        if let Err(e) = run_file(p, bless) {
            failures.push(format!("---- {name} ----\n{e}"));
        }
    }
    assert!(ran > 0, "no filetest ran");
    if !failures.is_empty() {
        panic!("{} of {ran} filetests failed:\n\n{}", failures.len(), failures.join("\n"));
    }
}
