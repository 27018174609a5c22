//! Keeps loop-invariant `mma.sync` operands in shared memory (pass `gpu-shared-operands`).
//!
//! Flash attention's Q is loaded once and multiplied in every iteration of the KV loop. Its
//! conversion into the mma operand layout (a swizzled shared tile, then `ldmatrix`) sits
//! before the loop, so the operand's fragments stay in registers across it: 32 per thread for
//! a 128×128 f16 tile on 8 warps. Where the loop already holds most of the register file
//! (D128 on sm_80: a 64-register accumulator, a 64-register score tile, the fragments), that
//! is the difference between fitting and spilling in the loop — Trident spilled 72 bytes
//! there, and Triton, which always reads such operands from shared memory inside the loop,
//! did not. So when a loop's estimated pressure is high, the conversion becomes a store into
//! a shared tile before the loop and a `local_load` right before each dot that reads it
//! (emitted as `ldmatrix`, group by group as the dot consumes the K slices): a few
//! `ldmatrix` per iteration for the registers. Where registers are not scarce (D64) the
//! fragments stay in registers: re-reading them would cost instructions and buy nothing.
//!
//! Only for `mma.sync` (version-2) operands: `wgmma` reads its shared operands in place
//! already. The shared tile must fit: the change is kept only if the function, with it,
//! still plans within the target's shared memory (the pass runs right before the planner,
//! after profiling's instrumentation: a profiled kernel's probe rings count too, so at the
//! margin of shared memory a profiled build may keep the operand in registers).

use crate::layout::distributed;
use crate::machine::mma::MmaTile;
use crate::options::GpuOptions;
use trident_ir::{Function, Layout, Op, OpKind, Type, Value};

/// Estimated registers per thread above which a loop's invariant operands move to shared
/// memory. The estimate counts only the long-lived values; the loop body's temporaries (the
/// operands it loads, the softmax's intermediates) come on top, about as many again. Flash
/// attention D128 on 8 warps (sm_80) is estimated at 185: it spilled, and moving Q makes the
/// SASS emulator's modelled time 9.38 -> 7.46 µs. D64 is estimated at 105 and took 161
/// registers (one CTA per SM either way at 8 warps; Triton, which always moves Q, 142):
/// moving Q there would make it 138, but the modelled time 4.96 -> 5.37 µs (the `ldmatrix`
/// per iteration, nothing bought), so it stays. A 64x64 tile on 4 warps: 80.
const PRESSURE: u64 = 128;

/// Moves the qualifying conversions; returns how many.
pub fn shared_operands(f: &mut Function, opts: &GpuOptions) -> usize {
    if opts.target.has_wgmma() {
        return 0;
    }
    let mut moved = 0;
    for conv in f.all_ops() {
        if f.ops[conv].parent.is_none() {
            continue;
        }
        let Some((lp, dots)) = candidate(f, conv) else { continue };
        if pressure(f, lp) <= PRESSURE {
            continue;
        }
        let mut g = f.clone();
        if !rewrite(&mut g, conv, &dots) {
            continue;
        }
        let mut trial = g.clone();
        if super::alloc_shared::alloc_shared(&mut trial, opts).is_err() {
            continue;
        }
        *f = g;
        moved += 1;
    }
    moved
}

/// A conversion into an `mma.sync` operand whose every user is a dot inside one loop the
/// conversion is outside of: that loop and those dots.
fn candidate(f: &Function, conv: Op) -> Option<(Op, Vec<Op>)> {
    let d = &f.ops[conv];
    if !matches!(d.kind, OpKind::ConvertLayout) {
        return None;
    }
    let rt = f.ty(d.results[0]);
    let Some(Layout::DotOperand { parent, .. }) = rt.layout().and_then(|id| f.layouts.get(id)) else { return None };
    if !matches!(f.layouts.get(*parent), Some(Layout::Mma { version: 2, .. })) {
        return None;
    }
    let res = d.results[0];
    let users: Vec<Op> = f.all_ops().into_iter().filter(|&o| f.ops[o].operands.contains(&res)).collect();
    if users.is_empty() || !users.iter().all(|&u| matches!(f.ops[u].kind, OpKind::Dot { .. })) {
        return None;
    }
    // The outermost loop around the first user that does not hold the conversion; every
    // user must be inside it.
    let lp = outer_loop(f, users[0], conv)?;
    users.iter().all(|&u| outer_loop(f, u, conv) == Some(lp)).then_some((lp, users))
}

/// The outermost `for`/`while` around `op` that does not contain `outside`.
fn outer_loop(f: &Function, op: Op, outside: Op) -> Option<Op> {
    let mut found = None;
    let mut p = f.parent_op(op);
    while let Some(po) = p {
        if contains(f, po, outside) {
            break;
        }
        if matches!(f.ops[po].kind, OpKind::For | OpKind::While) {
            found = Some(po);
        }
        p = f.parent_op(po);
    }
    found
}

