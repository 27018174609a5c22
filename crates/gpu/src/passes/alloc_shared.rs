//! Shared-memory planning (`gpu-alloc-shared`): decides where every shared-memory user
//! lives and records it in the GPU IR, which emission then only reads.
//!
//! 1. Marks the dot operands Hopper's warpgroup MMA reads straight from shared memory
//!    (`smem_operand` on a `convert_layout` or `local_load`; see
//!    [`crate::machine::wgmma::operand_stays_in_shared`]): decided here, once.
//! 2. Plans. Two kinds of users: *scratch* (an op that exchanges data between threads:
//!    layout conversions, cross-warp reductions and scans, data-moving reshapes) needs its
//!    bytes only while it runs; *buffers* (`local_alloc`, and a marked conversion's tile,
//!    which stays until the dot reads it) live from their definition to their last use, a
//!    whole loop when used inside one. Users whose lives overlap get disjoint bytes, placed
//!    first-fit, largest first. The total must fit the device; otherwise planning fails with
//!    a [`PlanError::OutOfSharedMemory`] naming the sizes.
//! 3. Records the plan: `smem_offset`/`smem_size` on every user, `smem_total` on the kernel
//!    (see `trident_ir::discardable`).
//!
//! Profiling with real probes adds one more buffer: the rings of the `record` ops (one per
//! group, `Layout::shared_bytes_per_cta` bytes in all; [`crate::machine::probe`]). It is
//! live for the whole kernel (the flush at exit reads it), and every `record` op carries
//! its `smem_offset`/`smem_size`: the records are its users.
//!
//! The plan stays valid for the rest of the pipeline because planning comes after every
//! pass that adds or moves shared-memory users; the only later pass, `gpu-insert-barriers`,
//! adds `barrier` ops, which use no shared memory and reorder nothing. Emission fails on a
//! user without an offset ("run the GPU pipeline first") rather than guess.

use crate::machine::probe::ProbeGeometry;
use crate::machine::scratch::{buffer_bytes, scratch_bytes};
use crate::machine::wgmma::operand_stays_in_shared;
use crate::options::GpuOptions;
use std::collections::HashMap;
use trident_ir::discardable::{SMEM_OFFSET, SMEM_OPERAND, SMEM_SIZE, SMEM_TOTAL};
use trident_ir::{Attr, Diagnostic, Function, Op, OpKind, Value};

/// Where shared memory lives: byte offsets and sizes per op (scratch or buffer), and the total.
#[derive(Clone, Debug, Default)]
pub struct SharedPlan {
    offsets: HashMap<Op, u32>,
    sizes: HashMap<Op, u32>,
    pub total: u32,
}

impl SharedPlan {
    pub fn offset(&self, op: Op) -> Option<u32> {
        self.offsets.get(&op).copied()
    }

    pub fn size(&self, op: Op) -> u32 {
        self.sizes.get(&op).copied().unwrap_or(0)
    }
}

/// Why a kernel's shared memory could not be planned.
#[derive(Clone, Debug)]
pub enum PlanError {
    /// It needs more than the target (or the options' limit) allows.
    OutOfSharedMemory {
        /// Bytes the kernel needs.
        needed: u64,
        /// Bytes it may use.
        limit: u64,
        /// The error for the user: the sizes, the pipeline buffers, the largest scratch user.
        diagnostic: Box<Diagnostic>,
    },
    /// Something else (an op whose scratch cannot be sized).
    Other(Box<Diagnostic>),
}

impl PlanError {
    pub fn diagnostic(&self) -> &Diagnostic {
        match self {
            PlanError::OutOfSharedMemory { diagnostic, .. } | PlanError::Other(diagnostic) => diagnostic,
        }
    }
}

