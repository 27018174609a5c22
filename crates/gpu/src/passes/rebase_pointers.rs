//! Loop-carried pointer tensors become one scalar base (pass `gpu-rebase-pointers`).
//!
//! The usual loop of a tiled kernel carries a tensor of pointers and advances every
//! element by the same amount each iteration:
//!
//! ```text
//! a_ptrs = a + rows[:, None] * stride_am + ks[None, :]      // before the loop
//! for k ...:
//!     x = tl.load(a_ptrs, mask)
//!     a_ptrs += BLOCK_K * stride_ak                         // one scalar for every element
//! ```
//!
//! Carried as it is, that is one 64-bit pointer per element a thread holds, live across
//! the whole loop: 32 elements of a 128×32 tile on 4 warps are 64 registers per operand.
//! Where the loads cannot be vectorised (a matmul whose sizes are not multiples of 8,
//! which the pipeliner leaves alone) that is what pushed the ragged matmul over 255
//! registers (bench/STATIC.md, "The ragged matmul's spills").
//!
//! The rewrite: when the initial value is built from a splat of one scalar pointer `b`
//! (`addptr` of offsets, `broadcast`, `expand_dims`) and the loop's yield adds a value
//! uniform over the tensor (a splat or a constant) to the carried tensor, the loop carries
//! the scalar `b` instead, advanced by that value, and the body rebuilds the tensor from it
//! with the same ops (their other operands — the offsets — are defined before the loop and
//! stay live across it, as the program's own 32-bit values).
//!
//! **Exact, for every input.** `addptr p, o` is `p + sext(o) * sizeof(T)` in 64-bit
//! wrapping arithmetic (the interpreter's and the emitter's definition), and additions
//! modulo 2^64 commute: `((b + X) + Y) + Δ1 + ... + Δk = ((b + Δ1 + ... + Δk) + X) + Y`
//! element by element, whatever the offsets' values or signs. `broadcast` and
//! `expand_dims` move elements without changing them, so they commute with adding a
//! uniform amount. No offset is narrowed and no sum is formed in a narrower type than the
//! program's: nothing needs proving to fit in 32 bits — the offsets that stay live are the
//! values the program already computed in its own (here 32-bit) integer type. Only chains
//! whose offsets are at most 32 bits wide are rewritten (with 64-bit offsets the live
//! offsets would take as many registers as the pointers they replace).
//!
//! The cost: the rebuilt pointers are recomputed every iteration (an `IMAD.WIDE` per
//! element and chain step) where the carried ones were advanced by one 64-bit add; in
//! exchange the carried state of the loop shrinks from two registers per element to two
//! per loop, and the offsets (one 32-bit register per distinct value) are loop-invariant.

use crate::analysis::AxisAnalysis;
use crate::layout::linear::dim_shifts;
use crate::layout::{distributed, LinearLayout};
use crate::machine::vector::vector_width_of;
use trident_ir::edit::ValueMap;
use trident_ir::{BinaryOp, Block, Const, Elem, Function, Op, OpKind, Type, Value};

/// Rewrites every eligible loop-carried pointer tensor; returns how many.
pub fn rebase_pointers(f: &mut Function) -> usize {
    let fors: Vec<Op> = f.all_ops().into_iter().filter(|&op| matches!(f.ops[op].kind, OpKind::For)).collect();
    let mut n = 0;
    for lp in fors {
        let carried = f.ops[lp].operands.len().saturating_sub(3);
        for i in 0..carried {
            if rebase(f, lp, i) {
                n += 1;
            }
        }
    }
    n
}

/// How a pointer tensor is built from one scalar pointer.
struct Chain {
    /// The scalar pointer splatted.
    base: Value,
    /// Uniform amounts (a splat or a constant) added to the tensor on the way, in order:
    /// they are added to the scalar instead.
    steps: Vec<(Uniform, Elem)>,
    /// The other ops, innermost (the splat) first; each reads the previous one's result
    /// as its operand 0.
    ops: Vec<Op>,
    /// Every op of the chain, outermost first (to erase what becomes dead).
    all: Vec<Op>,
}

