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
//!   constant or an integer parameter (possibly converted to i64), the innermost stride 1.
//!   Box dimensions are powers of two up to 256 and the innermost spans a multiple of 16
//!   bytes (Triton's rules for descriptors, checked by the front end where constant).
//!   A load inside a loop that feeds a `dot` is left to the `cp.async` pipeliner
//!   (`gpu-pipeline`), which overlaps it with the loop's math; a lone TMA copy would wait.
//! * **A plain load** otherwise: the masked `load` of its first three operands; the window
//!   operands are dropped and whatever only they used is left to DCE.

use crate::options::GpuOptions;
use trident_core::DType;
use trident_ir::{CacheModifier, Const, Elem, EvictionPolicy, Function, Layout, Op, OpKind, Type, Value, ValueDef};

/// Lowers every `desc_load` of `f` (TMA or plain load); returns how many.
pub fn lower_descriptors(f: &mut Function, opts: &GpuOptions) -> usize {
    let mut n = 0;
    for op in f.all_ops() {
        if let OpKind::DescLoad { rank } = f.ops[op].kind {
            if tma_eligible(f, op, rank as usize, opts) {
                lower_to_tma(f, op, rank as usize);
            } else {
                let od = &mut f.ops[op];
                od.kind = OpKind::Load { cache: CacheModifier::None, evict: EvictionPolicy::Normal, volatile: false };
                od.operands.truncate(3);
            }
            n += 1;
        }
    }
    n
}

/// Where a tensor map's field comes from, as the launch resolves it.
fn is_param_or_const(f: &Function, v: Value) -> bool {
    match f.values[v].def {
        ValueDef::Arg(b, _) => b == f.body,
        ValueDef::Result(op, _) => match &f.ops[op].kind {
            OpKind::Constant(Const::Int(_)) => f.ty(v).is_scalar(),
            OpKind::Cast { kind: trident_ir::CastKind::Convert, .. } => {
                let src = f.ops[op].operands[0];
                f.ty(src).elem().is_int() && !f.ty(src).elem().is_bool() && is_param_or_const(f, src)
            }
            _ => false,
        },
    }
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

fn tma_eligible(f: &Function, op: Op, rank: usize, opts: &GpuOptions) -> bool {
    if opts.target.capability() < 90 || opts.sanitize || !f.kernel {
        return false;
    }
    let od = &f.ops[op];
    let t = f.ty(od.results[0]);
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
    if const_int(f, window[2 * rank]) != Some(1) {
        return false;
    }
    !(in_loop(f, op) && feeds_dot_operand(f, od.results[0]))
}

fn lower_to_tma(f: &mut Function, op: Op, rank: usize) {
    let od = f.ops[op].clone();
    let loc = od.loc;
    let res = od.results[0];
    let t = f.ty(res).clone();
    let block = t.shape().to_vec();
    let nan = matches!(
        f.def_op(od.operands[2]).map(|o| &f.ops[o].kind),
        Some(OpKind::Constant(Const::Float(x))) if x.is_nan()
    );
    let window = &od.operands[3..];
    let (base, fields, offsets) = (window[0], &window[1..1 + 2 * rank], &window[1 + 2 * rank..]);

    // The barrier: allocated and initialised at the kernel's start.
    let one = f.intern_layout(Layout::Shared { vec: 1, per_phase: 1, max_phase: 1, order: vec![0].into() });
    let bar_ty = Type::Tensor { shape: vec![1].into(), elem: Elem::Num(DType::I64), layout: Some(one) };
    let bar = f.new_op(OpKind::LocalAlloc, &[], &[bar_ty], loc);
    let init = f.new_op(OpKind::MbarrierInit { count: 1 }, &[f.result(bar, 0)], &[], loc);
    let first = f.blocks[f.body].ops[0];
    f.insert_op_before(first, bar);
    f.insert_op_after(bar, init);

    let mut operands = vec![base];
    operands.extend_from_slice(fields);
    let map = f.new_op(
        OpKind::TmaMap { block: block.clone(), swizzle: 0, nan },
        &operands,
        &[Type::scalar(Elem::Num(DType::I64))],
        loc,
    );
    let order: Vec<u32> = (0..rank as u32).rev().collect();
    let row_major = f.intern_layout(Layout::Shared { vec: 1, per_phase: 1, max_phase: 1, order: order.into() });
    let buf = f.new_op(OpKind::LocalAlloc, &[], &[t.with_layout(Some(row_major))], loc);
    let mut copy_operands = vec![f.result(map, 0), f.result(buf, 0), f.result(bar, 0)];
    copy_operands.extend_from_slice(offsets);
    let copy = f.new_op(OpKind::TmaCopy, &copy_operands, &[], loc);
    let wait = f.new_op(OpKind::MbarrierWait, &[f.result(bar, 0)], &[], loc);
    let read = f.new_op(OpKind::LocalLoad, &[f.result(buf, 0)], &[t], loc);
    for new in [map, buf, copy, wait, read] {
        f.insert_op_before(op, new);
    }
    f.replace_all_uses(res, f.result(read, 0));
    f.detach_op(op);
}
