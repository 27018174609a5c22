//! Tensor-descriptor loads (pass `gpu-descriptors`, after the layouts are settled).
//!
//! The front end lowers `desc.load(offsets)` to a `desc_load`: the element pointers and
//! bounds mask of the window (what every backend without a tensor-memory accelerator runs)
//! plus the window itself as scalars (base, shape, strides, offsets). Until this pass the
//! GPU passes treat it as the load it is (layouts, coalescing). This pass decides, per load:
//!
//! * **TMA** (targets with a tensor-memory accelerator, sm_90 and later; not in sanitize
//!   mode, whose bounds checks need the pointers): the box is copied by one thread with
//!   `cp.async.bulk.tensor` into a shared buffer, completing on an mbarrier, and read back in
//!   the load's layout:
//!
//!   ```text
//!   %bar = local_alloc : tensor<1xi64, #shared>        // at the kernel's start,
//!   mbarrier_init %bar [count = 1]                     // once
//!   ...
//!   %map = tma_map %base, %shape.., %strides.. [block = [..], swizzle = 0]
//!   %buf = local_alloc : tensor<BOX, #shared>          // row-major, as TMA writes it
//!   tma_copy %map, %buf, %bar, %offsets..
//!   mbarrier_wait %bar
//!   %v = local_load %buf : tensor<BOX, #the load's layout>
//!   ```
//!
//!   The map is built on the host before the launch (`tma_map`'s docs), so the window must
//!   come from the kernel's parameters: the base a pointer parameter, each shape and stride a
//!   constant, an integer parameter (possibly converted to i64) or a product of them, the
//!   innermost stride 1.
//!   Box dimensions are powers of two up to 256 and the innermost spans a multiple of 16
//!   bytes (Triton's rules for descriptors, checked by the front end where constant).
//!   A load outside every loop whose one use converts it to an mma operand (attention's Q)
//!   gets the operand's swizzled tile as its box instead, read straight into the operand
//!   layout (wgmma then reads the box where it is): no row-major round trip.
//!   A load inside a loop that feeds a `dot` is left to the `cp.async` pipeliner
//!   (`gpu-pipeline`), which overlaps it with the loop's math; a lone TMA copy would wait.
//! * **A plain load** otherwise: the masked `load` of its first three operands; the window
//!   operands are dropped and whatever only they used is left to DCE.
//!
//! A `desc_store` with a qualifying window (the same rules) becomes a write of the value into
//! a row-major box and a `tma_store` of the box (one thread; out-of-bounds elements are not
//! written, which is the store's mask); otherwise the masked `store` of its first three
//! operands.

use crate::machine::mma::MmaTile;
use crate::machine::tma::{swizzle_for, TmaFill};
use crate::options::GpuOptions;
use trident_core::DType;
use trident_ir::{CacheModifier, Const, Elem, EvictionPolicy, Function, Layout, Op, OpKind, Type, Value, ValueDef};

/// Lowers every `desc_load` and `desc_store` of `f` (TMA, or a plain load or store);
/// returns how many.
pub fn lower_descriptors(f: &mut Function, opts: &GpuOptions) -> usize {
    let mut n = 0;
    for op in f.all_ops() {
        match f.ops[op].kind {
            OpKind::DescLoad { rank } => {
                if tma_eligible(f, op, opts) {
                    lower_to_tma(f, op, rank as usize);
                } else {
                    let od = &mut f.ops[op];
                    od.kind =
                        OpKind::Load { cache: CacheModifier::None, evict: EvictionPolicy::Normal, volatile: false };
                    od.operands.truncate(3);
                }
                n += 1;
            }
            OpKind::DescStore { rank } => {
                if window_eligible(f, op, opts) {
                    lower_store_to_tma(f, op, rank as usize);
                } else {
                    let od = &mut f.ops[op];
                    od.kind = OpKind::Store { cache: CacheModifier::None, evict: EvictionPolicy::Normal };
                    od.operands.truncate(3);
                }
                n += 1;
            }
            _ => {}
        }
    }
    n
}

