//! Software pipelining of loops that feed `dot` from global memory (`num_stages`).
//!
//! A loop whose loads go straight into mma operands is split in two stages. Stage 0 (the
//! loads and what computes their pointers and masks, including pointer increments carried
//! by the loop) runs `S - 1` iterations ahead and copies tiles with `cp.async` into an
//! `S`-slot ring of shared buffers; stage 1 (everything else) reads the current slot with
//! `ldmatrix`. The rewritten loop:
//!
//! ```text
//! bufs = local_alloc                      // [S, tile...] per pipelined load
//! for d in 0..S-1: stage0(iter d) → async_copy into slot d (masked by d < trip count); commit
//! for iv, ..., r = 0, w = S-1:             // r = k%S, w = (k+S-1)%S, carried wrapping
//!   async_wait S-2; barrier               // slot r has arrived, slot w (read at k-1) is free
//!   operands = local_load(bufs[r])
//!   stage0(iter k+S-1) → async_copy into slot w; commit
//!   stage1(iter k)
//!   r, w = next(r), next(w)
//! async_wait 0
//! ```
//!
//! With warpgroup MMA (sm_90a) the prefetch goes after stage 1 instead: the dots run
//! asynchronously while the copies issue. (Right after the first dot was tried: on the
//! emulator's H100 model it made attention with one 4-warp CTA per SM 23% faster and the
//! 8-warp benchmark configuration 12% slower — the copies' issue then delays the softmax;
//! `bench/PROFILE.md`. Left as it is until a GPU decides.)
//!
//! A load may reach its conversion through a `trans` of its last two dims (`b.T` of a
//! `[N, K]` tile, `k.T` in attention). With TMA the ring then keeps the tiles as the copies
//! write them, in the load's dims, and the read sees the slot through `memdesc_trans`: the
//! same bytes as `[K, N]` with the layout's dims renamed (a K-major B operand, which wgmma's
//! descriptors and `ldmatrix` read as they are). A cp.async ring holds such a tile in the
//! operand's dims: the copy's pointers and mask are transposed (`trans`, free in registers)
//! and the tile chosen from the transposed registers' layout.
//!
//! Values of stage 0 that stage 1 also needs (masks from the induction variable) are
//! recomputed in stage 1. On a TMA ring the loads' pointers and masks are dead (the copies
//! take the boxes' offsets), so what only feeds them belongs to neither stage: a K offset the
//! loop carries may feed both a box and its mask. Loops that do not fit (stage 0 depending on stage 1, a pipelined
//! load with a non-zero `other`, a pointer carried out of the loop) are left alone.
//!
//! **Records.** A body holding `record` ops (the user's profiling scopes; the automatic
//! regions are added after this pass) keeps every load and dot where it was among them:
//! the body is rebuilt in its own order, a pipelined load's place getting the wait
//! (before the first one) and the `local_load` of the current slot. The prefetch of
//! iteration k+S−1 goes where the schedule above puts it (after the wait and reads at the
//! first load's place, or at the end of the body), so a scoped kernel runs the unscoped
//! kernel's schedule and its profile describes that kernel; the prefetch's issue counts
//! in the region that holds its place. Without records the schedule above is kept
//! exactly.

use super::descriptors::{new_barriers, new_map, window_eligible};
use crate::analysis::AxisAnalysis;
use crate::layout::distributed;
use crate::machine::mma::MmaTile;
use crate::machine::scratch::scratch_bytes;
use crate::machine::tma::{swizzle_for, TmaFill};
use crate::machine::vector::vector_width_of;
use crate::options::GpuOptions;
use std::collections::{HashMap, HashSet};
use trident_ir::{BinaryOp, CmpPred, Const, Effect, Function, Layout, Op, OpKind, Type, Value, ValueDef};

/// Pipelines every eligible loop; returns how many.
pub fn pipeline_loops(f: &mut Function, opts: &GpuOptions) -> usize {
    if opts.num_stages < 2 {
        return 0;
    }
    let fors: Vec<Op> = f.all_ops().into_iter().filter(|&op| matches!(f.ops[op].kind, OpKind::For)).collect();
    let mut n = 0;
    for op in fors {
        if f.ops[op].parent.is_some() && pipeline_loop(f, op, opts) {
            n += 1;
        }
    }
    n
}

/// Says why a loop is not pipelined when `TRIDENT_DEBUG_PIPELINE` is set.
fn skip(why: &str) -> bool {
    if std::env::var_os("TRIDENT_DEBUG_PIPELINE").is_some() {
        eprintln!("gpu-pipeline: loop not pipelined: {why}");
    }
    false
}

struct Cand {
    load: Op,
    /// A `trans` swapping the last two dims between the load and its conversion (`b.T` of a
    /// `[N, K]` tile): a TMA ring keeps the tile as loaded and the read sees it transposed
    /// (`memdesc_trans`); a cp.async ring holds it in the operand's dims, copied through
    /// transposed pointers.
    trans: Option<Op>,
    convert: Op,
    /// The operand's tile, in the operand's dims (after `trans`).
    tile: MmaTile,
    /// A tensor-descriptor load TMA can copy straight into the ring: the swizzle span of
    /// the slot's layout and the boxes that fill a slot (see `machine::tma::swizzle_for`).
    tma: Option<TmaFill>,
    /// Wide enough for `cp.async` (4, 8 or 16 bytes per copy).
    cp_async: bool,
}

