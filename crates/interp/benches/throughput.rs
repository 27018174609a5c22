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

criterion_group!(benches, matmul_512_f16, softmax_4096x1024);
criterion_main!(benches);
