//! The launch flow: one launch API across backends.
//!
//! ```text
//! launch(prog, kernel, args, opts)
//!   = prepare(prog, kernel, args, opts)        bind the arguments          (bind)
//!                                              choose the config           (autotune::select; may benchmark)
//!                                              compile through the cache   (compile::compile, once)
//!   + run_compiled(&prepared, args, opts)      grid, backend run, results written into `args` (run)
//! ```
//!
//! Where things are kept between launches is a [`Session`]
//! ([`LaunchOptions::session`], default [`Session::global`]).
//!
//! Errors are [`RunError`]s whose text is ready for a terminal: kernel errors
//! with the source line and a caret, launch errors naming the argument.
//!
//! **Profiling** ([`LaunchOptions::profile`]): the kernel is compiled with probes (the
//! options are part of the cache key), the run allocates the zeroed profile buffer and
//! passes it as the hidden last argument (emulator and CUDA; the interpreter refuses),
//! and [`LaunchOutcome::profile`] is the decoded [`Profile`] (see [`crate::profile`]).
//! The kernel's own outputs are those of an unprofiled launch.

use std::ops::Deref;
use std::sync::Arc;
use std::time::{Duration, Instant};

use trident_front::{ArgInfo, ConstValue, KernelInfo};

use crate::args::{Arg, ArgValue, Backend, Grid, RunCommand};
use crate::autotune::select::{self, Ctx};
use crate::autotune::TuningReport;
use crate::cache::Outcome;
use crate::compiled::{CodeTarget, CompiledKernel};
use crate::error::RunError;
use crate::grid_expr::GridExpr;
use crate::program::KernelProgram;
use crate::session::Session;
use trident_gpu::ProfileOptions;
use trident_profile::Profile;

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
    /// Profile the kernel in place (`trident profile`): which regions, per warp, warpgroup
    /// or CTA, ring capacity; `regions.scopes` keeps the user's `pl.scope`s. Needs the
    /// emulator or CUDA (`Auto` picks CUDA when there is a device, else the emulator).
    /// `ProbeMode::Markers` (emulator only) profiles the unprobed kernel with zero-cost
    /// markers instead: the true timeline, to check the probes against.
    pub profile: Option<ProfileOptions>,
    /// How a profiled launch's replay learns the probes' cost (probes only): the
    /// calibration kernel's, measured in this kernel by a second launch on copies of the
    /// arguments, or per site by a third with every record doubled
    /// ([`crate::profile::ProbeCost`]).
    pub profile_cost: crate::profile::ProbeCost,
    /// Stop a launch on the interpreter or the emulator that runs longer than this (an
    /// error; the arguments are left as they were). `None`: `TRIDENT_TIMEOUT`, else no limit.
    pub timeout: Option<Duration>,
    /// Run the schedule found by a search of the cubin's SASS (`--sass-search BUDGET`,
    /// `TRIDENT_SASS_SEARCH`; the SASS emulator and CUDA): searched at the first launch,
    /// kept in the cache directory (`crate::schedule`). `None`: `TRIDENT_SASS_SEARCH`, else off.
    pub sass_search: Option<String>,
    /// Sanitize mode on the emulator and CUDA (`--sanitize`; `TRIDENT_SANITIZE=1` turns it on
    /// for every launch): the kernel checks every global access against its buffer's extent,
    /// suppresses one outside and fails the launch with the interpreter's error for the first
    /// (see [`crate::sanitize`]). The interpreter always checks; the SASS emulator refuses it.
    pub sanitize: bool,
    /// For launches on device memory ([`ArgValue::Device`]): the raw `CUstream` to queue the
    /// kernel on (the caller's, e.g. torch's current stream); `None` or 0: the legacy default
    /// stream. Such a launch is asynchronous, as Triton's is, unless `device_timing` asks
    /// for its time (or sanitize mode or profiling must read its buffers back).
    pub stream: Option<u64>,
    /// For launches on device memory: time the kernel with events around it on the stream
    /// and wait for it (`LaunchOutcome::run_time` is then its device time; otherwise zero).
    pub device_timing: bool,
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
            profile: None,
            profile_cost: crate::profile::ProbeCost::Calibrated,
            timeout: None,
            sass_search: None,
            sanitize: false,
            stream: None,
            device_timing: false,
        }
    }

    /// The options a `trident run` (or `bench`) command line asks for.
    pub fn from_command(cmd: &RunCommand) -> LaunchOptions {
        LaunchOptions {
            grid_expr: cmd.grid_expr.clone(),
            backend: cmd.backend,
            num_warps: cmd.num_warps,
            num_stages: cmd.num_stages,
            debug: cmd.debug,
            print_ir_after_all: cmd.print_ir_after_all,
            flush_l2: cmd.bench.flush_l2,
            profile: cmd.profile.as_ref().map(|p| p.options()),
            profile_cost: cmd.profile.as_ref().map_or(crate::profile::ProbeCost::Calibrated, |p| p.probe_cost),
            timeout: cmd.timeout,
            sanitize: cmd.sanitize,
            sass_search: cmd.sass_search.clone(),
            ..LaunchOptions::new(cmd.grid)
        }
    }

    /// The backend these options run on (never `Auto`): [`resolve_backend`]'s choice, except
    /// that a profiled launch without a GPU runs on the emulator (the interpreter has no clock).
    pub fn resolved_backend(&self) -> Backend {
        match (self.backend, &self.profile) {
            (Backend::Auto, Some(_)) if !crate::gpu::cuda_available() => Backend::Emu,
            (b, _) => resolve_backend(b),
        }
    }

    /// Whether the launch is sanitized: asked for here or by `TRIDENT_SANITIZE`.
    pub fn sanitized(&self) -> bool {
        self.sanitize || crate::env::sanitize()
    }

    /// Refuses profiling, and sanitize mode, where they cannot run.
    fn check_profile(&self) -> Result<(), RunError> {
        if self.sanitized() && self.resolved_backend() == Backend::SassEmu {
            return Err(RunError::msg(
                "error: sanitize mode runs on the emulator or CUDA (--backend emu or cuda), not on the SASS emulator",
            ));
        }
        let Some(p) = &self.profile else { return Ok(()) };
        if self.resolved_backend() == Backend::Interp {
            return Err(RunError::msg(
                "error: profiling needs an emulator or a GPU (--backend emu, sass-emu or cuda): the interpreter runs tile IR, \
                 which has no clock to read",
            ));
        }
        if p.mode == trident_gpu::ProbeMode::Markers && self.resolved_backend() != Backend::Emu {
            return Err(RunError::msg(
                "error: zero-cost markers are read by the emulator only (--backend emu): on a GPU they are comments",
            ));
        }
        p.validate().map_err(|m| RunError::msg(format!("error: {m}")))
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
    /// Warps per program the launch's config asks for (what the GPU code was compiled with).
    pub num_warps: u32,
    /// Software-pipelining depth the launch's config asks for.
    pub num_stages: u32,
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
    /// For a profiled launch: the decoded profile buffer (grid and measured probe cost
    /// filled in), with every issue found in it.
    pub profile: Option<Profile>,
    /// On the SASS emulator: how its estimate came about (cycles, what bounds it).
    pub estimate: Option<String>,
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
        ArgValue::Tuple(items) => ConstValue::Tuple(
            items
                .iter()
                .map(|v| const_of(&Arg { name: arg.name.clone(), text: arg.text.clone(), value: v.clone() }))
                .collect::<Result<_, _>>()?,
        ),
        ArgValue::Tensor(_) | ArgValue::Device(_) | ArgValue::Descriptor(_) => {
            let what = if matches!(arg.value, ArgValue::Descriptor(_)) { "tensor descriptor" } else { "tensor" };
            return Err(RunError::argument(format!(
                "`{}` is a tl.constexpr parameter: give a scalar, not a {what}",
                arg.name
            )));
        }
    })
}

