//! Per-site probe costs: what the probes add between two consecutive records, measured in
//! place by a second launch in which every record is made twice.
//!
//! **Why.** Replay with one cost per record ([`crate::replay`]) assumes every probe delays
//! everything after it by the same `c` cycles. That holds for a probe on its warp's
//! critical path. A probe that issues while its warp would wait anyway — for an
//! asynchronous MMA group, for the tiles a pipelined loop prefetched — is absorbed by the
//! wait: it costs less, or nothing, and the wait it shortens may lie in another region.
//! Then the constant replay subtracts too much from one region and too little elsewhere.
//!
//! **Measurement.** The same kernel, on the same inputs, is launched once with single
//! probes (the profile being replayed) and once with *doubled* probes: each record lowered
//! as two identical probes back to back (`trident_gpu::ProbeMode::Doubled`). Call a
//! *step* the stretch between two consecutive records of a group, keyed by the two
//! records' sites — `(from, to)`, a site being a record's tag (region and start/end), or
//! the group's start or end. In the doubled launch the first probe of each pair is the
//! site's record (even record numbers). For every key, over all its occurrences in all
//! groups,
//!
//! ```text
//! cost(from, to) = mean step(from, to) with doubled probes − mean step(from, to) with single probes
//! ```
//!
//! is what one more probe at `from` adds to that step, measured where it runs: the full
//! probe cost on the critical path; less, or a negative number, where the extra probe is
//! absorbed by a wait inside the step, or shortens one (a later wait for data whose
//! request was not delayed). Doubling is a first-order (linear) extrapolation to zero
//! probes: if a step's length is `true + k·x` with `k` probes per site, single probes
//! measure `true + x`, doubled ones `true + 2x`, and the difference is `x`. It is exact
//! where the probes' effect is linear in their number (on the critical path, or absorbed
//! by a wait that stays non-zero with doubled probes), and an approximation where doubling
//! uses up a wait entirely.
//!
//! **Replay.** The delay of a group's record `k` is the sum of the costs of the steps
//! before it, `D(k) = cost(start, r0) + Σ_{j<k} cost(r_j, r_{j+1})`; replay moves the
//! record's clock back by `D(k)` and the group's end by `D(end)` ([`replay_slot_sites`]).
//! Records the ring dropped (and steps never measured) count [`SiteCosts::fallback`]
//! each: the mean cost of a record in this kernel, from the same two launches (extra
//! cycles of the groups' spans / extra records).
//!
//! **Bounded and anchored** (what `trident_runtime::profile::per_site_costs` applies): no step
//! costs more than the calibrated cost of one probe on the critical path
//! ([`SiteCosts::bounded`]: more is the second probe perturbing the memory system or other
//! warps, not its own cost), and all steps are shifted by one amount per record so that their
//! mean is the cost per record measured against a kernel-region-only launch
//! ([`SiteCosts::anchored`]: that launch sees the whole effect of the probes on the groups'
//! spans, including what the first probe changes and a second does not).
//!
//! Nothing here reads a ground truth: both launches are ordinary profiled launches whose
//! differences of clock readings are measured the same way on a GPU (where each mean is
//! over every occurrence of its step, which also averages the noise of two launches).

use crate::decode::{Event, SlotTrace};
use crate::replay::Replayed;
use std::collections::{BTreeMap, HashMap};

/// Where a step starts or ends.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Site {
    /// The group's start clock (header).
    Start,
    /// A record of this region, its start or end.
    Record { region: u32, end: bool },
    /// The group's end clock (header).
    End,
}

impl Site {
    fn of(e: &Event) -> Site {
        Site::Record { region: e.region, end: e.is_end }
    }
}

/// Per-step probe costs measured by a doubled launch (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct SiteCosts {
    /// Cycles one more probe at `from` adds to the step `from → to`, per key measured in
    /// both launches. May be negative (the probe shortens a wait inside the step).
    pub steps: BTreeMap<(Site, Site), f64>,
    /// Cycles per record for records the ring dropped and steps not measured: the extra
    /// span per extra record of the doubled launch over the single one (never negative).
    pub fallback: f64,
    /// Cycles added to every record's cost, steps and fallback alike ([`SiteCosts::anchored`]).
    pub shift: f64,
}

/// Why per-site costs could not be measured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SiteCostError {
    #[error(
        "slot of CTA {cta} group {group} of the doubled launch has an odd record count {total}: not doubled probes"
    )]
    NotDoubled { cta: u32, group: u32, total: u32 },
    #[error("the doubled launch has no more records than the single one")]
    NoExtraRecords,
}

