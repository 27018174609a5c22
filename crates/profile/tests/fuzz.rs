//! The decoder and everything after it against hostile input: random buffers, random
//! headers with plausible fields, and valid buffers with random mutations. Nothing may
//! panic; whatever decodes must still give a valid trace, sane instances, and a table.

mod common;

use common::trace_check::violations;
use common::{meta, synthetic_cta, Rng};
use trident_profile::format::encode::encode_buffer;
use trident_profile::format::{self, Layout, MAGIC};
use trident_profile::sites::{step_means, SiteCosts};
use trident_profile::table::{render_csv, render_table};
use trident_profile::trace::{chrome_trace, chrome_trace_json};
use trident_profile::{DecodeError, Granularity, Profile, ProfileMeta};

fn random_meta(rng: &mut Rng) -> ProfileMeta {
    let granularity = [Granularity::Warp, Granularity::Warpgroup, Granularity::Cta][rng.range(0, 2) as usize];
    let grid = [rng.range(1, 3) as u32, rng.range(1, 2) as u32, rng.range(1, 2) as u32];
    let regions = rng.range(0, 6) as u32;
    meta(grid, rng.range(1, 8) as u32, granularity, 1 << rng.range(0, 4), rng.range(0, 50) as f64, regions)
}

/// Words that tend to break things.
fn interesting(rng: &mut Rng, layout: &Layout) -> u32 {
    let c = layout.capacity();
    let choices =
        [0, 1, 2, c - 1, c, c + 1, 2 * c, u32::MAX, u32::MAX - 1, 1 << 31, (1 << 31) - 1, MAGIC, layout.num_ctas()];
    choices[rng.range(0, choices.len() as u64 - 1) as usize]
}

/// Decodes and renders; checks what must hold for any input that decodes. Returns the
/// number of instances found, so the tests can tell they reached the pairing.
fn exercise(bytes: &[u8], m: &ProfileMeta, cost: f64) -> usize {
    let p = match Profile::from_buffer_with_cost(bytes, m, cost) {
        Ok(p) => p,
        Err(DecodeError::Size { .. } | DecodeError::RecordCost(_)) => return 0,
        Err(e) => panic!("valid meta and size, yet {e}"),
    };
    // Per-site replay of the same slots, with costs of either sign on every step they have
    // (from the cost, so that runs repeat), and per-site costs measured against themselves.
    let traces = p.traces();
    let steps = step_means(&traces, 1)
        .into_iter()
        .enumerate()
        .map(|(i, (key, (mean, _)))| (key, (cost - 2.0 * (i % 3) as f64 * cost).min(mean.abs() + 1.0)))
        .collect();
    let fallback = if cost.is_finite() { cost } else { 0.0 };
    if let Ok(sites) = p.with_site_costs(SiteCosts { steps, fallback, shift: -fallback / 2.0 }) {
        check(&sites, m);
    }
    if let Ok(costs) = SiteCosts::measure(&traces, &traces) {
        assert!(costs.fallback.is_finite() && costs.steps.values().all(|c| c.is_finite()));
    }
    check(&p, m)
}

/// What must hold for any profile that decoded.
fn check(p: &Profile, m: &ProfileMeta) -> usize {
    assert!(p.clock.ghz.is_finite() && p.clock.ghz > 0.0);
    for i in &p.instances {
        assert!(i.start.is_finite() && i.end.is_finite() && i.start <= i.end && i.start >= 0.0, "{i:?}");
        assert!(m.region(i.region).is_some());
        assert!(i.slot < p.slots.len());
    }
    for s in &p.slots {
        assert!(s.trace.events.len() <= m.capacity as usize);
        assert!(s.replayed.times.windows(2).all(|w| w[0] <= w[1]));
        assert!(s.offset_ns.is_finite() && s.offset_ns >= 0.0);
    }
    for i in &p.issues {
        let text = i.to_string();
        assert!(!text.is_empty());
        if let Some(s) = i.slot {
            assert!(text.contains(&format!("slot {} (CTA {}", s.index, s.cta)), "{text}");
        }
    }
    let trace = chrome_trace(p);
    assert_eq!(violations(&trace), Vec::<String>::new());
    assert!(chrome_trace_json(p).starts_with('{'));
    assert!(render_table(p).contains("region"));
    assert_eq!(render_csv(p).lines().count(), m.regions.len() + 1);
    p.instances.len()
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng::from_env("random_bytes_never_panic");
    for _ in 0..400 {
        let m = random_meta(&mut rng);
        let layout = m.layout().unwrap();
        // Mostly the right size, sometimes not.
        let len = match rng.range(0, 9) {
            0 => rng.range(0, 2 * layout.buffer_bytes() as u64) as usize,
            _ => layout.buffer_bytes(),
        };
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        exercise(&bytes, &m, m.record_cost_cycles);
    }
}

