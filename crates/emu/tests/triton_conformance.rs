//! PTX compiled by the real Triton (see `tests/data/gen_triton_ptx.py`) runs on the
//! emulator and matches host references computed in f64.

#![allow(clippy::needless_range_loop)]

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

/// Launches and, with `TRIDENT_EMU_DUMP`, records the launch for replay on a GPU.
fn go(m: &Module, name: &str, entry: &str, cfg: &LaunchConfig, args: &mut [KernelArg]) -> trident_emu::LaunchReport {
    let before = args.to_vec();
    let r = launch(m, entry, cfg, args).unwrap_or_else(|e| panic!("{entry}: {e}"));
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let ptx = std::fs::read_to_string(format!("{dir}/{name}.ptx")).unwrap_or_default();
    dump_case(m, &ptx, entry, cfg, &before, args);
    r
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

fn vector_add_on(name: &str) {
    let (m, threads, shared) = load(name);
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
    let r = go(&m, name, "vadd", &cfg(grid, threads, shared), &mut args);
    assert_close(buf(&args, 2), &want, 0.0, "vadd");
    assert!(r.cycles > 0 && r.lane_instructions > 0);
}

fn softmax_rows_on(name: &str) {
    let (m, threads, shared) = load(name);
    let mut rng = Rng(2);
    let (rows, cols) = (6usize, 100usize);
    let x = random(&mut rng, DType::F32, &[rows, cols], 5.0);
    let mut want = vec![0f64; rows * cols];
    for r in 0..rows {
        let row: Vec<f64> = (0..cols).map(|c| x.get_f64(r * cols + c)).collect();
        let mx = row.iter().cloned().fold(f64::MIN, f64::max);
        let s: f64 = row.iter().map(|v| (v - mx).exp()).sum();
        for c in 0..cols {
            want[r * cols + c] = (row[c] - mx).exp() / s;
        }
    }
    let mut args = vec![
        KernelArg::Buffer(x),
        KernelArg::Buffer(poisoned(DType::F32, &[rows, cols])),
        KernelArg::Scalar(cols as u64),
        KernelArg::Scalar(cols as u64),
        KernelArg::Null,
        KernelArg::Null,
    ];
    go(&m, name, "row_softmax", &cfg([rows as u32, 1, 1], threads, shared), &mut args);
    assert_close(buf(&args, 1), &want, 1e-5, "softmax");
}

fn layer_norm_on(name: &str) {
    let (m, threads, shared) = load(name);
    let mut rng = Rng(3);
    let (rows, cols) = (8usize, 200usize);
    let x = random(&mut rng, DType::F16, &[rows, cols], 3.0);
    let w = random(&mut rng, DType::F32, &[cols], 1.0);
    let b = random(&mut rng, DType::F32, &[cols], 1.0);
    let eps = 1e-5f32;
    let mut want = vec![0f64; rows * cols];
    for r in 0..rows {
        let row: Vec<f64> = (0..cols).map(|c| x.get_f64(r * cols + c)).collect();
        let mu = row.iter().sum::<f64>() / cols as f64;
        let var = row.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / cols as f64;
        for c in 0..cols {
            want[r * cols + c] = (row[c] - mu) / (var + eps as f64).sqrt() * w.get_f64(c) + b.get_f64(c);
        }
    }
    let mut args = vec![
        KernelArg::Buffer(x),
        KernelArg::Buffer(w),
        KernelArg::Buffer(b),
        KernelArg::Buffer(poisoned(DType::F16, &[rows, cols])),
        KernelArg::Scalar(cols as u64),
        KernelArg::Scalar(cols as u64),
        f32_bits(eps),
        KernelArg::Null,
        KernelArg::Null,
    ];
    go(&m, name, "layernorm", &cfg([rows as u32, 1, 1], threads, shared), &mut args);
    // Output is f16: allow its rounding.
    assert_close(buf(&args, 3), &want, 2e-3, "layernorm");
}

fn matmul_case(mm: usize, nn: usize, kk: usize, seed: u64) {
    matmul_case_on("matmul", mm, nn, kk, seed);
}

fn matmul_case_on(name: &str, mm: usize, nn: usize, kk: usize, seed: u64) {
    let (m, threads, shared) = load(name);
    let mut rng = Rng(seed);
    let a = random(&mut rng, DType::F16, &[mm, kk], 1.0);
    let b = random(&mut rng, DType::F16, &[kk, nn], 1.0);
    let mut want = vec![0f64; mm * nn];
    for i in 0..mm {
        for j in 0..nn {
            want[i * nn + j] = (0..kk).map(|k| a.get_f64(i * kk + k) * b.get_f64(k * nn + j)).sum();
        }
    }
    let mut args = vec![
        KernelArg::Buffer(a),
        KernelArg::Buffer(b),
        KernelArg::Buffer(poisoned(DType::F16, &[mm, nn])),
        KernelArg::Scalar(mm as u64),
        KernelArg::Scalar(nn as u64),
        KernelArg::Scalar(kk as u64),
        KernelArg::Scalar(kk as u64), // stride of A's rows
        KernelArg::Scalar(nn as u64), // stride of B's rows
        KernelArg::Scalar(nn as u64), // stride of C's rows
        KernelArg::Null,
        KernelArg::Null,
    ];
    let grid = [(mm as u32).div_ceil(64), (nn as u32).div_ceil(64), 1];
    let r = go(&m, name, "matmul", &cfg(grid, threads, shared), &mut args);
    assert_close(buf(&args, 2), &want, 2e-3, &format!("{name} {mm}x{nn}x{kk}"));
    assert!(r.cycles > 0);
}

#[test]
fn matmul_tensor_cores() {
    // K = 80 is not a multiple of the 32-wide K tile: the last tile's cp.async copies
    // read zero bytes (src-size 0) and zero-fill.
    matmul_case(128, 64, 80, 4);
}

#[test]
fn matmul_tensor_cores_square() {
    matmul_case(64, 128, 128, 5);
}

fn flash_attention_forward_on(name: &str) {
    let (m, threads, shared) = load(name);
    let mut rng = Rng(6);
    let (bh, seq, d) = (2usize, 64usize, 32usize);
    let q = random(&mut rng, DType::F16, &[bh, seq, d], 1.0);
    let k = random(&mut rng, DType::F16, &[bh, seq, d], 1.0);
    let v = random(&mut rng, DType::F16, &[bh, seq, d], 1.0);
    let scale = 1.0 / (d as f64).sqrt();
    let mut want = vec![0f64; bh * seq * d];
    for h in 0..bh {
        let at = |t: &HostTensor, i: usize, j: usize| t.get_f64((h * seq + i) * d + j);
        for i in 0..seq {
            let s: Vec<f64> =
                (0..seq).map(|j| (0..d).map(|x| at(&q, i, x) * at(&k, j, x)).sum::<f64>() * scale).collect();
            let mx = s.iter().cloned().fold(f64::MIN, f64::max);
            let p: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
            let l: f64 = p.iter().sum();
            for x in 0..d {
                want[(h * seq + i) * d + x] = (0..seq).map(|j| p[j] * at(&v, j, x)).sum::<f64>() / l;
            }
        }
    }
    let mut args = vec![
        KernelArg::Buffer(q),
        KernelArg::Buffer(k),
        KernelArg::Buffer(v),
        KernelArg::Buffer(poisoned(DType::F16, &[bh, seq, d])),
        KernelArg::Scalar(seq as u64),
        f32_bits(scale as f32),
        KernelArg::Null,
        KernelArg::Null,
    ];
    let grid = [(seq / 32) as u32, bh as u32, 1];
    go(&m, name, "attn_fwd", &cfg(grid, threads, shared), &mut args);
    assert_close(buf(&args, 3), &want, 1e-2, "attention");
}

#[test]
fn vector_add() {
    vector_add_on("vadd");
}

#[test]
fn vector_add_sm90() {
    vector_add_on("vadd.sm90");
}

#[test]
fn softmax_rows() {
    softmax_rows_on("softmax");
}

#[test]
fn softmax_rows_sm90() {
    softmax_rows_on("softmax.sm90");
}

#[test]
fn layer_norm() {
    layer_norm_on("layernorm");
}

#[test]
fn layer_norm_sm90() {
    layer_norm_on("layernorm.sm90");
}

#[test]
fn flash_attention_forward() {
    flash_attention_forward_on("attn_fwd");
}

#[test]
fn flash_attention_forward_sm90() {
    flash_attention_forward_on("attn_fwd.sm90");
}

/// Triton's sm_90 matmul uses wgmma: warpgroup MMAs reading a K-major A (64-byte swizzle)
/// and an N-major B (128-byte swizzle) through shared-memory descriptors, one group kept
/// in flight across iterations of a cp.async pipeline (`wgmma.wait_group 1`). Its
/// descriptors are Triton's (checked on hardware), so this also checks the emulator's
/// reading of the descriptor format against an independent producer.
#[test]
fn sm90_wgmma_matmul() {
    matmul_case_on("matmul.sm90", 128, 64, 80, 7);
    matmul_case_on("matmul.sm90", 64, 128, 128, 8);
    matmul_case_on("matmul.sm90", 192, 64, 48, 9);
}
