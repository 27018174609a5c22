//! Host overhead of a kernel launch: the time launch calls take on the CPU, for an empty
//! kernel with four parameters. Needs a GPU; prints a note and measures nothing without one.
//!
//! Launches are timed in batches well below the driver's queue depth, with a synchronise
//! between batches outside the timed region, so the host never waits for the device while
//! the clock runs. `driver_floor/*` calls `cuLaunchKernel` directly with the same kernel and
//! stream: the part of the overhead that is the driver's, not ours.

use std::ffi::{c_uint, c_void};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use trident_cuda::{launch, Device, DeviceBuffer, Kernel, Module, Param, PreparedLaunch, Stream};

const NOOP_PTX: &str = include_str!("../tests/kernels/noop.ptx");
const BATCH: u64 = 256;

type LaunchFn = unsafe extern "C" fn(
    *mut c_void,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    *mut c_void,
    *mut *mut c_void,
    *mut *mut c_void,
) -> u32;

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

/// `cuLaunchKernel` straight from the library the crate loaded (same process, same handles).
fn raw_launch_fn() -> Option<(libloading::Library, LaunchFn)> {
    let path = Device::open(0).ok()?.info().driver_path.clone();
    // SAFETY: the driver library is already loaded; this only takes another reference.
    let lib = unsafe { libloading::Library::new(&path) }.ok()?;
    // SAFETY: cuLaunchKernel's documented signature, with the result as a raw u32.
    let f = unsafe { *lib.get::<LaunchFn>(b"cuLaunchKernel\0").ok()? };
    Some((lib, f))
}

fn raw_launch(f: LaunchFn, kernel: &Kernel, stream: &Stream, params: &mut [*mut c_void]) {
    // SAFETY: a live kernel and stream; one pointer per kernel parameter, each pointing at a
    // value of the parameter's size that outlives the call.
    let rc =
        unsafe { f(kernel.as_raw(), 1, 1, 1, 32, 1, 1, 0, stream.as_raw(), params.as_mut_ptr(), std::ptr::null_mut()) };
    assert_eq!(rc, 0, "cuLaunchKernel failed");
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
    let params = [Param::Ptr(&buf), Param::Ptr(&buf), Param::Ptr(&buf), Param::U32(64)];
    let prepared = PreparedLaunch::new(&kernel, [1, 1, 1], [32, 1, 1], 0, &params).expect("prepare");
    let streams = [
        ("blocking_stream", Stream::new(&dev).expect("stream")),
        ("non_blocking_stream", Stream::new_non_blocking(&dev).expect("stream")),
        ("default_stream", dev.default_stream()),
    ];

    let mut g = c.benchmark_group("launch_host_overhead");
    for (name, stream) in &streams {
        g.bench_function(format!("prepared/{name}"), |b| {
            b.iter_custom(|iters| timed_batches(iters, stream, || prepared.launch(stream).expect("launch")))
        });
    }
    let stream = &streams[0].1;
    g.bench_function("checked_and_packed/blocking_stream", |b| {
        b.iter_custom(|iters| {
            timed_batches(iters, stream, || launch(&kernel, [1, 1, 1], [32, 1, 1], 0, stream, &params).expect("launch"))
        })
    });
    if let Some((_lib, f)) = raw_launch_fn() {
        let mut ptr = buf.device_ptr();
        let mut n: u32 = 64;
        let p = &mut ptr as *mut u64 as *mut c_void;
        let mut raw_params = [p, p, p, &mut n as *mut u32 as *mut c_void];
        for (name, stream) in &streams {
            g.bench_function(format!("driver_floor/{name}"), |b| {
                b.iter_custom(|iters| timed_batches(iters, stream, || raw_launch(f, &kernel, stream, &mut raw_params)))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
