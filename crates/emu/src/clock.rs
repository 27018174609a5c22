//! The modelled clock. Each instruction has an issue cost in cycles; a warp's clock
//! advances by the cost of every instruction it issues, barriers align the clocks of
//! the warps they release, and `%clock`/`%clock64` read the warp's clock. Costs are
//! coarse (ALU ≪ shared memory < global memory ≈ tensor core) and deterministic: they
//! make profiles and autotuning comparisons stable, not cycle-accurate.
//!
//! Kernel duration: a CTA takes `max(longest warp, total warp cycles / 4 schedulers)`
//! cycles; CTAs are list-scheduled in launch order onto `NUM_SMS × resident CTAs per
//! SM` slots (residency limited by threads, shared memory and the 32-CTA limit of an
//! A100-class SM); the launch takes as long as the last slot to finish.

use crate::ir::{Instr, Kind, Space, Ty};

pub const NUM_SMS: u32 = 108;
const SM_THREADS: u32 = 2048;
const SM_SHARED: u32 = 164 * 1024;
const SM_CTAS: u32 = 32;
pub const SCHEDULERS_PER_SM: u64 = 4;

pub fn cost(i: &Instr) -> u32 {
    use Kind::*;
    let wide = i.tys.iter().any(|t| matches!(t, Ty::F64));
    match i.kind {
        Add | Sub | Min | Max | And | Or | Xor | Not | Cnot | Shl | Shr | Shf | Lop3 | Prmt | Selp | Slct | Setp
        | Set | Mov | Abs | Neg | Copysign | Testp | Cvta | Bfe | Bfi | Popc | Clz | Brev | Bfind | Sad => {
            if wide {
                8
            } else {
                2
            }
        }
        Mul | Mad | Mul24 | Mad24 | Fma => {
            if wide {
                8
            } else {
                4
            }
        }
        Cvt => 4,
        Div | Rem => 20,
        Rcp | Sqrt | Rsqrt | Ex2 | Lg2 | Sin | Cos | Tanh => 8,
        Ld | St => match i.m.space {
            Some(Space::Shared) => 8 * i.m.vec.max(1) as u32 / 2 + 4,
            Some(Space::Param) | Some(Space::Const) => 4,
            Some(Space::Local) => 16,
            _ => 32 + 4 * i.m.vec.max(1) as u32,
        },
        Atom | Red => match i.m.space {
            Some(Space::Shared) => 16,
            _ => 64,
        },
        CpAsync => 16,
        CpAsyncCommit => 1,
        CpAsyncWait | CpAsyncWaitAll => 8,
        Ldmatrix | Stmatrix => 8 * i.m.count.max(1) as u32 / 2 + 4,
        Mma => 32,
        // A warpgroup MMA: the m64nNk16 work of N/8 mma.sync per warp, pipelined.
        Wgmma => 16 + i.m.shape.1 as u32 / 2,
        WgmmaFence | WgmmaCommit => 1,
        WgmmaWait => 8,
        Shfl | Vote | Match | Activemask | Redux => 4,
        Bar => 8,
        BarWarp | Fence | Prefetch => 2,
        Nanosleep => 32,
        Bra | Call | Ret | Exit | Trap => 4,
    }
}

/// CTAs one SM holds at once for this launch shape.
pub fn ctas_per_sm(threads_per_cta: u32, shared_per_cta: u32) -> u32 {
    let by_threads = SM_THREADS / threads_per_cta.max(1);
    let by_shared = SM_SHARED.checked_div(shared_per_cta).unwrap_or(SM_CTAS);
    by_threads.min(by_shared).clamp(1, SM_CTAS)
}

/// Modelled duration of a launch given each CTA's modelled cycles (in launch order).
pub fn kernel_cycles(cta_cycles: &[u64], slots: u32) -> u64 {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let slots = (slots.max(1) as usize).min(cta_cycles.len().max(1));
    // Each CTA goes to the slot that frees up first (ties: lowest slot).
    let mut free: BinaryHeap<Reverse<(u64, usize)>> = (0..slots).map(|i| Reverse((0, i))).collect();
    let mut end = 0;
    for &c in cta_cycles {
        let Some(Reverse((t, i))) = free.pop() else { break };
        end = end.max(t + c);
        free.push(Reverse((t + c, i)));
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_scheduling() {
        // Two slots: 10 and 10 run together, then 5 joins the first to free up.
        assert_eq!(kernel_cycles(&[10, 10, 5], 2), 15);
        assert_eq!(kernel_cycles(&[10, 3, 3, 3], 2), 10);
        assert_eq!(kernel_cycles(&[], 4), 0);
        assert_eq!(kernel_cycles(&[7, 7, 7], 1), 21);
    }

    #[test]
    fn residency() {
        assert_eq!(ctas_per_sm(128, 16384), 10);
        assert_eq!(ctas_per_sm(1024, 0), 2);
        assert_eq!(ctas_per_sm(32, 0), 32);
        assert_eq!(ctas_per_sm(128, 200 * 1024), 1);
    }
}