/// Sum and count of step lengths per key.
type Sums = HashMap<(Site, Site), (f64, u64)>;

/// Adds the steps of one slot whose sites are the events `sites` (already the sites: every
/// event for single probes, the first of each pair for doubled ones); `stride` is the
/// record-number distance of consecutive sites (1 or 2) and `last_seq` the record number
/// of the group's last site.
fn add_steps(sums: &mut Sums, t: &SlotTrace, sites: &[&Event], stride: u32, last_seq: Option<u32>) {
    let mut add = |key, gap: f64| {
        let e = sums.entry(key).or_insert((0.0, 0));
        e.0 += gap;
        e.1 += 1;
    };
    let clock = |c: u64| c as f64;
    match (sites.first(), last_seq) {
        (Some(first), _) if first.seq == 0 => {
            add((Site::Start, Site::of(first)), clock(first.clock) - clock(t.clock_start));
        }
        (None, None) => add((Site::Start, Site::End), clock(t.clock_end) - clock(t.clock_start)),
        _ => {}
    }
    for w in sites.windows(2) {
        if w[1].seq == w[0].seq + stride {
            add((Site::of(w[0]), Site::of(w[1])), clock(w[1].clock) - clock(w[0].clock));
        }
    }
    if let (Some(last), Some(seq)) = (sites.last(), last_seq) {
        if last.seq == seq {
            add((Site::of(last), Site::End), clock(t.clock_end) - clock(last.clock));
        }
    }
}

/// The mean length of every step of `traces` and how often it occurs: single probes
/// (`probes_per_record` 1; markers too) or doubled ones (2, the first of each pair being the
/// record).
pub fn step_means(traces: &[SlotTrace], probes_per_record: u32) -> BTreeMap<(Site, Site), (f64, u64)> {
    let stride = probes_per_record.max(1);
    let mut sums = Sums::new();
    for t in traces {
        let sites: Vec<&Event> = t.events.iter().filter(|e| e.seq % stride == 0).collect();
        add_steps(&mut sums, t, &sites, stride, t.total.checked_sub(stride));
    }
    sums.into_iter().map(|(k, (sum, n))| (k, (sum / n as f64, n))).collect()
}

impl SiteCosts {
    /// Measures per-step costs from the same launch profiled with single probes (`single`)
    /// and with doubled probes (`doubled`: every record made twice, back to back). Slots
    /// are matched by (CTA, group) for the fallback; the steps are pooled over all slots.
    pub fn measure(single: &[SlotTrace], doubled: &[SlotTrace]) -> Result<SiteCosts, SiteCostError> {
        let (mut one, mut two) = (Sums::new(), Sums::new());
        for t in single {
            let sites: Vec<&Event> = t.events.iter().collect();
            add_steps(&mut one, t, &sites, 1, t.total.checked_sub(1));
        }
        for t in doubled {
            if t.total % 2 != 0 {
                return Err(SiteCostError::NotDoubled { cta: t.cta, group: t.group, total: t.total });
            }
            let sites: Vec<&Event> = t.events.iter().filter(|e| e.seq % 2 == 0).collect();
            add_steps(&mut two, t, &sites, 2, t.total.checked_sub(2));
        }
        let mean = |(sum, n): (f64, u64)| sum / n as f64;
        let steps = one.iter().filter_map(|(key, &s)| two.get(key).map(|&d| (*key, mean(d) - mean(s)))).collect();
        // The fallback: extra span per extra record, over the groups both launches have.
        let spans: HashMap<(u32, u32), (f64, f64)> = single
            .iter()
            .map(|t| ((t.cta, t.group), (t.clock_end.saturating_sub(t.clock_start) as f64, t.total as f64)))
            .collect();
        let (mut dspan, mut drec) = (0.0, 0.0);
        for t in doubled {
            if let Some(&(span, rec)) = spans.get(&(t.cta, t.group)) {
                dspan += t.clock_end.saturating_sub(t.clock_start) as f64 - span;
                drec += t.total as f64 - rec;
            }
        }
        if drec <= 0.0 {
            return Err(SiteCostError::NoExtraRecords);
        }
        Ok(SiteCosts { steps, fallback: (dspan / drec).max(0.0), shift: 0.0 })
    }

    /// The costs with no step and no fallback above `most` cycles: what one probe costs on
    /// its group's critical path (the calibration kernel's back-to-back cost). A step that
    /// grew by more with a second probe did not grow by the probe's own work but by what it
    /// perturbed elsewhere (the memory system, other warps), which replay cannot undo and
    /// must not charge to the site.
    pub fn bounded(mut self, most: f64) -> SiteCosts {
        for c in self.steps.values_mut() {
            *c = c.min(most);
        }
        self.fallback = self.fallback.min(most);
        self
    }

