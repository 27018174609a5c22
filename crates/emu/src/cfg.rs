//! Control-flow graph of a function and the reconvergence point of each branch:
//! the immediate post-dominator of the branch's basic block, where lanes that
//! took different paths meet again (the classic SIMT-stack discipline).

use crate::ir::{Instr, Kind, Operand, NO_PC};

pub fn assign_reconvergence(instrs: &mut [Instr]) {
    let n = instrs.len();
    if n == 0 {
        return;
    }
    let target = |i: &Instr| match i.ops.first() {
        Some(Operand::Target(t)) => Some(*t as usize),
        _ => None,
    };
    // Leaders.
    let mut leader = vec![false; n + 1];
    leader[0] = true;
    for (i, ins) in instrs.iter().enumerate() {
        match ins.kind {
            Kind::Bra => {
                if let Some(t) = target(ins) {
                    if t <= n {
                        leader[t] = true;
                    }
                }
                leader[i + 1] = true;
            }
            Kind::Ret | Kind::Exit | Kind::Trap => leader[i + 1] = true,
            _ => {}
        }
    }
    let starts: Vec<usize> = (0..n).filter(|&i| leader[i]).collect();
    let nb = starts.len();
    let exit = nb; // virtual exit node
    let mut block_of = vec![0usize; n + 1];
    for (b, &s) in starts.iter().enumerate() {
        let end = starts.get(b + 1).copied().unwrap_or(n);
        for slot in block_of.iter_mut().take(end).skip(s) {
            *slot = b;
        }
    }
    block_of[n] = exit;
    let node_of = |pc: usize| if pc >= n { exit } else { block_of[pc] };
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); nb];
    for b in 0..nb {
        let end = starts.get(b + 1).copied().unwrap_or(n);
        let last = &instrs[end - 1];
        let guarded = last.guard.is_some();
        match last.kind {
            Kind::Bra => {
                if let Some(t) = target(last) {
                    succ[b].push(node_of(t));
                }
                if guarded {
                    succ[b].push(node_of(end));
                }
            }
            Kind::Ret | Kind::Exit | Kind::Trap => {
                succ[b].push(exit);
                if guarded {
                    succ[b].push(node_of(end));
                }
            }
            _ => succ[b].push(node_of(end)),
        }
    }
    // Post-dominator sets as bitsets, iterated to a fixed point.
    let words = (nb + 1).div_ceil(64);
    let full = vec![u64::MAX; words];
    let mut pdom: Vec<Vec<u64>> = vec![full; nb + 1];
    pdom[exit] = vec![0; words];
    pdom[exit][exit / 64] |= 1 << (exit % 64);
    let mut changed = true;
    while changed {
        changed = false;
        for b in (0..nb).rev() {
            let mut acc = vec![u64::MAX; words];
            for &s in &succ[b] {
                for w in 0..words {
                    acc[w] &= pdom[s][w];
                }
            }
            if succ[b].is_empty() {
                acc = vec![0; words];
            }
            acc[b / 64] |= 1 << (b % 64);
            if acc != pdom[b] {
                pdom[b] = acc;
                changed = true;
            }
        }
    }
    let count = |v: &Vec<u64>| v.iter().map(|w| w.count_ones()).sum::<u32>();
    let mut ipdom = vec![exit; nb];
    for b in 0..nb {
        let need = count(&pdom[b]).saturating_sub(1);
        for p in 0..=nb {
            if p != b && pdom[b][p / 64] & (1 << (p % 64)) != 0 && count(&pdom[p]) == need {
                ipdom[b] = p;
                break;
            }
        }
    }
    for i in 0..n {
        if instrs[i].kind == Kind::Bra {
            let p = ipdom[block_of[i]];
            instrs[i].reconv = if p == exit { NO_PC } else { starts[p] as u32 };
        }
    }
}