fn is_zero(f: &Function, v: Value) -> bool {
    match f.values[v].def {
        ValueDef::Result(op, _) => match &f.ops[op].kind {
            OpKind::Constant(Const::Int(0)) | OpKind::Constant(Const::Bool(false)) => true,
            OpKind::Constant(Const::Float(x)) => *x == 0.0 && x.is_sign_positive(),
            OpKind::Splat => is_zero(f, f.ops[op].operands[0]),
            _ => false,
        },
        ValueDef::Arg(..) => false,
    }
}

fn pipeline_loop(f: &mut Function, for_op: Op, opts: &GpuOptions) -> bool {
    let d = f.ops[for_op].clone();
    let body = d.regions[0];
    let args = f.blocks[body].args.clone();
    let Some(term) = f.terminator(body) else { return false };
    let yields = f.ops[term].operands.to_vec();
    let body_ops: Vec<Op> = f.blocks[body].ops.iter().copied().filter(|&o| o != term).collect();
    let pos: HashMap<Op, usize> = body_ops.iter().enumerate().map(|(i, &o)| (o, i)).collect();
    let uses = f.use_counts();
    let axis = AxisAnalysis::run(f);
    let s = opts.num_stages;

    // 1. Loads feeding mma operands.
    let mut cands = vec![];
    for &op in &body_ops {
        let od = &f.ops[op];
        if !matches!(od.kind, OpKind::Load { volatile: false, .. } | OpKind::DescLoad { .. }) {
            continue;
        }
        let r = od.results[0];
        if uses[r] != 1 || od.operands.get(2).is_some_and(|&o| !is_zero(f, o)) {
            continue;
        }
        let Some(&user) = body_ops.iter().find(|&&u| f.ops[u].operands.contains(&r)) else { continue };
        let (trans, conv) = match &f.ops[user].kind {
            OpKind::ConvertLayout => (None, user),
            OpKind::Trans { perm } if swaps_last_two(perm) => {
                let tr = f.ops[user].results[0];
                let next = body_ops.iter().find(|&&u| f.ops[u].operands.contains(&tr));
                match next {
                    Some(&c) if uses[tr] == 1 && matches!(f.ops[c].kind, OpKind::ConvertLayout) => (Some(user), c),
                    _ => continue,
                }
            }
            _ => continue,
        };
        let ct = f.ty(f.ops[conv].results[0]).clone();
        let Some(Layout::DotOperand { op_idx, parent, k_width }) =
            ct.layout().and_then(|id| f.layouts.get(id)).cloned()
        else {
            continue;
        };
        if !matches!(f.layouts.get(parent), Some(Layout::Mma { .. })) {
            continue;
        }
        let lt = f.ty(r).clone();
        let (Some(lid), Some(cid)) = (lt.layout(), ct.layout()) else { continue };
        let (Ok(src), Ok(dst)) = (distributed(&f.layouts, lid, lt.shape()), distributed(&f.layouts, cid, ct.shape()))
        else {
            continue;
        };
        let bytes = lt.elem().num().map_or(0, |t| t.size_bytes() as u32);
        let w = vector_width_of(&axis, od.operands[0], od.operands.get(1).copied(), &src, bytes);
        let cp_async = matches!(w as u32 * bytes, 4 | 8 | 16);
        // What cp.async's tile follows: the registers of the value the conversion reads
        // (the transposed tile: its pointers are transposed alike).
        let Some(src) = operand_source(f, conv) else { continue };
        // TMA writes the box in memory order: rows along the load's last dimension, which
        // a `trans` makes the operand's first (of the last two).
        let fast = if trans.is_some() { 0 } else { 1 };
        let tma_tile = if window_eligible(f, op, opts) {
            MmaTile::with_fast(&dst, op_idx, k_width, bytes, fast).and_then(|t| {
                let sw = stored_tile(t).shared(lt.shape()).ok().and_then(|sl| swizzle_for(&sl, bytes))?;
                Some((t, sw))
            })
        } else {
            None
        };
        let (tile, tma) = match tma_tile {
            Some((t, sw)) => (t, Some(sw)),
            None => match MmaTile::choose(&src, &dst, op_idx, k_width, bytes) {
                Some(t) if cp_async => (t, None),
                _ => continue,
            },
        };
        cands.push(Cand { load: op, trans, convert: conv, tile, tma, cp_async });
    }
    // TMA when every pipelined load can use it; otherwise cp.async for those that can.
    let use_tma = !cands.is_empty() && cands.iter().all(|c| c.tma.is_some());
    if !use_tma {
        // The cp.async ring's tiles follow the loads' register layouts.
        cands.retain(|c| c.cp_async);
        for c in cands.iter_mut().filter(|c| c.tma.is_some()) {
            c.tma = None;
            let conv = c.convert;
            let (lt, ct) = (f.ty(f.ops[c.load].results[0]).clone(), f.ty(f.ops[conv].results[0]).clone());
            let Some(cid) = ct.layout() else { return false };
            let (Some(src), Ok(dst)) = (operand_source(f, conv), distributed(&f.layouts, cid, ct.shape())) else {
                return false;
            };
            let Some(Layout::DotOperand { op_idx, k_width, .. }) = f.layouts.get(cid).cloned() else { return false };
            let bytes = lt.elem().num().map_or(0, |t| t.size_bytes() as u32);
            match MmaTile::choose(&src, &dst, op_idx, k_width, bytes) {
                Some(t) => c.tile = t,
                None => return skip("a load's cp.async tile does not fit its operand layout"),
            }
        }
    }
    if cands.is_empty() {
        return skip("no load feeds an mma operand directly (or it is too narrow for cp.async)");
    }
    // The ring must fit next to the kernel's scratch space (and other loops' rings).
    let per_stage: u64 = cands
        .iter()
        .map(|c| {
            let t = f.ty(f.ops[c.load].results[0]);
            t.numel() * t.elem().num().map_or(4, |d| d.size_bytes() as u64)
        })
        .sum();
    // Scratch of ops inside the loop is live together with the ring; the rest can share it.
    let mut used = 0u64;
    f.walk_block(body, &mut |o| used = used.max(scratch_bytes(f, o).unwrap_or(0)));
    let room = (opts.shared_limit() as u64).saturating_sub(used);
    let mut s = s;
    while s >= 2 && s as u64 * per_stage > room {
        s -= 1;
    }
    if s < 2 {
        return skip(&format!("{per_stage} bytes per stage do not fit next to {used} bytes of shared memory"));
    }

    // 2. Stage 0: the loads' backward slice in the body, plus the updates of the loop-carried values it reads.
    let load_set: HashSet<Op> = cands.iter().map(|c| c.load).collect();
    let mut stage0: HashSet<Op> = load_set.clone();
    let mut carried: HashSet<usize> = HashSet::new();
    // A TMA copy needs only its box's offsets (the map is built before the loop).
    let copy_operands = |f: &Function, load: Op| -> Vec<Value> {
        match f.ops[load].kind {
            OpKind::DescLoad { rank } if use_tma => f.ops[load].operands[4 + 2 * rank as usize..].to_vec(),
            _ => f.ops[load].operands.to_vec(),
        }
    };
    let mut work: Vec<Value> = cands.iter().flat_map(|c| copy_operands(f, c.load)).collect();
    while let Some(v) = work.pop() {
        match f.values[v].def {
            ValueDef::Arg(b, i) if b == body && i > 0 && !carried.contains(&(i as usize)) => {
                carried.insert(i as usize);
                work.push(yields[i as usize - 1]);
            }
            ValueDef::Result(op, _) if pos.contains_key(&op) => {
                if !stage0.insert(op) {
                    continue;
                }
                let od = &f.ops[op];
                if !od.regions.is_empty() || (od.kind.effect() != Effect::Pure && !load_set.contains(&op)) {
                    return skip(&format!("the loads' operands depend on `{}`", od.kind.name()));
                }
                work.extend(od.operands.iter().copied());
            }
            _ => {}
        }
    }
    // With TMA the loads' pointers, masks and `other` are dead (the copies take the box's
    // offsets; DCE removes the rest after `gpu-descriptors`): ops that only feed them are
    // neither stage 0 nor stage 1 — a carried offset (`off_k += BLOCK_K`) may feed both the
    // box and its dead mask.
    let tma_dead: HashSet<Op> = if use_tma { feeds_only_dead_operands(f, &body_ops, &cands) } else { HashSet::new() };
    // Loop-carried values of stage 0 are used by stage 0 only and not after the loop.
    for &i in &carried {
        let a = args[i];
        for &op in &body_ops {
            if f.ops[op].operands.contains(&a) && !stage0.contains(&op) && !tma_dead.contains(&op) {
                return skip(&format!("a loop-carried value of the loads is also used by `{}`", f.ops[op].kind.name()));
            }
        }
        if uses[d.results[i - 1]] > 0 {
            return skip("a loop-carried pointer is used after the loop");
        }
    }
    // Stage-0 values stage 1 needs are recomputed for the current iteration: they must not
    // depend on loop-carried values.
    let mut recompute: HashSet<Op> = HashSet::new();
    let mut need: Vec<Value> = vec![];
    for &op in &body_ops {
        if stage0.contains(&op)
            || tma_dead.contains(&op)
            || cands.iter().any(|c| c.convert == op || c.trans == Some(op))
        {
            continue;
        }
        need.extend(f.ops[op].operands.iter().copied());
        let mut inner = vec![];
        for &r in &f.ops[op].regions {
            f.walk_block(r, &mut |o| inner.extend(f.ops[o].operands.iter().copied()));
        }
        need.extend(inner);
    }
    for (i, &y) in yields.iter().enumerate() {
        if !carried.contains(&(i + 1)) {
            need.push(y);
        }
    }
    while let Some(v) = need.pop() {
        match f.values[v].def {
            ValueDef::Result(op, _) if stage0.contains(&op) => {
                if load_set.contains(&op) {
                    // The loaded tile itself is only read through its conversion.
                    if !cands.iter().any(|c| c.load == op) {
                        return skip("a loaded tile is used outside its conversion");
                    }
                    continue;
                }
                if recompute.insert(op) {
                    need.extend(f.ops[op].operands.iter().copied());
                }
            }
            ValueDef::Arg(b, i) if b == body && carried.contains(&(i as usize)) => {
                return skip("stage 1 needs a value computed from a loop-carried pointer")
            }
            _ => {}
        }
    }

    // 3. Rewrite. Records in the body (the user's scopes: the automatic regions come after
    // this pass) must keep every memory op and dot where it was among them, so such a body
    // is rebuilt in its own order instead of the pipeliner's (see `in_order` below).
    let mut in_order = false;
    f.walk_block(body, &mut |o| in_order |= matches!(f.ops[o].kind, OpKind::Record { .. }));
    // Warp specialization, where the author asked for it and the loop fits (see
    // `warp_specialize`); otherwise the loop is pipelined as below.
    let order0: Vec<Op> = body_ops.iter().copied().filter(|o| stage0.contains(o)).collect();
    let ws_host = super::warp_specialize::host_of(f, for_op);
    let ws = ws_host.is_some_and(|host| {
        let ring_reads: HashSet<Value> = cands.iter().map(|c| f.ops[c.convert].results[0]).collect();
        let why = if !opts.target.has_wgmma() {
            Some("the target has no warpgroup MMA (sm_90a)")
        } else if !use_tma {
            Some("not every pipelined load is a TMA copy")
        } else if opts.sanitize {
            Some("sanitized kernels keep one warp role")
        } else {
            super::warp_specialize::blocker(f, for_op, host, &ring_reads, &stage0, &carried)
        };
        match why {
            Some(w) => skip(&format!("warp_specialize not applied: {w}")),
            None => true,
        }
    });
    let loc = d.loc;
    let (lb, ub, step) = (d.operands[0], d.operands[1], d.operands[2]);
    let ivt = f.ty(args[0]).clone();
    let i32t = Type::i32();
    // The ring and its maps go before the loop, or before the loop a warp specialization
    // splits (both the consumers and the producer use them).
    let anchor = if ws { ws_host.unwrap_or(for_op) } else { for_op };
    let mut ins = |f: &mut Function, kind: OpKind, operands: &[Value], ty: Option<Type>| -> Value {
        let o = f.new_op(kind, operands, ty.as_slice(), loc);
        f.insert_op_before(anchor, o);
        f.ops[o].results.first().copied().unwrap_or(operands.first().copied().unwrap_or(lb))
    };
    // Buffers.
    let mut bufs = vec![];
    for c in &cands {
        // A TMA ring holds tiles as loaded (in the load's dims), a cp.async ring in the operand's.
        let lt = match c.trans {
            Some(tr) if !use_tma => f.ty(f.ops[tr].results[0]).clone(),
            _ => f.ty(f.ops[c.load].results[0]).clone(),
        };
        let mut shape = vec![s];
        shape.extend_from_slice(lt.shape());
        let stored = if c.trans.is_some() && use_tma { stored_tile(c.tile) } else { c.tile };
        let l3 = f.intern_layout(stored.layout(shape.len()));
        let l2 = f.intern_layout(stored.layout(lt.shape().len()));
        let bt = Type::Tensor { shape: shape.into_iter().collect(), elem: lt.elem(), layout: Some(l3) };
        let b = ins(f, OpKind::LocalAlloc, &[], Some(bt));
        bufs.push((b, lt.with_layout(Some(l2))));
    }
    // TMA: one tensor map per load (built at launch) and one mbarrier per slot, on which
    // every load's copy into the slot arrives.
    let mut maps = vec![];
    let mut bars = None;
    if use_tma {
        for c in &cands {
            let fill = c.tma.unwrap_or(TmaFill { swizzle: 0, box_cols: 0, boxes: 1 });
            let m = new_map(f, c.load, fill.swizzle, fill.box_cols);
            f.insert_op_before(anchor, m);
            maps.push(f.result(m, 0));
        }
        bars = Some(new_barriers(f, s, cands.len() as u32, loc));
    }
    let bar_slot_ty = bars.map(|_| {
        let one = f.intern_layout(Layout::Shared { vec: 1, per_phase: 1, max_phase: 1, order: vec![0].into() });
        Type::Tensor { shape: vec![1].into(), elem: trident_ir::Elem::Num(trident_ir::DType::I64), layout: Some(one) }
    });
    if let (true, Some(full), Some(bt)) = (ws, bars, bar_slot_ty.clone()) {
        let loads = cands
            .iter()
            .enumerate()
            .map(|(ci, c)| {
                let trans_ty = c.trans.map(|tr| {
                    let tt = f.ty(f.ops[tr].results[0]).clone();
                    let l = f.intern_layout(c.tile.layout(tt.shape().len()));
                    tt.with_layout(Some(l))
                });
                super::warp_specialize::RingLoad {
                    load: c.load,
                    trans: c.trans,
                    convert: c.convert,
                    buf: bufs[ci].0,
                    slot_ty: bufs[ci].1.clone(),
                    trans_ty,
                    map: maps[ci],
                }
            })
            .collect();
        let plan = super::warp_specialize::RingPlan {
            stages: s,
            loads,
            full,
            bar_slot_ty: bt,
            order0: &order0,
            stage0: &stage0,
            recompute: &recompute,
            carried: &carried,
            dead: &tma_dead,
            in_order,
        };
        let host = ws_host.expect("warp-specialized loops have a host");
        super::warp_specialize::rewrite(f, for_op, host, &plan, opts.num_warps, opts.setmaxnreg);
        return true;
    }
    // The ops that fill slot `slot` for the load `ci` under `map` (stage 0 of an iteration
    // that exists when `valid`): a TMA copy on the slot's barrier, or a `cp.async`.
    let copy = |f: &mut Function,
                ins: &mut Inserter<'_>,
                ci: usize,
                slot: Value,
                map: &HashMap<Value, Value>,
                valid: Value|
     -> Op {
        let op = cands[ci].load;
        let view = ins(f, OpKind::MemDescIndex, &[bufs[ci].0, slot], Some(bufs[ci].1.clone()));
        if let (Some(b), Some(bt)) = (bars, bar_slot_ty.clone()) {
            let bar = ins(f, OpKind::MemDescIndex, &[b, slot], Some(bt));
            let mut operands = vec![maps[ci], view, bar];
            operands.extend(copy_operands(f, op).into_iter().map(|v| map.get(&v).copied().unwrap_or(v)));
            operands.push(valid);
            return f.new_op(OpKind::TmaCopy, &operands, &[], f.ops[op].loc);
        }
        let (mut ptr, mut mask) = mapped_ptr_mask(f, op, map);
        if let Some(tr) = cands[ci].trans {
            // The tile in the operand's dims: its pointers and mask transposed like the data.
            let (kind, tt) = (f.ops[tr].kind.clone(), f.ty(f.ops[tr].results[0]).clone());
            let pt = Type::Tensor { shape: tt.shape().into(), elem: f.ty(ptr).elem(), layout: tt.layout() };
            ptr = ins(f, kind.clone(), &[ptr], Some(pt));
            mask = mask.map(|m| ins(f, kind, &[m], Some(tt.with_elem(trident_ir::DType::I1))));
        }
        let vm = valid_mask(f, ins, ptr, mask, valid);
        // The copy is the load: its location (sanitize reports accesses there).
        f.new_op(OpKind::AsyncCopy, &[view, ptr, vm], &[], f.ops[op].loc)
    };
    // Prologue: stage 0 of iterations 0..S-1. The ring may reuse space of earlier shared
    // memory users, whose reads must be over before the first copy lands.
    ins(f, OpKind::Barrier, &[], None);
    let mut cur: HashMap<usize, Value> = carried.iter().map(|&i| (i, d.operands[3 + i - 1])).collect();
    for dd in 0..s - 1 {
        let c = ins(f, OpKind::Constant(Const::Int(dd as i64)), &[], Some(ivt.clone()));
        let m = ins(f, OpKind::Binary(BinaryOp::Mul), &[c, step], Some(ivt.clone()));
        let iv = ins(f, OpKind::Binary(BinaryOp::Add), &[lb, m], Some(ivt.clone()));
        let valid = ins(f, OpKind::Cmp(CmpPred::Lt), &[iv, ub], Some(Type::i1()));
        let slot = ins(f, OpKind::Constant(Const::Int(dd as i64)), &[], Some(i32t.clone()));
        let mut map: HashMap<Value, Value> = HashMap::new();
        map.insert(args[0], iv);
        for (&i, &v) in &cur {
            map.insert(args[i], v);
        }
        for &op in &order0 {
            if let Some(ci) = cands.iter().position(|c| c.load == op) {
                let cp = copy(f, &mut ins, ci, slot, &map, valid);
                f.insert_op_before(for_op, cp);
            } else {
                let c = f.clone_op(op, &mut map);
                f.insert_op_before(for_op, c);
            }
        }
        if !use_tma {
            ins(f, OpKind::AsyncCommitGroup, &[], None);
        }
        for &i in carried.iter() {
            let y = yields[i - 1];
            cur.insert(i, map.get(&y).copied().unwrap_or(y));
        }
    }
    // The new loop carries the read slot (k % S) and the write slot ((k + S - 1) % S) as
    // wrapping counters: a remainder by a constant is a long sequence on the GPU.
    let r0 = ins(f, OpKind::Constant(Const::Int(0)), &[], Some(i32t.clone()));
    let w0 = ins(f, OpKind::Constant(Const::Int(s as i64 - 1)), &[], Some(i32t.clone()));
    let mut arg_types: Vec<Type> = args.iter().map(|&a| f.ty(a).clone()).collect();
    arg_types.push(i32t.clone());
    arg_types.push(i32t.clone());
    let nb = f.new_block(&arg_types);
    let nargs = f.blocks[nb].args.clone();
    let mut operands = vec![lb, ub, step];
    for i in 1..args.len() {
        operands.push(cur.get(&i).copied().unwrap_or(d.operands[3 + i - 1]));
    }
    operands.push(r0);
    operands.push(w0);
    let mut rtypes: Vec<Type> = d.results.iter().map(|&r| f.ty(r).clone()).collect();
    rtypes.push(i32t.clone());
    rtypes.push(i32t.clone());
    let nfor = f.new_op(OpKind::For, &operands, &rtypes, loc);
    f.add_region(nfor, nb);
    f.insert_op_before(for_op, nfor);
    {
        let mut app = |f: &mut Function, kind: OpKind, operands: &[Value], ty: Option<Type>| -> Value {
            let o = f.new_op(kind, operands, ty.as_slice(), loc);
            f.append_op(nb, o);
            f.ops[o].results.first().copied().unwrap_or(lb)
        };
        let (iv, rs, ws) = (nargs[0], nargs[nargs.len() - 2], nargs[nargs.len() - 1]);
        let mut map1: HashMap<Value, Value> = HashMap::new();
        for (i, &a) in args.iter().enumerate() {
            map1.insert(a, nargs[i]);
        }
        let mut map0: HashMap<Value, Value> = HashMap::new();
        for &i in &carried {
            map0.insert(args[i], nargs[i]);
        }
        // Stage 0 of iteration k + S - 1: the copies into slot w (read by the previous
        // iteration, whose readers all passed this iteration's barrier), then the commit.
        let prefetch = |f: &mut Function, app: &mut Inserter<'_>, map0: &mut HashMap<Value, Value>| {
            let ahead = app(f, OpKind::Constant(Const::Int(s as i64 - 1)), &[], Some(ivt.clone()));
            let m = app(f, OpKind::Binary(BinaryOp::Mul), &[ahead, step], Some(ivt.clone()));
            let ivn = app(f, OpKind::Binary(BinaryOp::Add), &[iv, m], Some(ivt.clone()));
            let valid = app(f, OpKind::Cmp(CmpPred::Lt), &[ivn, ub], Some(Type::i1()));
            map0.insert(args[0], ivn);
            for &op in &order0 {
                if let Some(ci) = cands.iter().position(|c| c.load == op) {
                    let cp = copy(f, app, ci, ws, map0, valid);
                    f.append_op(nb, cp);
                } else {
                    let c = f.clone_op(op, map0);
                    f.append_op(nb, c);
                }
            }
            if !use_tma {
                app(f, OpKind::AsyncCommitGroup, &[], None);
            }
        };
        // The wait for slot r and its reads: at the top, or (records in the body) at the
        // first pipelined load's place, each read at its load's place.
        // With TMA and warpgroup MMA (the prefetch after stage 1) the CTA barrier that frees
        // slot w moves from the top to just before the prefetch (`late_barrier`): each thread
        // sees slot r's data through the mbarrier alone, and there the barrier lets this
        // iteration's MMAs run on (`wgmma_in_flight = 1`: they read slot r) while it waits
        // for the previous iteration's, which read slot w — the tensor cores stay busy across
        // the refill and the loop's back edge. A cp.async ring keeps its barrier at the top
        // (it publishes every thread's copies); where a dot of the body accumulates into the
        // loop's carried value (the MMA then stays in flight across the back edge: matmul),
        // that barrier lets the previous iteration's MMA run on (it reads slot w, which
        // nothing writes before the late barrier) and a second, late barrier frees slot w —
        // Triton's schedule for this loop on Hopper. Elsewhere (attention: every MMA is
        // waited for within its iteration) one barrier at the top stays cheaper.
        // Only where every dot of the body reads both operands from the rings: an MMA in
        // flight across a barrier must read nothing the iteration writes before the next
        // full one (a conversion's shared tile, rewritten every iteration, would race).
        let ring_reads: HashSet<Value> = cands.iter().map(|c| f.ops[c.convert].results[0]).collect();
        let ring_fed = body_ops.iter().filter(|&&o| matches!(f.ops[o].kind, OpKind::Dot { .. })).all(|&o| {
            let d = &f.ops[o];
            ring_reads.contains(&d.operands[0]) && ring_reads.contains(&d.operands[1])
        });
        let chained = !use_tma && carries_mma_accumulator(f, body);
        let late_barrier = opts.target.has_wgmma() && !in_order && ring_fed && (use_tma || chained);
        let wait = |f: &mut Function, app: &mut Inserter<'_>| {
            match (bars, bar_slot_ty.clone()) {
                (Some(b), Some(bt)) => {
                    let bar = app(f, OpKind::MemDescIndex, &[b, rs], Some(bt));
                    app(f, OpKind::MbarrierWait, &[bar], None);
                }
                _ => {
                    app(f, OpKind::AsyncWait { pending: s - 2 }, &[], None);
                }
            }
            if !use_tma || !late_barrier {
                app(f, OpKind::Barrier, &[], None);
                if late_barrier {
                    // The barrier just appended: the previous iteration's MMA may run on.
                    if let Some(&o) = f.blocks[nb].ops.last() {
                        f.ops[o].attrs.set(trident_ir::discardable::WGMMA_IN_FLIGHT, trident_ir::Attr::Int(1));
                    }
                }
            }
        };
        let read = |f: &mut Function, app: &mut Inserter<'_>, map1: &mut HashMap<Value, Value>, ci: usize| {
            let c = &cands[ci];
            let mut view = app(f, OpKind::MemDescIndex, &[bufs[ci].0, rs], Some(bufs[ci].1.clone()));
            if let (Some(tr), true) = (c.trans, use_tma) {
                // The slot seen in the operand's dims: the same bytes, the layout's dims renamed.
                let OpKind::Trans { perm } = f.ops[tr].kind.clone() else { unreachable!("a trans candidate") };
                let tt = f.ty(f.ops[tr].results[0]).clone();
                let l = f.intern_layout(c.tile.layout(tt.shape().len()));
                view = app(f, OpKind::MemDescTrans { perm }, &[view], Some(tt.with_layout(Some(l))));
            }
            let ct = f.ty(f.ops[c.convert].results[0]).clone();
            let v = app(f, OpKind::LocalLoad, &[view], Some(ct));
            map1.insert(f.ops[c.convert].results[0], v);
        };
        // Where the prefetch goes: right after the wait and reads, or with warpgroup MMA
        // after stage 1 (the dots run asynchronously while the copies issue, into the
        // slot the previous iteration's dots read, which they finished before this
        // iteration's barrier).
        let first_load = body_ops.iter().position(|o| cands.iter().any(|c| c.load == *o));
        let at_end = opts.target.has_wgmma();
        if !in_order {
            wait(f, &mut app);
            for ci in 0..cands.len() {
                read(f, &mut app, &mut map1, ci);
            }
            if !at_end {
                prefetch(f, &mut app, &mut map0);
            }
        }
        // Stage 1 for iteration k (with recomputed stage-0 values), in the body's order.
        // Records in the body (the user's scopes) keep every op where it was among them,
        // the loads' waits and reads included; the prefetch is placed as without records,
        // so a scoped kernel runs the unscoped kernel's schedule (it counts in the region
        // that holds its place).
        let mut fetched = !in_order && !at_end;
        for (at, &op) in body_ops.iter().enumerate() {
            if cands.iter().any(|c| c.convert == op || c.trans == Some(op)) {
                continue;
            }
            if let Some(ci) = cands.iter().position(|c| c.load == op) {
                if in_order {
                    if Some(at) == first_load {
                        wait(f, &mut app);
                    }
                    read(f, &mut app, &mut map1, ci);
                    if Some(at) == first_load && !at_end {
                        prefetch(f, &mut app, &mut map0);
                        fetched = true;
                    }
                }
                continue;
            }
            if (!stage0.contains(&op) || recompute.contains(&op)) && !tma_dead.contains(&op) {
                let c = f.clone_op(op, &mut map1);
                f.append_op(nb, c);
            }
        }
        if !fetched {
            if late_barrier {
                let b = f.new_op(OpKind::Barrier, &[], &[], loc);
                f.ops[b].attrs.set(trident_ir::discardable::WGMMA_IN_FLIGHT, trident_ir::Attr::Int(1));
                f.append_op(nb, b);
            }
            prefetch(f, &mut app, &mut map0);
        }
        // Next slots: s + 1, wrapped to 0 at S (`& (S - 1)` when S is a power of two).
        let one = app(f, OpKind::Constant(Const::Int(1)), &[], Some(i32t.clone()));
        let next = |f: &mut Function, slot: Value| -> Value {
            let n = app(f, OpKind::Binary(BinaryOp::Add), &[slot, one], Some(i32t.clone()));
            if s.is_power_of_two() {
                let m = app(f, OpKind::Constant(Const::Int(s as i64 - 1)), &[], Some(i32t.clone()));
                app(f, OpKind::Binary(BinaryOp::And), &[n, m], Some(i32t.clone()))
            } else {
                let sc = app(f, OpKind::Constant(Const::Int(s as i64)), &[], Some(i32t.clone()));
                let z = app(f, OpKind::Constant(Const::Int(0)), &[], Some(i32t.clone()));
                let wrap = app(f, OpKind::Cmp(CmpPred::Eq), &[n, sc], Some(Type::i1()));
                app(f, OpKind::Select, &[wrap, z, n], Some(i32t.clone()))
            }
        };
        let rs1 = next(f, rs);
        let ws1 = next(f, ws);
        let mut ys = vec![];
        for (i, &y) in yields.iter().enumerate() {
            let m = if carried.contains(&(i + 1)) { &map0 } else { &map1 };
            ys.push(m.get(&y).copied().unwrap_or(y));
        }
        ys.push(rs1);
        ys.push(ws1);
        let t = f.new_op(OpKind::Yield, &ys, &[], loc);
        f.append_op(nb, t);
    }
    // Drain the copies still in flight (their slots are past the last iteration), and let
    // every warp finish reading the ring before its space is reused.
    // (TMA copies are issued only for iterations that exist, each waited for in its own.)
    let bar = f.new_op(OpKind::Barrier, &[], &[], loc);
    f.insert_op_after(for_op, bar);
    if !use_tma {
        let w = f.new_op(OpKind::AsyncWait { pending: 0 }, &[], &[], loc);
        f.insert_op_after(for_op, w);
    }
    let new_results = f.ops[nfor].results.clone();
    for (i, &r) in d.results.iter().enumerate() {
        f.replace_all_uses(r, new_results[i]);
    }
    f.detach_op(for_op);
    true
}

