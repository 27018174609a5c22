//! Replay against synthetic groups whose true, probe-free region times are known:
//! random nested programs, random 64-bit start clocks, gaps that wrap the 32-bit clock,
//! rings that wrap. After decode + replay every retained instance must come out at its
//! true start and end, to the cycle.

mod common;

use common::{meta, synthetic_cta, synthetic_group, Rng, TrueInstance};
use trident_profile::format::encode::{encode_buffer, RecordData, SlotData};
use trident_profile::{Granularity, IssueKind, Profile, Severity};

const GRANULARITIES: [Granularity; 3] = [Granularity::Warp, Granularity::Warpgroup, Granularity::Cta];

/// Builds a launch of synthetic groups; returns the profile and each slot's truth.
fn launch(rng: &mut Rng, capacity: u32, cost: u64, steps: usize) -> (Profile, Vec<(u32, Vec<TrueInstance>)>) {
    let granularity = GRANULARITIES[rng.range(0, 2) as usize];
    let warps = rng.range(1, 8) as u32;
    let grid = [rng.range(1, 3) as u32, rng.range(1, 2) as u32, 1];
    let m = meta(grid, warps, granularity, capacity, cost as f64, rng.range(1, 6) as u32);
    let layout = m.layout().unwrap();
    let (mut slots, mut truth) = (Vec::new(), Vec::new());
    for cta in 0..layout.num_ctas() {
        let regions = m.regions.len() as u32;
        for (slot, t) in synthetic_cta(rng, cta, layout.groups_per_cta(), regions, steps, cost, 3_500_000_000) {
            truth.push((slot.records.len() as u32, t));
            slots.push(slot);
        }
    }
    let bytes = encode_buffer(&layout, &slots).unwrap();
    (Profile::from_buffer(&bytes, &m).unwrap(), truth)
}

fn check_exact(p: &Profile, truth: &[(u32, Vec<TrueInstance>)], cost: u64) {
    let lead = (cost / 3) as f64;
    assert_eq!(p.slots.len(), truth.len(), "every slot decodes");
    for (s, (total, t)) in p.slots.iter().zip(truth) {
        assert_eq!(s.trace.total, *total);
        let dropped = s.trace.dropped;
        let mut want: Vec<&TrueInstance> = t.iter().filter(|i| i.start_seq >= dropped).collect();
        want.sort_by_key(|i| i.start_seq);
        let got: Vec<_> = p.instances.iter().filter(|i| i.slot == s.trace.index).collect();
        assert_eq!(got.len(), want.len(), "slot {}: instances", s.trace.index);
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.region, w.region);
            assert!(!g.open);
            assert_eq!((g.start, g.end), (w.start as f64 + lead, w.end as f64 + lead), "slot {}", s.trace.index);
        }
    }
}

#[test]
fn replay_recovers_true_times_without_drops() {
    let mut rng = Rng::from_env("replay_recovers_true_times_without_drops");
    for _ in 0..40 {
        let cost = rng.range(0, 60);
        let (p, truth) = launch(&mut rng, 256, cost, 120);
        check_exact(&p, &truth, cost);
        assert!(p.issues.iter().all(|i| i.severity == Severity::Note), "{:?}", p.issues);
        assert!(p.clock.is_measured());
        assert_eq!(p.dropped_records(), 0);
    }
}

#[test]
fn replay_recovers_true_times_when_the_ring_wraps() {
    let mut rng = Rng::from_env("replay_recovers_true_times_when_the_ring_wraps");
    let mut wrapped = 0;
    for _ in 0..40 {
        let cost = rng.range(1, 60);
        let capacity = 1 << rng.range(2, 5);
        let (p, truth) = launch(&mut rng, capacity, cost, 150);
        check_exact(&p, &truth, cost);
        for s in &p.slots {
            let expected = s.trace.total.saturating_sub(capacity);
            assert_eq!(s.trace.dropped, expected);
            wrapped += (expected > 0) as usize;
        }
        // Drops are reported per slot; the only other issues are ends whose starts were
        // dropped, which are notes.
        for i in &p.issues {
            match &i.kind {
                IssueKind::Dropped { dropped, total } => assert_eq!(total - capacity, *dropped),
                IssueKind::EndWithoutStart { explained: true, .. } | IssueKind::NominalClock { .. } => {}
                other => panic!("unexpected issue {other:?}"),
            }
        }
        let reported: u64 = p
            .issues
            .iter()
            .filter_map(|i| match i.kind {
                IssueKind::Dropped { dropped, .. } => Some(dropped as u64),
                _ => None,
            })
            .sum();
        assert_eq!(reported, p.dropped_records());
    }
    assert!(wrapped > 0, "some rings must have wrapped");
}

#[test]
fn without_replay_each_region_is_longer_by_its_probes() {
    let mut rng = Rng::from_env("without_replay_each_region_is_longer_by_its_probes");
    let cost = 25;
    let m = meta([1, 1, 1], 1, Granularity::Warp, 1024, cost as f64, 4);
    let (slot, truth) = synthetic_group(&mut rng, 0, 0, 4, 300, cost, 10_000);
    let bytes = encode_buffer(&m.layout().unwrap(), &[slot]).unwrap();
    let raw = Profile::from_buffer_with_cost(&bytes, &m, 0.0).unwrap();
    let replayed = Profile::from_buffer(&bytes, &m).unwrap();
    let mut truth = truth;
    truth.sort_by_key(|t| t.start_seq);
    for ((r, p), t) in raw.instances.iter().zip(&replayed.instances).zip(&truth) {
        let probes_inside = (t.end_seq - t.start_seq) as f64;
        assert_eq!(p.cycles(), (t.end - t.start) as f64);
        assert_eq!(r.cycles(), (t.end - t.start) as f64 + cost as f64 * probes_inside);
    }
}

