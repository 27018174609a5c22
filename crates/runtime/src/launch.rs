//! One launch API across backends: load a kernel file, bind `NAME=VALUE`
//! arguments to the kernel's parameters, choose an autotuned kernel's config,
//! compile for those arguments through the compile cache (front end, tile
//! passes, and for GPU backends the GPU lowering and PTX), run on the chosen
//! backend, and hand back the updated tensors.
//!
//! ```text
//! launch(prog, kernel, args, opts)
//!   = compile(prog, kernel, args, opts)      config (tuning.rs) + cache (compile.rs) → Prepared
//!   + run_compiled(&prepared, args, opts)    grid, backend run, results written into `args`
//! ```
//!
//! Where things are kept between launches is a [`Session`]
//! ([`LaunchOptions::session`], default [`Session::global`]).
//!
//! Errors are [`RunError`]s whose text is ready for a terminal: kernel errors
//! with the source line and a caret, launch errors naming the argument.

use crate::args::{Arg, ArgValue, Backend, Grid};
use crate::cache::Outcome;
use crate::compile::{CodeTarget, GpuCode, ScalarDefault};
use crate::grid_expr::GridExpr;
use crate::session::Session;
use crate::tuning::{self, TuningReport};
use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use trident_core::DType;
use trident_front::{ArgInfo, ConstValue, KernelFile, KernelInfo};
use trident_ir::{Diagnostic, SourceFile};

pub use crate::compile::CompiledKernel;

/// A failed load, compile or launch, rendered for humans.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunError {
    /// The full text: `error: ...` with source snippets where there are any.
    pub text: String,
}

impl RunError {
    pub(crate) fn msg(m: impl Into<String>) -> RunError {
        let m = m.into();
        RunError { text: if m.starts_with("error") { m } else { format!("error: {m}") } }
    }

    pub(crate) fn from_diags(ds: &[Diagnostic], files: &[SourceFile]) -> RunError {
        RunError { text: trident_ir::diag::render(ds, files, false) }
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text.trim_end())
    }
}

impl std::error::Error for RunError {}

/// A parsed kernel file.
pub struct KernelProgram {
    /// The parsed file: its `@triton.jit` functions and their decorators.
    pub file: KernelFile,
    source_id: OnceLock<String>,
}

impl KernelProgram {
    /// Reads and parses a kernel file.
    pub fn load(path: &Path) -> Result<KernelProgram, RunError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| RunError::msg(format!("cannot read kernel file `{}`: {e}", path.display())))?;
        KernelProgram::from_source(&path.display().to_string(), &text)
    }

    /// Parses kernel source held in memory (`path` is used in messages).
    pub fn from_source(path: &str, text: &str) -> Result<KernelProgram, RunError> {
        let file = trident_front::parse_file(path, text).map_err(|d| {
            RunError::from_diags(&[d], &[SourceFile { path: path.to_string(), text: text.to_string() }])
        })?;
        Ok(KernelProgram { file, source_id: OnceLock::new() })
    }

    /// Every file diagnostics may point into, in `Loc::file` order: the kernel
    /// file, Trident's prelude, then the project files it imports.
    pub fn source_files(&self) -> Vec<SourceFile> {
        self.file.source_files()
    }

    /// A hash of the paths and texts of the kernel file and the project files
    /// it imports (32 hex digits), computed once per program: what names this
    /// source in the in-process memo and autotuning records.
    pub fn source_id(&self) -> &str {
        self.source_id.get_or_init(|| {
            let mut h = blake3::Hasher::new();
            h.update(b"trident-source/2\0");
            for f in std::iter::once(&self.file).chain(self.file.dependencies()) {
                for part in [f.path(), f.text()] {
                    h.update(&(part.len() as u64).to_le_bytes());
                    h.update(part.as_bytes());
                }
            }
            h.finalize().to_hex()[..32].to_string()
        })
    }

    /// The kernel called `name`, or — when `name` is `None` — the file's only kernel.
    /// A kernel is a `@triton.jit` function that no other `@triton.jit` function calls.
    pub fn kernel(&self, name: Option<&str>) -> Result<&KernelInfo, RunError> {
        let all = self.file.kernels();
        if let Some(n) = name {
            return self.file.kernel(n).ok_or_else(|| {
                let names: Vec<&str> = all.iter().map(|k| k.name.as_str()).collect();
                RunError::msg(format!(
                    "no @triton.jit function `{n}` in {} (it has: {})",
                    self.file.path(),
                    if names.is_empty() { "none".to_string() } else { names.join(", ") }
                ))
            });
        }
        let text = self.file.text();
        let called = |k: &KernelInfo| {
            let pat = format!("{}(", k.name);
            text.match_indices(&pat).any(|(i, _)| {
                let before = &text[..i];
                // `def name(` is the definition, not a call; a longer identifier ending in the name isn't a call either.
                !before.trim_end().ends_with("def")
                    && !before.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '.')
            })
        };
        let roots: Vec<&KernelInfo> = all.iter().filter(|k| !called(k)).collect();
        match roots.as_slice() {
            [k] => Ok(k),
            _ => Err(RunError::msg(format!(
                "{} holds several kernels ({}); name one as FILE.py::KERNEL",
                self.file.path(),
                all.iter().map(|k| k.name.as_str()).collect::<Vec<_>>().join(", ")
            ))),
        }
    }
}

