//! In-kernel profiling on the host side of a launch: the profile buffer's size, the launch's
//! facts the compiler could not know (grid, backend, the measured cost of a probe), and
//! the decoded [`Profile`].
//!
//! A profiled kernel (compiled with [`LaunchOptions::profile`](crate::launch::LaunchOptions))
//! takes its profile buffer as a hidden last argument: [`buffer_bytes`] zero-filled bytes,
//! allocated by the backend runners in [`crate::gpu`] and read back after the launch.
//! [`decode_launch`] completes the compiler's meta and decodes (`trident_profile` does the
//! rest: pairing, replay, clock rate, outputs). The probe cost replay subtracts is
//! measured, not assumed: [`calibrate`]. A kernel compiled with zero-cost markers
//! (`ProbeMode::Markers`, emulator only) has no buffer: the emulator's markers are turned
//! into the buffer free probes would have written (`slots_from_marks`), the ground truth the
//! probes are checked against.
//!
//! The vocabulary of profiles is re-exported here so that the CLI (which depends on this
//! crate only) can print tables and write traces.

pub mod calibrate;

pub use trident_gpu::{ProbeMode, ProfileOptions, Target};
pub use trident_profile::format::{validate_capacity, Granularity};
pub use trident_profile::passes::Regions;
pub use trident_profile::sites::{self, Site, SiteCosts};
pub use trident_profile::{table, trace, Issue, Profile, ProfileMeta, Severity};

use crate::args::Backend;
use crate::compiled::GpuCode;
use crate::error::RunError;
use trident_profile::format::encode::{encode_buffer, slots_from_marks, Mark};
use trident_profile::format::MAX_CAPACITY;

/// What a profiled launch collected.
#[derive(Clone, Debug)]
pub enum Collected {
    /// The profile buffer the probes wrote.
    Buffer(Vec<u8>),
    /// The zero-cost markers the emulator saw (a kernel compiled with markers).
    Marks(Vec<Mark>),
}

/// The meta of profiled code with the launch's grid, or `None` for unprofiled code.
fn launch_meta(code: &GpuCode, grid: [u32; 3]) -> Result<Option<ProfileMeta>, RunError> {
    if code.profile.is_none() && !code.ptx.profile_buffer {
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
    if !code.ptx.profile_buffer {
        return Ok(None);
    }
    let Some(meta) = launch_meta(code, grid)? else { return Ok(None) };
    let layout = meta.layout().map_err(|e| RunError::msg(format!("error: profiling `{}`: {e}", code.ptx.entry)))?;
    Ok(Some(layout.buffer_bytes()))
}

/// Decodes what a launch of `code` on `grid` by `backend` collected: the meta gets the
/// grid, the target as the launch ran it (`emu-sm_80`, `sass-emu-sm_90a`, `cuda-sm_90a`), on
/// the emulators their clock (`clock_ghz`: `%globaltimer` counts its modelled ns), and the
/// probe cost
/// [`calibrate::record_cost`] measured on that backend — none for markers, which cost
/// nothing.
pub fn decode_launch(
    code: &GpuCode,
    collected: &Collected,
    grid: [u32; 3],
    backend: Backend,
    clock_ghz: Option<f64>,
) -> Result<Profile, RunError> {
    let Some(mut meta) = launch_meta(code, grid)? else {
        return Err(RunError::msg("internal: profile data from an unprofiled kernel"));
    };
    let target = code.ptx.target;
    match backend {
        Backend::Emu | Backend::SassEmu => {
            let name = if backend == Backend::Emu { "emu" } else { "sass-emu" };
            meta.target = format!("{name}-{}", target.arch());
            meta.globaltimer_resolution_ns = 1;
            if let Some(ghz) = clock_ghz.filter(|g| g.is_finite() && *g > 0.0) {
                meta.nominal_clock_ghz = ghz;
            }
        }
        _ => meta.target = format!("cuda-{}", target.arch()),
    }
    let bad = |e: String| RunError::msg(format!("error: the profile of `{}`: {e}", code.ptx.entry));
    match collected {
        Collected::Buffer(bytes) => {
            meta.record_cost_cycles = calibrate::record_cost(backend, target, code.num_warps, meta.granularity)?;
            Profile::from_buffer(bytes, &meta).map_err(|e| bad(e.to_string()))
        }
        Collected::Marks(marks) => {
            meta.record_cost_cycles = 0.0;
            let slots = slots_from_marks(&meta, marks);
            // Free probes need no ring: every mark is kept (up to the format's largest ring).
            let most = slots.iter().map(|s| s.records.len()).max().unwrap_or(1).max(1);
            meta.capacity = (most as u32).next_power_of_two().min(MAX_CAPACITY);
            let layout = meta.layout().map_err(|e| bad(e.to_string()))?;
            let bytes = encode_buffer(&layout, &slots).map_err(|e| bad(e.to_string()))?;
            Profile::from_buffer_with_cost(&bytes, &meta, 0.0).map_err(|e| bad(e.to_string()))
        }
    }
}

/// How replay learns what a record costs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum ProbeCost {
    /// From the calibration kernel ([`calibrate::record_cost`]): back-to-back records, the
    /// cost of a probe on the critical path.
    #[default]
    Calibrated,
    /// Measured in the kernel itself: a second launch (on copies of the arguments) with the
    /// kernel region only; the extra cycles per group divided by the extra records
    /// ([`in_kernel_cost`]). Probes that issue while their warp would wait anyway (for an
    /// asynchronous MMA, for pipelined tiles) cost less than back-to-back ones; this sees it.
    InKernel,
    /// Measured per site in the kernel itself: a second launch (on copies of the arguments)
    /// with every record made twice ([`ProbeMode::Doubled`]); each step between two
    /// consecutive records costs the difference of its mean length in the two launches
    /// (`trident_profile::SiteCosts`). Also sees where a probe's cost is absorbed by a wait
    /// and where that wait lies, which one cost per record cannot.
    PerSite,
}

