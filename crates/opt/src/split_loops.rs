//! Loop splitting at mask boundaries (pass `split-loops`).
//!
//! A `for` whose body compares a tensor that moves with the induction variable against one
//! that does not — attention's causal mask `offs_m[:, None] >= offs_n[None, :]`, a bounds mask
//! `offs_n < N_CTX`, with `offs_n = start_n + tl.arange(0, BLOCK_N)` — has that comparison
//! true in every element for a first run of iterations: all of them but the diagonal blocks
//! of causal attention, all but the ragged last block of a bounds mask. The pass runs those
//! iterations in a copy of the loop in which the comparison is the constant `true` (then
//! `canonicalize` drops the `select`s, `and`s and load/store masks it fed), and the rest in
//! the original loop, which starts where the copy stopped and takes its results as the
//! initial values of its carried values. Triton's attention tutorial splits its loop by hand
//! the same way (its "stages"); here any kernel gets it.
//!
//! **What is recognised.** A comparison `X pred Y` directly in the loop body, of `i32` tensors
//! or scalars, one side *moving* — `splat(iv)` plus non-negative constant offsets (`arange`
//! with `start >= 0`, non-negative constants), through `expand_dims`/`broadcast` — and the
//! other *fixed*: a scalar defined outside the loop (an `i32`), splatted, plus non-negative
//! constant offsets. Every element of the moving side is `iv + r` with `r` in `[lo, hi]`, of
//! the fixed side `s + r'` with `r'` in `[lo', hi']`; the comparison holds everywhere when
//! `iv <= T`: for `X < Y` (X moving) `T = s + lo' - hi - 1`, `X <= Y` `T = s + lo' - hi`
//! (`Y > X`, `Y >= X` the same). Comparisons that hold only for late iterations (`X >= Y` with
//! X moving) are not split on. The loop's step must be a positive constant.
//!
//! **Exact for every input.** The analysis is arithmetic on integers, the program's on `i32`
//! that wraps. They agree while no element wraps: the moving side's `iv + hi <= 2^31 - 1`
//! (another bound on `T`), the fixed side's `s + hi' <= 2^31 - 1` (checked at run time: if it
//! fails, the first loop runs no iteration); with non-negative offsets nothing can go below
//! `-2^31` that did not start there. The threshold and the split point are computed in `i64`
//! before the loop: `T = min` over the comparisons, iterations `lb + k * step <= T` number
//! `c = T >= lb ? (T - lb) / step + 1 : 0`, and the first loop ends at `min(lb + c * step, ub)`
//! (on the iteration lattice, or `ub` itself).
//!
//! A split loop carries `loop_split = true`, so running the pass again changes nothing;
//! warp-specialized loops are left alone (their schedule is the point).
//!
//! **Opt-in** (`SPLIT_LOOPS_TILE_PIPELINE`; the runtime's `TRIDENT_SPLIT_LOOPS=1`). Measured on
//! the emulators (2026-11-29, `kernels/flash_attention.py`, Z1 H8 N1024 D64, 64×64 blocks,
//! 4 warps): the unmasked loop has 10–11% fewer SASS instructions (the 34 `SEL` and most
//! `ISETP` of the masks gone), and the PTX emulator models the launch 3–8% faster (causal
//! sm_90a 23.16 → 21.27 µs); but the SASS emulator has sm_80 9–16% slower (per CTA — it models no
//! occupancy; not understood: with `H` specialized to 1, a slightly different kernel, the
//! split ties, 9.82 vs 9.77 µs) and sm_90a 8–9% faster, and on sm_90a `ptxas` allocates 144
//! registers instead of 124 — the unmasked loop
//! itself reaches R141 (the single masked loop R120, the split's masked one R133): without
//! the masks `ptxas` schedules it with more in flight — which lowers the CTAs an SM can
//! hold. A GPU decides.

use crate::canonicalize::const_of;
use crate::pass::Pass;
use trident_core::DType;
use trident_ir::discardable::LOOP_SPLIT;
use trident_ir::edit::ValueMap;
use trident_ir::{
    Attr, BinaryOp, CastKind, CmpPred, Const, Diagnostic, Elem, Function, Loc, Op, OpKind, Rounding, Type, Value,
};

/// Loop splitting at mask boundaries (pass name `split-loops`).
pub struct SplitLoops;

impl Pass for SplitLoops {
    fn name(&self) -> &'static str {
        "split-loops"
    }

    fn run_on_function(&self, f: &mut Function) -> Result<bool, Diagnostic> {
        let mut changed = false;
        for op in f.all_ops() {
            if matches!(f.ops[op].kind, OpKind::For) && f.ops[op].parent.is_some() {
                changed |= split(f, op);
            }
        }
        Ok(changed)
    }
}

/// A side of a comparison: `base + r`, `r` in `[lo, hi]` (non-negative constants).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Side {
    base: Option<Value>,
    lo: i64,
    hi: i64,
}

const I32_MAX: i64 = i32::MAX as i64;

fn is_i32(f: &Function, v: Value) -> bool {
    f.ty(v).elem().num() == Some(DType::I32)
}