/// How to compile and run one launch.
#[derive(Clone, Debug)]
pub struct LaunchOptions {
    /// Programs along each axis (unless [`LaunchOptions::grid_expr`] is given).
    pub grid: Grid,
    /// A grid computed from the launch's scalar arguments and constexprs
    /// (`cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)`); it replaces `grid` when given.
    /// An autotuned kernel's grid usually depends on the config.
    pub grid_expr: Option<GridExpr>,
    /// Where to run (`Auto` is resolved by [`resolve_backend`]).
    pub backend: Backend,
    /// `None`: the autotune config's, else 4. Given: overrides every config's.
    pub num_warps: Option<u32>,
    /// `None`: the autotune config's, else 3. Given: overrides every config's.
    pub num_stages: Option<u32>,
    /// Keep and check `tl.device_assert`s.
    pub debug: bool,
    /// Print the IR after every pass to stderr (compiles without the cache).
    pub print_ir_after_all: bool,
    /// Where compiled kernels and tuning choices are kept; `None`: [`Session::global`].
    pub session: Option<Arc<Session>>,
    /// CUDA timing: overwrite a buffer larger than the L2 cache before every timed launch, so
    /// inputs come from DRAM as in a real model (what `triton.testing.do_bench` does).
    pub flush_l2: bool,
}

impl LaunchOptions {
    /// Defaults: auto backend, config's or default warps/stages, no debug, no IR dumps, the global session.
    pub fn new(grid: Grid) -> LaunchOptions {
        LaunchOptions {
            grid,
            grid_expr: None,
            backend: Backend::Auto,
            num_warps: None,
            num_stages: None,
            debug: false,
            print_ir_after_all: false,
            session: None,
            flush_l2: false,
        }
    }

    /// The session launches with these options use.
    pub fn session(&self) -> Arc<Session> {
        self.session.clone().unwrap_or_else(Session::global)
    }
}

/// A compiled kernel ready to run, and how this compilation went.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The kernel (shared with the session: later launches of the same specialization get the same one).
    pub compiled: Arc<CompiledKernel>,
    /// Where it came from: the cache's in-process memo, its disk, or a fresh
    /// build (`Miss`); `None` when no cache was used.
    pub cache: Option<Outcome>,
    /// For an autotuned kernel, the config used and how it was chosen.
    pub tuning: Option<TuningReport>,
    /// Time spent getting it: choosing the config (tuning included), looking
    /// it up and, on a miss, compiling.
    pub compile_time: Duration,
}

impl Deref for Prepared {
    type Target = CompiledKernel;
    fn deref(&self) -> &CompiledKernel {
        &self.compiled
    }
}