/// The box a descriptor access moves: a load's result, a store's value.
fn box_type(f: &Function, op: Op) -> &Type {
    match f.ops[op].kind {
        OpKind::DescStore { .. } => f.ty(f.ops[op].operands[1]),
        _ => f.ty(f.ops[op].results[0]),
    }
}

/// Whether the launch can compute `v` for a tensor map: a scalar parameter, a constant, or
/// a product of them (`crate::machine::tma::MapField`).
fn is_param_or_const(f: &Function, v: Value) -> bool {
    f.ty(v).is_scalar() && crate::machine::tma::map_field(f, v).is_some()
}

fn const_int(f: &Function, v: Value) -> Option<i64> {
    let op = f.def_op(v)?;
    match f.ops[op].kind {
        OpKind::Constant(Const::Int(x)) => Some(x),
        _ => None,
    }
}

/// Whether the value feeds a `dot` operand through one conversion (a pipelining candidate).
fn feeds_dot_operand(f: &Function, v: Value) -> bool {
    f.all_ops().into_iter().any(|u| {
        matches!(f.ops[u].kind, OpKind::ConvertLayout)
            && f.ops[u].operands[0] == v
            && matches!(
                f.ty(f.ops[u].results[0]).layout().and_then(|id| f.layouts.get(id)),
                Some(Layout::DotOperand { .. })
            )
    })
}

fn in_loop(f: &Function, op: Op) -> bool {
    let mut p = f.parent_op(op);
    while let Some(po) = p {
        if matches!(f.ops[po].kind, OpKind::For | OpKind::While) {
            return true;
        }
        p = f.parent_op(po);
    }
    false
}

/// Whether a `desc_load`'s or `desc_store`'s window can be a host-built tensor map on this
/// target: TMA exists, no sanitize mode, an element of 1 to 8 bytes, a power-of-two box of
/// at most 256 per dimension whose contiguous dimension spans a multiple of 16 bytes, the
/// base a pointer parameter, shapes and strides parameters or constants, the innermost
/// stride 1.
pub(crate) fn window_eligible(f: &Function, op: Op, opts: &GpuOptions) -> bool {
    let (OpKind::DescLoad { rank } | OpKind::DescStore { rank }) = f.ops[op].kind else { return false };
    let rank = rank as usize;
    if opts.target.capability() < 90 || opts.sanitize || !f.kernel {
        return false;
    }
    let od = &f.ops[op];
    let t = box_type(f, op);
    let Some(elem) = t.elem().num() else { return false };
    let bytes = elem.size_bytes() as u32;
    let block = t.shape();
    if !matches!(bytes, 1 | 2 | 4 | 8) || elem == DType::I1 || block.len() != rank {
        return false;
    }
    if block.iter().any(|&b| !b.is_power_of_two() || b > 256) || !(block[rank - 1] * bytes).is_multiple_of(16) {
        return false;
    }
    let window = &od.operands[3..];
    if !matches!(f.values[window[0]].def, ValueDef::Arg(b, _) if b == f.body) {
        return false;
    }
    if !window[1..1 + 2 * rank].iter().all(|&v| is_param_or_const(f, v)) {
        return false;
    }
    const_int(f, window[2 * rank]) == Some(1)
}

/// A lone TMA copy for this load: its window qualifies, and it is not a load in a loop
/// feeding a dot, which the pipeliner declined (plain loads overlap better there than a
/// copy each iteration waits for).
fn tma_eligible(f: &Function, op: Op, opts: &GpuOptions) -> bool {
    window_eligible(f, op, opts) && !(in_loop(f, op) && feeds_dot_operand(f, f.ops[op].results[0]))
}