/// Triton's tuple arguments: a tuple given to a parameter that is not a `tl.constexpr` is
/// passed element by element, as arguments named `ptrs[0]`, `ptrs[1][0]`, … (ints in it are
/// runtime ints, tensors pointers, as in Triton). `None` when no argument is such a tuple.
pub fn flatten_tuples(kernel: &KernelInfo, args: &[Arg]) -> Option<Vec<Arg>> {
    flatten_tuples_of(args, |name| kernel.param(trident_front::tuple_root(name)).is_some_and(|p| !p.is_constexpr))
}

/// Whether `name` is a tuple `ck` was compiled for element by element.
fn compiled_as_elements(ck: &CompiledKernel, name: &str) -> bool {
    let prefix = format!("{name}[");
    !ck.params.iter().any(|p| p.name == name) && ck.params.iter().any(|p| p.name.starts_with(&prefix))
}

/// Every argument of `args` moved out (left `None`), the tuples `flat` accepts element by
/// element; [`refill_tuples`] moves them back. `None` (nothing moved) when no tuple is
/// accepted. Moving, not copying: a launch's tensors are not duplicated.
fn take_flattened(args: &mut [Arg], flat: impl Fn(&str) -> bool) -> Option<Vec<Arg>> {
    let tuples: Vec<bool> =
        args.iter().map(|a| matches!(&a.value, ArgValue::Tuple(items) if !items.is_empty()) && flat(&a.name)).collect();
    if !tuples.contains(&true) {
        return None;
    }
    fn leaves(name: String, text: &str, v: &mut ArgValue, out: &mut Vec<Arg>) {
        match v {
            ArgValue::Tuple(items) if !items.is_empty() => {
                for (i, x) in items.iter_mut().enumerate() {
                    leaves(format!("{name}[{i}]"), text, x, out);
                }
            }
            _ => out.push(Arg { name, text: text.to_string(), value: std::mem::replace(v, ArgValue::None) }),
        }
    }
    let mut out = vec![];
    for (a, tuple) in args.iter_mut().zip(tuples) {
        if tuple {
            leaves(a.name.clone(), &a.text, &mut a.value, &mut out);
        } else {
            let value = std::mem::replace(&mut a.value, ArgValue::None);
            out.push(Arg { name: a.name.clone(), text: a.text.clone(), value });
        }
    }
    Some(out)
}

