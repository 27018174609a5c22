//! Canonicalization: constant folding, algebraic identities, canonical operand order,
//! and simplification of structured control flow with known conditions or trip counts.
//!
//! Rewrites run to a fixed point (bounded). Each round also deletes pure ops whose
//! results became unused, so folded-away constants do not linger.
//!
//! * Constants: float values are rounded to their type (`0.1 : f16` becomes the f16
//!   nearest 0.1) and integers stored canonically, so equal constants look equal.
//! * Folding of elementwise ops, comparisons and casts on constants (see `fold.rs` for
//!   the exact semantics), of shape ops on constants (a constant is a splat, so
//!   `splat`/`broadcast`/`reshape`/`expand_dims`/`trans` of one is a constant), and
//!   of `select` with a constant condition.
//! * Identities: `x+0`, `x-0`, `x*1`, `x/1`, `x|0`, `x^0`, `x<<0`, `x>>0`, `x&-1` give x;
//!   `x*0`, `x&0`, `x%1`, `x-x`, `x^x` give 0 — integers only. Floats only get the
//!   IEEE-exact ones: `x*1.0`, `x/1.0`, `x+(-0.0)`, `x-0.0`. `x&x`, `x|x`, `max(x,x)`,
//!   `min(x,x)` give x; `neg(neg x)` and `not(not x)` give x; `addptr p, 0` gives p;
//!   converts and bitcasts to the same type, identity `trans`/`broadcast`/`reshape` vanish;
//!   chains of shape ops on a splat collapse into one splat.
//! * Commutative ops put a constant operand on the right; `cmp` likewise (flipping the predicate).
//! * `if` with a constant condition is replaced by the taken region; `for` with a known
//!   trip count of 0 by its inits and of 1 by its body; loop-carried values that the body
//!   passes through unchanged, and `if` results both branches yield from outside, are
//!   replaced by the value itself.

use crate::fold;
use crate::pass::Pass;
use std::collections::HashMap;
use trident_ir::edit::ValueMap;
use trident_ir::func::SecondaryMap;
use trident_ir::{
    BinaryOp, Block, CmpPred, Const, DType, Diagnostic, Effect, Function, Op, OpKind, Type, UnaryOp, Value,
};

/// Canonicalization and constant folding (pass name `canonicalize`).
pub struct Canonicalize;

/// Rounds of rewriting before giving up on reaching a fixed point.
const MAX_ROUNDS: usize = 32;

impl Pass for Canonicalize {
    fn name(&self) -> &'static str {
        "canonicalize"
    }

    fn run_on_function(&self, f: &mut Function) -> Result<bool, Diagnostic> {
        let mut changed = false;
        for _ in 0..MAX_ROUNDS {
            let mut round = false;
            let mut rw = Rewriter { map: ValueMap::new(), counts: f.use_counts(), pending: HashMap::new() };
            // Pre-order visits definitions before uses, so replacements recorded in `rw.map`
            // reach every use as the walk gets there, without a walk per replacement.
            for op in f.all_ops() {
                if f.is_attached(op) {
                    for o in f.ops[op].operands.iter_mut() {
                        *o = resolve(&rw.map, *o);
                    }
                    round |= simplify(f, &mut rw, op);
                }
            }
            rw.place_constants(f);
            f.replace_uses(&rw.map);
            round |= remove_dead_pure_ops(f);
            changed |= round;
            if !round {
                break;
            }
        }
        Ok(changed)
    }
}

/// Deletes pure ops none of whose results are used; returns whether any went.
pub fn remove_dead_pure_ops(f: &mut Function) -> bool {
    let mut counts = f.use_counts();
    let mut dead = vec![];
    // Reverse pre-order visits users before the values they use.
    for op in f.all_ops().into_iter().rev() {
        let d = &f.ops[op];
        if d.kind.effect() != Effect::Pure || d.results.is_empty() || d.results.iter().any(|&r| counts[r] > 0) {
            continue;
        }
        let mut inner = vec![op];
        f.walk_region_ops(op, &mut inner);
        for o in inner {
            for &v in &f.ops[o].operands {
                counts[v] = counts[v].saturating_sub(1);
            }
        }
        dead.push(op);
    }
    f.erase_ops(&dead);
    !dead.is_empty()
}

