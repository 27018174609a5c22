//! Warp specialization of a TMA-pipelined loop (`tl.range(..., warp_specialize=True)` on
//! sm_90a), as part of `gpu-pipeline`.
//!
//! Without it, every warp of the CTA both issues the ring's copies and computes: the copies
//! for iteration k+S−1 wait behind iteration k's MMAs and CTA barrier. With it, an added
//! producer warp runs ahead on its own and the consumer warps (the kernel's `num_warps`,
//! which every layout describes) only wait for data, compute and hand slots back:
//!
//! ```text
//! full  = S mbarriers, one arrival per copy of a slot (the copies' expect_tx)
//! empty = S mbarriers, primed, one arrival per consumer warp
//! <prefix: what the producer needs — scalars, the maps, the buffers, the barriers' init>
//! warp_specialize [producer_warps = 1] {
//!   <the kernel's other ops before the loop>
//!   for k, ..., r = 0, p = S-1:                    // the consumers
//!     mbarrier_wait full[r]; operands = ring[r]; stage 1 of iteration k
//!     mbarrier_arrive empty[p] if k > lb {wgmma_in_flight = 1}
//!     r, p = next(r), r
//!   <the kernel's ops after the loop>
//! } {
//!   for k, ..., w = 0:                             // the producer
//!     mbarrier_wait empty[w]                        // free (primed: the first round at once)
//!     stage 0 of iteration k → tma_copy into ring[w] on full[w]
//!     w = next(w)
//! }
//! return
//! ```
//!
//! A slot read by iteration k's MMAs is released at the end of iteration k+1, once
//! `wgmma.wait_group 1` has seen them finish (iteration k+1's last MMA stays in flight),
//! so the tensor cores never wait for a release. The producer waits only when it is S
//! iterations ahead. Every consumer warp arrives once per release (its first lane, after
//! `bar.warp.sync`); the empty barriers count `num_warps` arrivals.
//!
//! The loop must be in the kernel's body (its consumer region takes the rest of the
//! kernel), its copies' offsets must come from scalars (the producer computes no register
//! tensor: the layouts describe the consumer warps only), only unconditional dots of the
//! body may read the rings (a slot is released by an MMA wait), and the kernel is not
//! profiled (the probes' per-warp buffers know `num_warps` warps) — otherwise the loop is
//! pipelined as usual and `TRIDENT_DEBUG_PIPELINE` says why.

use super::descriptors::new_barriers_primed;
use std::collections::{HashMap, HashSet};
use trident_ir::{BinaryOp, CmpPred, Const, Effect, Function, Op, OpKind, Type, Value};

/// One pipelined load of the ring (see `pipeline::Cand`).
pub(super) struct RingLoad {
    pub load: Op,
    /// The `trans` between the load and its conversion, if any.
    pub trans: Option<Op>,
    pub convert: Op,
    /// The ring buffer (`[S, tile...]`) and the type of one slot's view.
    pub buf: Value,
    pub slot_ty: Type,
    /// The view's layout in the operand's dims, for a load read through `trans`.
    pub trans_ty: Option<Type>,
    /// The tensor map of the load's copies.
    pub map: Value,
}

/// What `gpu-pipeline` decided for a loop it hands over.
pub(super) struct RingPlan<'a> {
    pub stages: u32,
    pub loads: Vec<RingLoad>,
    /// The `full` barriers (`[S, 1]`), one arrival per copy into a slot.
    pub full: Value,
    pub bar_slot_ty: Type,
    /// Stage 0 in body order, stage-0 values stage 1 recomputes, and stage 0's loop-carried
    /// values (block argument indices).
    pub order0: &'a [Op],
    pub stage0: &'a HashSet<Op>,
    pub recompute: &'a HashSet<Op>,
    pub carried: &'a HashSet<usize>,
}