/// The ops of a loop body whose results only reach the pipelined TMA loads' pointer, mask and
/// `other` operands (dead once the copies take the box's offsets instead), transitively.
fn feeds_only_dead_operands(f: &Function, body_ops: &[Op], cands: &[Cand]) -> HashSet<Op> {
    let mut dead: HashSet<Op> = HashSet::new();
    // Every use of a body value: (user, operand index), users inside nested regions as
    // their top-level op with no index (a use that is never dead).
    let top: HashSet<Op> = body_ops.iter().copied().collect();
    let mut uses: HashMap<Value, Vec<(Op, Option<usize>)>> = HashMap::new();
    let block = body_ops.first().and_then(|&o| f.ops[o].parent);
    let all: Vec<Op> = block.map_or_else(Vec::new, |b| f.blocks[b].ops.clone());
    for &op in &all {
        for (i, &v) in f.ops[op].operands.iter().enumerate() {
            uses.entry(v).or_default().push((op, Some(i)));
        }
        for &r in &f.ops[op].regions {
            f.walk_block(r, &mut |o| {
                for &v in &f.ops[o].operands {
                    uses.entry(v).or_default().push((op, None));
                }
            });
        }
    }
    let dead_use = |dead: &HashSet<Op>, user: Op, at: Option<usize>| -> bool {
        if dead.contains(&user) {
            return true;
        }
        match (cands.iter().find(|c| c.load == user), &f.ops[user].kind, at) {
            // The pointers, the mask and `other` (the window's base, shape and strides build
            // the map before the loop; the offsets are the copy's).
            (Some(_), OpKind::DescLoad { .. }, Some(i)) => i < 3,
            _ => false,
        }
    };
    // Users come after their operands: one pass from the end reaches the fixed point.
    for &op in body_ops.iter().rev() {
        let d = &f.ops[op];
        if !top.contains(&op) || d.kind.effect() != Effect::Pure || !d.regions.is_empty() || d.results.is_empty() {
            continue;
        }
        let all_dead =
            d.results.iter().all(|r| uses.get(r).is_none_or(|us| us.iter().all(|&(u, at)| dead_use(&dead, u, at))));
        if all_dead && d.results.iter().any(|r| uses.contains_key(r)) {
            dead.insert(op);
        }
    }
    dead
}

