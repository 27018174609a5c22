//! One launch API across backends: load a kernel file, bind `NAME=VALUE`
//! arguments to the kernel's parameters, compile for those arguments (front
//! end, tile passes, and for GPU backends the GPU lowering and PTX), run on the
//! chosen backend, and hand back the updated tensors.
//!
//! Errors are [`RunError`]s whose text is ready for a terminal: kernel errors
//! with the source line and a caret, launch errors naming the argument.

use crate::args::{Arg, ArgValue, Backend, Grid};
use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};
use trident_core::DType;
use trident_front::{ArgInfo, CompileOptions, Compiled, ConstValue, KernelFile, KernelInfo, ParamBinding};
use trident_ir::{Diagnostic, Module, SourceFile};

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

    fn diags(ds: &[Diagnostic], files: &[SourceFile]) -> RunError {
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
        let file = trident_front::parse_file(path, text)
            .map_err(|d| RunError::diags(&[d], &[SourceFile { path: path.to_string(), text: text.to_string() }]))?;
        Ok(KernelProgram { file })
    }

    fn files(&self) -> Vec<SourceFile> {
        vec![self.file.source_file()]
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
    /// Programs along each axis.
    pub grid: Grid,
    /// Where to run (`Auto` is resolved by [`resolve_backend`]).
    pub backend: Backend,
    /// `None`: the autotune config's, else 4.
    pub num_warps: Option<u32>,
    /// `None`: the autotune config's, else 3.
    pub num_stages: Option<u32>,
    /// Keep and check `tl.device_assert`s.
    pub debug: bool,
    /// Print the IR after every pass to stderr.
    pub print_ir_after_all: bool,
}

impl LaunchOptions {
    /// Defaults: auto backend, config's or default warps/stages, no debug, no IR dumps.
    pub fn new(grid: Grid) -> LaunchOptions {
        LaunchOptions {
            grid,
            backend: Backend::Auto,
            num_warps: None,
            num_stages: None,
            debug: false,
            print_ir_after_all: false,
        }
    }
}

/// A kernel compiled for one set of argument types and constexpr values.
pub struct CompiledKernel {
    /// Tile IR after the tile passes.
    pub compiled: Compiled,
    /// Warps per program for GPU backends.
    pub num_warps: u32,
    /// Software-pipelining depth for GPU backends.
    pub num_stages: u32,
    /// Source → optimised tile IR.
    pub compile_time: Duration,
}

/// What a launch gives back.
#[derive(Debug)]
pub struct LaunchOutcome {
    /// The backend that ran it (never `Auto`).
    pub backend: Backend,
    /// `tl.device_print` output.
    pub printed: String,
    /// Time spent compiling (zero when cached).
    pub compile_time: Duration,
    /// Time spent running (wall time on the interpreter, modelled time on the emulator,
    /// CUDA-event time on the GPU); the last repetition's.
    pub run_time: Duration,
    /// Every timed repetition.
    pub samples: Vec<Duration>,
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
            }
        };
        out.push((a.name.clone(), info));
    }
    Ok(out)
}

/// Compiles `kernel` for these arguments down to optimised tile IR.
///
/// Constexprs missing from `args` come from the first `@triton.autotune`
/// config (until the autotuner is wired in) and from `@triton.heuristics`.
pub fn compile_tile(
    prog: &KernelProgram,
    kernel: &KernelInfo,
    args: &[Arg],
    opts: &LaunchOptions,
) -> Result<CompiledKernel, RunError> {
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
) -> Result<CompiledKernel, RunError> {
    let start = Instant::now();
    let mut infos = arg_infos(kernel, args)?;
    infos.extend(extra);
    let mut num_warps = opts.num_warps;
    let mut num_stages = opts.num_stages;
    if let Some(at) = &kernel.autotune {
        let configs = at.configs.as_ref().map_err(|d| RunError::diags(std::slice::from_ref(d), &prog.files()))?;
        if let Some(cfg) = configs.first() {
            for (k, v) in &cfg.kwargs {
                if !infos.iter().any(|(n, _)| n == k) {
                    infos.push((k.clone(), ArgInfo::Constexpr(v.clone())));
                }
            }
            num_warps.get_or_insert(cfg.num_warps);
            num_stages.get_or_insert(cfg.num_stages);
        }
    }
    if !kernel.heuristics.is_empty() {
        let extra = kernel.eval_heuristics(&infos).map_err(|d| RunError::diags(&[d], &prog.files()))?;
        for (k, v) in extra {
            if !infos.iter().any(|(n, _)| *n == k) {
                infos.push((k, ArgInfo::Constexpr(v)));
            }
        }
    }
    let copts = CompileOptions { debug: opts.debug, ..CompileOptions::default() };
    let mut compiled = trident_front::compile(&prog.file, &kernel.name, &infos, &copts)
        .map_err(|ds| RunError::diags(&ds, &prog.files()))?;
    let mut pm = trident_opt::default_tile_pipeline();
    if opts.print_ir_after_all {
        pm.print_ir_after_all = true;
    }
    pm.run(&mut compiled.module).map_err(|ds| RunError::diags(&ds, &prog.files()))?;
    Ok(CompiledKernel {
        compiled,
        num_warps: num_warps.unwrap_or(4),
        num_stages: num_stages.unwrap_or(3),
        compile_time: start.elapsed(),
    })
}