/// `v` as a [`Side`], if it has that shape (module docs); `depth` bounds the walk.
fn side(f: &Function, v: Value, depth: u32) -> Option<Side> {
    if depth > 16 || !is_i32(f, v) {
        return None;
    }
    if let Some(c) = const_of(f, v) {
        let Const::Int(k) = c else { return None };
        return (k >= 0).then_some(Side { base: None, lo: k, hi: k });
    }
    let Some(op) = f.def_op(v) else {
        // A block argument: a base (the induction variable, or a fixed scalar).
        return f.ty(v).is_scalar().then_some(Side { base: Some(v), lo: 0, hi: 0 });
    };
    let d = &f.ops[op];
    match d.kind {
        OpKind::Arange { start, end } if start >= 0 && end > start => {
            Some(Side { base: None, lo: start as i64, hi: end as i64 - 1 })
        }
        OpKind::Splat | OpKind::ExpandDims { .. } | OpKind::Broadcast => side(f, d.operands[0], depth + 1),
        OpKind::Binary(BinaryOp::Add) => {
            let (a, b) = (side(f, d.operands[0], depth + 1)?, side(f, d.operands[1], depth + 1)?);
            if a.base.is_some() && b.base.is_some() {
                return None;
            }
            Some(Side { base: a.base.or(b.base), lo: a.lo + b.lo, hi: a.hi.checked_add(b.hi)? })
        }
        // Any other scalar: a base if it is fixed (the caller checks where it is defined).
        _ if f.ty(v).is_scalar() => Some(Side { base: Some(v), lo: 0, hi: 0 }),
        _ => None,
    }
}

/// A bound `iv <= fixed + k` (`fixed` a scalar defined outside the loop, or none), with the
/// fixed side's overflow guard `fixed + guard <= 2^31 - 1` when `guard > 0`.
#[derive(Clone, Copy, Debug)]
struct Bound {
    fixed: Option<Value>,
    k: i64,
    guard: i64,
}

/// The prefix bound of comparison `op` in the loop with induction variable `iv` and body
/// `body`, if it has one (module docs).
fn bound(f: &Function, op: Op, iv: Value, body: trident_ir::Block) -> Option<Bound> {
    let OpKind::Cmp(p) = f.ops[op].kind else { return None };
    let (a, b) = (f.ops[op].operands[0], f.ops[op].operands[1]);
    let (sa, sb) = (side(f, a, 0)?, side(f, b, 0)?);
    let moving = |s: &Side| s.base == Some(iv);
    let fixed = |s: &Side| s.base.is_none_or(|v| v != iv && !f.is_defined_within(v, body));
    // Normalise to `X pred Y`, X moving.
    let (x, y, p) = if moving(&sa) && fixed(&sb) {
        (sa, sb, p)
    } else if moving(&sb) && fixed(&sa) {
        let swapped = match p {
            CmpPred::Lt => CmpPred::Gt,
            CmpPred::Le => CmpPred::Ge,
            CmpPred::Gt => CmpPred::Lt,
            CmpPred::Ge => CmpPred::Le,
            other => other,
        };
        (sb, sa, swapped)
    } else {
        return None;
    };
    // X's largest element `iv + x.hi` against Y's smallest `s + y.lo`.
    let k = match p {
        CmpPred::Lt => y.lo - x.hi - 1,
        CmpPred::Le => y.lo - x.hi,
        _ => return None,
    };
    Some(Bound { fixed: y.base, k, guard: y.hi })
}

/// Appends `kind(operands) : ty` before `at` and returns its result.
fn emit(f: &mut Function, at: Op, kind: OpKind, operands: &[Value], ty: Type, loc: Loc) -> Value {
    let op = f.new_op(kind, operands, &[ty], loc);
    f.insert_op_before(at, op);
    f.result(op, 0)
}

fn int(f: &mut Function, at: Op, v: i64, d: DType, loc: Loc) -> Value {
    emit(f, at, OpKind::Constant(Const::Int(v)), &[], Type::scalar(Elem::Num(d)), loc)
}