trait WalkRegions {
    fn walk_region_ops(&self, op: Op, out: &mut Vec<Op>);
}

impl WalkRegions for Function {
    /// Every op nested in the regions of `op`.
    fn walk_region_ops(&self, op: Op, out: &mut Vec<Op>) {
        for &r in &self.ops[op].regions {
            self.walk_block(r, &mut |o| out.push(o));
        }
    }
}

/// Replacements made during one round.
struct Rewriter {
    /// Replaced value → its replacement (applied to operands as the walk reaches them).
    map: ValueMap,
    /// Uses at the start of the round (to tell whether a replacement changes anything).
    counts: SecondaryMap<Value, u32>,
    /// New constants to put into block lists at the end of the round: block → (op they go
    /// before → constants). Editing a block list per constant would cost a scan each.
    pending: HashMap<Block, HashMap<Op, Vec<Op>>>,
}

impl Rewriter {
    /// Replaces the results of `op` by `with`. Pure ops are left for the dead-op sweep at the
    /// end of the round (erasing one at a time scans its block); others are erased now.
    fn replace(&mut self, f: &mut Function, op: Op, with: &[Value]) {
        for (&r, &w) in f.ops[op].results.iter().zip(with) {
            if r != w {
                self.map.insert(r, w);
            }
        }
        if f.ops[op].kind.effect() != Effect::Pure {
            f.erase_op(op);
        }
    }

    /// A new constant of type `ty` that will sit right before `at`, with `at`'s location.
    fn constant(&mut self, f: &mut Function, at: Op, c: Const, ty: Type) -> Value {
        let loc = f.ops[at].loc;
        let op = f.new_op(OpKind::Constant(c), &[], &[ty], loc);
        let block = f.ops[at].parent.unwrap_or(f.body);
        // Attached from now on (the walk may look at it); listed in its block at the end.
        f.ops[op].parent = Some(block);
        self.pending.entry(block).or_default().entry(at).or_default().push(op);
        f.ops[op].results[0]
    }

    /// Puts the new constants into their blocks, one rebuild per block.
    fn place_constants(&mut self, f: &mut Function) {
        for (block, mut before) in std::mem::take(&mut self.pending) {
            let old = std::mem::take(&mut f.blocks[block].ops);
            let mut ops = Vec::with_capacity(old.len());
            for op in old {
                if let Some(cs) = before.remove(&op) {
                    ops.extend(cs);
                }
                ops.push(op);
            }
            // Constants whose anchor left the block: the block's start is as good a place.
            let rest: Vec<Op> = before.into_values().flatten().collect();
            ops.splice(0..0, rest);
            f.blocks[block].ops = ops;
        }
    }

    /// Records replacements of values that stay defined (block arguments, results of kept
    /// ops); true when one of them was in use.
    fn redirect(&mut self, pairs: ValueMap) -> bool {
        let mut any = false;
        for (k, v) in pairs {
            if self.counts[k] > 0 && !self.map.contains_key(&k) {
                self.map.insert(k, v);
                any = true;
            }
        }
        any
    }
}

/// Follows `v` through `map` (bounded, in case of a cycle).
fn resolve(map: &ValueMap, mut v: Value) -> Value {
    for _ in 0..64 {
        match map.get(&v) {
            Some(&w) if w != v => v = w,
            _ => break,
        }
    }
    v
}

pub(crate) fn const_of(f: &Function, v: Value) -> Option<Const> {
    let op = f.def_op(v)?;
    match f.ops[op].kind {
        OpKind::Constant(c) if f.ops[op].parent.is_some() => Some(c),
        _ => None,
    }
}

/// A constant of element type `d`, normalised so folding sees the value the type holds.
fn norm_const(f: &Function, v: Value, d: DType) -> Option<Const> {
    fold::normalize(d, const_of(f, v)?)
}

fn replace_with_const(f: &mut Function, rw: &mut Rewriter, op: Op, c: Const) -> bool {
    let ty = f.ty(f.ops[op].results[0]).clone();
    let v = rw.constant(f, op, c, ty);
    rw.replace(f, op, &[v]);
    true
}

