//! GPU lowering passes (tile IR → GPU IR), as `trident-opt` passes so that the pass
//! manager can verify and dump the IR after each.
//!
//! In pipeline order (declared in [`crate::pipeline::GpuPipeline::passes`]; by name in
//! [`registry`]): `gpu-assign-layouts` (axis analysis, coalescing, mma layouts,
//! conversions), `gpu-remove-converts`, `gpu-pipeline` (cp.async — or, for tensor
//! descriptors on sm_90, TMA — multi-buffering of dot operands, `num_stages`),
//! `gpu-descriptors` (the other tensor-descriptor loads become TMA copies or plain loads),
//! `gpu-rebase-pointers` (a loop-carried pointer tensor advanced uniformly becomes one
//! carried scalar base and the loop-invariant offsets), `gpu-sink-ranges` (recomputes `arange`s inside the loops that
//! use them, to shorten their registers' lives), `gpu-shared-operands` (loop-invariant
//! `mma.sync` operands re-read from shared memory in the loop where registers are scarce),
//! `gpu-alloc-shared` (marks the wgmma
//! operands read from shared memory, plans shared memory and records the plan in the IR),
//! `gpu-insert-barriers`, `gpu-pingpong` (turns between two consumer warpgroups of a
//! warp-specialized loop).
//!
//! Passes decide; facts they share with emission live in [`crate::machine`]. No pass
//! names `crate::ptx` (`tests/module_rules.rs`).

pub mod alloc_shared;
pub mod assign_layouts;
pub mod barriers;
pub mod coalesce;
pub mod descriptors;
pub mod pingpong;
pub mod pipeline;
pub mod rebase_pointers;
pub mod registry;
pub mod remove_converts;
pub mod shared_operands;
pub mod sink_ranges;
pub mod warp_specialize;

use crate::options::GpuOptions;
use std::cell::Cell;
use std::rc::Rc;
use trident_ir::{Diagnostic, Function};
use trident_opt::Pass;

/// Decides how each tensor-descriptor load runs (see `descriptors`).
pub struct Descriptors(pub GpuOptions);
/// Lays out every tensor of each kernel (see `assign_layouts`).
pub struct AssignLayouts(pub GpuOptions);
/// Folds and rematerialises layout conversions (see `remove_converts`).
pub struct RemoveConverts;
/// Software-pipelines loops feeding dots (see `pipeline`).
pub struct Pipeline(pub GpuOptions);
/// Plans shared memory and records the plan in the IR (see `alloc_shared`).
pub struct AllocShared {
    pub opts: GpuOptions,
    /// Where a kernel that does not fit is reported, besides the diagnostic.
    pub overflow: OverflowReport,
}

impl AllocShared {
    pub fn new(opts: GpuOptions) -> AllocShared {
        AllocShared { opts, overflow: OverflowReport::default() }
    }
}

/// The sizes of a kernel whose shared memory does not fit.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SharedOverflow {
    /// Bytes the kernel needs.
    pub needed: u64,
    /// Bytes it may use.
    pub limit: u64,
}

/// Where `gpu-alloc-shared` leaves a [`SharedOverflow`] for whoever runs it through a pass
/// manager: a pass returns only a diagnostic, and callers (the autotuner) must tell "does
/// not fit" from other failures without reading its text. Clones share the slot.
#[derive(Clone, Debug, Default)]
pub struct OverflowReport(Rc<Cell<Option<SharedOverflow>>>);

impl OverflowReport {
    /// The overflow reported since the last call, if any.
    pub fn take(&self) -> Option<SharedOverflow> {
        self.0.take()
    }
}
/// Inserts barriers between shared-memory users (see `barriers`).
pub struct InsertBarriers;
/// FA3's ping-pong between two consumer warpgroups (see `pingpong`).
pub struct Pingpong(pub GpuOptions);

impl Pass for Pingpong {
    fn name(&self) -> &'static str {
        "gpu-pingpong"
    }

    fn run_on_function(&self, f: &mut Function) -> Result<bool, Diagnostic> {
        if !f.kernel {
            return Ok(false);
        }
        match pingpong::pingpong(f, &self.0) {
            Ok(done) => Ok(done),
            Err(why) => {
                if std::env::var_os("TRIDENT_DEBUG_PIPELINE").is_some() {
                    eprintln!("gpu-pingpong: `{}`: not applied: {why}", f.name);
                }
                Ok(false)
            }
        }
    }
}
/// Recomputes `arange`s inside the loops that use them (see `sink_ranges`).
pub struct SinkRanges;
/// Keeps loop-invariant mma operands in shared memory where registers are scarce (see
/// `shared_operands`).
pub struct SharedOperands(pub GpuOptions);

