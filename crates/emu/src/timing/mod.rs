//! The timing model: modelled cycles of every warp-instruction on a
//! [`MachineModel`](crate::MachineModel), deterministic and independent of how the host
//! schedules the emulation (see `bench/EMU_MODEL.md` for the parameters and their
//! calibration against an H100).
//!
//! * **Grid.** CTAs are dispatched in launch order to the SM slot that frees first
//!   (ties: lowest SM), as many per SM as threads, shared memory, registers and the CTA
//!   limit allow. The launch takes until its last CTA finishes, plus a fixed launch
//!   overhead.
//! * **Epochs.** All SMs advance together in epochs of [`EPOCH`] cycles: each SM runs
//!   its warps up to the epoch's end (SMs in parallel on host threads), then the global
//!   memory system merges what they did, in SM order. Nothing an SM sees depends on host
//!   thread timing.
//! * **SM.** Warps are simulated in time order: the warp that can issue earliest goes
//!   next. An instruction issues when its scheduler (one warp-instruction per cycle per
//!   sub-partition) is free, its source registers are ready (scoreboard: fixed ALU
//!   latencies, variable memory latencies) and its unit can accept it (FP32, INT, FP64,
//!   SFU, tensor core per sub-partition at their lane counts; the SM's memory pipeline
//!   with a short queue). Emulated operations (integer division, 64-bit integer
//!   arithmetic) take several issue slots.
//! * **Memory.** Shared memory: one 128-byte wavefront per cycle per SM, bank conflicts
//!   counted per access. Global: accesses coalesce into 32-byte sectors and 128-byte
//!   lines; lines pass the L1 tag stage, bytes the SM's L2 port; L2 hits and DRAM misses
//!   have their latencies and queue behind the L2 and DRAM bandwidth servers (see
//!   [`memsys`]).
//! * **Asynchrony.** `cp.async` groups complete when their last copy lands and
//!   `cp.async.wait_group` waits for them; `wgmma` occupies the tensor cores of the four
//!   sub-partitions and streams its shared-memory operands, and `wgmma.wait_group`
//!   waits; barriers release at the last arrival plus their latency.
//! * **Markers.** `//@trident.mark N` comment lines cost nothing and record the warp's
//!   clock.

pub mod access;
pub mod class;
pub mod memsys;
pub mod sm;

/// Cycles per epoch: short against memory latencies, so a bandwidth backlog one SM
/// creates reaches the others before it matters.
pub const EPOCH: u64 = 256;

/// The duration of a grid of `ncta` CTAs estimated from the durations of its first
/// `sampled.len()` CTAs: CTA `i` takes as long as sampled CTA `i % n`, and CTAs are
/// list-scheduled in launch order onto `slots` CTA slots (SMs × CTAs per SM), each to
/// the slot that frees first, as the hardware dispatches them.
pub fn extrapolate(sampled: &[u64], ncta: u64, slots: u64) -> u64 {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    if sampled.is_empty() {
        return 0;
    }
    let slots = slots.clamp(1, ncta.max(1)) as usize;
    let mut free: BinaryHeap<Reverse<(u64, usize)>> = (0..slots).map(|i| Reverse((0, i))).collect();
    let mut end = 0;
    for i in 0..ncta {
        let c = sampled[(i % sampled.len() as u64) as usize];
        let Some(Reverse((t, s))) = free.pop() else { break };
        end = end.max(t + c);
        free.push(Reverse((t + c, s)));
    }
    end
}

#[cfg(test)]
mod tests {
    use super::extrapolate;

    #[test]
    fn extrapolation_list_schedules_the_sampled_durations() {
        // Uniform CTAs: whole waves (a partial last wave takes a full CTA time).
        assert_eq!(extrapolate(&[10, 10], 5, 2), 30);
        // Uneven ones pack: 1..4 repeating on 2 slots.
        assert_eq!(extrapolate(&[1, 2, 3, 4], 8, 2), 11);
        assert_eq!(extrapolate(&[], 8, 2), 0);
        assert_eq!(extrapolate(&[7], 3, 1), 21);
    }
}