/// The `tma_map` op (detached) of a qualifying `desc_load` or `desc_store`, for boxes laid
/// out with `swizzle`; `box_cols` (non-zero) narrows the box's innermost dimension, the
/// load's tile then being copied as several boxes side by side (`tma_copy`).
pub(crate) fn new_map(f: &mut Function, access: Op, swizzle: u32, box_cols: u32) -> Op {
    let od = f.ops[access].clone();
    let (OpKind::DescLoad { rank } | OpKind::DescStore { rank }) = od.kind else {
        unreachable!("new_map of a `{}`", od.kind.name())
    };
    let rank = rank as usize;
    let mut block = box_type(f, access).shape().to_vec();
    if box_cols != 0 {
        block[rank - 1] = box_cols;
    }
    // A load's `other` (NaN padding); a store's third operand is its mask.
    let nan = matches!(od.kind, OpKind::DescLoad { .. })
        && matches!(
            f.def_op(od.operands[2]).map(|o| &f.ops[o].kind),
            Some(OpKind::Constant(Const::Float(x))) if x.is_nan()
        );
    let operands: Vec<Value> = od.operands[3..4 + 2 * rank].to_vec();
    f.new_op(OpKind::TmaMap { block, swizzle, nan }, &operands, &[Type::scalar(Elem::Num(DType::I64))], od.loc)
}

/// `n` mbarriers (`tensor<1xi64>`, or `tensor<nx1xi64>` for a ring), allocated and initialised
/// at the kernel's start for `count` arrivals per phase (one per copy completing on it: each
/// `tma_copy` arrives once, announcing its bytes).
pub(crate) fn new_barriers(f: &mut Function, n: u32, count: u32, loc: trident_ir::Loc) -> Value {
    new_barriers_primed(f, n, count, false, loc)
}

/// [`new_barriers`], primed or not (see `OpKind::MbarrierInit`).
pub(crate) fn new_barriers_primed(f: &mut Function, n: u32, count: u32, primed: bool, loc: trident_ir::Loc) -> Value {
    let shape: Vec<u32> = if n == 1 { vec![1] } else { vec![n, 1] };
    let order: Vec<u32> = (0..shape.len() as u32).rev().collect();
    let l = f.intern_layout(Layout::Shared { vec: 1, per_phase: 1, max_phase: 1, order: order.into() });
    let ty = Type::Tensor { shape: shape.into(), elem: Elem::Num(DType::I64), layout: Some(l) };
    let bar = f.new_op(OpKind::LocalAlloc, &[], &[ty], loc);
    let init = f.new_op(OpKind::MbarrierInit { count, primed }, &[f.result(bar, 0)], &[], loc);
    let first = f.blocks[f.body].ops[0];
    f.insert_op_before(first, bar);
    f.insert_op_after(bar, init);
    f.result(bar, 0)
}

fn lower_to_tma(f: &mut Function, op: Op, rank: usize) {
    let od = f.ops[op].clone();
    let loc = od.loc;
    let res = od.results[0];
    let t = f.ty(res).clone();
    let offsets = od.operands[4 + 2 * rank..].to_vec();
    let bar = new_barriers(f, 1, 1, loc);
    // The box: the mma operand's swizzled tile when the load only feeds one (read straight
    // into the operand's layout), else row-major and read in the load's layout.
    let (map, box_layout, read_ty, replaced) = match operand_box(f, op) {
        Some((convert, tile, fill)) => {
            let map = new_map(f, op, fill.swizzle, fill.box_cols);
            let l = f.intern_layout(tile.layout(rank));
            let conv_res = f.ops[convert].results[0];
            (map, l, f.ty(conv_res).clone(), Some(convert))
        }
        None => {
            let order: Vec<u32> = (0..rank as u32).rev().collect();
            let l = f.intern_layout(Layout::Shared { vec: 1, per_phase: 1, max_phase: 1, order: order.into() });
            (new_map(f, op, 0, 0), l, t.clone(), None)
        }
    };
    let buf = f.new_op(OpKind::LocalAlloc, &[], &[t.with_layout(Some(box_layout))], loc);
    let mut copy_operands = vec![f.result(map, 0), f.result(buf, 0), bar];
    copy_operands.extend_from_slice(&offsets);
    let copy = f.new_op(OpKind::TmaCopy, &copy_operands, &[], loc);
    let wait = f.new_op(OpKind::MbarrierWait, &[bar], &[], loc);
    let read = f.new_op(OpKind::LocalLoad, &[f.result(buf, 0)], &[read_ty], loc);
    for new in [map, buf, copy, wait, read] {
        f.insert_op_before(op, new);
    }
    match replaced {
        Some(convert) => {
            let conv_res = f.ops[convert].results[0];
            f.replace_all_uses(conv_res, f.result(read, 0));
            f.detach_op(convert);
        }
        None => f.replace_all_uses(res, f.result(read, 0)),
    }
    f.detach_op(op);
}