/// `args` with each non-empty tuple whose name `flat` accepts given element by element.
fn flatten_tuples_of(args: &[Arg], flat: impl Fn(&str) -> bool) -> Option<Vec<Arg>> {
    let is_tuple = |a: &Arg| matches!(&a.value, ArgValue::Tuple(items) if !items.is_empty()) && flat(&a.name);
    if !args.iter().any(is_tuple) {
        return None;
    }
    fn leaves(name: String, text: &str, v: &ArgValue, out: &mut Vec<Arg>) {
        match v {
            ArgValue::Tuple(items) if !items.is_empty() => {
                for (i, x) in items.iter().enumerate() {
                    leaves(format!("{name}[{i}]"), text, x, out);
                }
            }
            _ => out.push(Arg { name, text: text.to_string(), value: v.clone() }),
        }
    }
    let mut out = vec![];
    for a in args {
        if is_tuple(a) {
            leaves(a.name.clone(), &a.text, &a.value, &mut out);
        } else {
            out.push(a.clone());
        }
    }
    Some(out)
}

/// Moves the values of [`take_flattened`]'s `flat` back into `args`, tuple elements into their
/// tuples (with the tensors as the kernel left them).
fn refill_tuples(args: &mut [Arg], flat: Vec<Arg>) {
    let mut by_name: std::collections::HashMap<String, ArgValue> =
        flat.into_iter().map(|a| (a.name, a.value)).collect();
    fn refill(name: &str, v: &mut ArgValue, by_name: &mut std::collections::HashMap<String, ArgValue>) {
        match v {
            ArgValue::Tuple(items) if !items.is_empty() => {
                for (i, x) in items.iter_mut().enumerate() {
                    refill(&format!("{name}[{i}]"), x, by_name);
                }
            }
            _ => {
                if let Some(n) = by_name.remove(name) {
                    *v = n;
                }
            }
        }
    }
    for a in args {
        if let Some(v) = by_name.remove(&a.name) {
            a.value = v;
        } else {
            refill(&a.name.clone(), &mut a.value, &mut by_name);
        }
    }
}

