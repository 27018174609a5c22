//! The grid's estimate from its CTAs' (each estimated alone on an SM by [`crate::timing`]).
//!
//! CTAs run in waves over the machine's SMs, as many at once on an SM as its registers,
//! shared memory, threads and CTA limit allow (`trident_emu::MachineModel::ctas_per_sm`, the
//! PTX emulator's occupancy). CTAs sharing an SM overlap their waits but not their work: the
//! SM's time in a wave is its slowest CTA's, or — when more — the cycles its busiest
//! resource (a sub-partition's issue slots or one of its pipes, the shared-memory pipe) is
//! taken for by all its CTAs together. Waves follow one another (a CTA of the next wave does
//! not start in the gap a finished one leaves; the grid's tail is rounded up to a wave).
//! Global memory bandwidth and caches are not modelled: a grid that moves more bytes than
//! DRAM can in this time is estimated too fast.

use crate::timing::Demand;

/// One CTA's estimate: its cycles alone on an SM and what it takes of the SM's resources.
#[derive(Clone, Debug, Default)]
pub struct Cta {
    pub cycles: u64,
    pub demand: Demand,
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
        Cta { cycles, demand }
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
}
