//! `gpu-pingpong`: FA3's ping-pong schedule for a warp-specialized loop whose two consumer
//! warpgroups (8 consumer warps on sm_90a) each run MMAs with other work in between — an
//! attention loop: `S = Q·Kᵀ`, softmax, `O += P·V`.
//!
//! Without it the two warpgroups run the same phase at the same time: both issue their MMAs
//! together, both wait for them, and both run the softmax while the tensor cores idle
//! (`bench/PROFILE.md`, the warp-specialized case study). With it, turns taken on two
//! named barriers make the warpgroups issue their MMAs in alternation, each turn covering
//! one iteration's last MMA and the next iteration's first — FA3's GEMM1 of iteration j and
//! GEMM0 of iteration j+1, which in the loop's own order are already adjacent across the
//! back edge:
//!
//! ```text
//! pingpong_pass [only = 1]        // warpgroup 1 lets warpgroup 0 go first
//! pingpong_wait                   // each warpgroup's turn for its first MMA
//! for ...:
//!   ...; S = dot(Q, K); pingpong_pass      // the turn ends after the first MMA's issue
//!   softmax ...                             // overlaps the other warpgroup's MMAs
//!   pingpong_wait; O = dot(P, V, O)         // the next turn starts before the last MMA
//!   ...
//! pingpong_pass                   // the turn taken before the last MMA ends
//! pingpong_wait [only = 0]        // warpgroup 0 takes warpgroup 1's last pass
//! ```
//!
//! Each barrier's waits and passes pair up one to one (warpgroup 0 waits n + 2 times on its
//! barrier, warpgroup 1 passes to it n + 2 times; n + 1 and n + 1 on warpgroup 1's), and
//! no pass can run a phase ahead of its wait, so no phase is left open at the kernel's end.
//!
//! Where it applies: sm_90a, a `warp_specialize` with 8 consumer warps whose consumer
//! region holds, directly, a loop with at least two dots at the top of its body, reading a
//! ring of at least 3 slots (see `pingpong`: with 2 a turn would wait for a tile whose slot
//! the other warpgroup cannot free before its own turn), no other wait or copy of its own
//! (one consumer thread's copy that both warpgroups wait for could be held back by a turn),
//! and no CTA barrier anywhere in it (after `gpu-insert-barriers`, so the barriers are all known: a
//! barrier both warpgroups must meet inside a turn would deadlock, and outside one it
//! would put them back in step). The warpgroups' MMA rows are disjoint (a wgmma layout
//! splits M over whole warpgroups), so nothing else ties them.

use crate::options::GpuOptions;
use trident_ir::{Block, Function, Op, OpKind};

/// Gives a warp-specialized kernel ping-pong turns where they apply: `Ok(true)` when it
/// did, `Ok(false)` for a kernel without a `warp_specialize`, and why not otherwise.
pub fn pingpong(f: &mut Function, opts: &GpuOptions) -> Result<bool, &'static str> {
    let Some(ws) =
        f.blocks[f.body].ops.iter().copied().find(|&o| matches!(f.ops[o].kind, OpKind::WarpSpecialize { .. }))
    else {
        return Ok(false);
    };
    if !opts.target.has_wgmma() {
        return Err("the target has no warpgroup MMA");
    }
    if opts.num_warps != 8 {
        return Err("ping-pong needs two consumer warpgroups (8 warps)");
    }
    if !opts.pingpong {
        return Err("turned off (TRIDENT_PINGPONG=0)");
    }
    let consumers = f.ops[ws].regions[0];
    if f.all_ops()
        .into_iter()
        .any(|o| matches!(f.ops[o].kind, OpKind::PingpongWait { .. } | OpKind::PingpongPass { .. }))
    {
        return Err("the kernel already takes turns");
    }
    let loops: Vec<Op> = f.blocks[consumers]
        .ops
        .iter()
        .copied()
        .filter(|&o| matches!(f.ops[o].kind, OpKind::For) && dots(f, f.ops[o].regions[0]).len() >= 2)
        .collect();
    let [lp] = loops[..] else {
        return Err("the consumers have no loop (or several) with two dots at the top of its body");
    };
    let body = f.ops[lp].regions[0];
    let (mut barrier, mut waits, mut copies) = (false, 0, false);
    f.walk_block(body, &mut |o| match f.ops[o].kind {
        OpKind::Barrier => barrier = true,
        OpKind::MbarrierWait => waits += 1,
        // A copy one consumer thread issues and both warpgroups wait for (a lone TMA load in
        // the loop) could be held back by its warpgroup's turn while the other waits for it.
        OpKind::TmaCopy | OpKind::AsyncCopy | OpKind::AsyncWait { .. } | OpKind::MbarrierInit { .. } => copies = true,
        _ => {}
    });
    if barrier {
        return Err("the loop holds a CTA barrier");
    }
    if waits != 1 || copies {
        return Err("the loop waits on more than its ring, or copies itself");
    }
    // A turn spans the wait for the next iteration's tiles: while warpgroup 0 holds it,
    // warpgroup 1 (waiting for its turn before its last MMA of iteration j) has released
    // slots up to iteration j − 2 only, and the tile of iteration j + 1 needs the slot of
    // iteration j + 1 − S. So S ≥ 3 slots, or the two warpgroups and the producer wait on
    // each other forever.
    match ring_slots(f, body) {
        Some(s) if s >= 3 => {}
        Some(_) => return Err("the ring has fewer than 3 slots (a turn waits for the next tile: it would deadlock)"),
        None => return Err("the loop waits on no mbarrier ring"),
    }
    let ds = dots(f, body);
    let (first, last) = (ds[0], ds[ds.len() - 1]);
    let loc = f.ops[lp].loc;
    let turn = |f: &mut Function, kind: OpKind| f.new_op(kind, &[], &[], loc);
    let o = turn(f, OpKind::PingpongPass { only: Some(1) });
    f.insert_op_before(lp, o);
    let o = turn(f, OpKind::PingpongWait { only: None });
    f.insert_op_before(lp, o);
    let o = turn(f, OpKind::PingpongPass { only: None });
    f.insert_op_after(first, o);
    let o = turn(f, OpKind::PingpongWait { only: None });
    f.insert_op_before(last, o);
    let o = turn(f, OpKind::PingpongWait { only: Some(0) });
    f.insert_op_after(lp, o);
    let o = turn(f, OpKind::PingpongPass { only: None });
    f.insert_op_after(lp, o);
    Ok(true)
}

/// The slots of the ring the loop waits on: the `full` barriers (`[S, 1]`) of its first
/// top-level `mbarrier_wait`.
fn ring_slots(f: &Function, body: Block) -> Option<u32> {
    let wait = f.blocks[body].ops.iter().copied().find(|&o| matches!(f.ops[o].kind, OpKind::MbarrierWait))?;
    let index = f.def_op(*f.ops[wait].operands.first()?)?;
    if !matches!(f.ops[index].kind, OpKind::MemDescIndex) {
        return None;
    }
    let bars = *f.ops[index].operands.first()?;
    f.ty(bars).shape().first().copied()
}

/// The dots at the top of `body`, in order.
fn dots(f: &Function, body: Block) -> Vec<Op> {
    f.blocks[body].ops.iter().copied().filter(|&o| matches!(f.ops[o].kind, OpKind::Dot { .. })).collect()
}
