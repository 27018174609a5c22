//! The grid's estimate from its CTAs' (each estimated alone on an SM by [`crate::timing`]).
//!
//! CTAs run on the machine's SMs, as many at once on an SM as its registers, shared memory,
//! threads and CTA limit allow (`trident_emu::MachineModel::ctas_per_sm`, the PTX emulator's
//! occupancy), each in the first slot that frees (a short CTA's slot takes the next one, as
//! the hardware's scheduler does: a causal attention's grid is not paced by its longest
//! CTAs). CTAs sharing an SM overlap their waits but not their work: a CTA ends after its
//! own cycles or, if later, once its SM's busiest resource (a sub-partition's issue slots or
//! one of its pipes, the shared-memory pipe, the port to L2) has done the work of every CTA
//! given to that SM so far. A CTA's own cycles are its time alone on an SM: co-resident CTAs
//! do not lengthen each other's latency-bound stretches.
//!
//! Global memory is a floor under that ([`estimate`]): each CTA fetches every 32-byte sector
//! it touches once from L2 (its reuse of a sector is served by L1 or by its own copy in
//! shared memory), through its SM's port to L2 (`l2_port_bytes_per_clk`, one of the
//! resources above) and L2 itself (`l2_bytes_per_s`, the grid's traffic together); every
//! sector the grid touches comes from DRAM once (`dram_bytes_per_s`) — the compulsory traffic
//! only: neither cache's capacity (data evicted and read again) is modelled, nor the latency
//! of a DRAM miss (a CTA's loads take an L2 hit's). The rates are the PTX emulator's machine
//! model's.

use std::collections::HashSet;

use trident_emu::MachineModel;

use crate::timing::Demand;

/// One CTA's estimate: its cycles alone on an SM, what it takes of the SM's resources, and
/// its global traffic.
#[derive(Clone, Debug, Default)]
pub struct Cta {
    pub cycles: u64,
    pub demand: Demand,
    pub traffic: crate::exec::Traffic,
}

/// The grid's estimate.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Estimate {
    pub cycles: u64,
    pub waves: u64,
    /// Global bytes the grid's accesses move, the bytes its CTAs fetch from L2 (each CTA's
    /// distinct 32-byte sectors), and the distinct bytes the grid touches (from DRAM).
    pub global_bytes: u64,
    pub l2_bytes: u64,
    pub dram_bytes: u64,
    /// What set the estimate: `"SMs"` (the waves), `"L2"` or `"DRAM"` (their bandwidth).
    pub bound: &'static str,
}

/// The grid's estimate on machine `m` with `per_sm` CTAs at once on an SM: the waves'
/// [`cycles`], or the time the grid's traffic takes L2 or DRAM if longer.
pub fn estimate(ctas: &[Cta], m: &MachineModel, per_sm: u32) -> Estimate {
    let (waves_cycles, waves) = cycles(ctas, m.sms, per_sm);
    let global_bytes: u64 = ctas.iter().map(|c| c.traffic.bytes).sum();
    let l2_bytes: u64 = ctas.iter().map(|c| c.traffic.l2_bytes()).sum();
    let mut sectors: HashSet<u64> = HashSet::new();
    for c in ctas {
        sectors.extend(c.traffic.sectors.iter().copied());
    }
    let dram_bytes = 32 * sectors.len() as u64;
    let per_cycle = |bytes_per_s: f64| bytes_per_s / (m.clock_ghz * 1e9);
    let l2 = (l2_bytes as f64 / per_cycle(m.l2_bytes_per_s)).ceil() as u64;
    let dram = (dram_bytes as f64 / per_cycle(m.dram_bytes_per_s)).ceil() as u64;
    let (cycles, bound) = [(waves_cycles, "SMs"), (l2, "L2"), (dram, "DRAM")]
        .into_iter()
        .fold((0, "SMs"), |best, x| if x.0 > best.0 { x } else { best });
    Estimate { cycles, waves, global_bytes, l2_bytes, dram_bytes, bound }
}

