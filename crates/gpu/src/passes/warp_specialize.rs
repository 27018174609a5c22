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
//! sanitized — otherwise the loop is pipelined as usual and `TRIDENT_DEBUG_PIPELINE` says
//! why.
//!
//! **Profiling.** A profiled kernel is split the same way: the probes give the producer
//! warps groups (rings, buffer slots) of their own (`machine::probe`). The user's scopes in
//! the body stay with the consumers, which then wait for and read their slot at the first
//! load's place among them (as `gpu-pipeline` does for a scoped body), so a scope around a
//! load measures the wait for its tile; the automatic regions (`profile-instrument`, after
//! this pass) mark both roles' code.

use super::descriptors::new_barriers_primed;
use std::collections::{HashMap, HashSet};
use trident_ir::{BinaryOp, Block, CmpPred, Const, Effect, Function, Loc, Op, OpKind, Type, Value, ValueDef};

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
    /// Ops that only feed the TMA loads' dead pointer/mask operands: cloned nowhere.
    pub dead: &'a HashSet<Op>,
    /// The body holds records (the user's scopes): the consumers wait for and read their
    /// slot at the first load's place among them, not at the top of the body.
    pub in_order: bool,
}

/// The loop a warp specialization splits for pipelined loop `for_op`: the loop itself when
/// it carries the request, or the loop whose body holds it when that one does (a persistent
/// kernel's tile loop, where Triton's tutorial asks for it).
pub(super) fn host_of(f: &Function, for_op: Op) -> Option<Op> {
    let asks = |op: Op| f.ops[op].attrs.flag(trident_ir::discardable::WARP_SPECIALIZE);
    if asks(for_op) {
        return Some(for_op);
    }
    f.parent_op(for_op).filter(|&p| matches!(f.ops[p].kind, OpKind::For) && asks(p))
}

/// The ops of `host`'s body (a loop around `for_op`) that the producer recomputes for the
/// values `roots` (in body order), after checking that everything the producer takes from
/// outside `for_op`'s body is a scalar it can compute: pure scalar ops of the host's body on
/// its induction variable, or pure scalars before it (which every warp computes before the
/// split). `host == for_op`: nothing to recompute.
fn producer_slice(f: &Function, for_op: Op, host: Op, roots: Vec<Value>) -> Result<Vec<Op>, &'static str> {
    let inner = f.ops[for_op].regions[0];
    let hbody = (host != for_op).then(|| f.ops[host].regions[0]);
    let mut work = roots;
    let mut seen = HashSet::new();
    let mut slice = HashSet::new();
    let scalar_pure = |op: Op| {
        let d = &f.ops[op];
        d.kind.effect() == Effect::Pure && d.regions.is_empty() && d.results.iter().all(|&r| f.ty(r).is_scalar())
    };
    while let Some(v) = work.pop() {
        match f.values[v].def {
            ValueDef::Arg(b, i) if Some(b) == hbody => {
                if i != 0 {
                    return Err("a copy's offsets depend on a value the tile loop carries");
                }
            }
            ValueDef::Arg(..) => {}
            ValueDef::Result(op, _) => {
                let parent = f.ops[op].parent;
                if parent == Some(inner) || !seen.insert(op) {
                    continue;
                }
                if !scalar_pure(op) {
                    return Err("a copy's offsets depend on more than scalars computed before the loop");
                }
                if parent == hbody {
                    slice.insert(op);
                } else if parent != Some(f.body) {
                    return Err("a copy's offsets depend on a value computed inside other control flow");
                }
                work.extend(f.ops[op].operands.iter().copied());
            }
        }
    }
    Ok(hbody.map_or_else(Vec::new, |b| f.blocks[b].ops.iter().copied().filter(|o| slice.contains(o)).collect()))
}

