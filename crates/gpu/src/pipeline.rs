//! The GPU compile pipeline: the one place that sequences the GPU passes and emission.
//!
//! [`compile`] (or [`GpuPipeline::run`] for dumps) takes a module of tile IR (after the
//! tile passes) and the name of a kernel in it, and returns [`GpuArtifacts`]: the GPU IR
//! after every pass, the PTX with its launch facts, and statistics. The runtime, the CLI,
//! the tests and the examples all come through here; nothing else orders GPU passes.
//!
//! The pass list is declared once, in [`GpuPipeline::passes`]. A pass that only some
//! compilations want (profiling instrumentation) is inserted there under an option of
//! [`GpuOptions`], so that every caller gets it the same way.
//!
//! **Profiling** (`GpuOptions::profile`). Without it, `profile-strip` runs first: any
//! `record` op (the front end's `pl.scope`s) is removed before the GPU passes see it, so
//! the kernel is byte for byte the unprofiled one. With it, the user's scopes are kept
//! where they are written (unless `scopes` is not asked for: then they are stripped too),
//! and `profile-instrument` adds the automatic regions *after* `gpu-pipeline` and
//! `gpu-sink-ranges`: a `loads` region then wraps what the loop really waits on (the
//! `async_wait` and `local_load`s of a pipelined load, or a plain global load), a `dots`
//! region the dot, a `loops` region the iteration as it was pipelined — the automatic
//! regions measure the schedule the unprofiled kernel runs. Shared-memory planning then
//! reserves the probes' rings. The artifacts carry the [`ProfileMeta`].

use std::time::{Duration, Instant};

use trident_ir::{Diagnostic, Module, OpKind};
use trident_opt::{Pass, PassManager, PassTiming};
use trident_profile::format::FORMAT_VERSION;
use trident_profile::passes::{Instrument, Strip};
use trident_profile::{regions_of, ProfileMeta};

use crate::options::{GpuOptions, ProbeMode};
use crate::passes::{
    AllocShared, AssignLayouts, Descriptors, InsertBarriers, OverflowReport, Pingpong, Pipeline, RebasePointers,
    RemoveConverts, SharedOperands, SinkRanges,
};
use crate::ptx::{emit_gpu_ir, PtxKernel};

/// What compiling one kernel for the GPU produces.
#[derive(Clone, Debug)]
pub struct GpuArtifacts {
    /// The kernel in GPU IR (layouts on every tensor), as emission read it; a module
    /// holding that one function (helpers inlined) and the source files.
    pub gpu_ir: Module,
    /// PTX and how to launch it.
    pub ptx: PtxKernel,
    /// Where the time went.
    pub stats: GpuStats,
    /// With `GpuOptions::profile`: the regions and the shape of the profile buffer
    /// (`grid` is `[1, 1, 1]` and `record_cost_cycles` this target's nominal probe cost
    /// until the launcher fills in the launch's grid and the measured cost).
    pub profile: Option<ProfileMeta>,
}

/// Statistics of one GPU compilation.
#[derive(Clone, Debug, Default)]
pub struct GpuStats {
    /// Every pass run, in order, with its time and whether it changed the IR.
    pub passes: Vec<PassTiming>,
    /// Time spent emitting PTX from the GPU IR.
    pub emit_time: Duration,
    /// Bytes of dynamic shared memory the kernel is launched with.
    pub shared_bytes: u32,
}

/// Why a kernel could not be compiled for the GPU.
#[derive(Clone, Debug)]
pub struct GpuError {
    /// What went wrong, at the source line that caused it where there is one.
    pub diagnostic: Box<Diagnostic>,
    /// The kind of failure, for callers that act on it (the autotuner skips configs that
    /// need more than the device has).
    pub kind: GpuErrorKind,
}

/// The kinds of [`GpuError`] callers tell apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuErrorKind {
    /// The kernel needs more shared memory than the target (or the option's limit) allows.
    OutOfSharedMemory {
        /// Bytes the kernel needs.
        needed: u64,
        /// Bytes it may use.
        limit: u64,
    },
    /// Anything else: an unsupported construct, an invalid option, an internal error.
    Other,
}

impl GpuError {
    fn other(diagnostic: Diagnostic) -> GpuError {
        GpuError { diagnostic: Box::new(diagnostic), kind: GpuErrorKind::Other }
    }

    /// Whether the kernel asked for more of the device than it has (a config to skip, not a bug).
    pub fn is_out_of_resources(&self) -> bool {
        matches!(self.kind, GpuErrorKind::OutOfSharedMemory { .. })
    }
}

