//! Running a compiled kernel on a backend: the runtime arguments in IR parameter
//! order, the grid, the interpreter / emulator / CUDA run, and the results written
//! back into the named arguments. The last step of a launch ([`crate::launch`]) and
//! what the autotuner's measurements run ([`crate::autotune`]).

use std::time::Duration;

use trident_core::{DType, HostTensor};

use crate::args::{Arg, ArgValue, Backend};
use crate::compiled::{CodeTarget, CompiledKernel, GpuCode, ScalarDefault};
use crate::error::RunError;
use crate::launch::LaunchOptions;
use crate::scalar::scalar_bits;

/// A run whose results have not been written back.
pub(crate) struct RawRun {
    /// Each runtime argument after the run, in IR parameter order (`None` for scalars).
    pub tensors: Vec<Option<HostTensor>>,
    pub printed: String,
    pub samples: Vec<Duration>,
    pub grid: [u32; 3],
    /// What a profiled kernel collected in the last run.
    pub profile: Option<crate::profile::Collected>,
    /// The emulator's modelled clock, GHz (`None` elsewhere).
    pub clock_ghz: Option<f64>,
    /// The SASS emulator's account of its estimate ([`crate::gpu::GpuRun::estimate`]).
    pub estimate: Option<String>,
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
        if !p.parts.is_empty() {
            let Some(ArgValue::Descriptor(d)) = args.iter().find(|a| a.name == p.name).map(|a| &a.value) else {
                return Err(RunError::argument(format!(
                    "argument `{}` of kernel `{}`: the kernel was compiled for a tensor descriptor here",
                    p.name, ck.kernel
                )));
            };
            out.extend(p.parts.iter().copied().zip(d.parts()));
            continue;
        }
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

/// `v` as the interpreter takes it (owned: the last run's values are moved in, not copied).
fn interp_arg(v: ArgValue, ty: &trident_ir::Type) -> trident_interp::InterpArg {
    use trident_interp::InterpArg;
    let d = ty.elem().num().unwrap_or(DType::I64);
    match v {
        ArgValue::Tensor(t) => InterpArg::Tensor(t),
        v => InterpArg::Scalar { dtype: d, bits: scalar_bits(&v, d) },
    }
}

/// `code` with the searched schedule the options ask for (`--sass-search`,
/// `TRIDENT_SASS_SEARCH`), if they ask.
fn searched_schedule(
    code: &GpuCode,
    values: &[ArgValue],
    grid: [u32; 3],
    opts: &LaunchOptions,
) -> Result<Option<std::sync::Arc<GpuCode>>, RunError> {
    match opts.sass_search.clone().or_else(crate::env::sass_search) {
        Some(budget) => crate::schedule::searched(code, values, grid, &budget).map(Some),
        None => Ok(None),
    }
}

/// The GPU code of `ck` when it was compiled for `backend`'s kind of target.
fn gpu_code(ck: &CompiledKernel, backend: Backend) -> Result<&GpuCode, RunError> {
    let fits = matches!(
        (backend, ck.target),
        (Backend::Emu | Backend::SassEmu, CodeTarget::Emu(_) | CodeTarget::SassEmu(_))
            | (Backend::Cuda, CodeTarget::Cuda(_))
    );
    match &ck.gpu {
        Some(code) if fits => Ok(code),
        _ => Err(RunError::msg(format!(
            "kernel `{}` was compiled for `{}`, not for the {backend:?} backend: compile it for the backend it runs on",
            ck.kernel,
            ck.target.name()
        ))),
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
    let mut values = runtime_values(ck, args)?;
    let grid = grid_of(ck, args, opts)?;
    if values.iter().any(|v| matches!(v, ArgValue::Device(_))) {
        return run_on_device_arrays(ck, &values, grid, opts, backend);
    }
    let (tensors, printed, samples, profile, clock_ghz, estimate) = match backend {
        // Tile IR is part of every compiled kernel: the interpreter runs any of them.
        Backend::Interp | Backend::Auto => {
            let module = &ck.module;
            let func = module
                .func(&ck.kernel)
                .ok_or_else(|| RunError::msg(format!("internal: kernel `{}` missing after compilation", ck.kernel)))?;
            let iopts =
                trident_interp::InterpOptions { debug: opts.debug, deadline: deadline(opts)?, ..Default::default() };
            let mut samples = vec![];
            let mut last = None;
            let runs = warmup + reps.max(1);
            for i in 0..runs {
                // Each run gets its own copy of the inputs; the last takes `values` itself (a
                // cached launch's dispatch is measured in copies of its buffers).
                let inputs = if i + 1 == runs { std::mem::take(&mut values) } else { values.clone() };
                let mut iargs: Vec<trident_interp::InterpArg> =
                    inputs.into_iter().zip(&func.params).map(|(v, p)| interp_arg(v, func.ty(p.value))).collect();
                let report = trident_interp::launch(module, &ck.kernel, grid, &mut iargs, &iopts)
                    .map_err(|e| RunError::other(e.render(module)))?;
                if i >= warmup {
                    samples.push(report.elapsed);
                }
                last = Some((iargs, report.printed));
            }
            let Some((iargs, printed)) = last else { return Err(RunError::msg("internal: no interpreter run")) };
            let tensors = iargs
                .into_iter()
                .map(|a| match a {
                    trident_interp::InterpArg::Tensor(t) => Some(t),
                    trident_interp::InterpArg::Scalar { .. } => None,
                })
                .collect();
            (tensors, printed, samples, None, None, None)
        }
        Backend::Emu => {
            let code = gpu_code(ck, backend)?;
            let run = crate::gpu::run_emu_code(code, &values, &ck.runtime_params(), grid, reps, deadline(opts)?)?;
            sanitize_check(ck, code, &run, &values, grid)?;
            (run.tensors, run.printed, run.samples, run.profile, run.clock_ghz, run.estimate)
        }
        Backend::SassEmu => {
            let code = gpu_code(ck, backend)?;
            let searched = searched_schedule(code, &values, grid, opts)?;
            let code = searched.as_deref().unwrap_or(code);
            let run = crate::sass_run::run_sass_emu_code(code, &values, grid, reps)?;
            (run.tensors, run.printed, run.samples, run.profile, run.clock_ghz, run.estimate)
        }
        Backend::Cuda => {
            let code = gpu_code(ck, backend)?;
            let searched = searched_schedule(code, &values, grid, opts)?;
            let code = searched.as_deref().unwrap_or(code);
            let run = crate::gpu::run_cuda_code(code, &values, grid, warmup, reps, opts.flush_l2)?;
            sanitize_check(ck, code, &run, &values, grid)?;
            (run.tensors, run.printed, run.samples, run.profile, run.clock_ghz, run.estimate)
        }
    };
    Ok(RawRun { tensors, printed, samples, grid, profile, clock_ghz, estimate })
}

/// A launch on the caller's device memory (the Python package's CUDA tensors): checked
/// (`gpu::check_device_args`), then queued on the caller's stream; nothing is copied or
/// written back — the kernel wrote the arrays in place.
fn run_on_device_arrays(
    ck: &CompiledKernel,
    values: &[ArgValue],
    grid: [u32; 3],
    opts: &LaunchOptions,
    backend: Backend,
) -> Result<RawRun, RunError> {
    let names = ck.runtime_params();
    if backend != Backend::Cuda {
        let name = values.iter().zip(&names).find(|(v, _)| matches!(v, ArgValue::Device(_))).map_or("?", |(_, n)| n);
        return Err(RunError::argument(format!(
            "argument `{name}` is in CUDA device memory: a launch on device arrays runs on the cuda backend, not \
             on {backend:?} (pass host arrays there, e.g. `.cpu()`)"
        )));
    }
    let ordinal = crate::gpu::check_device_args(values, &names)?;
    if opts.sass_search.is_some() || crate::env::sass_search().is_some() {
        // The search runs the kernel on host copies of its arguments, which device memory
        // does not give.
        return Err(RunError::argument(
            "a searched SASS schedule (sass_search, TRIDENT_SASS_SEARCH) is not supported on device arrays yet",
        ));
    }
    let code = gpu_code(ck, backend)?;
    let run = crate::gpu::run_cuda_device(code, values, grid, ordinal, opts.stream.unwrap_or(0), opts.device_timing)?;
    sanitize_check(ck, code, &run, values, grid)?;
    Ok(RawRun {
        tensors: run.tensors,
        printed: run.printed,
        samples: run.samples,
        grid,
        profile: run.profile,
        clock_ghz: None,
        estimate: None,
    })
}

/// A sanitized kernel's violation, as the launch's error (see [`crate::sanitize`]).
fn sanitize_check(
    ck: &CompiledKernel,
    code: &GpuCode,
    run: &crate::gpu::GpuRun,
    values: &[ArgValue],
    grid: [u32; 3],
) -> Result<(), RunError> {
    match (&code.ptx.sanitize, &run.sanitize) {
        (Some(info), Some(record)) => {
            crate::sanitize::check(info, record, values, &ck.runtime_params(), &ck.module.files, grid)
        }
        (Some(_), None) => Err(RunError::msg("internal: a sanitized kernel's record did not come back")),
        _ => Ok(()),
    }
}

/// When a CPU launch starting now must stop: `opts.timeout`, else `TRIDENT_TIMEOUT`.
fn deadline(opts: &LaunchOptions) -> Result<Option<std::time::Instant>, RunError> {
    let limit = match opts.timeout {
        Some(t) => Some(t),
        None => crate::env::timeout().map_err(RunError::argument)?,
    };
    Ok(limit.map(|t| std::time::Instant::now() + t))
}

/// Copies the tensors a backend returned (in IR parameter order) into the named arguments.
pub(crate) fn write_back(ck: &CompiledKernel, args: &mut [Arg], outs: Vec<Option<HostTensor>>) {
    for (name, out) in ck.runtime_params().into_iter().zip(outs) {
        let Some(t) = out else { continue };
        // A descriptor's tensor comes back as its hidden `NAME.base` parameter.
        let (arg, in_descriptor) = match name.strip_suffix(".base") {
            Some(d) => (d, true),
            None => (name.as_str(), false),
        };
        if let Some(a) = args.iter_mut().find(|a| a.name == arg) {
            match &mut a.value {
                ArgValue::Descriptor(d) if in_descriptor => d.base = ArgValue::Tensor(t),
                v => *v = ArgValue::Tensor(t),
            }
        }
    }
}
