//! Every held-out construct (tests/heldout/CASES.md: our own kernels covering what real-world
//! kernels needed) compiles to PTX that `ptxas` accepts for sm_80 and sm_90 with no warnings.
//! Needs ptxas (scripts/install-tools puts it in .tools/).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn heldout_cases_pass_ptxas_for_sm80_and_sm90() {
    let cases = std::fs::read_to_string(root().join("tests/heldout/CASES.md")).expect("CASES.md");
    let block = cases.split("```cases").nth(1).and_then(|b| b.split("```").next()).expect("a ```cases block");
    let out = std::env::temp_dir().join(format!("trident-ptxas-cov-{}.cubin", std::process::id()));
    let mut checked = 0;
    let mut failures = vec![];
    for line in block.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let fields: Vec<&str> = line.split('|').map(str::trim).collect();
        let (name, target, words) = (fields[0], fields[2], fields[3]);
        // Launch words minus the grid: compile takes the same NAME=VALUE arguments.
        // The held-out script's own generators (`randint:DT:SHAPE:LO:HI`, `arange:DT:SHAPE`) only
        // pick values; for compiling, a zeros tensor of the same dtype and shape is the same.
        let mut args: Vec<String> = vec![];
        let mut it = words.split_whitespace();
        while let Some(w) = it.next() {
            if w == "--grid" {
                it.next();
                continue;
            }
            let arg = match w.split_once('=') {
                Some((n, v)) if v.starts_with("randint:") || v.starts_with("arange:") => {
                    let parts: Vec<&str> = v.split(':').collect();
                    format!("{n}=zeros:{}:{}", parts[1], parts[2])
                }
                _ => w.to_string(),
            };
            args.push(arg);
        }
        for arch in ["sm_80", "sm_90"] {
            let o = Command::new(env!("CARGO_BIN_EXE_trident"))
                .current_dir(root().join("tests/heldout"))
                .args(["compile", target, "--emit", "cubin", "--target", arch, "-o", out.to_str().unwrap()])
                .args(&args)
                .output()
                .expect("runs");
            let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
            if !o.status.success() || text.to_lowercase().contains("warning") {
                failures.push(format!("--- {name} ({arch})\n{text}"));
            }
            checked += 1;
        }
    }
    let _ = std::fs::remove_file(&out);
    assert!(checked >= 30, "only {checked} compilations");
    assert!(failures.is_empty(), "{} of {checked} failed:\n{}", failures.len(), failures.join("\n"));
}
