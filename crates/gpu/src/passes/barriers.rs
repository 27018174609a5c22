//! Barrier insertion.
//!
//! Every op that uses shared memory writes it first and reads it last (its own write →
//! read barrier is part of its lowering). So a barrier is needed before such an op
//! exactly when another shared-memory op may have run since the last barrier: its
//! reads could still be in flight when this op overwrites the space (scratch space is
//! shared by every op). A forward walk tracks "accesses pending"; loops are entered
//! with their own accesses pending (the previous iteration's).

use super::alloc_shared::scratch_bytes;
use trident_ir::{Block, Function, Loc, Op, OpKind};

/// Inserts `barrier` ops; returns how many.
pub fn insert_barriers(f: &mut Function) -> usize {
    let body = f.body;
    let mut n = 0;
    walk(f, body, false, &mut n);
    n
}

fn uses_smem(f: &Function, op: Op) -> bool {
    match f.ops[op].kind {
        OpKind::LocalAlloc | OpKind::LocalLoad | OpKind::LocalStore | OpKind::AsyncCopy => true,
        _ => scratch_bytes(f, op).unwrap_or(0) > 0,
    }
}

fn block_uses_smem(f: &Function, b: Block) -> bool {
    let mut any = false;
    f.walk_block(b, &mut |op| any |= uses_smem(f, op));
    any
}

/// Walks `b` with `pending` accesses at entry; returns whether accesses are pending at exit.
fn walk(f: &mut Function, b: Block, mut pending: bool, n: &mut usize) -> bool {
    let ops: Vec<Op> = f.blocks[b].ops.clone();
    for op in ops {
        let kind = f.ops[op].kind.clone();
        match kind {
            OpKind::Barrier => pending = false,
            OpKind::For | OpKind::While => {
                let regions = f.ops[op].regions.clone();
                let inner = regions.iter().any(|&r| block_uses_smem(f, r));
                let mut p = pending || inner;
                for r in regions {
                    p = walk(f, r, p, n) || inner;
                }
                pending = p;
            }
            OpKind::If => {
                let regions = f.ops[op].regions.clone();
                let mut out = pending;
                for r in regions {
                    out |= walk(f, r, pending, n);
                }
                pending = out;
            }
            _ => {
                if uses_smem(f, op) {
                    if pending {
                        let bar = f.new_op(OpKind::Barrier, &[], &[], Loc::UNKNOWN);
                        f.insert_op_before(op, bar);
                        *n += 1;
                    }
                    pending = true;
                }
            }
        }
    }
    pending
}
