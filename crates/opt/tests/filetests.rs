//! Runs every `tests/filetests/*.tir` through the shared harness (`trident_opt::filetest`):
//! parse the input, run the tile passes named on the `// RUN:` line, compare the printed
//! result with the `// EXPECTED:` section (or the error with `// EXPECTED-ERROR:`).
//! `BLESS=1` rewrites the expected sections; `FILETEST=part` picks files. See README.md.

use std::path::Path;
use trident_opt::filetest::{run_dir, run_file, FileTest, Runner};
use trident_opt::PassManager;

/// Tile passes by their registered names.
struct TilePasses;

impl Runner for TilePasses {
    fn passes(&self, test: &FileTest) -> Result<PassManager, String> {
        let mut pm = PassManager::new();
        pm.add_pipeline(&test.pipeline)?;
        Ok(pm)
    }
}

#[test]
fn filetests() {
    run_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/filetests"), &TilePasses);
}

#[test]
fn runner_reports_mismatches_and_blesses() {
    let dir = std::env::temp_dir().join(format!("trident-filetest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.tir");
    let input = "// RUN: canonicalize\nkernel @k(%a: i32) -> (i32) {\n  %0 = constant [value = 2] : i32\n  %1 = constant [value = 3] : i32\n  %2 = add %0, %1 : i32\n  %3 = mul %a, %2 : i32\n  return %3\n}\n";
    std::fs::write(&path, format!("{input}// EXPECTED:\nkernel @k(%a: i32) -> (i32) {{\n  return %a\n}}\n")).unwrap();
    let err = run_file(&path, false, &TilePasses).unwrap_err();
    assert!(err.contains("- kernel") || err.contains("+   %"), "{err}");
    run_file(&path, true, &TilePasses).unwrap();
    let blessed = std::fs::read_to_string(&path).unwrap();
    assert!(blessed.starts_with(input), "{blessed}");
    assert!(blessed.contains("constant [value = 5] : i32"), "{blessed}");
    run_file(&path, false, &TilePasses).unwrap();
    // An expected error that does not come is a failure.
    std::fs::write(&path, format!("{input}// EXPECTED-ERROR: no such thing\n")).unwrap();
    assert!(run_file(&path, false, &TilePasses).unwrap_err().contains("succeeded"));
    std::fs::remove_dir_all(&dir).ok();
}
