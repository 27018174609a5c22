//! The reward: what a schedule scores (lower is better), and how much of a difference
//! between two scores is noise.
//!
//! [`Reward`] is what [`crate::Env`] calls to score a candidate schedule. Two kinds:
//!
//! * **exact** ([`Reward::exact`]): the same schedule always scores the same — the SASS
//!   emulator's cycle estimate, [`Emulated`] (the default reward). Any gain is a gain.
//! * **measured**: a timer's samples ([`Measurement::of_samples`]: their median, and the
//!   spread 1.4826 × MAD), e.g. the CUDA-event timer of `trident_runtime::sass_search`. The
//!   environment then estimates the noise once, from the original measured
//!   [`NOISE_ROUNDS`] times ([`Noise::estimate`]), and the search accepts a gain only when it
//!   is larger than that noise ([`Noise::improves`]) and holds again when the candidate and
//!   the best so far are measured once more, side by side (see `search`'s `Run::offer`).
//!
//! **The rule.** Scores are medians in the reward's unit (rounded to whole units). For
//! measured rewards, let `r₁ … r₅` be the medians of five measurements of the original, `R`
//! their range (max − min: how far two medians of one schedule were seen to differ) and `e`
//! the largest standard error of one median (1.2533 × spread / √n). The threshold is
//! `T = max(R, ⌈3 · √2 · e⌉)` (a gain of three standard errors of a difference of two medians,
//! and never less than what the same kernel was seen to vary by). A candidate scored `c`
//! improves on a reference scored `r` when `r − c > T`; before it becomes the best it is
//! measured again next to the best (fresh samples for both), and `best − candidate > T` must
//! hold on those too (a guard against keeping the luckiest of many noisy draws). For an exact
//! reward `T = 0` and there is no second measurement: `c < r`, as before the reward was a trait.

use trident_emu::KernelArg;
use trident_sass_emu::{launch, Program};

use crate::env::{Problem, State};

/// How many times the original is measured to estimate the noise of a measured reward (and
/// how many interleaved rounds of the original and the best end a search on one).
pub const NOISE_ROUNDS: usize = 5;

/// Standard errors of a difference a gain must exceed (with the observed range as a floor).
pub const Z: f64 = 3.0;

/// A schedule about to be scored: its state, the kernel's name and the launch.
pub struct Candidate<'a> {
    pub state: &'a State,
    pub kernel: &'a str,
    pub problem: &'a Problem,
    /// The SASS emulator's estimated cycles of this schedule, when the environment has just
    /// run it (the original, in [`crate::Env::new`]); `None` otherwise.
    pub emulated: Option<u64>,
}

impl Candidate<'_> {
    /// The cubin as it would be written (what a GPU loads).
    pub fn bytes(&self) -> Result<Vec<u8>, String> {
        self.state.cubin.write().map_err(|e| format!("writing the cubin: {e}"))
    }
}

/// One score: a median of samples in the reward's unit, with their spread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measurement {
    /// The score, lower is better: the samples' median rounded to a whole unit (an exact
    /// reward: its value).
    pub value: u64,
    /// The samples' spread: 1.4826 × their median absolute deviation (the standard deviation
    /// for normal noise, robust to a few outliers); 0 for an exact reward.
    pub spread: f64,
    /// The standard error of the median: 1.2533 × spread / √n.
    pub error: f64,
    /// How many samples.
    pub samples: usize,
}

/// The median of `xs` (the mean of the middle two for an even count); `None` when empty or
/// when a value is not finite.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

impl Measurement {
    /// An exact score.
    pub fn exact(value: u64) -> Measurement {
        Measurement { value, spread: 0.0, error: 0.0, samples: 1 }
    }

    /// The measurement of timed samples (each in the reward's unit, ≥ 0): their median, the
    /// scaled median absolute deviation, the median's standard error. An error for no
    /// samples, or a negative or non-finite one.
    pub fn of_samples(samples: &[f64]) -> Result<Measurement, String> {
        if samples.iter().any(|x| !x.is_finite() || *x < 0.0) {
            return Err(format!("a timer returned a sample that is not a time: {samples:?}"));
        }
        let m = median(samples).ok_or("a timer returned no samples")?;
        let dev: Vec<f64> = samples.iter().map(|x| (x - m).abs()).collect();
        let spread = 1.4826 * median(&dev).unwrap_or(0.0);
        let n = samples.len() as f64;
        Ok(Measurement { value: m.round() as u64, spread, error: 1.2533 * spread / n.sqrt(), samples: samples.len() })
    }
}

/// What a difference between two scores must exceed to count (see the module's rule).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Noise {
    /// The medians of the original's measurements (empty for an exact reward).
    pub rounds: Vec<u64>,
    /// Their range, max − min.
    pub range: u64,
    /// The largest standard error of one of them.
    pub error: f64,
    /// `max(range, ⌈Z · √2 · error⌉)`: a gain must be larger than this. 0: exact.
    pub threshold: u64,
}

impl Noise {
    /// No noise: any gain counts.
    pub fn exact() -> Noise {
        Noise::default()
    }

    /// The noise of measurements of one schedule (at least one).
    pub fn estimate(rounds: &[Measurement]) -> Noise {
        let values: Vec<u64> = rounds.iter().map(|m| m.value).collect();
        let (lo, hi) = (values.iter().min().copied().unwrap_or(0), values.iter().max().copied().unwrap_or(0));
        let error = rounds.iter().map(|m| m.error).fold(0.0, f64::max);
        let by_error = (Z * std::f64::consts::SQRT_2 * error).ceil() as u64;
        Noise { rounds: values, range: hi - lo, error, threshold: (hi - lo).max(by_error) }
    }

