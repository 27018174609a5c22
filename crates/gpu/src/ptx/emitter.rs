//! The PTX emitter: walks GPU IR and writes PTX text.
//!
//! Every distributed tensor value becomes one PTX register per register index of its
//! layout ([`LinearLayout::reg`]); scalars are one register, the same in every thread.
//! Values that depend only on the thread index (a layout's per-thread coordinates, the
//! "owner" predicate of broadcast layouts) are computed once in a prologue at the
//! kernel's entry, so they dominate every use whatever the control flow.

use super::regs::{class_of, Reg, RegClass};
use crate::analysis::AxisAnalysis;
use crate::layout::{distributed, LinearLayout};
use crate::options::GpuOptions;
use std::collections::HashMap;
use std::fmt::Write;
use std::rc::Rc;
use trident_ir::discardable::{SMEM_OFFSET, SMEM_OPERAND, SMEM_SIZE, WGMMA_IN_FLIGHT};
use trident_ir::{Block, Diagnostic, Function, Loc, Op, OpKind, SourceFile, Type, Value};

pub(crate) type Res<T> = Result<T, Diagnostic>;

pub(crate) struct Emitter<'a> {
    pub f: &'a Function,
    pub files: &'a [SourceFile],
    pub opts: &'a GpuOptions,
    pub axis: &'a AxisAnalysis,
    /// Kernel body instructions.
    out: String,
    /// Thread-index-only computations, emitted at the entry.
    pro: String,
    counters: [u32; 4],
    vals: HashMap<Value, Vec<Reg>>,
    lls: HashMap<(trident_ir::LayoutId, Vec<u32>), Rc<LinearLayout>>,
    thread_coords: HashMap<(Rc<LinearLayout>, u64, u32), Reg>,
    /// `(thread offset ^ h) * bytes` registers of the prologue (see `smem_addr`).
    pub(crate) scaled_offsets: HashMap<(Reg, u64, u32), Reg>,
    owner_preds: HashMap<(u32, u32), Option<Reg>>,
    pub tid: Reg,
    pub lane: Reg,
    pub warp: Reg,
    labels: u32,
    last_loc: Loc,
    /// The op being emitted (for error locations).
    pub cur_op: Option<Op>,
    /// Global byte strings (printf formats, assert messages): name, bytes.
    pub strings: Vec<(String, Vec<u8>)>,
    pub uses_vprintf: bool,
    pub uses_assertfail: bool,
    smem_base: Option<Reg>,
    /// Scratch space for the parameters of `vprintf` calls (bytes), if any.
    pub printf_buffer: u32,
    /// Dot operands left in shared memory until the dot reads them.
    pub lazy: HashMap<Value, super::dot::LazyOperand>,
    /// wgmma operands left in shared-memory tiles (descriptors or `ldmatrix`).
    pub smem_ops: HashMap<Value, super::wgmma::SmemOperand>,
    /// A predicate register that is always true (prologue).
    pub(crate) true_pred: Option<Reg>,
    /// Results of wgmma dots issued and not waited for yet, in commit order (see
    /// `needs_wgmma_wait`).
    pub(crate) pending_wgmma: Vec<Value>,
    /// wgmma dots that accumulate in place into their loop's carried registers (see
    /// `Emitter::accumulates_in_place`): the loop's `yield` need not wait for them.
    pub(crate) in_place_wgmma: std::collections::HashSet<Value>,
    /// Loop-carried accumulators of such dots: at the top of the loop's body the previous
    /// iteration's MMA may still be writing them, so they count as pending there (an op
    /// that must not overlap it waits; the dot itself chains on it).
    pub(crate) carried_wgmma: std::collections::HashSet<Value>,
    /// How `record` ops are lowered, when profiling (see `profile`).
    pub(crate) records: Option<super::profile::RecordLowering>,
    users: Option<HashMap<Value, Vec<Op>>>,
    /// Sanitize mode's state (bounds checks of global accesses; see `sanitize`).
    pub(crate) san: Option<super::sanitize::Sanitizer>,
    /// The sanitize site of the `async_copy` being emitted, for `store_tile`'s `cp.async`s.
    pub(crate) copy_site: Option<super::sanitize::Site>,
    /// The PTX ISA version the instructions used need (times ten: 80 = 8.0).
    pub ptx_version: u32,
    /// Each `tma_map` op's hidden parameter (see `tma`).
    pub(crate) tma_params: HashMap<Op, String>,
    /// Each barrier buffer's slot parities (see `tma`).
    pub(crate) mbar_phases: HashMap<Op, Reg>,
    /// `tid == 0`, made once in the prologue for the TMA ops.
    pub(crate) tma_leader: Option<Reg>,
    /// Inside and after the consumer region of a `warp_specialize`: the consumer threads,
    /// which CTA barriers then synchronise alone (named barrier 1; see `warp_specialize`).
    pub(crate) consumer_threads: Option<u32>,
    /// Ping-pong turns (`pingpong_wait`/`pingpong_pass`): this warpgroup's named barrier,
    /// the other's, and "warpgroup 0" / "warpgroup 1" predicates, set up in the prologue.
    pub(crate) pingpong: Option<[Reg; 4]>,
    /// A turn's `bar.sync` waiting for the next warpgroup MMA's first instruction (see
    /// `emit_pingpong`).
    pub(crate) turn_in_mma: Option<String>,
    /// Emitting the producer region of a `warp_specialize`.
    pub(crate) in_producer: bool,
    /// `tid == first producer thread` (the producer's TMA leader).
    pub(crate) producer_leader: Option<Reg>,
    /// `lane == 0`, for one arrival per warp.
    pub(crate) lane0: Option<Reg>,
}

