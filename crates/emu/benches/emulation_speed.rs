//! Emulation speed, in lane-instructions per second (criterion's "elements"):
//! Triton's own 256×256×256 fp16 matmul (cp.async + ldmatrix + mma.sync), an
//! ALU-bound loop, and a memory-bound vector add.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use trident_core::{DType, HostTensor};
use trident_emu::{launch, KernelArg, LaunchConfig, Module};

fn data(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/{name}.ptx", env!("CARGO_MANIFEST_DIR"))).expect("test data")
}

fn filled(dtype: DType, n: usize) -> HostTensor {
    let v: Vec<f64> = (0..n).map(|i| ((i * 7919) % 1000) as f64 / 1000.0 - 0.5).collect();
    HostTensor::from_f64(dtype, &[n], &v)
}

fn bench_matmul(c: &mut Criterion) {
    let m = Module::parse(&data("matmul")).expect("parse");
    let n = 256usize;
    let args = || {
        vec![
            KernelArg::Buffer(filled(DType::F16, n * n)),
            KernelArg::Buffer(filled(DType::F16, n * n)),
            KernelArg::Buffer(HostTensor::zeros(DType::F16, &[n * n])),
            KernelArg::Scalar(n as u64),
            KernelArg::Scalar(n as u64),
            KernelArg::Scalar(n as u64),
            KernelArg::Scalar(n as u64),
            KernelArg::Scalar(n as u64),
            KernelArg::Scalar(n as u64),
            KernelArg::Null,
            KernelArg::Null,
        ]
    };
    let cfg =
        LaunchConfig { grid: [4, 4, 1], block: [128, 1, 1], dynamic_shared_bytes: 16384, ..LaunchConfig::default() };
    let lanes = launch(&m, "matmul", &cfg, &mut args()).expect("launch").lane_instructions;
    let mut g = c.benchmark_group("triton_matmul_256");
    g.sample_size(10).throughput(Throughput::Elements(lanes));
    g.bench_function("races_checked", |b| {
        b.iter_batched(args, |mut a| launch(&m, "matmul", &cfg, &mut a).expect("launch"), BatchSize::LargeInput)
    });
    let fast = LaunchConfig { check_races: false, ..cfg.clone() };
    g.bench_function("races_unchecked", |b| {
        b.iter_batched(args, |mut a| launch(&m, "matmul", &fast, &mut a).expect("launch"), BatchSize::LargeInput)
    });
    g.finish();
}

const ALU_LOOP: &str = "
.version 8.0
.target sm_80
.address_size 64
.visible .entry alu(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<4>;
  mov.u32 %r0, %tid.x;
  cvt.rn.f32.u32 %f1, %r0;
  mov.f32 %f2, 0f3F000000;
  mov.u32 %r1, 0;
L:
  fma.rn.f32 %f2, %f2, 0f3F7FF000, %f1;
  add.s32 %r2, %r1, %r0;
  xor.b32 %r3, %r2, 0x5555;
  add.s32 %r1, %r1, 1;
  setp.lt.u32 %p1, %r1, 1000;
  @%p1 bra L;
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.f32 [%rd3], %f2;
  ret;
}
";

fn bench_alu(c: &mut Criterion) {
    let m = Module::parse(ALU_LOOP).expect("parse");
    let cfg = LaunchConfig { grid: [16, 1, 1], block: [256, 1, 1], ..LaunchConfig::default() };
    let args = || vec![KernelArg::Buffer(HostTensor::zeros(DType::F32, &[256]))];
    let cfg1 = LaunchConfig { grid: [1, 1, 1], ..cfg.clone() };
    let lanes = launch(&m, "alu", &cfg1, &mut args()).expect("launch").lane_instructions * 16;
    let mut g = c.benchmark_group("alu_loop");
    g.sample_size(10).throughput(Throughput::Elements(lanes));
    // 16 CTAs all write the same 256 floats (same values): the launch is about issue speed.
    g.bench_function("16x256_threads_1000_iters", |b| {
        b.iter_batched(args, |mut a| launch(&m, "alu", &cfg, &mut a).expect("launch"), BatchSize::LargeInput)
    });
    g.finish();
}

fn bench_vadd(c: &mut Criterion) {
    let m = Module::parse(&data("vadd")).expect("parse");
    let n = 1 << 20;
    let args = || {
        vec![
            KernelArg::Buffer(filled(DType::F32, n)),
            KernelArg::Buffer(filled(DType::F32, n)),
            KernelArg::Buffer(HostTensor::zeros(DType::F32, &[n])),
            KernelArg::Scalar(n as u64),
            KernelArg::Null,
            KernelArg::Null,
        ]
    };
    let cfg = LaunchConfig { grid: [(n / 256) as u32, 1, 1], block: [128, 1, 1], ..LaunchConfig::default() };
    let lanes = launch(&m, "vadd", &cfg, &mut args()).expect("launch").lane_instructions;
    let mut g = c.benchmark_group("triton_vadd_1M");
    g.sample_size(10).throughput(Throughput::Elements(lanes));
    g.bench_function("f32", |b| {
        b.iter_batched(args, |mut a| launch(&m, "vadd", &cfg, &mut a).expect("launch"), BatchSize::LargeInput)
    });
    g.finish();
}

criterion_group!(benches, bench_matmul, bench_alu, bench_vadd);
criterion_main!(benches);