    /// Whether a schedule scored `new` is better than one scored `old` beyond the noise:
    /// `old − new > threshold` (for an exact reward, `new < old`).
    pub fn improves(&self, new: u64, old: u64) -> bool {
        new < old && old - new > self.threshold
    }

    /// The median of the original's rounds (what a measured reward's original scores).
    pub fn centre(&self) -> Option<u64> {
        median(&self.rounds.iter().map(|&v| v as f64).collect::<Vec<_>>()).map(|m| m.round() as u64)
    }
}

/// Scores a candidate schedule for [`crate::Env`] (lower is better).
pub trait Reward {
    /// What the score is, for a summary: "the SASS emulator's cycle estimate".
    fn describe(&self) -> String;
    /// The unit of a score: "cycles", "ns".
    fn unit(&self) -> &'static str;
    /// Whether the same schedule always gets the same score (then no noise is estimated and
    /// any gain counts).
    fn exact(&self) -> bool;
    /// The score of `c`, or why it has none (it does not run; it faulted).
    fn score(&mut self, c: &Candidate) -> Result<Measurement, String>;
    /// A check of a schedule about to be kept, run after the environment's own (the verifier,
    /// equal outputs on the SASS emulator): a GPU timer compares the GPU's outputs with the
    /// original's. An error keeps the schedule out. None by default.
    fn check(&mut self, c: &Candidate) -> Result<(), String> {
        let _ = c;
        Ok(())
    }
    /// Why no later score can be trusted, once that is so: a GPU timer whose device context
    /// a candidate's fault destroyed (CUDA's errors after an illegal address are sticky:
    /// every later launch fails). The search then stops, keeping the best schedule checked
    /// so far. Never, by default.
    fn lost(&self) -> Option<String> {
        None
    }
}

/// The SASS emulator's cycle estimate for the problem's launch (`Report::cycles`: the slowest
/// CTA): exact, in cycles. The default reward.
#[derive(Clone, Copy, Debug, Default)]
pub struct Emulated;

pub(crate) fn emu_error(e: trident_emu::EmuError) -> String {
    let mut s = e.to_string();
    if let (Some(c), Some(t)) = (e.cta, e.thread) {
        s.push_str(&format!(" (CTA {c:?}, thread {t:?})"));
    }
    s
}

/// Runs `s` (kernel `name`) with `args` (written back) on the SASS emulator: the cycles.
pub(crate) fn emulate(s: &State, name: &str, problem: &Problem, args: &mut [KernelArg]) -> Result<u64, String> {
    let p = Program::new(&s.cubin, name, &s.text).map_err(|e| format!("the SASS emulator: {e}"))?;
    let r = launch(&p, &problem.config, args).map_err(emu_error)?;
    Ok(r.cycles)
}

impl Reward for Emulated {
    fn describe(&self) -> String {
        "the SASS emulator's cycle estimate".into()
    }

    fn unit(&self) -> &'static str {
        "cycles"
    }

    fn exact(&self) -> bool {
        true
    }

    fn score(&mut self, c: &Candidate) -> Result<Measurement, String> {
        if let Some(cycles) = c.emulated {
            return Ok(Measurement::exact(cycles));
        }
        let mut args = c.problem.args.clone();
        emulate(c.state, c.kernel, c.problem, &mut args).map(Measurement::exact)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even_and_bad_input() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn measurement_is_median_and_scaled_mad() {
        // Median 10; deviations 0,0,1,1,8 → MAD 1; the outlier (18) moves neither.
        let m = Measurement::of_samples(&[10.0, 9.0, 11.0, 10.0, 18.0]).unwrap();
        assert_eq!(m.value, 10);
        assert!((m.spread - 1.4826).abs() < 1e-12, "{m:?}");
        assert!((m.error - 1.2533 * 1.4826 / 5f64.sqrt()).abs() < 1e-12, "{m:?}");
        assert_eq!(m.samples, 5);
        // Rounded to a whole unit.
        assert_eq!(Measurement::of_samples(&[1.4, 1.6]).unwrap().value, 2);
        assert!(Measurement::of_samples(&[]).is_err());
        assert!(Measurement::of_samples(&[1.0, -1.0]).is_err());
        assert!(Measurement::of_samples(&[f64::INFINITY]).is_err());
        assert_eq!(Measurement::exact(42), Measurement { value: 42, spread: 0.0, error: 0.0, samples: 1 });
    }

    #[test]
    fn threshold_is_range_or_three_standard_errors() {
        let m = |value: u64, error: f64| Measurement { value, spread: 0.0, error, samples: 10 };
        // Range 6 beats 3·√2·1 = 4.24 → 5.
        let n = Noise::estimate(&[m(100, 1.0), m(104, 0.5), m(98, 0.2)]);
        assert_eq!((n.range, n.threshold), (6, 6));
        assert_eq!(n.rounds, vec![100, 104, 98]);
        assert_eq!(n.centre(), Some(100));
        // Standard error 2 → ⌈8.49⌉ = 9 beats range 1.
        let n = Noise::estimate(&[m(100, 2.0), m(101, 1.0)]);
        assert_eq!((n.range, n.threshold), (1, 9));
        // Acceptance: strictly more than the threshold.
        assert!(!n.improves(91, 100), "a gain of 9 is within a threshold of 9");
        assert!(n.improves(90, 100));
        assert!(!n.improves(100, 90));
        // Exact: any gain.
        let e = Noise::exact();
        assert!(e.improves(99, 100) && !e.improves(100, 100) && !e.improves(101, 100));
        assert_eq!(Noise::estimate(&[Measurement::exact(7); 5]).threshold, 0);
    }
}