fn commutative(op: BinaryOp) -> bool {
    use BinaryOp::*;
    matches!(op, Add | Mul | And | Or | Xor | Max | Min | MaxNan | MinNan)
}

/// One rewrite of `op`, if any applies; returns whether the IR changed.
fn simplify(f: &mut Function, rw: &mut Rewriter, op: Op) -> bool {
    let kind = f.ops[op].kind.clone();
    let operands: Vec<Value> = f.ops[op].operands.to_vec();
    let results: Vec<Value> = f.ops[op].results.to_vec();
    let result_elem = results.first().and_then(|&r| f.ty(r).elem().num());
    match kind {
        OpKind::Constant(c) => {
            let Some(d) = result_elem else { return false };
            match fold::normalize(d, c) {
                Some(n) if n != c => {
                    f.ops[op].kind = OpKind::Constant(n);
                    true
                }
                _ => false,
            }
        }
        OpKind::Binary(b) => simplify_binary(f, rw, op, b, operands[0], operands[1]),
        OpKind::Unary(u) => {
            let a = operands[0];
            let Some(d) = f.ty(a).elem().num() else { return false };
            if let Some(x) = norm_const(f, a, d) {
                return match fold::unary(u, d, x) {
                    Some(r) => replace_with_const(f, rw, op, r),
                    None => false,
                };
            }
            if matches!(u, UnaryOp::Neg | UnaryOp::Not) {
                if let Some(inner) = f.def_op(a) {
                    if f.ops[inner].kind == OpKind::Unary(u) {
                        let x = f.ops[inner].operands[0];
                        rw.replace(f, op, &[x]);
                        return true;
                    }
                }
            }
            false
        }
        OpKind::Cmp(p) => {
            let (a, b) = (operands[0], operands[1]);
            let elem = f.ty(a).elem();
            if let Some(d) = elem.num() {
                if let (Some(x), Some(y)) = (norm_const(f, a, d), norm_const(f, b, d)) {
                    return match fold::cmp(p, d, x, y) {
                        Some(r) => replace_with_const(f, rw, op, Const::Bool(r)),
                        None => false,
                    };
                }
            }
            if a == b && !elem.is_float() {
                let r = matches!(p, CmpPred::Eq | CmpPred::Le | CmpPred::Ge);
                return replace_with_const(f, rw, op, Const::Bool(r));
            }
            if const_of(f, a).is_some() && const_of(f, b).is_none() {
                let swapped = match p {
                    CmpPred::Lt => CmpPred::Gt,
                    CmpPred::Gt => CmpPred::Lt,
                    CmpPred::Le => CmpPred::Ge,
                    CmpPred::Ge => CmpPred::Le,
                    other => other,
                };
                f.ops[op].kind = OpKind::Cmp(swapped);
                f.ops[op].operands.swap(0, 1);
                return true;
            }
            false
        }
        // A mask that is true everywhere masks nothing (a load's `other` then never shows).
        OpKind::Load { .. } if operands.len() >= 2 && const_of(f, operands[1]) == Some(Const::Bool(true)) => {
            while f.ops[op].operands.len() > 1 {
                f.remove_operand(op, 1);
            }
            true
        }
        OpKind::Store { .. } if operands.len() == 3 && const_of(f, operands[2]) == Some(Const::Bool(true)) => {
            f.remove_operand(op, 2);
            true
        }
        OpKind::Select => {
            let (c, a, b) = (operands[0], operands[1], operands[2]);
            if let Some(Const::Bool(k)) = const_of(f, c) {
                rw.replace(f, op, &[if k { a } else { b }]);
                return true;
            }
            if a == b {
                rw.replace(f, op, &[a]);
                return true;
            }
            // select(c, true, false) is c itself when the types agree.
            if (const_of(f, a), const_of(f, b)) == (Some(Const::Bool(true)), Some(Const::Bool(false)))
                && f.ty(c) == f.ty(results[0])
            {
                rw.replace(f, op, &[c]);
                return true;
            }
            false
        }
        OpKind::Splat
        | OpKind::Broadcast
        | OpKind::Reshape { .. }
        | OpKind::ExpandDims { .. }
        | OpKind::Trans { .. } => simplify_shape(f, rw, op, &kind, operands[0], results[0]),
        OpKind::Cast { kind: ck, rounding } => {
            let a = operands[0];
            let (ta, tr) = (f.ty(a).clone(), f.ty(results[0]).clone());
            if ta == tr && matches!(ck, trident_ir::CastKind::Convert | trident_ir::CastKind::Bitcast) {
                rw.replace(f, op, &[a]);
                return true;
            }
            let (Some(from), Some(to)) = (ta.elem().num(), tr.elem().num()) else { return false };
            match norm_const(f, a, from).and_then(|x| fold::cast(ck, rounding, from, to, x)) {
                Some(r) => replace_with_const(f, rw, op, r),
                None => false,
            }
        }
        OpKind::AddPtr => {
            let d = f.ty(operands[1]).elem().num();
            match (d, const_of(f, operands[1])) {
                (Some(d), Some(c)) if fold::int_value(d, c) == Some(0) => {
                    rw.replace(f, op, &[operands[0]]);
                    true
                }
                _ => false,
            }
        }
        OpKind::Fma => {
            // Only f64 has an exact fused multiply-add here; narrower types would round twice.
            if result_elem != Some(DType::F64) {
                return false;
            }
            let cs: Option<Vec<f64>> = operands.iter().map(|&v| const_of(f, v).and_then(fold::float_value)).collect();
            match cs.as_deref() {
                Some(&[x, y, z]) => replace_with_const(f, rw, op, Const::Float(x.mul_add(y, z))),
                _ => false,
            }
        }
        OpKind::If => simplify_if(f, rw, op, operands[0]),
        OpKind::For => simplify_for(f, rw, op, &operands),
        _ => false,
    }
}

