//! The GPU-code backends: PTX from `trident-gpu`, run on the PTX emulator or on a CUDA device.
//!
//! Compiling goes through [`crate::compile`] (and its cache); this module
//! runs what it produced (the launch flow calls it through `crate::run`): [`run_emu_code`] on the emulator (modelled clock),
//! [`CudaRunner`] on device 0 (CUDA events). On CUDA the cubin `ptxas` made is
//! loaded when there is one; otherwise, or when the driver refuses it (a cubin
//! from a newer toolkit than the driver), the PTX goes through the driver's JIT.
//!
//! A profiled kernel (`PtxKernel::profile_buffer`) gets its zero-filled profile buffer
//! (`crate::profile::buffer_bytes`) as the hidden last argument on both backends; the
//! buffer comes back in [`GpuRun::profile`] — as do, on the emulator, the markers a kernel
//! compiled with zero-cost markers passed.
//!
//! A sanitized kernel (`PtxKernel::sanitize`) gets its hidden arguments after those: the
//! pointer parameters' extents and a zero-filled violation record, which comes back in
//! [`GpuRun::sanitize`] for `crate::sanitize::check`.

use std::time::Duration;

use trident_core::HostTensor;
use trident_gpu::{AbiType, PtxKernel, Target};

use crate::args::ArgValue;
use crate::compiled::GpuCode;
use crate::error::RunError;
use crate::profile::Collected;
use crate::scalar::scalar_bits;
use trident_profile::format::encode::Mark;

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
    /// What a profiled kernel collected in the last launch: its profile buffer, or on the
    /// emulator the zero-cost markers of a kernel compiled with markers.
    pub profile: Option<Collected>,
    /// The emulator's modelled clock (its cycles per ns); `None` on CUDA.
    pub clock_ghz: Option<f64>,
    /// A sanitized kernel's violation record after the last launch (`crate::sanitize`).
    pub sanitize: Option<Vec<u8>>,
    /// How the SASS emulator's model arrived at its time (`None` elsewhere).
    pub estimate: Option<String>,
}

/// Runs compiled GPU code on the emulator (its PTX parsed once per loaded kernel).
/// `names` are the parameters' names in the same order as `args`, for errors.
pub fn run_emu_code(
    code: &GpuCode,
    args: &[ArgValue],
    names: &[String],
    grid: [u32; 3],
    reps: usize,
    deadline: Option<std::time::Instant>,
) -> Result<GpuRun, RunError> {
    let module = code.emu_module()?;
    let profile = crate::profile::buffer_bytes(code, grid)?;
    // A kernel with a meta and no buffer was compiled with markers: the emulator reports them.
    let marks = code.profile.is_some() && profile.is_none();
    run_emu_module(&module, &code.ptx, args, names, grid, reps, profile, marks, deadline)
}

/// The emulators' arguments (both emulators take the same) for `ptx`'s parameters: tensors
/// by copy, scalars as their parameter type's bits, missing pointers null.
pub(crate) fn emulator_args(ptx: &PtxKernel, args: &[ArgValue]) -> Vec<trident_emu::KernelArg> {
    ptx.params
        .iter()
        .zip(args)
        .map(|(p, v)| match (&p.ty, v) {
            (_, ArgValue::Tensor(t)) => trident_emu::KernelArg::Buffer(t.clone()),
            (AbiType::Scalar(d), v) => trident_emu::KernelArg::Scalar(scalar_bits(v, *d)),
            (AbiType::Pointer(_), _) => trident_emu::KernelArg::Null,
        })
        .collect()
}

