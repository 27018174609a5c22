//! Helper for `kernels/check_with_oracle.py`: writes every case's inputs as
//! `.npy` files plus a manifest the script feeds to the Triton oracle, then
//! checks the oracle's outputs against our references.
//!
//! ```text
//! testkit-oracle list
//! testkit-oracle prepare DIR [--seed N] [--filter TEXT]
//! testkit-oracle verify DIR
//! ```
//!
//! `prepare` writes `DIR/manifest.tsv` (first line `# seed N`, then one line
//! per case: index, name, kernel file, kernel, grid `X,Y,Z`, the oracle's
//! `NAME=VALUE` arguments separated by spaces, output names separated by
//! commas) and `DIR/NNN/in_NAME.npy` for each tensor argument. Tensors the
//! oracle cannot take from a plain `.npy` (bf16, fp8) are passed as
//! `@PATH:DTYPE`, which the script understands. The script saves outputs as
//! `DIR/NNN/out_NAME.npy`, or writes `DIR/NNN/error.txt` when the oracle fails.
//! `verify` regenerates the inputs from the seed (generation is deterministic),
//! compares, prints a table and exits non-zero if anything failed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use trident_runtime::args::ArgValue;
use trident_runtime::npy;
use trident_testkit::{cases, check, Case, TensorList};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("list") => {
            for c in cases() {
                println!("{}\t{}", c.name, c.command_line().join(" "));
            }
            Ok(true)
        }
        Some("prepare") => prepare(&args[1..]),
        Some("verify") => verify(&args[1..]),
        _ => Err("usage: testkit-oracle list | prepare DIR [--seed N] [--filter TEXT] | verify DIR".to_string()),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("testkit-oracle: {e}");
            ExitCode::from(2)
        }
    }
}

fn case_dir(dir: &Path, index: usize) -> PathBuf {
    dir.join(format!("{index:03}"))
}

fn prepare(args: &[String]) -> Result<bool, String> {
    let dir = PathBuf::from(args.first().ok_or("prepare needs a directory")?);
    let (mut seed, mut filter) = (0u64, String::new());
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        let v = it.next().ok_or(format!("{a} needs a value"))?;
        match a.as_str() {
            "--seed" => seed = v.parse().map_err(|_| format!("bad seed {v}"))?,
            "--filter" => filter = v.clone(),
            _ => return Err(format!("unknown option {a}")),
        }
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut manifest = format!("# seed {seed}\n");
    for (index, case) in cases().iter().enumerate() {
        if !case.name.contains(&filter) {
            continue;
        }
        let cdir = case_dir(&dir, index);
        std::fs::create_dir_all(&cdir).map_err(|e| format!("{}: {e}", cdir.display()))?;
        let inputs = case.materialize(seed).map_err(|e| format!("{}: {e}", case.name))?;
        let mut oracle_args = Vec::new();
        for a in &inputs {
            match &a.value {
                ArgValue::Tensor(t) => {
                    let p = cdir.join(format!("in_{}.npy", a.name));
                    npy::write(&p, t).map_err(|e| e.to_string())?;
                    let suffix =
                        if npy::storage_dtype(t.dtype) != t.dtype { format!(":{}", t.dtype) } else { String::new() };
                    oracle_args.push(format!("{}=@{}{suffix}", a.name, p.display()));
                }
                _ => oracle_args.push(a.text.clone()),
            }
        }
        let g = case.grid;
        let outputs: Vec<&str> = case.outputs.iter().map(|o| o.name.as_str()).collect();
        manifest.push_str(&format!(
            "{index}\t{}\t{}\t{}\t{},{},{}\t{}\t{}\n",
            case.name,
            case.file,
            case.kernel,
            g.x,
            g.y,
            g.z,
            oracle_args.join(" "),
            outputs.join(",")
        ));
    }
    let mpath = dir.join("manifest.tsv");
    std::fs::write(&mpath, manifest).map_err(|e| format!("{}: {e}", mpath.display()))?;
    Ok(true)
}

fn verify(args: &[String]) -> Result<bool, String> {
    let dir = PathBuf::from(args.first().ok_or("verify needs a directory")?);
    let mpath = dir.join("manifest.tsv");
    let manifest = std::fs::read_to_string(&mpath).map_err(|e| format!("{}: {e}", mpath.display()))?;
    let mut lines = manifest.lines();
    let seed: u64 = lines
        .next()
        .and_then(|l| l.strip_prefix("# seed "))
        .and_then(|s| s.parse().ok())
        .ok_or("manifest has no `# seed N` line")?;
    let all = cases();
    let (mut passed, mut failed) = (0, 0);
    println!("{:<52} {:>6} {:>10} {:>10}  detail", "case", "status", "max abs", "max rel");
    for line in lines {
        let index: usize = line.split('\t').next().and_then(|s| s.parse().ok()).ok_or("bad manifest line")?;
        let case = all.get(index).ok_or(format!("no case {index}: rebuild and prepare again"))?;
        match verify_case(case, &case_dir(&dir, index), seed) {
            Ok((abs, rel)) => {
                passed += 1;
                println!("{:<52} {:>6} {:>10.2e} {:>10.2e}", case.name, "ok", abs, rel);
            }
            Err(e) => {
                failed += 1;
                println!("{:<52} {:>6} {:>10} {:>10}  {e}", case.name, "FAIL", "-", "-");
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    Ok(failed == 0)
}

fn verify_case(case: &Case, cdir: &Path, seed: u64) -> Result<(f64, f64), String> {
    if let Ok(err) = std::fs::read_to_string(cdir.join("error.txt")) {
        return Err(format!("oracle failed: {}", err.lines().last().unwrap_or("").trim()));
    }
    let inputs = case.materialize(seed).map_err(|e| e.to_string())?;
    let mut outputs: TensorList = Vec::new();
    for o in &case.outputs {
        let declared = inputs
            .iter()
            .find(|a| a.name == o.name)
            .and_then(|a| a.value.as_tensor())
            .ok_or(format!("output `{}` is not a tensor argument", o.name))?;
        let t = npy::read_as(&cdir.join(format!("out_{}.npy", o.name)), declared.dtype).map_err(|e| e.to_string())?;
        outputs.push((o.name.clone(), t));
    }
    let report = check(case, &inputs, &outputs).map_err(|m| m.to_string())?;
    Ok((report.max_abs(), report.max_rel()))
}
