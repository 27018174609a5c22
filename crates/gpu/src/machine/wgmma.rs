//! Hopper's warpgroup MMA (`wgmma`, sm_90a): which dot operands it reads straight from
//! shared memory (through matrix descriptors) instead of registers.

use super::mma::MmaTile;
use super::regs::mem_bytes;
use crate::layout::{distributed, ConversionKind};
use trident_ir::{Function, Layout, Op, OpKind, Value};

/// Whether `v`'s layout is an operand layout of a wgmma accumulator.
pub fn is_wgmma_operand(f: &Function, v: Value) -> bool {
    let Some(id) = f.ty(v).layout() else { return false };
    match f.layouts.get(id) {
        Some(Layout::DotOperand { parent, .. }) => {
            matches!(f.layouts.get(*parent), Some(Layout::Mma { version: 3, .. }))
        }
        _ => false,
    }
}

/// Whether `v` has exactly one use, as an operand of a `dot`.
pub fn only_dot_user(f: &Function, v: Value) -> bool {
    let mut users = f.all_ops().into_iter().filter(|&o| f.ops[o].operands.contains(&v));
    match (users.next(), users.next()) {
        (Some(u), None) => matches!(f.ops[u].kind, OpKind::Dot { .. }),
        _ => false,
    }
}

/// Whether conversion `op` can leave its result in shared memory for a wgmma dot (its only
/// user) instead of loading fragments: a 16-bit operand whose tile `ldmatrix` could read.
fn convert_can_stay_in_shared(f: &Function, op: Op) -> bool {
    let d = &f.ops[op];
    if !matches!(d.kind, OpKind::ConvertLayout) {
        return false;
    }
    let (src, res) = (d.operands[0], d.results[0]);
    if !is_wgmma_operand(f, res) || !only_dot_user(f, res) {
        return false;
    }
    let (st, rt) = (f.ty(src), f.ty(res));
    let (Some(sid), Some(rid)) = (st.layout(), rt.layout()) else { return false };
    let (Ok(sl), Ok(dl)) = (distributed(&f.layouts, sid, st.shape()), distributed(&f.layouts, rid, rt.shape())) else {
        return false;
    };
    if matches!(sl.conversion_to(&dl), ConversionKind::Identity | ConversionKind::RegisterPermute) {
        return false;
    }
    let Some(Layout::DotOperand { op_idx, k_width, .. }) = f.layouts.get(rid).cloned() else { return false };
    let bytes = mem_bytes(rt.elem());
    bytes == 2 && MmaTile::choose(&sl, &dl, op_idx, k_width, bytes).is_some()
}

/// Whether `local_load` `op` of a pipelined buffer can leave the tile where it is for a
/// wgmma dot (its only user) to read through descriptors: a wgmma operand read from a
/// shared layout whose tile parameters are known.
fn load_can_stay_in_shared(f: &Function, op: Op) -> bool {
    let d = &f.ops[op];
    let (Some(&view), Some(&res)) = (d.operands.first(), d.results.first()) else { return false };
    if !matches!(d.kind, OpKind::LocalLoad) || !is_wgmma_operand(f, res) || !only_dot_user(f, res) {
        return false;
    }
    let Some(vl) = f.ty(view).layout().and_then(|id| f.layouts.get(id)) else { return false };
    let Some(Layout::DotOperand { op_idx, k_width, .. }) = f.ty(res).layout().and_then(|id| f.layouts.get(id)) else {
        return false;
    };
    MmaTile::from_shared(vl, *k_width, *op_idx).is_some()
}

/// Whether `op` (a `convert_layout` or `local_load` into a wgmma operand) can produce no
/// registers and leave its tile in shared memory for the dot to read with descriptors.
/// `gpu-alloc-shared` decides it once and marks such ops `smem_operand`; the planner keeps a
/// marked conversion's tile live until the dot, and emission reads the mark.
pub fn operand_stays_in_shared(f: &Function, op: Op) -> bool {
    match f.ops[op].kind {
        OpKind::ConvertLayout => convert_can_stay_in_shared(f, op),
        OpKind::LocalLoad => load_can_stay_in_shared(f, op),
        _ => false,
    }
}