#[test]
fn random_headers_never_panic() {
    // Headers that pass the first checks, with random totals, clocks and records, so the
    // unwrapping, pairing and replay see garbage too.
    let mut rng = Rng::from_env("random_headers_never_panic");
    let mut instances = 0;
    for _ in 0..600 {
        let m = random_meta(&mut rng);
        let layout = m.layout().unwrap();
        let mut bytes: Vec<u8> = (0..layout.buffer_bytes()).map(|_| rng.next() as u8).collect();
        for (index, slot) in bytes.chunks_exact_mut(layout.slot_bytes()).enumerate() {
            let mut put = |w: usize, v: u32| slot[4 * w..4 * w + 4].copy_from_slice(&v.to_le_bytes());
            let groups = layout.groups_per_cta() as usize;
            put(format::W_MAGIC, MAGIC);
            put(format::W_CTA, (index / groups) as u32);
            put(format::W_GROUP, (index % groups) as u32);
            put(format::W_CAPACITY, layout.capacity());
            let total =
                if rng.chance(50) { rng.range(0, 3 * layout.capacity() as u64) as u32 } else { rng.next() as u32 };
            put(format::W_TOTAL, total);
            if rng.chance(50) {
                // End after start, as a real group's would be.
                let start = rng.next() >> rng.range(1, 63);
                let end = start.saturating_add(rng.next() >> rng.range(1, 63));
                put(format::W_CLOCK_START_LO, start as u32);
                put(format::W_CLOCK_START_HI, (start >> 32) as u32);
                put(format::W_CLOCK_END_LO, end as u32);
                put(format::W_CLOCK_END_HI, (end >> 32) as u32);
            }
            // Region ids mostly in range.
            for r in 0..layout.capacity() as usize {
                if rng.chance(80) {
                    let tag = (rng.next() as u32 % (m.regions.len() as u32 + 1)) | (rng.next() as u32 & (1 << 31));
                    let o = format::record_offset(r as u32);
                    slot[o..o + 4].copy_from_slice(&tag.to_le_bytes());
                }
            }
        }
        let cost = [0.0, m.record_cost_cycles, 1e30, f64::NAN, f64::INFINITY][rng.range(0, 4) as usize];
        instances += exercise(&bytes, &m, cost);
    }
    assert!(instances > 100, "the garbage should still pair now and then: {instances}");
}

#[test]
fn mutated_valid_buffers_never_panic() {
    let mut rng = Rng::from_env("mutated_valid_buffers_never_panic");
    let mut instances = 0;
    for _ in 0..400 {
        let m = random_meta(&mut rng);
        if m.regions.is_empty() {
            continue;
        }
        let layout = m.layout().unwrap();
        let regions = m.regions.len() as u32;
        let slots: Vec<_> = (0..layout.num_ctas())
            .flat_map(|cta| synthetic_cta(&mut rng, cta, layout.groups_per_cta(), regions, 40, 20, 1 << 33))
            .map(|(slot, _)| slot)
            .collect();
        let mut bytes = encode_buffer(&layout, &slots).unwrap();
        // The unmutated buffer decodes without errors.
        let clean = Profile::from_buffer(&bytes, &m).unwrap();
        assert!(!clean.has_errors(), "{:?}", clean.issues);
        for _ in 0..rng.range(1, 8) {
            let slot = rng.range(0, layout.num_slots() as u64 - 1) as usize * layout.slot_bytes();
            // Half the time a header word, else anywhere in the slot.
            let word = if rng.chance(50) { rng.range(0, 15) } else { rng.range(0, layout.slot_bytes() as u64 / 4 - 1) };
            let o = slot + 4 * word as usize;
            let old = u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
            let new = match rng.range(0, 3) {
                0 => old ^ (1 << rng.range(0, 31)),
                1 => interesting(&mut rng, &layout),
                2 => old.wrapping_add(rng.range(1, 3) as u32),
                _ => rng.next() as u32,
            };
            bytes[o..o + 4].copy_from_slice(&new.to_le_bytes());
        }
        instances += exercise(&bytes, &m, m.record_cost_cycles);
    }
    assert!(instances > 100, "mutated buffers keep most of their instances: {instances}");
}

#[test]
fn random_meta_json_never_panics() {
    let mut rng = Rng::from_env("random_meta_json_never_panics");
    let base = serde_json::to_value(meta([2, 1, 1], 4, Granularity::Warp, 8, 10.0, 3)).unwrap();
    let keys: Vec<String> = base.as_object().unwrap().keys().cloned().collect();
    let values = [
        serde_json::json!(0),
        serde_json::json!(-1),
        serde_json::json!(u64::MAX),
        serde_json::json!(1.5),
        serde_json::json!("warp"),
        serde_json::json!(null),
        serde_json::json!([0, 0, 0]),
        serde_json::json!([4294967295u32, 4294967295u32, 4294967295u32]),
        serde_json::json!({}),
        serde_json::json!([{"id": 1, "name": "x", "kind": "dot"}, {"id": 1, "name": "y", "kind": "dot"}]),
    ];
    for _ in 0..500 {
        let mut v = base.clone();
        let key = &keys[rng.range(0, keys.len() as u64 - 1) as usize];
        v[key] = values[rng.range(0, values.len() as u64 - 1) as usize].clone();
        let text = v.to_string();
        // Cut the text now and then: truncated files happen.
        let text = if rng.chance(10) { &text[..rng.range(0, text.len() as u64) as usize] } else { &text[..] };
        if let Ok(m) = ProfileMeta::from_json(text) {
            let layout = m.layout().expect("a validated meta has a layout");
            exercise(&vec![0; layout.buffer_bytes()], &m, m.record_cost_cycles);
        }
    }
}
