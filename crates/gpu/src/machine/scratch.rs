//! The shared memory each op needs: *scratch* while a data-exchanging op runs (layout
//! conversions, cross-warp reductions and scans, data-moving reshapes, joins, splits and
//! concatenations, atomics whose old values must reach the threads holding copies) and
//! *buffers* (`local_alloc`). What a layout change costs decides it: a conversion or
//! reshape that keeps every element in its thread is a register renaming and needs none.

use super::reduce::{reduce_scratch_bytes, scan_scratch_bytes};
use super::regs::{class_of, mem_bytes, scratch_elem_bytes};
use crate::layout::linear::{flatten, unflatten};
use crate::layout::{distributed, ConversionKind, LinearLayout};
use trident_ir::{Function, Op, OpKind, Value};

/// Scratch bytes an op needs while it runs (0 for most ops).
pub fn scratch_bytes(f: &Function, op: Op) -> Result<u64, String> {
    let d = &f.ops[op];
    let ll = |v: Value| -> Result<Option<LinearLayout>, String> {
        let t = f.ty(v);
        match t.layout() {
            Some(id) if t.is_tensor() => distributed(&f.layouts, id, t.shape()).map(Some),
            _ => Ok(None),
        }
    };
    let elem = |v: Value| scratch_elem_bytes(class_of(f.ty(v).elem())) as u64;
    Ok(match &d.kind {
        OpKind::ConvertLayout => {
            let (Some(s), Some(t)) = (ll(d.operands[0])?, ll(d.results[0])?) else { return Ok(0) };
            match s.conversion_to(&t) {
                ConversionKind::Identity | ConversionKind::RegisterPermute => 0,
                _ => s.numel() * elem(d.operands[0]),
            }
        }
        OpKind::Reduce { axis } => {
            let Some(l) = ll(d.operands[0])? else { return Ok(0) };
            let bytes: Vec<u32> = d.operands.iter().map(|&v| elem(v) as u32).collect();
            reduce_scratch_bytes(&l, *axis as usize, &bytes) as u64
        }
        OpKind::Scan { axis, .. } => {
            let Some(l) = ll(d.operands[0])? else { return Ok(0) };
            let bytes: Vec<u32> = d.operands.iter().map(|&v| elem(v) as u32).collect();
            scan_scratch_bytes(&l, *axis as usize, &bytes) as u64
        }
        OpKind::Reshape { .. } | OpKind::Trans { .. } => {
            let (Some(s), Some(t)) = (ll(d.operands[0])?, ll(d.results[0])?) else { return Ok(0) };
            let perm = match &d.kind {
                OpKind::Trans { perm } => Some(perm.as_slice()),
                _ => None,
            };
            let project = reshape_projection(&s.shape, &t.shape, perm);
            if reg_map(&s, &t, &project).is_some() {
                0
            } else {
                s.numel() * elem(d.operands[0])
            }
        }
        OpKind::Gather { .. } => match ll(d.operands[0])? {
            Some(l) => l.numel() * elem(d.operands[0]),
            None => 0,
        },
        OpKind::Join | OpKind::Cat => {
            let mut n = 0;
            for &v in &d.operands {
                if let Some(l) = ll(v)? {
                    n += l.numel();
                }
            }
            n * elem(d.operands[0])
        }
        OpKind::Split => match (ll(d.operands[0])?, ll(d.results[0])?, ll(d.results[1])?) {
            // A split along a register bit picks registers: no scratch.
            (Some(s), Some(a), Some(b)) if s.split_registers(&a, 0).is_some() && s.split_registers(&b, 1).is_some() => {
                0
            }
            (Some(s), _, _) => s.numel() * elem(d.operands[0]),
            _ => 0,
        },
        OpKind::AtomicRmw { .. } | OpKind::AtomicCas { .. } if atomic_result_needs_broadcast(f, op) => {
            ll(d.results[0])?.map_or(8, |l| l.numel() * elem(d.results[0]))
        }
        _ => 0,
    })
}

/// Bytes of a `local_alloc` buffer.
pub fn buffer_bytes(f: &Function, op: Op) -> u64 {
    let t = f.ty(f.ops[op].results[0]);
    t.numel() * mem_bytes(t.elem()) as u64
}

/// Maps every register of `dst` to the register of `src` holding the same element,
/// where `project` maps a `dst` coordinate to a `src` coordinate. `None` when some
/// element is not in the same thread.
pub fn reg_map(src: &LinearLayout, dst: &LinearLayout, project: &dyn Fn(u64) -> u64) -> Option<Vec<u32>> {
    if src.lane.len() != dst.lane.len() || src.warp.len() != dst.warp.len() {
        return None;
    }
    for (a, b) in src.lane.iter().zip(&dst.lane).chain(src.warp.iter().zip(&dst.warp)) {
        if *a != project(*b) {
            return None;
        }
    }
    let lookup = src.reg_lookup();
    (0..dst.num_regs() as u64).map(|r| lookup.get(&project(dst.reg_part(r))).copied()).collect()
}

/// The map from a result coordinate (flat, row-major) of a reshape (`perm` = `None`) or
/// transpose (`perm` = its permutation) to the operand coordinate holding the same element:
/// a reshape keeps the row-major index; a transpose permutes the coordinates.
pub fn reshape_projection(src_shape: &[u32], dst_shape: &[u32], perm: Option<&[u32]>) -> impl Fn(u64) -> u64 {
    let (sshape, dshape) = (src_shape.to_vec(), dst_shape.to_vec());
    let perm: Option<Vec<u32>> = perm.map(|p| p.to_vec());
    move |c: u64| -> u64 {
        match &perm {
            None => c,
            Some(p) => {
                let dc = unflatten(&dshape, c);
                let mut sc = vec![0u32; sshape.len()];
                for (i, &pi) in p.iter().enumerate() {
                    sc[pi as usize] = dc[i];
                }
                flatten(&sshape, &sc)
            }
        }
    }
}

/// Whether an atomic's old values must be shared through shared memory: the result is
/// used and only one of the threads holding an element issues its atomic (a scalar
/// atomic, or a layout with copies).
pub fn atomic_result_needs_broadcast(f: &Function, op: Op) -> bool {
    let d = &f.ops[op];
    let Some(&res) = d.results.first() else { return false };
    if !matches!(d.kind, OpKind::AtomicRmw { .. } | OpKind::AtomicCas { .. }) || f.use_counts()[res] == 0 {
        return false;
    }
    let t = f.ty(d.operands[0]);
    match t.layout() {
        None => true,
        Some(id) => match distributed(&f.layouts, id, t.shape()) {
            Ok(l) => l.free_lane_mask() != 0 || l.free_warp_mask() != 0,
            Err(_) => true,
        },
    }
}
