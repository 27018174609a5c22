//! Sinks `arange`s into the loops that use them (pass `gpu-sink-ranges`).
//!
//! In a distributed layout an `arange` occupies one register per element a thread holds
//! (16 for a 64-wide slice of an mma accumulator on 8 warps), and each is one ALU
//! instruction away from the thread's coordinates. Defined before a loop (CSE merges the
//! `tl.arange(0, BLOCK_N)` of a loop body with an identical one outside it, and the GPU
//! lowering places per-layout copies next to the original), those registers stay live
//! across the whole loop. Recomputing them in the loop, where they are used, costs a few
//! instructions per iteration and gives the registers back: flash attention's causal mask
//! (`offs_m[:, None] >= offs_n[None, :]`) went from 144 to 128 registers per thread with
//! this, on sm_90a with 8 warps, the difference between one and two CTAs per SM.

use trident_ir::edit::ValueMap;
use trident_ir::{Block, Function, Op, OpKind, Value};

/// Clones every multi-register `arange` defined outside a loop into each loop region that
/// uses it (at the region's start). Returns how many clones were made.
pub fn sink_ranges(f: &mut Function) -> usize {
    let mut made = 0;
    for lp in f.all_ops() {
        if !matches!(f.ops[lp].kind, OpKind::For | OpKind::While) {
            continue;
        }
        for r in f.ops[lp].regions.clone() {
            made += sink_into(f, lp, r);
        }
    }
    made
}

fn is_range_outside(f: &Function, v: Value, lp: Op) -> Option<Op> {
    let d = f.def_op(v)?;
    if !matches!(f.ops[d].kind, OpKind::Arange { .. }) || f.ty(v).shape().iter().product::<u32>() <= 1 {
        return None;
    }
    let inside = f.ops[lp].regions.iter().any(|&r| f.is_defined_within(v, r));
    (!inside).then_some(d)
}

fn sink_into(f: &mut Function, lp: Op, r: Block) -> usize {
    let Some(&first) = f.blocks[r].ops.first() else { return 0 };
    let mut ranges: Vec<(Value, Op)> = vec![];
    f.walk_block(r, &mut |o| {
        for &v in f.ops[o].operands.iter() {
            if let Some(d) = is_range_outside(f, v, lp) {
                if !ranges.iter().any(|(w, _)| *w == v) {
                    ranges.push((v, d));
                }
            }
        }
    });
    let mut map = ValueMap::new();
    for &(v, d) in &ranges {
        let mut m = ValueMap::default();
        let c = f.clone_op(d, &mut m);
        f.insert_op_before(first, c);
        map.insert(v, f.result(c, 0));
    }
    f.replace_uses_in_block(r, &map);
    ranges.len()
}
