//! Global memory: loads, stores and atomics.
//!
//! A thread moves `vec` consecutive elements with one instruction when its layout
//! holds them in consecutive registers and axis analysis proves the addresses
//! contiguous and aligned (up to 16 bytes: `ld.global.v4.b32`). Masks become
//! predicates (a mask must be constant over a vector); `other` values are moved in
//! first, so masked-off lanes keep them. Stores and atomics are issued only by the
//! thread that owns an element (layouts may give copies of an element to several
//! threads).

use super::emitter::{Emitter, Res};
use super::regs::{class_of, mem_bytes, Reg, RegClass};
use super::sanitize::SiteAccess;
use crate::layout::LinearLayout;
use crate::machine::scratch::atomic_result_needs_broadcast;
use crate::machine::vector::vector_width_of;
use trident_ir::{
    CacheModifier, Const, DType, Elem, EvictionPolicy, MemScope, MemSem, Op, OpKind, RmwOp, Value, ValueDef,
};

/// How one vector access is split into words.
#[derive(Copy, Clone, Debug)]
struct Access {
    /// Elements per access.
    vec: usize,
    /// Words per access (1, 2 or 4).
    words: usize,
    /// Word register class.
    word: RegClass,
    /// Bytes per element in memory.
    bytes: u32,
}

impl Access {
    fn new(vec: usize, bytes: u32) -> Access {
        let total = vec as u32 * bytes;
        let (word, words) = match (bytes, total) {
            (8, t) => (RegClass::B64, (t / 8) as usize),
            (_, 1) => (RegClass::B16, 1),
            (_, 2) => (RegClass::B16, 1),
            (_, t) => (RegClass::B32, (t / 4) as usize),
        };
        Access { vec, words, word, bytes }
    }

    /// The `.vN.type` suffix of the instruction.
    fn suffix(&self) -> String {
        let ty = match (self.word, self.bytes, self.vec) {
            (RegClass::B16, 1, 1) => "u8".to_string(),
            (w, _, _) => w.btype().to_string(),
        };
        if self.words > 1 {
            format!("v{}.{ty}", self.words)
        } else {
            ty
        }
    }

    fn operand(&self, regs: &[Reg]) -> String {
        if self.words > 1 {
            format!("{{{}}}", regs.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", "))
        } else {
            regs[0].to_string()
        }
    }
}

fn cache_suffix(cache: CacheModifier, evict: EvictionPolicy, store: bool) -> String {
    let c = match cache {
        CacheModifier::None => "",
        CacheModifier::Ca if !store => ".ca",
        CacheModifier::Cg => ".cg",
        CacheModifier::Cs => ".cs",
        CacheModifier::Cv if !store => ".cv",
        CacheModifier::Wb if store => ".wb",
        CacheModifier::Wt if store => ".wt",
        _ => "",
    };
    if !c.is_empty() {
        return c.to_string();
    }
    match evict {
        EvictionPolicy::Normal => String::new(),
        EvictionPolicy::First => ".L1::evict_first".into(),
        EvictionPolicy::Last => ".L1::evict_last".into(),
    }
}