/// Binds each given argument to the kernel's parameters, as the front end sees it
/// (constexprs by value, the rest by type and specialization).
pub fn bind(kernel: &KernelInfo, args: &[Arg]) -> Result<Vec<(String, ArgInfo)>, RunError> {
    let mut out = Vec::with_capacity(args.len());
    for a in args {
        let elem = trident_front::tuple_root(&a.name) != a.name;
        let Some(p) = kernel.param(trident_front::tuple_root(&a.name)) else {
            let names: Vec<&str> = kernel.params.iter().map(|p| p.name.as_str()).collect();
            return Err(RunError::argument(format!(
                "unknown argument `{}` for kernel `{}` (its parameters: {})",
                a.name,
                kernel.name,
                names.join(", ")
            )));
        };
        let info = if p.is_constexpr && !elem {
            ArgInfo::Constexpr(const_of(a)?)
        } else {
            match &a.value {
                // Host tensors are allocated 16-byte aligned on every backend.
                ArgValue::Tensor(t) => ArgInfo::Pointer { dtype: t.dtype, aligned16: true },
                // The caller's device memory: specialized on its address as Triton does.
                ArgValue::Device(d) => ArgInfo::Pointer { dtype: d.dtype, aligned16: d.address.is_multiple_of(16) },
                ArgValue::Descriptor(d) => {
                    d.check().map_err(|m| RunError::argument(format!("argument `{}`: {m}", a.name)))?;
                    let (dtype, _) = d.base.array().expect("checked: the base is an array");
                    let aligned16 = match &d.base {
                        ArgValue::Device(x) => x.address.is_multiple_of(16),
                        _ => true,
                    };
                    ArgInfo::TensorDesc {
                        dtype,
                        aligned16,
                        block: d.block.clone(),
                        nan: d.nan,
                        shape_div16: d.shape.iter().map(|n| n % 16 == 0).collect(),
                    }
                }
                ArgValue::Int(v) => ArgInfo::Int(*v),
                ArgValue::Float(v) => ArgInfo::Float(*v),
                ArgValue::Bool(v) => ArgInfo::Bool(*v),
                // Triton makes a dtype or None given to any parameter a compile-time value.
                ArgValue::DType(_) | ArgValue::None => ArgInfo::Constexpr(const_of(a)?),
                // An empty tuple is a compile-time value; `launch` passes the others element
                // by element.
                ArgValue::Tuple(items) if items.is_empty() => ArgInfo::Constexpr(const_of(a)?),
                ArgValue::Tuple(_) => {
                    return Err(RunError::argument(format!(
                        "`{}` is a tuple: pass its elements as `{0}[0]`, `{0}[1]`, … (what `launch` does)",
                        a.name
                    )))
                }
                ArgValue::Str(_) => {
                    return Err(RunError::argument(format!(
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

/// The code target a backend compiles for (the emulator: `TRIDENT_EMU_TARGET`; CUDA: device 0's architecture).
fn code_target(backend: Backend, session: &Session) -> Result<CodeTarget, RunError> {
    Ok(match backend {
        Backend::Interp | Backend::Auto => CodeTarget::Tile,
        Backend::Emu => CodeTarget::Emu(crate::env::emu_target().map_err(RunError::msg)?),
        Backend::SassEmu => CodeTarget::SassEmu(crate::env::emu_target().map_err(RunError::msg)?),
        Backend::Cuda => CodeTarget::Cuda(session.cuda_target().map_err(RunError::msg)?),
    })
}

/// Binds, chooses the config and compiles through the cache, once: the one path every
/// compilation of a launch (and of `trident compile`, with `target` Tile and no tuning) takes.
///
/// `bound` is the arguments as the front end sees them ([`bind`], plus parameters
/// described by type only); `tune`: whether the configs may be benchmarked (else the
/// first config, after pinning).
pub(crate) fn prepare_bound(
    prog: &KernelProgram,
    kernel: &KernelInfo,
    args: &[Arg],
    bound: &[(String, ArgInfo)],
    opts: &LaunchOptions,
    target: CodeTarget,
    tune: bool,
) -> Result<Prepared, RunError> {
    let start = Instant::now();
    let session = opts.session();
    // The environment is read once per launch: the key and the compile see the same values.
    let scopes = opts.profile.is_some_and(|p| p.regions.scopes);
    let options = crate::env::compile_options(opts.debug, scopes);
    let print_ir_after_all = opts.print_ir_after_all || crate::env::dump_ir();
    let ctx = Ctx {
        prog,
        kernel,
        args,
        infos: bound,
        opts,
        options: &options,
        print_ir_after_all,
        target,
        session: &session,
        tune,
    };
    let sel = select::select(&ctx)?;
    let req = ctx.request(&sel.constexprs, sel.num_warps, sel.num_stages);
    let (compiled, cache) = crate::compile::compile(&session, &req).map_err(|e| e.error)?;
    Ok(Prepared {
        compiled,
        num_warps: sel.num_warps,
        num_stages: sel.num_stages,
        cache,
        tuning: sel.report,
        compile_time: start.elapsed(),
    })
}

/// Compiles `kernel` for these arguments and `opts.backend` (GPU code for the
/// emulator and CUDA), through the compile cache; an autotuned kernel's config
/// is chosen first, benchmarking the configs on `args` when needed (see
/// [`crate::autotune`]; `args` are not modified).
pub fn prepare(
    prog: &KernelProgram,
    kernel: &KernelInfo,
    args: &[Arg],
    opts: &LaunchOptions,
) -> Result<Prepared, RunError> {
    if let Some(flat) = flatten_tuples(kernel, args) {
        return prepare(prog, kernel, &flat, opts);
    }
    opts.check_profile()?;
    let target = code_target(opts.resolved_backend(), &opts.session())?;
    prepare_bound(prog, kernel, args, &bind(kernel, args)?, opts, target, true)
}

/// Compiles (see [`prepare`]) and runs a kernel; on success the tensors in
/// `args` hold the results. On failure `args` is left as it was.
pub fn launch(
    prog: &KernelProgram,
    kernel: &KernelInfo,
    args: &mut [Arg],
    opts: &LaunchOptions,
) -> Result<LaunchOutcome, RunError> {
    let as_elements = |name: &str| kernel.param(trident_front::tuple_root(name)).is_some_and(|p| !p.is_constexpr);
    if let Some(mut flat) = take_flattened(args, as_elements) {
        // On failure `launch` leaves its arguments as they were: they go back either way.
        let out = launch(prog, kernel, &mut flat, opts);
        refill_tuples(args, flat);
        return out;
    }
    let prepared = prepare(prog, kernel, args, opts)?;
    let measured = opts.profile_cost != crate::profile::ProbeCost::Calibrated
        && opts.profile.is_some_and(|p| p.mode == trident_gpu::ProbeMode::Probes);
    // The second launch of a measured cost runs on the arguments as they were.
    let original = measured.then(|| args.to_vec());
    let mut out = run_compiled(&prepared, args, opts)?;
    out.compile_time = prepared.compile_time;
    out.cache = prepared.cache;
    out.tuning = prepared.tuning;
    if let (Some(copy), Some(p), true) = (original, opts.profile, out.profile.is_some()) {
        let full = out.profile.take().expect("checked above");
        let replay_err = |e: trident_profile::DecodeError| RunError::msg(format!("error: replaying the profile: {e}"));
        let regions = crate::profile::Regions { kernel: true, ..Default::default() };
        let base = second_launch(prog, kernel, copy.clone(), opts, ProfileOptions { regions, ..p })?;
        out.profile = Some(match opts.profile_cost {
            crate::profile::ProbeCost::PerSite => {
                let doubled = doubled_launch(prog, kernel, copy, opts, p)?;
                match crate::profile::per_site_costs(&full, &doubled, base.as_ref()) {
                    Ok(costs) => full.with_site_costs(costs).map_err(replay_err)?,
                    Err(e) => return Err(RunError::msg(format!("error: measuring the per-site probe cost: {e}"))),
                }
            }
            _ => match base.as_ref().and_then(|b| crate::profile::in_kernel_cost(&full, b)) {
                Some(c) => full.with_cost(c).map_err(replay_err)?,
                None => full,
            },
        });
    }
    Ok(out)
}

/// Launches `kernel` once more on `args` (copies), profiled with `profile` and replayed
/// with the calibrated cost: the second launch of a measured probe cost.
fn second_launch(
    prog: &KernelProgram,
    kernel: &KernelInfo,
    mut args: Vec<Arg>,
    opts: &LaunchOptions,
    profile: ProfileOptions,
) -> Result<Option<crate::profile::Profile>, RunError> {
    let opts =
        LaunchOptions { profile: Some(profile), profile_cost: crate::profile::ProbeCost::Calibrated, ..opts.clone() };
    Ok(launch(prog, kernel, &mut args, &opts)?.profile)
}

/// The launch with every record doubled ([`trident_gpu::ProbeMode::Doubled`]) on `args`,
/// profiled as `p` says otherwise and replayed with the calibrated cost, with rings
/// of twice the capacity where they fit in shared memory (so that it drops no more of the
/// records than the single launch), else of the same capacity.
pub fn doubled_launch(
    prog: &KernelProgram,
    kernel: &KernelInfo,
    args: Vec<Arg>,
    opts: &LaunchOptions,
    p: ProfileOptions,
) -> Result<crate::profile::Profile, RunError> {
    let doubled = ProfileOptions { mode: trident_gpu::ProbeMode::Doubled, ..p };
    let larger = ProfileOptions { capacity: (p.capacity * 2).min(trident_profile::format::MAX_CAPACITY), ..doubled };
    let profile = match second_launch(prog, kernel, args.clone(), opts, larger) {
        Ok(profile) => profile,
        Err(_) if larger.capacity != p.capacity => second_launch(prog, kernel, args, opts, doubled)?,
        Err(e) => return Err(e),
    };
    profile.ok_or_else(|| RunError::msg("internal: the doubled launch left no profile"))
}

/// Runs an already compiled kernel once.
pub fn run_compiled(ck: &CompiledKernel, args: &mut [Arg], opts: &LaunchOptions) -> Result<LaunchOutcome, RunError> {
    run_compiled_reps(ck, args, opts, 0, 1)
}

/// Runs an already compiled kernel `warmup + reps` times, timing the last `reps`
/// (for benchmarks; inputs are not restored between repetitions). On success the
/// tensors in `args` hold the last run's results; on failure `args` is unchanged.
///
/// The interpreter runs any compiled kernel; the emulator and CUDA need one prepared
/// for them (an error says so otherwise).
pub fn run_compiled_reps(
    ck: &CompiledKernel,
    args: &mut [Arg],
    opts: &LaunchOptions,
    warmup: usize,
    reps: usize,
) -> Result<LaunchOutcome, RunError> {
    if let Some(mut flat) = take_flattened(args, |name| compiled_as_elements(ck, name)) {
        let out = run_compiled_reps(ck, &mut flat, opts, warmup, reps);
        refill_tuples(args, flat);
        return out;
    }
    opts.check_profile()?;
    let backend = opts.resolved_backend();
    let raw = crate::run::run_raw(ck, args, opts, backend, warmup, reps)?;
    // Decoded before the results are written back: a failure leaves `args` as they were.
    let profile = match (&raw.profile, &ck.gpu) {
        (Some(collected), Some(code)) => {
            Some(crate::profile::decode_launch(code, collected, raw.grid, backend, raw.clock_ghz)?)
        }
        _ => None,
    };
    crate::run::write_back(ck, args, raw.tensors);
    Ok(LaunchOutcome {
        profile,
        backend,
        printed: raw.printed,
        compile_time: Duration::ZERO,
        run_time: raw.samples.last().copied().unwrap_or_default(),
        samples: raw.samples,
        grid: raw.grid,
        cache: None,
        tuning: None,
        estimate: raw.estimate,
    })
}
