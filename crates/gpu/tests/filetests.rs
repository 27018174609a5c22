//! Text-format tests of the GPU passes: runs every `tests/filetests/*.tir`: parse the input
//! (tile IR for `gpu-assign-layouts`, GPU IR with `#L` layouts for the later passes), run
//! the passes named on the `// RUN:` line (GPU pass names from
//! `trident_gpu::passes::registry`, tile pass names from `trident-opt`) with the options of
//! the `// OPTIONS:` line (`num_warps=4 num_stages=3 target=sm_90a max_shared_bytes=N`;
//! defaults otherwise), and compare the printed result with the `// EXPECTED:` section (or
//! check the error against `// EXPECTED-ERROR:`). `BLESS=1` rewrites the expected sections
//! with what the passes produce; `FILETEST=name` runs the files whose name contains it.

use std::path::{Path, PathBuf};
use trident_gpu::passes::registry;
use trident_gpu::GpuOptions;
use trident_ir::{
    diag, parse_module, parse_module_with, print_module, verify_module, ParseOptions, PrintOptions, SourceFile,
};
use trident_opt::PassManager;

const EXPECTED: &str = "// EXPECTED:";
const EXPECTED_ERROR: &str = "// EXPECTED-ERROR:";

struct Case {
    pipeline: String,
    /// The `// OPTIONS:` words.
    options: String,
    /// `// PRINT: locs` prints the result with locations.
    locs: bool,
    input: String,
    /// Everything from the `// EXPECTED` marker on (for rewriting).
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
    let options =
        text.lines().find_map(|l| l.trim().strip_prefix("// OPTIONS:")).unwrap_or_default().trim().to_string();
    let locs = text.lines().any(|l| l.trim() == "// PRINT: locs");
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t == EXPECTED {
            let rest = &text[offset + line.len()..];
            return Ok(Case {
                pipeline,
                options: options.clone(),
                locs,
                input: text[..offset].to_string(),
                expected_at: Some(offset),
                expected: Some(rest.to_string()),
                expected_error: None,
            });
        }
        if let Some(msg) = t.strip_prefix(EXPECTED_ERROR) {
            return Ok(Case {
                pipeline,
                options: options.clone(),
                locs,
                input: text[..offset].to_string(),
                expected_at: None,
                expected: None,
                expected_error: Some(msg.trim().to_string()),
            });
        }
        offset += line.len();
    }
    Ok(Case {
        pipeline,
        options,
        locs,
        input: text.to_string(),
        expected_at: None,
        expected: None,
        expected_error: None,
    })
}

/// Lines without trailing blanks, and without leading/trailing empty lines.
fn normalize(s: &str) -> String {
    let lines: Vec<&str> = s.lines().map(str::trim_end).collect();
    let start = lines.iter().position(|l| !l.is_empty()).unwrap_or(lines.len());
    let end = lines.iter().rposition(|l| !l.is_empty()).map_or(start, |i| i + 1);
    lines[start..end].join("\n")
}

/// A line diff (longest common subsequence), `-` expected, `+` actual.
fn diff(expected: &str, actual: &str) -> String {
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

/// Runs one file; `Err` describes the failure.
fn run_file(path: &Path, bless: bool) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let case = split(&text)?;
    let files = [SourceFile { path: path.display().to_string(), text: case.input.clone() }];
    let opts = ParseOptions { text_locs: true, ..Default::default() };
    let mut m = parse_module_with(&case.input, &opts).map_err(|d| d.render(&files))?;
    verify_module(&m).map_err(|e| format!("input does not verify:\n{}", diag::render(&e, &files, false)))?;
    let opts = GpuOptions::parse_words(&case.options)?;
    let mut pm = PassManager::new();
    pm.print_ir_after_all = false;
    registry::add_pipeline(&mut pm, &case.pipeline, &opts)?;
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
    let popts = PrintOptions { locs: case.locs };
    let actual = print_module(&m, &popts);
    // The output must itself be valid text that parses back to the same thing.
    let back = parse_module(&actual).map_err(|d| format!("output does not parse back: {d}\n{actual}"))?;
    if print_module(&back, &popts) != actual {
        return Err("output does not round-trip through the parser".into());
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
        Err(format!("output differs from `{EXPECTED}` (- expected, + actual):\n{}", diff(&want, &got)))
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
    let paths = filetest_paths();
    assert!(!paths.is_empty(), "no filetests found");
    let mut failures = vec![];
    let mut ran = 0;
    for p in &paths {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if only.as_ref().is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        ran += 1;
        if let Err(e) = run_file(p, bless) {
            failures.push(format!("---- {name} ----\n{e}"));
        }
    }
    assert!(ran > 0, "FILETEST matched no file");
    if !failures.is_empty() {
        panic!("{} of {ran} filetests failed:\n\n{}", failures.len(), failures.join("\n"));
    }
}

#[test]
fn runner_reports_mismatches_and_blesses() {
    let dir = std::env::temp_dir().join(format!("trident-gpu-filetest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.tir");
    let input = "// RUN: gpu-assign-layouts\n// OPTIONS: num_warps=2\nkernel @k(%p: ptr<f32>) {\n  %0 = arange [start = 0, end = 64] : tensor<64xi32>\n  %1 = splat %p : tensor<64xptr<f32>>\n  %2 = addptr %1, %0 : tensor<64xptr<f32>>\n  %3 = load %2 : tensor<64xf32>\n  store %2, %3\n  return\n}\n";
    std::fs::write(&path, format!("{input}// EXPECTED:\nkernel @k(%p: ptr<f32>) {{\n  return\n}}\n")).unwrap();
    let err = run_file(&path, false).unwrap_err();
    assert!(err.contains("+   #L0 = blocked"), "{err}");
    run_file(&path, true).unwrap();
    let blessed = std::fs::read_to_string(&path).unwrap();
    assert!(blessed.starts_with(input), "{blessed}");
    // The options reached the pass: two warps.
    assert!(blessed.contains("warps_per_cta = [2]"), "{blessed}");
    run_file(&path, false).unwrap();
    // A bad option is the file's failure, not a panic.
    std::fs::write(&path, input.replace("num_warps=2", "num_warps=two")).unwrap();
    assert!(run_file(&path, false).unwrap_err().contains("needs a number"));
    std::fs::remove_dir_all(&dir).ok();
}
