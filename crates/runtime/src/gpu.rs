//! The GPU-code backends: PTX from `trident-gpu`, run on the PTX emulator or on a CUDA device.

use crate::args::ArgValue;
use crate::launch::{CompiledKernel, RunError};
use std::time::Duration;
use trident_core::{DType, HostTensor};
use trident_gpu::{AbiType, GpuOptions, PtxKernel, Target};

/// The raw bits of a scalar argument converted to the kernel parameter's type `d`
/// (a Python int passed to an f32 parameter becomes that float, and so on).
pub fn scalar_bits(v: &ArgValue, d: DType) -> u64 {
    let f = |x: f64| match d {
        DType::F64 => x.to_bits(),
        DType::F16 => half::f16::from_f64(x).to_bits() as u64,
        DType::BF16 => half::bf16::from_f64(x).to_bits() as u64,
        _ => (x as f32).to_bits() as u64,
    };
    match v {
        ArgValue::Int(x) if d.is_float() => f(*x as f64),
        ArgValue::Int(x) => *x as u64,
        ArgValue::Float(x) => f(*x),
        ArgValue::Bool(b) => *b as u64,
        ArgValue::Tensor(_) => 0,
    }
}

/// Lowers the compiled tile IR to PTX for `target`.
pub fn compile_ptx(ck: &CompiledKernel, target: Target) -> Result<PtxKernel, RunError> {
    let opts = GpuOptions { target, num_warps: ck.num_warps, num_stages: ck.num_stages, ..GpuOptions::default() };
    trident_gpu::emit_ptx(&ck.compiled.module, &ck.compiled.kernel, &opts)
        .map_err(|d| RunError { text: d.render(&ck.compiled.module.files) })
}

/// A run on a GPU-code backend: tensors after the launch (IR parameter order) and timing.
pub struct GpuRun {
    /// Each argument after the launch: the tensor, or `None` for scalars (IR parameter order).
    pub tensors: Vec<Option<HostTensor>>,
    /// Device `printf` output (collected by the emulator; on CUDA it goes to stdout directly).
    pub printed: String,
    /// Modelled (emulator) or measured (CUDA events) kernel time of the last launch.
    pub kernel_time: Duration,
    /// Every timed repetition (one entry when not benchmarking).
    pub samples: Vec<Duration>,
}

/// Clock the emulator's modelled cycles are converted at (an H100 SXM's boost clock).
pub const EMU_CLOCK_GHZ: f64 = 1.98;

/// Runs PTX on the emulator. `args` are the runtime arguments in IR parameter order.
pub fn run_emu(ptx: &PtxKernel, args: &[ArgValue], grid: [u32; 3], reps: usize) -> Result<GpuRun, RunError> {
    let module = trident_emu::Module::parse(&ptx.ptx).map_err(|e| RunError::msg(format!("emulator: {e}")))?;
    let mut samples = vec![];
    let mut last = None;
    for _ in 0..reps.max(1) {
        let mut kargs: Vec<trident_emu::KernelArg> = ptx
            .params
            .iter()
            .zip(args)
            .map(|(p, v)| match (&p.ty, v) {
                (_, ArgValue::Tensor(t)) => trident_emu::KernelArg::Buffer(t.clone()),
                (AbiType::Scalar(d), v) => trident_emu::KernelArg::Scalar(scalar_bits(v, *d)),
                (AbiType::Pointer(_), _) => trident_emu::KernelArg::Null,
            })
            .collect();
        let cfg = trident_emu::LaunchConfig {
            grid,
            block: [ptx.num_threads, 1, 1],
            dynamic_shared_bytes: ptx.shared_bytes,
            ..Default::default()
        };
        let report = trident_emu::launch(&module, &ptx.entry, &cfg, &mut kargs)
            .map_err(|e| RunError::msg(format!("emulator: {e}")))?;
        samples.push(Duration::from_secs_f64(report.cycles as f64 / (EMU_CLOCK_GHZ * 1e9)));
        last = Some((kargs, report));
    }
    let (kargs, report) = last.expect("at least one repetition");
    let tensors = kargs
        .into_iter()
        .map(|a| match a {
            trident_emu::KernelArg::Buffer(t) => Some(t),
            _ => None,
        })
        .collect();
    Ok(GpuRun { tensors, printed: report.printf, kernel_time: *samples.last().unwrap(), samples })
}

