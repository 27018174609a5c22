//! `@triton.autotune` in the launch path: which config a launch compiles with.
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

use trident_front::{ArgInfo, Config, ConstValue, KernelInfo};

use crate::args::{Arg, ArgValue, Backend};
use crate::autotune::{
    Autotuner, Bench, BenchPolicy, ChoiceSource, Prune, TrialError, TrialResult, TuneConfig, TuneSpec, TuneStore,
    TuneValue,
};
use crate::compile::{self, CodeTarget, CompiledKernel, Request};
use crate::launch::{KernelProgram, LaunchOptions, RunError};
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
    /// The launch's arguments as the front end sees them (given values and `extra`).
    pub infos: &'a [(String, ArgInfo)],
    pub opts: &'a LaunchOptions,
    pub target: CodeTarget,
    pub session: &'a Session,
    /// Whether tuning may run (false: first config).
    pub tune: bool,
}

impl Ctx<'_> {
    /// The compile request for one candidate.
    pub fn request(&self, c: &Candidate) -> Request<'_> {
        let mut infos = self.infos.to_vec();
        infos.extend(c.kwargs.iter().map(|(k, v)| (k.clone(), ArgInfo::Constexpr(v.clone()))));
        Request {
            prog: self.prog,
            kernel: self.kernel,
            infos,
            num_warps: c.tune.num_warps,
            num_stages: c.tune.num_stages,
            debug: self.opts.debug,
            print_ir_after_all: self.opts.print_ir_after_all,
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

fn candidate(cfg: &Config, given: &dyn Fn(&str) -> bool, opts: &LaunchOptions) -> Candidate {
    let kwargs: Vec<(String, ConstValue)> = cfg.kwargs.iter().filter(|(k, _)| !given(k)).cloned().collect();
    let tune = TuneConfig {
        constexprs: kwargs.iter().map(|(k, v)| (k.clone(), compile::tune_value(v))).collect(),
        num_warps: opts.num_warps.unwrap_or(cfg.num_warps),
        num_stages: opts.num_stages.unwrap_or(cfg.num_stages),
        num_ctas: cfg.num_ctas,
        maxnreg: cfg.maxnreg,
    };
    Candidate { kwargs, tune }
}

fn env_on(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "on" | "yes"))
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
        constexprs: c.kwargs.iter().map(|(k, v)| (k.clone(), ArgInfo::Constexpr(v.clone()))).collect(),
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
    let interp_default = ctx.target == CodeTarget::Tile && !env_on("TRIDENT_AUTOTUNE_INTERP");
    if !ctx.tune || interp_default {
        return Ok(chosen(&candidate(&configs[0], &given, opts), Decision::FirstConfig, vec![], 0));
    }

    let identity = format!("{}:{}", ctx.target.name(), ctx.prog.source_id());
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
        CodeTarget::Emu(_) => BenchPolicy::Fixed { warmup: 0, reps: 1 },
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
    let mut bench = LaunchBench { ctx, candidates: &candidates, args: ctx.args.to_vec(), current: None, runs: 0 };
    let choice = tuner.tune(&key, &mut bench).map_err(|e| RunError::msg(e.to_string()))?;
    let runs = bench.runs;
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
        ArgValue::Tensor(t) => {
            let dims: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
            format!("{}[{}]", t.dtype.name(), dims.join("x"))
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
        if let ArgValue::Tensor(t) = &a.value {
            key.push((format!("{}.dtype", a.name), t.dtype.name().to_string()));
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

/// Measures configs by compiling them through the cache and running them on
/// copies of the launch's arguments.
struct LaunchBench<'a> {
    ctx: &'a Ctx<'a>,
    candidates: &'a [Candidate],
    /// Copies of the launch's arguments: `reset_to_zero` zeroes these, runs copy them.
    args: Vec<Arg>,
    current: Option<Prepared>,
    runs: u64,
}

enum Prepared {
    Host(Arc<CompiledKernel>),
    Cuda(Arc<CompiledKernel>, crate::gpu::CudaRunner),
}

impl LaunchBench<'_> {
    fn ir_positions(&self, ck: &CompiledKernel, names: &[String]) -> Vec<usize> {
        // The CUDA runner holds arguments in IR parameter order.
        let mut runtime: Vec<(usize, &str)> =
            ck.params.iter().filter_map(|p| p.ir_index.map(|i| (i, p.name.as_str()))).collect();
        runtime.sort_by_key(|(i, _)| *i);
        runtime.iter().enumerate().filter(|(_, (_, n))| names.iter().any(|m| m == n)).map(|(pos, _)| pos).collect()
    }
}

