//! Barrier insertion.
//!
//! Two kinds of shared memory: *scratch* (every data-exchanging op writes it first and
//! reads it last, its own write → read barrier being part of its lowering; all scratch
//! users share one region) and *buffers* (`local_alloc`, read by `local_load`). A forward
//! walk tracks what may be pending since the last barrier: a scratch op needs a barrier
//! when any scratch access is pending; a buffer read needs one after a pending write of
//! that buffer and a buffer write after any pending access of it. `async_copy` writes are
//! ordered by the pipeliner's own `async_wait` + `barrier` protocol and are not tracked;
//! a lone `tma_copy` (not into a pipeliner's ring, which its protocol orders like
//! `async_copy`) waits for earlier accesses of its buffer like a write, but its data is
//! published by its mbarrier (`mbarrier_wait`), not by a CTA barrier, so it leaves no
//! pending write. `mbarrier_init` ends in a CTA barrier; `tma_store` starts with one (and
//! leaves its box read, so a later write of the box waits for a barrier).
//! A buffer write (`local_store`, a lone `tma_copy`) also waits for pending scratch accesses:
//! the shared-memory planner lets a buffer reuse the bytes of scratch users that end before
//! the buffer's first use, and other warps may still be reading them.
//! Loops are entered with their own accesses pending (the previous iteration's).
//! A `warp_specialize` is walked through its consumer region only: the producer holds no
//! barrier (its warps take part in none) and writes only its ring, which mbarriers order.

use crate::machine::scratch::scratch_bytes;
use std::collections::HashSet;
use trident_ir::{Block, Function, Loc, Op, OpKind, Value, ValueDef};

/// Inserts `barrier` ops; returns how many.
pub fn insert_barriers(f: &mut Function) -> usize {
    let body = f.body;
    let mut n = 0;
    walk(f, body, State::default(), &mut n);
    drop_barriers_before_store_waits(f);
    n
}

/// A `tma_store_wait` ends in a CTA barrier of its own, so a plain `barrier` before it with
/// only register work between (a persistent loop's end-of-main-loop barrier, then the
/// epilogue's conversions) orders nothing the later one does not: it is removed.
fn drop_barriers_before_store_waits(f: &mut Function) {
    let waits: Vec<Op> = f.all_ops().into_iter().filter(|&o| matches!(f.ops[o].kind, OpKind::TmaStoreWait)).collect();
    for wait in waits {
        let Some(parent) = f.ops[wait].parent else { continue };
        let ops = &f.blocks[parent].ops;
        let Some(at) = ops.iter().position(|&o| o == wait) else { continue };
        let before = ops[..at].iter().rev().copied().find(|&o| {
            let d = &f.ops[o];
            !(d.kind.effect() == trident_ir::Effect::Pure
                && d.regions.is_empty()
                && scratch_bytes(f, o).unwrap_or(0) == 0)
        });
        if let Some(b) = before.filter(|&b| matches!(f.ops[b].kind, OpKind::Barrier) && f.ops[b].attrs.is_empty()) {
            f.detach_op(b);
        }
    }
}

#[derive(Clone, Default, PartialEq)]
struct State {
    scratch: bool,
    reads: HashSet<Op>,
    writes: HashSet<Op>,
}

impl State {
    fn join(&mut self, o: &State) {
        self.scratch |= o.scratch;
        self.reads.extend(o.reads.iter().copied());
        self.writes.extend(o.writes.iter().copied());
    }
}

/// The `local_alloc` a buffer view comes from.
fn root(f: &Function, mut v: Value) -> Option<Op> {
    loop {
        match f.values[v].def {
            ValueDef::Result(op, _) => match f.ops[op].kind {
                OpKind::LocalAlloc => return Some(op),
                OpKind::MemDescIndex | OpKind::MemDescTrans { .. } => v = f.ops[op].operands[0],
                _ => return None,
            },
            ValueDef::Arg(..) => return None,
        }
    }
}

/// Whether a `tma_copy` fills a slot of a pipeliner's ring (a `memdesc_index` view), whose
/// protocol orders it (the wait and barrier at the loop top free the slot it fills).
fn into_ring(f: &Function, copy: Op) -> bool {
    matches!(f.def_op(f.ops[copy].operands[1]).map(|o| &f.ops[o].kind), Some(OpKind::MemDescIndex))
}

