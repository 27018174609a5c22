//! GPU lowering passes (tile IR → GPU IR), as `trident-opt` passes so that the pass
//! manager can verify and dump the IR after each.
//!
//! In pipeline order (declared in [`crate::pipeline::GpuPipeline::passes`]): `gpu-assign-layouts` (axis analysis, coalescing, mma
//! layouts, conversions), `gpu-remove-converts`, `gpu-pipeline` (cp.async multi-buffering of
//! dot operands, `num_stages`), `gpu-sink-ranges` (recomputes `arange`s inside the loops
//! that use them, to shorten their registers' lives), `gpu-alloc-shared` (checks the
//! budget), `gpu-insert-barriers`.

pub mod alloc_shared;
pub mod assign_layouts;
pub mod barriers;
pub mod coalesce;
pub mod pipeline;
pub mod remove_converts;
pub mod sink_ranges;

use crate::options::GpuOptions;
use trident_ir::{Diagnostic, Function};
use trident_opt::Pass;

/// Lays out every tensor of each kernel (see `assign_layouts`).
pub struct AssignLayouts(pub GpuOptions);
/// Folds and rematerialises layout conversions (see `remove_converts`).
pub struct RemoveConverts;
/// Software-pipelines loops feeding dots (see `pipeline`).
pub struct Pipeline(pub GpuOptions);
/// Checks that shared memory fits (the plan itself is recomputed from the IR when emitting).
pub struct AllocShared(pub GpuOptions);
/// Inserts barriers between shared-memory users (see `barriers`).
pub struct InsertBarriers;
/// Recomputes `arange`s inside the loops that use them (see `sink_ranges`).
pub struct SinkRanges;

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
        if f.kernel {
            alloc_shared::plan_shared(f, &self.0)?;
        }
        Ok(false)
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