/// The buffers of an emulator launch's arguments, after it: the tensor, or `None` for the rest.
pub(crate) fn emulator_tensors(args: Vec<trident_emu::KernelArg>) -> Vec<Option<HostTensor>> {
    args.into_iter()
        .map(|a| match a {
            trident_emu::KernelArg::Buffer(t) => Some(t),
            _ => None,
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn run_emu_module(
    module: &trident_emu::Module,
    ptx: &PtxKernel,
    args: &[ArgValue],
    names: &[String],
    grid: [u32; 3],
    reps: usize,
    profile_bytes: Option<usize>,
    marks: bool,
    deadline: Option<std::time::Instant>,
) -> Result<GpuRun, RunError> {
    let mut samples = vec![];
    let mut last = None;
    let machine = crate::env::emu_machine().map_err(RunError::argument)?.unwrap_or_default();
    for _ in 0..reps.max(1) {
        let mut kargs = emulator_args(ptx, args);
        if let Some(n) = profile_bytes {
            kargs.push(trident_emu::KernelArg::Buffer(HostTensor::zeros(trident_core::DType::U8, &[n])));
        }
        if let Some(info) = &ptx.sanitize {
            kargs.extend(crate::sanitize::extents(info, args).into_iter().map(trident_emu::KernelArg::Scalar));
            kargs.push(trident_emu::KernelArg::Buffer(crate::sanitize::new_record()));
        }
        let maps = crate::tma::emulator_maps(ptx, args)?;
        let n_maps = maps.len();
        kargs.extend(maps);
        let cfg = trident_emu::LaunchConfig {
            grid,
            block: [ptx.num_threads, 1, 1],
            dynamic_shared_bytes: ptx.shared_bytes,
            deadline,
            machine: machine.clone(),
            ..Default::default()
        };
        let report = trident_emu::launch(module, &ptx.entry, &cfg, &mut kargs)
            .map_err(|e| emu_error(e, &ptx.ptx, names, args))?;
        kargs.truncate(kargs.len() - n_maps);
        samples.push(Duration::from_secs_f64(report.cycles as f64 / (report.clock_ghz * 1e9)));
        last = Some((kargs, report));
    }
    let Some((mut kargs, report)) = last else { return Err(RunError::msg("internal: no emulator run")) };
    let sanitize = match &ptx.sanitize {
        Some(info) => {
            let record = match kargs.pop() {
                Some(trident_emu::KernelArg::Buffer(t)) => t.data,
                _ => return Err(RunError::msg("internal: the sanitize record did not come back")),
            };
            kargs.truncate(kargs.len().saturating_sub(info.pointer_params.len()));
            Some(record)
        }
        None => None,
    };
    let profile = match profile_bytes {
        Some(_) => match kargs.pop() {
            Some(trident_emu::KernelArg::Buffer(t)) => Some(Collected::Buffer(t.data)),
            _ => return Err(RunError::msg("internal: the profile buffer did not come back")),
        },
        None if marks => Some(Collected::Marks(
            report.markers.iter().map(|m| Mark { cta: m.cta, warp: m.warp, tag: m.id, clock: m.clock }).collect(),
        )),
        None => None,
    };
    let tensors = emulator_tensors(kargs);
    let kernel_time = samples.last().copied().unwrap_or_default();
    Ok(GpuRun {
        tensors,
        printed: report.printf,
        kernel_time,
        samples,
        profile,
        clock_ghz: Some(report.clock_ghz),
        sanitize,
        estimate: None,
    })
}

/// An emulator error of a Trident-compiled kernel, told in the kernel's terms: the source
/// line and caret the failing PTX instruction came from (its `.loc`), and for an access
/// outside a buffer, the parameter's name and the element index, as the interpreter says it.
fn emu_error(e: trident_emu::EmuError, ptx: &str, names: &[String], args: &[ArgValue]) -> RunError {
    let place = match (e.cta, e.thread) {
        (Some(c), Some(t)) => {
            format!(", CTA ({},{},{}), thread ({},{},{})", c[0], c[1], c[2], t[0], t[1], t[2])
        }
        _ => String::new(),
    };
    let message = match (e.access.as_deref(), e.access.as_deref().and_then(|a| names.get(a.param))) {
        (Some(a), Some(name)) => {
            let t = args.get(a.param).and_then(|v| v.as_tensor());
            let size = t.map_or(1, |t| t.dtype.size_bytes().max(1)) as i64;
            let what = match t {
                Some(t) => format!("{} elements of {}", t.numel(), t.dtype),
                None => format!("{} bytes", a.region_bytes),
            };
            format!(
                "out-of-bounds {}: index {} of buffer `{name}` ({what}){place}",
                if a.write { "store" } else { "load" },
                a.offset.div_euclid(size),
            )
        }
        _ => format!("emulator: {}{place}", e.message),
    };
    let at = e.line.as_ref().and_then(|(l, _)| source_of_ptx_line(ptx, *l));
    match at {
        Some((path, line, col)) => {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let len = text
                .lines()
                .nth(line.saturating_sub(1) as usize)
                .map(|l| {
                    l.chars()
                        .skip(col.saturating_sub(1) as usize)
                        .take_while(|c| c.is_alphanumeric() || *c == '.' || *c == '_')
                        .count()
                })
                .unwrap_or(1)
                .max(1) as u32;
            let mut d = trident_ir::Diagnostic::error(message).at(trident_ir::Loc { file: 0, line, col }, len);
            if let Some((l, ptx_text)) = &e.line {
                d = d.note(format!("PTX line {l}: `{ptx_text}`"));
            }
            // A fault while running, told at the source: not a compile error.
            RunError {
                kind: crate::error::ErrorKind::Other,
                ..RunError::from_diags(&[d], &[trident_ir::SourceFile { path, text }])
            }
        }
        None => RunError::msg(match &e.line {
            Some((l, t)) => format!("{message} at PTX line {l}: `{t}`"),
            None => message,
        }),
    }
}

/// The kernel source position (path, line, column) of PTX line `line` (1-based): the last
/// `.loc` directive before it, and the `.file` it names.
fn source_of_ptx_line(ptx: &str, line: u32) -> Option<(String, u32, u32)> {
    let lines: Vec<&str> = ptx.lines().collect();
    let upto = (line as usize).min(lines.len());
    let loc = lines[..upto].iter().rev().find_map(|l| {
        let mut w = l.trim().strip_prefix(".loc")?.split_whitespace();
        Some((w.next()?.parse::<u32>().ok()?, w.next()?.parse::<u32>().ok()?, w.next()?.parse::<u32>().ok()?))
    })?;
    let (file, l, c) = loc;
    if l == 0 {
        return None;
    }
    let path = lines.iter().find_map(|s| {
        let rest = s.trim().strip_prefix(".file")?.trim_start();
        let (idx, name) = rest.split_once(char::is_whitespace)?;
        (idx.parse::<u32>().ok()? == file)
            .then(|| name.trim().trim_matches('"').replace("\\\"", "\"").replace("\\\\", "\\"))
    })?;
    Some((path, l, c))
}

/// Whether a CUDA driver and at least one device are present.
pub fn cuda_available() -> bool {
    trident_cuda::Device::available()
}

/// The PTX target matching a device's compute capability: sm_90a (warpgroup MMA) on
/// compute capability 9.0 unless `TRIDENT_NO_WGMMA` is set, whose code runs there only.
pub fn target_for(cc: (u32, u32)) -> Target {
    match cc {
        (9, 0) if crate::env::wgmma_allowed() => Target::Sm90a,
        (major, _) if major >= 9 => Target::Sm90,
        _ => Target::Sm80,
    }
}

fn cuda_err(e: trident_cuda::CudaError) -> RunError {
    RunError::msg(format!("cuda: {e}"))
}

/// A kernel loaded on CUDA device 0.
#[derive(Clone)]
pub struct CudaLoaded {
    dev: trident_cuda::Device,
    kernel: trident_cuda::Kernel,
}

impl std::fmt::Debug for CudaLoaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaLoaded").field("kernel", &self.kernel.name()).finish()
    }
}

/// Device `ordinal`, opened once per process: opening reads the device's properties (a few
/// dozen driver calls), which a launch on the caller's arrays should not pay each time.
fn device(ordinal: usize) -> Result<trident_cuda::Device, RunError> {
    static OPEN: std::sync::Mutex<std::collections::BTreeMap<usize, trident_cuda::Device>> =
        std::sync::Mutex::new(std::collections::BTreeMap::new());
    let mut open = OPEN.lock().map_err(|_| RunError::msg("internal: the device table is poisoned"))?;
    if let Some(d) = open.get(&ordinal) {
        return Ok(d.clone());
    }
    let d = trident_cuda::Device::open(ordinal).map_err(cuda_err)?;
    open.insert(ordinal, d.clone());
    Ok(d)
}

/// A kernel's module on each device it was loaded on (by ordinal).
#[derive(Default)]
pub(crate) struct CudaModules(std::sync::Mutex<std::collections::BTreeMap<usize, Result<CudaLoaded, String>>>);

impl Clone for CudaModules {
    fn clone(&self) -> Self {
        CudaModules(std::sync::Mutex::new(self.0.lock().map(|m| m.clone()).unwrap_or_default()))
    }
}

/// Loads `code` on device `ordinal`, once per loaded kernel and device: the cubin when
/// there is one and the driver takes it, else the PTX through the driver's JIT.
fn cuda_load(code: &GpuCode, ordinal: usize) -> Result<CudaLoaded, RunError> {
    let mut loaded = code.cuda.0.lock().map_err(|_| RunError::msg("internal: a CUDA load panicked"))?;
    loaded
        .entry(ordinal)
        .or_insert_with(|| {
            let dev = device(ordinal).map_err(|e| e.text)?;
            if let Some((seed, moves)) = crate::env::sass_shuffle()? {
                // The schedule prong's check: this cubin after random legal moves, or an error.
                let cubin = code.cubin.as_deref().ok_or("TRIDENT_SASS_SHUFFLE: no cubin (ptxas not found)")?;
                let s = crate::sass::shuffle(cubin, seed, moves).map_err(|e| e.text)?;
                // Asked for on the command line: say what was run (scripts/gpu-sass-moves counts it).
                eprintln!("trident: {} runs with {} legal SASS moves (seed {seed})", code.ptx.entry, s.moves);
                if let Some(dir) = crate::env::sass_shuffle_keep() {
                    // For a post-mortem of a shuffle the GPU runs wrong (scripts/gpu-sass-bisect).
                    use std::hash::{Hash, Hasher};
                    let mut h = std::collections::hash_map::DefaultHasher::new();
                    cubin.hash(&mut h);
                    let name = format!("{}-{:016x}-{seed}-{moves}.cubin", code.ptx.entry, h.finish());
                    let path = std::path::Path::new(&dir).join(name);
                    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, &s.bytes)) {
                        eprintln!("trident: TRIDENT_SASS_SHUFFLE_KEEP: {}: {e}", path.display());
                    }
                }
                let module = trident_cuda::Module::load_cubin(&dev, &s.bytes)
                    .map_err(|e| format!("cuda: the shuffled cubin ({} moves): {e}", s.moves))?;
                let kernel = module.kernel(&code.ptx.entry).map_err(|e| format!("cuda: {e}"))?;
                return Ok(CudaLoaded { dev, kernel });
            }
            let from_cubin = code.cubin.as_deref().and_then(|c| trident_cuda::Module::load_cubin(&dev, c).ok());
            let module = match from_cubin {
                Some(m) => m,
                None => trident_cuda::Module::load_ptx(&dev, &code.ptx.ptx).map_err(|e| format!("cuda: {e}"))?,
            };
            let kernel = module.kernel(&code.ptx.entry).map_err(|e| format!("cuda: {e}"))?;
            Ok(CudaLoaded { dev, kernel })
        })
        .clone()
        .map_err(RunError::msg)
}

