//! The verifier: structural invariants, SSA visibility and per-op typing rules.
//!
//! It runs in two phases. The structural phase checks everything the data
//! structures allow to go wrong (indices in range, parents consistent, each op
//! and block in exactly one place, region counts, terminators, `ValueDef`s,
//! well-formed types and layouts); it never indexes blindly, so it cannot panic
//! on corrupt IR. Only when that passes does the second phase check that every
//! operand is visible where it is used and that every op obeys the typing rules
//! documented on its [`OpKind`] variant.
//!
//! Errors name the op and say what is wrong; they point at the op's location
//! and carry a note with the op as the printer shows it.

use crate::diag::Diagnostic;
use crate::func::{Block, Function, Module, Op, Value, ValueDef};
use crate::layout::Layout;
use crate::ops::{discardable, BinaryOp, CastKind, Const, OpKind, RmwOp, UnaryOp};
use crate::print::{print_op_named, Names, PrintOptions};
use crate::types::{Elem, Type};
use cranelift_entity::SecondaryMap;
use std::collections::HashSet;
use trident_core::DType;

/// Checks one function. Calls are not checked against their callees (see [`verify_module`]).
pub fn verify_function(f: &Function) -> Result<(), Vec<Diagnostic>> {
    finish(Verifier::new(f, None).run())
}

/// Checks every function, that function names are unique, and every `call` against its callee.
pub fn verify_module(m: &Module) -> Result<(), Vec<Diagnostic>> {
    let mut errors = vec![];
    let mut seen = HashSet::new();
    for f in &m.funcs {
        if !seen.insert(f.name.as_str()) {
            errors.push(Diagnostic::error(format!("function `@{}` is defined twice", f.name)).at(f.loc, 1));
        }
    }
    for f in &m.funcs {
        errors.extend(Verifier::new(f, Some(m)).run());
    }
    finish(errors)
}

fn finish(errors: Vec<Diagnostic>) -> Result<(), Vec<Diagnostic>> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// What terminates a block, by the op whose region it is.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Term {
    Return,
    Yield,
    Condition,
}

impl Term {
    fn name(self) -> &'static str {
        match self {
            Term::Return => "return",
            Term::Yield => "yield",
            Term::Condition => "condition",
        }
    }

    fn matches(self, k: &OpKind) -> bool {
        matches!(
            (self, k),
            (Term::Return, OpKind::Return) | (Term::Yield, OpKind::Yield) | (Term::Condition, OpKind::Condition)
        )
    }
}

struct Verifier<'a> {
    f: &'a Function,
    module: Option<&'a Module>,
    names: Option<Names>,
    errors: Vec<Diagnostic>,
    seen_ops: SecondaryMap<Op, bool>,
    seen_blocks: SecondaryMap<Block, bool>,
    visible: SecondaryMap<Value, bool>,
}

fn list(ts: &[&Type]) -> String {
    let v: Vec<String> = ts.iter().map(|t| t.to_string()).collect();
    format!("({})", v.join(", "))
}

fn is_num(e: Elem) -> bool {
    !e.is_ptr()
}

/// Shapes equal (layouts ignored).
fn same_shape(a: &Type, b: &Type) -> bool {
    a.is_tensor() == b.is_tensor() && a.shape() == b.shape()
}

/// Shape and element equal (layouts ignored).
fn same_shape_elem(a: &Type, b: &Type) -> bool {
    same_shape(a, b) && a.elem() == b.elem()
}

