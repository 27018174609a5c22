//! Interpreter throughput on two real kernels (hand-built tile IR of
//! kernels/matmul.py and kernels/softmax.py): matmul 512³ fp16 and softmax
//! 4096×1024 f32. A launch includes copying the arguments in and out (not cloning
//! them, which is setup). Numbers are recorded in the crate README.

#[path = "../tests/common/mod.rs"]
mod common;

use common::kernels::{matmul, softmax};
use common::Rng;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use trident_core::DType;
use trident_interp::{launch, InterpArg, InterpOptions};

fn matmul_512_f16(c: &mut Criterion) {
    let n = 512usize;
    let (bm, bn, bk) = (64u32, 64u32, 32u32);
    let module = matmul(DType::F16, bm, bn, bk);
    let mut rng = Rng(42);
    let a = rng.tensor(DType::F16, &[n, n], 1.0);
    let b = rng.tensor(DType::F16, &[n, n], 1.0);
    let s = n as i32;
    let args = vec![
        InterpArg::Tensor(a),
        InterpArg::Tensor(b),
        InterpArg::Tensor(trident_core::HostTensor::zeros(DType::F16, &[n, n])),
        InterpArg::i32(s),
        InterpArg::i32(s),
        InterpArg::i32(s),
        InterpArg::i32(s),
        InterpArg::i32(1),
        InterpArg::i32(s),
        InterpArg::i32(1),
        InterpArg::i32(s),
        InterpArg::i32(1),
    ];
    let grid = [(n / bm as usize * (n / bn as usize)) as u32, 1, 1];
    let mut g = c.benchmark_group("interp");
    g.sample_size(10);
    g.bench_function("matmul_512x512x512_f16_64x64x32", |bch| {
        bch.iter_batched(
            || args.clone(),
            |mut args| launch(&module, "matmul_kernel", grid, &mut args, &InterpOptions::default()).unwrap(),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn softmax_4096x1024(c: &mut Criterion) {
    let (rows, cols) = (4096usize, 1024usize);
    let module = softmax(DType::F32, 1024);
    let mut rng = Rng(7);
    let x = rng.tensor(DType::F32, &[rows, cols], 4.0);
    let args = vec![
        InterpArg::Tensor(x),
        InterpArg::Tensor(trident_core::HostTensor::zeros(DType::F32, &[rows, cols])),
        InterpArg::i32(cols as i32),
        InterpArg::i32(cols as i32),
        InterpArg::i32(cols as i32),
    ];
    let mut g = c.benchmark_group("interp");
    g.sample_size(10);
    g.bench_function("softmax_4096x1024_f32", |bch| {
        bch.iter_batched(
            || args.clone(),
            |mut args| {
                launch(&module, "softmax_kernel", [rows as u32, 1, 1], &mut args, &InterpOptions::default()).unwrap()
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

/// The same two workloads from the real kernel sources, compiled by the front end and
/// the default tile-IR pipeline (what `trident run` executes).
fn from_source(c: &mut Criterion) {
    use common::front::{compile_source, A};
    let n = 512usize;
    let mut rng = Rng(42);
    let a = rng.tensor(DType::F16, &[n, n], 1.0);
    let b = rng.tensor(DType::F16, &[n, n], 1.0);
    let s = n as i64;
    let mm = compile_source(
        "kernels/matmul.py",
        include_str!("../../../kernels/matmul.py"),
        "matmul_kernel",
        vec![
            ("a", A::T(a)),
            ("b", A::T(b)),
            ("c", A::T(trident_core::HostTensor::zeros(DType::F16, &[n, n]))),
            ("M", A::I(s)),
            ("N", A::I(s)),
            ("K", A::I(s)),
            ("stride_am", A::I(s)),
            ("stride_ak", A::I(1)),
            ("stride_bk", A::I(s)),
            ("stride_bn", A::I(1)),
            ("stride_cm", A::I(s)),
            ("stride_cn", A::I(1)),
            ("BLOCK_M", A::C(64)),
            ("BLOCK_N", A::C(64)),
            ("BLOCK_K", A::C(32)),
            ("GROUP_M", A::C(8)),
        ],
        false,
        true,
    );
    let (rows, cols) = (4096usize, 1024usize);
    let x = rng.tensor(DType::F32, &[rows, cols], 4.0);
    let sm = compile_source(
        "kernels/softmax.py",
        include_str!("../../../kernels/softmax.py"),
        "softmax_kernel",
        vec![
            ("x", A::T(x)),
            ("y", A::T(trident_core::HostTensor::zeros(DType::F32, &[rows, cols]))),
            ("x_row_stride", A::I(cols as i64)),
            ("y_row_stride", A::I(cols as i64)),
            ("n_cols", A::I(cols as i64)),
            ("BLOCK", A::C(1024)),
        ],
        false,
        true,
    );
    let mut g = c.benchmark_group("interp_from_source");
    g.sample_size(10);
    for (name, k, grid) in
        [("matmul_512x512x512_f16_64x64x32", &mm, [64u32, 1, 1]), ("softmax_4096x1024_f32", &sm, [rows as u32, 1, 1])]
    {
        g.bench_function(name, |bch| {
            bch.iter_batched(
                || k.args.clone(),
                |mut args| launch(&k.module, &k.kernel, grid, &mut args, &InterpOptions::default()).unwrap(),
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, matmul_512_f16, softmax_4096x1024, from_source);
criterion_main!(benches);