/// Bytes overwritten before each timed launch with `flush_l2`: over the L2 cache of any GPU
/// so far (50 MiB on the H100 and H200), so no timed launch finds its inputs there.
pub const L2_FLUSH_BYTES: usize = 256 << 20;

/// Loads kernel `entry` of `cubin` on `dev` — that cubin and nothing else (no PTX fallback):
/// what a schedule search times must be the schedule it searched.
pub(crate) fn cuda_load_cubin(
    dev: &trident_cuda::Device,
    cubin: &[u8],
    entry: &str,
) -> Result<trident_cuda::Kernel, RunError> {
    let module = trident_cuda::Module::load_cubin(dev, cubin).map_err(|e| {
        RunError::msg(format!("cuda: the driver does not load the cubin (device {}): {e}", dev.info().sm_name()))
    })?;
    module.kernel(entry).map_err(cuda_err)
}

/// One kernel's arguments on device 0, ready for repeated timed launches
/// (the autotuner's runs, `trident bench`, a schedule search's timer).
pub struct CudaRunner {
    loaded: CudaLoaded,
    args: Vec<ArgValue>,
    bufs: Vec<Option<trident_cuda::DeviceBuffer>>,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    params: Vec<AbiType>,
    /// The zero-filled profile buffer of a profiled kernel (its hidden last parameter).
    profile: Option<trident_cuda::DeviceBuffer>,
    /// A sanitized kernel's hidden arguments: the pointer parameters' extents and the
    /// zero-filled violation record.
    sanitize: Option<(Vec<u64>, trident_cuda::DeviceBuffer)>,
    /// A TMA kernel's tensor maps, encoded by the driver for `bufs` (hidden, after the rest).
    maps: Vec<[u8; 128]>,
    /// The L2 flush buffer ([`L2_FLUSH_BYTES`]), allocated on the first flushed timing.
    flush: std::sync::OnceLock<trident_cuda::DeviceBuffer>,
}

