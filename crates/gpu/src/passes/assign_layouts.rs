//! Layout assignment: tile IR → GPU IR.
//!
//! 1. Anchors: memory ops get coalesced blocked layouts (see `coalesce`), `dot` gets an
//!    mma accumulator layout with operand layouts (or blocked FMA layouts), from the
//!    axis analysis and the element types.
//! 2. Hints flow backwards from anchors through elementwise ops, broadcasts
//!    (`expand_dims` turns a hint into its slice) and loop-carried values, so that
//!    address arithmetic and accumulators are built in the layout their consumer wants.
//! 3. A forward walk gives every tensor value a layout: a value computed from loads or
//!    dots keeps their layout, cheap values (constants, ranges) take their hint, and
//!    `convert_layout` ops are inserted where an operand's layout differs from what its
//!    op needs. `remove_converts` then cleans up.

use super::coalesce::{batched_mma_warps, blocked_layout, coalesced_layout, default_blocked, mma_warps};
use crate::analysis::AxisAnalysis;
use crate::machine::mma::{mma_kind, MmaKind};
use crate::machine::reduce::axis_bits;
use crate::options::GpuOptions;
use std::collections::HashMap;
use trident_ir::{Block, Diagnostic, Function, Layout, LayoutId, Op, OpKind, Type, Value, ValueDef};

pub struct Assigner<'a> {
    pub f: &'a mut Function,
    opts: &'a GpuOptions,
    axis: AxisAnalysis,
    hints: HashMap<Value, LayoutId>,
    /// Layouts of memory ops (for every tensor operand) and dots (a, b, acc/result).
    mem_anchor: HashMap<Op, LayoutId>,
    dot_anchor: HashMap<Op, (LayoutId, LayoutId, LayoutId)>,
    default_cache: HashMap<Vec<u32>, LayoutId>,
    /// Layouts forced on loop-carried values (block arguments), from earlier trials.
    overrides: HashMap<Value, LayoutId>,
    /// Dots whose result feeds another dot's A operand, or whose A operand comes from a
    /// dot: their mma layouts put every warp along M so that the accumulator of one is
    /// the operand of the next without moving data.
    chained: std::collections::HashSet<Op>,
}

/// Assigns layouts to every tensor of `f` (a kernel in tile IR).
pub fn assign_layouts(f: &mut Function, opts: &GpuOptions) -> Result<(), Diagnostic> {
    if !opts.num_warps.is_power_of_two() || opts.num_warps == 0 || opts.num_warps > 32 {
        return Err(Diagnostic::error(format!("num_warps must be a power of two in 1..=32, got {}", opts.num_warps)));
    }
    widen_fp8_dots(f, opts);
    let axis = AxisAnalysis::run(f);
    let chained = chained_dots(f);
    // Loop-carried values take the layout their loop body produces: assign, look for
    // iteration arguments whose yielded value ends up in another layout, force that layout
    // on them, and assign again (a few rounds reach a fixed point in practice).
    let mut overrides: HashMap<Value, LayoutId> = HashMap::new();
    let mut layouts = f.layouts.clone();
    let mut last = None;
    for _ in 0..4 {
        let mut trial = f.clone();
        trial.layouts = layouts.clone();
        let mut a = Assigner {
            f: &mut trial,
            opts,
            axis: axis.clone(),
            hints: HashMap::new(),
            mem_anchor: HashMap::new(),
            dot_anchor: HashMap::new(),
            default_cache: HashMap::new(),
            overrides: overrides.clone(),
            chained: chained.clone(),
        };
        let body = a.f.body;
        a.hint_block(body)?;
        a.assign_block(body)?;
        let fixes = loop_mismatches(&trial);
        layouts = trial.layouts.clone();
        let done = fixes.iter().all(|(v, l)| overrides.get(v) == Some(l));
        last = Some(trial);
        if done {
            break;
        }
        overrides.extend(fixes);
    }
    if let Some(t) = last {
        *f = t;
    }
    Ok(())
}

/// Below sm_89 there is no fp8 `mma`: fp8 operands are widened to f16 (exactly: f16 holds
/// every e4m3 and e5m2 value) so that the dot still runs on tensor cores.
fn widen_fp8_dots(f: &mut Function, opts: &GpuOptions) {
    if opts.target.capability() >= 89 {
        return;
    }
    for op in f.all_ops() {
        if !matches!(f.ops[op].kind, OpKind::Dot { .. }) {
            continue;
        }
        for i in 0..2 {
            let v = f.ops[op].operands[i];
            let t = f.ty(v).clone();
            if t.elem().num().is_some_and(|d| d.is_fp8()) {
                let c = f.new_op(
                    OpKind::Cast { kind: trident_ir::CastKind::Convert, rounding: trident_ir::Rounding::Rtne },
                    &[v],
                    &[t.with_elem(trident_ir::DType::F16)],
                    f.ops[op].loc,
                );
                f.insert_op_before(op, c);
                f.ops[op].operands[i] = f.ops[c].results[0];
            }
        }
    }
}