/// The runtime arguments in IR parameter order, taken (moved) out of `args`.
fn runtime_args(ck: &CompiledKernel, args: &[Arg]) -> Result<Vec<(usize, ArgValue)>, RunError> {
    let c = &ck.compiled;
    let mut out = Vec::new();
    for (name, binding) in c.param_names.iter().zip(&c.params) {
        if let ParamBinding::Runtime { ir_index } = binding {
            if let Some(a) = args.iter().find(|a| &a.name == name) {
                out.push((*ir_index, a.value.clone()));
                continue;
            }
            // A runtime parameter left out: its Python default is passed at run time, as Triton does.
            let default = c.runtime_defaults.iter().find(|(i, _)| i == ir_index).and_then(|(_, v)| match v {
                ConstValue::Int(x) => i64::try_from(*x).ok().map(ArgValue::Int),
                ConstValue::Float(x) => Some(ArgValue::Float(*x)),
                ConstValue::Bool(b) => Some(ArgValue::Bool(*b)),
                _ => None,
            });
            let v =
                default.ok_or_else(|| RunError::msg(format!("missing argument `{name}` of kernel `{}`", c.kernel)))?;
            out.push((*ir_index, v));
        }
    }
    out.sort_by_key(|(i, _)| *i);
    Ok(out)
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

/// Compiles and runs a kernel; on success the tensors in `args` hold the results.
/// On failure `args` is left as it was.
pub fn launch(
    prog: &KernelProgram,
    kernel: &KernelInfo,
    args: &mut [Arg],
    opts: &LaunchOptions,
) -> Result<LaunchOutcome, RunError> {
    let ck = compile_tile(prog, kernel, args, opts)?;
    run_compiled(&ck, args, opts)
}

/// Runs an already compiled kernel once.
pub fn run_compiled(ck: &CompiledKernel, args: &mut [Arg], opts: &LaunchOptions) -> Result<LaunchOutcome, RunError> {
    run_compiled_reps(ck, args, opts, 0, 1)
}

/// Runs an already compiled kernel `warmup + reps` times, timing the last `reps`
/// (for benchmarks; inputs are not restored between repetitions). On success the
/// tensors in `args` hold the last run's results; on failure `args` is unchanged.
pub fn run_compiled_reps(
    ck: &CompiledKernel,
    args: &mut [Arg],
    opts: &LaunchOptions,
    warmup: usize,
    reps: usize,
) -> Result<LaunchOutcome, RunError> {
    let backend = resolve_backend(opts.backend);
    let rt = runtime_args(ck, args)?;
    let module: &Module = &ck.compiled.module;
    let func = module
        .func(&ck.compiled.kernel)
        .ok_or_else(|| RunError::msg(format!("internal: kernel `{}` missing after compilation", ck.compiled.kernel)))?;
    let values: Vec<ArgValue> = rt.iter().map(|(_, v)| v.clone()).collect();
    let grid = opts.grid.dims();
    let (tensors, printed, samples) = match backend {
        Backend::Interp => {
            let iopts = trident_interp::InterpOptions { debug: opts.debug, ..Default::default() };
            let mut samples = vec![];
            let mut last = None;
            for i in 0..warmup + reps.max(1) {
                let mut iargs: Vec<trident_interp::InterpArg> =
                    rt.iter().map(|(i, v)| interp_arg(v, func.ty(func.params[*i].value))).collect();
                let report = trident_interp::launch(module, &ck.compiled.kernel, grid, &mut iargs, &iopts)
                    .map_err(|e| RunError { text: e.render(module) })?;
                if i >= warmup {
                    samples.push(report.elapsed);
                }
                last = Some((iargs, report.printed));
            }
            let (iargs, printed) = last.expect("at least one run");
            (iargs.into_iter().map(|a| a.as_tensor().cloned()).collect(), printed, samples)
        }
        Backend::Emu => {
            let ptx = crate::gpu::compile_ptx(ck, trident_gpu::Target::Sm80)?;
            let run = crate::gpu::run_emu(&ptx, &values, grid, reps)?;
            (run.tensors, run.printed, run.samples)
        }
        Backend::Cuda => {
            let (_, run) = crate::gpu::run_cuda(ck, &values, grid, warmup, reps)?;
            (run.tensors, run.printed, run.samples)
        }
        Backend::Auto => unreachable!("resolved above"),
    };
    write_back(ck, args, &rt, tensors);
    Ok(LaunchOutcome {
        backend,
        printed,
        compile_time: ck.compile_time,
        run_time: *samples.last().unwrap_or(&Duration::ZERO),
        samples,
    })
}

/// Copies the tensors a backend returned (in IR parameter order) into the named arguments.
fn write_back(
    ck: &CompiledKernel,
    args: &mut [Arg],
    rt: &[(usize, ArgValue)],
    outs: Vec<Option<trident_core::HostTensor>>,
) {
    let c = &ck.compiled;
    for ((ir_index, _), out) in rt.iter().zip(outs) {
        let Some(t) = out else { continue };
        let name = c.param_names.iter().zip(&c.params).find_map(|(n, b)| match b {
            ParamBinding::Runtime { ir_index: i } if i == ir_index => Some(n),
            _ => None,
        });
        if let Some(a) = name.and_then(|n| args.iter_mut().find(|a| &a.name == n)) {
            a.value = ArgValue::Tensor(t);
        }
    }
}