/// How `v` is built from a splat of a scalar pointer; `None` when it is not built that way.
fn chain_from_splat(f: &Function, v: Value) -> Option<Chain> {
    let mut ops = vec![];
    let mut steps = vec![];
    let mut all = vec![];
    let mut cur = v;
    loop {
        let op = f.def_op(cur)?;
        let d = &f.ops[op];
        all.push(op);
        match d.kind {
            OpKind::Splat => {
                let b = d.operands[0];
                if !f.ty(b).is_scalar() || f.ty(b).elem().pointee().is_none() {
                    return None;
                }
                ops.push(op);
                ops.reverse();
                steps.reverse();
                return Some(Chain { base: b, steps, ops, all });
            }
            OpKind::AddPtr => {
                // Offsets wider than 32 bits would take as many registers as the pointers.
                let off = f.ty(d.operands[1]).elem();
                if !off.is_int() || off.num().is_none_or(|t| t.bits() > 32) {
                    return None;
                }
                match uniform_scalar(f, d.operands[1]) {
                    Some(s) => steps.push((s, off)),
                    None => ops.push(op),
                }
                cur = d.operands[0];
            }
            OpKind::Broadcast | OpKind::ExpandDims { .. } => {
                ops.push(op);
                cur = d.operands[0];
            }
            _ => return None,
        }
    }
}

/// A value every element of a tensor equals, as scalar ops would compute it.
#[derive(Clone, Debug)]
enum Uniform {
    /// An existing scalar (the operand of a splat).
    Val(Value),
    /// An integer constant.
    Const(Const),
    /// An integer `add`/`sub`/`mul` of two uniform tensors (`p -= BLOCK * s` is
    /// `addptr p, (0 - splat(BLOCK * s))`): the same wrapping operation on the scalars.
    Bin(BinaryOp, Box<Uniform>, Box<Uniform>),
}

/// What every element of `v` equals, when `v` is a splat (through broadcasts), an integer
/// constant, or integer arithmetic of those.
fn uniform_scalar(f: &Function, v: Value) -> Option<Uniform> {
    let op = f.def_op(v)?;
    let d = &f.ops[op];
    match &d.kind {
        OpKind::Splat if f.ty(d.operands[0]).is_scalar() => Some(Uniform::Val(d.operands[0])),
        OpKind::Broadcast => uniform_scalar(f, d.operands[0]),
        OpKind::Constant(c @ Const::Int(_)) => Some(Uniform::Const(*c)),
        OpKind::Binary(b @ (BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul)) if f.ty(v).elem().is_int() => {
            let x = uniform_scalar(f, d.operands[0])?;
            let y = uniform_scalar(f, d.operands[1])?;
            Some(Uniform::Bin(*b, Box::new(x), Box::new(y)))
        }
        _ => None,
    }
}