impl<'a> Verifier<'a> {
    fn new(f: &'a Function, module: Option<&'a Module>) -> Verifier<'a> {
        Verifier {
            f,
            module,
            names: None,
            errors: vec![],
            seen_ops: SecondaryMap::new(),
            seen_blocks: SecondaryMap::new(),
            visible: SecondaryMap::new(),
        }
    }

    fn run(mut self) -> Vec<Diagnostic> {
        self.structure();
        if self.errors.is_empty() {
            self.function_attrs();
            let body = self.f.body;
            self.ssa_block(body);
        }
        self.errors
    }

    // ---------------------------------------------------------------- discardable attributes

    /// The function's discardable attributes (see [`crate::ops::discardable`]).
    fn function_attrs(&mut self) {
        let f = self.f;
        for (k, a) in f.attrs.iter() {
            if !discardable::FUNCTION_ATTRS.contains(&k) {
                self.fn_err(format!(
                    "unknown function attribute `{k}` (known: {})",
                    discardable::FUNCTION_ATTRS.join(", ")
                ));
            } else if k == discardable::SMEM_TOTAL {
                if !a.as_int().is_some_and(|n| (0..=u32::MAX as i64).contains(&n)) {
                    self.fn_err(format!("`{k}` must be a byte count, not `{a}`"));
                }
                if !f.kernel {
                    self.fn_err(format!("`{k}` is only for kernels"));
                }
            }
        }
    }

    /// Whether the function's shared memory was planned (it is then GPU IR).
    fn has_smem_plan(&self) -> bool {
        self.f.attrs.get(discardable::SMEM_TOTAL).is_some()
    }

    /// `op`'s discardable attributes: known names, value kinds, offsets inside the
    /// function's total, and (in a planned function) layouts on every tensor result.
    fn op_attrs(&mut self, op: Op) {
        let f = self.f;
        let d = &f.ops[op];
        if self.has_smem_plan() {
            if let Some(&r) =
                d.results.iter().find(|&&r| f.values[r].ty.is_tensor() && f.values[r].ty.layout().is_none())
            {
                self.err(
                    op,
                    format!(
                        "result `{}` has no layout in a function with a shared-memory plan (GPU IR)",
                        f.values[r].ty
                    ),
                );
            }
        }
        if d.attrs.is_empty() {
            return;
        }
        for (k, a) in d.attrs.iter() {
            if !discardable::OP_ATTRS.contains(&k) {
                self.err(op, format!("unknown attribute `{k}` (known: {})", discardable::OP_ATTRS.join(", ")));
            } else if k == discardable::SMEM_OPERAND {
                if a.as_bool() != Some(true) {
                    self.err(op, format!("`{k}` must be `true`, not `{a}`"));
                }
                if !matches!(d.kind, OpKind::ConvertLayout | OpKind::LocalLoad) {
                    self.err(op, format!("`{k}` is only for `convert_layout` and `local_load`"));
                }
            } else if k == discardable::WGMMA_IN_FLIGHT {
                if a.as_int().is_none_or(|n| n < 0) {
                    self.err(op, format!("`{k}` must be a non-negative count, not `{a}`"));
                }
                if !matches!(d.kind, OpKind::Barrier | OpKind::MbarrierArrive) {
                    self.err(op, format!("`{k}` is only for `barrier` and `mbarrier_arrive`"));
                }
            } else if k == discardable::STORE_READ_DEFERRED {
                if a.as_bool() != Some(true) {
                    self.err(op, format!("`{k}` must be `true`, not `{a}`"));
                }
                if !matches!(d.kind, OpKind::TmaStore) {
                    self.err(op, format!("`{k}` is only for `tma_store`"));
                }
            } else if k == discardable::WARP_SPECIALIZE {
                if a.as_bool().is_none() {
                    self.err(op, format!("`{k}` must be a boolean, not `{a}`"));
                }
                if !matches!(d.kind, OpKind::For) {
                    self.err(op, format!("`{k}` is only for `for`"));
                }
            }
        }
        let offset = d.attrs.get(discardable::SMEM_OFFSET);
        let size = d.attrs.get(discardable::SMEM_SIZE);
        let (off, sz) = match (offset, size) {
            (None, None) => return,
            (Some(o), Some(s)) => (o.as_int().filter(|&n| n >= 0), s.as_int().filter(|&n| n > 0)),
            _ => {
                self.err(op, "`smem_offset` and `smem_size` go together");
                return;
            }
        };
        let (Some(off), Some(sz)) = (off, sz) else {
            self.err(op, "`smem_offset` must be a non-negative and `smem_size` a positive byte count");
            return;
        };
        match f.attrs.int(discardable::SMEM_TOTAL) {
            None => self.err(op, "has a shared-memory offset, but the function has no `smem_total`"),
            Some(total) if off.checked_add(sz).is_none_or(|end| end > total) => self.err(
                op,
                format!(
                    "shared bytes [{off}, {}) lie outside the function's `smem_total` of {total}",
                    off.saturating_add(sz)
                ),
            ),
            Some(_) => {}
        }
    }

    /// Whether `r` is `a` with its dims permuted by `perm` (result dim `i` is `a`'s dim
    /// `perm[i]`); reports why not.
    fn permuted(&mut self, op: Op, perm: &[u32], a: &Type, r: &Type) -> bool {
        let rank = a.shape().len();
        let mut sorted = perm.to_vec();
        sorted.sort_unstable();
        if !a.is_tensor() || perm.len() != rank || sorted.iter().enumerate().any(|(i, &p)| p as usize != i) {
            self.err(op, format!("perm {perm:?} is not a permutation of the dims of `{a}`"));
            return false;
        }
        let s: Vec<u32> = perm.iter().map(|&p| a.shape()[p as usize]).collect();
        let want = Type::tensor(&s, a.elem());
        if !same_shape_elem(r, &want) {
            self.err(op, format!("result must be `{want}`, not `{r}`"));
            return false;
        }
        true
    }

    fn fn_err(&mut self, msg: impl Into<String>) {
        let d = Diagnostic::error(format!("in `@{}`: {}", self.f.name, msg.into()));
        self.errors.push(if self.f.loc.is_unknown() { d } else { d.at(self.f.loc, 1) });
    }

    /// An error about `op`: names it, points at its location, shows it in a note.
    fn err(&mut self, op: Op, msg: impl Into<String>) {
        let f = self.f;
        let Some(data) = f.ops.get(op) else {
            self.fn_err(format!("{op}: {}", msg.into()));
            return;
        };
        let mut d = Diagnostic::error(format!("`{}` op in `@{}`: {}", data.kind.name(), f.name, msg.into()));
        if !data.loc.is_unknown() {
            d = d.at(data.loc, 1);
        }
        if self.errors.len() < 100 {
            let names = self.names.get_or_insert_with(|| Names::new(f));
            let text = print_op_named(f, names, op, &PrintOptions::default());
            let first = text.lines().next().unwrap_or("").trim();
            d = d.note(format!("the op: {first}"));
        }
        self.errors.push(d);
    }

    // ---------------------------------------------------------------- structure

    fn check_type(&mut self, t: &Type) -> Option<String> {
        if let Type::Tensor { shape, layout, .. } = t {
            if shape.is_empty() {
                return Some(format!("tensor type `{t}` has no dimensions (use a scalar type)"));
            }
            if shape.contains(&0) {
                return Some(format!("tensor type `{t}` has a zero-sized dimension"));
            }
            if let Some(l) = layout {
                if !self.f.layouts.is_valid(*l) {
                    return Some(format!("tensor type `{t}` refers to an undefined layout"));
                }
                if let Some(rank) = self.layout_rank(*l, 0) {
                    if rank != shape.len() {
                        return Some(format!("tensor type `{t}`: layout {l} is for rank {rank}"));
                    }
                }
                if let Some(Layout::Linear { shape: ls, .. }) = self.f.layouts.get(*l) {
                    if ls.as_slice() != shape.as_slice() {
                        return Some(format!("tensor type `{t}`: linear layout {l} is for shape {ls:?}"));
                    }
                }
            }
        }
        None
    }

    /// Rank a layout applies to, when it says (`None` when unknown or malformed).
    fn layout_rank(&self, l: crate::layout::LayoutId, depth: usize) -> Option<usize> {
        if depth > 64 {
            return None;
        }
        match self.f.layouts.get(l)? {
            Layout::Blocked { order, .. } | Layout::Shared { order, .. } => Some(order.len()),
            Layout::Mma { warps_per_cta, .. } => Some(warps_per_cta.len()),
            Layout::Linear { shape, .. } => Some(shape.len()),
            Layout::Slice { parent, .. } => self.layout_rank(*parent, depth + 1)?.checked_sub(1),
            Layout::DotOperand { parent, .. } => self.layout_rank(*parent, depth + 1),
        }
    }

    fn structure(&mut self) {
        let f = self.f;
        for (id, l) in f.layouts.iter() {
            let msg = match l {
                Layout::Slice { parent, .. } | Layout::DotOperand { parent, .. } if *parent >= id => {
                    Some(format!("layout {id} refers to {parent}, which is not defined before it"))
                }
                Layout::Blocked { size_per_thread, threads_per_warp, warps_per_cta, order } => {
                    let r = order.len();
                    let mut sorted: Vec<u32> = order.to_vec();
                    sorted.sort_unstable();
                    if size_per_thread.len() != r || threads_per_warp.len() != r || warps_per_cta.len() != r {
                        Some(format!("blocked layout {id}: parameter lists have different lengths"))
                    } else if sorted.iter().enumerate().any(|(i, &x)| x as usize != i) {
                        Some(format!("blocked layout {id}: `order` is not a permutation"))
                    } else {
                        None
                    }
                }
                Layout::Linear { shape, reg, lane, warp } => {
                    let bits: Option<u32> =
                        shape.iter().try_fold(0u32, |a, &d| d.is_power_of_two().then(|| a + d.trailing_zeros()));
                    match bits {
                        None => Some(format!("linear layout {id}: a dimension of {shape:?} is not a power of two")),
                        Some(b) if b > 40 => Some(format!("linear layout {id}: shape {shape:?} is too large")),
                        Some(b) if reg.iter().chain(lane).chain(warp).any(|&x| x >> b != 0) => {
                            Some(format!("linear layout {id}: a basis lies outside shape {shape:?}"))
                        }
                        Some(_) if reg.contains(&0) => Some(format!("linear layout {id}: a register basis is 0")),
                        Some(_) if lane.len() != 5 => Some(format!("linear layout {id}: needs 5 lane bases")),
                        _ => None,
                    }
                }
                _ => None,
            };
            if let Some(m) = msg {
                self.fn_err(m);
            }
        }
        for t in &f.result_types {
            if let Some(m) = self.check_type(t) {
                self.fn_err(format!("result type: {m}"));
            }
        }
        if !f.blocks.is_valid(f.body) {
            self.fn_err("the body block does not exist");
            return;
        }
        if f.blocks[f.body].parent.is_some() {
            self.fn_err("the body block claims to be a region of an op");
        }
        let args = &f.blocks[f.body].args;
        if args.len() != f.params.len() {
            self.fn_err(format!("{} parameters but the body block has {} arguments", f.params.len(), args.len()));
        } else {
            for (i, p) in f.params.iter().enumerate() {
                if p.value != args[i] {
                    self.fn_err(format!("parameter `{}` is not body argument {i}", p.name));
                }
                if p.attrs.divisibility == Some(0) {
                    self.fn_err(format!("parameter `{}` has divisibility 0", p.name));
                }
            }
        }
        self.struct_block(f.body, Term::Return);
    }

    fn struct_block(&mut self, b: Block, term: Term) {
        let f = self.f;
        if self.seen_blocks[b] {
            self.fn_err(format!("block {b} is used in two places"));
            return;
        }
        self.seen_blocks[b] = true;
        for (i, &a) in f.blocks[b].args.iter().enumerate() {
            match f.values.get(a) {
                None => self.fn_err(format!("block {b} argument {i} does not exist")),
                Some(vd) => {
                    if vd.def != ValueDef::Arg(b, i as u32) {
                        self.fn_err(format!("block {b} argument {i} ({a}) says it is defined by {:?}", vd.def));
                    }
                    if let Some(m) = self.check_type(&vd.ty) {
                        self.fn_err(format!("block {b} argument {i}: {m}"));
                    }
                }
            }
        }
        let ops = &f.blocks[b].ops;
        if ops.is_empty() {
            match f.blocks[b].parent {
                Some(p) if f.ops.is_valid(p) => {
                    self.err(p, format!("a region has no ops; it must end in `{}`", term.name()))
                }
                _ => self.fn_err(format!("block {b} has no ops; it must end in `{}`", term.name())),
            }
        }
        for (idx, &op) in ops.iter().enumerate() {
            let Some(data) = f.ops.get(op) else {
                self.fn_err(format!("block {b} lists {op}, which does not exist"));
                continue;
            };
            if self.seen_ops[op] {
                self.fn_err(format!("{op} is listed in two places"));
                continue;
            }
            self.seen_ops[op] = true;
            if data.parent != Some(b) {
                self.err(op, format!("the op sits in {b} but its parent says {:?}", data.parent));
            }
            let last = idx + 1 == ops.len();
            if data.kind.is_terminator() && !last {
                self.err(op, "a terminator must be the last op of its block");
            }
            if last && !term.matches(&data.kind) {
                self.err(op, format!("the block must end in `{}`", term.name()));
            }
            for (i, &o) in data.operands.iter().enumerate() {
                if !f.values.is_valid(o) {
                    self.err(op, format!("operand {i} does not exist"));
                }
            }
            for (i, &r) in data.results.iter().enumerate() {
                match f.values.get(r) {
                    None => self.err(op, format!("result {i} does not exist")),
                    Some(vd) => {
                        if vd.def != ValueDef::Result(op, i as u32) {
                            self.err(op, format!("result {i} ({r}) says it is defined by {:?}", vd.def));
                        }
                        if let Some(m) = self.check_type(&vd.ty) {
                            self.err(op, format!("result {i}: {m}"));
                        }
                    }
                }
            }
            let want = data.kind.num_regions();
            if data.regions.len() != want {
                self.err(op, format!("has {} region(s), expected {want}", data.regions.len()));
                continue;
            }
            for (ri, &r) in data.regions.iter().enumerate() {
                if !f.blocks.is_valid(r) {
                    self.err(op, format!("region {ri} does not exist"));
                    continue;
                }
                if f.blocks[r].parent != Some(op) {
                    self.err(op, format!("region {ri} ({r}) has parent {:?}", f.blocks[r].parent));
                }
                let t = match (&data.kind, ri) {
                    (OpKind::While, 0) => Term::Condition,
                    _ => Term::Yield,
                };
                self.struct_block(r, t);
            }
        }
    }

    // ---------------------------------------------------------------- SSA and types

    fn ssa_block(&mut self, b: Block) {
        let f = self.f;
        let mut defined: Vec<Value> = f.blocks[b].args.clone();
        for &a in &defined {
            self.visible[a] = true;
        }
        for &op in &f.blocks[b].ops {
            for (i, &o) in f.ops[op].operands.iter().enumerate() {
                if !self.visible[o] {
                    let why = match f.values[o].def {
                        ValueDef::Result(d, _) if f.ops[d].parent.is_none() => "its defining op was removed",
                        _ => "it is not defined before this op in this block or an enclosing one",
                    };
                    self.err(op, format!("operand {i} is not visible here: {why}"));
                }
            }
            for &r in &f.ops[op].regions {
                self.ssa_block(r);
            }
            self.check_op(op);
            self.op_attrs(op);
            for &r in &f.ops[op].results {
                self.visible[r] = true;
                defined.push(r);
            }
        }
        for v in defined {
            self.visible[v] = false;
        }
        self.records_in_block(b);
    }

    /// The records of one block: allowed here, and properly nested (see `OpKind::Record`).
    fn records_in_block(&mut self, b: Block) {
        let f = self.f;
        let ops = &f.blocks[b].ops;
        if !ops.iter().any(|&o| matches!(f.ops[o].kind, OpKind::Record { .. })) {
            return;
        }
        // Only control flow the lowering keeps as control flow may hold a probe: a reduction's
        // combine region runs per element pair, in an order the backend chooses — and so
        // does every loop or `if` nested in one. (The structural phase ruled out cycles.) A
        // `warp_specialize`'s regions are code of their warps, each run once.
        let mut host = None;
        let mut blk = b;
        while let Some(p) = f.blocks[blk].parent {
            if !matches!(f.ops[p].kind, OpKind::For | OpKind::If | OpKind::While | OpKind::WarpSpecialize { .. }) {
                host = Some(p);
                break;
            }
            match f.ops[p].parent {
                Some(pb) => blk = pb,
                None => break,
            }
        }
        let placed_ok = host.is_none();
        // Open starts: (op, name, kind).
        let mut open: Vec<(Op, &str, crate::ops::RegionKind)> = vec![];
        for &op in ops {
            let OpKind::Record { name, end, kind } = &f.ops[op].kind else { continue };
            if !placed_ok {
                let host = host.map_or("?", |p| f.ops[p].kind.name());
                self.err(op, format!("a record cannot sit in the region of a `{host}` op"));
                continue;
            }
            if !*end {
                open.push((op, name, *kind));
                continue;
            }
            match open.last() {
                Some(&(_, n, k)) if n == name && k == *kind => {
                    open.pop();
                }
                Some(&(_, n, k)) => {
                    let msg = format!(
                        "the end of region \"{name}\" ({}) does not match the innermost open start in its block, \
                         \"{n}\" ({})",
                        kind.name(),
                        k.name()
                    );
                    self.err(op, msg);
                    return;
                }
                None => {
                    let msg = format!(
                        "the end of region \"{name}\" ({}) has no open start before it in its block",
                        kind.name()
                    );
                    self.err(op, msg);
                    return;
                }
            }
        }
        for (op, name, _) in open {
            self.err(op, format!("region \"{name}\" is started but not ended in its block"));
        }
    }

    fn ty(&self, v: Value) -> &'a Type {
        &self.f.values[v].ty
    }

    /// Checks operand and result counts; false (after reporting) when they are wrong.
    fn counts(&mut self, op: Op, operands: std::ops::RangeInclusive<usize>, results: usize) -> bool {
        let d = &self.f.ops[op];
        let (no, nr) = (d.operands.len(), d.results.len());
        let mut ok = true;
        if !operands.contains(&no) {
            let want = if operands.start() == operands.end() {
                format!("{}", operands.start())
            } else if *operands.end() == usize::MAX {
                format!("at least {}", operands.start())
            } else {
                format!("{} to {}", operands.start(), operands.end())
            };
            self.err(op, format!("has {no} operand(s), expected {want}"));
            ok = false;
        }
        if nr != results {
            self.err(op, format!("has {nr} result(s), expected {results}"));
            ok = false;
        }
        ok
    }

    /// Types of the yield/condition operands ending `block` (which the structural phase checked).
    fn term_types(&self, block: Block) -> Vec<&'a Type> {
        let f = self.f;
        match f.blocks[block].ops.last() {
            Some(&t) => f.ops[t].operands.iter().map(|&v| &f.values[v].ty).collect(),
            None => vec![],
        }
    }

    fn arg_types(&self, block: Block) -> Vec<&'a Type> {
        self.f.blocks[block].args.iter().map(|&v| &self.f.values[v].ty).collect()
    }

    fn check_op(&mut self, op: Op) {
        let f = self.f;
        let d = &f.ops[op];
        let ot: Vec<&'a Type> = d.operands.iter().map(|&v| self.ty(v)).collect();
        let rt: Vec<&'a Type> = d.results.iter().map(|&v| self.ty(v)).collect();
        use OpKind::*;
        match &d.kind {
            Constant(c) => {
                if !self.counts(op, 0..=0, 1) {
                    return;
                }
                self.check_constant(op, *c, rt[0]);
            }
            Arange { start, end } => {
                if !self.counts(op, 0..=0, 1) {
                    return;
                }
                if start >= end {
                    self.err(op, format!("start {start} must be below end {end}"));
                } else {
                    let want = Type::tensor(&[(*end as i64 - *start as i64) as u32], DType::I32);
                    if !same_shape_elem(rt[0], &want) {
                        self.err(op, format!("result must be `{want}`, not `{}`", rt[0]));
                    }
                }
            }
            ProgramId { .. } | NumPrograms { .. } => {
                if self.counts(op, 0..=0, 1) && *rt[0] != Type::i32() {
                    self.err(op, format!("result must be `i32`, not `{}`", rt[0]));
                }
            }
            Splat => {
                if !self.counts(op, 1..=1, 1) {
                    return;
                }
                if !ot[0].is_scalar() || !rt[0].is_tensor() || ot[0].elem() != rt[0].elem() {
                    self.err(op, format!("splat takes a scalar to a tensor of its type, not {} to {}", ot[0], rt[0]));
                }
            }
            Broadcast => {
                if !self.counts(op, 1..=1, 1) {
                    return;
                }
                let (a, r) = (ot[0], rt[0]);
                let ok = a.is_tensor()
                    && r.is_tensor()
                    && a.elem() == r.elem()
                    && a.shape().len() == r.shape().len()
                    && a.shape().iter().zip(r.shape()).all(|(&x, &y)| x == y || x == 1);
                if !ok {
                    self.err(op, format!("cannot broadcast `{a}` to `{r}` (same rank; only size-1 dims grow)"));
                }
            }
            ExpandDims { axis } => {
                if !self.counts(op, 1..=1, 1) {
                    return;
                }
                let a = ot[0];
                if *axis as usize > a.shape().len() {
                    self.err(op, format!("axis {axis} out of range for `{a}`"));
                    return;
                }
                let mut s = a.shape().to_vec();
                s.insert(*axis as usize, 1);
                let want = Type::tensor(&s, a.elem());
                if !same_shape_elem(rt[0], &want) {
                    self.err(op, format!("result must be `{want}`, not `{}`", rt[0]));
                }
            }
            Reshape { .. } => {
                if !self.counts(op, 1..=1, 1) {
                    return;
                }
                let (a, r) = (ot[0], rt[0]);
                if !a.is_tensor() || !r.is_tensor() || a.elem() != r.elem() || a.numel() != r.numel() {
                    self.err(op, format!("cannot reshape `{a}` to `{r}` (same element type and count)"));
                }
            }
            Trans { perm } => {
                if self.counts(op, 1..=1, 1) {
                    self.permuted(op, perm, ot[0], rt[0]);
                }
            }
            InlineAsm { constraints, pack, .. } => {
                let d = &self.f.ops[op];
                let (no, nr) = (d.operands.len(), d.results.len());
                if nr == 0 {
                    self.err(op, "inline_asm has no result");
                    return;
                }
                let shape = rt[0].shape().to_vec();
                if ot.iter().chain(rt.iter()).any(|t| t.shape() != shape.as_slice()) {
                    self.err(op, format!("inline_asm operands and results must have one shape: {}", list(&ot)));
                }
                let cs: Vec<&str> = constraints.split(',').map(str::trim).collect();
                let regs = |t: &Type| crate::inline_asm_registers(t.elem(), *pack) as usize;
                let (n_out, n_in): (usize, usize) =
                    (rt.iter().map(|t| regs(t)).sum(), ot.iter().map(|t| regs(t)).sum());
                let outs = cs.iter().filter(|c| c.starts_with('=')).count();
                if cs.len() != n_out + n_in || outs != n_out || cs.iter().take(n_out).any(|c| !c.starts_with('=')) {
                    self.err(
                        op,
                        format!(
                            "inline_asm constraints `{constraints}` must list {n_out} output register(s) (`=r`…) then {n_in} input register(s)"
                        ),
                    );
                }
                let _ = (no, nr);
                if *pack == 0 {
                    self.err(op, "inline_asm pack must be at least 1");
                }
            }
            Gather { axis } => {
                if !self.counts(op, 2..=2, 1) {
                    return;
                }
                let (src, idx, r) = (ot[0], ot[1], rt[0]);
                let ax = *axis as usize;
                if !src.is_tensor() || !idx.is_tensor() || src.shape().len() != idx.shape().len() {
                    self.err(op, format!("gather needs a source and an index tensor of one rank, not {}", list(&ot)));
                    return;
                }
                if ax >= src.shape().len() {
                    self.err(op, format!("gather axis {ax} out of range for `{src}`"));
                    return;
                }
                if !idx.elem().is_int() {
                    self.err(op, format!("gather index must be an integer tensor, not `{idx}`"));
                }
                let other_dims = src.shape().iter().zip(idx.shape()).enumerate().all(|(d, (a, b))| d == ax || a == b);
                if !other_dims {
                    self.err(op, format!("gather: `{src}` and `{idx}` differ outside axis {ax}"));
                }
                let want = Type::tensor(idx.shape(), src.elem());
                if !same_shape_elem(r, &want) {
                    self.err(op, format!("result must be `{want}`, not `{r}`"));
                }
            }
            Join => {
                if !self.counts(op, 2..=2, 1) {
                    return;
                }
                if !same_shape_elem(ot[0], ot[1]) {
                    self.err(op, format!("operands must have the same type, not {}", list(&ot)));
                    return;
                }
                let mut s = ot[0].shape().to_vec();
                s.push(2);
                let want = Type::tensor(&s, ot[0].elem());
                if !same_shape_elem(rt[0], &want) {
                    self.err(op, format!("result must be `{want}`, not `{}`", rt[0]));
                }
            }
            Split => {
                if !self.counts(op, 1..=1, 2) {
                    return;
                }
                let a = ot[0];
                if a.shape().last() != Some(&2) {
                    self.err(op, format!("operand `{a}` must have a last dimension of 2"));
                    return;
                }
                let want = a.with_shape(&a.shape()[..a.shape().len() - 1]);
                if !same_shape_elem(rt[0], &want) || !same_shape_elem(rt[1], &want) {
                    self.err(op, format!("results must be `{want}`, not {}", list(&rt)));
                }
            }
            Cat => {
                if !self.counts(op, 2..=2, 1) {
                    return;
                }
                let (a, b, r) = (ot[0], ot[1], rt[0]);
                let ok = a.is_tensor()
                    && b.is_tensor()
                    && a.elem() == b.elem()
                    && a.shape().len() == b.shape().len()
                    && a.shape()[1..] == b.shape()[1..];
                if !ok {
                    self.err(op, format!("cannot concatenate `{a}` and `{b}` along dim 0"));
                    return;
                }
                let mut s = a.shape().to_vec();
                s[0] += b.shape()[0];
                let want = Type::tensor(&s, a.elem());
                if !same_shape_elem(r, &want) {
                    self.err(op, format!("result must be `{want}`, not `{r}`"));
                }
            }
            Binary(b) => {
                if !self.counts(op, 2..=2, 1) {
                    return;
                }
                if ot[0] != ot[1] || ot[0] != rt[0] {
                    self.err(
                        op,
                        format!("operands and result must have the same type, not {} -> {}", list(&ot), rt[0]),
                    );
                    return;
                }
                let e = ot[0].elem();
                use BinaryOp::*;
                let ok = match b {
                    And | Or | Xor | Shl | Shr | UMulHi => e.is_int(),
                    Pow | Atan2 | Hypot | CopySign | MaxNan | MinNan => e.is_float(),
                    Add | Sub | Mul | Div | Rem | Max | Min => is_num(e),
                };
                if !ok {
                    self.err(op, format!("`{}` is not defined on `{e}`", b.name()));
                }
            }
            Unary(u) => {
                if !self.counts(op, 1..=1, 1) {
                    return;
                }
                let (a, r) = (ot[0], rt[0]);
                let e = a.elem();
                use UnaryOp::*;
                let predicate = matches!(u, IsNan | IsInf | IsFinite | Signbit);
                let want = if predicate { a.with_elem(DType::I1) } else { a.clone() };
                if *r != want {
                    self.err(op, format!("result must be `{want}`, not `{r}`"));
                    return;
                }
                let ok = match u {
                    Not | Popc | Clz => e.is_int(),
                    Neg | Abs => is_num(e),
                    _ => e.is_float(),
                };
                if !ok {
                    self.err(op, format!("`{}` is not defined on `{e}`", u.name()));
                }
            }
            Cmp(_) => {
                if !self.counts(op, 2..=2, 1) {
                    return;
                }
                if ot[0] != ot[1] {
                    self.err(op, format!("operands must have the same type, not {}", list(&ot)));
                    return;
                }
                let want = ot[0].with_elem(DType::I1);
                if *rt[0] != want {
                    self.err(op, format!("result must be `{want}`, not `{}`", rt[0]));
                }
            }
            Select => {
                if !self.counts(op, 3..=3, 1) {
                    return;
                }
                let (c, a, b) = (ot[0], ot[1], ot[2]);
                if !c.elem().is_bool() || !(c.is_scalar() || same_shape(c, a)) {
                    self.err(op, format!("condition `{c}` must be i1, scalar or of the shape of `{a}`"));
                }
                if a != b || a != rt[0] {
                    self.err(op, format!("values and result must have the same type, not {}, {} -> {}", a, b, rt[0]));
                }
            }
            Fma => {
                if !self.counts(op, 3..=3, 1) {
                    return;
                }
                if ot[0] != ot[1] || ot[0] != ot[2] || ot[0] != rt[0] || !ot[0].elem().is_float() {
                    self.err(
                        op,
                        format!("operands and result must be the same float type, not {} -> {}", list(&ot), rt[0]),
                    );
                }
            }
            Cast { kind, .. } => {
                if !self.counts(op, 1..=1, 1) {
                    return;
                }
                let (a, r) = (ot[0], rt[0]);
                if !same_shape(a, r) {
                    self.err(op, format!("cast must keep the shape: `{a}` to `{r}`"));
                    return;
                }
                let (ea, er) = (a.elem(), r.elem());
                let ok = match kind {
                    CastKind::Convert => is_num(ea) && is_num(er),
                    CastKind::Bitcast => match (ea, er) {
                        (Elem::Num(x), Elem::Num(y)) => x.bits() == y.bits(),
                        (Elem::Ptr { .. }, Elem::Ptr { .. }) => true,
                        _ => false,
                    },
                    CastKind::PtrToInt => ea.is_ptr() && er.is_int() && !er.is_bool(),
                    CastKind::IntToPtr => ea.is_int() && !ea.is_bool() && er.is_ptr(),
                };
                if !ok {
                    self.err(op, format!("cannot `{}` from `{ea}` to `{er}`", kind.name()));
                }
            }
            AddPtr => {
                if !self.counts(op, 2..=2, 1) {
                    return;
                }
                let (p, o) = (ot[0], ot[1]);
                if !p.elem().is_ptr() || !o.elem().is_int() || o.elem().is_bool() || !same_shape(p, o) {
                    self.err(op, format!("takes pointers and integer offsets of the same shape, not {}", list(&ot)));
                } else if rt[0] != p {
                    self.err(op, format!("result must be `{p}`, not `{}`", rt[0]));
                }
            }
            Load { .. } => {
                if !self.counts(op, 1..=3, 1) {
                    return;
                }
                let Some(val) = self.pointee_type(op, ot[0]) else { return };
                if !same_shape_elem(rt[0], &val) {
                    self.err(op, format!("loading `{}` gives `{val}`, not `{}`", ot[0], rt[0]));
                }
                if ot.len() > 1 {
                    self.check_mask(op, ot[1], ot[0]);
                }
                if ot.len() > 2 && ot[2] != rt[0] {
                    self.err(op, format!("`other` must have the result type `{}`, not `{}`", rt[0], ot[2]));
                }
            }
            DescLoad { rank } => {
                let r = *rank as usize;
                if !self.counts(op, 4 + 3 * r..=4 + 3 * r, 1) {
                    return;
                }
                let Some(val) = self.pointee_type(op, ot[0]) else { return };
                if !same_shape_elem(rt[0], &val) || rt[0].shape().len() != r {
                    self.err(op, format!("loading `{}` gives `{val}` of rank {r}, not `{}`", ot[0], rt[0]));
                }
                self.check_mask(op, ot[1], ot[0]);
                if ot[2] != rt[0] {
                    self.err(op, format!("`other` must have the result type `{}`, not `{}`", rt[0], ot[2]));
                }
                self.check_window(op, &ot[3..], r);
            }
            DescStore { rank } => {
                let r = *rank as usize;
                if !self.counts(op, 4 + 3 * r..=4 + 3 * r, 0) {
                    return;
                }
                let Some(val) = self.pointee_type(op, ot[0]) else { return };
                if !same_shape_elem(ot[1], &val) || ot[1].shape().len() != r {
                    self.err(
                        op,
                        format!("storing through `{}` needs a `{val}` value of rank {r}, not `{}`", ot[0], ot[1]),
                    );
                }
                self.check_mask(op, ot[2], ot[0]);
                self.check_window(op, &ot[3..], r);
            }
            Store { .. } => {
                if !self.counts(op, 2..=3, 0) {
                    return;
                }
                let Some(val) = self.pointee_type(op, ot[0]) else { return };
                if !same_shape_elem(ot[1], &val) {
                    self.err(op, format!("storing through `{}` needs a `{val}` value, not `{}`", ot[0], ot[1]));
                }
                if ot.len() > 2 {
                    self.check_mask(op, ot[2], ot[0]);
                }
            }
            AtomicRmw { op: rmw, .. } => {
                if !self.counts(op, 2..=3, 1) {
                    return;
                }
                let Some(val) = self.pointee_type(op, ot[0]) else { return };
                if !same_shape_elem(ot[1], &val) || ot[1] != rt[0] {
                    self.err(
                        op,
                        format!("through `{}` the value and result must be `{val}`, not {} -> {}", ot[0], ot[1], rt[0]),
                    );
                }
                if ot.len() > 2 {
                    self.check_mask(op, ot[2], ot[0]);
                }
                let e = val.elem();
                let ok = match rmw {
                    RmwOp::And | RmwOp::Or | RmwOp::Xor => e.is_int(),
                    _ => true,
                };
                if !ok {
                    self.err(op, format!("atomic `{}` is not defined on `{e}`", rmw.name()));
                }
            }
            AtomicCas { .. } => {
                if !self.counts(op, 3..=3, 1) {
                    return;
                }
                let Some(val) = self.pointee_type(op, ot[0]) else { return };
                if !same_shape_elem(ot[1], &val) || ot[1] != ot[2] || ot[2] != rt[0] {
                    self.err(
                        op,
                        format!(
                            "through `{}` compare, value and result must be `{val}`, not {}",
                            ot[0],
                            list(&ot[1..])
                        ),
                    );
                }
            }
            Dot { .. } => {
                if !self.counts(op, 3..=3, 1) {
                    return;
                }
                self.check_dot(op, ot[0], ot[1], ot[2], rt[0]);
            }
            Reduce { axis } | Scan { axis, .. } => {
                let n = d.operands.len();
                if !self.counts(op, 1..=usize::MAX, n) {
                    return;
                }
                let a = ot[0];
                if !a.is_tensor() || ot.iter().any(|t| !same_shape(t, a)) {
                    self.err(op, format!("operands must be tensors of one shape, not {}", list(&ot)));
                    return;
                }
                if *axis as usize >= a.shape().len() {
                    self.err(op, format!("axis {axis} out of range for `{a}`"));
                    return;
                }
                let scan = matches!(d.kind, Scan { .. });
                for i in 0..n {
                    let want = if scan {
                        ot[i].clone()
                    } else {
                        let mut s = ot[i].shape().to_vec();
                        s.remove(*axis as usize);
                        ot[i].with_shape(&s)
                    };
                    if !same_shape_elem(rt[i], &want) {
                        self.err(op, format!("result {i} must be `{want}`, not `{}`", rt[i]));
                    }
                }
                let elems: Vec<Type> = ot.iter().map(|t| Type::Scalar(t.elem())).collect();
                let region = d.regions[0];
                let args: Vec<Type> = self.arg_types(region).into_iter().cloned().collect();
                let want_args: Vec<Type> = elems.iter().chain(elems.iter()).cloned().collect();
                if args != want_args {
                    let w: Vec<&Type> = want_args.iter().collect();
                    let g: Vec<&Type> = args.iter().collect();
                    self.err(op, format!("combine region arguments must be {}, not {}", list(&w), list(&g)));
                }
                let y: Vec<Type> = self.term_types(region).into_iter().cloned().collect();
                if y != elems {
                    let w: Vec<&Type> = elems.iter().collect();
                    let g: Vec<&Type> = y.iter().collect();
                    self.err(op, format!("combine region must yield {}, not {}", list(&w), list(&g)));
                }
            }
            MultipleOf { values } | MaxContiguous { values } | MaxConstancy { values } => {
                if !self.counts(op, 1..=1, 1) {
                    return;
                }
                if ot[0] != rt[0] {
                    self.err(op, format!("result must have the operand type `{}`, not `{}`", ot[0], rt[0]));
                }
                let rank = ot[0].shape().len().max(1);
                if values.len() != rank || values.contains(&0) {
                    self.err(op, format!("needs {rank} positive value(s), got {values:?}"));
                }
            }
            Assume | Assert { .. } => {
                if self.counts(op, 1..=1, 0) && !ot[0].elem().is_bool() {
                    self.err(op, format!("condition must be i1, not `{}`", ot[0]));
                }
            }
            Print { .. } => {
                self.counts(op, 0..=usize::MAX, 0);
            }
            Record { name, .. } => {
                self.counts(op, 0..=0, 0);
                if name.is_empty() {
                    self.err(op, "a record needs a non-empty region name");
                }
            }
            For => self.check_for(op, &ot, &rt),
            If => {
                if !self.counts(op, 1..=1, rt.len()) {
                    return;
                }
                if *ot[0] != Type::i1() {
                    self.err(op, format!("condition must be a scalar i1, not `{}`", ot[0]));
                }
                for (ri, &r) in d.regions.iter().enumerate() {
                    let which = if ri == 0 { "then" } else { "else" };
                    if !f.blocks[r].args.is_empty() {
                        self.err(op, format!("the {which} region must have no arguments"));
                    }
                    let y = self.term_types(r);
                    if y != rt {
                        self.err(
                            op,
                            format!("the {which} region yields {}, but the results are {}", list(&y), list(&rt)),
                        );
                    }
                }
            }
            While => {
                let (before, after) = (d.regions[0], d.regions[1]);
                let args0 = self.arg_types(before);
                if args0 != ot {
                    self.err(
                        op,
                        format!("the before region's arguments {} must match the inits {}", list(&args0), list(&ot)),
                    );
                }
                let c = self.term_types(before);
                if c.first().is_none_or(|t| **t != Type::i1()) {
                    self.err(op, "`condition` must start with a scalar i1");
                } else if c[1..] != rt[..] {
                    self.err(op, format!("`condition` forwards {}, but the results are {}", list(&c[1..]), list(&rt)));
                }
                let args1 = self.arg_types(after);
                if args1 != rt {
                    self.err(
                        op,
                        format!("the after region's arguments {} must match the results {}", list(&args1), list(&rt)),
                    );
                }
                let y = self.term_types(after);
                if y != ot {
                    self.err(op, format!("the after region yields {}, but the inits are {}", list(&y), list(&ot)));
                }
            }
            Yield | Condition => {
                self.counts(op, 0..=usize::MAX, 0);
            }
            Return => {
                if !self.counts(op, 0..=usize::MAX, 0) {
                    return;
                }
                let want: Vec<&Type> = f.result_types.iter().collect();
                if ot != want {
                    self.err(op, format!("returns {}, but the function's results are {}", list(&ot), list(&want)));
                }
            }
            ConvertLayout | LocalLoad => {
                if self.counts(op, 1..=1, 1) && !same_shape_elem(ot[0], rt[0]) {
                    self.err(op, format!("result must hold the operand's values, `{}` is not `{}`", rt[0], ot[0]));
                }
            }
            LocalAlloc => {
                if self.counts(op, 0..=1, 1) && ot.len() == 1 && !same_shape_elem(ot[0], rt[0]) {
                    self.err(op, format!("buffer `{}` cannot hold `{}`", rt[0], ot[0]));
                }
            }
            LocalStore => {
                if self.counts(op, 2..=2, 0) && !same_shape_elem(ot[0], ot[1]) {
                    self.err(op, format!("buffer `{}` cannot hold `{}`", ot[0], ot[1]));
                }
            }
            MemDescIndex => {
                if self.counts(op, 2..=2, 1)
                    && (ot[0].shape().get(1..) != Some(rt[0].shape()) || ot[0].elem() != rt[0].elem())
                {
                    self.err(op, format!("a slice of `{}` is not `{}`", ot[0], rt[0]));
                }
            }
            MemDescTrans { perm } => {
                if !self.counts(op, 1..=1, 1) || !self.permuted(op, perm, ot[0], rt[0]) {
                    return;
                }
                let a = ot[0];
                // The view's layout is the buffer's, its dims renamed: a shared layout whose
                // `order` lists result dims where the buffer's lists buffer dims.
                let layouts =
                    (a.layout().and_then(|l| f.layouts.get(l)), rt[0].layout().and_then(|l| f.layouts.get(l)));
                if let (Some(la), Some(lr)) = layouts {
                    let renamed = match la {
                        Layout::Shared { vec, per_phase, max_phase, order } => Some(Layout::Shared {
                            vec: *vec,
                            per_phase: *per_phase,
                            max_phase: *max_phase,
                            order: order
                                .iter()
                                .map(|&d| perm.iter().position(|&p| p == d).unwrap_or(0) as u32)
                                .collect(),
                        }),
                        _ => None,
                    };
                    if renamed.as_ref() != Some(lr) {
                        self.err(op, "the view's layout must be the buffer's shared layout with its dims permuted");
                    }
                }
            }
            AsyncCopy => {
                self.counts(op, 2..=4, 0);
            }
            TmaMap { block, .. } => {
                let r = block.len();
                if !(1..=5).contains(&r) || !self.counts(op, 1 + 2 * r..=1 + 2 * r, 1) {
                    if !(1..=5).contains(&r) {
                        self.err(op, format!("a tensor map has 1 to 5 dimensions, not {r}"));
                    }
                    return;
                }
                if !ot[0].is_scalar() || !ot[0].elem().is_ptr() {
                    self.err(op, format!("the map's base must be a scalar pointer, not `{}`", ot[0]));
                }
                if ot[1..].iter().any(|t| !t.is_scalar() || t.elem() != Elem::Num(DType::I64)) {
                    self.err(op, format!("the map's shape and strides must be `i64` scalars, not {}", list(&ot[1..])));
                }
                if block.iter().any(|&b| !(1..=256).contains(&b)) {
                    self.err(op, format!("a box dimension is 1 to 256 elements, not {block:?}"));
                }
                if !rt[0].is_scalar() || rt[0].elem() != Elem::Num(DType::I64) {
                    self.err(op, format!("a tensor map is an `i64` address, not `{}`", rt[0]));
                }
            }
            TmaCopy => {
                if !self.counts(op, 4..=9, 0) {
                    return;
                }
                // An optional trailing i1: issue only when true.
                let rank = ot[1].shape().len();
                let guarded = ot.len() == 4 + rank;
                if ot.len() != 3 + rank && !guarded {
                    self.err(
                        op,
                        format!("a box of rank {rank} takes {rank} offsets (and an optional i1), not {}", ot.len() - 3),
                    );
                    return;
                }
                if guarded && (!ot[3 + rank].is_scalar() || ot[3 + rank].elem() != Elem::Num(DType::I1)) {
                    self.err(op, format!("the copy's guard is an `i1` scalar, not `{}`", ot[3 + rank]));
                }
                let ot = &ot[..3 + rank];
                if !ot[0].is_scalar() || ot[0].elem() != Elem::Num(DType::I64) {
                    self.err(op, format!("the first operand is a tensor map (`i64`), not `{}`", ot[0]));
                }
                if ot[1].shape().len() != rank {
                    self.err(op, format!("a box of rank {rank} does not fill `{}`", ot[1]));
                }
                // The buffer is the map's box, or several boxes side by side along the
                // innermost dimension.
                let block = self.f.def_op(d.operands[0]).and_then(|m| match &self.f.ops[m].kind {
                    TmaMap { block, .. } => Some(block.clone()),
                    _ => None,
                });
                if let Some(block) = block {
                    let shape = ot[1].shape();
                    let n = block.len();
                    let fits = n == shape.len()
                        && n > 0
                        && block[..n - 1] == shape[..n - 1]
                        && block[n - 1] != 0
                        && shape[n - 1].is_multiple_of(block[n - 1]);
                    if !fits {
                        self.err(op, format!("boxes of {block:?} do not tile `{}` along its last dimension", ot[1]));
                    }
                }
                if ot[2].elem() != Elem::Num(DType::I64) || ot[2].shape() != [1] {
                    self.err(op, format!("the barrier is a one-slot `tensor<1xi64>` view, not `{}`", ot[2]));
                }
                if ot[3..].iter().any(|t| !t.is_scalar() || t.elem() != Elem::Num(DType::I32)) {
                    self.err(op, format!("the box offsets must be `i32` scalars, not {}", list(&ot[3..])));
                }
            }
            TmaStore => {
                if !self.counts(op, 3..=7, 0) {
                    return;
                }
                let rank = ot[1].shape().len();
                if ot.len() != 2 + rank {
                    self.err(op, format!("a box of rank {rank} takes {rank} offsets, not {}", ot.len() - 2));
                    return;
                }
                if !ot[0].is_scalar() || ot[0].elem() != Elem::Num(DType::I64) {
                    self.err(op, format!("the first operand is a tensor map (`i64`), not `{}`", ot[0]));
                }
                if ot[2..].iter().any(|t| !t.is_scalar() || t.elem() != Elem::Num(DType::I32)) {
                    self.err(op, format!("the box offsets must be `i32` scalars, not {}", list(&ot[2..])));
                }
                let f = self.f;
                if d.attrs.get(discardable::STORE_READ_DEFERRED).is_some()
                    && !f
                        .ops
                        .iter()
                        .any(|(_, o)| matches!(o.kind, TmaStoreWait) && o.operands.first() == Some(&d.operands[1]))
                {
                    self.err(op, "a `store_read_deferred` store needs a `tma_store_wait` on its box");
                }
            }
            TmaStoreWait => {
                if self.counts(op, 1..=1, 0) && ot[0].is_scalar() {
                    self.err(op, format!("the operand is a shared buffer, not `{}`", ot[0]));
                }
            }
            MbarrierInit { .. } | MbarrierWait => {
                if self.counts(op, 1..=1, 0) && ot[0].elem() != Elem::Num(DType::I64) {
                    self.err(op, format!("mbarriers are `i64` shared buffers, not `{}`", ot[0]));
                }
            }
            MbarrierArrive => {
                if !self.counts(op, 1..=2, 0) {
                    return;
                }
                if ot[0].elem() != Elem::Num(DType::I64) || ot[0].shape() != [1] {
                    self.err(op, format!("the barrier is a one-slot `tensor<1xi64>` view, not `{}`", ot[0]));
                }
                if ot.get(1).is_some_and(|t| **t != Type::i1()) {
                    self.err(op, format!("the guard must be a scalar i1, not `{}`", ot[1]));
                }
            }
            WarpSpecialize { .. } => self.check_warp_specialize(op),
            PingpongWait { .. } | PingpongPass { .. } => {
                if self.counts(op, 0..=0, 0) && !matches!(self.f.warp_role(op), Some((_, 0))) {
                    self.err(
                        op,
                        "ping-pong turns are taken by consumer warpgroups: only in region 0 of a `warp_specialize`",
                    );
                }
            }
            AsyncCommitGroup | AsyncWait { .. } | Barrier => {
                self.counts(op, 0..=0, 0);
            }
            Call { callee } => {
                let Some(m) = self.module else { return };
                let Some(g) = m.func(callee) else {
                    self.err(op, format!("calls `@{callee}`, which is not in the module"));
                    return;
                };
                let params: Vec<&Type> = g.params.iter().filter_map(|p| g.values.get(p.value)).map(|v| &v.ty).collect();
                if ot != params {
                    self.err(op, format!("passes {}, but `@{callee}` takes {}", list(&ot), list(&params)));
                }
                let results: Vec<&Type> = g.result_types.iter().collect();
                if rt != results {
                    self.err(op, format!("expects {}, but `@{callee}` returns {}", list(&rt), list(&results)));
                }
            }
        }
    }

    fn check_constant(&mut self, op: Op, c: Const, t: &Type) {
        let e = t.elem();
        match c {
            Const::Int(v) => match e {
                Elem::Ptr { .. } => {}
                Elem::Num(d) if d.is_int() && !d.is_bool() => {
                    let bits = d.bits();
                    let ok = if bits == 64 {
                        true
                    } else if d.is_signed_int() {
                        let half = 1i64 << (bits - 1);
                        (-half..half).contains(&v)
                    } else {
                        (0..(1i64 << bits)).contains(&v)
                    };
                    if !ok {
                        self.err(op, format!("{v} is out of range for `{d}`"));
                    }
                }
                Elem::Num(d) if d.is_bool() => self.err(op, "an i1 constant needs `true` or `false`"),
                _ => self.err(op, format!("an integer value for a `{e}` constant (write a float, e.g. {v}.0)")),
            },
            Const::Float(_) if !e.is_float() => self.err(op, format!("a float value for a `{e}` constant")),
            Const::Bool(_) if !e.is_bool() => self.err(op, format!("a boolean value for a `{e}` constant")),
            _ => {}
        }
    }

    /// For a pointer (tensor) type, the type of the values it points at.
    fn pointee_type(&mut self, op: Op, p: &Type) -> Option<Type> {
        match p.elem().pointee() {
            Some(d) => Some(p.with_elem(d)),
            None => {
                self.err(op, format!("the pointer operand has type `{p}`"));
                None
            }
        }
    }

    fn check_mask(&mut self, op: Op, mask: &Type, ptr: &Type) {
        if !mask.elem().is_bool() || !same_shape(mask, ptr) {
            self.err(op, format!("the mask must be i1 of the pointer's shape `{ptr}`, not `{mask}`"));
        }
    }

    /// A descriptor access's window: a scalar pointer base, then `rank` i64 shapes, `rank`
    /// i64 strides and `rank` i32 offsets.
    fn check_window(&mut self, op: Op, window: &[&Type], r: usize) {
        if !window[0].is_scalar() || !window[0].elem().is_ptr() {
            self.err(op, format!("the descriptor's base must be a scalar pointer, not `{}`", window[0]));
        }
        let scalar = |t: &Type, d: DType| t.is_scalar() && t.elem() == Elem::Num(d);
        for (i, t) in window[1..].iter().enumerate() {
            let want = if i < 2 * r { DType::I64 } else { DType::I32 };
            if !scalar(t, want) {
                let what = ["shape", "strides", "offsets"][i / r];
                self.err(op, format!("the descriptor's {what} must be `{}` scalars, not `{t}`", want.name()));
            }
        }
    }

    fn check_dot(&mut self, op: Op, a: &Type, b: &Type, c: &Type, r: &Type) {
        let (sa, sb, sc) = (a.shape(), b.shape(), c.shape());
        let rank = sa.len();
        if !(rank == 2 || rank == 3) || sb.len() != rank || sc.len() != rank {
            self.err(op, format!("operands must all be 2-D (or 3-D batched), not {}", list(&[a, b, c])));
            return;
        }
        let bt = rank - 2;
        let (m, k) = (sa[bt], sa[bt + 1]);
        let (k2, n) = (sb[bt], sb[bt + 1]);
        if k != k2 || sc[bt] != m || sc[bt + 1] != n || (rank == 3 && (sb[0] != sa[0] || sc[0] != sa[0])) {
            self.err(op, format!("shapes do not chain: {} @ {} + {}", a, b, c));
        }
        let (ea, eb) = (a.elem(), b.elem());
        if !is_num(ea) || !is_num(eb) || ea.is_float() != eb.is_float() || !is_num(c.elem()) {
            self.err(op, format!("cannot multiply `{ea}` by `{eb}` into `{}`", c.elem()));
        }
        if r != c {
            self.err(op, format!("result must have the accumulator's type `{c}`, not `{r}`"));
        }
    }

    /// `warp_specialize`: in the function's body just before its `return`, both regions
    /// without arguments or yielded values, and a producer that holds no CTA barrier (its
    /// warps take part in none) and computes no register tensor (every layout describes the
    /// consumer warps only).
    fn check_warp_specialize(&mut self, op: Op) {
        if !self.counts(op, 0..=0, 0) {
            return;
        }
        let f = self.f;
        let d = &f.ops[op];
        for (ri, &r) in d.regions.iter().enumerate() {
            if !f.blocks[r].args.is_empty() || !self.term_types(r).is_empty() {
                self.err(op, format!("region {ri} must take no arguments and yield nothing"));
            }
        }
        // Only records (the end of a profiled kernel's region, which every warp reaches) may
        // come between it and the `return`.
        let next = d.parent.and_then(|b| {
            let ops = &f.blocks[b].ops;
            let at = ops.iter().position(|&o| o == op)?;
            ops[at + 1..].iter().copied().find(|&o| !matches!(f.ops[o].kind, OpKind::Record { .. }))
        });
        if d.parent != Some(f.body) || !next.is_some_and(|n| matches!(f.ops[n].kind, OpKind::Return)) {
            self.err(
                op,
                "`warp_specialize` must be the last op of the function's body before `return` (but for records)",
            );
        }
        if let OpKind::WarpSpecialize { producer_warps, producer_regs, .. } = d.kind {
            if producer_regs > 0 && producer_warps % 4 != 0 {
                self.err(op, "`producer_regs` moves registers between whole warpgroups: `producer_warps` must be a multiple of 4");
            }
        }
        let mut bad = vec![];
        f.walk_block(d.regions[1], &mut |o| {
            let od = &f.ops[o];
            let register_tensor = od.results.iter().any(|&r| {
                let t = f.ty(r);
                !t.is_scalar() && !matches!(t.layout().and_then(|l| f.layouts.get(l)), Some(Layout::Shared { .. }))
            });
            if matches!(od.kind, OpKind::Barrier) || register_tensor {
                bad.push((o, od.kind.name()));
            }
        });
        for (o, name) in bad {
            self.err(o, format!("`{name}` in the producer region of a `warp_specialize` (it runs scalars, copies and mbarrier waits only)"));
        }
    }

    fn check_for(&mut self, op: Op, ot: &[&'a Type], rt: &[&'a Type]) {
        let d = &self.f.ops[op];
        if d.operands.len() < 3 {
            self.err(op, format!("has {} operand(s), expected lb, ub, step and the inits", d.operands.len()));
            return;
        }
        let (lb, ub, st) = (ot[0], ot[1], ot[2]);
        if !lb.is_scalar() || !lb.elem().is_int() || lb.elem().is_bool() || ub != lb || st != lb {
            self.err(op, format!("lb, ub and step must be scalars of one integer type, not {}", list(&ot[..3])));
        }
        let inits = &ot[3..];
        if rt != inits {
            self.err(op, format!("results {} must match the inits {}", list(rt), list(inits)));
        }
        let body = d.regions[0];
        let args = self.arg_types(body);
        if args.is_empty() || args[0] != lb || args[1..] != *inits {
            let mut want = vec![lb];
            want.extend_from_slice(inits);
            self.err(
                op,
                format!("body arguments {} must be the induction variable and the inits {}", list(&args), list(&want)),
            );
        }
        let y = self.term_types(body);
        if y != inits {
            self.err(op, format!("the body yields {}, but the inits are {}", list(&y), list(inits)));
        }
    }
}
