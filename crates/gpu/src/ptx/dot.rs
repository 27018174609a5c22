//! `dot`: tensor-core `mma.sync` for f16/bf16 (m16n8k16), tf32 (m16n8k8, and the
//! three-product tf32x3 split), int8 (m16n8k32), fp8 on sm_89+ (m16n8k32); an exact
//! FMA loop otherwise (f32 with `input_precision=ieee`, f64, small shapes).
//! Batched (rank-3) dots run the same instructions, each tile in one batch index.
//!
//! Operand registers are found by coordinate: fragment element i of a tile at
//! (b0, m0, k0) is the register whose layout coordinate is the fragment's (the first
//! bases of the operand layout) XOR the tile offset, looked up in the layout.

use super::emitter::{Emitter, Res};
use super::regs::{Reg, RegClass};
use crate::layout::linear::flatten;
use crate::layout::LinearLayout;
use crate::machine::mma::{mma_kind, MmaKind, MmaTile};
use crate::machine::vector::aligned_run;
use std::collections::HashMap;
use std::rc::Rc;
use trident_ir::{DType, InputPrecision, Layout, Op, OpKind, Value};

/// An mma operand still in shared memory, read by `ldmatrix` group by group where the
/// dot needs it (keeps only the current K slice of fragments live).
#[derive(Clone, Debug)]
pub struct LazyOperand {
    g_offs: Vec<u64>,
    ta: super::smem_addr::TileAddr,
    nmat: usize,
    kw: usize,
    trans: bool,
    signed: bool,
    /// The `ldmatrix` registers of each group issued so far.
    loaded: HashMap<usize, Vec<Reg>>,
    /// Their elements, where something needed them one by one.
    split: HashMap<usize, Vec<Reg>>,
}

impl LazyOperand {
    pub fn groups(&self) -> usize {
        self.g_offs.len()
    }
}

/// A dot operand: registers, or fragments to be read from shared memory.
enum Opnd {
    Regs(Vec<Reg>),
    Lazy(Box<LazyOperand>),
}

impl Opnd {
    /// The 32-bit register `ldmatrix` delivered holding elements `idx` (in order), if any:
    /// mma takes it as it is, with no unpacking and repacking.
    fn word(&mut self, e: &mut Emitter<'_>, idx: &[usize]) -> Option<Reg> {
        let Opnd::Lazy(lz) = self else { return None };
        let kw = lz.kw;
        if kw < 2
            || idx.len() != kw
            || !idx[0].is_multiple_of(kw)
            || idx.iter().enumerate().any(|(i, &x)| x != idx[0] + i)
        {
            return None;
        }
        let per = lz.nmat * kw;
        let g = idx[0] / per;
        let m = (idx[0] - g * per) / kw;
        Some(e.ldmatrix_words(lz, g)[m])
    }

    fn elem(&mut self, e: &mut Emitter<'_>, idx: usize) -> Reg {
        match self {
            Opnd::Regs(r) => r[idx],
            Opnd::Lazy(lz) => {
                let per = lz.nmat * lz.kw;
                let g = idx / per;
                let v = e.ldmatrix_group(lz, g);
                v[idx - g * per]
            }
        }
    }
}

