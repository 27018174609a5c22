//! `@triton.autotune` in the launch path: which config a launch compiles with
//! ([`select`]), and the [`TuningReport`] a launch gives back.
//!
//! For a kernel with autotune configs:
//!
//! * **Pinned.** Constexprs given at the launch override every config's value
//!   for that name (as do `--num-warps`/`--num-stages` for warps and stages).
//!   When every constexpr the configs set is given, nothing is tuned: the
//!   launch uses the given values, with the warps and stages of the config
//!   that sets exactly those values (else of the first config). Triton
//!   rejects a launch that gives a tuned constexpr ("conflicting meta-parameters");
//!   Trident allows it, so that one config can be tried by hand.
//! * **Tuned.** Otherwise the distinct configs left are benchmarked by the
//!   [`Autotuner`] on the launch's own arguments: each config is compiled
//!   through the compile cache (one that fails to compile, or needs more
//!   shared memory than the target has, is skipped), run on the launch's
//!   backend and timed on its clock — the emulator's modelled clock
//!   (deterministic: one run each), CUDA events (25 ms warm-up, 100 ms of
//!   measured runs, median), or wall time on the interpreter. The fastest
//!   median wins; the choice is kept per key in memory and on disk
//!   (`<cache>/autotune/`; `TRIDENT_AUTOTUNE_CACHE=0` keeps it in memory only),
//!   so a later launch or process with the same key reuses it without running anything.
//! * **The interpreter** runs programs one by one on the CPU, so its times say
//!   nothing about GPU performance: there a launch uses the first config
//!   (after pinning) unless `TRIDENT_AUTOTUNE_INTERP=1` asks for tuning anyway.
//!
//! Tuning runs never write into the caller's tensors: every run gets fresh
//! copies of the arguments (on CUDA, device buffers uploaded from them), so
//! `restore_value` holds by construction (on CUDA the buffers are uploaded
//! again after each run), and `reset_to_zero` zeroes the copies before each
//! run. The launch then runs the chosen config on the caller's arguments as
//! they were. The key is the `key=` arguments' values, the dtypes of all
//! tensor arguments, and the grid (a grid expression's text, or the fixed grid).
//!
//! `prune_configs_by` is host Python, which Trident does not run: a warning
//! says so once per kernel and every config is tuned. `@triton.heuristics`
//! are applied when each config is compiled.

use std::sync::Arc;

use trident_front::{ArgInfo, CompileOptions, Config, ConstValue, KernelInfo};

use super::launch_bench::LaunchBench;
use super::{Autotuner, BenchPolicy, ChoiceSource, Prune, TrialResult, TuneConfig, TuneSpec, TuneStore, TuneValue};
use crate::args::{Arg, ArgValue};
use crate::compile::Request;
use crate::compiled::{tune_value, CodeTarget};
use crate::error::RunError;
use crate::launch::LaunchOptions;
use crate::program::KernelProgram;
use crate::session::Session;

/// How a launch's config was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Every tuned constexpr was given by the caller: no tuning.
    Pinned,
    /// Tuning was not asked for (the interpreter without
    /// `TRIDENT_AUTOTUNE_INTERP=1`, or a tile-IR-only compile): the first config.
    FirstConfig,
    /// The autotuner chose (measured now, remembered, or read from disk).
    Tuner(ChoiceSource),
}

/// The config an autotuned kernel's launch used and how it was chosen.
#[derive(Clone, Debug, PartialEq)]
pub struct TuningReport {
    /// The config (after pinned values and `--num-warps`/`--num-stages`).
    pub config: TuneConfig,
    /// How it was chosen.
    pub decided_by: Decision,
    /// Every candidate's outcome when it was tuned, as measured now or read
    /// from disk (empty when not tuned, and when the session already knew the choice).
    pub results: Vec<TrialResult>,
    /// Kernel runs this launch spent benchmarking (0 when the choice was reused).
    pub bench_runs: u64,
}

/// What [`select`] decided.
pub(crate) struct Selected {
    /// Constexprs the config adds to the launch's arguments.
    pub constexprs: Vec<(String, ArgInfo)>,
    pub num_warps: u32,
    pub num_stages: u32,
    pub report: Option<TuningReport>,
}