impl Bench for LaunchBench<'_> {
    fn prepare(&mut self, config: &TuneConfig) -> Result<(), TrialError> {
        self.current = None;
        let c = self
            .candidates
            .iter()
            .find(|c| c.tune == *config)
            .ok_or_else(|| TrialError::Fatal(format!("config {config} is not one of the kernel's")))?;
        let (ck, _) = compile::compile(self.ctx.session, &self.ctx.request(c)).map_err(|e| {
            let text = e.error.text.trim_end().to_string();
            if e.out_of_resources {
                TrialError::OutOfResources(text)
            } else {
                TrialError::Compile(text)
            }
        })?;
        self.current = Some(match self.ctx.target {
            CodeTarget::Cuda(_) => {
                let code = ck.gpu.as_ref().ok_or_else(|| TrialError::Fatal("internal: no GPU code".into()))?;
                let values = crate::launch::runtime_values(&ck, &self.args).map_err(|e| TrialError::Failed(e.text))?;
                let grid =
                    crate::launch::grid_of(&ck, &self.args, self.ctx.opts).map_err(|e| TrialError::Failed(e.text))?;
                let runner = crate::gpu::CudaRunner::new(code, &values, grid).map_err(|e| {
                    let t = e.text;
                    if t.contains("shared memory")
                        || t.contains("too many resources")
                        || t.contains("threads per block")
                    {
                        TrialError::OutOfResources(t)
                    } else {
                        TrialError::Failed(t)
                    }
                })?;
                Prepared::Cuda(ck, runner)
            }
            _ => Prepared::Host(ck),
        });
        Ok(())
    }

    fn run(&mut self, _config: &TuneConfig) -> Result<f64, TrialError> {
        let backend = match self.ctx.target {
            CodeTarget::Tile => Backend::Interp,
            CodeTarget::Emu(_) => Backend::Emu,
            CodeTarget::Cuda(_) => Backend::Cuda,
        };
        let t = match &self.current {
            None => return Err(TrialError::Failed("not prepared".into())),
            Some(Prepared::Cuda(_, runner)) => {
                let s = runner.time(0, 1, false).map_err(|e| TrialError::Failed(e.text))?;
                s.last().copied().unwrap_or_default()
            }
            Some(Prepared::Host(ck)) => {
                let raw = crate::launch::run_raw(ck, &self.args, self.ctx.opts, backend, 0, 1)
                    .map_err(|e| TrialError::Failed(e.text.trim_end().to_string()))?;
                raw.samples.last().copied().unwrap_or_default()
            }
        };
        self.runs += 1;
        Ok(t.as_secs_f64() * 1e3)
    }

    fn zero_inputs(&mut self, names: &[String]) -> Result<(), TrialError> {
        if let Some(Prepared::Cuda(ck, runner)) = &self.current {
            for i in self.ir_positions(ck, names) {
                runner.zero(i).map_err(|e| TrialError::Fatal(e.text))?;
            }
            return Ok(());
        }
        for a in self.args.iter_mut().filter(|a| names.contains(&a.name)) {
            if let ArgValue::Tensor(t) = &mut a.value {
                t.data.fill(0);
            }
        }
        Ok(())
    }

    fn restore_inputs(&mut self, names: &[String]) -> Result<(), TrialError> {
        // Host backends run on copies, so there is nothing to restore; device buffers are uploaded again.
        if let Some(Prepared::Cuda(ck, runner)) = &self.current {
            for i in self.ir_positions(ck, names) {
                runner.restore(i).map_err(|e| TrialError::Fatal(e.text))?;
            }
        }
        Ok(())
    }
}