/// The register layout of the value conversion `conv` reads (a load's tile, or its transpose).
fn operand_source(f: &Function, conv: Op) -> Option<crate::layout::LinearLayout> {
    let t = f.ty(f.ops[conv].operands[0]);
    distributed(&f.layouts, t.layout()?, t.shape()).ok()
}

/// Whether a dot of loop body `body` accumulates into a loop-carried value it alone reads and
/// yields back in its place, on warpgroup MMA (a version-3 mma layout): the emitter then
/// keeps its MMA in flight across the back edge (`Emitter::accumulates_in_place`).
fn carries_mma_accumulator(f: &Function, body: trident_ir::Block) -> bool {
    let Some(y) = f.terminator(body) else { return false };
    let yields = &f.ops[y].operands;
    let args = &f.blocks[body].args;
    f.blocks[body].ops.iter().any(|&op| {
        let d = &f.ops[op];
        if !matches!(d.kind, OpKind::Dot { .. }) {
            return false;
        }
        let (c, res) = (d.operands[2], d.results[0]);
        let Some(i) = args.iter().position(|&a| a == c).filter(|&i| i > 0) else { return false };
        let wg = matches!(
            f.ty(res).layout().and_then(|id| f.layouts.get(id)),
            Some(Layout::Mma { version: 3, warps_per_cta, .. }) if warps_per_cta.len() == 2
        );
        let uses = |v: Value| {
            f.blocks[body].ops.iter().map(|&o| f.ops[o].operands.iter().filter(|&&x| x == v).count()).sum::<usize>()
        };
        wg && yields.get(i - 1) == Some(&res) && uses(c) == 1 && uses(res) == 1
    })
}