/// The value a yield really yields (looking through the conversion inserted before it).
fn through_convert(f: &Function, v: Value) -> Value {
    match f.values[v].def {
        ValueDef::Result(op, _) if matches!(f.ops[op].kind, OpKind::ConvertLayout) => f.ops[op].operands[0],
        _ => v,
    }
}

/// Loop-carried values whose yielded value is computed in another layout: (argument, that layout).
fn loop_mismatches(f: &Function) -> Vec<(Value, LayoutId)> {
    let mut out = vec![];
    for op in f.all_ops() {
        let d = &f.ops[op];
        let pairs: Vec<(Block, Block, usize)> = match d.kind {
            // (block whose args carry, block whose terminator yields, first carried arg index)
            OpKind::For => vec![(d.regions[0], d.regions[0], 1)],
            OpKind::While => vec![(d.regions[0], d.regions[1], 0)],
            _ => continue,
        };
        for (args_b, yield_b, first) in pairs {
            let Some(t) = f.terminator(yield_b) else { continue };
            let args = &f.blocks[args_b].args;
            for (i, &y) in f.ops[t].operands.iter().enumerate() {
                let Some(&a) = args.get(first + i) else { continue };
                let src = through_convert(f, y);
                if let (Some(la), Some(ly)) = (f.ty(a).layout(), f.ty(src).layout()) {
                    if la != ly {
                        out.push((a, ly));
                    }
                }
            }
        }
    }
    out
}

/// Dots chained through elementwise ops (`p = softmax-ish(q @ k); p @ v`).
fn chained_dots(f: &Function) -> std::collections::HashSet<Op> {
    let mut users: HashMap<Value, Vec<Op>> = HashMap::new();
    for op in f.all_ops() {
        for &o in &f.ops[op].operands {
            users.entry(o).or_default().push(op);
        }
    }
    let mut out = std::collections::HashSet::new();
    for op in f.all_ops() {
        if !matches!(f.ops[op].kind, OpKind::Dot { .. }) {
            continue;
        }
        // Forward through elementwise ops from the result, looking for a dot's operand 0.
        let mut stack = vec![f.ops[op].results[0]];
        let mut seen = std::collections::HashSet::new();
        while let Some(v) = stack.pop() {
            if !seen.insert(v) {
                continue;
            }
            for &u in users.get(&v).map(|v| v.as_slice()).unwrap_or(&[]) {
                let d = &f.ops[u];
                match &d.kind {
                    OpKind::Dot { .. } if d.operands[0] == v => {
                        out.insert(op);
                        out.insert(u);
                    }
                    k if k.is_elementwise() => stack.extend(d.results.iter().copied()),
                    _ => {}
                }
            }
        }
    }
    out
}

fn is_tensor(t: &Type) -> bool {
    t.is_tensor()
}