impl Emitter<'_> {
    /// Whether `v`'s layout is an operand layout of an mma accumulator.
    pub(crate) fn is_mma_operand(&self, v: Value) -> bool {
        let Some(id) = self.f.ty(v).layout() else { return false };
        match self.f.layouts.get(id) {
            Some(Layout::DotOperand { parent, .. }) => matches!(self.f.layouts.get(*parent), Some(Layout::Mma { .. })),
            _ => false,
        }
    }

    /// Conversion into an mma operand through a swizzled shared-memory tile: vector
    /// stores from the source layout, `ldmatrix` (or `ldmatrix.trans`) into fragments.
    /// `None` when the layouts do not fit that scheme (the generic exchange is used).
    pub(crate) fn convert_to_mma_operand(
        &mut self,
        op: Op,
        regs: &[Reg],
        src: &Rc<LinearLayout>,
        dst: &Rc<LinearLayout>,
    ) -> Res<Option<Vec<Reg>>> {
        let f = self.f;
        let res = f.ops[op].results[0];
        let Some(Layout::DotOperand { op_idx, k_width, .. }) =
            f.ty(res).layout().and_then(|id| f.layouts.get(id)).cloned()
        else {
            return Ok(None);
        };
        let bytes = super::regs::mem_bytes(f.ty(res).elem());
        let Some(tile) = MmaTile::choose(src, dst, op_idx, k_width, bytes) else { return Ok(None) };
        let sl = tile.shared(&dst.shape).map_err(|e| self.err(format!("internal: {e}")))?;
        let off = self.smem_offset(op)?;
        let base = self.smem_base();
        let addr = self.new_reg(RegClass::B32);
        self.ins(format!("add.u32 {addr}, {base}, {off}"));
        self.store_tile(&sl, src, regs, bytes, addr, None)?;
        let signed = f.ty(res).elem().num().is_some_and(|d| d.is_signed_int());
        if self.smem_operand(op)? {
            // The tile stays where it is for the wgmma (its only user) to read: make the
            // stores visible to the tensor cores' proxy, then to every warp.
            self.ins("fence.proxy.async.shared::cta");
            self.cta_barrier();
            let so = super::wgmma::SmemOperand { addr, sl, tile, bytes, dst: dst.clone(), signed };
            self.smem_ops.insert(res, so);
            return Ok(Some(vec![]));
        }
        self.cta_barrier();
        Ok(Some(self.ldmatrix_tile(&sl, dst, &tile, bytes, addr, signed)?))
    }

    /// How a thread reaches its elements of a distributed tile `l` in a shared buffer at
    /// `addr` laid out by `sl` (shared by [`Emitter::store_tile`] and [`Emitter::load_tile`]).
    fn smem_access(&mut self, sl: &crate::layout::SharedLinear, l: &LinearLayout, bytes: u32, addr: Reg) -> SmemAccess {
        let offset = sl.offset_fn();
        let to_off = |v: &[u64]| -> Vec<u64> { v.iter().map(|&b| offset(b)).collect() };
        let thread = LinearLayout { shape: l.shape.clone(), reg: vec![], lane: to_off(&l.lane), warp: to_off(&l.warp) };
        let ta = self.tile_addr(&thread, bytes, addr, 0);
        let reg_offs = (0..l.num_regs() as u64).map(|r| offset(l.reg_part(r))).collect();
        let fast = sl
            .offset
            .first()
            .map_or(0, |&b| crate::layout::linear::unflatten(&sl.shape, b).iter().position(|&c| c != 0).unwrap_or(0));
        // Widest run of consecutive elements that stays consecutive in shared memory.
        let mut n = 1usize;
        while n < sl.offset.len() && sl.offset[n] == sl.offset[0] << n {
            n += 1;
        }
        SmemAccess { ta, reg_offs, fast, vec_elems: 1 << n }
    }

    /// Stores a distributed tile into a shared buffer at `addr` laid out by `sl`, `w`
    /// elements per instruction (as many consecutive elements of the fast dim as the
    /// layout and the swizzle allow). With `cp_async`, copies from the global pointers
    /// `regs` instead (masked lanes are zero-filled).
    pub(crate) fn store_tile(
        &mut self,
        sl: &crate::layout::SharedLinear,
        src: &Rc<LinearLayout>,
        regs: &[Reg],
        bytes: u32,
        addr: Reg,
        cp_async: Option<(Option<&[Reg]>, usize)>,
    ) -> Res<()> {
        let owner = self.owner_pred(src);
        if cp_async.is_none() && owner.is_none() && self.stmatrix_tile(sl, src, regs, bytes, addr) {
            return Ok(());
        }
        let SmemAccess { mut ta, reg_offs, fast, vec_elems } = self.smem_access(sl, src, bytes, addr);
        let w = match cp_async {
            Some((_, w)) => w,
            None => aligned_run(src, fast, (src.contig_regs(fast) as usize).min(vec_elems).min((16 / bytes) as usize)),
        };
        for g in 0..src.num_regs() / w {
            let o = reg_offs[g * w];
            let a = self.tile_elem_addr(&mut ta, o);
            if let Some((masks, _)) = cp_async {
                let n = w as u32 * bytes;
                let cache = if n == 16 { "cg" } else { "ca" };
                let mut mask = masks.map(|m| m[g * w]);
                if let Some(site) = self.copy_site.clone() {
                    // Out of bounds: copy nothing (the slot is zero-filled) and record it.
                    mask = Some(self.san_guard(&site, &regs[g * w].to_string(), g * w, w, bytes, mask)?);
                }
                let src_size = match mask {
                    Some(m) => {
                        let r = self.new_reg(RegClass::B32);
                        self.ins(format!("selp.u32 {r}, {n}, 0, {m}"));
                        r.to_string()
                    }
                    None => n.to_string(),
                };
                let p = owner.map(|p| format!("@{p} ")).unwrap_or_default();
                self.ins(format!("{p}cp.async.{cache}.shared.global [{a}], [{}], {n}, {src_size}", regs[g * w]));
                continue;
            }
            let words = self.pack_words(&regs[g * w..(g + 1) * w], bytes);
            let ty = match (words.len(), words[0].class) {
                (1, RegClass::B16) if bytes == 1 => "u8".to_string(),
                (1, c) => c.btype().to_string(),
                (n, c) => format!("v{n}.{}", c.btype()),
            };
            let val = if words.len() == 1 {
                words[0].to_string()
            } else {
                format!("{{{}}}", words.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", "))
            };
            let p = owner.map(|p| format!("@{p} ")).unwrap_or_default();
            self.ins(format!("{p}st.shared.{ty} [{a}], {val}"));
        }
        Ok(())
    }

    /// Stores a 16-bit tile with `stmatrix.x4` (sm_90's `STSM`: four 8x8 matrices, 16
    /// bytes per thread, where plain stores move 4) when the layout is an mma fragment
    /// in the buffer: within each group of four 32-bit registers, register `q` of lane `l`
    /// holds elements 2(l%4), 2(l%4)+1 of row l/4 of matrix q, and every row of every
    /// matrix is 16 contiguous, aligned bytes of the buffer (true of the mma and wgmma
    /// accumulators, and of linear layouts cut from them, in any 16-byte swizzle).
    /// Returns false, having emitted nothing, when the tile does not fit that scheme.
    fn stmatrix_tile(
        &mut self,
        sl: &crate::layout::SharedLinear,
        src: &Rc<LinearLayout>,
        regs: &[Reg],
        bytes: u32,
        addr: Reg,
    ) -> bool {
        if bytes != 2 || self.opts.target.capability() < 90 || src.lane.len() != 5 || !src.num_regs().is_multiple_of(8)
        {
            return false;
        }
        let offset = sl.offset_fn();
        let off = |b: u64| offset(b);
        // Each thread's pair is consecutive, the quad's four pairs one 16-byte row...
        if off(src.reg[0]) != 1 || off(src.lane[0]) != 2 || off(src.lane[1]) != 4 {
            return false;
        }
        // ...and every other basis moves by whole, distinct rows.
        let rows: Vec<u64> = src.reg[1..].iter().chain(&src.lane[2..]).chain(&src.warp).map(|&b| off(b)).collect();
        if rows.iter().any(|&o| o == 0 || o % 8 != 0) {
            return false;
        }
        // Lane 8q + s addresses row s (lanes 4s) of matrix q (registers 2q).
        let lane: Vec<u64> = (0..5).map(|b| if b < 3 { off(src.lane[b + 2]) } else { off(src.reg[b - 2]) }).collect();
        let thread = LinearLayout {
            shape: src.shape.clone(),
            reg: vec![],
            lane,
            warp: src.warp.iter().map(|&b| off(b)).collect(),
        };
        let mut ta = self.tile_addr(&thread, bytes, addr, 0);
        for g in 0..src.num_regs() / 8 {
            let a = self.tile_elem_addr(&mut ta, off(src.reg_part(8 * g as u64)));
            let words = self.pack_words(&regs[8 * g..8 * (g + 1)], bytes);
            let list = words.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", ");
            self.ins(format!("stmatrix.sync.aligned.m8n8.x4.shared.b16 [{a}], {{{list}}}"));
        }
        true
    }

    /// Reads a distributed tile (layout `dst`) from a shared buffer at `addr` laid out by
    /// `sl`, vectors as wide as the layout and the swizzle allow.
    pub(crate) fn load_tile(
        &mut self,
        sl: &crate::layout::SharedLinear,
        dst: &Rc<LinearLayout>,
        class: RegClass,
        bytes: u32,
        signed: bool,
        addr: Reg,
    ) -> Res<Vec<Reg>> {
        let SmemAccess { mut ta, reg_offs, fast, vec_elems } = self.smem_access(sl, dst, bytes, addr);
        let w = aligned_run(dst, fast, (dst.contig_regs(fast) as usize).min(vec_elems).min((16 / bytes) as usize));
        let mut out = Vec::with_capacity(dst.num_regs());
        for g in 0..dst.num_regs() / w {
            let o = reg_offs[g * w];
            let a = self.tile_elem_addr(&mut ta, o);
            if w == 1 {
                out.push(self.ld_shared_elem(class, bytes, &a, signed));
                continue;
            }
            // Words of up to 32 bits (64-bit elements: one word each), split into elements.
            let total = w as u32 * bytes;
            let (wc, nw) = if bytes == 8 {
                (RegClass::B64, w)
            } else if total <= 2 {
                (RegClass::B16, 1)
            } else {
                (RegClass::B32, (total / 4) as usize)
            };
            let words: Vec<Reg> = (0..nw).map(|_| self.new_reg(wc)).collect();
            let list = words.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", ");
            if nw == 1 {
                self.ins(format!("ld.shared.{} {list}, [{a}]", wc.btype()));
            } else {
                self.ins(format!("ld.shared.v{nw}.{} {{{list}}}, [{a}]", wc.btype()));
            }
            for wd in words {
                match (bytes, wd.class) {
                    (2, RegClass::B32) => {
                        let x = self.new_reg(RegClass::B16);
                        let y = self.new_reg(RegClass::B16);
                        self.ins(format!("mov.b32 {{{x}, {y}}}, {wd}"));
                        out.push(x);
                        out.push(y);
                    }
                    (1, _) => {
                        let w32 = if wd.class == RegClass::B16 {
                            let t = self.new_reg(RegClass::B32);
                            self.ins(format!("cvt.u32.u16 {t}, {wd}"));
                            t
                        } else {
                            wd
                        };
                        let bfe = if signed { "bfe.s32" } else { "bfe.u32" };
                        for j in 0..(wd.class.bits() / 8) {
                            let t = self.new_reg(RegClass::B32);
                            self.ins(format!("{bfe} {t}, {w32}, {}, 8", 8 * j));
                            let h = self.new_reg(RegClass::B16);
                            self.ins(format!("cvt.u16.u32 {h}, {t}"));
                            out.push(h);
                        }
                    }
                    _ => out.push(wd),
                }
            }
        }
        Ok(out)
    }

    /// Reads mma operand fragments (layout `dst`) from a tile at `addr` laid out by `sl`
    /// with `ldmatrix`: packed register P = 4g + q comes from matrix q of load g.
    pub(crate) fn ldmatrix_tile(
        &mut self,
        sl: &crate::layout::SharedLinear,
        dst: &Rc<LinearLayout>,
        tile: &MmaTile,
        bytes: u32,
        addr: Reg,
        signed: bool,
    ) -> Res<Vec<Reg>> {
        let mut lz = self.ldmatrix_setup(sl, dst, tile, bytes, addr, signed);
        let mut out = vec![];
        for g in 0..lz.groups() {
            out.extend(self.ldmatrix_group(&mut lz, g));
        }
        Ok(out)
    }

    /// Per-thread addressing of an `ldmatrix` read of a whole operand tile; the loads
    /// themselves are issued group by group ([`Emitter::ldmatrix_group`]).
    pub(crate) fn ldmatrix_setup(
        &mut self,
        sl: &crate::layout::SharedLinear,
        dst: &Rc<LinearLayout>,
        tile: &MmaTile,
        bytes: u32,
        addr: Reg,
        signed: bool,
    ) -> LazyOperand {
        let offset = sl.offset_fn();
        let to_off = |v: &[u64]| -> Vec<u64> { v.iter().map(|&b| offset(b)).collect() };
        let kw = tile.k_width as usize;
        let trans = tile.trans;
        let npacked = dst.num_regs() / kw;
        let nmat = npacked.min(4);
        // Lane l addresses row s = l % 8 of matrix q = (l / 8) % nmat.
        let mut lane_bases = vec![];
        for b in 0..5u32 {
            let (reg_idx, lane_idx): (u64, u64) = match b {
                0..=2 => {
                    let s = 1u64 << b;
                    if trans {
                        (s % 2, s / 2)
                    } else {
                        (0, 4 * s)
                    }
                }
                _ => {
                    let q = 1u64 << (b - 3);
                    if q as usize >= nmat {
                        (0, 0)
                    } else {
                        (q * kw as u64, 0)
                    }
                }
            };
            lane_bases.push(offset(dst.reg_part(reg_idx) ^ crate::layout::gf2::combine(&dst.lane, lane_idx)));
        }
        let ld_l =
            Rc::new(LinearLayout { shape: dst.shape.clone(), reg: vec![], lane: lane_bases, warp: to_off(&dst.warp) });
        let ta = self.tile_addr(&ld_l, bytes, addr, 0);
        let g_offs: Vec<u64> = (0..npacked / nmat).map(|g| offset(dst.reg_part((g * nmat * kw) as u64))).collect();
        LazyOperand { g_offs, ta, nmat, kw, trans, signed, loaded: HashMap::new(), split: HashMap::new() }
    }

    /// Issues `ldmatrix` group `g` (once) and returns its 32-bit registers (one per matrix).
    pub(crate) fn ldmatrix_words(&mut self, lz: &mut LazyOperand, g: usize) -> Vec<Reg> {
        if let Some(v) = lz.loaded.get(&g) {
            return v.clone();
        }
        let o = lz.g_offs[g];
        let a = self.tile_elem_addr(&mut lz.ta, o);
        let mats: Vec<Reg> = (0..lz.nmat).map(|_| self.new_reg(RegClass::B32)).collect();
        let list = mats.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", ");
        let t = if lz.trans { ".trans" } else { "" };
        self.ins(format!("ldmatrix.sync.aligned.m8n8.x{}{t}.shared.b16 {{{list}}}, [{a}]", lz.nmat));
        lz.loaded.insert(g, mats.clone());
        mats
    }

    /// The elements of `ldmatrix` group `g` (its registers split into `k_width` elements).
    pub(crate) fn ldmatrix_group(&mut self, lz: &mut LazyOperand, g: usize) -> Vec<Reg> {
        if let Some(v) = lz.split.get(&g) {
            return v.clone();
        }
        let mats = self.ldmatrix_words(lz, g);
        let mut out = vec![];
        for m in mats {
            match lz.kw {
                1 => out.push(m),
                2 => {
                    let a = self.new_reg(RegClass::B16);
                    let b = self.new_reg(RegClass::B16);
                    self.ins(format!("mov.b32 {{{a}, {b}}}, {m}"));
                    out.push(a);
                    out.push(b);
                }
                _ => {
                    for j in 0..4 {
                        let t = self.new_reg(RegClass::B32);
                        self.ins(format!("bfe.{} {t}, {m}, {}, 8", if lz.signed { "s32" } else { "u32" }, 8 * j));
                        let h = self.new_reg(RegClass::B16);
                        self.ins(format!("cvt.u16.u32 {h}, {t}"));
                        out.push(h);
                    }
                }
            }
        }
        lz.split.insert(g, out.clone());
        out
    }

    /// Packs `elems` (consecutive elements of `bytes` each) into as few words as a
    /// shared store can take (16-bit for one or two bytes, else 32-bit words).
    fn pack_words(&mut self, elems: &[Reg], bytes: u32) -> Vec<Reg> {
        let total = elems.len() as u32 * bytes;
        if bytes == 4 || bytes == 8 || total <= 2 && (elems.len() == 1) {
            return elems.to_vec();
        }
        let per = (4 / bytes) as usize;
        if total < 4 {
            // Two bytes: one 16-bit word.
            let w = self.new_reg(RegClass::B32);
            self.ins(format!("mov.b32 {w}, 0"));
            for (j, &h) in elems.iter().enumerate() {
                let t = self.new_reg(RegClass::B32);
                self.ins(format!("cvt.u32.u16 {t}, {h}"));
                self.ins(format!("bfi.b32 {w}, {t}, {w}, {}, 8", 8 * j));
            }
            let h = self.new_reg(RegClass::B16);
            self.ins(format!("cvt.u16.u32 {h}, {w}"));
            return vec![h];
        }
        elems
            .chunks(per)
            .map(|c| {
                let w = self.new_reg(RegClass::B32);
                if bytes == 2 {
                    self.ins(format!("mov.b32 {w}, {{{}, {}}}", c[0], c[1]));
                } else {
                    self.ins(format!("mov.b32 {w}, 0"));
                    for (j, &h) in c.iter().enumerate() {
                        let t = self.new_reg(RegClass::B32);
                        self.ins(format!("cvt.u32.u16 {t}, {h}"));
                        self.ins(format!("bfi.b32 {w}, {t}, {w}, {}, 8", 8 * j));
                    }
                }
                w
            })
            .collect()
    }

    /// The shared layout of a buffer (or a slot view of one).
    fn buffer_layout(&self, view: Value) -> Res<crate::layout::SharedLinear> {
        let vt = self.f.ty(view);
        let id = vt.layout().ok_or_else(|| self.err("buffer without layout"))?;
        crate::layout::shared_of(&self.f.layouts, id, vt.shape()).map_err(|e| self.err(format!("internal: {e}")))
    }

    pub(crate) fn emit_local(&mut self, op: Op) -> Res<()> {
        let f = self.f;
        let d = &f.ops[op];
        match &d.kind {
            OpKind::LocalAlloc => {
                if !d.operands.is_empty() {
                    return Err(self.err("internal: initialised local_alloc is not supported"));
                }
                let off = self.smem_offset(op)?;
                let base = self.smem_base();
                let r = self.new_reg(RegClass::B32);
                self.ins(format!("add.u32 {r}, {base}, {off}"));
                self.set(d.results[0], vec![r]);
            }
            OpKind::MemDescIndex => {
                let buf = self.reg1(d.operands[0])?;
                let idx = self.reg1(d.operands[1])?;
                let t = f.ty(d.results[0]);
                let stage = t.numel() * super::regs::mem_bytes(t.elem()) as u64;
                let r = self.new_reg(RegClass::B32);
                self.ins(format!("mad.lo.u32 {r}, {idx}, {stage}, {buf}"));
                self.set(d.results[0], vec![r]);
            }
            // The same address: the view only renames the dims (its layout says how).
            OpKind::MemDescTrans { .. } => {
                let buf = self.reg1(d.operands[0])?;
                self.set(d.results[0], vec![buf]);
            }
            OpKind::AsyncCommitGroup => self.ins("cp.async.commit_group"),
            OpKind::AsyncWait { pending } => {
                self.ins(format!("cp.async.wait_group {pending}"));
                if self.opts.target.has_wgmma() {
                    // The landed tiles may be read by wgmma (the async proxy): order this
                    // thread's copies before the barrier that publishes them.
                    self.ins("fence.proxy.async.shared::cta");
                }
            }
            OpKind::AsyncCopy => {
                let view = d.operands[0];
                let ptr = d.operands[1];
                let mask = d.operands.get(2).copied();
                let addr = self.reg1(view)?;
                let vt = f.ty(view);
                let sl = self.buffer_layout(view)?;
                let l = self.ll(ptr)?.ok_or_else(|| self.err("async_copy of a scalar"))?;
                let bytes = super::regs::mem_bytes(vt.elem());
                let w = self.vector_width(ptr, mask, &l, bytes);
                let ptrs = self.regs(ptr)?;
                let masks = match mask {
                    Some(m) => Some(self.regs(m)?),
                    None => None,
                };
                let site = self.san_site(op, ptr, super::sanitize::SiteAccess::Load)?;
                if matches!(w as u32 * bytes, 4 | 8 | 16) {
                    self.copy_site = site;
                    let r = self.store_tile(&sl, &l, &ptrs, bytes, addr, Some((masks.as_deref(), w)));
                    self.copy_site = None;
                    r?;
                } else {
                    // Too narrow for cp.async: load (zero-filling masked lanes) and store synchronously.
                    let class = super::regs::class_of(vt.elem());
                    let mut vals = vec![];
                    for (i, &p) in ptrs.iter().enumerate() {
                        let r = self.new_reg(class);
                        self.ins(format!("mov.{} {r}, 0", class.btype()));
                        let mut pred = masks.as_ref().map(|m| m[i]);
                        if let Some(s) = &site {
                            pred = Some(self.san_guard(s, &p.to_string(), i, 1, bytes, pred)?);
                        }
                        let pred = pred.map(|p| format!("@{p} ")).unwrap_or_default();
                        let ty = match bytes {
                            1 => "u8",
                            2 => "b16",
                            4 => "b32",
                            _ => "b64",
                        };
                        self.ins(format!("{pred}ld.global.{ty} {r}, [{p}]"));
                        vals.push(r);
                    }
                    self.store_tile(&sl, &l, &vals, bytes, addr, None)?;
                }
            }
            OpKind::LocalLoad => {
                let view = d.operands[0];
                let res = d.results[0];
                let addr = self.reg1(view)?;
                let vt = f.ty(view);
                let vid = vt.layout().ok_or_else(|| self.err("buffer without layout"))?;
                let vl = f.layouts.get(vid).cloned().ok_or_else(|| self.err("buffer without layout"))?;
                let sl = crate::layout::shared_of(&f.layouts, vid, vt.shape())
                    .map_err(|e| self.err(format!("internal: {e}")))?;
                let dst = self.ll(res)?.ok_or_else(|| self.err("local_load of a scalar"))?;
                let bytes = super::regs::mem_bytes(vt.elem());
                if let Some(Layout::DotOperand { op_idx, k_width, .. }) =
                    f.ty(res).layout().and_then(|id| f.layouts.get(id))
                {
                    if let Some(tile) = MmaTile::from_shared(&vl, *k_width, *op_idx) {
                        let signed = vt.elem().num().is_some_and(|t| t.is_signed_int());
                        if self.smem_operand(op)? {
                            let so = super::wgmma::SmemOperand { addr, sl, tile, bytes, dst, signed };
                            self.smem_ops.insert(res, so);
                            self.set(res, vec![]);
                            return Ok(());
                        }
                        let users: Vec<Op> = self.users_of(res);
                        if users.len() == 1 && matches!(f.ops[users[0]].kind, OpKind::Dot { .. }) {
                            let lz = self.ldmatrix_setup(&sl, &dst, &tile, bytes, addr, signed);
                            self.lazy.insert(res, lz);
                            self.set(res, vec![]);
                            return Ok(());
                        }
                        let out = self.ldmatrix_tile(&sl, &dst, &tile, bytes, addr, signed)?;
                        self.set(res, out);
                        return Ok(());
                    }
                }
                // Any other layout: one element at a time.
                let offset = sl.offset_fn();
                let lt = Rc::new(LinearLayout {
                    shape: dst.shape.clone(),
                    reg: vec![],
                    lane: dst.lane.iter().map(|&b| offset(b)).collect(),
                    warp: dst.warp.iter().map(|&b| offset(b)).collect(),
                });
                let mut ta = self.tile_addr(&lt, bytes, addr, 0);
                let class = super::regs::class_of(vt.elem());
                let signed_byte = vt.elem().num().is_some_and(|t| t.is_signed_int());
                let mut out = vec![];
                for r in 0..dst.num_regs() as u64 {
                    let o = offset(dst.reg_part(r));
                    let a = self.tile_elem_addr(&mut ta, o);
                    out.push(self.ld_shared_elem(class, bytes, &a, signed_byte));
                }
                self.set(res, out);
            }
            OpKind::LocalStore => {
                // Each thread writes its registers of the value into the buffer's layout
                // (vectorized where the layouts allow; replicated elements by their owner).
                let (view, val) = (d.operands[0], d.operands[1]);
                let addr = self.reg1(view)?;
                let vt = f.ty(view);
                let sl = self.buffer_layout(view)?;
                let l = self.ll(val)?.ok_or_else(|| self.err("local_store of a scalar"))?;
                let regs = self.regs(val)?;
                self.store_tile(&sl, &l, &regs, super::regs::mem_bytes(vt.elem()), addr, None)?;
            }
            _ => return Err(self.err("internal: not a shared-memory op")),
        }
        Ok(())
    }

    pub(crate) fn emit_dot(&mut self, op: Op) -> Res<()> {
        let f = self.f;
        let d = &f.ops[op];
        let OpKind::Dot { precision, .. } = d.kind else { unreachable!() };
        let (a, b, c) = (d.operands[0], d.operands[1], d.operands[2]);
        let res = d.results[0];
        let at = f.ty(a).elem().num().ok_or_else(|| self.err("dot of pointers"))?;
        let bt = f.ty(b).elem().num().ok_or_else(|| self.err("dot of pointers"))?;
        let ct = f.ty(c).elem().num().ok_or_else(|| self.err("dot of pointers"))?;
        let la = self.ll(a)?.ok_or_else(|| self.err("dot of scalars"))?;
        let lb = self.ll(b)?.ok_or_else(|| self.err("dot of scalars"))?;
        let lc = self.ll(res)?.ok_or_else(|| self.err("dot of scalars"))?;
        let acc = self.regs(c)?;
        let a_smem = self.smem_ops.remove(&a);
        let b_smem = self.smem_ops.remove(&b);
        if let Some(bs) = &b_smem {
            let wa = match &a_smem {
                Some(s) => super::wgmma::WgA::Smem(s.clone()),
                None => super::wgmma::WgA::Regs(self.regs(a)?),
            };
            if ct == DType::F32 {
                let in_place = self.accumulates_in_place(op);
                if let Some(out) = self.wgmma_dot(at, &la, &wa, bs, &lc, &acc, in_place)? {
                    self.set(res, out);
                    self.pending_wgmma.push(res);
                    if in_place {
                        self.in_place_wgmma.insert(res);
                    }
                    return Ok(());
                }
            }
        }
        // No wgmma: operands left in shared tiles are read with ldmatrix for mma.sync.
        let from_smem = |e: &mut Self, s: Option<super::wgmma::SmemOperand>, v: Value| -> Res<Option<LazyOperand>> {
            Ok(match s {
                Some(s) => Some(e.ldmatrix_setup(&s.sl, &s.dst, &s.tile, s.bytes, s.addr, s.signed)),
                None => e.lazy.remove(&v),
            })
        };
        let a_lz = from_smem(self, a_smem, a)?;
        let b_lz = from_smem(self, b_smem, b)?;
        let ar = match a_lz {
            Some(lz) => Opnd::Lazy(Box::new(lz)),
            None => Opnd::Regs(self.regs(a)?),
        };
        let br = match b_lz {
            Some(lz) => Opnd::Lazy(Box::new(lz)),
            None => Opnd::Regs(self.regs(b)?),
        };
        let is_mma = matches!(f.ty(res).layout().and_then(|id| f.layouts.get(id)), Some(Layout::Mma { .. }));
        let out = if is_mma {
            let kind = mma_kind(at, bt, precision, self.opts.target.capability())
                .ok_or_else(|| self.err(format!("internal: no tensor-core instruction for {at} x {bt}")))?;
            if at.is_fp8() {
                // fp8 mma.sync needs PTX ISA 8.4.
                self.ptx_version = self.ptx_version.max(84);
            }
            self.mma(&kind, precision, (&la, ar), (&lb, br), &lc, &acc, ct)?
        } else {
            let (Opnd::Regs(ar), Opnd::Regs(br)) = (ar, br) else {
                return Err(self.err("internal: FMA dot with operands in shared memory"));
            };
            self.fma_dot((&la, &ar, at), (&lb, &br, bt), &lc, &acc, ct)?
        };
        self.set(res, out);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn mma(
        &mut self,
        kind: &MmaKind,
        precision: InputPrecision,
        (la, mut ar): (&Rc<LinearLayout>, Opnd),
        (lb, mut br): (&Rc<LinearLayout>, Opnd),
        lc: &Rc<LinearLayout>,
        acc: &[Reg],
        ct: DType,
    ) -> Res<Vec<Reg>> {
        // Rank 2, or rank 3 with a leading batch dim: each instruction tile sits in one
        // batch index, and its operand fragments are found in that batch index of A and B.
        let rank = lc.rank();
        if !(2..=3).contains(&rank) || la.rank() != rank || lb.rank() != rank {
            return Err(self.err("internal: tensor-core dot needs rank-2 or batched rank-3 operands"));
        }
        let (m, n) = (lc.shape[rank - 2], lc.shape[rank - 1]);
        let kdim = la.shape[rank - 1];
        if m < 16 || n < 8 || kdim < kind.k {
            return Err(self.err(format!("internal: dot {m}x{n}x{kdim} is too small for mma")));
        }
        // An f16 result of f16 operands accumulates in f16 (`out_dtype=tl.float16`): the
        // instruction's f16 form, two halves per register, rounded once per instruction.
        let f16_acc = ct == DType::F16 && kind.ab == "f16.f16";
        let acc_name = if f16_acc { "f16" } else { kind.acc };
        let want_acc = match kind.acc {
            "s32" => DType::I32,
            _ if f16_acc => DType::F16,
            _ => DType::F32,
        };
        // Accumulator in the instruction's type.
        let mut cur: Vec<Reg> = Vec::with_capacity(acc.len());
        for &r in acc {
            cur.push(self.convert(ct, want_acc, trident_ir::Rounding::Rtne, r)?);
        }
        let a_look = la.reg_lookup();
        let b_look = lb.reg_lookup();
        let a_frag = 4 * kind.k_width as usize;
        let b_frag = 2 * kind.k_width as usize;
        // Fragments by (batch, row or column, k) of their tile's origin.
        let mut a_cache: HashMap<(u32, u32, u32), Vec<Vec<Reg>>> = HashMap::new();
        let mut b_cache: HashMap<(u32, u32, u32), Vec<Vec<Reg>>> = HashMap::new();
        let tiles = lc.num_regs() / 4;
        // The coordinate of a tile origin in an operand: (batch, row, column), batch
        // omitted at rank 2.
        let at = |bt: u32, r: u32, c: u32| -> Vec<u32> {
            if rank == 3 {
                vec![bt, r, c]
            } else {
                vec![r, c]
            }
        };
        // K outermost: only one K slice of operand fragments is live at a time.
        let mut k0 = 0;
        while k0 < kdim {
            for t in 0..tiles {
                let base = lc.coords((t as u64) << 2, 0, 0);
                let (b0, m0, n0) = (if rank == 3 { base[0] } else { 0 }, base[rank - 2], base[rank - 1]);
                let cregs: Vec<usize> = (0..4).map(|i| 4 * t + i).collect();
                let key_a = (b0, m0, k0);
                if let std::collections::hash_map::Entry::Vacant(slot) = a_cache.entry(key_a) {
                    let off = flatten(&la.shape, &at(b0, m0, k0));
                    let mut idx = vec![];
                    for i in 0..a_frag {
                        let c = la.reg_part(i as u64) ^ off;
                        let r = *a_look.get(&c).ok_or_else(|| self.err("internal: A fragment not in registers"))?;
                        idx.push(r as usize);
                    }
                    let packed = self.fragment(kind, precision, &mut ar, &idx)?;
                    slot.insert(packed);
                }
                let key_b = (b0, k0, n0);
                if let std::collections::hash_map::Entry::Vacant(slot) = b_cache.entry(key_b) {
                    let off = flatten(&lb.shape, &at(b0, k0, n0));
                    let mut idx = vec![];
                    for i in 0..b_frag {
                        let c = lb.reg_part(i as u64) ^ off;
                        let r = *b_look.get(&c).ok_or_else(|| self.err("internal: B fragment not in registers"))?;
                        idx.push(r as usize);
                    }
                    let packed = self.fragment(kind, precision, &mut br, &idx)?;
                    slot.insert(packed);
                }
                let pa = a_cache[&key_a].clone();
                let pb = b_cache[&key_b].clone();
                // tf32x3: hi*hi + hi*lo + lo*hi, small products first.
                let products: Vec<(usize, usize)> =
                    if pa.len() == 2 { vec![(1, 0), (0, 1), (0, 0)] } else { vec![(0, 0)] };
                for (ia, ib) in products {
                    let list = |v: &[Reg]| v.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", ");
                    let mut cs: Vec<Reg> = cregs.iter().map(|&i| cur[i]).collect();
                    if f16_acc {
                        // (c0, c1) and (c2, c3) share a register: the same elements per thread
                        // as the f32 form's four.
                        cs = cs.chunks(2).map(|h| self.pack_halves(h[0], h[1])).collect();
                    }
                    let dregs: Vec<Reg> = (0..cs.len()).map(|_| self.new_reg(RegClass::B32)).collect();
                    self.ins(format!(
                        "mma.sync.aligned.m16n8k{}.row.col.{}.{}.{} {{{}}}, {{{}}}, {{{}}}, {{{}}}",
                        kind.k,
                        acc_name,
                        kind.ab,
                        acc_name,
                        list(&dregs),
                        list(&pa[ia]),
                        list(&pb[ib]),
                        list(&cs)
                    ));
                    let ds: Vec<Reg> =
                        if f16_acc { dregs.iter().flat_map(|&d| self.unpack_halves(d)).collect() } else { dregs };
                    for (j, &i) in cregs.iter().enumerate() {
                        cur[i] = ds[j];
                    }
                }
            }
            k0 += kind.k;
        }
        let mut out = Vec::with_capacity(cur.len());
        for r in cur {
            out.push(self.convert(want_acc, ct, trident_ir::Rounding::Rtne, r)?);
        }
        Ok(out)
    }

    /// Two 16-bit registers as one 32-bit register (`lo` in the low half).
    fn pack_halves(&mut self, lo: Reg, hi: Reg) -> Reg {
        let r = self.new_reg(RegClass::B32);
        self.ins(format!("mov.b32 {r}, {{{lo}, {hi}}}"));
        r
    }

    /// A 32-bit register's halves as two 16-bit registers, low first.
    fn unpack_halves(&mut self, r: Reg) -> [Reg; 2] {
        let (lo, hi) = (self.new_reg(RegClass::B16), self.new_reg(RegClass::B16));
        self.ins(format!("mov.b32 {{{lo}, {hi}}}, {r}"));
        [lo, hi]
    }

    /// The 32-bit registers of an mma fragment made of operand elements `idx`: `ldmatrix`
    /// registers as they are where they hold the right elements, else packed elements.
    fn fragment(
        &mut self,
        kind: &MmaKind,
        precision: InputPrecision,
        o: &mut Opnd,
        idx: &[usize],
    ) -> Res<Vec<Vec<Reg>>> {
        if !kind.tf32 {
            let kw = kind.k_width as usize;
            let mut words = vec![];
            for chunk in idx.chunks(kw) {
                match o.word(self, chunk) {
                    Some(w) => words.push(w),
                    None => {
                        let elems: Vec<Reg> = chunk.iter().map(|&i| o.elem(self, i)).collect();
                        words.extend(self.pack_operand(kind, precision, &elems)?.remove(0));
                    }
                }
            }
            return Ok(vec![words]);
        }
        let elems: Vec<Reg> = idx.iter().map(|&i| o.elem(self, i)).collect();
        self.pack_operand(kind, precision, &elems)
    }

    /// Packs fragment elements into the 32-bit registers an `mma` takes (one set, or
    /// two for tf32x3: the tf32 high parts and the tf32 rounding residuals).
    fn pack_operand(&mut self, kind: &MmaKind, precision: InputPrecision, elems: &[Reg]) -> Res<Vec<Vec<Reg>>> {
        if kind.tf32 {
            let mut hi = vec![];
            let mut lo = vec![];
            for &e in elems {
                let h = self.new_reg(RegClass::B32);
                self.ins(format!("cvt.rna.tf32.f32 {h}, {e}"));
                hi.push(h);
                if precision == InputPrecision::Tf32x3 {
                    let r = self.new_reg(RegClass::B32);
                    self.ins(format!("sub.f32 {r}, {e}, {h}"));
                    let l = self.new_reg(RegClass::B32);
                    self.ins(format!("cvt.rna.tf32.f32 {l}, {r}"));
                    lo.push(l);
                }
            }
            return Ok(if lo.is_empty() { vec![hi] } else { vec![hi, lo] });
        }
        let per = kind.k_width as usize;
        let mut out = vec![];
        for chunk in elems.chunks(per) {
            let w = self.new_reg(RegClass::B32);
            if per == 2 {
                self.ins(format!("mov.b32 {w}, {{{}, {}}}", chunk[0], chunk[1]));
            } else {
                self.ins(format!("mov.b32 {w}, 0"));
                for (j, &h) in chunk.iter().enumerate() {
                    let t = self.new_reg(RegClass::B32);
                    self.ins(format!("cvt.u32.u16 {t}, {h}"));
                    self.ins(format!("bfi.b32 {w}, {t}, {w}, {}, 8", 8 * j));
                }
            }
            out.push(w);
        }
        Ok(vec![out])
    }

    /// The FMA dot: every result element accumulates its K products in order.
    fn fma_dot(
        &mut self,
        (la, ar, at): (&Rc<LinearLayout>, &[Reg], DType),
        (lb, br, bt): (&Rc<LinearLayout>, &[Reg], DType),
        lc: &Rc<LinearLayout>,
        acc: &[Reg],
        ct: DType,
    ) -> Res<Vec<Reg>> {
        let rank = lc.rank();
        let kdim = la.shape[rank - 1];
        let a_look = la.reg_lookup();
        let b_look = lb.reg_lookup();
        let work = if ct.is_int() {
            DType::I32
        } else if ct == DType::F64 {
            DType::F64
        } else {
            DType::F32
        };
        let mut a_conv: HashMap<usize, Reg> = HashMap::new();
        let mut b_conv: HashMap<usize, Reg> = HashMap::new();
        let mut out = vec![];
        for (r, &acc_r) in acc.iter().enumerate() {
            let c = lc.coords(r as u64, 0, 0);
            let mut cur = self.convert(ct, work, trident_ir::Rounding::Rtne, acc_r)?;
            for k in 0..kdim {
                let mut ac: Vec<u32> = c.to_vec();
                ac[rank - 1] = k;
                let mut bc: Vec<u32> = c.to_vec();
                bc[rank - 2] = k;
                let ai = *a_look
                    .get(&flatten(&la.shape, &ac))
                    .ok_or_else(|| self.err("internal: dot operand A element not in this thread"))?
                    as usize;
                let bi = *b_look
                    .get(&flatten(&lb.shape, &bc))
                    .ok_or_else(|| self.err("internal: dot operand B element not in this thread"))?
                    as usize;
                let x = match a_conv.get(&ai) {
                    Some(&x) => x,
                    None => {
                        let x = self.convert(at, work, trident_ir::Rounding::Rtne, ar[ai])?;
                        a_conv.insert(ai, x);
                        x
                    }
                };
                let y = match b_conv.get(&bi) {
                    Some(&y) => y,
                    None => {
                        let y = self.convert(bt, work, trident_ir::Rounding::Rtne, br[bi])?;
                        b_conv.insert(bi, y);
                        y
                    }
                };
                cur = self.fma(work, x, y, cur)?;
            }
            out.push(self.convert(work, ct, trident_ir::Rounding::Rtne, cur)?);
        }
        Ok(out)
    }
}

/// A thread's view of a tile in shared memory (see [`Emitter::smem_access`]).
struct SmemAccess {
    /// The thread's base addresses.
    ta: super::smem_addr::TileAddr,
    /// Element offset in the buffer of each register's element, relative to the thread's.
    reg_offs: Vec<u64>,
    /// The buffer's fastest-varying dim.
    fast: usize,
    /// How many consecutive elements of `fast` stay consecutive in memory.
    vec_elems: usize,
}