/// What a launch gives back.
#[derive(Debug)]
pub struct LaunchOutcome {
    /// The backend that ran it (never `Auto`).
    pub backend: Backend,
    /// `tl.device_print` output.
    pub printed: String,
    /// Time spent getting the compiled kernel ([`Prepared::compile_time`]; zero for [`run_compiled`]).
    pub compile_time: Duration,
    /// Time spent running (wall time on the interpreter, modelled time on the emulator,
    /// CUDA-event time on the GPU); the last repetition's.
    pub run_time: Duration,
    /// Every timed repetition.
    pub samples: Vec<Duration>,
    /// The grid it ran with.
    pub grid: [u32; 3],
    /// Where the compiled kernel came from (`None`: no cache used, or [`run_compiled`]).
    pub cache: Option<Outcome>,
    /// For an autotuned kernel, the config used and how it was chosen.
    pub tuning: Option<TuningReport>,
}

/// The backend `Auto` picks: the GPU when a CUDA driver and device are found, otherwise the interpreter.
pub fn resolve_backend(b: Backend) -> Backend {
    match b {
        Backend::Auto if crate::gpu::cuda_available() => Backend::Cuda,
        Backend::Auto => Backend::Interp,
        other => other,
    }
}

fn const_of(arg: &Arg) -> Result<ConstValue, RunError> {
    Ok(match &arg.value {
        ArgValue::Int(v) => ConstValue::Int(*v as i128),
        ArgValue::Float(v) => ConstValue::Float(*v),
        ArgValue::Bool(v) => ConstValue::Bool(*v),
        ArgValue::Str(s) => ConstValue::Str(s.clone()),
        ArgValue::DType(d) => ConstValue::dtype(*d),
        ArgValue::None => ConstValue::None,
        ArgValue::Tensor(_) => {
            return Err(RunError::msg(format!(
                "`{}` is a tl.constexpr parameter: give a scalar, not a tensor",
                arg.name
            )))
        }
    })
}

/// Describes each given argument to the front end (constexprs by value, the rest by type).
pub fn arg_infos(kernel: &KernelInfo, args: &[Arg]) -> Result<Vec<(String, ArgInfo)>, RunError> {
    let mut out = Vec::with_capacity(args.len());
    for a in args {
        let Some(p) = kernel.param(&a.name) else {
            let names: Vec<&str> = kernel.params.iter().map(|p| p.name.as_str()).collect();
            return Err(RunError::msg(format!(
                "unknown argument `{}` for kernel `{}` (its parameters: {})",
                a.name,
                kernel.name,
                names.join(", ")
            )));
        };
        let info = if p.is_constexpr {
            ArgInfo::Constexpr(const_of(a)?)
        } else {
            match &a.value {
                // Host tensors are allocated 16-byte aligned on every backend.
                ArgValue::Tensor(t) => ArgInfo::Pointer { dtype: t.dtype, aligned16: true },
                ArgValue::Int(v) => ArgInfo::Int(*v),
                ArgValue::Float(v) => ArgInfo::Float(*v),
                ArgValue::Bool(v) => ArgInfo::Bool(*v),
                // Triton makes a dtype or None given to any parameter a compile-time value.
                ArgValue::DType(_) | ArgValue::None => ArgInfo::Constexpr(const_of(a)?),
                ArgValue::Str(_) => {
                    return Err(RunError::msg(format!(
                        "`{}` is not a tl.constexpr parameter: a string can only be given to one",
                        a.name
                    )))
                }
            }
        };
        out.push((a.name.clone(), info));
    }
    Ok(out)
}

/// The code target a backend compiles for (CUDA: device 0's architecture).
fn code_target(backend: Backend, session: &Session) -> Result<CodeTarget, RunError> {
    Ok(match resolve_backend(backend) {
        Backend::Interp | Backend::Auto => CodeTarget::Tile,
        Backend::Emu => CodeTarget::Emu(emu_target()?),
        Backend::Cuda => CodeTarget::Cuda(session.cuda_target().map_err(RunError::msg)?),
    })
}

