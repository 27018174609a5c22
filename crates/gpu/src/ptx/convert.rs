//! Layout conversions and other data exchanges between threads.
//!
//! A conversion whose source and destination layouts agree on lanes and warps is a
//! renaming of registers. Anything else goes through shared memory: every owner
//! thread writes its elements at their row-major index, a barrier, and every thread
//! reads the elements its destination layout gives it. Because layouts are linear, a
//! thread's address is its thread part (computed once) XOR a per-register constant.

use super::emitter::{Emitter, Res};
use super::regs::{Reg, RegClass};
use crate::layout::linear::{flatten, unflatten};
use crate::layout::{ConversionKind, LinearLayout};
use crate::machine::regs::scratch_elem_bytes;
use crate::machine::scratch::reg_map;
use std::rc::Rc;
use trident_ir::{Op, OpKind};

/// A source of an exchange: its registers, layout, and where its row-major index 0 sits in the buffer.
pub struct ExSrc {
    pub regs: Vec<Reg>,
    pub layout: Rc<LinearLayout>,
    pub base: u64,
}

/// A destination: its layout, the linear map from its row-major index to a buffer index,
/// and a constant added to that index (whose bits the map never sets).
pub struct ExDst {
    pub layout: Rc<LinearLayout>,
    pub index: Box<dyn Fn(u64) -> u64>,
    pub offset: u64,
}