/// Everything a config choice depends on.
pub(crate) struct Ctx<'a> {
    pub prog: &'a KernelProgram,
    pub kernel: &'a KernelInfo,
    pub args: &'a [Arg],
    /// The launch's arguments as the front end sees them (bound values, and parameters described by type only).
    pub infos: &'a [(String, ArgInfo)],
    pub opts: &'a LaunchOptions,
    /// The front end's options, read from the environment once for the launch.
    pub options: &'a CompileOptions,
    /// The launch's `print_ir_after_all`, or `TRIDENT_DUMP_IR`.
    pub print_ir_after_all: bool,
    pub target: CodeTarget,
    pub session: &'a Session,
    /// Whether tuning may run (false: first config).
    pub tune: bool,
}

impl Ctx<'_> {
    /// The compile request for the launch's arguments plus `constexprs`, with these warps and stages.
    pub fn request(&self, constexprs: &[(String, ArgInfo)], num_warps: u32, num_stages: u32) -> Request<'_> {
        let mut infos = self.infos.to_vec();
        infos.extend(constexprs.iter().cloned());
        Request {
            prog: self.prog,
            kernel: self.kernel,
            infos,
            options: self.options.clone(),
            num_warps,
            num_stages,
            profile: self.opts.profile.filter(|_| self.target != CodeTarget::Tile),
            sanitize: self.opts.sanitized() && self.target != CodeTarget::Tile,
            print_ir_after_all: self.print_ir_after_all,
            target: self.target,
        }
    }
}

/// One config as the launch will compile it.
#[derive(Clone, Debug)]
pub(crate) struct Candidate {
    /// The constexprs it adds (those not pinned), with their front-end values.
    pub kwargs: Vec<(String, ConstValue)>,
    pub tune: TuneConfig,
}

impl Candidate {
    /// The constexprs it adds, as the front end takes them.
    pub fn constexprs(&self) -> Vec<(String, ArgInfo)> {
        self.kwargs.iter().map(|(k, v)| (k.clone(), ArgInfo::Constexpr(v.clone()))).collect()
    }
}

fn candidate(cfg: &Config, given: &dyn Fn(&str) -> bool, opts: &LaunchOptions) -> Candidate {
    let kwargs: Vec<(String, ConstValue)> = cfg.kwargs.iter().filter(|(k, _)| !given(k)).cloned().collect();
    let tune = TuneConfig {
        constexprs: kwargs.iter().map(|(k, v)| (k.clone(), tune_value(v))).collect(),
        num_warps: opts.num_warps.unwrap_or(cfg.num_warps),
        num_stages: opts.num_stages.unwrap_or(cfg.num_stages),
        num_ctas: cfg.num_ctas,
        maxnreg: cfg.maxnreg,
    };
    Candidate { kwargs, tune }
}