/// What the producer takes from outside `for_op`'s body: the bounds, the inits of stage 0's
/// carried values, and the operands of stage 0 (for TMA, the copies' offsets).
fn producer_roots(f: &Function, for_op: Op, stage0: &HashSet<Op>, carried: &HashSet<usize>) -> Vec<Value> {
    let d = &f.ops[for_op];
    let mut roots: Vec<Value> = d.operands[..3].to_vec();
    roots.extend(carried.iter().map(|&i| d.operands[3 + i - 1]));
    for &op in stage0 {
        let od = &f.ops[op];
        match od.kind {
            OpKind::DescLoad { rank } => roots.extend(od.operands[4 + 2 * rank as usize..].iter().copied()),
            _ => roots.extend(od.operands.iter().copied()),
        }
    }
    roots
}

/// Why loop `for_op` cannot be warp-specialized as part of `host` (see `host_of`), or `None`
/// when it can. `ring_reads`: the conversions' results (what the dots read from the rings).
pub(super) fn blocker(
    f: &Function,
    for_op: Op,
    host: Op,
    ring_reads: &HashSet<Value>,
    stage0: &HashSet<Op>,
    carried: &HashSet<usize>,
) -> Option<&'static str> {
    if f.ops[host].parent != Some(f.body) {
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
    producer_slice(f, for_op, host, producer_roots(f, for_op, stage0, carried)).err()
}

/// The producer's warps and the registers each role keeps, for `num_warps` consumer warps:
/// `(warps, producer_regs, consumer_regs)`, the counts 0 when nobody moves registers.
///
/// ptxas budgets registers for whole warpgroups: the 288 threads of 8 consumer warps and one
/// producer warp get what 384 would (168 per thread; D128 attention then spills), so with two
/// consumer warpgroups the producer is a whole warpgroup that gives registers back
/// (`setmaxnreg`, FA3's split): it keeps 40, each consumer thread gets 232
/// (256 × 232 + 128 × 40 ≤ 65536). With one consumer warpgroup (160 threads budgeted as
/// 256) every thread can already have 255: one producer warp, no move.
///
/// Off unless asked for (`GpuOptions::setmaxnreg`): the SASS emulator times D64 attention
/// 20% slower with it and D128 (whose spills it removes) 13% faster, code it cannot tell
/// apart otherwise; a GPU will decide (`bench/STATIC.md`).
fn register_split(num_warps: u32, setmaxnreg: bool) -> (u32, u32, u32) {
    if num_warps == 8 && setmaxnreg {
        (4, PRODUCER_REGS, CONSUMER_REGS)
    } else {
        (1, 0, 0)
    }
}

/// Registers a producer warpgroup keeps (its loop: scalars, waits, copies).
const PRODUCER_REGS: u32 = 40;
/// Registers each of two consumer warpgroups gets from it.
const CONSUMER_REGS: u32 = 232;

/// Appends an op to `b`, returning its first result (or its first operand).
fn app(f: &mut Function, b: Block, kind: OpKind, operands: &[Value], ty: Option<Type>, loc: Loc) -> Value {
    let o = f.new_op(kind, operands, ty.as_slice(), loc);
    f.append_op(b, o);
    f.ops[o].results.first().copied().unwrap_or_else(|| operands[0])
}

/// A scalar constant placed before `at`.
fn constant_before(f: &mut Function, at: Op, value: i64, ty: Type) -> Value {
    let loc = f.ops[at].loc;
    let c = f.new_op(OpKind::Constant(Const::Int(value)), &[], &[ty], loc);
    f.insert_op_before(at, c);
    f.result(c, 0)
}

/// Replaces the terminator of `b` by a `yield` of `values`.
fn set_yield(f: &mut Function, b: Block, values: &[Value]) {
    let t = f.terminator(b).expect("a loop body ends in yield");
    let loc = f.ops[t].loc;
    f.detach_op(t);
    let y = f.new_op(OpKind::Yield, values, &[], loc);
    f.append_op(b, y);
}