impl Emitter<'_> {
    /// The constant a value is a splat of, if it is defined by a `constant` op.
    pub fn splat_const(&self, v: Value) -> Option<Const> {
        match self.f.values[v].def {
            ValueDef::Result(op, _) => match &self.f.ops[op].kind {
                OpKind::Constant(c) => Some(*c),
                OpKind::Splat => self.splat_const(self.f.ops[op].operands[0]),
                _ => None,
            },
            ValueDef::Arg(..) => None,
        }
    }

    /// Widest vector (in elements) for accessing `ptr` in layout `l` whose elements are `bytes` wide.
    pub fn vector_width(&self, ptr: Value, mask: Option<Value>, l: &LinearLayout, bytes: u32) -> usize {
        vector_width_of(self.axis, ptr, mask, l, bytes)
    }

    /// The address operand of each vector (of `vec` registers) of a global access through
    /// `ptrs`: where the axis analysis proves a vector's pointer a constant distance from
    /// another one's (register bits that only move within a contiguous run, on bits no
    /// thread or other register uses), `[leader+imm]`, so one 64-bit pointer per leader
    /// stays live instead of one per vector.
    fn vector_addrs(&mut self, ptr: Value, l: &LinearLayout, vec: usize, bytes: u32, ptrs: &[Reg]) -> Vec<String> {
        let n = ptrs.len() / vec.max(1);
        let plain: Vec<String> = (0..n).map(|g| ptrs[g * vec].to_string()).collect();
        let Some(info) = self.axis.get(ptr) else { return plain };
        let rank = l.rank();
        if rank == 0 || info.contig.len() != rank {
            return plain;
        }
        let shifts = crate::layout::linear::dim_shifts(&l.shape);
        let low_regs = vec.trailing_zeros() as usize;
        let mut best: (usize, usize, u32) = (0, 0, 0); // (free mask, count, dim)
        for d in 0..rank {
            let c = info.contig[d].min(l.shape[d] as u64);
            if c < 2 {
                continue;
            }
            let dmask = l.dim_mask(d);
            let run = (c - 1) << shifts[d];
            let thread = l.lane.iter().chain(&l.warp).fold(0, |a, &b| a | (b & dmask));
            // Candidates: register bits within the run; drop any that shares coordinate bits
            // with the threads, the other registers or another candidate.
            let mut free: usize = (low_regs..l.reg.len()).filter(|&i| l.reg[i] & !run == 0).fold(0, |a, i| a | 1 << i);
            loop {
                let fixed =
                    (0..l.reg.len()).filter(|&i| free >> i & 1 == 0).fold(thread, |a, i| a | (l.reg[i] & dmask));
                let bad = (0..l.reg.len()).filter(|&i| free >> i & 1 != 0).find(|&i| {
                    let others =
                        (0..l.reg.len()).filter(|&j| j != i && free >> j & 1 != 0).fold(0, |a, j| a | l.reg[j]);
                    l.reg[i] & (fixed | others) != 0
                });
                match bad {
                    Some(i) => free &= !(1 << i),
                    None => break,
                }
            }
            if free.count_ones() as usize > best.1 {
                best = (free, free.count_ones() as usize, d as u32);
            }
        }
        let (free, count, d) = best;
        if count == 0 {
            return plain;
        }
        let d = d as usize;
        (0..n)
            .map(|g| {
                let r = g * vec;
                let leader = r & !free;
                if leader == r {
                    return ptrs[r].to_string();
                }
                let delta = (l.reg_part(r as u64) ^ l.reg_part(leader as u64)) >> shifts[d];
                format!("{}+{}", ptrs[leader], delta * bytes as u64)
            })
            .collect()
    }

    /// Splits loaded words into element registers.
    fn unpack(&mut self, acc: &Access, words: &[Reg], e: Elem) -> Vec<Reg> {
        let ec = class_of(e);
        let bytes = acc.bytes;
        let mut out = vec![];
        for &w in words {
            // Elements per word: a single byte may sit alone in a 16-bit word.
            let per = ((w.class.bits() / (bytes * 8)).max(1) as usize).min(acc.vec / acc.words);
            if per == 1 {
                out.push(w);
                continue;
            }
            if bytes == 2 && w.class == RegClass::B32 {
                let a = self.new_reg(RegClass::B16);
                let b = self.new_reg(RegClass::B16);
                self.ins(format!("mov.b32 {{{a}, {b}}}, {w}"));
                out.push(a);
                out.push(b);
                continue;
            }
            // Bytes: extract with sign or zero extension as the type needs.
            let signed = e.num().is_some_and(|d| d.is_signed_int());
            let w32 = if w.class == RegClass::B16 {
                let t = self.new_reg(RegClass::B32);
                self.ins(format!("cvt.u32.u16 {t}, {w}"));
                t
            } else {
                w
            };
            for j in 0..per {
                let t = self.new_reg(RegClass::B32);
                self.ins(format!("bfe.{} {t}, {w32}, {}, 8", if signed { "s32" } else { "u32" }, 8 * j));
                let h = self.new_reg(RegClass::B16);
                self.ins(format!("cvt.u16.u32 {h}, {t}"));
                out.push(h);
            }
        }
        let _ = ec;
        out
    }

    /// Packs element registers into words for a store.
    fn pack(&mut self, acc: &Access, elems: &[Reg]) -> Vec<Reg> {
        let bytes = acc.bytes;
        let per = ((match acc.word {
            RegClass::B64 => 64,
            RegClass::B32 => 32,
            _ => 16,
        }) / (bytes * 8))
            .max(1) as usize;
        let per = per.min(elems.len());
        if per == 1 {
            return elems.to_vec();
        }
        let mut out = vec![];
        for chunk in elems.chunks(per) {
            let w = self.new_reg(acc.word);
            if bytes == 2 {
                self.ins(format!("mov.b32 {w}, {{{}, {}}}", chunk[0], chunk[1]));
            } else {
                // Bytes: insert each low byte.
                let w32 = self.new_reg(RegClass::B32);
                self.ins(format!("mov.b32 {w32}, 0"));
                for (j, &h) in chunk.iter().enumerate() {
                    let t = self.new_reg(RegClass::B32);
                    self.ins(format!("cvt.u32.u16 {t}, {h}"));
                    self.ins(format!("bfi.b32 {w32}, {t}, {w32}, {}, 8", 8 * j));
                }
                if acc.word == RegClass::B16 {
                    self.ins(format!("cvt.u16.u32 {w}, {w32}"));
                } else {
                    self.mov(w, w32);
                }
            }
            out.push(w);
        }
        out
    }

    /// Element registers of an i1 value as bytes (0/1) in 16-bit registers.
    fn bools_to_bytes(&mut self, regs: &[Reg]) -> Vec<Reg> {
        regs.iter()
            .map(|&p| {
                let h = self.new_reg(RegClass::B16);
                self.ins(format!("selp.u16 {h}, 1, 0, {p}"));
                h
            })
            .collect()
    }

    pub(crate) fn emit_load(&mut self, op: Op) -> Res<()> {
        let f = self.f;
        let d = &f.ops[op];
        let OpKind::Load { cache, evict, volatile } = d.kind else { unreachable!() };
        let ptr = d.operands[0];
        let mask = d.operands.get(1).copied();
        let other = d.operands.get(2).copied();
        let res = d.results[0];
        let e = f.ty(res).elem();
        let bytes = mem_bytes(e);
        let is_bool = e.is_bool();
        let ptrs = self.regs(ptr)?;
        let masks = match mask {
            Some(m) => Some(self.regs(m)?),
            None => None,
        };
        let others = match other {
            Some(o) => Some(self.regs(o)?),
            None => None,
        };
        let (vec, addrs) = match self.ll(res)? {
            Some(l) => {
                let vec = self.vector_width(ptr, mask, &l, bytes);
                (vec, self.vector_addrs(ptr, &l, vec, bytes, &ptrs))
            }
            None => (1, vec![ptrs[0].to_string()]),
        };
        let acc = Access::new(vec, bytes);
        let cs = cache_suffix(cache, evict, false);
        let vol = if volatile { ".volatile" } else { "" };
        let mut out = Vec::with_capacity(ptrs.len());
        let other_bits = other.and_then(|o| self.splat_const(o)).map(|c| super::shape::const_bits(c, e));
        let site = self.san_site(op, ptr, SiteAccess::Load)?;
        for (g, addr) in addrs.iter().enumerate().take(ptrs.len() / vec) {
            let base = g * vec;
            // Words, pre-set to `other` when it is a constant (else zero, fixed below).
            let words: Vec<Reg> = (0..acc.words).map(|_| self.new_reg(acc.word)).collect();
            let fill = match (other_bits, is_bool) {
                (Some(bits), false) => {
                    let per = (acc.word.bits() / (bytes * 8)).max(1);
                    let mut w = 0u64;
                    for j in 0..per {
                        w |= (bits & ((1u64 << (bytes * 8).min(63)) - 1)) << (j * bytes * 8);
                    }
                    w
                }
                _ => 0,
            };
            for &w in &words {
                self.ins(format!("mov.{} {w}, {}", w.class.btype(), fill));
            }
            let ty = if vec == 1 && bytes == 1 {
                if e.num().is_some_and(|t| t.is_signed_int()) {
                    "s8".to_string()
                } else {
                    "u8".to_string()
                }
            } else {
                acc.suffix()
            };
            let mut pred = masks.as_ref().map(|m| m[base]);
            if let Some(s) = &site {
                pred = Some(self.san_guard(s, addr, base, vec, bytes, pred)?);
            }
            let pred = pred.map(|p| format!("@{p} ")).unwrap_or_default();
            self.ins(format!("{pred}ld{vol}.global{cs}.{ty} {}, [{}]", acc.operand(&words), addr));
            let mut elems = self.unpack(&acc, &words, e);
            if is_bool {
                elems = elems
                    .into_iter()
                    .map(|h| {
                        let p = self.new_reg(RegClass::Pred);
                        self.ins(format!("setp.ne.u16 {p}, {h}, 0"));
                        p
                    })
                    .collect();
            }
            if let (Some(m), Some(o)) = (&masks, &others) {
                if other_bits.is_none() || is_bool {
                    for (j, el) in elems.iter_mut().enumerate() {
                        *el = self.select(m[base], *el, o[base + j])?;
                    }
                }
            }
            out.extend(elems);
        }
        self.set(res, out);
        Ok(())
    }

    pub(crate) fn emit_store(&mut self, op: Op) -> Res<()> {
        let f = self.f;
        let d = &f.ops[op];
        let OpKind::Store { cache, evict } = d.kind else { unreachable!() };
        let ptr = d.operands[0];
        let val = d.operands[1];
        let mask = d.operands.get(2).copied();
        let e = f.ty(val).elem();
        let bytes = mem_bytes(e);
        let ptrs = self.regs(ptr)?;
        let mut vals = self.regs(val)?;
        if e.is_bool() {
            vals = self.bools_to_bytes(&vals);
        }
        let masks = match mask {
            Some(m) => Some(self.regs(m)?),
            None => None,
        };
        let (vec, owner, addrs) = match self.ll(ptr)? {
            Some(l) => {
                let vec = self.vector_width(ptr, mask, &l, bytes);
                let addrs = self.vector_addrs(ptr, &l, vec, bytes, &ptrs);
                (vec, self.owner_pred(&l), addrs)
            }
            None => (1, Some(self.thread0_pred()), vec![ptrs[0].to_string()]),
        };
        let acc = Access::new(vec, bytes);
        let cs = cache_suffix(cache, evict, true);
        let site = self.san_site(op, ptr, SiteAccess::Store)?;
        for (g, addr) in addrs.iter().enumerate().take(ptrs.len() / vec) {
            let base = g * vec;
            let words = self.pack(&acc, &vals[base..base + vec]);
            let mut pred = self.combine_preds(masks.as_ref().map(|m| m[base]), owner);
            if let Some(s) = &site {
                pred = Some(self.san_guard(s, addr, base, vec, bytes, pred)?);
            }
            let p = pred.map(|p| format!("@{p} ")).unwrap_or_default();
            let ty = acc.suffix();
            self.ins(format!("{p}st.global{cs}.{ty} [{addr}], {}", acc.operand(&words)));
        }
        Ok(())
    }

    /// `a && b` for optional predicates.
    pub fn combine_preds(&mut self, a: Option<Reg>, b: Option<Reg>) -> Option<Reg> {
        match (a, b) {
            (Some(a), Some(b)) => {
                let p = self.new_reg(RegClass::Pred);
                self.ins(format!("and.pred {p}, {a}, {b}"));
                Some(p)
            }
            (a, b) => a.or(b),
        }
    }

    pub(crate) fn emit_atomic(&mut self, op: Op) -> Res<()> {
        let f = self.f;
        let d = &f.ops[op];
        let ptr = d.operands[0];
        let res = d.results[0];
        let e = f.ty(res).elem();
        let dt = e.num().ok_or_else(|| self.err("atomics on pointers are not supported"))?;
        let ptrs = self.regs(ptr)?;
        let l = self.ll(ptr)?;
        let owner = match &l {
            Some(l) => self.owner_pred(l),
            None => Some(self.thread0_pred()),
        };
        let (sem, scope) = match &d.kind {
            OpKind::AtomicRmw { sem, scope, .. } | OpKind::AtomicCas { sem, scope } => (*sem, *scope),
            _ => unreachable!(),
        };
        let sem_s = match sem {
            MemSem::Relaxed => ".relaxed",
            MemSem::Acquire => ".acquire",
            MemSem::Release => ".release",
            MemSem::AcqRel => ".acq_rel",
        };
        let scope_s = match scope {
            MemScope::Gpu => ".gpu",
            MemScope::Cta => ".cta",
            MemScope::Sys => ".sys",
        };
        let used = f.use_counts()[res] > 0;
        let copies = atomic_result_needs_broadcast(f, op);
        let c = class_of(e);
        let mut out = vec![];
        let site = self.san_site(op, ptr, SiteAccess::Atomic)?;
        let bytes = mem_bytes(e);
        match &d.kind {
            OpKind::AtomicRmw { op: rmw, .. } => {
                let vals = self.regs(d.operands[1])?;
                let masks = match d.operands.get(2) {
                    Some(&m) => Some(self.regs(m)?),
                    None => None,
                };
                for i in 0..ptrs.len() {
                    let mut pred = self.combine_preds(masks.as_ref().map(|m| m[i]), owner);
                    if let Some(s) = &site {
                        pred = Some(self.san_guard(s, &ptrs[i].to_string(), i, 1, bytes, pred)?);
                    }
                    let old = self.new_reg(c);
                    self.ins(format!("mov.{} {old}, 0", c.btype()));
                    self.atomic_rmw(*rmw, dt, sem_s, scope_s, pred, old, ptrs[i], vals[i])?;
                    out.push(old);
                }
            }
            OpKind::AtomicCas { .. } => {
                let cmps = self.regs(d.operands[1])?;
                let vals = self.regs(d.operands[2])?;
                let ty = match c {
                    RegClass::B16 => "b16",
                    RegClass::B32 => "b32",
                    RegClass::B64 => "b64",
                    RegClass::Pred => return Err(self.err("atomic_cas on i1 is not supported")),
                };
                if dt.bits() == 8 {
                    return Err(self.err("atomic_cas on 8-bit types is not supported"));
                }
                for i in 0..ptrs.len() {
                    let mut pred = owner;
                    if let Some(s) = &site {
                        pred = Some(self.san_guard(s, &ptrs[i].to_string(), i, 1, bytes, pred)?);
                    }
                    let old = self.new_reg(c);
                    self.ins(format!("mov.{} {old}, 0", c.btype()));
                    let p = pred.map(|p| format!("@{p} ")).unwrap_or_default();
                    self.ins(format!(
                        "{p}atom{sem_s}{scope_s}.global.cas.{ty} {old}, [{}], {}, {}",
                        ptrs[i], cmps[i], vals[i]
                    ));
                    out.push(old);
                }
            }
            _ => unreachable!(),
        }
        if used && copies {
            // Only the issuing thread has the old value: share it with the threads holding copies.
            let off = self.smem_offset(op)?;
            out = match &l {
                None => {
                    let base = self.smem_base();
                    let p = self.thread0_pred();
                    self.st_shared(Some(p), &format!("{base}+{off}"), out[0]);
                    self.cta_barrier();
                    vec![self.ld_shared(out[0].class, &format!("{base}+{off}"))]
                }
                Some(l) => {
                    let r = self.exchange(
                        op,
                        &[super::convert::ExSrc { regs: out, layout: l.clone(), base: 0 }],
                        vec![super::convert::ExDst { layout: l.clone(), index: Box::new(|c| c), offset: 0 }],
                    )?;
                    r.into_iter().next().unwrap_or_default()
                }
            };
        }
        self.set(res, out);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn atomic_rmw(
        &mut self,
        rmw: RmwOp,
        dt: DType,
        sem: &str,
        scope: &str,
        pred: Option<Reg>,
        old: Reg,
        addr: Reg,
        val: Reg,
    ) -> Res<()> {
        let p = pred.map(|p| format!("@{p} ")).unwrap_or_default();
        let pre = format!("{p}atom{sem}{scope}.global");
        let int_ty = |d: DType| match d {
            DType::I32 => "s32",
            DType::U32 => "u32",
            DType::I64 => "s64",
            DType::U64 => "u64",
            _ => "",
        };
        let bits = |d: DType| if d.bits() == 64 { "b64" } else { "b32" };
        if dt == DType::I1 {
            return Err(self.err("atomics on i1 are not supported"));
        }
        if dt.bits() < 32
            && !(rmw == RmwOp::Add && (dt == DType::F16 || (dt == DType::BF16 && self.opts.target.capability() >= 90)))
        {
            return self.atomic_cas_loop(rmw, dt, sem, scope, pred, old, addr, val);
        }
        match (rmw, dt) {
            (RmwOp::Add, DType::F32) => self.ins(format!("{pre}.add.f32 {old}, [{addr}], {val}")),
            (RmwOp::Add, DType::F64) => self.ins(format!("{pre}.add.f64 {old}, [{addr}], {val}")),
            (RmwOp::Add, DType::F16) => self.ins(format!("{pre}.add.noftz.f16 {old}, [{addr}], {val}")),
            (RmwOp::Add, DType::BF16) if self.opts.target.capability() >= 90 => {
                self.ins(format!("{pre}.add.noftz.bf16 {old}, [{addr}], {val}"))
            }
            (RmwOp::Add, d) if d.is_int() && d.bits() >= 32 => {
                let t = if d.bits() == 64 { "u64" } else { "u32" };
                self.ins(format!("{pre}.add.{t} {old}, [{addr}], {val}"))
            }
            (RmwOp::Max | RmwOp::Min, d) if d.is_int() && d.bits() >= 32 => {
                self.ins(format!("{pre}.{}.{} {old}, [{addr}], {val}", rmw.name(), int_ty(d)))
            }
            (RmwOp::Max | RmwOp::Min, DType::F32) => {
                // Float max/min on the integer bits: non-negative floats order like signed
                // integers, negative ones in reverse like unsigned integers.
                let neg = self.new_reg(RegClass::Pred);
                self.ins(format!("setp.lt.s32 {neg}, {val}, 0"));
                let (pos_op, neg_op) = if rmw == RmwOp::Max { ("max.s32", "min.u32") } else { ("min.s32", "max.u32") };
                let pp = self.combine_preds(pred, None);
                let pos = self.new_reg(RegClass::Pred);
                let negp = self.new_reg(RegClass::Pred);
                match pp {
                    Some(q) => {
                        self.ins(format!("and.pred {pos}, {q}, !{neg}"));
                        self.ins(format!("and.pred {negp}, {q}, {neg}"));
                    }
                    None => {
                        self.ins(format!("not.pred {pos}, {neg}"));
                        self.ins(format!("mov.pred {negp}, {neg}"));
                    }
                }
                self.ins(format!("@{pos} atom{sem}{scope}.global.{pos_op} {old}, [{addr}], {val}"));
                self.ins(format!("@{negp} atom{sem}{scope}.global.{neg_op} {old}, [{addr}], {val}"));
            }
            (RmwOp::And | RmwOp::Or | RmwOp::Xor, d) if d.is_int() && d.bits() >= 32 => {
                self.ins(format!("{pre}.{}.{} {old}, [{addr}], {val}", rmw.name(), bits(d)))
            }
            (RmwOp::Xchg, d) if d.bits() >= 32 => self.ins(format!("{pre}.exch.{} {old}, [{addr}], {val}", bits(d))),
            (RmwOp::Max | RmwOp::Min, DType::F64) => {
                return self.atomic_cas_loop(rmw, dt, sem, scope, pred, old, addr, val)
            }
            _ => return Err(self.err(format!("atomic `{}` on {dt} is not supported", rmw.name()))),
        }
        Ok(())
    }

    /// An atomic read-modify-write PTX has no instruction for, as a compare-and-swap retry
    /// loop (per thread, divergent): on the element itself for 64-bit types, on the aligned
    /// 32-bit word containing it for 8- and 16-bit types.
    #[allow(clippy::too_many_arguments)]
    fn atomic_cas_loop(
        &mut self,
        rmw: RmwOp,
        dt: DType,
        sem: &str,
        scope: &str,
        pred: Option<Reg>,
        old: Reg,
        addr: Reg,
        val: Reg,
    ) -> Res<()> {
        let done = self.new_label("cas_done");
        let head = self.new_label("cas_loop");
        if let Some(p) = pred {
            self.ins(format!("@!{p} bra {done}"));
        }
        let combine = |e: &mut Self, cur: Reg| -> Res<Reg> {
            Ok(match rmw {
                RmwOp::Xchg => val,
                RmwOp::Add => e.binary(trident_ir::BinaryOp::Add, dt, cur, val)?,
                RmwOp::Max => e.binary(trident_ir::BinaryOp::Max, dt, cur, val)?,
                RmwOp::Min => e.binary(trident_ir::BinaryOp::Min, dt, cur, val)?,
                RmwOp::And => e.binary(trident_ir::BinaryOp::And, dt, cur, val)?,
                RmwOp::Or => e.binary(trident_ir::BinaryOp::Or, dt, cur, val)?,
                RmwOp::Xor => e.binary(trident_ir::BinaryOp::Xor, dt, cur, val)?,
            })
        };
        if dt.bits() == 64 {
            let cur = self.new_reg(RegClass::B64);
            self.ins(format!("ld.relaxed{scope}.global.b64 {cur}, [{addr}]"));
            self.label(&head);
            let new = combine(self, cur)?;
            let prev = self.new_reg(RegClass::B64);
            self.ins(format!("atom{sem}{scope}.global.cas.b64 {prev}, [{addr}], {cur}, {new}"));
            let again = self.new_reg(RegClass::Pred);
            self.ins(format!("setp.ne.u64 {again}, {prev}, {cur}"));
            self.mov(old, cur);
            self.ins(format!("mov.b64 {cur}, {prev}"));
            self.ins(format!("@{again} bra {head}"));
            self.label(&done);
            return Ok(());
        }
        let bits = dt.bits();
        let word = self.new_reg(RegClass::B64);
        self.ins(format!("and.b64 {word}, {addr}, -4"));
        let lo = self.new_reg(RegClass::B32);
        self.ins(format!("cvt.u32.u64 {lo}, {addr}"));
        let shift = self.new_reg(RegClass::B32);
        self.ins(format!("and.b32 {shift}, {lo}, 3"));
        self.ins(format!("shl.b32 {shift}, {shift}, 3"));
        let cur = self.new_reg(RegClass::B32);
        self.ins(format!("ld.relaxed{scope}.global.b32 {cur}, [{word}]"));
        self.label(&head);
        let field = self.new_reg(RegClass::B32);
        self.ins(format!("bfe.u32 {field}, {cur}, {shift}, {bits}"));
        let elem = self.new_reg(RegClass::B16);
        self.ins(format!("cvt.u16.u32 {elem}, {field}"));
        if dt == DType::I8 {
            self.ins(format!("cvt.s16.s8 {elem}, {elem}"));
        }
        let new = combine(self, elem)?;
        let nw = self.new_reg(RegClass::B32);
        self.ins(format!("cvt.u32.u16 {nw}, {new}"));
        let next = self.new_reg(RegClass::B32);
        self.ins(format!("bfi.b32 {next}, {nw}, {cur}, {shift}, {bits}"));
        let prev = self.new_reg(RegClass::B32);
        self.ins(format!("atom{sem}{scope}.global.cas.b32 {prev}, [{word}], {cur}, {next}"));
        let again = self.new_reg(RegClass::Pred);
        self.ins(format!("setp.ne.u32 {again}, {prev}, {cur}"));
        self.mov(old, elem);
        self.ins(format!("mov.b32 {cur}, {prev}"));
        self.ins(format!("@{again} bra {head}"));
        self.label(&done);
        Ok(())
    }
}
