//! Replay against synthetic groups whose true, probe-free region times are known:
//! random nested programs, random 64-bit start clocks, gaps that wrap the 32-bit clock,
//! rings that wrap. After decode + replay every retained instance must come out at its
//! true start and end, to the cycle.

mod common;

use common::{meta, synthetic_cta, synthetic_group, Rng, TrueInstance};
use trident_profile::format::encode::encode_buffer;
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