fn simplify_binary(f: &mut Function, rw: &mut Rewriter, op: Op, b: BinaryOp, a: Value, c: Value) -> bool {
    use BinaryOp::*;
    let ty = f.ty(a).clone();
    let Some(d) = ty.elem().num() else { return false };
    let (ca, cc) = (norm_const(f, a, d), norm_const(f, c, d));
    if let (Some(x), Some(y)) = (ca, cc) {
        return match fold::binary(b, d, x, y) {
            Some(r) => replace_with_const(f, rw, op, r),
            None => false,
        };
    }
    if ca.is_some() && cc.is_none() && commutative(b) {
        f.ops[op].operands.swap(0, 1);
        return true;
    }
    if d.is_int() {
        let zero = fold::int_const(d, 0);
        let ones = fold::int_const(d, u64::MAX);
        if let Some(y) = cc {
            let v = fold::int_value(d, y);
            let is_ones = y == ones;
            let keep_a = match b {
                Add | Sub | Or | Xor | Shl | Shr => v == Some(0),
                Mul => v == Some(1),
                Div => v == Some(1) && !d.is_bool(),
                And => is_ones,
                _ => false,
            };
            if keep_a {
                rw.replace(f, op, &[a]);
                return true;
            }
            let to_zero = match b {
                Mul | And => v == Some(0),
                Rem => v == Some(1) && !d.is_bool(),
                _ => false,
            };
            if to_zero {
                return replace_with_const(f, rw, op, zero);
            }
            if b == Or && is_ones {
                return replace_with_const(f, rw, op, ones);
            }
        }
        if a == c {
            match b {
                Sub | Xor => return replace_with_const(f, rw, op, zero),
                And | Or | Max | Min => {
                    rw.replace(f, op, &[a]);
                    return true;
                }
                _ => {}
            }
        }
    } else {
        if let Some(Const::Float(y)) = cc {
            let keep_a = match b {
                Add => y == 0.0 && y.is_sign_negative(),
                Sub => y == 0.0 && y.is_sign_positive(),
                Mul | Div => y == 1.0,
                _ => false,
            };
            if keep_a {
                rw.replace(f, op, &[a]);
                return true;
            }
        }
        if a == c && matches!(b, Max | Min | MaxNan | MinNan) {
            rw.replace(f, op, &[a]);
            return true;
        }
    }
    false
}