fn contains(f: &Function, outer: Op, op: Op) -> bool {
    let mut p = f.parent_op(op);
    while let Some(po) = p {
        if po == outer {
            return true;
        }
        p = f.parent_op(po);
    }
    false
}

/// Registers per thread a value of type `t` holds (tensors in a register layout; 16-bit
/// elements two to a register; predicates and shared tiles none).
fn regs_of(f: &Function, t: &Type) -> u64 {
    let (Some(id), Some(dt)) = (t.layout(), t.elem().num()) else { return 0 };
    if matches!(f.layouts.get(id), Some(Layout::Shared { .. })) || dt.size_bytes() == 0 {
        return 0;
    }
    let bits = dt.size_bytes() as u64 * 8;
    if bits == 8 && t.elem() == trident_ir::Elem::Num(trident_ir::DType::I1) {
        return 0;
    }
    distributed(&f.layouts, id, t.shape()).map_or(0, |l| (l.num_regs() as u64 * bits).div_ceil(32))
}

/// A coarse estimate of the registers loop `lp` keeps live: what it carries, the tensors
/// from outside it that it reads, and the largest dot result it makes that it does not carry.
fn pressure(f: &Function, lp: Op) -> u64 {
    let regions = f.ops[lp].regions.clone();
    let mut carried = 0;
    for &r in &regions {
        for &a in &f.blocks[r].args {
            carried += regs_of(f, f.ty(a));
        }
    }
    let mut outside: Vec<Value> = vec![];
    let mut dots = 0;
    for &r in &regions {
        f.walk_block(r, &mut |o| {
            for &v in &f.ops[o].operands {
                if !regions.iter().any(|&r| f.is_defined_within(v, r)) && !outside.contains(&v) {
                    outside.push(v);
                }
            }
            if matches!(f.ops[o].kind, OpKind::Dot { .. }) {
                dots = dots.max(regs_of(f, f.ty(f.ops[o].results[0])));
            }
        });
    }
    let invariant: u64 = outside.iter().map(|&v| held(f, v)).sum();
    if std::env::var_os("TRIDENT_DEBUG_PIPELINE").is_some() {
        eprintln!("gpu-shared-operands: `{}`: estimated registers: carried {carried} + invariant {invariant} + largest dot {dots}", f.name);
    }
    carried + invariant + dots
}

/// Registers an invariant value really holds: none for a constant (an immediate), one for a
/// splat scalar, its source's for a broadcast or a new unit dim (the copies are the same
/// registers).
fn held(f: &Function, v: Value) -> u64 {
    let Some(d) = f.def_op(v) else { return regs_of(f, f.ty(v)) };
    match f.ops[d].kind {
        OpKind::Constant(_) => 0,
        OpKind::Splat => 1,
        OpKind::Broadcast | OpKind::ExpandDims { .. } => held(f, f.ops[d].operands[0]),
        _ => regs_of(f, f.ty(v)),
    }
}

/// Replaces `conv` by a shared tile stored before the loop and a `local_load` before each of
/// `dots`. False (nothing changed that matters: `f` is a scratch copy) when the layouts do not
/// make an `ldmatrix` tile.
fn rewrite(f: &mut Function, conv: Op, dots: &[Op]) -> bool {
    let src = f.ops[conv].operands[0];
    let res = f.ops[conv].results[0];
    let (st, rt) = (f.ty(src).clone(), f.ty(res).clone());
    let (Some(sid), Some(rid)) = (st.layout(), rt.layout()) else { return false };
    let Some(Layout::DotOperand { op_idx, k_width, .. }) = f.layouts.get(rid).cloned() else { return false };
    let (Ok(sl), Ok(dl)) = (distributed(&f.layouts, sid, st.shape()), distributed(&f.layouts, rid, rt.shape())) else {
        return false;
    };
    let Some(bytes) = st.elem().num().map(|d| d.size_bytes() as u32) else { return false };
    let Some(tile) = MmaTile::choose(&sl, &dl, op_idx, k_width, bytes) else { return false };
    let shared = f.intern_layout(tile.layout(rt.shape().len()));
    let bt = rt.with_layout(Some(shared));
    let loc = f.ops[conv].loc;
    let alloc = f.new_op(OpKind::LocalAlloc, &[], &[bt], loc);
    f.insert_op_before(conv, alloc);
    let buf = f.result(alloc, 0);
    let store = f.new_op(OpKind::LocalStore, &[buf, src], &[], loc);
    f.insert_op_before(conv, store);
    for &d in dots {
        let ld = f.new_op(OpKind::LocalLoad, &[buf], std::slice::from_ref(&rt), f.ops[d].loc);
        f.insert_op_before(d, ld);
        let v = f.result(ld, 0);
        for o in f.ops[d].operands.iter_mut() {
            if *o == res {
                *o = v;
            }
        }
    }
    f.erase_op(conv);
    true
}