/// For a load outside every loop whose one use converts it to an mma operand (attention's Q,
/// read by every iteration's dot): the conversion, the operand's shared tile, and how TMA
/// writes that tile. The box then lives in the operand's layout — wgmma reads it from shared
/// memory where it is, `ldmatrix` straight into the operand registers — instead of a
/// row-major box read into registers and converted through shared memory again. (Inside a
/// loop the copy would overwrite a tile an asynchronous wgmma may still read.)
fn operand_box(f: &Function, op: Op) -> Option<(Op, MmaTile, TmaFill)> {
    if in_loop(f, op) {
        return None;
    }
    let res = f.ops[op].results[0];
    let users: Vec<Op> = f.all_ops().into_iter().filter(|&u| f.ops[u].operands.contains(&res)).collect();
    let [convert] = users[..] else { return None };
    if !matches!(f.ops[convert].kind, OpKind::ConvertLayout) || f.ops[convert].operands.len() != 1 {
        return None;
    }
    let ct = f.ty(f.ops[convert].results[0]);
    let Some(Layout::DotOperand { op_idx, parent, k_width }) = ct.layout().and_then(|id| f.layouts.get(id)).cloned()
    else {
        return None;
    };
    if !matches!(f.layouts.get(parent), Some(Layout::Mma { .. })) {
        return None;
    }
    let dst = crate::layout::distributed(&f.layouts, ct.layout()?, ct.shape()).ok()?;
    let bytes = ct.elem().num()?.size_bytes() as u32;
    // TMA writes rows along the last dimension.
    let tile = MmaTile::with_fast(&dst, op_idx, k_width, bytes, 1)?;
    let fill = swizzle_for(&tile.shared(ct.shape()).ok()?, bytes)?;
    Some((convert, tile, fill))
}

/// The outermost loop around a store whose box may still be being read while the loop goes
/// on: the store sits in `for` bodies only (up to a warp-specialized region). Under an `if`
/// or a `while` the store waits for its read at once: the wait ends in a CTA barrier, which
/// every thread must reach.
fn deferral_loop(f: &Function, op: Op) -> Option<Op> {
    let mut outer = None;
    let mut p = f.parent_op(op);
    while let Some(po) = p {
        match f.ops[po].kind {
            OpKind::For => outer = Some(po),
            OpKind::WarpSpecialize { .. } => break,
            _ => return None,
        }
        p = f.parent_op(po);
    }
    outer
}

/// The first op of the run of register-only ops (pure, no regions, no scratch memory; or
/// one of `dead`, conversions the store no longer uses) right before `op` in its block, or
/// `op` itself.
fn first_of_register_run(f: &Function, op: Op, dead: &[Op]) -> Op {
    let Some(parent) = f.ops[op].parent else { return op };
    let ops = &f.blocks[parent].ops;
    let Some(mut at) = ops.iter().position(|&o| o == op) else { return op };
    while at > 0 {
        let p = ops[at - 1];
        let d = &f.ops[p];
        let register_only = dead.contains(&p)
            || d.kind.effect() == trident_ir::Effect::Pure
                && d.regions.is_empty()
                && crate::machine::scratch::scratch_bytes(f, p).unwrap_or(0) == 0;
        if !register_only {
            break;
        }
        at -= 1;
    }
    ops[at]
}