#[test]
fn measured_clock_rate_converts_cycles_to_ns() {
    let mut rng = Rng::from_env("measured_clock_rate_converts_cycles_to_ns");
    let (p, _) = launch(&mut rng, 256, 20, 200);
    // The synthetic globaltimer runs at 2/3 ns per cycle (1.5 GHz), truncated to whole ns.
    if p.clock.is_measured() {
        assert!((p.clock.ghz - 1.5).abs() < 1e-3, "{:?}", p.clock);
    } else {
        assert_eq!(p.clock.ghz, 1.5);
    }
    assert!((p.cycles_to_ns(3000.0) - 2000.0).abs() < 2.0);
}

/// A pipelined loop on one group: S(kernel), per iteration S(loop) S(load) [wait] E(load)
/// S(dot) E(dot) E(loop), E(kernel), with random true cycles before each record (`rng`). The
/// wait ends no earlier than `latency` cycles after the E(dot) two iterations earlier (the
/// prefetch issued there), so the probes in between are absorbed by it. Each record is made
/// `k` times back to back (`k = 0`: none, the truth), a probe costing `c` cycles with its
/// clock read `c / 3` in. Returns the slot (start clock `start`) and the records' true times
/// since the start.
fn pipelined_group(rng: &mut Rng, iters: usize, latency: u64, c: u64, k: u32, start: u64) -> (SlotData, Vec<u64>) {
    let mut sites = vec![(0u32, false, rng.range(5, 50))];
    for _ in 0..iters {
        for (region, end) in [(1, false), (2, false), (2, true), (3, false), (3, true), (1, true)] {
            sites.push((region, end, rng.range(0, 40)));
        }
    }
    sites.push((0, true, rng.range(5, 50)));
    let mut t = start;
    let (mut issued, mut records, mut times) = (vec![], vec![], vec![]);
    for &(region, end, work) in &sites {
        t += work;
        if region == 2 && end && issued.len() >= 2 {
            t = t.max(issued[issued.len() - 2] + latency);
        }
        times.push(t - start);
        for _ in 0..k {
            let read = t + c / 3;
            records.push(if end { RecordData::end(region, read) } else { RecordData::start(region, read) });
            t += c;
        }
        if region == 3 && end {
            issued.push(t);
        }
    }
    let slot = SlotData { clock_start: start, clock_end: t + 20, globaltimer_end: 1, records, ..SlotData::default() };
    (slot, times)
}

#[test]
fn per_site_costs_from_a_doubled_launch_recover_absorbed_probes() {
    use trident_profile::sites::SiteCosts;
    let mut rng = Rng::from_env("per_site_costs_from_a_doubled_launch_recover_absorbed_probes");
    let c = 18;
    let m = meta([1, 1, 1], 1, Granularity::Warp, 1024, c as f64, 4);
    let layout = m.layout().unwrap();
    let mean = |p: &Profile, r: u32| {
        let v: Vec<f64> = p.instances.iter().filter(|i| i.region == r).map(|i| i.cycles()).collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    for _ in 0..10 {
        let (iters, start, seed) = (rng.range(3, 12) as usize, rng.range(0, 1 << 40), rng.next());
        // Enough slack that the wait lasts with doubled probes too: doubling is then exact.
        let latency = rng.range(900, 1500);
        let group = |k| pipelined_group(&mut Rng::with_seed(seed), iters, latency, c, k, start);
        let ((single, _), (doubled, _), (_, truth)) = (group(1), group(2), group(0));
        let profile = |slot| Profile::from_buffer(&encode_buffer(&layout, &[slot]).unwrap(), &m).unwrap();
        let (single, doubled) = (profile(single), profile(doubled));
        let costs = SiteCosts::measure(&single.traces(), &doubled.traces()).unwrap();
        let replayed = single.with_site_costs(costs).unwrap();
        assert!(replayed.site_costs.is_some() && replayed.issues.iter().all(|i| i.severity == Severity::Note));
        // Every region's mean is the truth's (instances pair records in program order).
        let events = &single.slots[0].trace.events;
        for r in 0..4u32 {
            let at = |end| events.iter().enumerate().filter(move |(_, e)| e.region == r && e.is_end == end);
            let spans: Vec<f64> =
                at(false).zip(at(true)).map(|((s, _), (e, _))| (truth[e] - truth[s]) as f64).collect();
            let want = spans.iter().sum::<f64>() / spans.len() as f64;
            let got = mean(&replayed, r);
            assert!((got - want).abs() < 1e-6, "region {r}: replayed {got}, true {want}");
            if r == 2 {
                // The constant cost misses the wait: it charges the absorbed probes again.
                assert!(mean(&single, 2) < want - c as f64, "wait: constant {}, true {want}", mean(&single, 2));
            }
        }
    }
}
