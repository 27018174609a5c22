//! Cycles → nanoseconds.
//!
//! `%clock64` counts SM cycles; `%globaltimer` counts nanoseconds. Every group reads both
//! at its start and at its end, so each slot gives one measurement of the clock rate:
//! cycles between the clock64 readings over nanoseconds between the globaltimer
//! readings. Slots are pooled (total cycles over total nanoseconds), using only those
//! whose globaltimer span is at least [`MIN_SPAN_TICKS`] timer ticks long: the timer
//! ticks coarsely (1 µs on current GPUs), so a shorter span could be off by a large
//! fraction. Without such a slot, or when the pooled rate is implausible, the meta's
//! nominal clock is used and a note says why.
//!
//! Both readings are raw hardware time, so the rate is measured before replay.

use crate::decode::SlotTrace;
use crate::meta::ProfileMeta;

/// A slot's globaltimer span must cover this many timer ticks to be trusted: the
/// rounding error of two readings is then at most 2%.
pub const MIN_SPAN_TICKS: u64 = 100;
/// Rates outside this range (GHz) are not a GPU's clock: the data is damaged.
pub const PLAUSIBLE_GHZ: std::ops::RangeInclusive<f64> = 0.05..=20.0;

#[derive(Debug, Clone, PartialEq)]
pub struct ClockRate {
    /// Cycles per nanosecond.
    pub ghz: f64,
    /// How many slots the measurement pooled; 0 when `ghz` is the meta's nominal clock.
    pub measured_slots: usize,
}

impl ClockRate {
    pub fn is_measured(&self) -> bool {
        self.measured_slots > 0
    }

    pub fn cycles_to_ns(&self, cycles: f64) -> f64 {
        cycles / self.ghz
    }
}

/// The clock rate, and the reason when it had to fall back to the nominal one.
pub fn clock_rate(slots: &[SlotTrace], meta: &ProfileMeta) -> (ClockRate, Option<String>) {
    let min_span = meta.globaltimer_resolution_ns.saturating_mul(MIN_SPAN_TICKS);
    let (mut cycles, mut ns, mut used) = (0f64, 0f64, 0usize);
    for s in slots {
        let span = s.globaltimer_end.saturating_sub(s.globaltimer_start);
        if s.timer_usable && span >= min_span && span > 0 && s.clock_end > s.clock_start {
            cycles += (s.clock_end - s.clock_start) as f64;
            ns += span as f64;
            used += 1;
        }
    }
    let nominal = ClockRate { ghz: meta.nominal_clock_ghz, measured_slots: 0 };
    if used == 0 {
        return (nominal, Some(format!("no group's globaltimer span reached {min_span} ns ({MIN_SPAN_TICKS} ticks)")));
    }
    let ghz = cycles / ns;
    if !PLAUSIBLE_GHZ.contains(&ghz) {
        return (nominal, Some(format!("the globaltimer gives an implausible {ghz:.4} GHz")));
    }
    (ClockRate { ghz, measured_slots: used }, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::tests::sample;

    fn slot(cycles: u64, ns: u64, usable: bool) -> SlotTrace {
        SlotTrace {
            index: 0,
            cta: 0,
            group: 0,
            sm_id: 0,
            clock_start: 5_000,
            clock_end: 5_000 + cycles,
            globaltimer_start: 1_000_000,
            globaltimer_end: 1_000_000 + ns,
            timer_usable: usable,
            total: 0,
            dropped: 0,
            events: vec![],
        }
    }

    #[test]
    fn pools_long_enough_slots() {
        let mut meta = sample();
        meta.globaltimer_resolution_ns = 1000;
        // 100 µs at 1.8 GHz and 200 µs at 1.8 GHz, plus a short slot that would skew it.
        let slots = [slot(180_000, 100_000, true), slot(360_000, 200_000, true), slot(50_000, 1_000, true)];
        let (rate, why) = clock_rate(&slots, &meta);
        assert_eq!(why, None);
        assert!((rate.ghz - 1.8).abs() < 1e-12, "{rate:?}");
        assert_eq!(rate.measured_slots, 2);
        assert!((rate.cycles_to_ns(900.0) - 500.0).abs() < 1e-9);
    }

    #[test]
    fn falls_back_to_nominal_with_a_reason() {
        let meta = sample(); // resolution 1 ns, nominal 1.5 GHz
        let (rate, why) = clock_rate(&[slot(1_000, 50, true)], &meta);
        assert_eq!(rate, ClockRate { ghz: 1.5, measured_slots: 0 });
        assert_eq!(why.unwrap(), "no group's globaltimer span reached 100 ns (100 ticks)");
        let (_, why) = clock_rate(&[slot(1_000, 1_000, false)], &meta);
        assert!(why.is_some());
        let (rate, why) = clock_rate(&[slot(10, 1_000_000, true)], &meta);
        assert!(!rate.is_measured());
        assert!(why.unwrap().contains("implausible 0.0000 GHz"));
    }
}
