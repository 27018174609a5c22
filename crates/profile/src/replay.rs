//! Trace replay: cancelling the probes' own cost (KPerfIR §5.3).
//!
//! A probe (clock read, tag, shared-memory store, index update) takes cycles on its
//! group's critical path. If each record costs `c` cycles, the clock read of the group's
//! `k`-th record (counting from 0, dropped records included) happens `k * c` cycles later
//! than it would have without the `k` probes before it. The part of probe `k` itself
//! that precedes its clock read is the same for every probe, so it cancels in every
//! difference. Replay therefore moves every event back by `c * seq`:
//!
//! ```text
//! replayed(e) = (clock(e) - clock_start) - c * seq(e)
//! replayed(group end) = (clock_end - clock_start) - c * total
//! ```
//!
//! A region whose start and end are consecutive records loses exactly `c`; one that
//! encloses `m` inner records loses `c * (m + 1)`.
//!
//! **Worked example** (`c = 10`; true times without probes in brackets):
//!
//! ```text
//! record  seq  clock-start  replayed
//! S(A)     0        100        100        [100: A starts]
//! S(B)     1        150        140        [140: B starts, 40 cycles into A]
//! E(B)     2        230        210        [210: B ran 70]
//! E(A)     3        260        230        [230: A ran 130]
//! end      4        300        260
//! ```
//!
//! Measured raw, A lasts 160 and B 80; replayed, 130 and 70 — the true durations.
//!
//! What replay cannot fix: a probe also perturbs what runs *beside* the group (other
//! warps, asynchronous units), and its cost varies a little with what it overlaps. The
//! cost is a per-target constant the compiler states in the meta (measured on that
//! target, or exact on the emulator). When two events end up closer than `c`
//! (`c` too large for that spot), the later one is clamped to the earlier and the
//! number of clamps is reported: replayed times never run backwards. A clamp by less than
//! one probe's cost is what a short or empty region gives (its two probes' own jitter) and
//! is a note; a larger one means the cost is wrong for that spot, a warning.

use crate::decode::SlotTrace;

/// One slot's event times after replay, in cycles since the group's start clock.
#[derive(Debug, Clone, PartialEq)]
pub struct Replayed {
    /// One per event of the slot, non-decreasing, >= 0.
    pub times: Vec<f64>,
    /// The group's end, >= every event time.
    pub end: f64,
    /// Events moved forward to keep time from running backwards.
    pub clamped: u32,
    /// The largest such move, in cycles (0 without clamps).
    pub worst_clamp: f64,
}

/// Replays one slot with a per-record cost of `cost` cycles (finite, >= 0).
pub fn replay_slot(slot: &SlotTrace, cost: f64) -> Replayed {
    let times = slot.events.iter().map(|e| e.clock.saturating_sub(slot.clock_start) as f64 - cost * e.seq as f64);
    clamped(times, slot.clock_end.saturating_sub(slot.clock_start) as f64 - cost * slot.total as f64)
}

/// Replayed event times (in order) and end, made non-decreasing: an event that would run
/// backwards is clamped to the one before and counted.
pub(crate) fn clamped(times: impl Iterator<Item = f64>, end: f64) -> Replayed {
    let mut previous = 0.0f64;
    let mut clamped = 0u32;
    let mut worst_clamp = 0.0f64;
    let times: Vec<f64> = times
        .map(|t| {
            // Tolerate rounding: only a real step backwards counts as a clamp.
            if t < previous - 1e-6 * previous.abs().max(1.0) {
                clamped += 1;
                worst_clamp = worst_clamp.max(previous - t);
            }
            previous = previous.max(t);
            previous
        })
        .collect();
    // The end reading is not a probe: how much of a probe's cost precedes its clock read
    // does not apply to it, so it may land a fraction of `c` before the last event.
    // Clamping it is expected and not reported.
    Replayed { times, end: end.max(previous), clamped, worst_clamp }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::Event;

    fn slot(clocks: &[u64], dropped: u32, end: u64) -> SlotTrace {
        SlotTrace {
            index: 0,
            cta: 0,
            group: 0,
            sm_id: 0,
            clock_start: 1_000_000,
            clock_end: 1_000_000 + end,
            globaltimer_start: 0,
            globaltimer_end: 1,
            timer_usable: true,
            total: dropped + clocks.len() as u32,
            dropped,
            events: clocks
                .iter()
                .enumerate()
                .map(|(i, &c)| Event { seq: dropped + i as u32, region: 0, is_end: i % 2 == 1, clock: 1_000_000 + c })
                .collect(),
        }
    }

    #[test]
    fn the_worked_example_in_the_docs() {
        let r = replay_slot(&slot(&[100, 150, 230, 260], 0, 300), 10.0);
        assert_eq!(r.times, [100.0, 140.0, 210.0, 230.0]);
        assert_eq!(r.end, 260.0);
        assert_eq!(r.clamped, 0);
    }

    #[test]
    fn dropped_records_still_count_as_earlier_probes() {
        // 5 records dropped: the first retained one is record 5 and moves back 5c.
        let r = replay_slot(&slot(&[500, 530], 5, 600), 4.0);
        assert_eq!(r.times, [480.0, 506.0]);
        assert_eq!(r.end, 600.0 - 28.0);
    }

    #[test]
    fn too_large_a_cost_is_clamped_and_counted() {
        let r = replay_slot(&slot(&[100, 105, 300], 0, 310), 20.0);
        assert_eq!(r.times, [100.0, 100.0, 260.0]);
        assert_eq!(r.end, 260.0);
        assert_eq!(r.clamped, 1, "the end's clamp is not counted");
        // 105 - 20 = 85 against 100: moved by 15, less than one probe's cost (a note).
        assert_eq!(r.worst_clamp, 15.0);
        let kind = |worst| crate::issue::IssueKind::ReplayClamped { count: 1, cost: 20.0, worst };
        assert_eq!(kind(15.0).severity(), crate::issue::Severity::Note);
        assert_eq!(kind(25.0).severity(), crate::issue::Severity::Warning);
    }

    #[test]
    fn zero_cost_is_the_raw_clock() {
        let r = replay_slot(&slot(&[7, 9, 40], 0, 41), 0.0);
        assert_eq!((r.times, r.end, r.clamped), (vec![7.0, 9.0, 40.0], 41.0, 0));
    }
}
