//! A launch's profile, assembled: decoded slots, replayed times, paired instances, the
//! clock rate, each group's place on a shared timeline, and every issue found on the
//! way. The outputs (`trace`, `table`) read only this.

use crate::clock::{clock_rate, ClockRate};
use crate::decode::{decode, slot_ref, DecodeError, Decoded, SlotTrace};
use crate::issue::{Issue, IssueKind, Severity};
use crate::meta::ProfileMeta;
use crate::pair::pair_slot;
use crate::replay::{replay_slot, Replayed};
use crate::sites::{replay_slot_sites, SiteCosts};
use std::collections::BTreeMap;

/// One group's decoded slot with its replayed times.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotProfile {
    pub trace: SlotTrace,
    pub replayed: Replayed,
    /// Where this group's start clock sits on the shared timeline, in ns from the
    /// earliest CTA's start (see [`Profile::from_decoded`] for how groups are aligned).
    pub offset_ns: f64,
    /// Replayed cycles from which the group's records are complete: 0, or the first
    /// retained event when the ring dropped older ones. The statistics' "share of the
    /// kernel" counts only this observed window.
    pub window_start: f64,
}

impl SlotProfile {
    /// Cycles of the group's life its records cover.
    pub fn observed_cycles(&self) -> f64 {
        (self.replayed.end - self.window_start).max(0.0)
    }
}

/// One execution of a region by one group, in replayed cycles since the group's start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Instance {
    /// Index into [`Profile::slots`].
    pub slot: usize,
    pub region: u32,
    pub start: f64,
    pub end: f64,
    /// Enclosing open regions.
    pub depth: u32,
    /// Never closed: `end` is the group's end. Shown in traces, left out of statistics.
    pub open: bool,
}

impl Instance {
    pub fn cycles(&self) -> f64 {
        self.end - self.start
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub meta: ProfileMeta,
    /// The per-record cost replay subtracted; with per-site costs, their mean per record
    /// (the delay of the groups' ends over their records).
    pub record_cost: f64,
    /// The per-site costs replay used, if any ([`Profile::with_site_costs`]).
    pub site_costs: Option<SiteCosts>,
    pub clock: ClockRate,
    pub slots: Vec<SlotProfile>,
    /// By slot, then by start.
    pub instances: Vec<Instance>,
    pub issues: Vec<Issue>,
    /// The issues decoding found (before replay and pairing), for [`Profile::with_cost`].
    decode_issues: Vec<Issue>,
}

impl Profile {
    /// Decodes and analyses a buffer, replaying with the meta's per-record cost.
    pub fn from_buffer(bytes: &[u8], meta: &ProfileMeta) -> Result<Profile, DecodeError> {
        Profile::from_buffer_with_cost(bytes, meta, meta.record_cost_cycles)
    }

    /// As [`Profile::from_buffer`], with another per-record cost (0 shows raw times).
    pub fn from_buffer_with_cost(bytes: &[u8], meta: &ProfileMeta, cost: f64) -> Result<Profile, DecodeError> {
        let decoded = decode(bytes, meta)?;
        Profile::from_decoded(decoded, meta, cost)
    }

    /// Replays, pairs and places the slots of a decoded buffer.
    ///
    /// Groups are placed on one timeline per launch: within a CTA all groups read the
    /// same SM's `%clock64`, so they are aligned by clock (cycle-exact); CTAs run on
    /// different SMs whose clocks are unrelated, so each CTA is placed by the
    /// globaltimer reading of its earliest-starting group (as exact as the timer).
    pub fn from_decoded(decoded: Decoded, meta: &ProfileMeta, cost: f64) -> Result<Profile, DecodeError> {
        if !(cost.is_finite() && cost >= 0.0) {
            return Err(DecodeError::RecordCost(cost));
        }
        Profile::assemble(decoded, meta, cost, None)
    }

    /// As [`Profile::from_decoded`], replaying with per-site costs.
    pub fn from_decoded_sites(decoded: Decoded, meta: &ProfileMeta, costs: SiteCosts) -> Result<Profile, DecodeError> {
        let bad = |c: f64| !c.is_finite();
        if bad(costs.fallback) || costs.fallback < 0.0 {
            return Err(DecodeError::RecordCost(costs.fallback));
        }
        if bad(costs.shift) {
            return Err(DecodeError::RecordCost(costs.shift));
        }
        if let Some(&c) = costs.steps.values().find(|c| bad(**c)) {
            return Err(DecodeError::RecordCost(c));
        }
        let mean = costs.mean_cost(&decoded.slots);
        Profile::assemble(decoded, meta, mean, Some(costs))
    }