/// The architecture the emulator backend compiles for: sm_80, or the one
/// `TRIDENT_EMU_TARGET` names (`sm_90a` runs Hopper's warpgroup-MMA code on the CPU).
fn emu_target() -> Result<trident_gpu::Target, RunError> {
    match std::env::var("TRIDENT_EMU_TARGET") {
        Err(_) => Ok(trident_gpu::Target::Sm80),
        Ok(s) => trident_gpu::Target::parse(s.trim())
            .ok_or_else(|| RunError::msg(format!("TRIDENT_EMU_TARGET=`{s}` is not a target (sm_80, sm_90 or sm_90a)"))),
    }
}

fn prepare(
    prog: &KernelProgram,
    kernel: &KernelInfo,
    args: &[Arg],
    extra: Vec<(String, ArgInfo)>,
    opts: &LaunchOptions,
    target: CodeTarget,
    tune: bool,
) -> Result<Prepared, RunError> {
    let start = Instant::now();
    let session = opts.session();
    let mut infos = arg_infos(kernel, args)?;
    infos.extend(extra);
    let ctx = tuning::Ctx { prog, kernel, args, infos: &infos, opts, target, session: &session, tune };
    let sel = tuning::select(&ctx)?;
    let mut infos = infos.clone();
    infos.extend(sel.constexprs);
    let req = crate::compile::Request {
        prog,
        kernel,
        infos,
        num_warps: sel.num_warps,
        num_stages: sel.num_stages,
        debug: opts.debug,
        print_ir_after_all: opts.print_ir_after_all,
        target,
    };
    let (ck, cache) = crate::compile::compile(&session, &req).map_err(|e| e.error)?;
    Ok(Prepared { compiled: ck, cache, tuning: sel.report, compile_time: start.elapsed() })
}

/// Compiles `kernel` for these arguments down to optimised tile IR (through
/// the compile cache; no GPU code).
///
/// An autotuned kernel is not tuned here (there is no backend to time it
/// on): constexprs missing from `args` come from the first `@triton.autotune`
/// config (see [`crate::tuning`] for pinned values), then from `@triton.heuristics`.
pub fn compile_tile(
    prog: &KernelProgram,
    kernel: &KernelInfo,
    args: &[Arg],
    opts: &LaunchOptions,
) -> Result<Prepared, RunError> {
    compile_tile_with(prog, kernel, args, vec![], opts)
}

/// As [`compile_tile`], with some parameters described directly to the front end
/// (`trident compile` uses this for parameters given by type only).
pub fn compile_tile_with(
    prog: &KernelProgram,
    kernel: &KernelInfo,
    args: &[Arg],
    extra: Vec<(String, ArgInfo)>,
    opts: &LaunchOptions,
) -> Result<Prepared, RunError> {
    prepare(prog, kernel, args, extra, opts, CodeTarget::Tile, false)
}

/// Compiles `kernel` for these arguments and `opts.backend` (GPU code for the
/// emulator and CUDA), through the compile cache; an autotuned kernel's config
/// is chosen first, benchmarking the configs on `args` when needed (see
/// [`crate::tuning`]; `args` are not modified).
pub fn compile(
    prog: &KernelProgram,
    kernel: &KernelInfo,
    args: &[Arg],
    opts: &LaunchOptions,
) -> Result<Prepared, RunError> {
    let target = code_target(opts.backend, &opts.session())?;
    prepare(prog, kernel, args, vec![], opts, target, true)
}

/// Compiles (see [`compile`]) and runs a kernel; on success the tensors in
/// `args` hold the results. On failure `args` is left as it was.
pub fn launch(
    prog: &KernelProgram,
    kernel: &KernelInfo,
    args: &mut [Arg],
    opts: &LaunchOptions,
) -> Result<LaunchOutcome, RunError> {
    let prepared = compile(prog, kernel, args, opts)?;
    let mut out = run_compiled(&prepared, args, opts)?;
    out.compile_time = prepared.compile_time;
    out.cache = prepared.cache;
    out.tuning = prepared.tuning;
    Ok(out)
}

