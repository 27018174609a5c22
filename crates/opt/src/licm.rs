//! Loop-invariant code motion: hoists pure ops whose operands are all defined outside a
//! `for`/`while` out of the loop, in front of it.
//!
//! Loops are processed innermost first, so an op can climb several levels. Only ops
//! directly in a loop region move (not ops nested in an `if` inside the loop), and only
//! pure ones: loads may see stores in the loop, and ops with effects must run as often
//! as written. Because a loop may run zero times, hoisting executes an op that might not
//! have run, so ops that can fault are excluded: integer division and remainder move
//! only with a constant divisor other than 0 and -1.

use crate::canonicalize::const_of;
use crate::fold;
use crate::pass::Pass;
use std::collections::HashSet;
use trident_ir::{BinaryOp, Block, Diagnostic, Effect, Function, Op, OpKind, Value};

/// Loop-invariant code motion (pass name `licm`).
pub struct Licm;

impl Pass for Licm {
    fn name(&self) -> &'static str {
        "licm"
    }

    fn run_on_function(&self, f: &mut Function) -> Result<bool, Diagnostic> {
        let body = f.body;
        Ok(licm_block(f, body))
    }
}

fn licm_block(f: &mut Function, b: Block) -> bool {
    let mut changed = false;
    for op in f.blocks[b].ops.clone() {
        for r in f.ops[op].regions.clone() {
            changed |= licm_block(f, r);
        }
        if matches!(f.ops[op].kind, OpKind::For | OpKind::While) {
            changed |= hoist_from(f, op);
        }
    }
    changed
}

/// Values an op uses from outside itself: its operands and what its regions use from outside.
fn free_values(f: &Function, op: Op) -> Vec<Value> {
    let mut out: Vec<Value> = f.ops[op].operands.to_vec();
    for &r in &f.ops[op].regions {
        f.walk_block(r, &mut |o| {
            out.extend(f.ops[o].operands.iter().copied().filter(|&v| !f.is_defined_within(v, r)));
        });
    }
    out
}

fn may_fault(f: &Function, op: Op) -> bool {
    match f.ops[op].kind {
        OpKind::Binary(BinaryOp::Div | BinaryOp::Rem) => {
            let divisor = f.ops[op].operands[1];
            let Some(d) = f.ty(divisor).elem().num().filter(|d| d.is_int()) else { return false };
            match const_of(f, divisor).and_then(|c| fold::int_value(d, c)) {
                Some(v) => v == 0 || (d.is_signed_int() && v == -1),
                None => true,
            }
        }
        _ => false,
    }
}

fn hoist_from(f: &mut Function, lp: Op) -> bool {
    let regions = f.ops[lp].regions.clone();
    let Some(outer) = f.ops[lp].parent else { return false };
    let mut hoisted = vec![];
    let mut moving = HashSet::new();
    for &r in &regions {
        for op in f.blocks[r].ops.clone() {
            let d = &f.ops[op];
            if d.kind.effect() != Effect::Pure || d.kind.is_terminator() || may_fault(f, op) {
                continue;
            }
            // Defined outside the loop, or by an op that is leaving it too.
            let outside = |v: Value| {
                f.def_op(v).is_some_and(|o| moving.contains(&o))
                    || !regions.iter().any(|&lr| f.is_defined_within(v, lr))
            };
            if free_values(f, op).into_iter().all(outside) {
                hoisted.push(op);
                moving.insert(op);
            }
        }
    }
    if hoisted.is_empty() {
        return false;
    }
    // One edit per block rather than one per op (each would scan the block).
    f.erase_ops(&hoisted);
    f.insert_ops_before(lp, &hoisted);
    debug_assert!(hoisted.iter().all(|&o| f.ops[o].parent == Some(outer)));
    true
}