/// Rewrites the `i`-th carried value of loop `lp` if it is eligible.
fn rebase(f: &mut Function, lp: Op, i: usize) -> bool {
    let body = f.ops[lp].regions[0];
    let Some(term) = f.terminator(body) else { return false };
    let arg = f.blocks[body].args[i + 1];
    let init = f.ops[lp].operands[3 + i];
    let res = f.ops[lp].results[i];
    let ty = f.ty(arg).clone();
    if ty.is_scalar() || ty.elem().pointee().is_none() {
        return false;
    }
    // The yield advances the carried tensor by one uniform amount.
    let Some(&y) = f.ops[term].operands.get(i) else { return false };
    let Some(inc) = f.def_op(y) else { return false };
    if !matches!(f.ops[inc].kind, OpKind::AddPtr) || f.ops[inc].operands[0] != arg || f.ops[inc].parent != Some(body) {
        return false;
    }
    let step = f.ops[inc].operands[1];
    let Some(delta) = uniform_scalar(f, step) else { return false };
    // The initial value: a scalar pointer splat, then offsets and reshapes.
    let Some(chain) = chain_from_splat(f, init) else { return false };
    let scalar_ty = f.ty(chain.base).clone();
    if scalar_ty.elem() != ty.elem() {
        return false;
    }
    if !pays(f, &chain, arg, inc, body) {
        return false;
    }

    // The uniform steps of the initial value go to the scalar, before the loop.
    let mut base = chain.base;
    for (step, ety) in chain.steps.iter().cloned() {
        let loc = f.ops[lp].loc;
        let s = scalar_of(f, step, ety, lp, loc);
        let a = f.new_op(OpKind::AddPtr, &[base, s], std::slice::from_ref(&scalar_ty), loc);
        f.insert_op_before(lp, a);
        base = f.result(a, 0);
    }

    // Carry the scalar: its type on the block argument and the loop's result, the base as init.
    f.values[arg].ty = scalar_ty.clone();
    f.values[res].ty = scalar_ty.clone();
    f.ops[lp].operands[3 + i] = base;

    // The body rebuilds the tensor from the carried base, right before its first use (not
    // at the start of the body: on sm_90a the pipelined prefetch follows the dots, and
    // pointers rebuilt before them would be live across the accumulator's registers).
    let first_use = f.blocks[body].ops.iter().copied().find(|&o| uses_within(f, o, arg));
    let rebuilt = rebuild(f, &chain.ops, arg, first_use.map_or(Where::End(body), Where::Before), true);
    let mut map = ValueMap::new();
    map.insert(arg, rebuilt.value);
    replace_uses_except(f, body, &map, &rebuilt.ops);

    // The yield advances the base by the uniform step.
    let loc = f.ops[inc].loc;
    let delta = scalar_of(f, delta, f.ty(step).elem(), term, loc);
    let next = f.new_op(OpKind::AddPtr, &[arg, delta], &[scalar_ty], loc);
    f.insert_op_before(term, next);
    f.ops[term].operands[i] = f.result(next, 0);
    erase_if_dead(f, inc);
    for &op in rebuilt.ops.iter().rev() {
        erase_if_dead(f, op);
    }

    // After the loop, the tensor again (only when something reads it).
    if f.use_counts()[res] > 0 {
        let after = rebuild(f, &chain.ops, res, Where::After(lp), false);
        let mut map = ValueMap::new();
        map.insert(res, after.value);
        let outer = f.ops[lp].parent.expect("a loop sits in a block");
        replace_uses_except(f, outer, &map, &after.ops);
    }
    // The original chain is dead unless something else reads it.
    for &op in &chain.all {
        erase_if_dead(f, op);
    }
    true
}

