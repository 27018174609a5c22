//! Removal of redundant layout conversions.
//!
//! * A conversion to the layout its operand already has is dropped; a conversion of a
//!   conversion converts the original value.
//! * A conversion of a cheap value (constants, ranges, splats and elementwise /
//!   broadcast arithmetic on them, e.g. address computations) is replaced by
//!   recomputing the value in the wanted layout, right after the original definition
//!   (so loop-invariant values stay outside loops).
//! * Dead pure ops are then deleted.

use std::collections::HashMap;
use trident_ir::{Effect, Function, Layout, LayoutId, Op, OpKind, Value, ValueDef};

/// Runs the rewrites; returns the number of conversions removed.
pub fn remove_converts(f: &mut Function) -> usize {
    let mut removed = 0;
    let mut memo: HashMap<(Value, LayoutId), Value> = HashMap::new();
    loop {
        let converts: Vec<Op> =
            f.all_ops().into_iter().filter(|&op| matches!(f.ops[op].kind, OpKind::ConvertLayout)).collect();
        let mut changed = false;
        for op in converts {
            if f.ops[op].parent.is_none() {
                continue;
            }
            let src = f.ops[op].operands[0];
            let res = f.ops[op].results[0];
            let Some(want) = f.ty(res).layout() else { continue };
            if f.ty(src).layout() == Some(want) {
                f.replace_all_uses(res, src);
                f.detach_op(op);
                removed += 1;
                changed = true;
                continue;
            }
            if let ValueDef::Result(def, _) = f.values[src].def {
                if matches!(f.ops[def].kind, OpKind::ConvertLayout) {
                    f.ops[op].operands[0] = f.ops[def].operands[0];
                    changed = true;
                    continue;
                }
            }
            if cheap(f, src, 0) {
                if let Some(v) = remat(f, src, want, &mut memo) {
                    f.replace_all_uses(res, v);
                    f.detach_op(op);
                    removed += 1;
                    changed = true;
                }
                continue;
            }
            if sink_through_broadcast(f, op) {
                changed = true;
                continue;
            }
            if hoist_out_of_loops(f, op) {
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    dce(f);
    removed
}

/// `convert(broadcast(x))` → `broadcast(convert(x))` and `convert(expand_dims(y))` →
/// `expand_dims(convert(y))`: the data moved is the small operand's.
fn sink_through_broadcast(f: &mut Function, op: Op) -> bool {
    let src = f.ops[op].operands[0];
    let res = f.ops[op].results[0];
    let Some(want) = f.ty(res).layout() else { return false };
    let ValueDef::Result(def, _) = f.values[src].def else { return false };
    let d = f.ops[def].clone();
    let inner_layout = match d.kind {
        OpKind::Broadcast => want,
        OpKind::ExpandDims { axis } => f.intern_layout(Layout::Slice { dim: axis, parent: want }),
        _ => return false,
    };
    let x = d.operands[0];
    let xt = f.ty(x).clone();
    if !xt.is_tensor() {
        return false;
    }
    let loc = f.ops[op].loc;
    let c = f.new_op(OpKind::ConvertLayout, &[x], &[xt.with_layout(Some(inner_layout))], loc);
    f.insert_op_before(op, c);
    let cx = f.ops[c].results[0];
    let rt = f.ty(res).clone();
    let b = f.new_op(d.kind.clone(), &[cx], &[rt], d.loc);
    f.insert_op_before(op, b);
    let nv = f.ops[b].results[0];
    f.replace_all_uses(res, nv);
    f.detach_op(op);
    true
}

/// Moves a conversion of a loop-invariant value in front of the loop.
fn hoist_out_of_loops(f: &mut Function, op: Op) -> bool {
    let src = f.ops[op].operands[0];
    let mut moved = false;
    while let Some(parent) = f.parent_op(op) {
        if !matches!(f.ops[parent].kind, OpKind::For | OpKind::While) {
            break;
        }
        // Defined inside the loop (in one of its regions, at any depth)?
        let mut inside = false;
        let mut b = f.defining_block(src);
        while let Some(blk) = b {
            if f.ops[parent].regions.contains(&blk) {
                inside = true;
                break;
            }
            b = f.blocks[blk].parent.and_then(|p| f.ops[p].parent);
        }
        if inside {
            break;
        }
        f.detach_op(op);
        f.insert_op_before(parent, op);
        moved = true;
    }
    moved
}

fn cheap(f: &Function, v: Value, depth: u32) -> bool {
    if depth > 16 {
        return false;
    }
    match f.values[v].def {
        ValueDef::Arg(..) => !f.ty(v).is_tensor(),
        ValueDef::Result(op, _) => {
            let d = &f.ops[op];
            if d.parent.is_none() {
                return false;
            }
            match &d.kind {
                OpKind::Constant(_) | OpKind::Arange { .. } | OpKind::ProgramId { .. } | OpKind::NumPrograms { .. } => {
                    true
                }
                OpKind::Splat => true,
                k if k.is_elementwise()
                    || matches!(
                        k,
                        OpKind::Broadcast
                            | OpKind::ExpandDims { .. }
                            | OpKind::MultipleOf { .. }
                            | OpKind::MaxContiguous { .. }
                            | OpKind::MaxConstancy { .. }
                            | OpKind::ConvertLayout
                    ) =>
                {
                    d.results.len() == 1 && d.operands.iter().all(|&o| cheap(f, o, depth + 1))
                }
                _ => false,
            }
        }
    }
}

/// `v` recomputed in layout `l` (a clone of its cheap definition chain).
fn remat(f: &mut Function, v: Value, l: LayoutId, memo: &mut HashMap<(Value, LayoutId), Value>) -> Option<Value> {
    let t = f.ty(v).clone();
    if !t.is_tensor() || t.layout() == Some(l) {
        return Some(v);
    }
    if let Some(&c) = memo.get(&(v, l)) {
        if f.defining_block(c).is_some() {
            return Some(c);
        }
    }
    let ValueDef::Result(op, _) = f.values[v].def else { return None };
    let d = f.ops[op].clone();
    let mut operands = vec![];
    for &o in &d.operands {
        let ot = f.ty(o).clone();
        let nl = if !ot.is_tensor() {
            None
        } else {
            match &d.kind {
                OpKind::ExpandDims { axis } => Some(f.intern_layout(Layout::Slice { dim: *axis, parent: l })),
                _ => Some(l),
            }
        };
        let nv = match nl {
            None => o,
            Some(nl) => remat(f, o, nl, memo)?,
        };
        operands.push(nv);
    }
    if matches!(d.kind, OpKind::ConvertLayout) {
        return Some(operands[0]);
    }
    let nt = t.with_layout(Some(l));
    let c = f.new_op(d.kind.clone(), &operands, &[nt], d.loc);
    // Right after the original (its operands' clones come right after theirs, hence before it).
    let last_operand_def = operands
        .iter()
        .filter_map(|&o| f.def_op(o))
        .filter(|&o| f.ops[o].parent == d.parent)
        .max_by_key(|&o| f.position(o));
    match last_operand_def {
        Some(after) if f.position(after) > f.position(op) => f.insert_op_after(after, c),
        _ => f.insert_op_after(op, c),
    }
    let nv = f.ops[c].results[0];
    memo.insert((v, l), nv);
    Some(nv)
}

/// Deletes pure ops whose results are unused, until none is left.
pub fn dce(f: &mut Function) {
    loop {
        let uses = f.use_counts();
        let dead: Vec<Op> = f
            .all_ops()
            .into_iter()
            .filter(|&op| {
                let d = &f.ops[op];
                d.kind.effect() == Effect::Pure && d.regions.is_empty() && d.results.iter().all(|&r| uses[r] == 0)
            })
            .collect();
        if dead.is_empty() {
            break;
        }
        for op in dead {
            f.detach_op(op);
        }
    }
}