impl CudaRunner {
    /// Loads `code` (once per kernel) and uploads the arguments (IR parameter order).
    pub fn new(code: &GpuCode, args: &[ArgValue], grid: [u32; 3]) -> Result<CudaRunner, RunError> {
        CudaRunner::with_loaded(cuda_load(code, 0)?, code, args, grid)
    }

    /// [`CudaRunner::new`] for kernel `code.ptx.entry` of `cubin` exactly (no PTX fallback;
    /// see [`cuda_load_cubin`]).
    pub(crate) fn for_cubin(
        code: &GpuCode,
        cubin: &[u8],
        args: &[ArgValue],
        grid: [u32; 3],
    ) -> Result<CudaRunner, RunError> {
        let dev = trident_cuda::Device::open(0).map_err(cuda_err)?;
        let kernel = cuda_load_cubin(&dev, cubin, &code.ptx.entry)?;
        CudaRunner::with_loaded(CudaLoaded { dev, kernel }, code, args, grid)
    }

    fn with_loaded(
        loaded: CudaLoaded,
        code: &GpuCode,
        args: &[ArgValue],
        grid: [u32; 3],
    ) -> Result<CudaRunner, RunError> {
        use trident_cuda::DeviceBuffer;
        let profile = match crate::profile::buffer_bytes(code, grid)? {
            Some(n) => {
                let b = DeviceBuffer::alloc(&loaded.dev, n).map_err(cuda_err)?;
                b.memset(0).map_err(cuda_err)?;
                Some(b)
            }
            None => None,
        };
        let sanitize = match &code.ptx.sanitize {
            Some(info) => {
                let b = DeviceBuffer::alloc(&loaded.dev, crate::sanitize::new_record().data.len()).map_err(cuda_err)?;
                b.memset(0).map_err(cuda_err)?;
                Some((crate::sanitize::extents(info, args), b))
            }
            None => None,
        };
        let mut bufs = vec![];
        for v in args {
            bufs.push(match v {
                ArgValue::Tensor(t) => Some(DeviceBuffer::from_host(&loaded.dev, t).map_err(cuda_err)?),
                // The caller's memory, checked by `check_device_args` before.
                ArgValue::Device(d) => Some(DeviceBuffer::borrowed(&loaded.dev, d.address, d.nbytes)),
                _ => None,
            });
        }
        let maps = crate::tma::cuda_maps(&code.ptx, args, &bufs)?;
        Ok(CudaRunner {
            loaded,
            args: args.to_vec(),
            maps,
            bufs,
            grid,
            block: [code.ptx.num_threads, 1, 1],
            shared: code.ptx.shared_bytes,
            params: code.ptx.params.iter().map(|p| p.ty.clone()).collect(),
            profile,
            sanitize,
            flush: std::sync::OnceLock::new(),
        })
    }