fn simplify_shape(f: &mut Function, rw: &mut Rewriter, op: Op, kind: &OpKind, a: Value, r: Value) -> bool {
    let rty = f.ty(r).clone();
    if let Some(c) = const_of(f, a) {
        // A constant is the same value everywhere, whatever its shape.
        return replace_with_const(f, rw, op, c);
    }
    let identity = match kind {
        OpKind::Broadcast | OpKind::Reshape { .. } => f.ty(a) == &rty,
        OpKind::Trans { perm } => f.ty(a) == &rty && perm.iter().enumerate().all(|(i, &p)| p as usize == i),
        _ => false,
    };
    if identity {
        rw.replace(f, op, &[a]);
        return true;
    }
    let Some(inner) = f.def_op(a) else { return false };
    let inner_kind = f.ops[inner].kind.clone();
    let x = f.ops[inner].operands.first().copied();
    match (kind, inner_kind, x) {
        // Reshaping a splat is a splat of the new shape.
        (
            OpKind::Broadcast | OpKind::Reshape { .. } | OpKind::ExpandDims { .. } | OpKind::Trans { .. },
            OpKind::Splat,
            Some(x),
        ) => {
            f.ops[op].kind = OpKind::Splat;
            f.ops[op].operands[0] = x;
            true
        }
        (OpKind::Broadcast, OpKind::Broadcast, Some(x)) => {
            f.ops[op].operands[0] = x;
            true
        }
        (OpKind::Reshape { can_reorder: outer }, OpKind::Reshape { can_reorder: inner_reorder }, Some(x)) => {
            f.ops[op].kind = OpKind::Reshape { can_reorder: *outer || inner_reorder };
            f.ops[op].operands[0] = x;
            true
        }
        _ => false,
    }
}

fn simplify_if(f: &mut Function, rw: &mut Rewriter, op: Op, cond: Value) -> bool {
    if let Some(Const::Bool(k)) = const_of(f, cond) {
        let region = f.ops[op].regions[if k { 0 } else { 1 }];
        let vals = f.inline_block_before(region, op, &[]);
        rw.replace(f, op, &vals);
        return true;
    }
    // Results that both branches yield from outside the `if` are that value.
    let regions = f.ops[op].regions.to_vec();
    let yields: Vec<Vec<Value>> = regions.iter().map(|&r| terminator_operands(f, r)).collect();
    let mut map = ValueMap::new();
    for (i, &res) in f.ops[op].results.iter().enumerate() {
        let (Some(&y0), Some(&y1)) = (yields[0].get(i), yields[1].get(i)) else { continue };
        if y0 == y1 && !regions.iter().any(|&r| f.is_defined_within(y0, r)) {
            map.insert(res, y0);
        }
    }
    rw.redirect(map)
}

fn terminator_operands(f: &Function, block: trident_ir::Block) -> Vec<Value> {
    f.terminator(block).map(|t| f.ops[t].operands.to_vec()).unwrap_or_default()
}

fn simplify_for(f: &mut Function, rw: &mut Rewriter, op: Op, operands: &[Value]) -> bool {
    let body = f.ops[op].regions[0];
    let inits = &operands[3..];
    let lb_ty = f.ty(operands[0]).clone();
    if let Some(d) = lb_ty.elem().num() {
        let bounds: Option<Vec<i128>> =
            operands[..3].iter().map(|&v| const_of(f, v).and_then(|c| fold::int_value(d, c))).collect();
        if let Some(&[lb, ub, step]) = bounds.as_deref() {
            if step > 0 {
                let trips = if ub <= lb { 0 } else { (ub - lb + step - 1) / step };
                if trips == 0 {
                    rw.replace(f, op, inits);
                    return true;
                }
                if trips == 1 {
                    let mut args = vec![operands[0]];
                    args.extend_from_slice(inits);
                    let vals = f.inline_block_before(body, op, &args);
                    rw.replace(f, op, &vals);
                    return true;
                }
            }
        }
    }
    // Loop-carried values the body yields back unchanged never change.
    let yields = terminator_operands(f, body);
    let args = f.blocks[body].args.clone();
    let results = f.ops[op].results.to_vec();
    let mut map = ValueMap::new();
    for (i, &init) in inits.iter().enumerate() {
        if yields.get(i) == args.get(i + 1) {
            map.insert(args[i + 1], init);
            map.insert(results[i], init);
        }
    }
    rw.redirect(map)
}