/// The shared layout of a store's box and how TMA reads it: the widest TMA swizzle the tile
/// takes (rows cut into swizzle-span-wide boxes side by side), else plain rows. Plain rows of
/// 128 bytes or more put a register tile's rows in the same banks: an mma accumulator written
/// row-major (a warp's lanes on 8 rows, 16 bytes each) conflicts 8 ways in every store; through
/// the 128-byte swizzle the 8 rows' chunks fall on distinct banks.
fn store_box(t: &Type) -> (Layout, TmaFill) {
    let shape = t.shape();
    let rank = shape.len();
    let order: Vec<u32> = (0..rank as u32).rev().collect();
    let eb = t.elem().num().map_or(0, |d| d.size_bytes() as u32);
    // (span bytes, rows per phase, phases): TMA's 128-, 64- and 32-byte swizzles on rows one
    // span wide (its 16-byte chunks XORed with the 128-byte line's index).
    for (w, per_phase, max_phase) in [(128u32, 1u32, 8u32), (64, 2, 4), (32, 4, 2)] {
        if rank < 2 || eb == 0 || 16 % eb != 0 {
            break;
        }
        let vec = 16 / eb;
        let Ok(sl) = crate::layout::build::shared(shape, vec, per_phase, max_phase, &order) else { continue };
        if let Some(fill) = swizzle_for(&sl, eb).filter(|fill| fill.swizzle == w) {
            return (Layout::Shared { vec, per_phase, max_phase, order: order.into() }, fill);
        }
    }
    let cols = shape.last().copied().unwrap_or(1);
    let plain = Layout::Shared { vec: 1, per_phase: 1, max_phase: 1, order: order.into() };
    (plain, TmaFill { swizzle: 0, box_cols: cols, boxes: 1 })
}

/// A `desc_store` as a TMA copy out of a (swizzled) box: every thread writes its part of the
/// value into the box, then one thread copies the box to global memory (`tma_store`, which
/// publishes the writes to the copy itself and returns once the box has been read).
///
/// In a loop (a persistent kernel's epilogue) the store does not wait for the read: the box
/// lives across the loop, a `tma_store_wait` before each write of it waits for the previous
/// store's read, and one after the loop for the last — so the copy reads the box while the
/// next tile's main loop runs instead of holding the issuing thread (which also issues the
/// next tile's loads).
fn lower_store_to_tma(f: &mut Function, op: Op, rank: usize) {
    let od = f.ops[op].clone();
    let loc = od.loc;
    // Any register layout can write a row-major box: skip the conversion to the store's
    // coalesced layout (left to DCE), which would cost a trip through scratch memory.
    let mut value = od.operands[1];
    let mut skipped = vec![];
    while let Some(c) = f.def_op(value).filter(|&c| matches!(f.ops[c].kind, OpKind::ConvertLayout)) {
        value = f.ops[c].operands[0];
        skipped.push(c);
    }
    let t = f.ty(value).clone();
    let offsets = od.operands[4 + 2 * rank..].to_vec();
    let (box_layout, fill) = store_box(&t);
    let map = new_map(f, op, fill.swizzle, if fill.boxes > 1 { fill.box_cols } else { 0 });
    let box_layout = f.intern_layout(box_layout);
    let buf = f.new_op(OpKind::LocalAlloc, &[], &[t.with_layout(Some(box_layout))], loc);
    let write = f.new_op(OpKind::LocalStore, &[f.result(buf, 0), value], &[], loc);
    let mut copy_operands = vec![f.result(map, 0), f.result(buf, 0)];
    copy_operands.extend_from_slice(&offsets);
    let copy = f.new_op(OpKind::TmaStore, &copy_operands, &[], loc);
    let Some(outer) = deferral_loop(f, op) else {
        for new in [map, buf, write, copy] {
            f.insert_op_before(op, new);
        }
        f.detach_op(op);
        return;
    };
    f.insert_op_before(outer, buf);
    let box_ = f.result(buf, 0);
    let wait = f.new_op(OpKind::TmaStoreWait, &[box_], &[], loc);
    f.ops[copy].attrs.set(trident_ir::discardable::STORE_READ_DEFERRED, trident_ir::Attr::Bool(true));
    // The wait (a CTA barrier) goes before the register work that computes the stored value
    // (the accumulator's conversion): a barrier between that work and the box's writes made
    // ptxas copy every packed register once more, each copy waiting for the previous
    // `STS` to read it (the SASS emulator measured +17% on the persistent matmul).
    f.insert_op_before(first_of_register_run(f, op, &skipped), wait);
    for new in [map, write, copy] {
        f.insert_op_before(op, new);
    }
    let last = f.new_op(OpKind::TmaStoreWait, &[box_], &[], loc);
    f.insert_op_after(outer, last);
    f.detach_op(op);
}