    /// The costs shifted by the same amount per record so that over `slots` (the profile
    /// being replayed) they delay the groups' ends by `per_record` cycles per record on
    /// average: the steps keep their differences (where probes are absorbed, where not),
    /// the total comes from `per_record` — the cost per record measured against a launch
    /// with the kernel region only (`trident_runtime::profile::in_kernel_cost`), which sees
    /// the whole effect of the probes on the groups' spans, first probe included.
    pub fn anchored(mut self, slots: &[SlotTrace], per_record: f64) -> SiteCosts {
        self.shift = 0.0;
        let records: f64 = slots.iter().map(|s| s.total as f64).sum();
        if records > 0.0 && per_record.is_finite() {
            self.shift = per_record - self.mean_cost(slots);
        }
        self
    }

    /// The cost of the step `from → to` (the fallback where it was not measured), before the
    /// shift.
    pub fn step(&self, from: Site, to: Site) -> f64 {
        self.steps.get(&(from, to)).copied().unwrap_or(self.fallback)
    }

    /// The delay of each of `slot`'s events and of its end: what the probes before them
    /// added, as the sum of the steps' costs (dropped records and gaps in the record
    /// numbers at the fallback cost each).
    pub fn delays(&self, slot: &SlotTrace) -> (Vec<f64>, f64) {
        let mut delays = Vec::with_capacity(slot.events.len());
        let mut d = 0.0;
        let mut prev: Option<&Event> = None;
        for e in &slot.events {
            d += match prev {
                // Nothing before the first record: its own lead-in cancels (no step measured: 0).
                None if e.seq == 0 => self.steps.get(&(Site::Start, Site::of(e))).copied().unwrap_or(0.0),
                None => self.fallback * e.seq as f64,
                Some(p) if e.seq == p.seq + 1 => self.step(Site::of(p), Site::of(e)),
                Some(p) => self.fallback * e.seq.saturating_sub(p.seq) as f64,
            };
            delays.push(d);
            prev = Some(e);
        }
        d += match prev {
            None if slot.total == 0 => self.steps.get(&(Site::Start, Site::End)).copied().unwrap_or(0.0),
            None => self.fallback * slot.total as f64,
            Some(p) if p.seq + 1 == slot.total => self.step(Site::of(p), Site::End),
            Some(p) => self.fallback * slot.total.saturating_sub(p.seq) as f64,
        };
        for (delay, e) in delays.iter_mut().zip(&slot.events) {
            *delay += self.shift * e.seq as f64;
        }
        (delays, d + self.shift * slot.total as f64)
    }

    /// The mean delay per record over `slots` (what a constant cost would have to be to
    /// move the groups' ends as far): for summaries.
    pub fn mean_cost(&self, slots: &[SlotTrace]) -> f64 {
        let (mut d, mut n) = (0.0, 0.0);
        for s in slots {
            d += self.delays(s).1;
            n += s.total as f64;
        }
        if n > 0.0 {
            d / n
        } else {
            self.fallback
        }
    }
}

