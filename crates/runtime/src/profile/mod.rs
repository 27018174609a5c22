//! In-kernel profiling on the host side of a launch: the profile buffer's size, the launch's
//! facts the compiler could not know (grid, backend, the measured cost of a probe), and
//! the decoded [`Profile`].
//!
//! A profiled kernel (compiled with [`LaunchOptions::profile`](crate::launch::LaunchOptions))
//! takes its profile buffer as a hidden last argument: [`buffer_bytes`] zero-filled bytes,
//! allocated by the backend runners in [`crate::gpu`] and read back after the launch.
//! [`decode_launch`] completes the compiler's meta and decodes (`trident_profile` does the
//! rest: pairing, replay, clock rate, outputs). The probe cost replay subtracts is
//! measured, not assumed: [`calibrate`].
//!
//! The vocabulary of profiles is re-exported here so that the CLI (which depends on this
//! crate only) can print tables and write traces.

pub mod calibrate;

pub use trident_gpu::{ProbeMode, ProfileOptions, Target};
pub use trident_profile::format::{validate_capacity, Granularity};
pub use trident_profile::passes::Regions;
pub use trident_profile::{table, trace, Issue, Profile, ProfileMeta, Severity};

use crate::args::Backend;
use crate::compiled::GpuCode;
use crate::error::RunError;

/// The meta of profiled code with the launch's grid, or `None` for unprofiled code.
fn launch_meta(code: &GpuCode, grid: [u32; 3]) -> Result<Option<ProfileMeta>, RunError> {
    if !code.ptx.profile_buffer {
        return Ok(None);
    }
    let Some(meta) = &code.profile else {
        return Err(RunError::msg(format!(
            "internal: kernel `{}` takes a profile buffer but has no profile meta",
            code.ptx.entry
        )));
    };
    let mut meta = meta.clone();
    meta.grid = grid;
    meta.validate().map_err(|e| RunError::msg(format!("error: profiling `{}`: {e}", code.ptx.entry)))?;
    Ok(Some(meta))
}

/// Bytes of the profile buffer a launch of `code` on `grid` needs (`None`: not profiled).
/// A grid whose buffer could not exist is an error naming the sizes.
pub fn buffer_bytes(code: &GpuCode, grid: [u32; 3]) -> Result<Option<usize>, RunError> {
    let Some(meta) = launch_meta(code, grid)? else { return Ok(None) };
    let layout = meta.layout().map_err(|e| RunError::msg(format!("error: profiling `{}`: {e}", code.ptx.entry)))?;
    Ok(Some(layout.buffer_bytes()))
}

/// Decodes the profile buffer of a launch of `code` on `grid` by `backend`: the meta gets
/// the grid, the target as the launch ran it (`emu-sm_80`, `cuda-sm_90a`), the emulator's
/// clock facts, and the probe cost [`calibrate::record_cost`] measured on that backend.
pub fn decode_launch(code: &GpuCode, bytes: &[u8], grid: [u32; 3], backend: Backend) -> Result<Profile, RunError> {
    let Some(mut meta) = launch_meta(code, grid)? else {
        return Err(RunError::msg("internal: a profile buffer from an unprofiled kernel"));
    };
    let target = code.ptx.target;
    match backend {
        Backend::Emu => {
            meta.target = format!("emu-{}", target.arch());
            // The emulator's `%globaltimer` advances with its modelled clock, one tick per ns.
            meta.globaltimer_resolution_ns = 1;
            meta.nominal_clock_ghz = crate::gpu::EMU_CLOCK_GHZ;
        }
        _ => meta.target = format!("cuda-{}", target.arch()),
    }
    meta.record_cost_cycles = calibrate::record_cost(backend, target, code.num_warps, meta.granularity)?;
    Profile::from_buffer(bytes, &meta).map_err(|e| RunError::msg(format!("error: the profile buffer: {e}")))
}
