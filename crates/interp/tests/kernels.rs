//! The matmul and softmax kernels (hand-built tile IR of kernels/matmul.py and
//! kernels/softmax.py) against f64 references, on edge-heavy sizes.

mod common;

use common::kernels::{matmul, softmax};
use common::*;
use trident_core::DType;
use trident_interp::{launch, InterpArg, InterpOptions};

#[test]
fn matmul_f16_with_ragged_edges() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let (m, n, kk) = (70usize, 50usize, 45usize);
    let (bm, bn, bk) = (32u32, 32u32, 16u32);
    let module = matmul(DType::F16, bm, bn, bk);
    let a = rng.tensor(DType::F16, &[m, kk], 1.0);
    let b = rng.tensor(DType::F16, &[kk, n], 1.0);
    let mut args = vec![
        InterpArg::Tensor(a.clone()),
        InterpArg::Tensor(b.clone()),
        InterpArg::Tensor(poison(DType::F16, &[m, n])),
        InterpArg::i32(m as i32),
        InterpArg::i32(n as i32),
        InterpArg::i32(kk as i32),
        InterpArg::i32(kk as i32),
        InterpArg::i32(1),
        InterpArg::i32(n as i32),
        InterpArg::i32(1),
        InterpArg::i32(n as i32),
        InterpArg::i32(1),
    ];
    let grid = [(m.div_ceil(bm as usize) * n.div_ceil(bn as usize)) as u32, 1, 1];
    launch(&module, "matmul_kernel", grid, &mut args, &InterpOptions::default()).unwrap();
    let c = args[2].as_tensor().unwrap();
    let (av, bv) = (a.to_f64_vec(), b.to_f64_vec());
    for i in 0..m {
        for j in 0..n {
            let want: f64 = (0..kk).map(|p| av[i * kk + p] * bv[p * n + j]).sum();
            let got = c.get_f64(i * n + j);
            // One f16 rounding of an (almost exact) f32 sum.
            assert!((got - want).abs() <= want.abs() * 2f64.powi(-10) + 1e-6, "[{i},{j}] {got} vs {want}, seed {seed}");
        }
    }
}

#[test]
fn softmax_rows_sum_to_one_and_match_reference() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let (rows, cols, block) = (7usize, 100usize, 128u32);
    for dt in [DType::F32, DType::F16] {
        let module = softmax(dt, block);
        let x = rng.tensor(dt, &[rows, cols], 5.0);
        let mut args = vec![
            InterpArg::Tensor(x.clone()),
            InterpArg::Tensor(poison(dt, &[rows, cols])),
            InterpArg::i32(cols as i32),
            InterpArg::i32(cols as i32),
            InterpArg::i32(cols as i32),
        ];
        launch(&module, "softmax_kernel", [rows as u32, 1, 1], &mut args, &InterpOptions::default()).unwrap();
        let y = args[1].as_tensor().unwrap();
        let tol = if dt == DType::F32 { 1e-6 } else { 1e-3 };
        for r in 0..rows {
            let xr: Vec<f64> = (0..cols).map(|j| x.get_f64(r * cols + j)).collect();
            let mx = xr.iter().cloned().fold(f64::MIN, f64::max);
            let den: f64 = xr.iter().map(|v| (v - mx).exp()).sum();
            for (j, &xj) in xr.iter().enumerate() {
                let want = (xj - mx).exp() / den;
                let got = y.get_f64(r * cols + j);
                assert!((got - want).abs() <= tol * want.max(1e-3), "{dt} [{r},{j}] {got} vs {want}, seed {seed}");
            }
        }
    }
}