fn split(f: &mut Function, lp: Op) -> bool {
    let d = &f.ops[lp];
    if d.attrs.flag(LOOP_SPLIT) || d.attrs.get(trident_ir::discardable::WARP_SPECIALIZE).is_some() {
        return false;
    }
    let (lb, ub, step) = (d.operands[0], d.operands[1], d.operands[2]);
    if !is_i32(f, lb) || !is_i32(f, ub) || !is_i32(f, step) {
        return false;
    }
    let Some(Const::Int(step_k)) = const_of(f, step) else { return false };
    if step_k <= 0 {
        return false;
    }
    let Some(&body) = d.regions.first() else { return false };
    let iv = f.blocks[body].args[0];
    let loc = d.loc;
    let cmps: Vec<(Op, Bound)> = f.blocks[body]
        .ops
        .iter()
        .filter_map(|&o| Some((o, bound(f, o, iv, body)?)))
        .filter(|(o, _)| !f.ty(f.ops[*o].results[0]).elem().is_float())
        .collect();
    if cmps.is_empty() {
        return false;
    }
    // The threshold, in i64 before the loop: T = min over the comparisons of their bound, and
    // of the moving sides' own no-overflow bound.
    let i64t = Type::scalar(Elem::Num(DType::I64));
    let i1t = Type::scalar(Elem::Num(DType::I1));
    let sext = |f: &mut Function, v: Value| {
        emit(f, lp, OpKind::Cast { kind: CastKind::Convert, rounding: Rounding::Rtne }, &[v], i64t.clone(), loc)
    };
    let mut t: Option<Value> = None;
    let mut max_hi = 0i64;
    for &(c, b) in &cmps {
        let side_x = {
            let (a, bb) = (f.ops[c].operands[0], f.ops[c].operands[1]);
            let sa = side(f, a, 0).expect("analysed");
            if sa.base == Some(iv) {
                sa
            } else {
                side(f, bb, 0).expect("analysed")
            }
        };
        max_hi = max_hi.max(side_x.hi);
        let k = int(f, lp, b.k, DType::I64, loc);
        let mut tk = match b.fixed {
            Some(s) => {
                let s64 = sext(f, s);
                let sum = emit(f, lp, OpKind::Binary(BinaryOp::Add), &[s64, k], i64t.clone(), loc);
                if b.guard > 0 {
                    // The program's `s + r` must not wrap: else no iteration is split off.
                    let lim = int(f, lp, I32_MAX - b.guard, DType::I64, loc);
                    let ok = emit(f, lp, OpKind::Cmp(CmpPred::Le), &[s64, lim], i1t.clone(), loc);
                    let never = int(f, lp, i64::from(i32::MIN) - 1, DType::I64, loc);
                    emit(f, lp, OpKind::Select, &[ok, sum, never], i64t.clone(), loc)
                } else {
                    sum
                }
            }
            None => k,
        };
        if let Some(prev) = t {
            tk = emit(f, lp, OpKind::Binary(BinaryOp::Min), &[prev, tk], i64t.clone(), loc);
        }
        t = Some(tk);
    }
    let Some(t) = t else { return false };
    let iv_limit = int(f, lp, I32_MAX - max_hi, DType::I64, loc);
    let t = emit(f, lp, OpKind::Binary(BinaryOp::Min), &[t, iv_limit], i64t.clone(), loc);
    // c = T >= lb ? (T - lb) / step + 1 : 0; the first loop ends at min(lb + c * step, ub).
    let lb64 = sext(f, lb);
    let ub64 = sext(f, ub);
    let step64 = int(f, lp, step_k, DType::I64, loc);
    let zero = int(f, lp, 0, DType::I64, loc);
    let one = int(f, lp, 1, DType::I64, loc);
    let diff = emit(f, lp, OpKind::Binary(BinaryOp::Sub), &[t, lb64], i64t.clone(), loc);
    let q = emit(f, lp, OpKind::Binary(BinaryOp::Div), &[diff, step64], i64t.clone(), loc);
    let q1 = emit(f, lp, OpKind::Binary(BinaryOp::Add), &[q, one], i64t.clone(), loc);
    let some = emit(f, lp, OpKind::Cmp(CmpPred::Ge), &[diff, zero], i1t.clone(), loc);
    let count = emit(f, lp, OpKind::Select, &[some, q1, zero], i64t.clone(), loc);
    let span = emit(f, lp, OpKind::Binary(BinaryOp::Mul), &[count, step64], i64t.clone(), loc);
    let end = emit(f, lp, OpKind::Binary(BinaryOp::Add), &[lb64, span], i64t.clone(), loc);
    let end = emit(f, lp, OpKind::Binary(BinaryOp::Min), &[end, ub64], i64t.clone(), loc);
    let ivt = f.ty(lb).clone();
    let mid = emit(f, lp, OpKind::Cast { kind: CastKind::Convert, rounding: Rounding::Rtne }, &[end], ivt, loc);
    // The first loop: a copy over [lb, mid) with the comparisons true.
    let mut map = ValueMap::default();
    let first = f.clone_op(lp, &mut map);
    f.insert_op_before(lp, first);
    f.ops[first].operands[1] = mid;
    let first_body = f.ops[first].regions[0];
    let head = f.blocks[first_body].ops[0];
    for &(c, _) in &cmps {
        let orig = f.ops[c].results[0];
        let Some(&copy) = map.get(&orig) else { continue };
        let ty = f.ty(copy).clone();
        let t = emit(f, head, OpKind::Constant(Const::Bool(true)), &[], ty, loc);
        f.replace_all_uses(copy, t);
    }
    // The original loop: [mid, ub), from the first loop's results.
    f.ops[lp].operands[0] = mid;
    let results = f.ops[first].results.clone();
    for (i, r) in results.into_iter().enumerate() {
        f.ops[lp].operands[3 + i] = r;
    }
    f.ops[first].attrs.set(LOOP_SPLIT, Attr::Bool(true));
    f.ops[lp].attrs.set(LOOP_SPLIT, Attr::Bool(true));
    true
}