/// Why loop `for_op` cannot be warp-specialized, or `None` when it can. `ring_reads`: the
/// conversions' results (what the dots read from the rings); `copy_operands`: the values
/// each copy takes from the body (its box offsets).
pub(super) fn blocker(
    f: &Function,
    for_op: Op,
    ring_reads: &HashSet<Value>,
    stage0: &HashSet<Op>,
    copy_operands: &[Value],
) -> Option<&'static str> {
    if f.ops[for_op].parent != Some(f.body) {
        return Some("the loop is not in the kernel's body");
    }
    if f.all_ops().into_iter().any(|o| matches!(f.ops[o].kind, OpKind::WarpSpecialize { .. })) {
        return Some("the kernel already has a warp-specialized loop");
    }
    // A slot is handed back at the end of the next iteration, after `wgmma.wait_group 1`:
    // every MMA reading it must be an unconditional dot of the body (so that the one group
    // left in flight then is the current iteration's), and nothing else may read the ring.
    let body = f.ops[for_op].regions[0];
    let top: HashSet<Op> = f.blocks[body].ops.iter().copied().collect();
    let mut readers = 0;
    let mut bad = false;
    f.walk_block(body, &mut |o| {
        let d = &f.ops[o];
        let reads = d.operands.iter().any(|v| ring_reads.contains(v));
        if reads && matches!(d.kind, OpKind::Dot { .. }) && top.contains(&o) && !ring_reads.contains(&d.operands[2]) {
            readers += 1;
        } else if reads {
            bad = true;
        }
    });
    if readers == 0 || bad {
        return Some("the rings are read by other ops than unconditional dots of the loop's body");
    }
    // The producer computes scalars only.
    for &op in stage0 {
        let d = &f.ops[op];
        if !matches!(d.kind, OpKind::DescLoad { .. }) && d.results.iter().any(|&r| !f.ty(r).is_scalar()) {
            return Some("a copy's offsets are computed from tensors");
        }
    }
    // Its operands from before the loop: pure scalars (and the kernel's parameters).
    let mut work: Vec<Value> = copy_operands.to_vec();
    for &op in stage0 {
        if !matches!(f.ops[op].kind, OpKind::DescLoad { .. }) {
            work.extend(f.ops[op].operands.iter().copied());
        }
    }
    let mut seen = HashSet::new();
    while let Some(v) = work.pop() {
        let Some(op) = f.def_op(v) else { continue };
        if stage0.contains(&op) || !seen.insert(op) || f.ops[op].parent == Some(body) {
            continue;
        }
        let d = &f.ops[op];
        if d.kind.effect() != Effect::Pure || !d.regions.is_empty() || d.results.iter().any(|&r| !f.ty(r).is_scalar()) {
            return Some("a copy's offsets depend on more than scalars computed before the loop");
        }
        work.extend(d.operands.iter().copied());
    }
    None
}