impl std::fmt::Display for GpuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.diagnostic.message)
    }
}

impl std::error::Error for GpuError {}

impl From<Diagnostic> for GpuError {
    fn from(d: Diagnostic) -> GpuError {
        GpuError::other(d)
    }
}

/// The GPU pipeline for one set of options.
#[derive(Clone, Debug)]
pub struct GpuPipeline {
    opts: GpuOptions,
    print_ir_after_all: Option<bool>,
}

impl GpuPipeline {
    /// The pipeline for `opts`. IR dumps follow `TRIDENT_DUMP_IR` unless set with
    /// [`GpuPipeline::print_ir_after_all`].
    pub fn new(opts: &GpuOptions) -> GpuPipeline {
        GpuPipeline { opts: opts.clone(), print_ir_after_all: None }
    }

    /// Dump the IR to stderr after every pass (on top of `TRIDENT_DUMP_IR`).
    pub fn print_ir_after_all(mut self, on: bool) -> GpuPipeline {
        self.print_ir_after_all = Some(on);
        self
    }

    /// The options it compiles with.
    pub fn options(&self) -> &GpuOptions {
        &self.opts
    }

    /// The GPU passes, in order: the one declaration of the pipeline.
    pub fn passes(&self) -> Vec<Box<dyn Pass>> {
        self.passes_reporting(&OverflowReport::default())
    }

    /// [`GpuPipeline::passes`], with shared-memory planning reporting a kernel that does not
    /// fit to `overflow`. Planning comes after every pass that adds shared-memory users; only
    /// barrier insertion, which keeps the plan valid, follows it.
    fn passes_reporting(&self, overflow: &OverflowReport) -> Vec<Box<dyn Pass>> {
        let o = &self.opts;
        let mut passes: Vec<Box<dyn Pass>> = vec![];
        // Records not asked for go before any GPU pass sees them.
        if !o.profile.is_some_and(|p| p.regions.scopes) {
            passes.push(Box::new(Strip));
        }
        passes.push(Box::new(AssignLayouts(o.clone())));
        passes.push(Box::new(RemoveConverts));
        passes.push(Box::new(Pipeline(o.clone())));
        passes.push(Box::new(Descriptors(o.clone())));
        passes.push(Box::new(RebasePointers));
        passes.push(Box::new(SinkRanges));
        // Automatic regions see the pipelined loops; planning (next) reserves the rings.
        if let Some(p) = o.profile.filter(|p| p.regions.instruments()) {
            passes.push(Box::new(Instrument::new(p.regions)));
        }
        // Decides with a trial plan, so it sees every other shared-memory user first.
        passes.push(Box::new(SharedOperands(o.clone())));
        passes.push(Box::new(AllocShared { opts: o.clone(), overflow: overflow.clone() }));
        passes.push(Box::new(InsertBarriers));
        // Turns between warpgroups go where every CTA barrier is known.
        passes.push(Box::new(Pingpong(o.clone())));
        passes
    }