/// Whether `perm` swaps the last two dims and keeps the others (a matrix transpose).
fn swaps_last_two(perm: &[u32]) -> bool {
    let n = perm.len();
    n >= 2
        && perm[..n - 2].iter().enumerate().all(|(i, &p)| p as usize == i)
        && perm[n - 2] as usize == n - 1
        && perm[n - 1] as usize == n - 2
}

/// The tile as a TMA copy stores it, in the load's dims, for an operand tile read through a
/// transpose: the load's last dimension contiguous, the same swizzle.
fn stored_tile(t: MmaTile) -> MmaTile {
    MmaTile { fast: 1, ..t }
}

/// The pointer and mask operands of a load under a value map.
fn mapped_ptr_mask(f: &Function, load: Op, map: &HashMap<Value, Value>) -> (Value, Option<Value>) {
    let od = &f.ops[load];
    let m = |v: Value| map.get(&v).copied().unwrap_or(v);
    (m(od.operands[0]), od.operands.get(1).map(|&v| m(v)))
}

/// Creates and places an op, returning its first result.
type Inserter<'a> = dyn FnMut(&mut Function, OpKind, &[Value], Option<Type>) -> Value + 'a;

/// `mask && iteration-exists` as a tensor like `ptr`.
fn valid_mask(f: &mut Function, ins: &mut Inserter<'_>, ptr: Value, mask: Option<Value>, valid: Value) -> Value {
    let pt = f.ty(ptr).clone();
    let mt = pt.with_elem(trident_ir::DType::I1);
    let vs = ins(f, OpKind::Splat, &[valid], Some(mt.clone()));
    match mask {
        Some(m) => ins(f, OpKind::Binary(BinaryOp::And), &[m, vs], Some(mt)),
        None => vs,
    }
}
