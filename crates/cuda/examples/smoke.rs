//! Smoke test for a GPU machine: opens device 0, JIT-compiles a hand-written PTX vector add,
//! runs it on random data, checks every element, and measures host time per launch.
//! Prints `OK` and exits 0, or prints the error and exits 1.
//!
//! Build here with `cargo build --release -p trident-cuda --example smoke`; the binary
//! (target/release/examples/smoke) needs only the NVIDIA driver where it runs.

use std::process::ExitCode;
use std::time::Instant;

use trident_cuda::{launch, CudaError, Device, DeviceBuffer, Event, Module, Param, PreparedLaunch, Stream};

const VADD_PTX: &str = include_str!("../tests/kernels/vadd.ptx");
const NOOP_PTX: &str = include_str!("../tests/kernels/noop.ptx");

fn main() -> ExitCode {
    match run() {
        Ok(()) => {
            println!("OK");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let dev = Device::open(0).map_err(|e| e.to_string())?;
    let i = dev.info();
    println!(
        "device 0: {} ({}, {} SMs, {} KiB shared/block opt-in, clock {} MHz), driver {}.{} from {}",
        i.name,
        i.sm_name(),
        i.sm_count,
        i.shared_mem_per_block_optin / 1024,
        i.clock_khz.map_or("?".to_string(), |k| (k / 1000).to_string()),
        i.driver_version / 1000,
        i.driver_version % 1000 / 10,
        i.driver_path
    );
    vector_add(&dev).map_err(|e| e.to_string())?;
    launch_overhead(&dev).map_err(|e| e.to_string())?;
    Ok(())
}

fn vector_add(dev: &Device) -> Result<(), CudaError> {
    let module = Module::load_ptx(dev, VADD_PTX)?;
    let kernel = module.kernel("vadd")?;
    println!("vadd: {} registers; JIT log: {}", kernel.attributes().num_regs, module.jit_log().trim());

    let n: usize = (1 << 20) + 77;
    let mut seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        ((seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    };
    let a: Vec<f32> = (0..n).map(|_| next()).collect();
    let b: Vec<f32> = (0..n).map(|_| next()).collect();
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let da = DeviceBuffer::from_bytes(dev, &bytes(&a))?;
    let db = DeviceBuffer::from_bytes(dev, &bytes(&b))?;
    let dout = DeviceBuffer::alloc(dev, n * 4)?;
    dout.fill_u32(0x7fc0_0001)?; // NaN: any element the kernel misses fails the check

    let stream = Stream::new(dev)?;
    let (start, end) = (Event::new(dev)?, Event::new(dev)?);
    start.record(&stream)?;
    launch(
        &kernel,
        [(n as u32).div_ceil(256), 1, 1],
        [256, 1, 1],
        0,
        &stream,
        &[Param::Ptr(&da), Param::Ptr(&db), Param::Ptr(&dout), Param::U32(n as u32)],
    )?;
    end.record(&stream)?;
    let ms = Event::elapsed_ms(&start, &end)?;

    let mut out = vec![0u8; n * 4];
    dout.copy_to_host(&mut out)?;
    let bad = out
        .chunks_exact(4)
        .enumerate()
        .filter(|(i, c)| f32::from_le_bytes([c[0], c[1], c[2], c[3]]).to_bits() != (a[*i] + b[*i]).to_bits())
        .count();
    println!(
        "vadd of {n} f32: {ms:.4} ms on the device ({:.0} GB/s), {bad} wrong elements",
        (3 * 4 * n) as f64 / ms as f64 / 1e6
    );
    if bad > 0 {
        return Err(CudaError::InvalidArgument(format!("{bad} of {n} elements are wrong")));
    }
    Ok(())
}

/// Host time per `PreparedLaunch::launch` of an empty kernel, in batches that stay below the
/// driver's queue depth (so the host never waits for the GPU inside the timed region).
fn launch_overhead(dev: &Device) -> Result<(), CudaError> {
    let module = Module::load_ptx(dev, NOOP_PTX)?;
    let kernel = module.kernel("noop")?;
    let buf = DeviceBuffer::alloc(dev, 256)?;
    let p = PreparedLaunch::new(
        &kernel,
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[Param::Ptr(&buf), Param::Ptr(&buf), Param::Ptr(&buf), Param::U32(64)],
    )?;
    const BATCH: usize = 256;
    const BATCHES: usize = 200;
    for (name, stream) in [("blocking", Stream::new(dev)?), ("non-blocking", Stream::new_non_blocking(dev)?)] {
        let mut best = f64::MAX;
        let mut total = 0f64;
        for batch in 0..BATCHES + 10 {
            stream.synchronize()?;
            let t = Instant::now();
            for _ in 0..BATCH {
                p.launch(&stream)?;
            }
            let us = t.elapsed().as_secs_f64() * 1e6 / BATCH as f64;
            if batch >= 10 {
                best = best.min(us);
                total += us;
            }
        }
        stream.synchronize()?;
        println!(
            "host time per prepared launch, {name} stream: {:.3} us mean, {best:.3} us best batch \
             ({BATCHES} batches of {BATCH})",
            total / BATCHES as f64
        );
    }
    Ok(())
}