/// Marks (with `smem_operand`) the conversions and buffer loads whose wgmma operand stays in
/// shared memory, and unmarks every other op; returns how many are marked.
pub fn mark_smem_operands(f: &mut Function) -> usize {
    let mut n = 0;
    for op in f.all_ops() {
        if operand_stays_in_shared(f, op) {
            f.ops[op].attrs.set(SMEM_OPERAND, Attr::Bool(true));
            n += 1;
        } else {
            f.ops[op].attrs.remove(SMEM_OPERAND);
        }
    }
    n
}

/// Writes `plan` into `f`: `smem_offset`/`smem_size` on every user (and on no other op),
/// `smem_total` on the function.
pub fn record_plan(f: &mut Function, plan: &SharedPlan) {
    for op in f.all_ops() {
        let attrs = &mut f.ops[op].attrs;
        attrs.remove(SMEM_OFFSET);
        attrs.remove(SMEM_SIZE);
        if let (Some(off), size @ 1..) = (plan.offset(op), plan.size(op)) {
            attrs.set(SMEM_OFFSET, Attr::Int(off as i64));
            attrs.set(SMEM_SIZE, Attr::Int(size as i64));
        }
    }
    f.attrs.set(SMEM_TOTAL, Attr::Int(plan.total as i64));
}

/// The whole pass on one kernel: marks wgmma shared operands, plans, records; returns the
/// total bytes.
pub fn alloc_shared(f: &mut Function, opts: &GpuOptions) -> Result<u32, PlanError> {
    mark_smem_operands(f);
    let plan = plan_shared(f, opts)?;
    record_plan(f, &plan);
    Ok(plan.total)
}