/// Rebuilds loop `host` with one more carried `i32` starting at `init` (yielded unchanged
/// until the caller says otherwise); returns the new loop and the new block argument.
fn add_carried_i32(f: &mut Function, host: Op, init: Value) -> (Op, Value) {
    let d = f.ops[host].clone();
    let old = d.regions[0];
    let old_args = f.blocks[old].args.clone();
    let mut types: Vec<Type> = old_args.iter().map(|&a| f.ty(a).clone()).collect();
    types.push(Type::i32());
    let nb = f.new_block(&types);
    let nargs = f.blocks[nb].args.clone();
    let mut operands = d.operands.to_vec();
    operands.push(init);
    let mut rtypes: Vec<Type> = d.results.iter().map(|&r| f.ty(r).clone()).collect();
    rtypes.push(Type::i32());
    let nh = f.new_op(OpKind::For, &operands, &rtypes, d.loc);
    f.add_region(nh, nb);
    f.insert_op_before(host, nh);
    for op in f.blocks[old].ops.clone() {
        f.detach_op(op);
        f.append_op(nb, op);
    }
    for (&o, &n) in old_args.iter().zip(&nargs) {
        f.replace_all_uses(o, n);
    }
    let mut ys = f.ops[f.terminator(nb).expect("a loop body ends in yield")].operands.to_vec();
    let arg = nargs[nargs.len() - 1];
    ys.push(arg);
    set_yield(f, nb, &ys);
    let results = f.ops[nh].results.clone();
    for (i, &r) in d.results.iter().enumerate() {
        f.replace_all_uses(r, results[i]);
    }
    f.detach_op(host);
    (nh, arg)
}

/// `slot + 1`, wrapped to 0 at `s`, appended to `b`.
fn next_slot(f: &mut Function, b: Block, slot: Value, s: u32, loc: Loc) -> Value {
    let i32t = Some(Type::i32());
    let one = app(f, b, OpKind::Constant(Const::Int(1)), &[], i32t.clone(), loc);
    let n = app(f, b, OpKind::Binary(BinaryOp::Add), &[slot, one], i32t.clone(), loc);
    if s.is_power_of_two() {
        let m = app(f, b, OpKind::Constant(Const::Int(s as i64 - 1)), &[], i32t.clone(), loc);
        app(f, b, OpKind::Binary(BinaryOp::And), &[n, m], i32t, loc)
    } else {
        let sc = app(f, b, OpKind::Constant(Const::Int(s as i64)), &[], i32t.clone(), loc);
        let z = app(f, b, OpKind::Constant(Const::Int(0)), &[], i32t.clone(), loc);
        let wrap = app(f, b, OpKind::Cmp(CmpPred::Eq), &[n, sc], Some(Type::i1()), loc);
        app(f, b, OpKind::Select, &[wrap, z, n], i32t, loc)
    }
}

