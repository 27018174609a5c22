//! PTX compiled by the real Triton (see `tests/data/gen_triton_ptx.py`) runs on the
//! emulator and matches host references computed in f64.

mod common;

use common::*;
use trident_core::{DType, HostTensor};
use trident_emu::{launch, KernelArg, LaunchConfig, Module};

fn load(name: &str) -> (Module, u32, u32) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let text = std::fs::read_to_string(format!("{dir}/{name}.ptx")).expect("test PTX present");
    let meta = std::fs::read_to_string(format!("{dir}/launch.txt")).expect("launch.txt present");
    let line = meta.lines().find(|l| l.starts_with(&format!("{name} "))).expect("kernel in launch.txt");
    let field = |k: &str| -> u32 {
        line.split_whitespace().find_map(|w| w.strip_prefix(k)).and_then(|v| v.parse().ok()).expect("field")
    };
    let m = Module::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    (m, field("threads="), field("shared="))
}

fn cfg(grid: [u32; 3], threads: u32, shared: u32) -> LaunchConfig {
    LaunchConfig { grid, block: [threads, 1, 1], dynamic_shared_bytes: shared, ..LaunchConfig::default() }
}

fn assert_close(got: &HostTensor, want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.numel(), want.len());
    let mut worst = 0f64;
    for (i, &w) in want.iter().enumerate() {
        let g = got.get_f64(i);
        let err = (g - w).abs() / (1.0 + w.abs());
        assert!(err <= tol, "{what}: element {i}: got {g}, want {w}");
        worst = worst.max(err);
    }
    eprintln!("{what}: worst relative error {worst:e}");
}

#[test]
fn vector_add() {
    let (m, threads, shared) = load("vadd");
    let mut rng = Rng(1);
    let n = 1000usize;
    let a = random(&mut rng, DType::F32, &[n], 10.0);
    let b = random(&mut rng, DType::F32, &[n], 10.0);
    let want: Vec<f64> = (0..n).map(|i| (a.get_f64(i) as f32 + b.get_f64(i) as f32) as f64).collect();
    let mut args = vec![
        KernelArg::Buffer(a),
        KernelArg::Buffer(b),
        KernelArg::Buffer(poisoned(DType::F32, &[n])),
        KernelArg::Scalar(n as u64),
        KernelArg::Null,
        KernelArg::Null,
    ];
    let grid = [(n as u32).div_ceil(256), 1, 1];
    let r = launch(&m, "vadd", &cfg(grid, threads, shared), &mut args).unwrap();
    assert_close(buf(&args, 2), &want, 0.0, "vadd");
    assert!(r.cycles > 0 && r.lane_instructions > 0);
}