    /// The names of [`GpuPipeline::passes`], in order.
    pub fn pass_names(&self) -> Vec<&'static str> {
        self.passes().iter().map(|p| p.name()).collect()
    }

    /// A pass manager holding [`GpuPipeline::passes`] (verifying after each).
    pub fn pass_manager(&self) -> PassManager {
        self.pass_manager_reporting(&OverflowReport::default())
    }

    fn pass_manager_reporting(&self, overflow: &OverflowReport) -> PassManager {
        let mut pm = PassManager::new();
        if let Some(on) = self.print_ir_after_all {
            pm.print_ir_after_all |= on;
        }
        for p in self.passes_reporting(overflow) {
            pm.add(p);
        }
        pm
    }

    /// Lowers kernel `kernel` of `m` (tile IR) to GPU IR: a module holding that kernel, its
    /// helpers inlined, with layouts on every tensor, conversions, shared memory and
    /// barriers, verified.
    pub fn lower(&self, m: &Module, kernel: &str) -> Result<(Module, Vec<PassTiming>), GpuError> {
        if let Some(p) = &self.opts.profile {
            p.validate().map_err(Diagnostic::error)?;
        }
        let f = m.func(kernel).ok_or_else(|| Diagnostic::error(format!("no kernel named `{kernel}` in the module")))?;
        if !f.kernel {
            return Err(Diagnostic::error(format!("`{kernel}` is not a kernel")).into());
        }
        let mut timings = vec![];
        let has_calls = f.all_ops().iter().any(|&op| matches!(f.ops[op].kind, OpKind::Call { .. }));
        let mut gm = if has_calls {
            // Helpers must be inlined: the GPU backend compiles one function.
            let mut all = m.clone();
            let mut pm = PassManager::new();
            pm.add(Box::new(trident_opt::Inline));
            pm.run(&mut all).map_err(first)?;
            timings.extend_from_slice(pm.timings());
            let f =
                all.func(kernel).cloned().ok_or_else(|| Diagnostic::error(format!("kernel `{kernel}` vanished")))?;
            Module { funcs: vec![f], files: all.files }
        } else {
            Module { funcs: vec![f.clone()], files: m.files.clone() }
        };
        let overflow = OverflowReport::default();
        let mut pm = self.pass_manager_reporting(&overflow);
        let r = pm.run(&mut gm);
        timings.extend_from_slice(pm.timings());
        r.map_err(|errs| {
            let diagnostic = Box::new(first(errs));
            match overflow.take() {
                Some(o) => {
                    GpuError { diagnostic, kind: GpuErrorKind::OutOfSharedMemory { needed: o.needed, limit: o.limit } }
                }
                None => GpuError { diagnostic, kind: GpuErrorKind::Other },
            }
        })?;
        Ok((gm, timings))
    }

    /// Emits PTX for `kernel` of `gm`, a module already lowered to GPU IR (by
    /// [`GpuPipeline::lower`]: emission reads the shared-memory plan recorded there).
    pub fn emit(&self, gm: &Module, kernel: &str) -> Result<PtxKernel, GpuError> {
        emit_gpu_ir(gm, kernel, &self.opts).map_err(GpuError::other)
    }

    /// Lowers and emits: the whole GPU compilation of one kernel.
    pub fn run(&self, m: &Module, kernel: &str) -> Result<GpuArtifacts, GpuError> {
        let (gpu_ir, passes) = self.lower(m, kernel)?;
        let start = Instant::now();
        let ptx = self.emit(&gpu_ir, kernel)?;
        let stats = GpuStats { passes, emit_time: start.elapsed(), shared_bytes: ptx.shared_bytes };
        let profile = self.profile_meta(&gpu_ir, kernel)?;
        Ok(GpuArtifacts { gpu_ir, ptx, stats, profile })
    }

    /// The profile meta of `kernel` in `gpu_ir` (lowered with these options), when profiling:
    /// its regions numbered as emission numbered their records.
    pub fn profile_meta(&self, gpu_ir: &Module, kernel: &str) -> Result<Option<ProfileMeta>, GpuError> {
        let Some(p) = &self.opts.profile else { return Ok(None) };
        let f = gpu_ir.func(kernel).ok_or_else(|| Diagnostic::error(format!("no kernel named `{kernel}`")))?;
        let regions = regions_of(f, &gpu_ir.files)?.regions;
        let target = self.opts.target;
        let producer_warps = crate::machine::probe::producer_warps(f);
        let meta = ProfileMeta {
            format_version: FORMAT_VERSION,
            kernel: f.name.clone(),
            target: target.arch().to_string(),
            grid: [1, 1, 1],
            warps_per_cta: self.opts.num_warps,
            producer_warps,
            granularity: p.granularity,
            groups_per_cta: p.granularity.groups_with_producers(self.opts.num_warps, producer_warps),
            capacity: p.capacity,
            record_cost_cycles: if p.mode == ProbeMode::Markers { 0.0 } else { NOMINAL_RECORD_COST_CYCLES },
            nominal_clock_ghz: target.nominal_clock_ghz(),
            globaltimer_resolution_ns: 1000,
            regions,
        };
        meta.validate().map_err(|e| Diagnostic::error(format!("internal: {e}")))?;
        Ok(Some(meta))
    }
}

/// What a probe costs before anyone measured it on the target (KPerfIR measured about 33
/// cycles per record on an H100): a placeholder the launcher replaces with the cost it
/// measures on the backend that runs the kernel (markers cost nothing).
pub const NOMINAL_RECORD_COST_CYCLES: f64 = 33.0;

/// Compiles kernel `kernel` of `m` (tile IR after the tile passes) for the GPU.
pub fn compile(m: &Module, kernel: &str, opts: &GpuOptions) -> Result<GpuArtifacts, GpuError> {
    GpuPipeline::new(opts).run(m, kernel)
}

fn first(mut errs: Vec<Diagnostic>) -> Diagnostic {
    if errs.is_empty() {
        Diagnostic::error("internal: a pass failed without a diagnostic")
    } else {
        errs.swap_remove(0)
    }
}