/// Rewrites loop `for_op` as part of `host` (see the module docs); `blocker` said it can.
/// Everything the plan names (buffers, maps, full barriers) is already placed before `host`.
pub(super) fn rewrite(f: &mut Function, for_op: Op, host: Op, plan: &RingPlan<'_>, num_warps: u32, setmaxnreg: bool) {
    let d = f.ops[for_op].clone();
    let loc = d.loc;
    let body = d.regions[0];
    let args = f.blocks[body].args.clone();
    let term = f.terminator(body).expect("a loop body ends in yield");
    let yields = f.ops[term].operands.to_vec();
    let body_ops: Vec<Op> = f.blocks[body].ops.iter().copied().filter(|&o| o != term).collect();
    let (lb, ub) = (d.operands[0], d.operands[1]);
    let ivt = f.ty(args[0]).clone();
    let i32t = Type::i32();
    let s = plan.stages;
    let nested = host != for_op;
    let slice = producer_slice(f, for_op, host, producer_roots(f, for_op, plan.stage0, plan.carried))
        .expect("checked by `blocker`");
    let empty = new_barriers_primed(f, s, num_warps, true, loc);

    // 1. The consumers: the loop's stage 1 in its place, reading the slots the producer
    // fills. Slots go round across the tile loop of a persistent kernel: it carries the next
    // slot to read.
    let (host_c, r_init) = if nested {
        let z = constant_before(f, host, 0, i32t.clone());
        add_carried_i32(f, host, z)
    } else {
        (host, constant_before(f, for_op, 0, i32t.clone()))
    };
    let p_init = constant_before(f, for_op, s as i64 - 1, i32t.clone());
    let mut arg_types: Vec<Type> = args.iter().map(|&a| f.ty(a).clone()).collect();
    arg_types.push(i32t.clone());
    arg_types.push(i32t.clone());
    let nb = f.new_block(&arg_types);
    let nargs = f.blocks[nb].args.clone();
    let mut operands = d.operands.to_vec();
    operands.push(r_init);
    operands.push(p_init);
    let mut rtypes: Vec<Type> = d.results.iter().map(|&r| f.ty(r).clone()).collect();
    rtypes.push(i32t.clone());
    rtypes.push(i32t.clone());
    let cfor = f.new_op(OpKind::For, &operands, &rtypes, loc);
    f.add_region(cfor, nb);
    f.insert_op_before(for_op, cfor);
    {
        let (iv, rs, ps) = (nargs[0], nargs[nargs.len() - 2], nargs[nargs.len() - 1]);
        let mut map1: HashMap<Value, Value> = args.iter().zip(&nargs).map(|(&a, &n)| (a, n)).collect();
        // The wait for slot r and its reads: at the top of the body, or where the first load
        // was among the user's scopes (so a scope around it measures the wait).
        let wait_and_read = |f: &mut Function, map1: &mut HashMap<Value, Value>| {
            let bar = app(f, nb, OpKind::MemDescIndex, &[plan.full, rs], Some(plan.bar_slot_ty.clone()), loc);
            app(f, nb, OpKind::MbarrierWait, &[bar], None, loc);
            for l in &plan.loads {
                let mut view = app(f, nb, OpKind::MemDescIndex, &[l.buf, rs], Some(l.slot_ty.clone()), loc);
                if let (Some(tr), Some(tt)) = (l.trans, l.trans_ty.clone()) {
                    let OpKind::Trans { perm } = f.ops[tr].kind.clone() else { unreachable!("a trans candidate") };
                    view = app(f, nb, OpKind::MemDescTrans { perm }, &[view], Some(tt), loc);
                }
                let ct = f.ty(f.ops[l.convert].results[0]).clone();
                let v = app(f, nb, OpKind::LocalLoad, &[view], Some(ct), loc);
                map1.insert(f.ops[l.convert].results[0], v);
            }
        };
        let first_load = body_ops.iter().copied().find(|&o| plan.loads.iter().any(|l| l.load == o));
        if !plan.in_order {
            wait_and_read(f, &mut map1);
        }
        for &op in &body_ops {
            if plan.in_order && Some(op) == first_load {
                wait_and_read(f, &mut map1);
            }
            if plan.loads.iter().any(|l| l.load == op || l.convert == op || l.trans == Some(op)) {
                continue;
            }
            if (!plan.stage0.contains(&op) || plan.recompute.contains(&op)) && !plan.dead.contains(&op) {
                let c = f.clone_op(op, &mut map1);
                f.append_op(nb, c);
            }
        }
        // Hand back the slot the previous iteration read, once its MMAs are over.
        let not_first = app(f, nb, OpKind::Cmp(CmpPred::Ne), &[iv, lb], Some(Type::i1()), loc);
        let ebar = app(f, nb, OpKind::MemDescIndex, &[empty, ps], Some(plan.bar_slot_ty.clone()), loc);
        let o = f.new_op(OpKind::MbarrierArrive, &[ebar, not_first], &[], loc);
        f.ops[o].attrs.set(trident_ir::discardable::WGMMA_IN_FLIGHT, trident_ir::Attr::Int(1));
        f.append_op(nb, o);
        let rs1 = next_slot(f, nb, rs, s, loc);
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
    // After the loop, its last slot (when it ran at all), once every MMA is over.
    let cres = f.ops[cfor].results.clone();
    let (r_out, p_out) = (cres[cres.len() - 2], cres[cres.len() - 1]);
    {
        let ran = f.new_op(OpKind::Cmp(CmpPred::Lt), &[lb, ub], &[Type::i1()], loc);
        f.insert_op_after(cfor, ran);
        let ebar = f.new_op(OpKind::MemDescIndex, &[empty, p_out], std::slice::from_ref(&plan.bar_slot_ty), loc);
        f.insert_op_after(ran, ebar);
        let arrive = f.new_op(OpKind::MbarrierArrive, &[f.result(ebar, 0), f.result(ran, 0)], &[], loc);
        f.insert_op_after(ebar, arrive);
        if !nested {
            // Every consumer warp is done reading the ring before any reuses its bytes (the
            // planner lets the epilogue's scratch take them: `alloc_shared`); a named
            // barrier of the consumers. Around a tile loop the ring stays the ring.
            let bar = f.new_op(OpKind::Barrier, &[], &[], loc);
            f.insert_op_after(arrive, bar);
        }
    }
    for (i, &r) in d.results.iter().enumerate() {
        f.replace_all_uses(r, cres[i]);
    }
    f.detach_op(for_op);
    if nested {
        let hb = f.ops[host_c].regions[0];
        let mut ys = f.ops[f.terminator(hb).expect("a loop body ends in yield")].operands.to_vec();
        *ys.last_mut().expect("the carried slot") = r_out;
        set_yield(f, hb, &ys);
    }

    // 2. The producer: stage 0 of every iteration into the next free slot (inside its own
    // copy of the tile loop, recomputing the tile's scalars, for a persistent kernel).
    let pb = f.new_block(&[]);
    let mut omap: HashMap<Value, Value> = HashMap::new();
    let (outer_block, w_init, outer) = if nested {
        let hd = f.ops[host_c].clone();
        let w0 = app(f, pb, OpKind::Constant(Const::Int(0)), &[], Some(i32t.clone()), loc);
        let hiv = f.blocks[hd.regions[0]].args[0];
        let ob = f.new_block(&[f.ty(hiv).clone(), i32t.clone()]);
        let oargs = f.blocks[ob].args.clone();
        // The tile loop's own location: a profile names the producer's copy after it.
        let po = f.new_op(
            OpKind::For,
            &[hd.operands[0], hd.operands[1], hd.operands[2], w0],
            std::slice::from_ref(&i32t),
            hd.loc,
        );
        f.add_region(po, ob);
        f.append_op(pb, po);
        omap.insert(hiv, oargs[0]);
        for &op in &slice {
            let c = f.clone_op(op, &mut omap);
            f.append_op(ob, c);
        }
        (ob, oargs[1], Some(ob))
    } else {
        (pb, app(f, pb, OpKind::Constant(Const::Int(0)), &[], Some(i32t.clone()), loc), None)
    };
    let m = |omap: &HashMap<Value, Value>, v: Value| omap.get(&v).copied().unwrap_or(v);
    let mut carried: Vec<usize> = plan.carried.iter().copied().collect();
    carried.sort_unstable();
    let mut ptypes = vec![ivt.clone()];
    ptypes.extend(carried.iter().map(|&i| f.ty(args[i]).clone()));
    ptypes.push(i32t.clone());
    let qb = f.new_block(&ptypes);
    let qargs = f.blocks[qb].args.clone();
    let mut operands: Vec<Value> = d.operands[..3].iter().map(|&v| m(&omap, v)).collect();
    operands.extend(carried.iter().map(|&i| m(&omap, d.operands[3 + i - 1])));
    operands.push(w_init);
    let pfor = f.new_op(OpKind::For, &operands, &ptypes[1..], loc);
    f.add_region(pfor, qb);
    f.append_op(outer_block, pfor);
    {
        let ws = qargs[qargs.len() - 1];
        let mut map0 = omap.clone();
        map0.insert(args[0], qargs[0]);
        for (k, &i) in carried.iter().enumerate() {
            map0.insert(args[i], qargs[k + 1]);
        }
        let ebar = app(f, qb, OpKind::MemDescIndex, &[empty, ws], Some(plan.bar_slot_ty.clone()), loc);
        app(f, qb, OpKind::MbarrierWait, &[ebar], None, loc);
        for &op in plan.order0 {
            match plan.loads.iter().find(|l| l.load == op) {
                Some(l) => {
                    let view = app(f, qb, OpKind::MemDescIndex, &[l.buf, ws], Some(l.slot_ty.clone()), loc);
                    let bar = app(f, qb, OpKind::MemDescIndex, &[plan.full, ws], Some(plan.bar_slot_ty.clone()), loc);
                    let OpKind::DescLoad { rank } = f.ops[op].kind else { unreachable!("a TMA ring's load") };
                    let mut ops = vec![l.map, view, bar];
                    let offs = f.ops[op].operands[4 + 2 * rank as usize..].to_vec();
                    ops.extend(offs.into_iter().map(|v| m(&map0, v)));
                    let c = f.new_op(OpKind::TmaCopy, &ops, &[], f.ops[op].loc);
                    f.append_op(qb, c);
                }
                None => {
                    let c = f.clone_op(op, &mut map0);
                    f.append_op(qb, c);
                }
            }
        }
        let ws1 = next_slot(f, qb, ws, s, loc);
        let mut ys: Vec<Value> = carried.iter().map(|&i| m(&map0, yields[i - 1])).collect();
        ys.push(ws1);
        let t = f.new_op(OpKind::Yield, &ys, &[], loc);
        f.append_op(qb, t);
    }
    if let Some(ob) = outer {
        let w_out = *f.ops[pfor].results.last().expect("the slot");
        let t = f.new_op(OpKind::Yield, &[w_out], &[], loc);
        f.append_op(ob, t);
    }
    let y = f.new_op(OpKind::Yield, &[], &[], loc);
    f.append_op(pb, y);

    // 3. The split: what the producer uses stays before it (every warp runs it); the
    // kernel's other ops join the consumers.
    let (producer_warps, producer_regs, consumer_regs) = register_split(num_warps, setmaxnreg);
    let wsop = f.new_op(OpKind::WarpSpecialize { producer_warps, producer_regs, consumer_regs }, &[], &[], loc);
    // The consumers' loop where the split is the loop itself (`host` is gone: replaced).
    f.insert_op_before(if nested { host_c } else { cfor }, wsop);
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
    let cb = f.new_block(&[]);
    for &op in &top[..at] {
        // The barriers' initialisation (a CTA barrier of every warp) stays with its buffer.
        let init_of_kept = matches!(f.ops[op].kind, OpKind::MbarrierInit { .. })
            && f.def_op(f.ops[op].operands[0]).is_some_and(|a| keep.contains(&a));
        if !keep.contains(&op) && !init_of_kept {
            f.detach_op(op);
            f.append_op(cb, op);
        }
    }
    for &op in &top[at + 1..] {
        if !matches!(f.ops[op].kind, OpKind::Return) {
            f.detach_op(op);
            f.append_op(cb, op);
        }
    }
    let y = f.new_op(OpKind::Yield, &[], &[], loc);
    f.append_op(cb, y);
    f.add_region(wsop, cb);
    f.add_region(wsop, pb);
}