/// Whether carrying the scalar takes fewer registers per thread than carrying the tensor.
/// Emission keeps, of a pointer tensor, the registers of each vector's first element (the
/// others are dead): carried, those are a 64-bit pair each. Rebuilt, the loop keeps the
/// base's pair and, of each offset of the chain, the distinct 32-bit values those same
/// registers need. A pipelined matmul's 16-byte copies need two pointers per operand and
/// thread — fewer registers than the row and column offsets they would be rebuilt from;
/// a ragged matmul's one-element loads need 32 pointers, rebuilt from 32 row offsets and
/// one column offset.
fn pays(f: &Function, chain: &Chain, arg: Value, inc: Op, body: Block) -> bool {
    let axis = AxisAnalysis::run(f);
    let Some(l) = linear(f, arg) else { return false };
    let bytes = f.ty(arg).elem().pointee().map_or(1, |t| t.size_bytes() as u32);
    // The narrowest vector among the accesses through the tensor (1 for any other use but
    // the increment, which goes away).
    let mut vec = usize::MAX;
    f.walk_block(body, &mut |o| {
        let d = &f.ops[o];
        let Some(k) = d.operands.iter().position(|&v| v == arg) else { return };
        let w = match (&d.kind, k) {
            _ if o == inc => return,
            (OpKind::Load { .. }, 0) => vector_width_of(&axis, arg, d.operands.get(1).copied(), &l, bytes),
            (OpKind::Store { .. }, 0) => vector_width_of(&axis, arg, d.operands.get(2).copied(), &l, bytes),
            (OpKind::AsyncCopy, 1) => vector_width_of(&axis, arg, d.operands.get(2).copied(), &l, bytes),
            _ => 1,
        };
        vec = vec.min(w);
    });
    if vec == usize::MAX {
        return false;
    }
    // Register bits above the vector's: those that tell the kept registers apart.
    let leader_bits = &l.reg[vec.trailing_zeros() as usize..];
    let shifts = dim_shifts(&l.shape);
    let rank = l.shape.len();
    // How many of the kept registers differ in a value whose runs of equal elements are
    // `same[d]` long along each dim of the tensor.
    let differ = |same: &[u64]| -> usize {
        let mut mask = 0u64;
        for d in 0..rank {
            let c = same[d].min(l.shape[d] as u64);
            if c > 1 && c.is_power_of_two() {
                mask |= (c - 1) << shifts[d];
            }
        }
        1 << leader_bits.iter().filter(|&&b| b & !mask != 0).count()
    };
    let carried = 2 * differ(&vec![1; rank]);
    // Each offset's constancy, seen in the final tensor's dims: dims the chain adds later
    // (expand_dims) or broadcasts over are constant for it.
    let mut rebuilt = 2;
    for (k, &op) in chain.ops.iter().enumerate() {
        if !matches!(f.ops[op].kind, OpKind::AddPtr) {
            continue;
        }
        let o = f.ops[op].operands[1];
        let info = axis.of(f, o);
        let oshape = f.ty(o).shape().to_vec();
        // The final dim each of `o`'s dims becomes.
        let mut dims: Vec<usize> = (0..oshape.len()).collect();
        for &later in &chain.ops[k + 1..] {
            if let OpKind::ExpandDims { axis: a } = f.ops[later].kind {
                for d in dims.iter_mut() {
                    if *d >= a as usize {
                        *d += 1;
                    }
                }
            }
        }
        let mut same = vec![u64::MAX; rank];
        for (i, &d) in dims.iter().enumerate() {
            if d < rank && oshape[i] > 1 {
                same[d] = info.constancy.get(i).copied().unwrap_or(1);
            }
        }
        rebuilt += differ(&same);
    }
    rebuilt < carried
}

fn linear(f: &Function, v: Value) -> Option<LinearLayout> {
    let ty = f.ty(v);
    distributed(&f.layouts, ty.layout()?, ty.shape()).ok()
}

/// A uniform amount as a scalar value of type `ety`: the splatted scalar, or the ops
/// computing it created right before `before`.
fn scalar_of(f: &mut Function, s: Uniform, ety: Elem, before: Op, loc: trident_ir::Loc) -> Value {
    let (kind, operands) = match s {
        Uniform::Val(v) => return v,
        Uniform::Const(c) => (OpKind::Constant(c), vec![]),
        Uniform::Bin(b, x, y) => {
            let x = scalar_of(f, *x, ety, before, loc);
            let y = scalar_of(f, *y, ety, before, loc);
            (OpKind::Binary(b), vec![x, y])
        }
    };
    let k = f.new_op(kind, &operands, &[Type::Scalar(ety)], loc);
    f.insert_op_before(before, k);
    f.result(k, 0)
}

enum Where {
    /// Right before an op.
    Before(Op),
    /// At the end of a block (before its terminator).
    End(Block),
    /// Right after an op.
    After(Op),
}

struct Rebuilt {
    value: Value,
    ops: Vec<Op>,
}