    /// The device the kernel is loaded on.
    pub(crate) fn device(&self) -> &trident_cuda::Device {
        &self.loaded.dev
    }

    /// The profile buffer as the last launch left it (profiled kernels only).
    pub fn profile_bytes(&self) -> Result<Option<Vec<u8>>, RunError> {
        let Some(b) = &self.profile else { return Ok(None) };
        let mut out = vec![0u8; b.len()];
        b.copy_to_host(&mut out).map_err(cuda_err)?;
        Ok(Some(out))
    }

    /// The violation record as the launches left it (sanitized kernels only).
    pub fn sanitize_record(&self) -> Result<Option<Vec<u8>>, RunError> {
        let Some((_, b)) = &self.sanitize else { return Ok(None) };
        let mut out = vec![0u8; b.len()];
        b.copy_to_host(&mut out).map_err(cuda_err)?;
        Ok(Some(out))
    }

    /// What this kernel asks for beyond the device's limits (threads per block given its
    /// register use, static plus dynamic shared memory), if anything: a launch would be refused.
    pub fn shortage(&self) -> Option<String> {
        let attrs = self.loaded.kernel.attributes();
        let threads = self.block.iter().product::<u32>();
        if threads > attrs.max_threads_per_block {
            return Some(format!(
                "{threads} threads per block; this kernel allows at most {} (registers)",
                attrs.max_threads_per_block
            ));
        }
        let optin = self.loaded.dev.info().shared_mem_per_block_optin;
        let shared = attrs.static_shared_bytes as u64 + self.shared as u64;
        (shared > optin as u64).then(|| format!("{shared} bytes of shared memory; the device has {optin} per block"))
    }

