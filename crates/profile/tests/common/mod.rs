//! Test helpers: a seeded generator (fresh seed per run, printed so a failure can be
//! replayed with `TRIDENT_PROFILE_SEED=...`) and synthetic group timelines whose true,
//! probe-free region times are known.
#![allow(dead_code)] // each test file uses a different part

pub mod trace_check;

use trident_profile::format::encode::{RecordData, SlotData};
use trident_profile::format::FORMAT_VERSION;
use trident_profile::{Granularity, ProfileMeta, Region, RegionKind, SourceLoc};

/// SplitMix64: small, fast, good enough to pick test inputs.
pub struct Rng(u64);

impl Rng {
    /// From `TRIDENT_PROFILE_SEED` if set, else from the clock; prints the seed.
    pub fn from_env(test: &str) -> Rng {
        let seed = std::env::var("TRIDENT_PROFILE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
        });
        eprintln!("{test}: TRIDENT_PROFILE_SEED={seed}");
        Rng(seed)
    }

    /// A generator started from `seed` (for runs that must repeat the same choices).
    pub fn with_seed(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// A meta with `regions` regions (ids 0..regions), of every kind in turn.
pub fn meta(
    grid: [u32; 3],
    warps: u32,
    granularity: Granularity,
    capacity: u32,
    cost: f64,
    regions: u32,
) -> ProfileMeta {
    let kinds = [RegionKind::Kernel, RegionKind::Loop, RegionKind::Dot, RegionKind::Load, RegionKind::Scope];
    ProfileMeta {
        format_version: FORMAT_VERSION,
        kernel: "synthetic".into(),
        target: "emu".into(),
        grid,
        warps_per_cta: warps,
        producer_warps: 0,
        granularity,
        groups_per_cta: granularity.groups_per_cta(warps),
        capacity,
        record_cost_cycles: cost,
        nominal_clock_ghz: 1.5,
        globaltimer_resolution_ns: 1,
        regions: (0..regions)
            .map(|id| Region {
                id,
                name: format!("region_{id}"),
                kind: kinds[id as usize % kinds.len()],
                loc: Some(SourceLoc { file: "kernels/synthetic.py".into(), line: 10 + id, col: 9 }),
            })
            .collect(),
    }
}

/// A region instance on the true (probe-free) timeline, in cycles since the group's
/// start; `start_seq`/`end_seq` are the records that mark it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrueInstance {
    pub region: u32,
    pub start: u64,
    pub end: u64,
    pub start_seq: u32,
    pub end_seq: u32,
}

/// A group running a random properly nested program of up to `steps` probes, as the
/// device would record it with probes costing `cost` cycles each (`lead` of them before
/// the clock read). Returns the slot and the true instances.
pub fn synthetic_group(
    rng: &mut Rng,
    cta: u32,
    group: u32,
    regions: u32,
    steps: usize,
    cost: u64,
    max_gap: u64,
) -> (SlotData, Vec<TrueInstance>) {
    let lead = cost / 3;
    let clock_start = rng.range(0, 1 << 62);
    let (mut t, mut records, mut truth) = (0u64, Vec::new(), Vec::new());
    let mut stack: Vec<(u32, u64, u32)> = Vec::new();
    let gap = |rng: &mut Rng| if rng.chance(2) { rng.range(1, max_gap) } else { rng.range(0, 3000) };
    let record = |t: u64, region: u32, is_end: bool, records: &mut Vec<RecordData>| {
        let k = records.len() as u64;
        records.push(RecordData { region, is_end, clock: clock_start + t + cost * k + lead });
    };
    t += gap(rng);
    while records.len() < steps || !stack.is_empty() {
        let open = records.len() < steps && (stack.is_empty() || (stack.len() < 6 && rng.chance(55)));
        if open {
            let region = rng.range(0, regions as u64 - 1) as u32;
            stack.push((region, t, records.len() as u32));
            record(t, region, false, &mut records);
        } else {
            let (region, start, start_seq) = stack.pop().unwrap();
            truth.push(TrueInstance { region, start, end: t, start_seq, end_seq: records.len() as u32 });
            record(t, region, true, &mut records);
        }
        t += gap(rng);
    }
    let clock_end = clock_start + t + cost * records.len() as u64 + lead;
    let globaltimer_start = 1_700_000_000_000_000_000 + rng.range(0, 1_000_000);
    let slot = SlotData {
        cta,
        group,
        sm_id: cta % 132,
        clock_start,
        clock_end,
        globaltimer_start,
        // A 1.5 GHz clock: ns = cycles / 1.5.
        globaltimer_end: globaltimer_start + (clock_end - clock_start) * 2 / 3,
        records,
    };
    (slot, truth)
}

/// Moves a group's clocks so that it starts at `clock_start` (every clock shifts by the
/// same amount) and sets its globaltimer pair to match a 1.5 GHz clock from
/// `globaltimer_start`: how groups of one CTA look (one SM clock, one timer).
pub fn rebase(slot: &mut SlotData, clock_start: u64, globaltimer_start: u64) {
    let shift = |c: u64| c - slot.clock_start + clock_start;
    for r in &mut slot.records {
        r.clock = shift(r.clock);
    }
    slot.clock_end = shift(slot.clock_end);
    slot.clock_start = clock_start;
    slot.globaltimer_start = globaltimer_start;
    slot.globaltimer_end = globaltimer_start + (slot.clock_end - clock_start) * 2 / 3;
}

/// The groups of one CTA: random programs on one SM clock, starting within a few
/// thousand cycles of each other.
pub fn synthetic_cta(
    rng: &mut Rng,
    cta: u32,
    groups: u32,
    regions: u32,
    steps: usize,
    cost: u64,
    max_gap: u64,
) -> Vec<(SlotData, Vec<TrueInstance>)> {
    let base = rng.range(0, 1 << 62);
    let timer = 1_700_000_000_000_000_000 + rng.range(0, 10_000_000);
    (0..groups)
        .map(|group| {
            let n = rng.range(0, steps as u64) as usize;
            let (mut slot, truth) = synthetic_group(rng, cta, group, regions, n, cost, max_gap);
            let delta = rng.range(0, 3000);
            rebase(&mut slot, base + delta, timer + delta * 2 / 3);
            (slot, truth)
        })
        .collect()
}
