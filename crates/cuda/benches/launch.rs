//! Host overhead of a kernel launch: the time `launch` calls take on the CPU, for an empty
//! kernel with four parameters. Needs a GPU; prints a note and measures nothing without one.
//!
//! Launches are timed in batches well below the driver's queue depth, with a synchronise
//! between batches outside the timed region, so the host never waits for the device while
//! the clock runs.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use trident_cuda::{launch, Device, DeviceBuffer, Module, Param, PreparedLaunch, Stream};

const NOOP_PTX: &str = include_str!("../tests/kernels/noop.ptx");
const BATCH: u64 = 256;

fn timed_batches(iters: u64, stream: &Stream, mut one: impl FnMut()) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(BATCH);
        stream.synchronize().expect("synchronize");
        let t = Instant::now();
        for _ in 0..n {
            one();
        }
        total += t.elapsed();
        left -= n;
    }
    stream.synchronize().expect("synchronize");
    total
}

fn bench(c: &mut Criterion) {
    let dev = match Device::open(0) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("launch benchmarks skipped: {e}");
            return;
        }
    };
    let module = Module::load_ptx(&dev, NOOP_PTX).expect("load noop");
    let kernel = module.kernel("noop").expect("noop kernel");
    let buf = DeviceBuffer::alloc(&dev, 256).expect("alloc");
    let stream = Stream::new(&dev).expect("stream");
    let params = [Param::Ptr(&buf), Param::Ptr(&buf), Param::Ptr(&buf), Param::U32(64)];
    let prepared = PreparedLaunch::new(&kernel, [1, 1, 1], [32, 1, 1], 0, &params).expect("prepare");

    let mut g = c.benchmark_group("launch_host_overhead");
    g.bench_function("prepared", |b| {
        b.iter_custom(|iters| timed_batches(iters, &stream, || prepared.launch(&stream).expect("launch")))
    });
    g.bench_function("checked_and_packed", |b| {
        b.iter_custom(|iters| {
            timed_batches(iters, &stream, || {
                launch(&kernel, [1, 1, 1], [32, 1, 1], 0, &stream, &params).expect("launch")
            })
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