impl Pass for SharedOperands {
    fn name(&self) -> &'static str {
        "gpu-shared-operands"
    }

    fn run_on_function(&self, f: &mut Function) -> Result<bool, Diagnostic> {
        if !f.kernel {
            return Ok(false);
        }
        Ok(shared_operands::shared_operands(f, &self.0) > 0)
    }
}
/// Carries loop-carried pointer tensors as one scalar base (see `rebase_pointers`).
pub struct RebasePointers;

impl Pass for RebasePointers {
    fn name(&self) -> &'static str {
        "gpu-rebase-pointers"
    }

    fn run_on_function(&self, f: &mut Function) -> Result<bool, Diagnostic> {
        if !f.kernel {
            return Ok(false);
        }
        Ok(rebase_pointers::rebase_pointers(f) > 0)
    }
}

impl Pass for SinkRanges {
    fn name(&self) -> &'static str {
        "gpu-sink-ranges"
    }

    fn run_on_function(&self, f: &mut Function) -> Result<bool, Diagnostic> {
        if !f.kernel {
            return Ok(false);
        }
        Ok(sink_ranges::sink_ranges(f) > 0)
    }
}

impl Pass for Descriptors {
    fn name(&self) -> &'static str {
        "gpu-descriptors"
    }

    fn run_on_function(&self, f: &mut Function) -> Result<bool, Diagnostic> {
        let lowered = descriptors::lower_descriptors(f, &self.0);
        // What computed the pointers and masks of loads now copied by TMA is dead.
        let tma = f.all_ops().into_iter().any(|o| matches!(f.ops[o].kind, trident_ir::OpKind::TmaCopy));
        if tma {
            trident_opt::Pass::run_on_function(&trident_opt::dce::Dce, f)?;
        }
        Ok(lowered > 0 || tma)
    }
}

impl Pass for AssignLayouts {
    fn name(&self) -> &'static str {
        "gpu-assign-layouts"
    }

    fn run_on_function(&self, f: &mut Function) -> Result<bool, Diagnostic> {
        if !f.kernel {
            return Ok(false);
        }
        assign_layouts::assign_layouts(f, &self.0)?;
        Ok(true)
    }
}

impl Pass for RemoveConverts {
    fn name(&self) -> &'static str {
        "gpu-remove-converts"
    }

    fn run_on_function(&self, f: &mut Function) -> Result<bool, Diagnostic> {
        if !f.kernel {
            return Ok(false);
        }
        Ok(remove_converts::remove_converts(f) > 0)
    }
}

impl Pass for Pipeline {
    fn name(&self) -> &'static str {
        "gpu-pipeline"
    }

    fn run_on_function(&self, f: &mut Function) -> Result<bool, Diagnostic> {
        if !f.kernel {
            return Ok(false);
        }
        Ok(pipeline::pipeline_loops(f, &self.0) > 0)
    }
}

impl Pass for AllocShared {
    fn name(&self) -> &'static str {
        "gpu-alloc-shared"
    }

    fn run_on_function(&self, f: &mut Function) -> Result<bool, Diagnostic> {
        if !f.kernel {
            return Ok(false);
        }
        match alloc_shared::alloc_shared(f, &self.opts) {
            Ok(_) => Ok(true),
            Err(e) => {
                if let alloc_shared::PlanError::OutOfSharedMemory { needed, limit, .. } = e {
                    self.overflow.0.set(Some(SharedOverflow { needed, limit }));
                }
                Err(e.diagnostic().clone())
            }
        }
    }
}

impl Pass for InsertBarriers {
    fn name(&self) -> &'static str {
        "gpu-insert-barriers"
    }

    fn run_on_function(&self, f: &mut Function) -> Result<bool, Diagnostic> {
        if !f.kernel {
            return Ok(false);
        }
        Ok(barriers::insert_barriers(f) > 0)
    }
}