/// Replays one slot with per-site costs: each event moves back by its delay
/// ([`SiteCosts::delays`]); times never run backwards (clamps counted, as in
/// [`crate::replay::replay_slot`]).
pub fn replay_slot_sites(slot: &SlotTrace, costs: &SiteCosts) -> Replayed {
    let (delays, end_delay) = costs.delays(slot);
    let raw = slot.events.iter().map(|e| e.clock.saturating_sub(slot.clock_start) as f64);
    let end = slot.clock_end.saturating_sub(slot.clock_start) as f64 - end_delay;
    crate::replay::clamped(raw.zip(delays).map(|(t, d)| t - d), end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A slot starting at clock 1000 with records `(region, end, clock)` numbered from
    /// `first_seq`, `total` records made in all, ending at `1000 + end`.
    fn slot(cta: u32, records: &[(u32, bool, u64)], first_seq: u32, total: u32, end: u64) -> SlotTrace {
        SlotTrace {
            index: 0,
            cta,
            group: 0,
            sm_id: 0,
            clock_start: 1000,
            clock_end: 1000 + end,
            globaltimer_start: 0,
            globaltimer_end: 1,
            timer_usable: true,
            total,
            dropped: first_seq,
            events: records
                .iter()
                .enumerate()
                .map(|(i, &(region, is_end, c))| Event { seq: first_seq + i as u32, region, is_end, clock: 1000 + c })
                .collect(),
        }
    }

    /// A group's records `sites` (region, end), each made `k` times back to back: a probe
    /// of `c` cycles with its clock read `c / 3` cycles in; `work[i]` true cycles before
    /// site `i` (`work[n]`: after the last). `waits` are `(i, j, latency)`: the work before
    /// site `i` ends no earlier than `latency` cycles after site `j`'s probes (a prefetch
    /// issued there), so probes between them are absorbed while the wait lasts. Returns
    /// the records `(region, end, clock)` and the end clock, from a start clock of 0.
    fn simulate(
        sites: &[(u32, bool)],
        work: &[u64],
        waits: &[(usize, usize, u64)],
        c: u64,
        k: u32,
    ) -> (Vec<(u32, bool, u64)>, u64) {
        let mut t = 0u64;
        let mut issued = vec![0u64; sites.len()];
        let mut out = vec![];
        for i in 0..=sites.len() {
            t += work[i];
            for &(_, j, latency) in waits.iter().filter(|w| w.0 == i) {
                t = t.max(issued[j] + latency);
            }
            let Some(&(region, end)) = sites.get(i) else { break };
            for _ in 0..k {
                out.push((region, end, t + c / 3));
                t += c;
            }
            issued[i] = t;
        }
        (out, t)
    }

    fn launch(sites: &[(u32, bool)], work: &[u64], waits: &[(usize, usize, u64)], c: u64, k: u32) -> SlotTrace {
        let (records, end) = simulate(sites, work, waits, c, k);
        slot(0, &records, 0, records.len() as u32, end)
    }

    const S: bool = false;
    const E: bool = true;

    #[test]
    fn doubling_recovers_every_event_where_waits_absorb_probes() {
        // S(kernel) S(load) [wait for a tile prefetched at S(kernel)] E(load) S(dot) E(dot)
        // E(kernel): every step occurs once, so each event is recovered exactly.
        let sites = [(0, S), (1, S), (1, E), (2, S), (2, E), (0, E)];
        let work = [5, 3, 10, 4, 20, 6, 11];
        let waits = [(2, 0, 150)];
        let c = 18;
        let (truth, true_end) = simulate(&sites, &work, &waits, 0, 1);
        let single = launch(&sites, &work, &waits, c, 1);
        let costs = SiteCosts::measure(std::slice::from_ref(&single), &[launch(&sites, &work, &waits, c, 2)]).unwrap();
        let step = |a: (u32, bool), b: (u32, bool)| {
            costs.step(Site::Record { region: a.0, end: a.1 }, Site::Record { region: b.0, end: b.1 })
        };
        // On the critical path a step costs one probe; the step holding the wait gives back
        // what the probe before it took (the one at S(load): the wait counts from
        // S(kernel)'s probe, whose cost is in the first step).
        assert_eq!(step((2, S), (2, E)), 18.0);
        assert_eq!(step((1, S), (1, E)), 0.0);
        assert_eq!(step((0, S), (1, S)), 18.0);
        assert_eq!(costs.step(Site::Start, Site::Record { region: 0, end: S }), 0.0);
        assert_eq!(costs.step(Site::Record { region: 0, end: E }, Site::End), 18.0);
        let r = replay_slot_sites(&single, &costs);
        let lead = (c / 3) as f64;
        let want: Vec<f64> = truth.iter().map(|&(_, _, t)| t as f64 + lead).collect();
        assert_eq!(r.times, want);
        assert_eq!((r.end, r.clamped), (true_end as f64, 0));
        // The constant cost gets the wait wrong by one probe.
        let constant = crate::replay::replay_slot(&single, c as f64);
        assert_eq!(constant.times[2] - constant.times[1], want[2] - want[1] - 18.0);
    }

    #[test]
    fn repeated_steps_give_the_true_mean_of_each_region() {
        // A pipelined loop of 6 iterations: S(loop) S(load) [wait] E(load) S(dot) E(dot)
        // E(loop), the wait for the tile prefetched two iterations earlier at E(dot).
        let body = [(0, S), (1, S), (1, E), (2, S), (2, E), (0, E)];
        let iters = 6;
        let sites: Vec<(u32, bool)> = (0..iters).flat_map(|_| body).collect();
        let mut work = vec![];
        let mut waits = vec![];
        for it in 0..iters {
            work.extend([7, 2, 5, 3, 40, 9]);
            if it >= 2 {
                waits.push((it * 6 + 2, (it - 2) * 6 + 4, 600));
            }
        }
        work.push(4);
        let c = 18;
        let region_means = |t: &SlotTrace, costs: Option<&SiteCosts>| {
            let times = match costs {
                Some(k) => replay_slot_sites(t, k).times,
                None => t.events.iter().map(|e| (e.clock - t.clock_start) as f64).collect(),
            };
            let (spans, _) = crate::pair::pair_slot(t);
            let mut sums: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
            for s in spans {
                let e = sums.entry(s.region).or_default();
                e.0 += times[s.end.unwrap()] - times[s.start];
                e.1 += 1.0;
            }
            sums.into_iter().map(|(r, (sum, n))| (r, sum / n)).collect::<Vec<_>>()
        };
        let truth = launch(&sites, &work, &waits, 0, 1);
        let single = launch(&sites, &work, &waits, c, 1);
        let costs = SiteCosts::measure(std::slice::from_ref(&single), &[launch(&sites, &work, &waits, c, 2)]).unwrap();
        let got = region_means(&single, Some(&costs));
        let want = region_means(&truth, None);
        for ((r, g), (_, w)) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1e-9, "region {r}: replayed {g}, true {w}");
        }
        // The waits absorb probes: the constant replay is off for the loop and the load.
        let constant = SiteCosts { steps: BTreeMap::new(), fallback: c as f64, shift: 0.0 };
        let off = region_means(&single, Some(&constant));
        assert!((off[1].1 - want[1].1).abs() > 10.0, "{off:?} {want:?}");
    }

    #[test]
    fn dropped_records_and_unmeasured_steps_cost_the_fallback() {
        let costs = SiteCosts {
            steps: [((Site::Record { region: 0, end: S }, Site::Record { region: 0, end: E }), 5.0)].into(),
            fallback: 10.0,
            shift: 0.0,
        };
        // Records 3..6 retained of 6: three dropped (30), then a measured step (5), an
        // unmeasured one (10), and the end (10).
        let t = slot(0, &[(0, S, 100), (0, E, 120), (1, S, 200)], 3, 6, 300);
        let (d, end) = costs.delays(&t);
        assert_eq!((d, end), (vec![30.0, 35.0, 45.0], 55.0));
        let r = replay_slot_sites(&t, &costs);
        assert_eq!((r.times, r.end), (vec![70.0, 85.0, 155.0], 245.0));
        // No records at all: nothing delays the end (unless that step was measured).
        assert_eq!(costs.delays(&slot(0, &[], 0, 0, 50)), (vec![], 0.0));
    }

    #[test]
    fn bounding_caps_steps_and_anchoring_sets_the_mean() {
        let (a, b) = (Site::Record { region: 0, end: S }, Site::Record { region: 0, end: E });
        let costs = SiteCosts { steps: [((a, b), 30.0), ((b, a), -10.0)].into(), fallback: 25.0, shift: 0.0 };
        let bounded = costs.bounded(18.0);
        assert_eq!((bounded.step(a, b), bounded.step(b, a), bounded.fallback), (18.0, -10.0, 18.0));
        // S E S E, then the end: delays 0 | 18 | 8 | 26 | end 26 + 18 (unmeasured E -> end).
        let t = slot(0, &[(0, S, 10), (0, E, 50), (0, S, 60), (0, E, 100)], 0, 4, 120);
        assert_eq!(bounded.delays(&t), (vec![0.0, 18.0, 8.0, 26.0], 44.0));
        assert_eq!(bounded.mean_cost(std::slice::from_ref(&t)), 11.0);
        // Anchored to 15 cycles per record: every record 4 cycles more, differences kept.
        let anchored = bounded.anchored(std::slice::from_ref(&t), 15.0);
        assert_eq!(anchored.shift, 4.0);
        assert_eq!(anchored.delays(&t), (vec![0.0, 22.0, 16.0, 38.0], 60.0));
        assert_eq!(anchored.mean_cost(std::slice::from_ref(&t)), 15.0);
        // Nothing to anchor over: no shift.
        assert_eq!(anchored.clone().anchored(&[], 15.0).shift, 0.0);
    }

    #[test]
    fn measuring_needs_a_doubled_launch() {
        let one = slot(0, &[(0, S, 10), (0, E, 20)], 0, 2, 30);
        let odd = slot(0, &[(0, S, 10), (0, S, 20), (0, E, 30)], 0, 3, 40);
        assert!(matches!(
            SiteCosts::measure(std::slice::from_ref(&one), &[odd]),
            Err(SiteCostError::NotDoubled { total: 3, .. })
        ));
        assert_eq!(
            SiteCosts::measure(std::slice::from_ref(&one), std::slice::from_ref(&one)),
            Err(SiteCostError::NoExtraRecords)
        );
    }
}