fn align(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

/// Program positions: every op gets its pre-order index; ops with regions also the index
/// after their last nested op.
struct Positions {
    start: HashMap<Op, u32>,
    end: HashMap<Op, u32>,
}

fn number(f: &Function) -> Positions {
    fn walk(f: &Function, b: trident_ir::Block, n: &mut u32, p: &mut Positions) {
        for &op in &f.blocks[b].ops {
            p.start.insert(op, *n);
            *n += 1;
            for &r in &f.ops[op].regions {
                walk(f, r, n, p);
            }
            p.end.insert(op, *n);
        }
    }
    let mut p = Positions { start: HashMap::new(), end: HashMap::new() };
    let mut n = 0;
    walk(f, f.body, &mut n, &mut p);
    p
}

/// The `warp_specialize` whose producer region holds `op`, if any.
fn producer_of(f: &Function, op: Op) -> Option<Op> {
    f.warp_role(op).filter(|&(_, role)| role == 1).map(|(ws, _)| ws)
}

/// The live interval `[first, last]` of a `local_alloc` buffer: from the alloc to its last
/// use (through views), a use inside a loop the alloc is outside of counting until the end
/// of that loop (plus one op: the wait that drains copies after a pipelined loop).
/// A warp-specialized kernel's producer fills a ring the consumers read, and every copy it
/// makes is waited for by a consumer read: once the consumers' last use is over the producer
/// touches the buffer no more, so its own uses (which come after the consumer region in
/// program order) do not extend the interval — the epilogue after the consumers' loop may
/// reuse the ring's bytes. (Inside a persistent kernel's tile loop the consumers' uses
/// already last to the loop's end.) A buffer only the producer used would live for the whole
/// `warp_specialize`.
fn buffer_interval(f: &Function, alloc: Op, pos: &Positions, users: &HashMap<Value, Vec<Op>>) -> (u32, u32) {
    let start = pos.start[&alloc];
    let mut last = start;
    let mut producer_only_until = None;
    let mut consumed = false;
    let mut work = vec![f.ops[alloc].results[0]];
    while let Some(v) = work.pop() {
        for &u in users.get(&v).map(|v| v.as_slice()).unwrap_or(&[]) {
            if matches!(f.ops[u].kind, OpKind::MemDescIndex | OpKind::MemDescTrans { .. }) {
                work.push(f.ops[u].results[0]);
            }
            if let Some(ws) = producer_of(f, u) {
                producer_only_until = Some(pos.end[&ws]);
                continue;
            }
            consumed = true;
            let mut end = pos.start.get(&u).copied().unwrap_or(start);
            // Widen to the outermost loop around the use that does not contain the alloc.
            let mut p = f.parent_op(u);
            while let Some(po) = p {
                if pos.start[&po] < start && pos.end[&po] > start {
                    break;
                }
                if matches!(f.ops[po].kind, OpKind::For | OpKind::While) {
                    end = end.max(pos.end[&po] + 1);
                }
                p = f.parent_op(po);
            }
            last = last.max(end);
        }
    }
    if let (Some(end), false) = (producer_only_until, consumed) {
        last = last.max(end);
    }
    (start, last)
}

/// Plans shared memory for `f` (whose wgmma shared operands are marked); fails when it
/// exceeds the limit. Every user gets a live interval (a buffer from its alloc to its last
/// use, a scratch user just its own op); users whose intervals overlap get disjoint bytes,
/// placed first-fit, largest first.
pub fn plan_shared(f: &Function, opts: &GpuOptions) -> Result<SharedPlan, PlanError> {
    let mut plan = SharedPlan::default();
    let pos = number(f);
    let mut users: HashMap<Value, Vec<Op>> = HashMap::new();
    for op in f.all_ops() {
        for &o in &f.ops[op].operands {
            users.entry(o).or_default().push(op);
        }
    }
    // (op, bytes, first, last, is_buffer, alignment)
    let mut items: Vec<(Op, u64, u32, u32, bool, u64)> = vec![];
    let mut biggest: Option<(Op, u64)> = None;
    for op in f.all_ops() {
        if matches!(f.ops[op].kind, OpKind::LocalAlloc) {
            let (a, b) = buffer_interval(f, op, &pos, &users);
            let res = f.ops[op].results[0];
            let is_barriers = users
                .get(&res)
                .is_some_and(|us| us.iter().any(|&u| matches!(f.ops[u].kind, OpKind::MbarrierInit { .. })));
            if is_barriers {
                // mbarriers: 8 bytes each, 8-byte aligned, live to the kernel's end (their
                // bytes may not be reused without `mbarrier.inval`).
                items.push((op, buffer_bytes(f, op), a, u32::MAX, true, 8));
                continue;
            }
            // A TMA copy's box lives to the kernel's end: the barrier pass orders a copy after
            // the earlier readers of its own buffer only, so its bytes must be no one else's
            // (a store's box too: the copy reads it while the other threads go on).
            let tma_box = users.get(&res).is_some_and(|us| {
                us.iter().any(|&u| {
                    matches!(f.ops[u].kind, OpKind::TmaCopy | OpKind::TmaStore) && f.ops[u].operands[1] == res
                })
            });
            let b = if tma_box { u32::MAX } else { b };
            // 1024: the repeat of wgmma's 128-byte swizzle (its descriptors assume it; TMA
            // copies need 128).
            let bytes = align(buffer_bytes(f, op), 128);
            items.push((op, bytes, a, b, true, 1024));
            continue;
        }
        if f.ops[op].attrs.flag(SMEM_OPERAND) && matches!(f.ops[op].kind, OpKind::ConvertLayout) {
            // A conversion into a wgmma operand leaves the tile in shared memory until the
            // dot reads it: live like a buffer, swizzle-aligned.
            let bytes = align(scratch_bytes(f, op).unwrap_or(0), 128);
            let (a, b) = buffer_interval(f, op, &pos, &users);
            items.push((op, bytes, a, b, true, 1024));
            continue;
        }
        let bytes = scratch_bytes(f, op).map_err(|e| {
            let d = Diagnostic::error(format!("cannot plan shared memory: {e}"));
            PlanError::Other(Box::new(if f.ops[op].loc.is_unknown() { d } else { d.at(f.ops[op].loc, 1) }))
        })?;
        if bytes > 0 {
            let bytes = align(bytes, 128);
            let p = pos.start[&op];
            items.push((op, bytes, p, p, false, 128));
            if biggest.is_none_or(|(_, b)| bytes > b) {
                biggest = Some((op, bytes));
            }
        }
    }
    // The probes' rings: one buffer, live from the kernel's start to its exit.
    let records: Vec<Op> =
        f.all_ops().into_iter().filter(|&o| matches!(f.ops[o].kind, OpKind::Record { .. })).collect();
    let mut rings = 0u64;
    if let (Some(g), Some(&first)) =
        (ProbeGeometry::of(opts, crate::machine::probe::producer_warps(f)), records.first())
    {
        rings = align(g.shared_bytes_per_cta(), 128);
        items.push((first, rings, 0, u32::MAX, true, 128));
    }
    items.sort_by_key(|it| (std::cmp::Reverse(it.1), it.2));
    let mut placed: Vec<(u64, u64, u32, u32)> = vec![];
    let mut total = 0u64;
    let mut buffers = 0u64;
    for (op, bytes, a, b, is_buf, al) in items {
        // Lowest aligned offset not overlapping any placed user alive at the same time.
        let mut busy: Vec<(u64, u64)> =
            placed.iter().filter(|p| p.2 <= b && a <= p.3).map(|p| (p.0, p.0 + p.1)).collect();
        busy.sort();
        let mut off = 0u64;
        for (s, e) in busy {
            if off + bytes <= s {
                break;
            }
            off = align(off.max(e), al);
        }
        placed.push((off, bytes, a, b));
        plan.offsets.insert(op, off as u32);
        plan.sizes.insert(op, bytes as u32);
        total = total.max(off + bytes);
        if is_buf {
            buffers += bytes;
        }
    }
    if let Some(&first) = records.first() {
        if let Some(off) = plan.offsets.get(&first).copied() {
            for &r in &records {
                plan.offsets.insert(r, off);
                plan.sizes.insert(r, rings as u32);
            }
        }
    }
    let limit = opts.shared_limit() as u64;
    if total > limit {
        let mut diag = Diagnostic::error(format!(
            "kernel `{}` needs {total} bytes of shared memory, more than the {limit} bytes {} allows",
            f.name, opts.target
        ));
        if buffers > rings {
            diag = diag.note(format!("{} bytes are pipeline buffers ({} stages)", buffers - rings, opts.num_stages));
        }
        // Rings live through the whole kernel, so they add to everything else: when the
        // kernel fits without them, they are the whole story.
        let rings_alone = rings > 0 && total - rings <= limit;
        if let (Some(g), true) = (ProbeGeometry::of(opts, crate::machine::probe::producer_warps(f)), rings > 0) {
            diag = diag.note(format!(
                "{rings} bytes are the profile rings ({} {}s x {} records x 8 bytes): profile with fewer records \
                 per ring (--buffer-records) or a coarser granularity",
                g.groups_per_cta, g.granularity, g.capacity
            ));
        }
        if rings_alone {
            diag = diag.note(format!("without the rings the kernel needs {} bytes", total - rings));
        } else if let Some((op, bytes)) = biggest {
            let d = &f.ops[op];
            let ty = d.operands.first().map(|&v| f.ty(v).to_string()).unwrap_or_default();
            diag =
                diag.note(format!("the largest scratch user is `{}` of `{ty}`, needing {bytes} bytes", d.kind.name()));
            if !d.loc.is_unknown() {
                diag = diag.at(d.loc, 1);
            }
        }
        if !rings_alone {
            diag = diag.note("use smaller blocks or fewer pipeline stages");
        }
        let diagnostic = Box::new(diag);
        return Err(PlanError::OutOfSharedMemory { needed: total, limit, diagnostic });
    }
    plan.total = total as u32;
    Ok(plan)
}
