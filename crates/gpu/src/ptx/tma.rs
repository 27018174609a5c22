//! The tensor-memory accelerator: `tma_map`, `tma_copy`, `tma_store`, `mbarrier_init`,
//! `mbarrier_wait`.
//!
//! **Tensor maps are kernel parameters.** Every distinct `tma_map` of the kernel becomes a
//! hidden `.param .align 64 .b8 NAME[128]` after all other parameters (the IR's, the
//! profile buffer, sanitize's — sanitize mode uses no TMA), in the order of
//! [`PtxKernel::tensor_maps`](super::PtxKernel::tensor_maps): the launch builds each map from
//! its [`TensorMapSpec`] — on a GPU with the driver's `cuTensorMapEncodeTiled`, on the
//! emulator in the emulator's own encoding — and passes the 128 bytes by value. The kernel
//! uses the parameter's generic address (`cvta.param`), as a `__grid_constant__` argument.
//!
//! **Barriers** live in shared memory (`local_alloc`ed i64 slots). `mbarrier_init`: thread 0
//! initialises every slot, then `fence.mbarrier_init` and a CTA barrier publish them.
//! `tma_copy`: thread 0 announces the buffer's bytes on the slot (`expect_tx`, which is also
//! its one arrival) and issues `cp.async.bulk.tensor` (in a block the other threads branch
//! over), coordinates innermost first: once, or once per box where the buffer's rows are
//! several of the map's boxes wide (rows wider than the swizzle span; `machine::tma`).
//! `mbarrier_wait`: every thread polls the slot's current phase with `try_wait.parity`. Each barrier buffer
//! keeps its slots' parities in one register (bit i: slot i), flipped after each wait, so a
//! wait always waits for the next phase, in loops too (tile ops run on every thread alike).
//!
//! `tma_store`: every thread fences its writes of the box into the async proxy
//! (`fence.proxy.async.shared::cta`), a CTA barrier, then thread 0 issues
//! `cp.async.bulk.tensor` from shared to global in a bulk group, commits it and waits until
//! the group has *read* the box (`wait_group.read 0`), so the box can be rewritten after the
//! next barrier; the global writes complete asynchronously (before the grid completes). A
//! store marked `store_read_deferred` leaves that wait to `tma_store_wait` (the wait, then a
//! CTA barrier), which `gpu-descriptors` puts before the box's next write and after the loop.

use super::emitter::{Emitter, Res};
use super::regs::{Reg, RegClass};
use std::fmt::Write as _;
use trident_core::DType;
use trident_ir::{Function, Op, OpKind, Value, ValueDef};

pub use crate::machine::tma::{map_field, MapField};

/// The first of the two named barriers of ping-pong turns (0 is the CTA's, 1 the
/// consumers' of a warp-specialized kernel).
const PINGPONG_BARRIER: u32 = 2;

/// What the launch needs to build one hidden tensor map (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorMapSpec {
    /// The pointer parameter (IR parameter order) the map's global address is.
    pub base_param: usize,
    /// The element type (the pointer's pointee).
    pub dtype: DType,
    /// Dimensions, outermost first, in elements.
    pub shape: Vec<MapField>,
    /// Strides, outermost first, in elements (the last is 1).
    pub strides: Vec<MapField>,
    /// The box copied by each `tma_copy`, outermost first.
    pub block: Vec<u32>,
    /// The shared-memory swizzle span in bytes (0: none; 32, 64, 128).
    pub swizzle: u32,
    /// Out-of-bounds elements read as NaN (else 0).
    pub nan: bool,
}