impl Emitter<'_> {
    /// The thread's part of the flat coordinate of a layout (lane and warp bases XORed), in the prologue.
    pub fn thread_flat(&mut self, l: &Rc<LinearLayout>) -> Reg {
        self.thread_bits(l, u64::MAX, 0)
    }

    pub(crate) fn emit_gpu_op(&mut self, op: Op) -> Res<()> {
        let d = &self.f.ops[op];
        match &d.kind {
            OpKind::ConvertLayout => self.emit_convert(op),
            OpKind::Barrier => {
                self.cta_barrier();
                Ok(())
            }
            OpKind::LocalAlloc
            | OpKind::LocalLoad
            | OpKind::LocalStore
            | OpKind::MemDescIndex
            | OpKind::MemDescTrans { .. }
            | OpKind::AsyncCopy
            | OpKind::AsyncCommitGroup
            | OpKind::AsyncWait { .. } => self.emit_local(op),
            OpKind::TmaMap { .. }
            | OpKind::TmaCopy
            | OpKind::TmaStore
            | OpKind::TmaStoreWait
            | OpKind::MbarrierInit { .. }
            | OpKind::MbarrierWait
            | OpKind::MbarrierArrive => self.emit_tma_op(op),
            OpKind::WarpSpecialize { producer_warps, producer_regs, consumer_regs } => {
                self.emit_warp_specialize(op, *producer_warps, *producer_regs, *consumer_regs)
            }
            OpKind::PingpongWait { only } => self.emit_pingpong(false, *only),
            OpKind::PingpongPass { only } => self.emit_pingpong(true, *only),
            other => Err(self.err(format!("internal: `{}` cannot be emitted", other.name()))),
        }
    }

    fn emit_convert(&mut self, op: Op) -> Res<()> {
        let d = &self.f.ops[op];
        let (src, res) = (d.operands[0], d.results[0]);
        let regs = self.regs(src)?;
        let (Some(sl), Some(dl)) = (self.ll(src)?, self.ll(res)?) else {
            // Scalars have no layout.
            self.set(res, regs);
            return Ok(());
        };
        match sl.conversion_to(&dl) {
            ConversionKind::Identity => {
                self.set(res, regs);
                Ok(())
            }
            ConversionKind::RegisterPermute => {
                let map = reg_map(&sl, &dl, &|c| c).ok_or_else(|| self.err("internal: register permutation"))?;
                self.set(res, map.iter().map(|&i| regs[i as usize]).collect());
                Ok(())
            }
            _ => {
                if self.is_mma_operand(res) {
                    if let Some(out) = self.convert_to_mma_operand(op, &regs, &sl, &dl)? {
                        self.set(res, out);
                        return Ok(());
                    }
                }
                if let Some(out) = self.convert_swizzled(op, &regs, &sl, &dl)? {
                    self.set(res, out);
                    return Ok(());
                }
                let out = self.exchange(
                    op,
                    &[ExSrc { regs, layout: sl, base: 0 }],
                    vec![ExDst { layout: dl, index: Box::new(|c| c), offset: 0 }],
                )?;
                self.set(res, out.into_iter().next().unwrap_or_default());
                Ok(())
            }
        }
    }

    /// A conversion through a swizzled row-major tile: vector stores and loads as wide as
    /// both layouts allow, XOR swizzle of 16-byte groups against bank conflicts.
    fn convert_swizzled(
        &mut self,
        op: Op,
        regs: &[Reg],
        src: &Rc<LinearLayout>,
        dst: &Rc<LinearLayout>,
    ) -> Res<Option<Vec<Reg>>> {
        let f = self.f;
        let elem = f.ty(f.ops[op].results[0]).elem();
        let class = super::regs::class_of(elem);
        if class == RegClass::Pred || src.rank() < 2 {
            return Ok(None);
        }
        let bytes = super::regs::mem_bytes(elem);
        let rank = src.rank();
        let row_bytes = src.shape[rank - 1] * bytes;
        let vec = (16 / bytes).min(src.shape[rank - 1]).max(1);
        let (per_phase, max_phase) =
            if row_bytes >= 16 { ((128 / row_bytes).max(1), (row_bytes / 16).clamp(1, 8)) } else { (1, 1) };
        let order: Vec<u32> = (0..rank as u32).rev().collect();
        let sl = crate::layout::build::shared(&src.shape, vec, per_phase, max_phase, &order)
            .map_err(|e| self.err(format!("internal: {e}")))?;
        let off = self.smem_offset(op)?;
        let base = self.smem_base();
        let addr = self.new_reg(RegClass::B32);
        self.ins(format!("add.u32 {addr}, {base}, {off}"));
        self.store_tile(&sl, src, regs, bytes, addr, None)?;
        self.cta_barrier();
        let signed = elem.num().is_some_and(|t| t.is_signed_int());
        Ok(Some(self.load_tile(&sl, dst, class, bytes, signed, addr)?))
    }

    /// Moves elements of `srcs` into `dsts` through shared memory at the op's scratch offset.
    pub fn exchange(&mut self, op: Op, srcs: &[ExSrc], dsts: Vec<ExDst>) -> Res<Vec<Vec<Reg>>> {
        let class = srcs.first().and_then(|s| s.regs.first()).map_or(RegClass::B32, |r| r.class);
        let eb = scratch_elem_bytes(class) as u64;
        let off = self.smem_offset(op)? as u64;
        let base = self.smem_base();
        for s in srcs {
            let l = s.layout.clone();
            let owner = self.owner_pred(&l);
            let mut ta = self.tile_addr(&l, eb as u32, base, off + s.base * eb);
            for r in 0..l.num_regs() {
                let c = l.reg_part(r as u64);
                let addr = self.tile_elem_addr(&mut ta, c);
                self.st_shared(owner, &addr, s.regs[r]);
            }
        }
        self.cta_barrier();
        let mut outs = vec![];
        for dst in dsts {
            let l = dst.layout.clone();
            let idx = &dst.index;
            let lt = Rc::new(LinearLayout {
                shape: l.shape.clone(),
                reg: vec![],
                lane: l.lane.iter().map(|&b| idx(b)).collect(),
                warp: l.warp.iter().map(|&b| idx(b)).collect(),
            });
            let mapped_regs: Vec<u64> = (0..l.num_regs() as u64).map(|r| idx(l.reg_part(r))).collect();
            let mut ta = self.tile_addr(&lt, eb as u32, base, off + dst.offset * eb);
            let mut regs = vec![];
            for &c in &mapped_regs {
                let addr = self.tile_elem_addr(&mut ta, c);
                regs.push(self.ld_shared(class, &addr));
            }
            outs.push(regs);
        }
        Ok(outs)
    }

    pub(crate) fn emit_join_split_cat(&mut self, op: Op) -> Res<()> {
        let f = self.f;
        let d = &f.ops[op];
        match &d.kind {
            OpKind::Join => {
                let (a, b) = (d.operands[0], d.operands[1]);
                let la = self.ll(a)?.ok_or_else(|| self.err("join of scalars"))?;
                let lr = self.ll(d.results[0])?.ok_or_else(|| self.err("join result"))?;
                let n = la.numel();
                let rshape = lr.shape.clone();
                let srcs = [
                    ExSrc { regs: self.regs(a)?, layout: la.clone(), base: 0 },
                    ExSrc { regs: self.regs(b)?, layout: self.ll(b)?.unwrap_or(la.clone()), base: n },
                ];
                // (..., j) → j * n + row-major index of (...): a bit permutation, hence linear.
                let index = move |c: u64| -> u64 {
                    let v = unflatten(&rshape, c);
                    let j = v[v.len() - 1] as u64;
                    (j * n) | (c >> 1)
                };
                let out = self.exchange(op, &srcs, vec![ExDst { layout: lr, index: Box::new(index), offset: 0 }])?;
                self.set(d.results[0], out.into_iter().next().unwrap_or_default());
                Ok(())
            }
            OpKind::Split => {
                let a = d.operands[0];
                let la = self.ll(a)?.ok_or_else(|| self.err("split of a scalar"))?;
                // Each thread holding both halves of its elements (the split dimension a
                // register bit): the halves are its registers, picked.
                let mut picked = vec![];
                for j in 0..2u64 {
                    let lr = self.ll(d.results[j as usize])?.ok_or_else(|| self.err("split result"))?;
                    picked.push(la.split_registers(&lr, j));
                }
                if picked.iter().all(Option::is_some) {
                    let sregs = self.regs(a)?;
                    for (j, map) in picked.into_iter().enumerate() {
                        let regs = map.expect("checked").iter().map(|&r| sregs[r as usize]).collect();
                        self.set(d.results[j], regs);
                    }
                    return Ok(());
                }
                let srcs = [ExSrc { regs: self.regs(a)?, layout: la.clone(), base: 0 }];
                let mut dsts = vec![];
                for j in 0..2u64 {
                    let lr = self.ll(d.results[j as usize])?.ok_or_else(|| self.err("split result"))?;
                    // Result index c ↔ source index (c, j) = 2c + j.
                    dsts.push(ExDst { layout: lr, index: Box::new(|c| c << 1), offset: j });
                }
                let out = self.exchange(op, &srcs, dsts)?;
                for (j, regs) in out.into_iter().enumerate() {
                    self.set(d.results[j], regs);
                }
                Ok(())
            }
            OpKind::Cat => {
                let (a, b) = (d.operands[0], d.operands[1]);
                let la = self.ll(a)?.ok_or_else(|| self.err("cat of scalars"))?;
                let lb = self.ll(b)?.ok_or_else(|| self.err("cat of scalars"))?;
                let lr = self.ll(d.results[0])?.ok_or_else(|| self.err("cat result"))?;
                // Concatenation along dim 0 concatenates the row-major orders.
                let srcs = [
                    ExSrc { regs: self.regs(a)?, layout: la.clone(), base: 0 },
                    ExSrc { regs: self.regs(b)?, layout: lb, base: la.numel() },
                ];
                let out = self.exchange(op, &srcs, vec![ExDst { layout: lr, index: Box::new(|c| c), offset: 0 }])?;
                self.set(d.results[0], out.into_iter().next().unwrap_or_default());
                Ok(())
            }
            _ => Err(self.err("internal: not a join/split/cat")),
        }
    }

    /// Reshape/trans that moves data between threads.
    pub fn shuffle_through_shared(
        &mut self,
        op: Op,
        srcs: &[(trident_ir::Value, Rc<LinearLayout>)],
        dst: &Rc<LinearLayout>,
        project: &dyn Fn(u64) -> u64,
    ) -> Res<()> {
        let mut ex = vec![];
        for (v, l) in srcs {
            ex.push(ExSrc { regs: self.regs(*v)?, layout: l.clone(), base: 0 });
        }
        // The projection is linear; tabulate it on basis vectors so the closure is 'static.
        let bits = crate::layout::linear::shape_bits(&dst.shape);
        let table: Vec<u64> = (0..bits).map(|i| project(1u64 << i)).collect();
        let index = move |c: u64| -> u64 {
            let mut acc = 0;
            for (i, &t) in table.iter().enumerate() {
                if c >> i & 1 == 1 {
                    acc ^= t;
                }
            }
            acc
        };
        let out = self.exchange(op, &ex, vec![ExDst { layout: dst.clone(), index: Box::new(index), offset: 0 }])?;
        let res = self.f.ops[op].results[0];
        self.set(res, out.into_iter().next().unwrap_or_default());
        Ok(())
    }
}

/// Projects a flat coordinate of `from` (dims removed where `to` has size 1) onto `to`.
pub fn project_flat(from: &[u32], to: &[u32], c: u64) -> u64 {
    let v = unflatten(from, c);
    let w: Vec<u32> = v.iter().zip(to).map(|(&x, &n)| if n == 1 { 0 } else { x }).collect();
    flatten(to, &w)
}