impl Assigner<'_> {
    fn intern(&mut self, l: Layout) -> LayoutId {
        self.f.intern_layout(l)
    }

    fn default_for(&mut self, shape: &[u32]) -> LayoutId {
        if let Some(&l) = self.default_cache.get(shape) {
            return l;
        }
        let l = default_blocked(shape, self.opts.num_warps);
        let id = self.intern(l);
        self.default_cache.insert(shape.to_vec(), id);
        id
    }

    fn layout_of(&self, v: Value) -> Option<LayoutId> {
        self.f.ty(v).layout()
    }

    /// The linear map of `v`'s layout when it is an mma accumulator or already linear: the
    /// layouts whose reshapes, permutes and splits keep their registers where they are as
    /// `linear` layouts (blocked ones keep their own rules and the converts they have).
    fn register_linear(&self, v: Value) -> Option<crate::layout::LinearLayout> {
        let l = self.layout_of(v)?;
        if !matches!(self.f.layouts.get(l), Some(Layout::Mma { .. } | Layout::Linear { .. })) {
            return None;
        }
        crate::layout::distributed(&self.f.layouts, l, self.f.ty(v).shape()).ok().filter(|ll| ll.is_valid())
    }

    fn hint(&mut self, v: Value, l: LayoutId) {
        if is_tensor(self.f.ty(v)) {
            self.hints.entry(v).or_insert(l);
        }
    }

    fn slice(&mut self, dim: u32, parent: LayoutId) -> LayoutId {
        self.intern(Layout::Slice { dim, parent })
    }

    // ---- anchors ----

    fn mem_layout(&mut self, op: Op) -> Option<LayoutId> {
        if let Some(&l) = self.mem_anchor.get(&op) {
            return Some(l);
        }
        let d = &self.f.ops[op];
        let ptr = d.operands[0];
        let t = self.f.ty(ptr).clone();
        if !t.is_tensor() {
            return None;
        }
        let bytes = t.elem().pointee().map_or(4, |p| p.size_bytes() as u32);
        let mask = match &d.kind {
            OpKind::Load { .. } | OpKind::DescLoad { .. } => d.operands.get(1).copied(),
            OpKind::Store { .. } | OpKind::DescStore { .. } | OpKind::AtomicRmw { .. } => d.operands.get(2).copied(),
            _ => None,
        };
        let pinfo = self.axis.of(self.f, ptr);
        let minfo = mask.map(|m| self.axis.of(self.f, m));
        let l = coalesced_layout(t.shape(), &pinfo, minfo.as_ref(), bytes, self.opts.num_warps);
        let id = self.intern(l);
        self.mem_anchor.insert(op, id);
        Some(id)
    }

    fn dot_layouts(&mut self, op: Op) -> Result<(LayoutId, LayoutId, LayoutId), Diagnostic> {
        if let Some(&l) = self.dot_anchor.get(&op) {
            return Ok(l);
        }
        let d = &self.f.ops[op];
        let OpKind::Dot { precision, .. } = d.kind else { unreachable!() };
        let (a, b, c) = (d.operands[0], d.operands[1], d.operands[2]);
        let at = self.f.ty(a).clone();
        let bt = self.f.ty(b).clone();
        let ct = self.f.ty(c).clone();
        let shape = ct.shape().to_vec();
        let rank = shape.len();
        let kdim = at.shape().last().copied().unwrap_or(1);
        let (ae, be, ce) = (at.elem().num(), bt.elem().num(), ct.elem().num());
        let kind = match (ae, be) {
            (Some(x), Some(y)) => mma_kind(x, y, precision, self.opts.target.capability()),
            _ => None,
        };
        let acc_ok = |k: &MmaKind| match ce {
            Some(trident_ir::DType::F32) => k.acc == "f32",
            // `out_dtype=tl.float16`: the f16-accumulating form (rounded after every k-step
            // of 16, as the interpreter and the hardware round).
            Some(trident_ir::DType::F16) => k.acc == "f32" && k.ab == "f16.f16",
            Some(trident_ir::DType::I32) => k.acc == "s32",
            _ => false,
        };
        let nw = self.opts.num_warps;
        // Hopper: warpgroup MMA for f16/bf16 with f32 accumulation, every warp along M
        // (a warpgroup's 4 warps take 64 rows; its instruction spans the whole N).
        let wgmma = self.opts.target.has_wgmma()
            && rank == 2
            && matches!(
                (ae, be),
                (Some(trident_ir::DType::F16), Some(trident_ir::DType::F16))
                    | (Some(trident_ir::DType::BF16), Some(trident_ir::DType::BF16))
            )
            && ce == Some(trident_ir::DType::F32)
            && nw.is_multiple_of(4)
            && shape[0] >= 16 * nw
            && shape[1] >= 8
            && kdim >= 16;
        let res = match kind {
            Some(k) if wgmma => {
                let mma = self.intern(Layout::Mma {
                    version: 3,
                    warps_per_cta: [nw, 1].into_iter().collect(),
                    instr_shape: [64, shape[1].min(256), 16].into_iter().collect(),
                });
                let la = self.intern(Layout::DotOperand { op_idx: 0, parent: mma, k_width: k.k_width });
                let lb = self.intern(Layout::DotOperand { op_idx: 1, parent: mma, k_width: k.k_width });
                (la, lb, mma)
            }
            // mma.sync on a matrix, or on a batch of them (rank 3: the batch dim leads, each
            // instruction tile sits in one batch index; no wgmma, which has no batch).
            Some(k)
                if (rank == 2 || rank == 3)
                    && shape[rank - 2] >= 16
                    && shape[rank - 1] >= 8
                    && kdim >= k.k
                    && acc_ok(&k) =>
            {
                let (m, n) = (shape[rank - 2], shape[rank - 1]);
                let chained = self.chained.contains(&op);
                let warps: Vec<u32> = if rank == 3 {
                    batched_mma_warps(shape[0], m, n, nw, chained).to_vec()
                } else if chained && m / 16 >= nw {
                    vec![nw, 1]
                } else {
                    mma_warps(m, n, nw).to_vec()
                };
                let mma = self.intern(Layout::Mma {
                    version: 2,
                    warps_per_cta: warps.into_iter().collect(),
                    instr_shape: [16, 8].into_iter().collect(),
                });
                let la = self.intern(Layout::DotOperand { op_idx: 0, parent: mma, k_width: k.k_width });
                let lb = self.intern(Layout::DotOperand { op_idx: 1, parent: mma, k_width: k.k_width });
                (la, lb, mma)
            }
            _ => {
                let parent = self.default_for(&shape);
                let la = self.intern(Layout::DotOperand { op_idx: 0, parent, k_width: 1 });
                let lb = self.intern(Layout::DotOperand { op_idx: 1, parent, k_width: 1 });
                (la, lb, parent)
            }
        };
        self.dot_anchor.insert(op, res);
        Ok(res)
    }

    // ---- backward hints ----

    fn hint_block(&mut self, b: Block) -> Result<(), Diagnostic> {
        let ops: Vec<Op> = self.f.blocks[b].ops.clone();
        for &op in ops.iter().rev() {
            self.hint_op(op)?;
        }
        Ok(())
    }

    fn hint_op(&mut self, op: Op) -> Result<(), Diagnostic> {
        let d = self.f.ops[op].clone();
        let res_hint = d.results.first().and_then(|r| self.hints.get(r).copied());
        match &d.kind {
            OpKind::Load { .. }
            | OpKind::DescLoad { .. }
            | OpKind::Store { .. }
            | OpKind::DescStore { .. }
            | OpKind::AtomicRmw { .. }
            | OpKind::AtomicCas { .. } => {
                if let Some(l) = self.mem_layout(op) {
                    for &o in &d.operands {
                        self.hint(o, l);
                    }
                }
            }
            OpKind::Dot { .. } => {
                let (la, lb, lc) = self.dot_layouts(op)?;
                self.hint(d.operands[0], la);
                self.hint(d.operands[1], lb);
                self.hint(d.operands[2], lc);
            }
            k if k.is_elementwise() || matches!(k, OpKind::InlineAsm { .. }) => {
                if let Some(h) = res_hint {
                    for &o in &d.operands {
                        self.hint(o, h);
                    }
                }
            }
            OpKind::Broadcast
            | OpKind::MultipleOf { .. }
            | OpKind::MaxContiguous { .. }
            | OpKind::MaxConstancy { .. }
            | OpKind::Scan { .. } => {
                if let Some(h) = res_hint {
                    for &o in &d.operands {
                        self.hint(o, h);
                    }
                }
            }
            OpKind::ExpandDims { axis } => {
                if let Some(h) = res_hint {
                    let s = self.slice(*axis, h);
                    self.hint(d.operands[0], s);
                }
            }
            OpKind::Gather { .. } => {
                // The result is in the index's layout.
                if let Some(h) = res_hint {
                    self.hint(d.operands[1], h);
                }
            }
            OpKind::Reduce { axis } => {
                if let Some(h) = res_hint {
                    if let Some(Layout::Slice { dim, parent }) = self.f.layouts.get(h).cloned() {
                        if dim == *axis {
                            for &o in &d.operands {
                                self.hint(o, parent);
                            }
                        }
                    }
                }
            }
            OpKind::For => {
                let body = d.regions[0];
                let args = self.f.blocks[body].args.clone();
                // Uses inside the loop decide a loop-carried value's layout (an accumulator
                // stays in the dot's layout); uses after the loop only when those say nothing.
                for &a in &args[1..] {
                    if let Some(&l) = self.overrides.get(&a) {
                        self.hints.insert(a, l);
                    }
                }
                self.hint_block(body)?;
                let yields = self.f.terminator(body).map(|t| self.f.ops[t].operands.to_vec()).unwrap_or_default();
                for (i, &r) in d.results.iter().enumerate() {
                    let h = self.hints.get(&args[i + 1]).or_else(|| self.hints.get(&r)).copied();
                    if let Some(h) = h {
                        self.hint(args[i + 1], h);
                        self.hint(r, h);
                        self.hint(d.operands[3 + i], h);
                        if let Some(&y) = yields.get(i) {
                            self.hint(y, h);
                        }
                    }
                }
                self.hint_block(body)?;
            }
            OpKind::If => {
                for &r in &d.regions {
                    let yields = self.f.terminator(r).map(|t| self.f.ops[t].operands.to_vec()).unwrap_or_default();
                    for (i, &res) in d.results.iter().enumerate() {
                        if let (Some(&h), Some(&y)) = (self.hints.get(&res), yields.get(i)) {
                            self.hint(y, h);
                        }
                    }
                    self.hint_block(r)?;
                }
            }
            OpKind::While => {
                let (before, after) = (d.regions[0], d.regions[1]);
                for _ in 0..2 {
                    let bargs = self.f.blocks[before].args.clone();
                    let aargs = self.f.blocks[after].args.clone();
                    let cond = self.f.terminator(before).map(|t| self.f.ops[t].operands.to_vec()).unwrap_or_default();
                    for (i, &r) in d.results.iter().enumerate() {
                        let h = self.hints.get(&r).or_else(|| self.hints.get(&aargs[i])).copied();
                        if let Some(h) = h {
                            self.hint(aargs[i], h);
                            if let Some(&c) = cond.get(i + 1) {
                                self.hint(c, h);
                            }
                        }
                    }
                    self.hint_block(after)?;
                    let ys = self.f.terminator(after).map(|t| self.f.ops[t].operands.to_vec()).unwrap_or_default();
                    for (i, &a) in bargs.iter().enumerate() {
                        if let Some(&h) = self.hints.get(&a) {
                            if let Some(&y) = ys.get(i) {
                                self.hint(y, h);
                            }
                        }
                    }
                    self.hint_block(before)?;
                    for (i, &a) in bargs.iter().enumerate() {
                        if let Some(&h) = self.hints.get(&a) {
                            if let Some(&y) = ys.get(i) {
                                self.hint(y, h);
                            }
                            self.hint(d.operands[i], h);
                        }
                    }
                }
            }
            _ => {
                for &r in &d.regions {
                    self.hint_block(r)?;
                }
            }
        }
        Ok(())
    }

    // ---- forward assignment ----

    fn set_layout(&mut self, v: Value, l: LayoutId) {
        let t = self.f.values[v].ty.clone();
        if t.is_tensor() {
            self.f.values[v].ty = t.with_layout(Some(l));
        }
    }

    /// Makes operand `i` of `op` have layout `l`, inserting a conversion before `op`.
    fn convert_operand(&mut self, op: Op, i: usize, l: LayoutId) {
        let v = self.f.ops[op].operands[i];
        let t = self.f.ty(v).clone();
        if !t.is_tensor() || t.layout() == Some(l) {
            return;
        }
        let nt = t.with_layout(Some(l));
        let loc = self.f.ops[op].loc;
        let c = self.f.new_op(OpKind::ConvertLayout, &[v], &[nt], loc);
        self.f.insert_op_before(op, c);
        let nv = self.f.ops[c].results[0];
        self.f.ops[op].operands[i] = nv;
    }

    /// Whether `v` is cheap to recompute in another layout (no memory, no dot, no reduction).
    fn cheap(&self, v: Value, depth: u32) -> bool {
        if depth > 16 {
            return false;
        }
        match self.f.values[v].def {
            ValueDef::Arg(..) => !self.f.ty(v).is_tensor(),
            ValueDef::Result(op, _) => {
                let d = &self.f.ops[op];
                match &d.kind {
                    OpKind::Constant(_) | OpKind::Arange { .. } | OpKind::Splat | OpKind::ProgramId { .. } => true,
                    k if k.is_elementwise()
                        || matches!(
                            k,
                            OpKind::Broadcast
                                | OpKind::ExpandDims { .. }
                                | OpKind::MultipleOf { .. }
                                | OpKind::MaxContiguous { .. }
                                | OpKind::MaxConstancy { .. }
                                | OpKind::ConvertLayout
                        ) =>
                    {
                        d.operands.iter().all(|&o| self.cheap(o, depth + 1))
                    }
                    _ => false,
                }
            }
        }
    }

    fn assign_block(&mut self, b: Block) -> Result<(), Diagnostic> {
        let ops: Vec<Op> = self.f.blocks[b].ops.clone();
        for op in ops {
            self.assign_op(op)?;
        }
        Ok(())
    }

    fn result_shape(&self, op: Op) -> Vec<u32> {
        self.f.ty(self.f.ops[op].results[0]).shape().to_vec()
    }

    fn assign_op(&mut self, op: Op) -> Result<(), Diagnostic> {
        let d = self.f.ops[op].clone();
        let res0 = d.results.first().copied();
        let tensor_result = res0.is_some_and(|r| self.f.ty(r).is_tensor());
        let hint0 = res0.and_then(|r| self.hints.get(&r).copied());
        match &d.kind {
            OpKind::Constant(_) | OpKind::Arange { .. } | OpKind::Splat => {
                if tensor_result {
                    let shape = self.result_shape(op);
                    let l = match hint0 {
                        Some(h) => h,
                        None => self.default_for(&shape),
                    };
                    self.set_layout(d.results[0], l);
                }
            }
            OpKind::Load { .. }
            | OpKind::DescLoad { .. }
            | OpKind::Store { .. }
            | OpKind::DescStore { .. }
            | OpKind::AtomicRmw { .. }
            | OpKind::AtomicCas { .. } => {
                if let Some(l) = self.mem_layout(op) {
                    for i in 0..d.operands.len() {
                        self.convert_operand(op, i, l);
                    }
                    for &r in &d.results {
                        self.set_layout(r, l);
                    }
                }
            }
            OpKind::Dot { .. } => {
                let (la, lb, lc) = self.dot_layouts(op)?;
                self.convert_operand(op, 0, la);
                self.convert_operand(op, 1, lb);
                self.convert_operand(op, 2, lc);
                self.set_layout(d.results[0], lc);
            }
            k if k.is_elementwise() => {
                if tensor_result {
                    let l = self.pick_elementwise(&d.operands, hint0, &self.result_shape(op));
                    for i in 0..d.operands.len() {
                        self.convert_operand(op, i, l);
                    }
                    self.set_layout(d.results[0], l);
                }
            }
            // Elementwise with several results, all in the operands' layout.
            OpKind::InlineAsm { .. } => {
                if tensor_result {
                    let l = self.pick_elementwise(&d.operands, hint0, &self.result_shape(op));
                    for i in 0..d.operands.len() {
                        self.convert_operand(op, i, l);
                    }
                    for &r in &d.results {
                        self.set_layout(r, l);
                    }
                }
            }
            OpKind::Broadcast => {
                let src = d.operands[0];
                let l = match (hint0, self.layout_of(src)) {
                    (Some(h), _) => h,
                    (None, Some(s)) if self.f.ty(src).shape().len() == self.result_shape(op).len() => s,
                    _ => {
                        let shape = self.result_shape(op);
                        self.default_for(&shape)
                    }
                };
                if self.f.ty(src).is_tensor() {
                    self.convert_operand(op, 0, l);
                }
                self.set_layout(d.results[0], l);
            }
            OpKind::ExpandDims { axis } => {
                let src = d.operands[0];
                let shape = self.result_shape(op);
                let parent = match (hint0, self.layout_of(src).and_then(|s| self.f.layouts.get(s).cloned())) {
                    (Some(h), _) => h,
                    (None, Some(Layout::Slice { dim, parent })) if dim == *axis => parent,
                    _ => self.default_for(&shape),
                };
                if self.f.ty(src).is_tensor() {
                    let s = self.slice(*axis, parent);
                    self.convert_operand(op, 0, s);
                }
                self.set_layout(d.results[0], parent);
            }
            OpKind::MultipleOf { .. } | OpKind::MaxContiguous { .. } | OpKind::MaxConstancy { .. } => {
                if let Some(l) = self.layout_of(d.operands[0]) {
                    self.set_layout(d.results[0], l);
                }
            }
            OpKind::Reduce { axis } | OpKind::Scan { axis, .. } => {
                let scan = matches!(d.kind, OpKind::Scan { .. });
                let first = d.operands[0];
                let mut l = match self.layout_of(first) {
                    Some(l) => l,
                    None => {
                        let s = self.f.ty(first).shape().to_vec();
                        self.default_for(&s)
                    }
                };
                // Reductions and scans need each axis bit held by one register, lane or warp bit.
                if !self.axis_is_pure(first, l, *axis as usize) {
                    let s = self.f.ty(first).shape().to_vec();
                    l = self.default_for(&s);
                }
                for i in 0..d.operands.len() {
                    self.convert_operand(op, i, l);
                }
                let rl = if scan { l } else { self.slice(*axis, l) };
                for &r in &d.results {
                    self.set_layout(r, rl);
                }
                for &r in &d.regions {
                    self.assign_block(r)?;
                }
            }
            OpKind::Trans { perm } => {
                let src = d.operands[0];
                let l = match self.layout_of(src).and_then(|s| self.f.layouts.get(s).cloned()) {
                    Some(Layout::Blocked { size_per_thread, threads_per_warp, warps_per_cta, order }) => {
                        // The same threads keep the same elements: permute the parameters.
                        let p = |v: &[u32]| -> Vec<u32> { perm.iter().map(|&i| v[i as usize]).collect() };
                        let inv: Vec<u32> = {
                            let mut inv = vec![0u32; perm.len()];
                            for (i, &pi) in perm.iter().enumerate() {
                                inv[pi as usize] = i as u32;
                            }
                            inv
                        };
                        let nl = Layout::Blocked {
                            size_per_thread: p(&size_per_thread).into_iter().collect(),
                            threads_per_warp: p(&threads_per_warp).into_iter().collect(),
                            warps_per_cta: p(&warps_per_cta).into_iter().collect(),
                            order: order.iter().map(|&o| inv[o as usize]).collect(),
                        };
                        self.intern(nl)
                    }
                    _ => match self.register_linear(src) {
                        // An accumulator's registers, relabelled: no data moves.
                        Some(ll) => self.intern(crate::layout::build::to_ir(&ll.permuted(perm))),
                        None => {
                            let shape = self.result_shape(op);
                            self.default_for(&shape)
                        }
                    },
                };
                self.set_layout(d.results[0], l);
            }
            OpKind::Reshape { .. } | OpKind::Split
                if (matches!(d.kind, OpKind::Split) || !self.hints.contains_key(&d.results[0]))
                    && self.register_linear(d.operands[0]).is_some() =>
            {
                // An accumulator reshaped (the flat index of every element stays, so do the
                // bases) or split along a register bit: the same registers, relabelled.
                let ll = self.register_linear(d.operands[0]).expect("checked");
                let out = match d.kind {
                    OpKind::Reshape { .. } => Some(ll.reshaped(self.f.ty(d.results[0]).shape())),
                    _ => ll.split_halves(),
                };
                match out {
                    Some(o) => {
                        let l = self.intern(crate::layout::build::to_ir(&o));
                        for &r in &d.results {
                            self.set_layout(r, l);
                        }
                    }
                    None => {
                        for &r in &d.results {
                            let shape = self.f.ty(r).shape().to_vec();
                            let l = self.default_for(&shape);
                            self.set_layout(r, l);
                        }
                    }
                }
            }
            OpKind::Reshape { .. } | OpKind::Join | OpKind::Split | OpKind::Cat => {
                for &r in &d.results {
                    let shape = self.f.ty(r).shape().to_vec();
                    let l = match self.hints.get(&r) {
                        Some(&h) => h,
                        None => self.default_for(&shape),
                    };
                    self.set_layout(r, l);
                }
                if matches!(d.kind, OpKind::Cat | OpKind::Join) {
                    // Operands in one layout (the exchange copes with any, but one is simpler).
                    if let Some(l) = self.layout_of(d.operands[0]) {
                        self.convert_operand(op, 1, l);
                    }
                }
            }
            OpKind::Gather { .. } => {
                // Each result element sits where its index is (any source layout: the source
                // goes through shared memory whole).
                let l = match self.layout_of(d.operands[1]) {
                    Some(l) => l,
                    None => {
                        let shape = self.result_shape(op);
                        self.default_for(&shape)
                    }
                };
                self.set_layout(d.results[0], l);
            }
            OpKind::For => self.assign_for(op)?,
            OpKind::If => self.assign_if(op)?,
            OpKind::While => self.assign_while(op)?,
            _ => {
                for &r in &d.regions {
                    self.assign_block(r)?;
                }
                if tensor_result {
                    for &r in &d.results {
                        let shape = self.f.ty(r).shape().to_vec();
                        let l = self.default_for(&shape);
                        self.set_layout(r, l);
                    }
                }
            }
        }
        Ok(())
    }

    fn axis_is_pure(&mut self, v: Value, l: LayoutId, axis: usize) -> bool {
        let shape = self.f.ty(v).shape().to_vec();
        match crate::layout::distributed(&self.f.layouts, l, &shape) {
            Ok(ll) => !axis_bits(&ll, axis).mixed,
            Err(_) => false,
        }
    }

    /// How costly it is to give `v` another layout: 0 = recomputable (constants, ranges
    /// and arithmetic on them), 1 = a broadcast of something (convert the small source
    /// instead) or a loop-carried value (its layout follows the loop), 2 = a real value
    /// (loaded, reduced, from a dot).
    fn weight(&self, v: Value) -> u8 {
        if self.cheap(v, 0) {
            return 0;
        }
        match self.f.values[v].def {
            ValueDef::Result(op, _) if matches!(self.f.ops[op].kind, OpKind::Broadcast | OpKind::ExpandDims { .. }) => {
                1
            }
            // Loop-carried values follow what the loop computes (see `loop_mismatches`).
            ValueDef::Arg(b, _) if self.f.blocks[b].parent.is_some() => 1,
            _ => 2,
        }
    }

    fn pick_elementwise(&mut self, operands: &[Value], hint: Option<LayoutId>, shape: &[u32]) -> LayoutId {
        // The heaviest operands decide; among them the hint, else the most common layout.
        let mut best: Vec<(u8, LayoutId)> = vec![];
        for &o in operands {
            if let Some(l) = self.layout_of(o) {
                best.push((self.weight(o), l));
            }
        }
        let top = best.iter().map(|b| b.0).max();
        if let Some(top) = top.filter(|&t| t > 0) {
            let cands: Vec<LayoutId> = best.iter().filter(|b| b.0 == top).map(|b| b.1).collect();
            if let Some(h) = hint.filter(|h| cands.contains(h)) {
                return h;
            }
            let mut counts: Vec<(usize, LayoutId)> = vec![];
            for &c in &cands {
                match counts.iter_mut().find(|x| x.1 == c) {
                    Some(x) => x.0 += 1,
                    None => counts.push((1, c)),
                }
            }
            counts.sort_by_key(|x| std::cmp::Reverse(x.0));
            return counts[0].1;
        }
        if let Some(h) = hint {
            return h;
        }
        match best.first() {
            Some(&(_, l)) => l,
            None => self.default_for(shape),
        }
    }

    fn assign_for(&mut self, op: Op) -> Result<(), Diagnostic> {
        let d = self.f.ops[op].clone();
        let body = d.regions[0];
        let args = self.f.blocks[body].args.clone();
        let mut ls = vec![];
        for (i, &a) in args[1..].iter().enumerate() {
            let init = d.operands[3 + i];
            let l = match (self.overrides.get(&a).or_else(|| self.hints.get(&a)).copied(), self.layout_of(init)) {
                (Some(h), _) => Some(h),
                (None, Some(l)) => Some(l),
                (None, None) => None,
            };
            if let Some(l) = l {
                self.convert_operand(op, 3 + i, l);
                self.set_layout(a, l);
                self.set_layout(d.results[i], l);
            }
            ls.push(l);
        }
        self.assign_block(body)?;
        if let Some(t) = self.f.terminator(body) {
            for (i, l) in ls.iter().enumerate() {
                if let Some(l) = l {
                    self.convert_operand(t, i, *l);
                }
            }
        }
        Ok(())
    }

    fn assign_if(&mut self, op: Op) -> Result<(), Diagnostic> {
        let d = self.f.ops[op].clone();
        for &r in &d.regions {
            self.assign_block(r)?;
        }
        for (i, &res) in d.results.iter().enumerate() {
            if !self.f.ty(res).is_tensor() {
                continue;
            }
            let first_yield = self.f.terminator(d.regions[0]).map(|t| self.f.ops[t].operands[i]);
            let l = match (self.hints.get(&res).copied(), first_yield.and_then(|y| self.layout_of(y))) {
                (Some(h), _) => h,
                (None, Some(l)) => l,
                _ => {
                    let shape = self.f.ty(res).shape().to_vec();
                    self.default_for(&shape)
                }
            };
            for &r in &d.regions {
                if let Some(t) = self.f.terminator(r) {
                    self.convert_operand(t, i, l);
                }
            }
            self.set_layout(res, l);
        }
        Ok(())
    }

    fn assign_while(&mut self, op: Op) -> Result<(), Diagnostic> {
        let d = self.f.ops[op].clone();
        let (before, after) = (d.regions[0], d.regions[1]);
        let bargs = self.f.blocks[before].args.clone();
        let aargs = self.f.blocks[after].args.clone();
        let mut bl = vec![];
        for (i, &a) in bargs.iter().enumerate() {
            let l = self
                .overrides
                .get(&a)
                .or_else(|| self.hints.get(&a))
                .copied()
                .or_else(|| self.layout_of(d.operands[i]));
            if let Some(l) = l {
                self.convert_operand(op, i, l);
                self.set_layout(a, l);
            }
            bl.push(l);
        }
        self.assign_block(before)?;
        let cond = self.f.terminator(before);
        for (i, &a) in aargs.iter().enumerate() {
            if !self.f.ty(a).is_tensor() {
                continue;
            }
            let fwd = cond.map(|c| self.f.ops[c].operands[i + 1]);
            let l = match (self.hints.get(&a).copied(), fwd.and_then(|v| self.layout_of(v))) {
                (Some(h), _) => h,
                (None, Some(l)) => l,
                _ => {
                    let shape = self.f.ty(a).shape().to_vec();
                    self.default_for(&shape)
                }
            };
            if let Some(c) = cond {
                self.convert_operand(c, i + 1, l);
            }
            self.set_layout(a, l);
            self.set_layout(d.results[i], l);
        }
        self.assign_block(after)?;
        if let Some(t) = self.f.terminator(after) {
            for (i, l) in bl.iter().enumerate() {
                if let Some(l) = l {
                    self.convert_operand(t, i, *l);
                }
            }
        }
        Ok(())
    }
}

/// The blocked layout used by memory ops for `shape` when nothing is known (tests).
pub fn plain_blocked(shape: &[u32], vec: u32, num_warps: u32) -> Layout {
    let order: Vec<u32> = (0..shape.len() as u32).rev().collect();
    blocked_layout(shape, vec, &order, num_warps)
}