fn walk(f: &mut Function, b: Block, mut st: State, n: &mut usize) -> State {
    let ops: Vec<Op> = f.blocks[b].ops.clone();
    for op in ops {
        let kind = f.ops[op].kind.clone();
        let mut need = false;
        match kind {
            OpKind::Barrier => {
                st = State::default();
                continue;
            }
            OpKind::For | OpKind::While => {
                let regions = f.ops[op].regions.clone();
                // Iterate to a fixed point of the state at the loop head.
                let mut head = st.clone();
                for _ in 0..3 {
                    let mut s = head.clone();
                    for &r in &regions {
                        s = dry_walk(f, r, s);
                    }
                    let mut next = st.clone();
                    next.join(&s);
                    if next == head {
                        break;
                    }
                    head = next;
                }
                let mut s = head;
                for r in regions {
                    s = walk(f, r, s, n);
                }
                st.join(&s);
                continue;
            }
            OpKind::If => {
                let regions = f.ops[op].regions.clone();
                let mut out = st.clone();
                for r in regions {
                    let s = walk(f, r, st.clone(), n);
                    out.join(&s);
                }
                st = out;
                continue;
            }
            // The consumers go on with the CTA's pending accesses; the producer's copies
            // into its ring are ordered by the ring's mbarriers, and it holds no barrier.
            OpKind::WarpSpecialize { .. } => {
                let consumer = f.ops[op].regions[0];
                st = walk(f, consumer, st, n);
                continue;
            }
            OpKind::LocalLoad => {
                if let Some(buf) = root(f, f.ops[op].operands[0]) {
                    need = st.writes.contains(&buf);
                    if need {
                        st = State::default();
                    }
                    st.reads.insert(buf);
                }
            }
            OpKind::LocalStore => {
                if let Some(buf) = root(f, f.ops[op].operands[0]) {
                    need = st.scratch || st.writes.contains(&buf) || st.reads.contains(&buf);
                    if need {
                        st = State::default();
                    }
                    st.writes.insert(buf);
                }
            }
            OpKind::TmaCopy if !into_ring(f, op) => {
                if let Some(buf) = root(f, f.ops[op].operands[1]) {
                    need = st.scratch || st.writes.contains(&buf) || st.reads.contains(&buf);
                    if need {
                        st = State::default();
                    }
                }
            }
            // Ends in a CTA barrier of its own.
            OpKind::MbarrierInit { .. } | OpKind::TmaStoreWait => st = State::default(),
            // Starts with a CTA barrier of its own (publishing the box to the copy), then reads
            // the box until the copy has read it.
            OpKind::TmaStore => {
                st = State::default();
                if let Some(buf) = root(f, f.ops[op].operands[1]) {
                    st.reads.insert(buf);
                }
            }
            _ => {
                if scratch_bytes(f, op).unwrap_or(0) > 0 {
                    need = st.scratch;
                    if need {
                        st = State::default();
                    }
                    st.scratch = true;
                }
            }
        }
        if need {
            let bar = f.new_op(OpKind::Barrier, &[], &[], Loc::UNKNOWN);
            f.insert_op_before(op, bar);
            *n += 1;
        }
    }
    st
}

/// The state after `b` without inserting anything (barriers the walk would insert clear it).
fn dry_walk(f: &Function, b: Block, mut st: State) -> State {
    for &op in &f.blocks[b].ops {
        match &f.ops[op].kind {
            OpKind::Barrier => st = State::default(),
            OpKind::WarpSpecialize { .. } => st = dry_walk(f, f.ops[op].regions[0], st),
            OpKind::For | OpKind::While | OpKind::If => {
                let mut out = st.clone();
                for &r in &f.ops[op].regions {
                    let s = dry_walk(f, r, st.clone());
                    out.join(&s);
                }
                st = out;
            }
            OpKind::LocalLoad => {
                if let Some(buf) = root(f, f.ops[op].operands[0]) {
                    if st.writes.contains(&buf) {
                        st = State::default();
                    }
                    st.reads.insert(buf);
                }
            }
            OpKind::LocalStore => {
                if let Some(buf) = root(f, f.ops[op].operands[0]) {
                    if st.scratch || st.writes.contains(&buf) || st.reads.contains(&buf) {
                        st = State::default();
                    }
                    st.writes.insert(buf);
                }
            }
            OpKind::TmaCopy if !into_ring(f, op) => {
                if let Some(buf) = root(f, f.ops[op].operands[1]) {
                    if st.scratch || st.writes.contains(&buf) || st.reads.contains(&buf) {
                        st = State::default();
                    }
                }
            }
            OpKind::MbarrierInit { .. } | OpKind::TmaStoreWait => st = State::default(),
            OpKind::TmaStore => {
                st = State::default();
                if let Some(buf) = root(f, f.ops[op].operands[1]) {
                    st.reads.insert(buf);
                }
            }
            _ => {
                if scratch_bytes(f, op).unwrap_or(0) > 0 {
                    if st.scratch {
                        st = State::default();
                    }
                    st.scratch = true;
                }
            }
        }
    }
    st
}