/// Runs an already compiled kernel once.
pub fn run_compiled(ck: &CompiledKernel, args: &mut [Arg], opts: &LaunchOptions) -> Result<LaunchOutcome, RunError> {
    run_compiled_reps(ck, args, opts, 0, 1)
}

/// Runs an already compiled kernel `warmup + reps` times, timing the last `reps`
/// (for benchmarks; inputs are not restored between repetitions). On success the
/// tensors in `args` hold the last run's results; on failure `args` is unchanged.
///
/// A kernel compiled for another target than `opts.backend` (e.g. by
/// [`compile_tile`]) has its GPU code generated here, without the cache.
pub fn run_compiled_reps(
    ck: &CompiledKernel,
    args: &mut [Arg],
    opts: &LaunchOptions,
    warmup: usize,
    reps: usize,
) -> Result<LaunchOutcome, RunError> {
    let backend = resolve_backend(opts.backend);
    let raw = run_raw(ck, args, opts, backend, warmup, reps)?;
    write_back(ck, args, raw.tensors);
    Ok(LaunchOutcome {
        backend,
        printed: raw.printed,
        compile_time: Duration::ZERO,
        run_time: raw.samples.last().copied().unwrap_or_default(),
        samples: raw.samples,
        grid: raw.grid,
        cache: None,
        tuning: None,
    })
}

/// A run whose results have not been written back.
pub(crate) struct RawRun {
    /// Each runtime argument after the run, in IR parameter order (`None` for scalars).
    pub tensors: Vec<Option<trident_core::HostTensor>>,
    pub printed: String,
    pub samples: Vec<Duration>,
    pub grid: [u32; 3],
}

/// The grid of a launch of `ck`: the grid expression evaluated over the
/// constexprs and int/bool scalar arguments, else the fixed grid.
pub(crate) fn grid_of(ck: &CompiledKernel, args: &[Arg], opts: &LaunchOptions) -> Result<[u32; 3], RunError> {
    let Some(expr) = &opts.grid_expr else { return Ok(opts.grid.dims()) };
    use crate::autotune::TuneValue;
    let lookup = |name: &str| -> Option<i64> {
        if let Some((_, v)) = ck.constexprs.iter().find(|(n, _)| n == name) {
            return match v {
                TuneValue::Int(i) => Some(*i),
                TuneValue::Bool(b) => Some(*b as i64),
                _ => None,
            };
        }
        match args.iter().find(|a| a.name == name).map(|a| &a.value) {
            Some(ArgValue::Int(i)) => Some(*i),
            Some(ArgValue::Bool(b)) => Some(*b as i64),
            _ => None,
        }
    };
    expr.eval(&lookup).map_err(RunError::msg)
}

/// The runtime arguments' values in IR parameter order (left-out ones take their defaults).
pub(crate) fn runtime_values(ck: &CompiledKernel, args: &[Arg]) -> Result<Vec<ArgValue>, RunError> {
    let mut out: Vec<(usize, ArgValue)> = Vec::new();
    for p in &ck.params {
        let Some(ir_index) = p.ir_index else { continue };
        let value = match args.iter().find(|a| a.name == p.name) {
            Some(a) => a.value.clone(),
            None => match &p.default {
                Some(ScalarDefault::Int(v)) => ArgValue::Int(*v),
                Some(ScalarDefault::Float(v)) => ArgValue::Float(*v),
                Some(ScalarDefault::Bool(v)) => ArgValue::Bool(*v),
                None => return Err(RunError::msg(format!("missing argument `{}` of kernel `{}`", p.name, ck.kernel))),
            },
        };
        out.push((ir_index, value));
    }
    out.sort_by_key(|(i, _)| *i);
    Ok(out.into_iter().map(|(_, v)| v).collect())
}

