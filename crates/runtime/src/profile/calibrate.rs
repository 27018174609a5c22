//! The cost of one probe, measured on the backend that runs the kernel: what trace replay
//! subtracts per earlier record (`ProfileMeta::record_cost_cycles`).
//!
//! **Method.** Two calibration kernels are compiled with the launch's target, warps and
//! granularity: one whose body is [`RECORDS`] back-to-back records (start/end pairs of
//! one region, nothing between them), one with no record. Both have the same entry and
//! exit code (clock reads, flush), so the difference of their groups' spans — `%clock64`
//! at the exit minus `%clock64` at the entry, both in every slot's header — is the cost of
//! the records alone:
//!
//! ```text
//! cost = (span with K records − span with none) / K      averaged over the CTA's groups
//! ```
//!
//! That is exactly what replay needs: each probe delays everything after its clock read
//! by its whole sequence. On the emulator the result is exact and the same every time; on
//! CUDA each kernel is launched [`CUDA_REPS`] times and the median difference is taken.
//! Measured once per (backend, target, warps, granularity) and kept for the process.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use trident_gpu::{GpuOptions, ProbeMode, ProfileOptions, Target};
use trident_profile::format::Granularity;
use trident_profile::passes::Regions;
use trident_profile::Profile;

use crate::args::Backend;
use crate::compiled::{Assembled, GpuCode};
use crate::error::RunError;

/// Records in the calibration kernel (a power of two: it is also the ring's capacity, so
/// nothing wraps).
pub const RECORDS: u32 = 64;
/// Launches per kernel on CUDA (the median is kept).
pub const CUDA_REPS: usize = 5;

type Key = (Backend, Target, u32, Granularity);

fn costs() -> &'static Mutex<HashMap<Key, f64>> {
    static COSTS: OnceLock<Mutex<HashMap<Key, f64>>> = OnceLock::new();
    COSTS.get_or_init(Default::default)
}

/// Cycles one record costs a group on `backend` for code of `target` with `num_warps` warps
/// profiled at `granularity` (measured on first use, then remembered).
pub fn record_cost(
    backend: Backend,
    target: Target,
    num_warps: u32,
    granularity: Granularity,
) -> Result<f64, RunError> {
    let key = (backend, target, num_warps, granularity);
    if let Some(&c) = costs().lock().ok().and_then(|m| m.get(&key).copied()).as_ref() {
        return Ok(c);
    }
    let cost = measure(backend, target, num_warps, granularity)?;
    if let Ok(mut m) = costs().lock() {
        m.insert(key, cost);
    }
    Ok(cost)
}

/// The calibration kernel's tile IR: `records` back-to-back records, nothing else.
fn calibration_ir(records: u32) -> String {
    let mut text = String::from("kernel @trident_record_cost() {\n");
    for i in 0..records {
        text.push_str(&format!("  record [name = \"probe\", end = {}, kind = scope]\n", i % 2 == 1));
    }
    text.push_str("  return\n}\n");
    text
}

/// Compiles the calibration kernel with `records` records.
fn compile(records: u32, target: Target, num_warps: u32, granularity: Granularity) -> Result<GpuCode, RunError> {
    let module = trident_ir::parse_module(&calibration_ir(records))
        .map_err(|d| RunError::msg(format!("internal: calibration kernel: {}", d.message)))?;
    let profile = ProfileOptions {
        regions: Regions { scopes: true, ..Regions::default() },
        granularity,
        capacity: RECORDS,
        mode: ProbeMode::Probes,
    };
    let opts = GpuOptions { target, num_warps, num_stages: 1, profile: Some(profile), ..GpuOptions::default() };
    let art = trident_gpu::compile(&module, "trident_record_cost", &opts)
        .map_err(|e| RunError::msg(format!("internal: calibration kernel: {}", e.diagnostic.message)))?;
    Ok(GpuCode::new(art.ptx, String::new(), num_warps, 1, Assembled::default(), art.profile))
}

/// Runs `code` once on `backend`; the mean span (end clock − start clock) of its groups.
fn mean_span(code: &GpuCode, backend: Backend) -> Result<f64, RunError> {
    let grid = [1, 1, 1];
    let run = match backend {
        Backend::Emu => crate::gpu::run_emu_code(code, &[], &[], grid, 1, None)?,
        Backend::Cuda => crate::gpu::run_cuda_code(code, &[], grid, 0, 1, false)?,
        Backend::SassEmu => crate::sass_run::run_sass_emu_code(code, &[], grid, 1)?,
        other => return Err(RunError::msg(format!("internal: no probe cost on the {other:?} backend"))),
    };
    let Some(super::Collected::Buffer(bytes)) = run.profile else {
        return Err(RunError::msg("internal: the calibration kernel left no profile buffer"));
    };
    let mut meta = code.profile.clone().ok_or_else(|| RunError::msg("internal: calibration kernel without meta"))?;
    meta.grid = grid;
    let p = Profile::from_buffer_with_cost(&bytes, &meta, 0.0)
        .map_err(|e| RunError::msg(format!("internal: calibration profile: {e}")))?;
    if p.slots.len() != meta.groups_per_cta as usize || p.has_errors() {
        return Err(RunError::msg(format!("internal: calibration profile: {:?}", p.issues)));
    }
    let spans: Vec<f64> = p.slots.iter().map(|s| (s.trace.clock_end - s.trace.clock_start) as f64).collect();
    Ok(spans.iter().sum::<f64>() / spans.len() as f64)
}

fn measure(backend: Backend, target: Target, num_warps: u32, granularity: Granularity) -> Result<f64, RunError> {
    let with = compile(RECORDS, target, num_warps, granularity)?;
    let without = compile(0, target, num_warps, granularity)?;
    let reps = if backend == Backend::Cuda { CUDA_REPS } else { 1 };
    let mut diffs = vec![];
    for _ in 0..reps {
        diffs.push((mean_span(&with, backend)? - mean_span(&without, backend)?) / RECORDS as f64);
    }
    diffs.sort_by(f64::total_cmp);
    // A negative difference is noise around a tiny cost: no cost rather than a negative one.
    Ok(diffs[diffs.len() / 2].max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_emulator_cost_is_measured_deterministically_and_remembered() {
        let c = record_cost(Backend::Emu, Target::Sm80, 4, Granularity::Warp).unwrap();
        // Six instructions on the emulator's modelled clock: a few tens of cycles.
        assert!(c > 1.0 && c < 100.0, "{c}");
        assert_eq!(measure(Backend::Emu, Target::Sm80, 4, Granularity::Warp).unwrap(), c, "the same every time");
        assert_eq!(record_cost(Backend::Emu, Target::Sm80, 4, Granularity::Warp).unwrap(), c);
        let cta = measure(Backend::Emu, Target::Sm90a, 8, Granularity::Cta).unwrap();
        assert!(cta > 1.0 && cta < 100.0, "{cta}");
        assert!(calibration_ir(2).contains("end = true"));
    }
}