/// Clones `chain` (a splat, then ops reading the previous result as operand 0) with
/// `base` in place of the splatted scalar, at `at`. With `remat`, offsets computed
/// cheaply from scalars and ranges (see [`cheap`]) are recomputed there too, so that
/// only scalars stay live across the loop: the 32 row offsets of a ragged matmul's
/// operand are 32 registers for the whole loop, or one multiply-add each next to the
/// load that needs them.
fn rebuild(f: &mut Function, chain: &[Op], base: Value, at: Where, remat: bool) -> Rebuilt {
    let mut ops = vec![];
    let mut prev = base;
    let mut memo = ValueMap::new();
    for &op in chain {
        let c = f.clone_op(op, &mut ValueMap::new());
        f.ops[c].operands[0] = prev;
        if remat && matches!(f.ops[op].kind, OpKind::AddPtr) {
            let o = f.ops[op].operands[1];
            if cheap(f, o, CHEAP_DEPTH) {
                f.ops[c].operands[1] = clone_tree(f, o, &mut memo, &mut ops);
            }
        }
        prev = f.result(c, 0);
        ops.push(c);
    }
    match at {
        Where::After(a) => {
            for &c in ops.iter().rev() {
                f.insert_op_after(a, c);
            }
        }
        Where::Before(b) => f.insert_ops_before(b, &ops),
        Where::End(body) => match f.terminator(body) {
            Some(t) => f.insert_ops_before(t, &ops),
            None => {
                for &c in &ops {
                    f.append_op(body, c);
                }
            }
        },
    }
    Rebuilt { value: prev, ops }
}

/// How deep an offset's computation may be to be recomputed in the loop.
const CHEAP_DEPTH: u32 = 8;

/// Whether tensor `v` is computed from scalars, constants and ranges by integer `add`,
/// `sub`, `mul`, `shl`, splats and reshapes (`expand_dims`, `broadcast`): one ALU
/// instruction per register and op, nothing read from memory, no other tensor kept live.
fn cheap(f: &Function, v: Value, depth: u32) -> bool {
    if f.ty(v).is_scalar() {
        return true;
    }
    let Some(op) = f.def_op(v) else { return false };
    if depth == 0 || f.ops[op].results.len() != 1 {
        return false;
    }
    let d = &f.ops[op];
    match &d.kind {
        OpKind::Arange { .. } | OpKind::Constant(_) => true,
        OpKind::Splat => f.ty(d.operands[0]).is_scalar(),
        OpKind::ExpandDims { .. } | OpKind::Broadcast => cheap(f, d.operands[0], depth - 1),
        OpKind::Binary(BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Shl) if f.ty(v).elem().is_int() => {
            d.operands.iter().all(|&o| cheap(f, o, depth - 1))
        }
        _ => false,
    }
}

/// Clones the tensor ops computing `v` (a [`cheap`] value) into `ops`, operands first;
/// scalars are used as they are.
fn clone_tree(f: &mut Function, v: Value, memo: &mut ValueMap, ops: &mut Vec<Op>) -> Value {
    if f.ty(v).is_scalar() {
        return v;
    }
    if let Some(&w) = memo.get(&v) {
        return w;
    }
    let op = f.def_op(v).expect("a cheap tensor has a defining op");
    let mut map = ValueMap::new();
    for o in f.ops[op].operands.clone() {
        let w = clone_tree(f, o, memo, ops);
        map.insert(o, w);
    }
    let c = f.clone_op(op, &mut map);
    ops.push(c);
    let w = f.result(c, 0);
    memo.insert(v, w);
    w
}

/// Replaces uses in `block` (and nested regions) by `map`, except in the ops `keep`.
fn replace_uses_except(f: &mut Function, block: Block, map: &ValueMap, keep: &[Op]) {
    let mut ops = vec![];
    f.walk_block(block, &mut |o| ops.push(o));
    for o in ops {
        if keep.contains(&o) {
            continue;
        }
        for v in f.ops[o].operands.iter_mut() {
            if let Some(&w) = map.get(v) {
                *v = w;
            }
        }
    }
}

/// Whether `op` or an op in its regions reads `v`.
fn uses_within(f: &Function, op: Op, v: Value) -> bool {
    let mut uses = f.ops[op].operands.contains(&v);
    for &r in &f.ops[op].regions {
        f.walk_block(r, &mut |x| uses |= f.ops[x].operands.contains(&v));
    }
    uses
}

fn erase_if_dead(f: &mut Function, op: Op) {
    if f.ops[op].parent.is_none() {
        return;
    }
    let uses = f.use_counts();
    if f.ops[op].results.iter().all(|&r| uses[r] == 0) {
        f.erase_op(op);
    }
}