fn interp_arg(v: &ArgValue, ty: &trident_ir::Type) -> trident_interp::InterpArg {
    use trident_interp::InterpArg;
    let d = ty.elem().num().unwrap_or(DType::I64);
    match v {
        ArgValue::Tensor(t) => InterpArg::Tensor(t.clone()),
        v => {
            let bits = crate::gpu::scalar_bits(v, d);
            let width = d.bits();
            InterpArg::Scalar { dtype: d, bits: if width >= 64 { bits } else { bits & ((1u64 << width) - 1) } }
        }
    }
}

/// The GPU code of `ck` for `target`: its own when it was compiled for it, else generated now.
fn gpu_code(ck: &CompiledKernel, target: CodeTarget) -> Result<Cow<'_, GpuCode>, RunError> {
    match (&ck.gpu, target.gpu()) {
        (Some(code), _) if ck.target == target => Ok(Cow::Borrowed(code)),
        (_, Some(t)) => Ok(Cow::Owned(crate::compile::gpu_code_uncached(ck, t)?)),
        (_, None) => Err(RunError::msg("internal: no GPU target")),
    }
}

/// Runs `ck` on `backend` with copies of `args` (nothing is written back).
pub(crate) fn run_raw(
    ck: &CompiledKernel,
    args: &[Arg],
    opts: &LaunchOptions,
    backend: Backend,
    warmup: usize,
    reps: usize,
) -> Result<RawRun, RunError> {
    let values = runtime_values(ck, args)?;
    let grid = grid_of(ck, args, opts)?;
    let (tensors, printed, samples) = match backend {
        Backend::Interp | Backend::Auto => {
            let module = &ck.module;
            let func = module
                .func(&ck.kernel)
                .ok_or_else(|| RunError::msg(format!("internal: kernel `{}` missing after compilation", ck.kernel)))?;
            let iopts = trident_interp::InterpOptions { debug: opts.debug, ..Default::default() };
            let mut samples = vec![];
            let mut last = None;
            for i in 0..warmup + reps.max(1) {
                let mut iargs: Vec<trident_interp::InterpArg> =
                    values.iter().zip(&func.params).map(|(v, p)| interp_arg(v, func.ty(p.value))).collect();
                let report = trident_interp::launch(module, &ck.kernel, grid, &mut iargs, &iopts)
                    .map_err(|e| RunError { text: e.render(module) })?;
                if i >= warmup {
                    samples.push(report.elapsed);
                }
                last = Some((iargs, report.printed));
            }
            let Some((iargs, printed)) = last else { return Err(RunError::msg("internal: no interpreter run")) };
            (iargs.into_iter().map(|a| a.as_tensor().cloned()).collect(), printed, samples)
        }
        Backend::Emu => {
            let code = gpu_code(ck, CodeTarget::Emu(emu_target()?))?;
            let run = crate::gpu::run_emu_code(&code, &values, grid, reps)?;
            (run.tensors, run.printed, run.samples)
        }
        Backend::Cuda => {
            let target = code_target(Backend::Cuda, &opts.session())?;
            let code = gpu_code(ck, target)?;
            let run = crate::gpu::run_cuda_code(&code, &values, grid, warmup, reps, opts.flush_l2)?;
            (run.tensors, run.printed, run.samples)
        }
    };
    Ok(RawRun { tensors, printed, samples, grid })
}

/// Copies the tensors a backend returned (in IR parameter order) into the named arguments.
fn write_back(ck: &CompiledKernel, args: &mut [Arg], outs: Vec<Option<trident_core::HostTensor>>) {
    let mut runtime: Vec<(usize, &str)> =
        ck.params.iter().filter_map(|p| p.ir_index.map(|i| (i, p.name.as_str()))).collect();
    runtime.sort_by_key(|(i, _)| *i);
    for ((_, name), out) in runtime.into_iter().zip(outs) {
        let Some(t) = out else { continue };
        if let Some(a) = args.iter_mut().find(|a| a.name == name) {
            a.value = ArgValue::Tensor(t);
        }
    }
}