impl<'a> Emitter<'a> {
    pub fn new(f: &'a Function, files: &'a [SourceFile], opts: &'a GpuOptions, axis: &'a AxisAnalysis) -> Emitter<'a> {
        let mut e = Emitter {
            f,
            files,
            opts,
            axis,
            out: String::new(),
            pro: String::new(),
            counters: [0; 4],
            vals: HashMap::new(),
            lls: HashMap::new(),
            thread_coords: HashMap::new(),
            scaled_offsets: HashMap::new(),
            owner_preds: HashMap::new(),
            tid: Reg { class: RegClass::B32, id: 0 },
            lane: Reg { class: RegClass::B32, id: 0 },
            warp: Reg { class: RegClass::B32, id: 0 },
            labels: 0,
            last_loc: Loc::UNKNOWN,
            cur_op: None,
            strings: vec![],
            uses_vprintf: false,
            uses_assertfail: false,
            smem_base: None,
            printf_buffer: 0,
            lazy: HashMap::new(),
            smem_ops: HashMap::new(),
            true_pred: None,
            pending_wgmma: Vec::new(),
            in_place_wgmma: std::collections::HashSet::new(),
            carried_wgmma: std::collections::HashSet::new(),
            records: None,
            users: None,
            san: None,
            copy_site: None,
            ptx_version: 80,
            tma_params: HashMap::new(),
            mbar_phases: HashMap::new(),
            tma_leader: None,
            consumer_threads: None,
            pingpong: None,
            turn_in_mma: None,
            in_producer: false,
            producer_leader: None,
            lane0: None,
        };
        e.tid = e.new_reg(RegClass::B32);
        e.lane = e.new_reg(RegClass::B32);
        e.warp = e.new_reg(RegClass::B32);
        let (t, l, w) = (e.tid, e.lane, e.warp);
        let _ = writeln!(e.pro, "\tmov.u32 {t}, %tid.x;\n\tand.b32 {l}, {t}, 31;\n\tshr.u32 {w}, {t}, 5;");
        e
    }

    // ---- registers and text ----

    pub fn new_reg(&mut self, class: RegClass) -> Reg {
        let c = &mut self.counters[class.index()];
        *c += 1;
        Reg { class, id: *c }
    }

    /// Appends one instruction (without the `;`).
    pub fn ins(&mut self, s: impl AsRef<str>) {
        self.out.push('\t');
        self.out.push_str(s.as_ref());
        self.out.push_str(";\n");
    }

    /// Appends one instruction to the prologue.
    /// A barrier of every thread that runs the current code: the CTA, or in a warp-specialized
    /// kernel's consumer code the consumer warps alone (named barrier 1 with their count; the
    /// producer's warps never reach it).
    pub fn cta_barrier(&mut self) {
        match self.consumer_threads {
            Some(n) => self.ins(format!("bar.sync 1, {n}")),
            None => self.ins("bar.sync 0"),
        }
    }

    pub fn pro_ins(&mut self, s: impl AsRef<str>) {
        self.pro.push('\t');
        self.pro.push_str(s.as_ref());
        self.pro.push_str(";\n");
    }

    /// Appends raw lines (each ending in `;\n`) to the prologue.
    pub fn push_prologue(&mut self, code: &str) {
        self.pro.push_str(code);
    }

    /// Appends raw text (labels, comments).
    pub fn raw(&mut self, s: impl AsRef<str>) {
        self.out.push_str(s.as_ref());
    }

    pub fn new_label(&mut self, what: &str) -> String {
        self.labels += 1;
        format!("$L_{what}_{}", self.labels)
    }

    pub fn label(&mut self, l: &str) {
        let _ = writeln!(self.out, "{l}:");
    }

    /// A fresh register holding an immediate.
    pub fn imm(&mut self, class: RegClass, v: i64) -> Reg {
        let r = self.new_reg(class);
        match class {
            RegClass::Pred => self.ins(format!("setp.ne.u32 {r}, {}, 0", (v != 0) as u32)),
            RegClass::B16 => self.ins(format!("mov.b16 {r}, {}", v as u16)),
            RegClass::B32 => self.ins(format!("mov.b32 {r}, {}", v as u32)),
            RegClass::B64 => self.ins(format!("mov.b64 {r}, {}", v as u64)),
        }
        r
    }

    pub fn mov(&mut self, dst: Reg, src: Reg) {
        if dst != src {
            self.ins(format!("mov.{} {dst}, {src}", dst.class.btype()));
        }
    }

    // ---- diagnostics ----

    pub fn err(&self, msg: impl Into<String>) -> Diagnostic {
        let d = Diagnostic::error(msg);
        match self.cur_op {
            Some(op) if !self.f.ops[op].loc.is_unknown() => d.at(self.f.ops[op].loc, 1),
            _ => d,
        }
    }

    // ---- values ----

    /// The ops using `v` (computed once per kernel).
    pub fn users_of(&mut self, v: Value) -> Vec<Op> {
        if self.users.is_none() {
            let mut m: HashMap<Value, Vec<Op>> = HashMap::new();
            for op in self.f.all_ops() {
                for &o in &self.f.ops[op].operands {
                    m.entry(o).or_default().push(op);
                }
            }
            self.users = Some(m);
        }
        self.users.as_ref().and_then(|m| m.get(&v)).cloned().unwrap_or_default()
    }

    pub fn set(&mut self, v: Value, regs: Vec<Reg>) {
        self.vals.insert(v, regs);
    }

    pub fn regs(&self, v: Value) -> Res<Vec<Reg>> {
        self.vals.get(&v).cloned().ok_or_else(|| self.err(format!("internal: value {v} has no registers")))
    }

    pub fn reg1(&self, v: Value) -> Res<Reg> {
        let r = self.regs(v)?;
        r.first().copied().ok_or_else(|| self.err(format!("internal: value {v} is empty")))
    }

    pub fn ty(&self, v: Value) -> &'a Type {
        self.f.ty(v)
    }

    /// The linear layout of a tensor type (`None` for scalars).
    pub fn ll_of_type(&mut self, t: &Type) -> Res<Option<Rc<LinearLayout>>> {
        match t {
            Type::Scalar(_) => Ok(None),
            Type::Tensor { shape, layout, .. } => {
                let Some(id) = layout else {
                    return Err(self.err(format!("internal: tensor type `{t}` has no layout")));
                };
                let key = (*id, shape.to_vec());
                if let Some(l) = self.lls.get(&key) {
                    return Ok(Some(l.clone()));
                }
                let l =
                    distributed(&self.f.layouts, *id, shape).map_err(|e| self.err(format!("layout of `{t}`: {e}")))?;
                let l = Rc::new(l);
                self.lls.insert(key, l.clone());
                Ok(Some(l))
            }
        }
    }

    pub fn ll(&mut self, v: Value) -> Res<Option<Rc<LinearLayout>>> {
        let t = self.ty(v);
        self.ll_of_type(t)
    }

    /// Fresh registers for a value of type `t`: one per layout register (one for a scalar).
    pub fn fresh_for(&mut self, t: &Type) -> Res<Vec<Reg>> {
        let n = match self.ll_of_type(t)? {
            Some(l) => l.num_regs(),
            None => 1,
        };
        let c = class_of(t.elem());
        Ok((0..n).map(|_| self.new_reg(c)).collect())
    }

    // ---- thread coordinates ----

    /// The thread's part of the coordinate along dim `d` (lane and warp bits only),
    /// computed in the prologue: coordinate of register r = this XOR reg part of r.
    pub fn thread_coord(&mut self, l: &Rc<LinearLayout>, d: usize) -> Reg {
        let shift = crate::layout::linear::dim_shifts(&l.shape)[d];
        let mask = (l.shape[d] as u64 - 1) << shift;
        self.thread_bits(l, mask, shift)
    }

    /// `(XOR of the thread's lane and warp bases) & mask >> shift`, computed once in the prologue.
    pub fn thread_bits(&mut self, l: &Rc<LinearLayout>, mask: u64, shift: u32) -> Reg {
        let key = (l.clone(), mask, shift);
        if let Some(&r) = self.thread_coords.get(&key) {
            return r;
        }
        let comp = |b: u64| ((b & mask) >> shift) as u32;
        let lanes: Vec<u32> = l.lane.iter().map(|&b| comp(b)).collect();
        let warps: Vec<u32> = l.warp.iter().map(|&b| comp(b)).collect();
        let acc = self.new_reg(RegClass::B32);
        let (lane, warp) = (self.lane, self.warp);
        let mut terms: Vec<Reg> = vec![];
        for (src, bases) in [(lane, lanes), (warp, warps)] {
            // Runs of index bits i0.. mapping to consecutive coordinate bits are one bit-field move.
            let mut i = 0;
            while i < bases.len() {
                let b = bases[i];
                if b == 0 {
                    i += 1;
                    continue;
                }
                let t = self.new_reg(RegClass::B32);
                if b.is_power_of_two() {
                    let mut len = 1;
                    while i + len < bases.len() && b.checked_shl(len as u32) == Some(bases[i + len]) {
                        len += 1;
                    }
                    let _ = writeln!(self.pro, "\tbfe.u32 {t}, {src}, {i}, {len};");
                    if b > 1 {
                        let _ = writeln!(self.pro, "\tshl.b32 {t}, {t}, {};", b.trailing_zeros());
                    }
                    i += len;
                } else {
                    let _ = writeln!(self.pro, "\tbfe.u32 {t}, {src}, {i}, 1;\n\tmul.lo.u32 {t}, {t}, {b};");
                    i += 1;
                }
                terms.push(t);
            }
        }
        match terms.len() {
            0 => {
                let _ = writeln!(self.pro, "\tmov.b32 {acc}, 0;");
            }
            _ => {
                let _ = writeln!(self.pro, "\tmov.b32 {acc}, {};", terms[0]);
                for t in &terms[1..] {
                    let _ = writeln!(self.pro, "\txor.b32 {acc}, {acc}, {t};");
                }
            }
        }
        self.thread_coords.insert(key, acc);
        acc
    }

    /// True when the thread part and the register part of dim `d` use disjoint bits,
    /// so that `thread ^ reg == thread + reg` (lets addresses use immediate offsets).
    pub fn coord_bits_disjoint(l: &LinearLayout, d: usize) -> bool {
        let mask = l.dim_mask(d);
        let t = l.lane.iter().chain(&l.warp).fold(0, |a, &b| a | (b & mask));
        let r = l.reg.iter().fold(0, |a, &b| a | (b & mask));
        t & r == 0 && l.lane.iter().chain(&l.warp).filter(|&&b| b & mask != 0).all(|&b| (b & mask).is_power_of_two())
    }

    /// A predicate true in the one thread of each group of threads holding the same
    /// elements (lanes/warps whose layout bases are zero hold copies); `None` when no
    /// thread holds copies. Stores and atomics are issued by owners only.
    pub fn owner_pred(&mut self, l: &LinearLayout) -> Option<Reg> {
        let lanes = l.free_lane_mask();
        let warps = l.free_warp_mask();
        self.owner_pred_masks(lanes, warps)
    }

    /// Owner predicate for explicit masks of lane/warp bits that hold copies.
    pub fn owner_pred_masks(&mut self, lanes: u32, warps: u32) -> Option<Reg> {
        // Warps beyond the layout's (all threads of the CTA run every op) are copies too.
        let nw = self.opts.num_warps;
        if let Some(&p) = self.owner_preds.get(&(lanes, warps)) {
            return p;
        }
        let p = if lanes == 0 && warps == 0 {
            None
        } else {
            let p = self.new_reg(RegClass::Pred);
            let t = self.new_reg(RegClass::B32);
            let mask = (lanes & 31) | ((warps & (nw.max(1) - 1)) << 5);
            let _ = writeln!(self.pro, "\tand.b32 {t}, {}, {mask};\n\tsetp.eq.u32 {p}, {t}, 0;", self.tid);
            Some(p)
        };
        self.owner_preds.insert((lanes, warps), p);
        p
    }

    /// Predicate true in thread 0 only (for scalar side effects).
    pub fn thread0_pred(&mut self) -> Reg {
        let nw = self.opts.num_warps.max(1);
        self.owner_pred_masks(31, nw - 1).expect("non-empty mask")
    }

    /// Base address (32-bit shared window) of the kernel's shared memory.
    pub fn smem_base(&mut self) -> Reg {
        if let Some(r) = self.smem_base {
            return r;
        }
        let r = self.new_reg(RegClass::B32);
        let _ = writeln!(self.pro, "\tmov.u32 {r}, global_smem;");
        self.smem_base = Some(r);
        r
    }

    /// Shared-memory byte offset the planner recorded on `op` (`smem_offset`).
    pub fn smem_offset(&self, op: Op) -> Res<u32> {
        match self.f.ops[op].attrs.int(SMEM_OFFSET).map(u32::try_from) {
            Some(Ok(off)) => Ok(off),
            _ => Err(self.err(format!(
                "`{}` needs shared memory but has no `{SMEM_OFFSET}`: run the GPU pipeline (gpu-alloc-shared) first",
                self.f.ops[op].kind.name()
            ))),
        }
    }

    /// Whether the planner marked `op` (`smem_operand`) as leaving its wgmma operand tile in
    /// shared memory. The mark is only honoured where the dot is the result's one user (the
    /// tile produces no registers for anyone else).
    pub fn smem_operand(&self, op: Op) -> Res<bool> {
        let d = &self.f.ops[op];
        if !d.attrs.flag(SMEM_OPERAND) {
            return Ok(false);
        }
        if !d.results.first().is_some_and(|&r| crate::machine::wgmma::only_dot_user(self.f, r)) {
            return Err(self.err(format!("`{SMEM_OPERAND}` on an op whose result is not used by one `dot` only")));
        }
        Ok(true)
    }

    // ---- walking ----

    pub fn block(&mut self, b: Block) -> Res<()> {
        for &op in &self.f.blocks[b].ops.clone() {
            self.op(op)?;
        }
        Ok(())
    }

    fn loc(&mut self, loc: Loc) {
        if !self.opts.line_info || loc.is_unknown() || loc == self.last_loc {
            return;
        }
        if (loc.file as usize) < self.files.len().max(1) {
            let _ = writeln!(self.out, "\t.loc {} {} {}", loc.file + 1, loc.line, loc.col);
            self.last_loc = loc;
        }
    }

    pub fn op(&mut self, op: Op) -> Res<()> {
        let saved = self.cur_op;
        self.cur_op = Some(op);
        let is_record = matches!(self.f.ops[op].kind, OpKind::Record { .. });
        let wait = if is_record { self.wait_before_records(op) } else { self.needs_wgmma_wait(op) };
        if !self.pending_wgmma.is_empty() && wait {
            // A barrier the pipeliner marked lets the last groups run on (they read no slot
            // it protects): wait for the older ones only. An op that only reads MMA results
            // waits for the youngest group it reads, groups issued after it running on.
            let keep = match self.f.ops[op].kind {
                OpKind::Barrier | OpKind::MbarrierArrive => {
                    self.f.ops[op].attrs.int(WGMMA_IN_FLIGHT).unwrap_or(0).max(0) as usize
                }
                _ if !is_record => self.groups_after_operands(op),
                _ => 0,
            };
            let reads_none_in_flight = !is_record
                && !matches!(self.f.ops[op].kind, OpKind::Barrier | OpKind::MbarrierArrive)
                && keep >= self.pending_wgmma.len();
            if reads_none_in_flight {
                // A reduction whose operands are not in flight: no wait.
            } else if keep > 0 {
                self.ins(format!("wgmma.wait_group.sync.aligned {keep}"));
                let n = self.pending_wgmma.len();
                self.pending_wgmma.drain(..n.saturating_sub(keep));
            } else {
                self.ins("wgmma.wait_group.sync.aligned 0");
                self.pending_wgmma.clear();
            }
        }
        // A probe is not source code: the instructions around it keep their lines.
        if !is_record {
            self.loc(self.f.ops[op].loc);
        }
        let r = self.dispatch(op);
        if let Some(turn) = self.turn_in_mma.take() {
            // The op the turn waited for was no warpgroup MMA: the turn goes after it
            // (the barrier's pairing is unchanged).
            if !matches!(self.f.ops[op].kind, OpKind::PingpongWait { .. }) {
                self.ins(turn);
            } else {
                self.turn_in_mma = Some(turn);
            }
        }
        self.cur_op = saved;
        r
    }

    /// Whether the warpgroup MMAs in flight are waited for before the record `op`. A record
    /// forces no wait (a probe must not change what it measures), but when the op after
    /// the run of records `op` starts needs the wait anyway, the wait goes before the
    /// records: it is where the kernel waits either way (relative to every other
    /// instruction), and a region that ends there — a `dot` whose result is used next, a
    /// loop body before its `yield` — then includes the wait the kernel really makes.
    fn wait_before_records(&self, op: Op) -> bool {
        let f = self.f;
        let Some(block) = f.ops[op].parent else { return false };
        let ops = &f.blocks[block].ops;
        let at = ops.iter().position(|&o| o == op).unwrap_or(ops.len());
        match ops[at..].iter().find(|&&o| !matches!(f.ops[o].kind, OpKind::Record { .. })) {
            // A barrier that lets MMAs run on makes its own (partial) wait.
            Some(&next) if f.ops[next].attrs.int(WGMMA_IN_FLIGHT).is_some_and(|n| n > 0) => false,
            Some(&next) => self.needs_wgmma_wait(next),
            // The block's end: every block ends in a terminator, which waits.
            None => true,
        }
    }

    fn dispatch(&mut self, op: Op) -> Res<()> {
        let d = &self.f.ops[op];
        use OpKind::*;
        match &d.kind {
            Constant(_)
            | Arange { .. }
            | ProgramId { .. }
            | NumPrograms { .. }
            | Splat
            | Broadcast
            | ExpandDims { .. } => self.emit_misc(op),
            Reshape { .. } | Trans { .. } | Join | Split | Cat => self.emit_shape_op(op),
            Gather { .. } => self.emit_gather(op),
            InlineAsm { .. } => self.emit_inline_asm(op),
            Binary(_) | Unary(_) | Cmp(_) | Select | Fma | Cast { .. } | AddPtr => self.emit_elementwise(op),
            Load { .. } => self.emit_load(op),
            Store { .. } => self.emit_store(op),
            AtomicRmw { .. } | AtomicCas { .. } => self.emit_atomic(op),
            Dot { .. } => self.emit_dot(op),
            Reduce { .. } => self.emit_reduce(op),
            Scan { .. } => self.emit_scan(op),
            MultipleOf { .. } | MaxContiguous { .. } | MaxConstancy { .. } => {
                let r = self.regs(d.operands[0])?;
                self.set(d.results[0], r);
                Ok(())
            }
            Assume => Ok(()),
            Print { .. } => self.emit_print(op),
            Assert { .. } => self.emit_assert(op),
            For => self.emit_for(op),
            If => self.emit_if(op),
            While => self.emit_while(op),
            Yield | Condition | Return => Ok(()),
            Record { .. } => self.emit_record(op),
            Call { callee } => {
                Err(self.err(format!("call to `{callee}` was not inlined; the GPU backend needs one function")))
            }
            #[allow(unreachable_patterns)]
            _ => self.emit_gpu_op(op),
        }
    }

    /// Whether the warpgroup MMAs in flight must be waited for before `op`: it reads
    /// their results, ends a block or has regions (the wait is per block), or may write
    /// shared memory other than the pipeline's copies into free slots (the tiles the MMAs
    /// read must stay as they are until they finish). A `record` writes only its ring,
    /// which no MMA reads: it needs no wait (see `wait_before_records`).
    /// For an op that waits only because it reads results of warpgroup MMAs in flight (a
    /// pure op: no regions, no shared memory, no effect), how many of the groups issued after
    /// the youngest one it reads may stay in flight (`wgmma.wait_group N` completes groups
    /// oldest first); 0 for any other op. FA3's order relies on it: the softmax of block j
    /// waits for `Q·K_jᵀ` while `P·V` of block j-1, issued after it, runs on.
    fn groups_after_operands(&self, op: Op) -> usize {
        let d = &self.f.ops[op];
        // A reduction's or scan's regions are its combine function: scalar code on its operands.
        let combine_only = d.regions.is_empty() || matches!(d.kind, OpKind::Reduce { .. } | OpKind::Scan { .. });
        let pure = combine_only
            && d.kind.effect() == trident_ir::Effect::Pure
            && !matches!(d.kind, OpKind::Dot { .. } | OpKind::Yield | OpKind::Condition | OpKind::Return)
            && d.attrs.int(SMEM_SIZE).is_none_or(|n| n <= 0);
        if !pure {
            return 0;
        }
        let youngest = d.operands.iter().filter_map(|v| self.pending_wgmma.iter().rposition(|p| p == v)).max();
        match youngest {
            Some(i) => self.pending_wgmma.len() - 1 - i,
            // Reads nothing in flight (a reduction waits for its regions' sake only): no wait.
            None => self.pending_wgmma.len(),
        }
    }

    fn needs_wgmma_wait(&self, op: Op) -> bool {
        let d = &self.f.ops[op];
        let in_flight = |v: &Value| self.pending_wgmma.contains(v);
        // A yield passes on an accumulator updated in place without reading it, and a dot
        // chains on its in-place accumulator in the tensor cores.
        let chained = |i: usize, v: &Value| match d.kind {
            OpKind::Yield => self.in_place_wgmma.contains(v),
            OpKind::Dot { .. } => i == 2 && self.carried_wgmma.contains(v),
            _ => false,
        };
        if d.operands.iter().enumerate().any(|(i, v)| in_flight(v) && !chained(i, v)) || !d.regions.is_empty() {
            return true;
        }
        match d.kind {
            // A loop's yield of an accumulator the dot updated in place (the next iteration's
            // dot chains on it in the tensor cores; after the loop its users wait).
            OpKind::Yield => !self.pending_wgmma.iter().all(|v| self.in_place_wgmma.contains(v)),
            OpKind::Condition | OpKind::Return | OpKind::Barrier => true,
            // The pipeliner's copies fill slots no MMA in flight reads; a barrier wait
            // touches no operand.
            OpKind::AsyncCopy | OpKind::AsyncCommitGroup | OpKind::AsyncWait { .. } => false,
            OpKind::TmaCopy | OpKind::MbarrierWait => false,
            // Releases a slot: waits for the MMAs that read it (all but the marked last ones).
            OpKind::MbarrierArrive => true,
            // Turns order MMA issue between warpgroups; they touch no operand.
            OpKind::Dot { .. } | OpKind::Record { .. } | OpKind::PingpongWait { .. } | OpKind::PingpongPass { .. } => {
                false
            }
            _ => d.attrs.int(SMEM_SIZE).is_some_and(|n| n > 0) || d.kind.effect() == trident_ir::Effect::Write,
        }
    }

    /// Declarations of every register used.
    pub fn reg_decls(&self) -> String {
        let mut s = String::new();
        for c in RegClass::ALL {
            let n = self.counters[c.index()];
            if n > 0 {
                let _ = writeln!(s, "\t.reg {} {}<{}>;", c.decl(), c.prefix(), n + 1);
            }
        }
        s
    }

    pub fn take_text(&mut self) -> (String, String) {
        (std::mem::take(&mut self.pro), std::mem::take(&mut self.out))
    }
}