    /// Launches `warmup` times untimed, then `reps` times each timed with CUDA events;
    /// with `flush_l2`, a buffer of [`L2_FLUSH_BYTES`] (over any GPU's L2) is overwritten
    /// before each timed launch, outside the timed interval.
    pub fn time(&self, warmup: usize, reps: usize, flush_l2: bool) -> Result<Vec<Duration>, RunError> {
        self.time_kernel(&self.loaded.kernel, warmup, reps, flush_l2)
    }

    /// [`CudaRunner::time`] for another kernel with the same parameters and launch (a
    /// reordering of this one's cubin, in a schedule search), on these arguments.
    pub(crate) fn time_kernel(
        &self,
        kernel: &trident_cuda::Kernel,
        warmup: usize,
        reps: usize,
        flush_l2: bool,
    ) -> Result<Vec<Duration>, RunError> {
        use trident_cuda::Event;
        let params = self.kernel_params();
        let dev = &self.loaded.dev;
        let stream = dev.default_stream();
        let prepared =
            trident_cuda::PreparedLaunch::new(kernel, self.grid, self.block, self.shared, &params).map_err(cuda_err)?;
        let (start, end) = (Event::new(dev).map_err(cuda_err)?, Event::new(dev).map_err(cuda_err)?);
        for _ in 0..warmup {
            prepared.launch(&stream).map_err(cuda_err)?;
        }
        let flush = match (flush_l2, self.flush.get()) {
            (false, _) => None,
            (true, Some(f)) => Some(f),
            (true, None) => {
                let f = trident_cuda::DeviceBuffer::alloc(dev, L2_FLUSH_BYTES).map_err(cuda_err)?;
                Some(self.flush.get_or_init(|| f))
            }
        };
        let mut samples = vec![];
        for _ in 0..reps.max(1) {
            if let Some(f) = &flush {
                // Ordered before the start event on the same (default) stream.
                f.memset(0).map_err(cuda_err)?;
            }
            start.record(&stream).map_err(cuda_err)?;
            prepared.launch(&stream).map_err(cuda_err)?;
            end.record(&stream).map_err(cuda_err)?;
            end.synchronize().map_err(cuda_err)?;
            let ms = Event::elapsed_ms(&start, &end).map_err(cuda_err)?;
            samples.push(Duration::from_secs_f64(ms as f64 / 1e3));
        }
        dev.synchronize().map_err(cuda_err)?;
        Ok(samples)
    }

