//! Batched (rank-3) `tl.dot` end to end (issue 13): `kernels/batched_matmul.py` through the
//! `trident` command. For sm_80, sm_90 and sm_90a the PTX puts the dot on `mma.sync` (operands
//! through `ldmatrix`; no wgmma, which has no batch dimension; no FMA loop) where tensor cores
//! apply and keeps the FMA loop for ieee f32; each run on the PTX emulator
//! (`TRIDENT_EMU_TARGET`) agrees with the interpreter on the same fresh inputs (the output
//! starts random, so an element not written shows).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use trident_runtime::npy;

const KERNEL: &str = "kernels/batched_matmul.py::bmm_kernel";

struct Case {
    /// Operand type.
    dt: &'static str,
    /// B, M, N, K.
    size: (usize, usize, usize, usize),
    /// BLOCK_B, BLOCK_M, BLOCK_N, BLOCK_K.
    block: (usize, usize, usize, usize),
    warps: u32,
    ieee: bool,
}

const CASES: &[Case] = &[
    Case { dt: "f16", size: (3, 40, 24, 64), block: (2, 32, 32, 32), warps: 4, ieee: false },
    Case { dt: "bf16", size: (5, 50, 30, 20), block: (4, 32, 32, 16), warps: 1, ieee: false },
    Case { dt: "f16", size: (9, 16, 64, 64), block: (8, 16, 64, 64), warps: 8, ieee: false },
    Case { dt: "f32", size: (2, 20, 16, 24), block: (2, 16, 16, 16), warps: 4, ieee: true },
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn trident(args: &[String], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trident"));
    c.args(args).current_dir(root());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("runs")
}

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The kernel's arguments (tensors generated from the run's seed).
fn args(c: &Case) -> Vec<String> {
    let ((nb, m, n, k), (bb, bm, bn, bk)) = (c.size, c.block);
    vec![
        format!("a=randn:{}:{nb}x{m}x{k}", c.dt),
        format!("b=randn:{}:{nb}x{k}x{n}", c.dt),
        format!("c=randn:f32:{nb}x{m}x{n}"),
        format!("B={nb}"),
        format!("M={m}"),
        format!("N={n}"),
        format!("K={k}"),
        format!("BLOCK_B={bb}"),
        format!("BLOCK_M={bm}"),
        format!("BLOCK_N={bn}"),
        format!("BLOCK_K={bk}"),
        format!("IEEE={}", if c.ieee { "True" } else { "False" }),
    ]
}

/// Runs `c` on `backend` (for `target` on the emulator) and returns C after the run.
fn run(c: &Case, backend: &str, target: &str, seed: u64) -> Vec<f64> {
    let out = std::env::temp_dir().join(format!("trident_bmm_{}_{}_{backend}_{target}.npy", std::process::id(), c.dt));
    let ((nb, m, n, _), (bb, bm, bn, _)) = (c.size, c.block);
    let grid = format!("{},{},{}", nb.div_ceil(bb), m.div_ceil(bm), n.div_ceil(bn));
    let mut w = words(&["run", KERNEL, "--backend", backend, "--grid", &grid]);
    w.extend(["--num-warps".to_string(), c.warps.to_string(), "--seed".to_string(), seed.to_string()]);
    w.extend(args(c));
    w.extend(["--save".to_string(), format!("c={}", out.display())]);
    let o = trident(&w, &[("TRIDENT_EMU_TARGET", target)]);
    assert!(o.status.success(), "{} on {backend} ({target}): {}", c.dt, String::from_utf8_lossy(&o.stderr));
    let t = npy::read(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    t.to_f64_vec()
}

#[test]
fn batched_dots_run_on_mma_and_agree_with_the_interpreter_on_every_target() {
    if std::env::var_os("TRIDENT_PTXAS").is_none() {
        eprintln!("skipped: no ptxas (scripts/install-tools; TRIDENT_PTXAS)");
        return;
    }
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 % 100_000;
    eprintln!("seed {seed}");
    for c in CASES {
        for target in ["sm_80", "sm_90", "sm_90a"] {
            let mut w = words(&["compile", KERNEL, "--emit", "ptx", "--target", target]);
            w.extend(["--num-warps".to_string(), c.warps.to_string()]);
            w.extend(args(c));
            let o = trident(&w, &[]);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let ptx = String::from_utf8_lossy(&o.stdout);
            let what = format!("{} {:?} {target}", c.dt, c.size);
            assert_eq!(ptx.contains("mma.sync.aligned"), !c.ieee, "{what}: mma");
            assert_eq!(ptx.contains("ldmatrix"), !c.ieee, "{what}: ldmatrix");
            assert_eq!(ptx.contains("fma.rn.f32"), c.ieee, "{what}: FMA loop");
            assert!(!ptx.contains("wgmma"), "{what}: wgmma");
        }
        let want = run(c, "interp", "sm_80", seed);
        let k = c.size.3 as f64;
        // Products of rounded inputs summed in another order (tf32 is not used: f32 is ieee).
        let (rtol, atol) = (1e-4, 1e-4 * k.sqrt());
        for target in ["sm_80", "sm_90", "sm_90a"] {
            let got = run(c, "emu", target, seed);
            assert_eq!(got.len(), want.len());
            for (i, (x, y)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (x - y).abs() <= atol + rtol * y.abs(),
                    "{} {:?} on {target} (seed {seed}): element {i}: emulator {x}, interpreter {y}",
                    c.dt,
                    c.size
                );
            }
        }
    }
}