/// Decides the config of a launch (tuning it if needed; see the module docs).
pub(crate) fn select(ctx: &Ctx) -> Result<Selected, RunError> {
    let opts = ctx.opts;
    let plain = Selected {
        constexprs: vec![],
        num_warps: opts.num_warps.unwrap_or(4),
        num_stages: opts.num_stages.unwrap_or(3),
        report: None,
    };
    let Some(at) = &ctx.kernel.autotune else { return Ok(plain) };
    let configs =
        at.configs.as_ref().map_err(|d| RunError::from_diags(std::slice::from_ref(d), &ctx.prog.source_files()))?;
    if configs.is_empty() {
        return Ok(plain);
    }
    let given = |name: &str| ctx.infos.iter().any(|(n, _)| n == name);
    let chosen = |c: &Candidate, decided_by: Decision, results: Vec<TrialResult>, bench_runs: u64| Selected {
        constexprs: c.constexprs(),
        num_warps: c.tune.num_warps,
        num_stages: c.tune.num_stages,
        report: Some(TuningReport { config: c.tune.clone(), decided_by, results, bench_runs }),
    };

    let all_pinned = configs.iter().all(|cfg| cfg.kwargs.iter().all(|(k, _)| given(k)));
    if all_pinned {
        // The config that sets exactly the given values lends its warps and stages.
        let value_of = |name: &str| {
            ctx.infos.iter().rev().find(|(n, _)| n == name).and_then(|(_, a)| match a {
                ArgInfo::Constexpr(c) => Some(c.clone()),
                _ => None,
            })
        };
        let matching =
            configs.iter().position(|cfg| cfg.kwargs.iter().all(|(k, v)| value_of(k).as_ref() == Some(v))).unwrap_or(0);
        let c = candidate(&configs[matching], &given, opts);
        return Ok(chosen(&c, Decision::Pinned, vec![], 0));
    }
    let interp_default = ctx.target == CodeTarget::Tile && !crate::env::autotune_interp();
    if !ctx.tune || interp_default {
        return Ok(chosen(&candidate(&configs[0], &given, opts), Decision::FirstConfig, vec![], 0));
    }

    // The emulators' modelled machine decides their timings (`TRIDENT_EMU_MACHINE`).
    let machine = crate::env::emu_machine().ok().flatten().map_or(String::new(), |m| format!("@{}", m.name));
    let identity = format!("{}{machine}:{}", ctx.target.name(), ctx.prog.source_id());
    // The candidates follow from the configs (in the source), which names are
    // pinned and the warps/stages overrides: that names the tuner.
    let pinned: Vec<&str> =
        configs.iter().flat_map(|c| c.kwargs.iter()).map(|(k, _)| k.as_str()).filter(|k| given(k)).collect();
    let tuner_id = format!("{identity}|{}|{pinned:?}|{:?}|{:?}", ctx.kernel.name, opts.num_warps, opts.num_stages);
    let key = key_values(ctx, &at.key);
    // A choice this session made or read before: no candidates to build, no
    // tuner call (which would clone every trial's result).
    let memo_key = (tuner_id, key);
    if let Some(c) = ctx.session.choices.lock().ok().and_then(|m| m.get(&memo_key).cloned()) {
        return Ok(chosen(&c, Decision::Tuner(ChoiceSource::Memo), vec![], 0));
    }
    let (tuner_id, key) = memo_key;

    let mut candidates: Vec<Candidate> = vec![];
    for cfg in configs {
        let c = candidate(cfg, &given, opts);
        if !candidates.iter().any(|o| o.tune == c.tune) {
            candidates.push(c);
        }
    }

    if at.prune_configs_by.is_some() {
        ctx.session.warn_once(
            &format!("prune {} {}", ctx.prog.source_id(), ctx.kernel.name),
            &format!(
                "`{}`: prune_configs_by is host Python, which Trident does not run; tuning all {} configs",
                ctx.kernel.name,
                candidates.len()
            ),
        );
    }
    let policy = match ctx.target {
        // The modelled clock gives the same answer every time.
        CodeTarget::Emu(_) | CodeTarget::SassEmu(_) => BenchPolicy::Fixed { warmup: 0, reps: 1 },
        CodeTarget::Cuda(_) => BenchPolicy::default(),
        // Opt-in only (see the module docs); bounded, as interpreted runs are slow.
        CodeTarget::Tile => BenchPolicy::Budget { warmup_ms: 10.0, rep_ms: 50.0, max_runs: 20 },
    };
    let tuner = {
        let mut tuners = ctx.session.tuners.lock().map_err(|_| RunError::msg("internal: autotuner lock poisoned"))?;
        tuners
            .entry(tuner_id.clone())
            .or_insert_with(|| {
                let spec = TuneSpec {
                    kernel: ctx.kernel.name.clone(),
                    configs: candidates.iter().map(|c| c.tune.clone()).collect(),
                    key: at.key.clone(),
                    reset_to_zero: at.reset_to_zero.clone(),
                    restore_value: at.restore_value.clone(),
                    prune: Prune::default(),
                    heuristics: None,
                    policy,
                };
                let store = ctx.session.cache().and_then(TuneStore::for_cache);
                Arc::new(Autotuner::new(spec, identity.clone(), store).quiet(ctx.session.is_quiet()))
            })
            .clone()
    };
    let mut bench = LaunchBench::new(ctx, &candidates);
    let choice = tuner.tune(&key, &mut bench).map_err(|e| RunError::msg(e.to_string()))?;
    let runs = bench.runs();
    if let Some(why) = &choice.save_error {
        ctx.session.warn_once(&format!("tune save {why}"), &format!("could not save the autotuning choice: {why}"));
    }
    let c = match candidates.iter().position(|c| c.tune == choice.config) {
        Some(i) => {
            let c = Arc::new(candidates[i].clone());
            if let Ok(mut m) = ctx.session.choices.lock() {
                m.insert((tuner_id, key), c.clone());
            }
            c
        }
        // A choice from disk is always one of the candidates (the record's name
        // hashes them); convert back just in case.
        None => Arc::new(Candidate {
            kwargs: choice.config.constexprs.iter().map(|(k, v)| (k.clone(), const_value(v))).collect(),
            tune: choice.config.clone(),
        }),
    };
    Ok(chosen(&c, Decision::Tuner(choice.source), choice.results, runs))
}