/// Whether a CUDA driver and at least one device are present.
pub fn cuda_available() -> bool {
    trident_cuda::Device::available()
}

/// The PTX target matching a device's compute capability.
pub fn target_for(cc: (u32, u32)) -> Target {
    if cc.0 >= 9 {
        Target::Sm90
    } else {
        Target::Sm80
    }
}

fn cuda_err(e: trident_cuda::CudaError) -> RunError {
    RunError::msg(format!("cuda: {e}"))
}

/// Compiles for device 0 and runs there: `warmup` untimed launches, then `reps` launches
/// each timed with CUDA events. Outputs are those of the last launch.
pub fn run_cuda(
    ck: &CompiledKernel,
    args: &[ArgValue],
    grid: [u32; 3],
    warmup: usize,
    reps: usize,
) -> Result<(PtxKernel, GpuRun), RunError> {
    use trident_cuda::{DeviceBuffer, Event, Param};
    let dev = trident_cuda::Device::open(0).map_err(cuda_err)?;
    let ptx = compile_ptx(ck, target_for(dev.info().compute_capability))?;
    let module = trident_cuda::Module::load_ptx(&dev, &ptx.ptx).map_err(cuda_err)?;
    let kernel = module.kernel(&ptx.entry).map_err(cuda_err)?;
    let mut bufs: Vec<Option<DeviceBuffer>> = vec![];
    for v in args {
        bufs.push(match v {
            ArgValue::Tensor(t) => Some(DeviceBuffer::from_host(&dev, t).map_err(cuda_err)?),
            _ => None,
        });
    }
    let params: Vec<Param> = ptx
        .params
        .iter()
        .zip(args.iter().zip(&bufs))
        .map(|(p, (v, b))| match (&p.ty, b) {
            (_, Some(buf)) => Param::Ptr(buf),
            (AbiType::Pointer(_), None) => Param::DevicePtr(0),
            (AbiType::Scalar(d), None) => {
                let bits = scalar_bits(v, *d);
                match p.ty.ptx_type() {
                    "u64" => Param::U64(bits),
                    "f64" => Param::F64(f64::from_bits(bits)),
                    "f32" => Param::F32(f32::from_bits(bits as u32)),
                    _ => Param::U32(bits as u32),
                }
            }
        })
        .collect();
    let stream = dev.default_stream();
    let prepared = trident_cuda::PreparedLaunch::new(&kernel, grid, [ptx.num_threads, 1, 1], ptx.shared_bytes, &params)
        .map_err(cuda_err)?;
    let (start, end) = (Event::new(&dev).map_err(cuda_err)?, Event::new(&dev).map_err(cuda_err)?);
    for _ in 0..warmup {
        prepared.launch(&stream).map_err(cuda_err)?;
    }
    let mut samples = vec![];
    for _ in 0..reps.max(1) {
        start.record(&stream).map_err(cuda_err)?;
        prepared.launch(&stream).map_err(cuda_err)?;
        end.record(&stream).map_err(cuda_err)?;
        end.synchronize().map_err(cuda_err)?;
        let ms = Event::elapsed_ms(&start, &end).map_err(cuda_err)?;
        samples.push(Duration::from_secs_f64(ms as f64 / 1e3));
    }
    dev.synchronize().map_err(cuda_err)?;
    let mut tensors = vec![];
    for (v, b) in args.iter().zip(&bufs) {
        tensors.push(match (v, b) {
            (ArgValue::Tensor(t), Some(buf)) => Some(buf.to_host(t.dtype, &t.shape).map_err(cuda_err)?),
            _ => None,
        });
    }
    let kernel_time = *samples.last().unwrap();
    Ok((ptx, GpuRun { tensors, printed: String::new(), kernel_time, samples }))
}
