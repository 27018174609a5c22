//! The grid's estimate from its CTAs' (each estimated alone on an SM by [`crate::timing`]).
//!
//! CTAs run in waves over the machine's SMs, as many at once on an SM as its registers,
//! shared memory, threads and CTA limit allow (`trident_emu::MachineModel::ctas_per_sm`, the
//! PTX emulator's occupancy). CTAs sharing an SM overlap their waits but not their work: the
//! SM's time in a wave is its slowest CTA's, or — when more — the cycles its busiest
//! resource (a sub-partition's issue slots or one of its pipes, the shared-memory pipe) is
//! taken for by all its CTAs together. Waves follow one another (a CTA of the next wave does
//! not start in the gap a finished one leaves; the grid's tail is rounded up to a wave).
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

/// The grid's estimated cycles and its number of waves, for `ctas` in launch order on `sms`
/// SMs with `per_sm` CTAs at once on each: CTA `i` of a wave on SM `i mod sms`.
pub fn cycles(ctas: &[Cta], sms: u32, per_sm: u32) -> (u64, u64) {
    let (sms, per_sm) = (sms.max(1) as usize, per_sm.max(1) as usize);
    let mut total = 0;
    let mut waves = 0;
    for wave in ctas.chunks(sms * per_sm) {
        let mut slowest_sm = 0;
        for sm in 0..sms.min(wave.len()) {
            let mine = wave.iter().skip(sm).step_by(sms);
            let mut demand = Demand::default();
            let mut longest = 0;
            for c in mine {
                demand.add(&c.demand);
                longest = longest.max(c.cycles);
            }
            slowest_sm = slowest_sm.max(longest.max(demand.busiest()));
        }
        total += slowest_sm;
        waves += 1;
    }
    (total, waves)
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
    fn a_grid_runs_in_waves_whose_shared_sms_overlap_waits_but_add_up_work() {
        // One wave, an SM each: the slowest CTA.
        assert_eq!(cycles(&[cta(100, 50), cta(120, 50), cta(90, 50)], 4, 1), (120, 1));
        // Nine CTAs on four SMs, one at a time: three waves (the last a single CTA).
        let nine = vec![cta(100, 50); 9];
        assert_eq!(cycles(&nine, 4, 1), (300, 3));
        // Two at a time: latency-bound CTAs overlap (two waves of 100) ...
        assert_eq!(cycles(&nine, 4, 2), (200, 2));
        // ... work-bound ones do not: two CTAs of 80 busy cycles on an SM take 160.
        assert_eq!(cycles(&vec![cta(100, 80); 8], 4, 2), (160, 1));
        // CTA i of a wave goes to SM i mod 4: CTAs 1 and 5 share an SM.
        let mut uneven = vec![cta(10, 10); 8];
        uneven[1] = cta(300, 100);
        uneven[5] = cta(50, 250);
        assert_eq!(cycles(&uneven, 4, 2), (350, 1));
        assert_eq!(cycles(&[], 4, 2), (0, 0));
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
