//! Host time per kernel launch, ours against the driver's own floor, measured interleaved
//! (batch by batch, so clock drift and noise hit every variant alike). Needs a GPU.
//!
//! Variants, for an empty kernel with four parameters:
//! * `driver`: `cuLaunchKernel` called directly with pre-built arguments (the floor);
//! * `driver+ctx`: the same plus the `cuCtxGetCurrent` check our launches make;
//! * `prepared`: [`PreparedLaunch::launch`];
//! * `launch()`: [`launch`], which checks and packs the parameters on every call.
//!
//! Build with `cargo build --release -p trident-cuda --example launch_overhead`.

use std::ffi::{c_uint, c_void};
use std::process::ExitCode;
use std::time::Instant;

use trident_cuda::{launch, Device, DeviceBuffer, Kernel, Module, Param, PreparedLaunch, Stream};

const NOOP_PTX: &str = include_str!("../tests/kernels/noop.ptx");
const BATCH: usize = 256;
const BATCHES: usize = 400;

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
type GetCurrentFn = unsafe extern "C" fn(*mut *mut c_void) -> u32;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

struct Raw {
    launch: LaunchFn,
    get_current: GetCurrentFn,
}

impl Raw {
    fn launch(&self, kernel: &Kernel, stream: &Stream, params: &mut [*mut c_void]) -> Result<(), String> {
        // SAFETY: a live kernel and stream; one pointer per kernel parameter, each pointing
        // at a value of the parameter's size that outlives the call.
        let rc = unsafe {
            (self.launch)(
                kernel.as_raw(),
                1,
                1,
                1,
                32,
                1,
                1,
                0,
                stream.as_raw(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(format!("cuLaunchKernel returned {rc}"))
        }
    }

    fn current(&self) -> *mut c_void {
        let mut c = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        unsafe { (self.get_current)(&mut c) };
        c
    }
}

fn run() -> Result<(), String> {
    let dev = Device::open(0).map_err(|e| e.to_string())?;
    println!("{} (driver {}), {} launches per batch", dev.info().name, dev.info().driver_version, BATCH);
    // SAFETY: the driver library is already loaded; this only takes another reference.
    let lib = unsafe { libloading::Library::new(&dev.info().driver_path) }.map_err(|e| e.to_string())?;
    // SAFETY: the documented signatures, with results as raw u32.
    let raw = unsafe {
        Raw {
            launch: *lib.get::<LaunchFn>(b"cuLaunchKernel\0").map_err(|e| e.to_string())?,
            get_current: *lib.get::<GetCurrentFn>(b"cuCtxGetCurrent\0").map_err(|e| e.to_string())?,
        }
    };
    let module = Module::load_ptx(&dev, NOOP_PTX).map_err(|e| e.to_string())?;
    let kernel = module.kernel("noop").map_err(|e| e.to_string())?;
    let buf = DeviceBuffer::alloc(&dev, 256).map_err(|e| e.to_string())?;
    let params = [Param::Ptr(&buf), Param::Ptr(&buf), Param::Ptr(&buf), Param::U32(64)];
    let prepared = PreparedLaunch::new(&kernel, [1, 1, 1], [32, 1, 1], 0, &params).map_err(|e| e.to_string())?;
    let mut ptr = buf.device_ptr();
    let mut n: u32 = 64;
    let p = &mut ptr as *mut u64 as *mut c_void;
    let mut raw_params = [p, p, p, &mut n as *mut u32 as *mut c_void];

    let streams = [
        ("blocking", Stream::new(&dev).map_err(|e| e.to_string())?),
        ("non-blocking", Stream::new_non_blocking(&dev).map_err(|e| e.to_string())?),
    ];
    const NAMES: [&str; 4] = ["driver", "driver+ctx", "prepared", "launch()"];
    for (sname, stream) in &streams {
        let mut samples: [Vec<f64>; 4] = Default::default();
        for batch in 0..BATCHES + 20 {
            for (v, s) in samples.iter_mut().enumerate() {
                stream.synchronize().map_err(|e| e.to_string())?;
                let t = Instant::now();
                for _ in 0..BATCH {
                    match v {
                        0 => raw.launch(&kernel, stream, &mut raw_params)?,
                        1 => {
                            std::hint::black_box(raw.current());
                            raw.launch(&kernel, stream, &mut raw_params)?
                        }
                        2 => prepared.launch(stream).map_err(|e| e.to_string())?,
                        _ => launch(&kernel, [1, 1, 1], [32, 1, 1], 0, stream, &params).map_err(|e| e.to_string())?,
                    }
                }
                let us = t.elapsed().as_secs_f64() * 1e6 / BATCH as f64;
                if batch >= 20 {
                    s.push(us);
                }
            }
        }
        stream.synchronize().map_err(|e| e.to_string())?;
        println!("{sname} stream (us per launch: median, mean, best of {BATCHES} batches):");
        for (name, s) in NAMES.iter().zip(samples.iter_mut()) {
            s.sort_by(f64::total_cmp);
            let mean = s.iter().sum::<f64>() / s.len() as f64;
            println!("  {name:<11} {:.3}  {mean:.3}  {:.3}", s[s.len() / 2], s[0]);
        }
    }
    Ok(())
}