fn const_value(v: &TuneValue) -> ConstValue {
    match v {
        TuneValue::Int(i) => ConstValue::Int(*i as i128),
        TuneValue::Float(f) => ConstValue::Float(*f),
        TuneValue::Bool(b) => ConstValue::Bool(*b),
        TuneValue::Str(s) => ConstValue::Str(s.clone()),
    }
}

fn value_text(v: &ArgValue) -> String {
    match v {
        ArgValue::Int(i) => i.to_string(),
        ArgValue::Float(f) => format!("{f:?}"),
        ArgValue::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        ArgValue::Str(s) => format!("{s:?}"),
        ArgValue::DType(d) => d.name().to_string(),
        ArgValue::None => "None".to_string(),
        ArgValue::Tuple(items) => {
            let parts: Vec<String> = items.iter().map(value_text).collect();
            format!("({})", parts.join(", "))
        }
        ArgValue::Tensor(t) => {
            let dims: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
            format!("{}[{}]", t.dtype.name(), dims.join("x"))
        }
        // As a host tensor from the Python package reads (its elements, flat).
        ArgValue::Device(d) => format!("{}[{}]", d.dtype.name(), d.nbytes / d.dtype.size_bytes().max(1)),
        // The tensor it describes (the block shape is a compile-time fact of the config).
        ArgValue::Descriptor(d) => {
            let dims: Vec<String> = d.shape.iter().map(|d| d.to_string()).collect();
            let dtype = d.base.array().map_or("?", |(t, _)| t.name());
            format!("desc<{dtype}[{}]>", dims.join("x"))
        }
    }
}

/// The tuning key: the `key=` arguments' values, every tensor's dtype, and the grid.
fn key_values(ctx: &Ctx, names: &[String]) -> Vec<(String, String)> {
    let mut key = vec![];
    for name in names {
        let text = match ctx.args.iter().find(|a| &a.name == name) {
            Some(a) => value_text(&a.value),
            None => match ctx.infos.iter().find(|(n, _)| n == name) {
                Some((_, info)) => format!("{info:?}"),
                None => ctx
                    .kernel
                    .param(name)
                    .and_then(|p| p.default.as_ref())
                    .map_or_else(|| "None".to_string(), |d| format!("{d:?}")),
            },
        };
        key.push((name.clone(), text));
    }
    for a in ctx.args {
        match &a.value {
            ArgValue::Tensor(t) => key.push((format!("{}.dtype", a.name), t.dtype.name().to_string())),
            ArgValue::Descriptor(d) => {
                if let Some((dtype, _)) = d.base.array() {
                    key.push((format!("{}.dtype", a.name), dtype.name().to_string()));
                }
            }
            _ => {}
        }
    }
    // Spacing does not change a grid expression.
    let grid = match &ctx.opts.grid_expr {
        Some(g) => g.text().split_whitespace().collect(),
        None => ctx.opts.grid.to_string(),
    };
    key.push(("grid".to_string(), grid));
    key
}