    fn assemble(
        decoded: Decoded,
        meta: &ProfileMeta,
        cost: f64,
        site_costs: Option<SiteCosts>,
    ) -> Result<Profile, DecodeError> {
        meta.validate()?;
        let Decoded { slots: traces, mut issues } = decoded;
        let decode_issues = issues.clone();
        let (clock, fallback) = clock_rate(&traces, meta);
        if let Some(reason) = fallback {
            issues.push(Issue::new(None, IssueKind::NominalClock { ghz: clock.ghz, reason }));
        }

        // The largest cost a record is replayed with: a clamp within it is a short or empty
        // region's own jitter (see `IssueKind::ReplayClamped`).
        let largest_cost = match &site_costs {
            Some(sites) => sites.steps.values().copied().fold(sites.fallback, f64::max) + sites.shift,
            None => cost,
        };
        let mut slots = Vec::with_capacity(traces.len());
        let mut instances = Vec::new();
        for trace in traces {
            let at = Some(slot_ref(meta, trace.index));
            let replayed = match &site_costs {
                Some(sites) => replay_slot_sites(&trace, sites),
                None => replay_slot(&trace, cost),
            };
            if replayed.clamped > 0 {
                let (count, worst) = (replayed.clamped, replayed.worst_clamp);
                issues.push(Issue::new(at, IssueKind::ReplayClamped { count, cost: largest_cost, worst }));
            }
            let (spans, pair_issues) = pair_slot(&trace);
            issues.extend(pair_issues.into_iter().map(|k| Issue::new(at, k)));
            let slot = slots.len();
            instances.extend(spans.iter().map(|s| Instance {
                slot,
                region: s.region,
                start: replayed.times[s.start],
                end: s.end.map_or(replayed.end, |e| replayed.times[e]),
                depth: s.depth,
                open: s.end.is_none(),
            }));
            let window_start = if trace.dropped > 0 { replayed.times.first().copied().unwrap_or(0.0) } else { 0.0 };
            slots.push(SlotProfile { trace, replayed, offset_ns: 0.0, window_start });
        }
        place_on_timeline(&mut slots, &clock, meta, &mut issues);
        // Issues in buffer order, whole-buffer ones first, so reports read top to bottom.
        issues.sort_by_key(|i| i.slot.map(|s| s.index));
        Ok(Profile {
            meta: meta.clone(),
            record_cost: cost,
            site_costs,
            clock,
            slots,
            instances,
            issues,
            decode_issues,
        })
    }

    /// Adds an issue found outside the buffer (about the launch); kept by later replays.
    pub fn add_issue(&mut self, issue: Issue) {
        self.decode_issues.push(issue.clone());
        self.issues.push(issue);
    }

    /// The same launch replayed with another per-record cost (see
    /// `trident_runtime::profile::in_kernel_cost` for one measured in the kernel itself).
    pub fn with_cost(&self, cost: f64) -> Result<Profile, DecodeError> {
        Profile::from_decoded(self.decoded(), &self.meta, cost)
    }

    /// The same launch replayed with per-site costs ([`SiteCosts::measure`] from this
    /// launch and the same launch with doubled probes).
    pub fn with_site_costs(&self, costs: SiteCosts) -> Result<Profile, DecodeError> {
        Profile::from_decoded_sites(self.decoded(), &self.meta, costs)
    }

    /// The decoded slots, as they came from the buffer (before replay).
    pub fn traces(&self) -> Vec<SlotTrace> {
        self.slots.iter().map(|s| s.trace.clone()).collect()
    }

    fn decoded(&self) -> Decoded {
        Decoded { slots: self.traces(), issues: self.decode_issues.clone() }
    }

    pub fn cycles_to_ns(&self, cycles: f64) -> f64 {
        self.clock.cycles_to_ns(cycles)
    }

    /// Records lost to ring wrap, over all groups.
    pub fn dropped_records(&self) -> u64 {
        self.slots.iter().map(|s| s.trace.dropped as u64).sum()
    }

    pub fn has_errors(&self) -> bool {
        self.issues.iter().any(|i| i.severity == Severity::Error)
    }