/// The grid's estimated cycles and its number of waves (full-occupancy rounds,
/// `ceil(CTAs / (sms × per_sm))`), for `ctas` in launch order on `sms` SMs with `per_sm` CTAs
/// at once on each. Each CTA takes the slot that frees first (the first round: CTA `i` on SM
/// `i mod sms`, as the hardware spreads a launch), starts then, and ends its own cycles
/// later — or, if later, when its SM's busiest resource has done the work of every CTA given
/// to that SM so far: co-resident CTAs overlap their waits, not their work.
pub fn cycles(ctas: &[Cta], sms: u32, per_sm: u32) -> (u64, u64) {
    use std::cmp::Reverse;
    let (sms, per_sm) = (sms.max(1) as usize, per_sm.max(1) as usize);
    // (free at, slot, SM): the slot that frees first, the lower slot, then the lower SM.
    let mut slots: std::collections::BinaryHeap<Reverse<(u64, usize, usize)>> =
        (0..per_sm).flat_map(|slot| (0..sms).map(move |sm| Reverse((0, slot, sm)))).collect();
    let mut demand = vec![Demand::default(); sms];
    let mut end = vec![0u64; sms];
    for c in ctas {
        let Some(Reverse((start, slot, sm))) = slots.pop() else { break };
        demand[sm].add(&c.demand);
        let done = (start + c.cycles).max(demand[sm].busiest());
        end[sm] = end[sm].max(done);
        slots.push(Reverse((done, slot, sm)));
    }
    let waves = (ctas.len() as u64).div_ceil((sms * per_sm) as u64);
    (end.into_iter().max().unwrap_or(0), waves)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CTA of `cycles` whose busiest resource (sub-partition 0's issue slots) is taken
    /// for `busy` cycles.
    fn cta(cycles: u64, busy: u64) -> Cta {
        let mut demand = Demand::default();
        demand.issue[0] = busy;
        demand.mio = busy / 2;
        Cta { cycles, demand, ..Default::default() }
    }

    #[test]
    fn ctas_fill_free_slots_and_co_resident_ones_overlap_waits_but_add_up_work() {
        // One wave, an SM each: the slowest CTA.
        assert_eq!(cycles(&[cta(100, 50), cta(120, 50), cta(90, 50)], 4, 1), (120, 1));
        // Nine CTAs on four SMs, one at a time: three rounds (the last a single CTA).
        let nine = vec![cta(100, 50); 9];
        assert_eq!(cycles(&nine, 4, 1), (300, 3));
        // Two at a time: latency-bound CTAs overlap (two rounds of 100) ...
        assert_eq!(cycles(&nine, 4, 2), (200, 2));
        // ... work-bound ones do not: two CTAs of 80 busy cycles on an SM take 160.
        assert_eq!(cycles(&vec![cta(100, 80); 8], 4, 2), (160, 1));
        // CTA i of a wave goes to SM i mod 4: CTAs 1 and 5 share an SM.
        let mut uneven = vec![cta(10, 10); 8];
        uneven[1] = cta(300, 100);
        uneven[5] = cta(50, 250);
        assert_eq!(cycles(&uneven, 4, 2), (350, 1));
        assert_eq!(cycles(&[], 4, 2), (0, 0));
        // A short CTA's slot takes the next one: CTAs of 400, 100, 100, 100, 100 on one SM's
        // two slots end at 400, not at 400 + 100 as rounds of two would.
        let ragged = [cta(400, 10), cta(100, 10), cta(100, 10), cta(100, 10), cta(100, 10)];
        assert_eq!(cycles(&ragged, 1, 2), (400, 3));
    }

    /// Memory floors: 4 MB of distinct data through an H100 (1.83 GHz, 3 TB/s DRAM: 1640 B a
    /// cycle) takes at least 2558 cycles whatever the SMs do; the same sectors read by
    /// every CTA come from L2 (10 TB/s), once per CTA.
    #[test]
    fn a_grid_moving_more_bytes_than_dram_can_in_its_time_is_bound_by_dram() {
        let m = MachineModel::h100_sxm();
        let streaming: Vec<Cta> = (0..1024u64)
            .map(|i| {
                let mut c = cta(500, 100);
                c.traffic.touch(i * 4096, 4096);
                c
            })
            .collect();
        let e = estimate(&streaming, &m, 8);
        assert_eq!((e.global_bytes, e.dram_bytes, e.bound), (4 << 20, 4 << 20, "DRAM"));
        assert_eq!(e.cycles, (4194304.0f64 / (3.0e12 / 1.83e9)).ceil() as u64);
        assert_eq!(e.waves, 1);
        // Every CTA reading the same 64 KB twice: 128 MB requested, 64 MB fetched from L2
        // (once per CTA), 64 KB from DRAM.
        let shared: Vec<Cta> = (0..1024)
            .map(|_| {
                let mut c = cta(500, 100);
                c.traffic.touch(0, 65536);
                c.traffic.touch(0, 65536);
                c
            })
            .collect();
        let e = estimate(&shared, &m, 8);
        assert_eq!((e.global_bytes, e.l2_bytes, e.dram_bytes, e.bound), (128 << 20, 64 << 20, 65536, "L2"));
        assert_eq!(e.cycles, ((64u64 << 20) as f64 / (10.0e12 / 1.83e9)).ceil() as u64);
        // Little traffic: the SMs' time.
        let e = estimate(&[cta(500, 100)], &m, 8);
        assert_eq!((e.cycles, e.bound), (500, "SMs"));
    }
}