impl ProbeCost {
    /// The name `--probe-cost` takes.
    pub fn name(self) -> &'static str {
        match self {
            ProbeCost::Calibrated => "calibrated",
            ProbeCost::InKernel => "in-kernel",
            ProbeCost::PerSite => "per-site",
        }
    }

    /// Parses a `--probe-cost` value.
    pub fn parse(word: &str) -> Option<ProbeCost> {
        [ProbeCost::Calibrated, ProbeCost::InKernel, ProbeCost::PerSite].into_iter().find(|c| c.name() == word)
    }
}

/// The average cost of a record in a kernel: `full` profiled with many records per group,
/// `base` the same launch with few (the kernel region only); over the groups both have,
/// (Σ span in `full` − Σ span in `base`) / (Σ records in `full` − Σ records in `base`),
/// spans from each group's start and end clocks. `None` when `full` has no extra records;
/// never negative.
pub fn in_kernel_cost(full: &Profile, base: &Profile) -> Option<f64> {
    let key = |t: &trident_profile::decode::SlotTrace| (t.cta, t.group);
    let spans: std::collections::HashMap<(u32, u32), (f64, f64)> = base
        .slots
        .iter()
        .map(|s| (key(&s.trace), (s.trace.clock_end.wrapping_sub(s.trace.clock_start) as f64, s.trace.total as f64)))
        .collect();
    let (mut dspan, mut drec) = (0.0, 0.0);
    for s in &full.slots {
        if let Some(&(span, rec)) = spans.get(&key(&s.trace)) {
            dspan += s.trace.clock_end.wrapping_sub(s.trace.clock_start) as f64 - span;
            drec += s.trace.total as f64 - rec;
        }
    }
    (drec > 0.0).then(|| (dspan / drec).max(0.0))
}

/// The per-site probe costs replay uses with [`ProbeCost::PerSite`]: measured from `full`
/// (the profile to replay) and `doubled` (the same launch with every record doubled),
/// bounded by the calibrated cost of one probe on the critical path (the meta's
/// `record_cost_cycles`), and anchored to the in-kernel cost against `base` (the same
/// launch with the kernel region only) where that exists: see `trident_profile::sites`.
pub fn per_site_costs(
    full: &Profile,
    doubled: &Profile,
    base: Option<&Profile>,
) -> Result<SiteCosts, trident_profile::SiteCostError> {
    let traces = full.traces();
    let costs = SiteCosts::measure(&traces, &doubled.traces())?.bounded(full.meta.record_cost_cycles);
    Ok(match base.and_then(|b| in_kernel_cost(full, b)) {
        Some(c) => costs.anchored(&traces, c),
        None => costs,
    })
}