    /// One launch of the kernel on `stream`, not waited for; with `timed`, between two
    /// events, waited for, and its device time returned (else zero).
    fn launch_on(&self, stream: &trident_cuda::Stream, timed: bool) -> Result<Duration, RunError> {
        use trident_cuda::Event;
        let params = self.kernel_params();
        let prepared =
            trident_cuda::PreparedLaunch::new(&self.loaded.kernel, self.grid, self.block, self.shared, &params)
                .map_err(cuda_err)?;
        if !timed {
            prepared.launch(stream).map_err(cuda_err)?;
            return Ok(Duration::ZERO);
        }
        let dev = &self.loaded.dev;
        let (start, end) = (Event::new(dev).map_err(cuda_err)?, Event::new(dev).map_err(cuda_err)?);
        start.record(stream).map_err(cuda_err)?;
        prepared.launch(stream).map_err(cuda_err)?;
        end.record(stream).map_err(cuda_err)?;
        let ms = Event::elapsed_ms(&start, &end).map_err(cuda_err)?;
        Ok(Duration::from_secs_f64(ms as f64 / 1e3))
    }

    /// The kernel's parameters: the arguments (IR order), then the hidden ones.
    fn kernel_params(&self) -> Vec<trident_cuda::Param<'_>> {
        use trident_cuda::Param;
        let mut params: Vec<Param> = self
            .params
            .iter()
            .zip(self.args.iter().zip(&self.bufs))
            .map(|(ty, (v, b))| match (ty, b) {
                (_, Some(buf)) => Param::Ptr(buf),
                (AbiType::Pointer(_), None) => Param::DevicePtr(0),
                (AbiType::Scalar(d), None) => {
                    let bits = scalar_bits(v, *d);
                    match ty.ptx_type() {
                        "u64" => Param::U64(bits),
                        "f64" => Param::F64(f64::from_bits(bits)),
                        "f32" => Param::F32(f32::from_bits(bits as u32)),
                        _ => Param::U32(bits as u32),
                    }
                }
            })
            .collect();
        if let Some(b) = &self.profile {
            params.push(Param::Ptr(b));
        }
        if let Some((extents, record)) = &self.sanitize {
            params.extend(extents.iter().map(|&e| Param::U64(e)));
            params.push(Param::Ptr(record));
        }
        params.extend(self.maps.iter().map(|&m| Param::TensorMap(m)));
        params
    }

    /// Zeroes argument `i`'s device buffer (`reset_to_zero`).
    pub fn zero(&self, i: usize) -> Result<(), RunError> {
        match self.bufs.get(i) {
            Some(Some(b)) => b.memset(0).map_err(cuda_err),
            _ => Ok(()),
        }
    }

    /// Uploads every tensor argument's host value again.
    pub(crate) fn restore_all(&self) -> Result<(), RunError> {
        (0..self.bufs.len()).try_for_each(|i| self.restore(i))
    }

    /// Uploads argument `i`'s host value again (`restore_value`).
    pub fn restore(&self, i: usize) -> Result<(), RunError> {
        match (self.bufs.get(i), self.args.get(i)) {
            (Some(Some(b)), Some(ArgValue::Tensor(t))) => b.upload(t).map_err(cuda_err),
            _ => Ok(()),
        }
    }

    /// The tensors on the device (IR parameter order; `None` for scalars).
    pub fn download(&self) -> Result<Vec<Option<HostTensor>>, RunError> {
        let mut tensors = vec![];
        for (v, b) in self.args.iter().zip(&self.bufs) {
            tensors.push(match (v, b) {
                (ArgValue::Tensor(t), Some(buf)) => Some(buf.to_host(t.dtype, &t.shape).map_err(cuda_err)?),
                _ => None,
            });
        }
        Ok(tensors)
    }
}

/// Runs compiled GPU code on device 0: `warmup` untimed launches, then `reps`
/// launches each timed with CUDA events. Outputs are those of the last launch.
pub fn run_cuda_code(
    code: &GpuCode,
    args: &[ArgValue],
    grid: [u32; 3],
    warmup: usize,
    reps: usize,
    flush_l2: bool,
) -> Result<GpuRun, RunError> {
    let runner = CudaRunner::new(code, args, grid)?;
    let samples = runner.time(warmup, reps, flush_l2)?;
    let tensors = runner.download()?;
    let profile = runner.profile_bytes()?.map(Collected::Buffer);
    let sanitize = runner.sanitize_record()?;
    let kernel_time = samples.last().copied().unwrap_or_default();
    Ok(GpuRun {
        tensors,
        printed: String::new(),
        kernel_time,
        samples,
        profile,
        clock_ghz: None,
        sanitize,
        estimate: None,
    })
}