/// Rewrites loop `for_op` (see the module docs); `blocker` said it can. Everything the
/// plan names (buffers, maps, full barriers) is already placed before the loop.
pub(super) fn rewrite(f: &mut Function, for_op: Op, plan: &RingPlan<'_>, num_warps: u32) {
    let d = f.ops[for_op].clone();
    let loc = d.loc;
    let body = d.regions[0];
    let args = f.blocks[body].args.clone();
    let term = f.terminator(body).expect("a loop body ends in yield");
    let yields = f.ops[term].operands.to_vec();
    let body_ops: Vec<Op> = f.blocks[body].ops.iter().copied().filter(|&o| o != term).collect();
    let (lb, ub, step) = (d.operands[0], d.operands[1], d.operands[2]);
    let ivt = f.ty(args[0]).clone();
    let i32t = Type::i32();
    let s = plan.stages;
    let empty = new_barriers_primed(f, s, num_warps, true, loc);

    // Appends an op to `b`, returning its first result (or its first operand).
    let app = |f: &mut Function, b: trident_ir::Block, kind: OpKind, operands: &[Value], ty: Option<Type>| -> Value {
        let o = f.new_op(kind, operands, ty.as_slice(), loc);
        f.append_op(b, o);
        f.ops[o].results.first().copied().unwrap_or_else(|| operands[0])
    };
    // `slot + 1`, wrapped to 0 at S.
    let next = |f: &mut Function, b: trident_ir::Block, slot: Value| -> Value {
        let one = app(f, b, OpKind::Constant(Const::Int(1)), &[], Some(i32t.clone()));
        let n = app(f, b, OpKind::Binary(BinaryOp::Add), &[slot, one], Some(i32t.clone()));
        if s.is_power_of_two() {
            let m = app(f, b, OpKind::Constant(Const::Int(s as i64 - 1)), &[], Some(i32t.clone()));
            app(f, b, OpKind::Binary(BinaryOp::And), &[n, m], Some(i32t.clone()))
        } else {
            let sc = app(f, b, OpKind::Constant(Const::Int(s as i64)), &[], Some(i32t.clone()));
            let z = app(f, b, OpKind::Constant(Const::Int(0)), &[], Some(i32t.clone()));
            let wrap = app(f, b, OpKind::Cmp(CmpPred::Eq), &[n, sc], Some(Type::i1()));
            app(f, b, OpKind::Select, &[wrap, z, n], Some(i32t.clone()))
        }
    };

    // The consumers' loop: the body's stage 1, reading the slot the producer filled.
    let cb = f.new_block(&[]);
    let r0 = app(f, cb, OpKind::Constant(Const::Int(0)), &[], Some(i32t.clone()));
    let p0 = app(f, cb, OpKind::Constant(Const::Int(s as i64 - 1)), &[], Some(i32t.clone()));
    let mut arg_types: Vec<Type> = args.iter().map(|&a| f.ty(a).clone()).collect();
    arg_types.push(i32t.clone());
    arg_types.push(i32t.clone());
    let nb = f.new_block(&arg_types);
    let nargs = f.blocks[nb].args.clone();
    let mut operands = d.operands.to_vec();
    operands.push(r0);
    operands.push(p0);
    let mut rtypes: Vec<Type> = d.results.iter().map(|&r| f.ty(r).clone()).collect();
    rtypes.push(i32t.clone());
    rtypes.push(i32t.clone());
    let cfor = f.new_op(OpKind::For, &operands, &rtypes, loc);
    f.add_region(cfor, nb);
    f.append_op(cb, cfor);
    {
        let (iv, rs, ps) = (nargs[0], nargs[nargs.len() - 2], nargs[nargs.len() - 1]);
        let mut map1: HashMap<Value, Value> = args.iter().zip(&nargs).map(|(&a, &n)| (a, n)).collect();
        let bar = app(f, nb, OpKind::MemDescIndex, &[plan.full, rs], Some(plan.bar_slot_ty.clone()));
        app(f, nb, OpKind::MbarrierWait, &[bar], None);
        for l in &plan.loads {
            let mut view = app(f, nb, OpKind::MemDescIndex, &[l.buf, rs], Some(l.slot_ty.clone()));
            if let (Some(tr), Some(tt)) = (l.trans, l.trans_ty.clone()) {
                let OpKind::Trans { perm } = f.ops[tr].kind.clone() else { unreachable!("a trans candidate") };
                view = app(f, nb, OpKind::MemDescTrans { perm }, &[view], Some(tt));
            }
            let ct = f.ty(f.ops[l.convert].results[0]).clone();
            let v = app(f, nb, OpKind::LocalLoad, &[view], Some(ct));
            map1.insert(f.ops[l.convert].results[0], v);
        }
        for &op in &body_ops {
            if plan.loads.iter().any(|l| l.load == op || l.convert == op || l.trans == Some(op)) {
                continue;
            }
            if !plan.stage0.contains(&op) || plan.recompute.contains(&op) {
                let c = f.clone_op(op, &mut map1);
                f.append_op(nb, c);
            }
        }
        // Hand back the slot the previous iteration read, once its MMAs are over.
        let not_first = app(f, nb, OpKind::Cmp(CmpPred::Ne), &[iv, lb], Some(Type::i1()));
        let ebar = app(f, nb, OpKind::MemDescIndex, &[empty, ps], Some(plan.bar_slot_ty.clone()));
        let o = f.new_op(OpKind::MbarrierArrive, &[ebar, not_first], &[], loc);
        f.ops[o].attrs.set(trident_ir::discardable::WGMMA_IN_FLIGHT, trident_ir::Attr::Int(1));
        f.append_op(nb, o);
        let rs1 = next(f, nb, rs);
        let mut ys = vec![];
        for (i, &y) in yields.iter().enumerate() {
            // Stage 0's carried values are the producer's: passed through unchanged here.
            ys.push(if plan.carried.contains(&(i + 1)) { nargs[i + 1] } else { map1.get(&y).copied().unwrap_or(y) });
        }
        ys.push(rs1);
        ys.push(rs);
        let t = f.new_op(OpKind::Yield, &ys, &[], loc);
        f.append_op(nb, t);
    }

    // The producer's loop: stage 0, each iteration into the next free slot.
    let pb = f.new_block(&[]);
    let mut carried: Vec<usize> = plan.carried.iter().copied().collect();
    carried.sort_unstable();
    let w0 = app(f, pb, OpKind::Constant(Const::Int(0)), &[], Some(i32t.clone()));
    let mut ptypes = vec![ivt.clone()];
    ptypes.extend(carried.iter().map(|&i| f.ty(args[i]).clone()));
    ptypes.push(i32t.clone());
    let qb = f.new_block(&ptypes);
    let qargs = f.blocks[qb].args.clone();
    let mut operands = vec![lb, ub, step];
    operands.extend(carried.iter().map(|&i| d.operands[3 + i - 1]));
    operands.push(w0);
    let rtypes: Vec<Type> = ptypes[1..].to_vec();
    let pfor = f.new_op(OpKind::For, &operands, &rtypes, loc);
    f.add_region(pfor, qb);
    f.append_op(pb, pfor);
    {
        let ws = qargs[qargs.len() - 1];
        let mut map0: HashMap<Value, Value> = HashMap::new();
        map0.insert(args[0], qargs[0]);
        for (k, &i) in carried.iter().enumerate() {
            map0.insert(args[i], qargs[k + 1]);
        }
        let ebar = app(f, qb, OpKind::MemDescIndex, &[empty, ws], Some(plan.bar_slot_ty.clone()));
        app(f, qb, OpKind::MbarrierWait, &[ebar], None);
        for &op in plan.order0 {
            match plan.loads.iter().find(|l| l.load == op) {
                Some(l) => {
                    let view = app(f, qb, OpKind::MemDescIndex, &[l.buf, ws], Some(l.slot_ty.clone()));
                    let bar = app(f, qb, OpKind::MemDescIndex, &[plan.full, ws], Some(plan.bar_slot_ty.clone()));
                    let OpKind::DescLoad { rank } = f.ops[op].kind else { unreachable!("a TMA ring's load") };
                    let mut ops = vec![l.map, view, bar];
                    let offs = f.ops[op].operands[4 + 2 * rank as usize..].to_vec();
                    ops.extend(offs.into_iter().map(|v| map0.get(&v).copied().unwrap_or(v)));
                    let c = f.new_op(OpKind::TmaCopy, &ops, &[], f.ops[op].loc);
                    f.append_op(qb, c);
                }
                None => {
                    let c = f.clone_op(op, &mut map0);
                    f.append_op(qb, c);
                }
            }
        }
        let ws1 = next(f, qb, ws);
        let mut ys: Vec<Value> =
            carried.iter().map(|&i| map0.get(&yields[i - 1]).copied().unwrap_or(yields[i - 1])).collect();
        ys.push(ws1);
        let t = f.new_op(OpKind::Yield, &ys, &[], loc);
        f.append_op(qb, t);
    }
    let y = f.new_op(OpKind::Yield, &[], &[], loc);
    f.append_op(pb, y);

    // The split: what the producer uses stays before it (every warp runs it); the kernel's
    // other ops join the consumers.
    let wsop = f.new_op(OpKind::WarpSpecialize { producer_warps: 1 }, &[], &[], loc);
    f.insert_op_before(for_op, wsop);
    let mut keep: HashSet<Op> = HashSet::new();
    let mut work: Vec<Value> = vec![];
    f.walk_block(pb, &mut |o| work.extend(f.ops[o].operands.iter().copied()));
    while let Some(v) = work.pop() {
        if let Some(op) = f.def_op(v) {
            if f.ops[op].parent == Some(f.body) && keep.insert(op) {
                work.extend(f.ops[op].operands.iter().copied());
            }
        }
    }
    let top: Vec<Op> = f.blocks[f.body].ops.clone();
    let at = top.iter().position(|&o| o == wsop).expect("just inserted");
    let after = top.iter().position(|&o| o == for_op).expect("the loop");
    for &op in &top[..at] {
        // The barriers' initialisation (a CTA barrier of every warp) stays with its buffer.
        let init_of_kept = matches!(f.ops[op].kind, OpKind::MbarrierInit { .. })
            && f.def_op(f.ops[op].operands[0]).is_some_and(|a| keep.contains(&a));
        if !keep.contains(&op) && !init_of_kept {
            f.detach_op(op);
            f.insert_op_before(cfor, op);
        }
    }
    for &op in &top[after + 1..] {
        if !matches!(f.ops[op].kind, OpKind::Return) {
            f.detach_op(op);
            f.append_op(cb, op);
        }
    }
    let y = f.new_op(OpKind::Yield, &[], &[], loc);
    f.append_op(cb, y);
    f.add_region(wsop, cb);
    f.add_region(wsop, pb);
    let results = f.ops[cfor].results.clone();
    for (i, &r) in d.results.iter().enumerate() {
        f.replace_all_uses(r, results[i]);
    }
    f.detach_op(for_op);
}