/// The launch-time description of a `tma_map` op, or why it has none.
pub fn spec_of(f: &Function, op: Op) -> Result<TensorMapSpec, String> {
    let d = &f.ops[op];
    let OpKind::TmaMap { block, swizzle, nan } = &d.kind else { return Err("not a tma_map".into()) };
    let r = block.len();
    let base_param = match f.values[d.operands[0]].def {
        ValueDef::Arg(b, i) if b == f.body => i as usize,
        _ => return Err("the map's base is not a pointer parameter of the kernel".into()),
    };
    let dtype = f.ty(d.operands[0]).elem().pointee().ok_or("the map's base is not a pointer")?;
    let fields: Option<Vec<MapField>> = d.operands[1..].iter().map(|&v| map_field(f, v)).collect();
    let fields =
        fields.ok_or("a shape or stride of the map is not a kernel parameter, a constant or a product of them")?;
    Ok(TensorMapSpec {
        base_param,
        dtype,
        shape: fields[..r].to_vec(),
        strides: fields[r..].to_vec(),
        block: block.clone(),
        swizzle: *swizzle,
        nan: *nan,
    })
}

impl Emitter<'_> {
    /// Numbers the kernel's distinct tensor maps and declares their hidden parameters
    /// (appended to `params`, each first parameter after `first`): called before the body.
    pub(crate) fn declare_tensor_maps(
        &mut self,
        entry: &str,
        first: usize,
        param_text: &mut String,
    ) -> Res<Vec<TensorMapSpec>> {
        let f = self.f;
        let mut specs: Vec<TensorMapSpec> = vec![];
        for op in f.all_ops() {
            if !matches!(f.ops[op].kind, OpKind::TmaMap { .. }) {
                continue;
            }
            self.cur_op = Some(op);
            let spec = spec_of(f, op).map_err(|m| self.err(m))?;
            let k = match specs.iter().position(|s| *s == spec) {
                Some(k) => k,
                None => {
                    let pname = format!("{entry}_param_{}", first + specs.len());
                    let sep = if param_text.is_empty() { "" } else { ",\n" };
                    let _ = write!(param_text, "{sep}\t.param .align 64 .b8 {pname}[128]");
                    specs.push(spec);
                    specs.len() - 1
                }
            };
            self.tma_params.insert(op, format!("{entry}_param_{}", first + k));
        }
        Ok(specs)
    }

    /// How a `tma_copy`'s or `tma_store`'s buffer `bt` is cut into the boxes of `map`: one box,
    /// or (rows wider than the swizzle span) a row of boxes along the innermost dimension
    /// (`machine::tma`); `(boxes, columns per box, bytes per box)`.
    fn tma_boxes(&self, map: Value, bt: &trident_ir::Type) -> Res<(u32, u32, u64)> {
        let f = self.f;
        let rank = bt.shape().len();
        let cols = bt.shape()[rank - 1];
        let box_cols = match f.def_op(map).map(|o| &f.ops[o].kind) {
            Some(OpKind::TmaMap { block, .. }) if block.len() == rank => block[rank - 1],
            _ => return Err(self.err("internal: a TMA copy whose map is not a tma_map of its rank")),
        };
        if box_cols == 0 || !cols.is_multiple_of(box_cols) {
            return Err(self.err(format!("internal: boxes of {box_cols} columns do not tile {cols}")));
        }
        let boxes = cols / box_cols;
        let bytes = bt.numel() * super::regs::mem_bytes(bt.elem()) as u64;
        Ok((boxes, box_cols, bytes / boxes as u64))
    }

    /// Box `j` of a row of boxes: its shared address (`buf` plus `j` boxes) and its
    /// coordinates (innermost first: `coords` with the innermost moved `j * box_cols` on).
    fn box_at(&mut self, j: u32, buf: &str, coords: &[String], box_cols: u32, box_bytes: u64) -> (String, Vec<String>) {
        let mut cs = coords.to_vec();
        if j == 0 {
            return (buf.to_string(), cs);
        }
        let c = self.new_reg(RegClass::B32);
        self.ins(format!("add.s32 {c}, {}, {}", coords[0], j * box_cols));
        cs[0] = c.to_string();
        (format!("{buf}+{}", j as u64 * box_bytes), cs)
    }

    pub(crate) fn emit_tma_op(&mut self, op: Op) -> Res<()> {
        let f = self.f;
        let d = &f.ops[op];
        match &d.kind {
            OpKind::TmaMap { .. } => {
                let pname =
                    self.tma_params.get(&op).cloned().ok_or_else(|| self.err("internal: undeclared tma_map"))?;
                let (a, g) = (self.new_reg(RegClass::B64), self.new_reg(RegClass::B64));
                self.ins(format!("mov.u64 {a}, {pname}"));
                self.ins(format!("cvta.param.u64 {g}, {a}"));
                self.set(d.results[0], vec![g]);
            }
            OpKind::MbarrierInit { count, primed } => {
                let bars = d.operands[0];
                let addr = self.reg1(bars)?;
                let slots = f.ty(bars).shape().first().copied().unwrap_or(1);
                let leader = self.leader()?;
                for i in 0..slots {
                    self.ins(format!("@{leader} mbarrier.init.shared::cta.b64 [{addr}+{}], {count}", 8 * i));
                }
                self.ins("fence.mbarrier_init.release.cluster");
                self.cta_barrier();
                // Primed: every slot's first wait asks for parity 1, the phase before the
                // first, which an initialised barrier counts as complete.
                let phases = self.new_reg(RegClass::B32);
                self.ins(format!("mov.b32 {phases}, {}", if *primed { -1 } else { 0 }));
                let root = self.barrier_root(bars)?.0;
                self.mbar_phases.insert(root, phases);
            }
            OpKind::TmaCopy => {
                let map = self.reg1(d.operands[0])?;
                let buf = self.reg1(d.operands[1])?;
                let bar = self.reg1(d.operands[2])?;
                let bt = f.ty(d.operands[1]);
                let rank = bt.shape().len();
                let eb = super::regs::mem_bytes(bt.elem()) as u64;
                let bytes = bt.numel() * eb;
                // The buffer is one box of the map, or (rows wider than the swizzle span) a
                // row of boxes along the innermost dimension, box j `j * box_bytes` into the
                // buffer at innermost coordinate `offset + j * cols` (`machine::tma`).
                let (boxes, box_cols, box_bytes) = self.tma_boxes(d.operands[0], bt)?;
                let mut coords = vec![];
                for &o in d.operands[3..3 + rank].iter().rev() {
                    coords.push(self.reg1(o)?.to_string());
                }
                let mut leader = self.leader()?;
                if let Some(&g) = d.operands.get(3 + rank) {
                    let g = self.reg1(g)?;
                    let both = self.new_reg(RegClass::Pred);
                    self.ins(format!("and.pred {both}, {leader}, {g}"));
                    leader = both;
                }
                // One arrival announcing every box's bytes: the phase completes when all landed.
                // The copies sit in a block only the leader enters rather than each under the
                // leader predicate: ptxas then moves the map's address to uniform registers
                // once per block, not once per copy (sm_90a matmul loop at 128x64x64: 91 SASS
                // instructions instead of 104; bench/STATIC.md).
                let skip = self.new_label("tma_skip");
                self.ins(format!("@!{leader} bra {skip}"));
                self.ins(format!("mbarrier.arrive.expect_tx.shared::cta.b64 _, [{bar}], {bytes}"));
                for j in 0..boxes {
                    let (dst, cs) = self.box_at(j, &buf.to_string(), &coords, box_cols, box_bytes);
                    self.ins(format!(
                        "cp.async.bulk.tensor.{}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{dst}], [{map}, {{{}}}], [{bar}]",
                        cs.len(),
                        cs.join(", ")
                    ));
                }
                self.label(&skip);
            }
            OpKind::TmaStore => {
                let map = self.reg1(d.operands[0])?;
                let buf = self.reg1(d.operands[1])?;
                let bt = f.ty(d.operands[1]);
                let rank = bt.shape().len();
                let (boxes, box_cols, box_bytes) = self.tma_boxes(d.operands[0], bt)?;
                let mut coords = vec![];
                for &o in d.operands[2..2 + rank].iter().rev() {
                    coords.push(self.reg1(o)?.to_string());
                }
                let leader = self.leader()?;
                // Every thread's writes of the box (generic proxy) become visible to the copy
                // (async proxy): a proxy fence by each writer, then the CTA barrier.
                self.ins("fence.proxy.async.shared::cta");
                self.cta_barrier();
                // One copy per box (a swizzled tile's rows are cut into span-wide boxes side
                // by side, box j `j * box_bytes` into the buffer), all in one bulk group.
                for j in 0..boxes {
                    let (src, cs) = self.box_at(j, &buf.to_string(), &coords, box_cols, box_bytes);
                    self.ins(format!(
                        "@{leader} cp.async.bulk.tensor.{}d.global.shared::cta.tile.bulk_group [{map}, {{{}}}], [{src}]",
                        cs.len(),
                        cs.join(", ")
                    ));
                }
                self.ins(format!("@{leader} cp.async.bulk.commit_group"));
                // The box may be written again once the copy has read it (the global writes
                // finish on their own, before the grid completes) — here, or at the
                // `tma_store_wait` a deferred store leaves it to.
                if d.attrs.get(trident_ir::discardable::STORE_READ_DEFERRED).is_none() {
                    self.ins(format!("@{leader} cp.async.bulk.wait_group.read 0"));
                }
            }
            OpKind::TmaStoreWait => {
                let leader = self.leader()?;
                self.ins(format!("@{leader} cp.async.bulk.wait_group.read 0"));
                // Nobody writes the box before the issuing thread knows it was read.
                self.cta_barrier();
            }
            OpKind::MbarrierWait => {
                let bar = self.reg1(d.operands[0])?;
                let (root, slot) = self.barrier_root(d.operands[0])?;
                let phases = *self
                    .mbar_phases
                    .get(&root)
                    .ok_or_else(|| self.err("internal: mbarrier_wait on a barrier no mbarrier_init initialised"))?;
                let parity = self.new_reg(RegClass::B32);
                let bit = self.new_reg(RegClass::B32);
                match slot {
                    Some(i) => {
                        self.ins(format!("shr.u32 {parity}, {phases}, {i}"));
                        self.ins(format!("shl.b32 {bit}, 1, {i}"));
                    }
                    None => {
                        self.ins(format!("mov.b32 {parity}, {phases}"));
                        self.ins(format!("mov.b32 {bit}, 1"));
                    }
                }
                self.ins(format!("and.b32 {parity}, {parity}, 1"));
                let done = self.new_reg(RegClass::Pred);
                let again = self.new_label("mbar_wait");
                self.label(&again);
                self.ins(format!("mbarrier.try_wait.parity.shared::cta.b64 {done}, [{bar}], {parity}"));
                self.ins(format!("@!{done} bra {again}"));
                self.ins(format!("xor.b32 {phases}, {phases}, {bit}"));
            }
            OpKind::MbarrierArrive => {
                let bar = self.reg1(d.operands[0])?;
                let lane0 = match self.lane0 {
                    Some(p) => p,
                    None => {
                        let p = self.new_reg(RegClass::Pred);
                        let lane = self.lane;
                        self.pro_ins(format!("setp.eq.u32 {p}, {lane}, 0"));
                        self.lane0 = Some(p);
                        p
                    }
                };
                let mut pred = lane0;
                if let Some(&g) = d.operands.get(1) {
                    let g = self.reg1(g)?;
                    let both = self.new_reg(RegClass::Pred);
                    self.ins(format!("and.pred {both}, {lane0}, {g}"));
                    pred = both;
                }
                // The warp's reads are over before its first lane speaks for it.
                self.ins("bar.warp.sync -1");
                self.ins(format!("@{pred} mbarrier.arrive.shared::cta.b64 _, [{bar}]"));
            }
            other => return Err(self.err(format!("internal: `{}` is not a TMA op", other.name()))),
        }
        Ok(())
    }

    /// `warp_specialize`: warps past the kernel's `num_warps` branch to the producer region;
    /// the others run the consumer region, whose CTA barriers (and those after the op) then
    /// count the consumers alone (`cta_barrier`). The producer's warps leave through the
    /// kernel's end; the branch is uniform in each warp.
    ///
    /// With `producer_regs`/`consumer_regs` (a producer warpgroup), the producer's warps
    /// first give registers back (`setmaxnreg.dec`) and all but the first leave; the
    /// consumers take them (`setmaxnreg.inc`, which waits until they are free). ptxas then
    /// allocates each region within its count: the kernel's own count is what the whole
    /// CTA's threads can have (ptxas budgets whole warpgroups: a 1-warp producer costs the
    /// same registers as four).
    pub(crate) fn emit_warp_specialize(
        &mut self,
        op: Op,
        _producer_warps: u32,
        producer_regs: u32,
        consumer_regs: u32,
    ) -> Res<()> {
        let d = &self.f.ops[op];
        if self.consumer_threads.is_some() || self.in_producer {
            return Err(self.err("internal: nested `warp_specialize`"));
        }
        let consumers = 32 * self.opts.num_warps;
        let p = self.new_reg(RegClass::Pred);
        let tid = self.tid;
        let (producer, end) = (self.new_label("producer"), self.new_label("ws_end"));
        self.ins(format!("setp.ge.u32 {p}, {tid}, {consumers}"));
        self.ins(format!("@{p} bra.uni {producer}"));
        if consumer_regs > 0 {
            self.ins(format!("setmaxnreg.inc.sync.aligned.u32 {consumer_regs}"));
        }
        self.consumer_threads = Some(consumers);
        self.block(d.regions[0])?;
        if !self.pending_wgmma.is_empty() {
            self.ins("wgmma.wait_group.sync.aligned 0");
            self.pending_wgmma.clear();
        }
        self.ins(format!("bra.uni {end}"));
        self.label(&producer);
        if producer_regs > 0 {
            self.ins(format!("setmaxnreg.dec.sync.aligned.u32 {producer_regs}"));
            // One warp issues the copies; the rest of the warpgroup only gave registers.
            let rest = self.new_reg(RegClass::Pred);
            self.ins(format!("setp.ge.u32 {rest}, {tid}, {}", consumers + 32));
            self.ins(format!("@{rest} bra.uni {end}"));
        }
        self.in_producer = true;
        self.block(d.regions[1])?;
        self.in_producer = false;
        self.label(&end);
        Ok(())
    }

    /// A ping-pong turn between the two consumer warpgroups (`gpu-pingpong`): warpgroup w
    /// waits for its turn on named barrier `PINGPONG_BARRIER + w` (`bar.sync`, counting both
    /// warpgroups' threads) and passes the turn with `bar.arrive` on the other's, which
    /// does not wait. With `only`, one warpgroup alone executes it (a predicated immediate
    /// form). Barrier 0 is the CTA's and 1 the consumers' (`cta_barrier`).
    pub(crate) fn emit_pingpong(&mut self, pass: bool, only: Option<u32>) -> Res<()> {
        let Some(consumers) = self.consumer_threads else {
            return Err(self.err("internal: a ping-pong turn outside the consumers of a `warp_specialize`"));
        };
        if consumers != 2 * 128 {
            return Err(self
                .err(format!("internal: ping-pong needs two consumer warpgroups, not {consumers} consumer threads")));
        }
        let [me, other, wg0, wg1] = match self.pingpong {
            Some(r) => r,
            None => {
                let (wg, me, other) =
                    (self.new_reg(RegClass::B32), self.new_reg(RegClass::B32), self.new_reg(RegClass::B32));
                let (wg0, wg1) = (self.new_reg(RegClass::Pred), self.new_reg(RegClass::Pred));
                let tid = self.tid;
                self.pro_ins(format!("shr.u32 {wg}, {tid}, 7"));
                self.pro_ins(format!("add.u32 {me}, {wg}, {PINGPONG_BARRIER}"));
                self.pro_ins(format!("sub.u32 {other}, {}, {wg}", PINGPONG_BARRIER + 1));
                self.pro_ins(format!("setp.eq.u32 {wg0}, {wg}, 0"));
                self.pro_ins(format!("setp.eq.u32 {wg1}, {wg}, 1"));
                let r = [me, other, wg0, wg1];
                self.pingpong = Some(r);
                r
            }
        };
        let verb = if pass { "bar.arrive" } else { "bar.sync" };
        match only {
            // A wait right before a warpgroup MMA goes after the MMA's first instruction:
            // ptxas moves a `bar.sync` above register-only work (here the softmax that
            // computes the MMA's operand; above the `wgmma.fence` too), which would put
            // that work inside the turn and serialise the warpgroups. It keeps the barrier
            // below an MMA, which reads the operands (and shared memory).
            None if !pass && self.next_is_dot() => {
                self.turn_in_mma = Some(format!("{verb} {me}, {consumers}"));
            }
            None => self.ins(format!("{verb} {}, {consumers}", if pass { other } else { me })),
            Some(w) => {
                let id = if pass { PINGPONG_BARRIER + 1 - w } else { PINGPONG_BARRIER + w };
                self.ins(format!("@{} {verb} {id}, {consumers}", if w == 0 { wg0 } else { wg1 }));
            }
        }
        Ok(())
    }

    /// Whether the op after the current one (records aside) in its block is a dot on
    /// warpgroup MMA.
    fn next_is_dot(&self) -> bool {
        let f = self.f;
        let Some(op) = self.cur_op else { return false };
        let Some(b) = f.ops[op].parent else { return false };
        let ops = &f.blocks[b].ops;
        let at = ops.iter().position(|&o| o == op).unwrap_or(ops.len());
        self.opts.target.has_wgmma()
            && ops[at + 1..]
                .iter()
                .find(|&&o| !matches!(f.ops[o].kind, OpKind::Record { .. }))
                .is_some_and(|&o| matches!(f.ops[o].kind, OpKind::Dot { .. }))
    }

    /// A predicate true in thread 0 only (the thread that initialises barriers and issues
    /// copies), or in a warp-specialized kernel's producer region in its first thread.
    fn leader(&mut self) -> Res<Reg> {
        if self.in_producer {
            if let Some(p) = self.producer_leader {
                return Ok(p);
            }
            let p = self.new_reg(RegClass::Pred);
            let (tid, first) = (self.tid, 32 * self.opts.num_warps);
            self.pro_ins(format!("setp.eq.u32 {p}, {tid}, {first}"));
            self.producer_leader = Some(p);
            return Ok(p);
        }
        if let Some(p) = self.tma_leader {
            return Ok(p);
        }
        let p = self.new_reg(RegClass::Pred);
        let tid = self.tid;
        self.pro_ins(format!("setp.eq.u32 {p}, {tid}, 0"));
        self.tma_leader = Some(p);
        Ok(p)
    }

    /// The `local_alloc` a barrier view comes from, and the slot's index register when the
    /// view is a `memdesc_index` of it (`None`: the buffer itself, slot 0).
    fn barrier_root(&self, mut v: Value) -> Res<(Op, Option<Reg>)> {
        let f = self.f;
        let mut slot = None;
        while let ValueDef::Result(op, _) = f.values[v].def {
            match f.ops[op].kind {
                OpKind::LocalAlloc => return Ok((op, slot)),
                OpKind::MemDescIndex if slot.is_none() => {
                    slot = Some(self.reg1(f.ops[op].operands[1])?);
                    v = f.ops[op].operands[0];
                }
                _ => break,
            }
        }
        Err(self.err("internal: an mbarrier that is not a slot of a local_alloc"))
    }
}