    /// Issues at `severity` or worse.
    pub fn issues_at_least(&self, severity: Severity) -> impl Iterator<Item = &Issue> {
        self.issues.iter().filter(move |i| i.severity <= severity)
    }
}

/// Sets every slot's `offset_ns`: CTAs by globaltimer, groups within a CTA by clock64.
fn place_on_timeline(slots: &mut [SlotProfile], clock: &ClockRate, meta: &ProfileMeta, issues: &mut Vec<Issue>) {
    // Per CTA: the reference group, the earliest to start (by clock, the same counter).
    let mut reference: BTreeMap<u32, usize> = BTreeMap::new();
    for (i, s) in slots.iter().enumerate() {
        let r = reference.entry(s.trace.cta).or_insert(i);
        let current = &slots[*r].trace;
        if s.trace.sm_id != current.sm_id {
            issues.push(Issue::new(
                Some(slot_ref(meta, s.trace.index)),
                IssueKind::SmMismatch { first: current.sm_id, other: s.trace.sm_id },
            ));
        }
        if s.trace.clock_start < current.clock_start {
            *r = i;
        }
    }
    let cta_timer = |r: usize| {
        let t = &slots[r].trace;
        t.timer_usable.then_some(t.globaltimer_start)
    };
    let origin = reference.values().filter_map(|&r| cta_timer(r)).min().unwrap_or(0);
    // Clock and globaltimer placements of a group within its CTA agree within the
    // timer's rounding unless the data is damaged.
    let tolerance = 4.0 * meta.globaltimer_resolution_ns as f64 + 1000.0;
    let mut offsets = Vec::with_capacity(slots.len());
    for s in slots.iter() {
        let r = reference[&s.trace.cta];
        let cta_ns = cta_timer(r).map_or(0.0, |t| (t - origin) as f64);
        let by_clock = clock.cycles_to_ns(s.trace.clock_start.saturating_sub(slots[r].trace.clock_start) as f64);
        let mut within = by_clock;
        if let (Some(reference_timer), true) = (cta_timer(r), s.trace.timer_usable) {
            let by_timer = s.trace.globaltimer_start as f64 - reference_timer as f64;
            if (by_clock - by_timer).abs() > tolerance {
                issues.push(Issue::new(
                    Some(slot_ref(meta, s.trace.index)),
                    IssueKind::ClockSkew { by_clock_ns: by_clock, by_timer_ns: by_timer },
                ));
                within = by_timer.max(0.0);
            }
        }
        offsets.push(cta_ns + within);
    }
    for (s, o) in slots.iter_mut().zip(offsets) {
        s.offset_ns = o;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::encode::{encode_buffer, RecordData, SlotData};
    use crate::meta::tests::sample;

    #[test]
    fn instances_carry_replayed_times_and_groups_align_by_clock() {
        let meta = sample(); // cost 10, 2 CTAs x 4 warps
        let slot = |cta: u32, group: u32, start: u64, gt: u64| SlotData {
            cta,
            group,
            sm_id: 10 + cta,
            clock_start: start,
            clock_end: start + 2_000,
            globaltimer_start: gt,
            globaltimer_end: gt + 1_000,
            records: vec![
                RecordData::start(0, start + 100),
                RecordData::start(2, start + 300),
                RecordData::end(2, start + 700),
                RecordData::end(0, start + 1_000),
            ],
        };
        let slots = vec![
            slot(0, 0, 10_000, 50_000),
            slot(0, 1, 10_400, 50_900),
            slot(1, 0, 900, 52_000),
            slot(1, 3, 950, 60_000),
        ];
        let bytes = encode_buffer(&meta.layout().unwrap(), &slots).unwrap();
        let p = Profile::from_buffer(&bytes, &meta).unwrap();
        assert_eq!((p.clock.ghz, p.clock.measured_slots), (2.0, 4)); // 2000 cycles per 1000 ns
        let got: Vec<(usize, u32, f64, f64, u32)> =
            p.instances.iter().filter(|i| i.slot == 0).map(|i| (i.slot, i.region, i.start, i.end, i.depth)).collect();
        assert_eq!(got, [(0, 0, 100.0, 970.0, 0), (0, 2, 290.0, 680.0, 1)]);
        let offsets: Vec<f64> = p.slots.iter().map(|s| s.offset_ns).collect();
        // Group 1 of CTA 0 starts 400 cycles after group 0 (its globaltimer reading, 900 ns
        // later, is within the timer's tolerance and ignored); CTA 1 starts 2000 ns after
        // CTA 0 by the globaltimer. Group 3 of CTA 1 claims 25 ns by the clock but 8000 ns
        // by the timer: damaged, placed by the timer, reported.
        assert_eq!(offsets, [0.0, 200.0, 2_000.0, 10_000.0]);
        assert!(!p.has_errors());
        let skew: Vec<String> =
            p.issues.iter().filter(|i| matches!(i.kind, IssueKind::ClockSkew { .. })).map(|i| i.to_string()).collect();
        assert_eq!(skew, ["warning: slot 7 (CTA 1, warp 3): starts 25 ns after its CTA's first group by the clock but 8000 ns by the globaltimer: placed by the globaltimer"]);
        assert_eq!(p.slots[0].observed_cycles(), 2_000.0 - 40.0);
    }

    #[test]
    fn a_bad_cost_is_an_error_not_a_nan_timeline() {
        let meta = sample();
        let bytes = vec![0; meta.layout().unwrap().buffer_bytes()];
        let err = Profile::from_buffer_with_cost(&bytes, &meta, f64::NAN).unwrap_err();
        assert_eq!(err.to_string(), "record cost NaN cycles is not a finite number >= 0");
        assert!(matches!(Profile::from_buffer_with_cost(&bytes, &meta, -3.0), Err(DecodeError::RecordCost(_))));
    }
}
