//! How one config is measured: the [`Bench`] the caller implements (compile,
//! run, time, protect inputs), the [`BenchPolicy`] that says how many runs,
//! and the [`Timing`] that comes out.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::config::TuneConfig;

/// Why a config's trial stopped. All but [`TrialError::Fatal`] skip the
/// config (the reason is recorded) and tuning goes on with the others.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TrialError {
    /// The config does not compile (e.g. a `tl.static_assert` on the block sizes fails).
    Compile(String),
    /// It compiles but needs more than the device has (shared memory, registers, threads).
    OutOfResources(String),
    /// It ran and failed, or its timer gave no usable value.
    Failed(String),
    /// Stop tuning: the inputs or the device can no longer be trusted.
    Fatal(String),
}

impl fmt::Display for TrialError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrialError::Compile(m) => write!(f, "compile error: {m}"),
            TrialError::OutOfResources(m) => write!(f, "out of resources: {m}"),
            TrialError::Failed(m) => write!(f, "run failed: {m}"),
            TrialError::Fatal(m) => write!(f, "fatal: {m}"),
        }
    }
}

/// What the autotuner needs from its caller to measure configs. The caller
/// owns the kernel's arguments, so it also implements the input protection
/// that `reset_to_zero` and `restore_value` ask for:
///
/// 1. `save_inputs(restore_value)` once before the first run;
/// 2. for each config: `prepare(config)`, then for every run
///    `zero_inputs(reset_to_zero)`, `run(config)`, `restore_inputs(restore_value)`;
/// 3. `release_inputs()` once at the end (drop the saved copies).
///
/// Any `FnMut(&TuneConfig) -> Result<f64, TrialError>` is a `Bench` with no
/// preparation and no input protection.
pub trait Bench {
    /// Compiles (or fetches from the compile cache) and loads the config.
    fn prepare(&mut self, config: &TuneConfig) -> Result<(), TrialError> {
        let _ = config;
        Ok(())
    }

    /// Runs the prepared config once and returns its time in milliseconds
    /// on the caller's clock (the emulator's modelled clock, CUDA events,
    /// or wall-clock on the interpreter).
    fn run(&mut self, config: &TuneConfig) -> Result<f64, TrialError>;

    /// Keeps copies of the named arguments (`restore_value`).
    fn save_inputs(&mut self, names: &[String]) -> Result<(), TrialError> {
        let _ = names;
        Ok(())
    }

    /// Zeroes the named arguments (`reset_to_zero`) before a run.
    fn zero_inputs(&mut self, names: &[String]) -> Result<(), TrialError> {
        let _ = names;
        Ok(())
    }

    /// Copies the saved values back into the named arguments after a run.
    fn restore_inputs(&mut self, names: &[String]) -> Result<(), TrialError> {
        let _ = names;
        Ok(())
    }

    /// Drops the saved copies.
    fn release_inputs(&mut self) {}
}

impl<F: FnMut(&TuneConfig) -> Result<f64, TrialError>> Bench for F {
    fn run(&mut self, config: &TuneConfig) -> Result<f64, TrialError> {
        self(config)
    }
}

/// How many times each config runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BenchPolicy {
    /// Time budgets, as `@triton.autotune(warmup=, rep=)` gives them: a few
    /// probe runs estimate one run's time `t`, then about `warmup_ms / t`
    /// warm-up runs (the probes count) and `rep_ms / t` measured runs follow,
    /// each count at least 1 and at most `max_runs`.
    Budget {
        /// Warm-up budget in ms (Triton's default: 25).
        warmup_ms: f64,
        /// Measurement budget in ms (Triton's default: 100).
        rep_ms: f64,
        /// Cap on either count, so a kernel timed as nearly free does not run forever.
        max_runs: u32,
    },
    /// Fixed counts; `Fixed { warmup: 0, reps: 1 }` suits a deterministic
    /// modelled clock, where one run says everything.
    Fixed {
        /// Unmeasured runs first.
        warmup: u32,
        /// Measured runs.
        reps: u32,
    },
}

impl Default for BenchPolicy {
    /// Triton's defaults: 25 ms warm-up, 100 ms measurement; at most 1000 runs each.
    fn default() -> BenchPolicy {
        BenchPolicy::Budget { warmup_ms: 25.0, rep_ms: 100.0, max_runs: 1000 }
    }
}

/// Probe runs that estimate a run's time under [`BenchPolicy::Budget`].
const PROBES: u32 = 3;

/// A config's measured time.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Median of the measured runs, ms: what configs are compared by.
    pub median_ms: f64,
    /// Fastest measured run, ms.
    pub min_ms: f64,
    /// Slowest measured run, ms.
    pub max_ms: f64,
    /// Measured runs.
    pub runs: u32,
}

impl Timing {
    /// The timing of the given samples (ms); `None` when there are none.
    pub fn of(samples: &[f64]) -> Option<Timing> {
        if samples.is_empty() {
            return None;
        }
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let median = if n % 2 == 1 { s[n / 2] } else { (s[n / 2 - 1] + s[n / 2]) / 2.0 };
        Some(Timing { median_ms: median, min_ms: s[0], max_ms: s[n - 1], runs: n as u32 })
    }
}

/// Input protection names for one tuning.
pub(crate) struct Protect<'a> {
    pub reset_to_zero: &'a [String],
    pub restore_value: &'a [String],
}

fn one_run<B: Bench + ?Sized>(bench: &mut B, config: &TuneConfig, p: &Protect) -> Result<f64, TrialError> {
    if !p.reset_to_zero.is_empty() {
        bench.zero_inputs(p.reset_to_zero)?;
    }
    let t = bench.run(config);
    // Restore even after a failed run: the next config needs the inputs intact.
    if !p.restore_value.is_empty() {
        bench.restore_inputs(p.restore_value)?;
    }
    let t = t?;
    if t.is_finite() && t >= 0.0 {
        Ok(t)
    } else {
        Err(TrialError::Failed(format!("the timer returned {t} ms")))
    }
}

/// Prepares and measures one config under `policy`.
pub(crate) fn measure<B: Bench + ?Sized>(
    bench: &mut B,
    config: &TuneConfig,
    policy: &BenchPolicy,
    p: &Protect,
) -> Result<Timing, TrialError> {
    bench.prepare(config)?;
    let (warmup, reps) = match *policy {
        BenchPolicy::Fixed { warmup, reps } => (warmup, reps.max(1)),
        BenchPolicy::Budget { warmup_ms, rep_ms, max_runs } => {
            let mut spent = 0.0;
            for _ in 0..PROBES {
                spent += one_run(bench, config, p)?;
            }
            let est = spent / PROBES as f64;
            let count = |budget: f64| -> u32 {
                let n = if est > 0.0 { (budget / est).ceil() } else { f64::INFINITY };
                n.clamp(1.0, max_runs.max(1) as f64) as u32
            };
            (count(warmup_ms).saturating_sub(PROBES), count(rep_ms))
        }
    };
    for _ in 0..warmup {
        one_run(bench, config, p)?;
    }
    let mut samples = Vec::with_capacity(reps as usize);
    for _ in 0..reps {
        samples.push(one_run(bench, config, p)?);
    }
    Timing::of(&samples).ok_or_else(|| TrialError::Failed("no measured runs".into()))
}
