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

/// The held-out cases run as SASS (`--backend sass-emu`: Trident's PTX through `ptxas`, the
/// machine code on the SASS emulator) give the PTX emulator's outputs, for sm_80 and sm_90a.
/// Same seed, so the same inputs; outputs compared element by element: integers exactly,
/// floats within 2 ulp or a relative 1e-5 — `ptxas` contracts Trident's un-suffixed `mul`/`add`
/// pairs into `FFMA` (PTX allows it; Triton's PTX is the same), which the PTX emulator rounds
/// twice, and expands some approximate functions (`ex2.approx` below 2^-126) in steps.
#[test]
fn heldout_cases_agree_on_the_sass_emulator() {
    if std::env::var_os("TRIDENT_PTXAS").is_none() || std::env::var_os("TRIDENT_NVDISASM").is_none() {
        return eprintln!("skipped: TRIDENT_PTXAS/TRIDENT_NVDISASM not set (scripts/install-tools, .tools/env)");
    }
    let cases = std::fs::read_to_string(root().join("tests/heldout/CASES.md")).expect("CASES.md");
    let block = cases.split("```cases").nth(1).and_then(|b| b.split("```").next()).expect("a ```cases block");
    let dir = std::env::temp_dir().join(format!("trident-heldout-sass-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut compared = 0;
    let mut failures = vec![];
    for line in block.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let fields: Vec<&str> = line.split('|').map(str::trim).collect();
        let (name, target, words, outs) = (fields[0], fields[2], fields[3], fields[4]);
        // The held-out script's own integer generators are not the command line's: zeros of
        // the same dtype and shape, as the compile test does (the float inputs stay random).
        let words: Vec<String> = words
            .split_whitespace()
            .map(|w| match w.split_once('=') {
                Some((n, v)) if v.starts_with("randint:") || v.starts_with("arange:") => {
                    let p: Vec<&str> = v.split(':').collect();
                    format!("{n}=zeros:{}:{}", p[1], p[2])
                }
                _ => w.to_string(),
            })
            .collect();
        for arch in ["sm_80", "sm_90a"] {
            let mut saved = vec![];
            for backend in ["emu", "sass-emu"] {
                let mut cmd = Command::new(env!("CARGO_BIN_EXE_trident"));
                cmd.current_dir(root().join("tests/heldout"))
                    .env("TRIDENT_EMU_TARGET", arch)
                    .args(["run", target, "--backend", backend, "--seed", "7"])
                    .args(&words);
                let mut files = vec![];
                for out in outs.split_whitespace() {
                    let f = dir.join(format!("{name}.{arch}.{backend}.{out}.npy"));
                    cmd.arg("--save").arg(format!("{out}={}", f.display()));
                    files.push(f);
                }
                let o = cmd.output().expect("runs");
                if !o.status.success() {
                    failures.push(format!("--- {name} ({arch}, {backend})\n{}", String::from_utf8_lossy(&o.stderr)));
                    continue;
                }
                saved.push(files.iter().map(|f| std::fs::read(f).unwrap()).collect::<Vec<_>>());
            }
            if let [emu, sass] = &saved[..] {
                for ((a, b), out) in emu.iter().zip(sass).zip(outs.split_whitespace()) {
                    if let Some(d) = npy_diff(a, b) {
                        failures.push(format!("--- {name} ({arch}) output {out}: {d}"));
                    }
                }
                compared += 1;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{} failed:\n{}", failures.len(), failures.join("\n"));
    assert!(compared >= 30, "only {compared} cases compared");
}

/// Where two `.npy` files of the same header differ by more than 2 ulp and a relative 1e-5
/// (floats) or at all (integers): the first such element.
fn npy_diff(a: &[u8], b: &[u8]) -> Option<String> {
    let header = |x: &[u8]| 10 + u16::from_le_bytes([x[8], x[9]]) as usize;
    let (ha, hb) = (header(a), header(b));
    if a[..ha] != b[..hb] || a.len() != b.len() {
        return Some("different headers or sizes".into());
    }
    let descr = String::from_utf8_lossy(&a[..ha]).to_string();
    let float = descr.contains("'<f") || descr.contains("'<e");
    let width = ["1'", "2'", "4'", "8'"].iter().find(|w| descr.contains(*w)).map_or(4, |w| w[..1].parse().unwrap());
    for (i, (x, y)) in a[ha..].chunks(width).zip(b[ha..].chunks(width)).enumerate() {
        let (mut xb, mut yb) = ([0u8; 8], [0u8; 8]);
        xb[..width].copy_from_slice(x);
        yb[..width].copy_from_slice(y);
        let (xv, yv) = (i64::from_le_bytes(xb), i64::from_le_bytes(yb));
        let value = |v: i64| match width {
            8 => f64::from_bits(v as u64),
            4 => f32::from_bits(v as u32) as f64,
            _ => f64::NAN,
        };
        let (fx, fy) = (value(xv), value(yv));
        let close = float
            && (xv.abs_diff(yv) <= 2
                || (fx - fy).abs() <= 1e-5 * fx.abs().max(fy.abs())
                || (fx.is_nan() && fy.is_nan()));
        if xv != yv && !close {
            return Some(format!("element {i}: PTX emulator {x:02x?}, SASS emulator {y:02x?}"));
        }
    }
    None
}