/// Which device a launch on device arrays runs on, after checking every array against what
/// the driver knows of its address (`cuPointerGetAttribute`): memory CUDA allocated, on one
/// device, the array's whole span inside its allocation. `names`: the arguments' names in
/// the order of `args`, for the errors — each names the argument, and nothing has run.
pub fn check_device_args(args: &[ArgValue], names: &[String]) -> Result<usize, RunError> {
    let dev0 = device(0)?;
    let mut ordinal: Option<(usize, &str)> = None;
    for (v, name) in args.iter().zip(names) {
        let d = match v {
            ArgValue::Device(d) => d,
            ArgValue::Tensor(_) => {
                return Err(RunError::argument(format!(
                    "argument `{name}` is a host array, and other arguments are on a CUDA device: a kernel \
                     runs where its arrays are; move it to the device (`.cuda()`) or the others to the host"
                )))
            }
            _ => continue,
        };
        if d.nbytes == 0 {
            continue;
        }
        let info = dev0.pointer_info(d.address).map_err(cuda_err)?.ok_or_else(|| {
            RunError::argument(format!(
                "argument `{name}`: address {:#x} is not device memory the CUDA driver knows (freed, or host \
                 memory)",
                d.address
            ))
        })?;
        if !info.holds(d.address, d.nbytes) {
            return Err(RunError::argument(format!(
                "argument `{name}`: its {} bytes at {:#x} run past the end of their allocation ({} bytes at {:#x})",
                d.nbytes, d.address, info.size, info.start
            )));
        }
        match ordinal {
            Some((o, first)) if o != info.ordinal => {
                return Err(RunError::argument(format!(
                    "argument `{name}` is on cuda:{}, argument `{first}` on cuda:{o}: a kernel runs on one device",
                    info.ordinal
                )))
            }
            Some(_) => {}
            None => ordinal = Some((info.ordinal, name)),
        }
    }
    Ok(ordinal.map_or(0, |(o, _)| o))
}

/// Runs compiled GPU code once on the caller's device memory ([`ArgValue::Device`], checked
/// by [`check_device_args`]) on device `ordinal`, queued on the caller's stream `stream`
/// (a raw `CUstream`; 0 is the legacy default stream). The kernel writes the caller's arrays
/// in place; nothing is copied. Asynchronous, as a Triton launch is, unless `timed` (events
/// around the launch; the call waits for them and returns the kernel's device time) or the
/// kernel has buffers to read back (a profile, a sanitize record), which waits for the stream.
pub fn run_cuda_device(
    code: &GpuCode,
    args: &[ArgValue],
    grid: [u32; 3],
    ordinal: usize,
    stream: u64,
    timed: bool,
) -> Result<GpuRun, RunError> {
    let runner = CudaRunner::with_loaded(cuda_load(code, ordinal)?, code, args, grid)?;
    if let Some(why) = runner.shortage() {
        return Err(RunError::other(format!("cuda: the kernel cannot launch: {why}")));
    }
    let stream = trident_cuda::Stream::borrowed(runner.device(), stream as usize as *mut std::ffi::c_void);
    let kernel_time = runner.launch_on(&stream, timed)?;
    let readback = runner.profile.is_some() || runner.sanitize.is_some();
    if readback && !timed {
        stream.synchronize().map_err(cuda_err)?;
    }
    let profile = runner.profile_bytes()?.map(Collected::Buffer);
    let sanitize = runner.sanitize_record()?;
    Ok(GpuRun {
        tensors: vec![None; args.len()],
        printed: String::new(),
        kernel_time,
        samples: vec![kernel_time],
        profile,
        clock_ghz: None,
        sanitize,
        estimate: None,
    })
}
