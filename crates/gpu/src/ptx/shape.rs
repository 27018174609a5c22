//! Values from nowhere (constants, `arange`, program ids) and shape manipulation
//! (splat, broadcast, expand_dims, reshape, trans, join, split, cat).
//!
//! Shape ops move no data when the result layout places every element in the thread
//! that already holds it: each result register is found by looking its coordinate up
//! in the operand's register map (both layouts are linear, so comparing the register
//! parts suffices once the lane and warp bases agree).

use super::emitter::{Emitter, Res};
use super::regs::{class_of, Reg, RegClass};
use crate::layout::linear::{flatten, unflatten};
use crate::machine::scratch::{reg_map, reshape_projection};
use trident_ir::{Const, DType, Elem, Op, OpKind};

/// The bits of a constant of element type `e`, as stored in its register.
pub fn const_bits(c: Const, e: Elem) -> u64 {
    let d = match e {
        Elem::Ptr { .. } => DType::U64,
        Elem::Num(d) => d,
    };
    let v = match c {
        Const::Int(v) => {
            if d.is_float() {
                v as f64
            } else {
                return sext_bits(v, d);
            }
        }
        Const::Float(v) => v,
        Const::Bool(b) => b as u8 as f64,
    };
    if d.is_int() {
        let mut buf = [0u8; 8];
        trident_core::tensor::encode_f64(d, v, &mut buf[..d.size_bytes()]);
        let raw = u64::from_le_bytes(buf);
        return sext_bits(raw as i64, d);
    }
    let mut buf = [0u8; 8];
    trident_core::tensor::encode_f64(d, v, &mut buf[..d.size_bytes()]);
    u64::from_le_bytes(buf)
}

/// Register bits of an integer: narrow signed types sign-extended to their register width.
fn sext_bits(v: i64, d: DType) -> u64 {
    match d {
        DType::I1 => (v != 0) as u64,
        DType::I8 => v as i8 as i16 as u16 as u64,
        DType::U8 => v as u8 as u64,
        DType::I16 => v as i16 as u16 as u64,
        DType::U16 => v as u16 as u64,
        DType::I32 => v as i32 as u32 as u64,
        DType::U32 => v as u32 as u64,
        _ => v as u64,
    }
}

impl Emitter<'_> {
    /// A register holding constant `c` of element type `e`.
    pub fn const_reg(&mut self, c: Const, e: Elem) -> Reg {
        let class = class_of(e);
        let bits = const_bits(c, e);
        self.imm(class, bits as i64)
    }

    pub(crate) fn emit_misc(&mut self, op: Op) -> Res<()> {
        let f = self.f;
        let d = &f.ops[op];
        let res = d.results[0];
        let rty = f.ty(res);
        match &d.kind {
            OpKind::Constant(c) => {
                let r = self.const_reg(*c, rty.elem());
                let n = self.ll(res)?.map_or(1, |l| l.num_regs());
                self.set(res, vec![r; n]);
            }
            OpKind::ProgramId { axis } | OpKind::NumPrograms { axis } => {
                let r = self.new_reg(RegClass::B32);
                let dim = ["x", "y", "z"][(*axis as usize).min(2)];
                let sreg = if matches!(d.kind, OpKind::ProgramId { .. }) { "ctaid" } else { "nctaid" };
                self.ins(format!("mov.u32 {r}, %{sreg}.{dim}"));
                self.set(res, vec![r]);
            }
            OpKind::Arange { start, .. } => {
                let l = self.ll(res)?.ok_or_else(|| self.err("arange must produce a tensor"))?;
                let base = self.thread_coord(&l, 0);
                let disjoint = Emitter::coord_bits_disjoint(&l, 0);
                let mut regs = vec![];
                for r in 0..l.num_regs() as u64 {
                    let c = l.reg_part(r) as i64;
                    let out = self.new_reg(RegClass::B32);
                    if disjoint {
                        self.ins(format!("add.s32 {out}, {base}, {}", c + *start as i64));
                    } else {
                        self.ins(format!("xor.b32 {out}, {base}, {c}"));
                        if *start != 0 {
                            self.ins(format!("add.s32 {out}, {out}, {start}"));
                        }
                    }
                    regs.push(out);
                }
                self.set(res, regs);
            }
            OpKind::Splat => {
                let s = self.reg1(d.operands[0])?;
                let n = self.ll(res)?.map_or(1, |l| l.num_regs());
                self.set(res, vec![s; n]);
            }
            OpKind::Broadcast | OpKind::ExpandDims { .. } => {
                let src = d.operands[0];
                let sregs = self.regs(src)?;
                let dl = self.ll(res)?.ok_or_else(|| self.err("result must be a tensor"))?;
                let Some(sl) = self.ll(src)? else {
                    // A scalar expanded to a one-element tensor.
                    self.set(res, vec![sregs[0]; dl.num_regs()]);
                    return Ok(());
                };
                let dshape = dl.shape.clone();
                let sshape = sl.shape.clone();
                let project = |c: u64| -> u64 {
                    let dc = unflatten(&dshape, c);
                    if sshape.len() == dshape.len() {
                        let sc: Vec<u32> = dc.iter().zip(&sshape).map(|(&x, &n)| if n == 1 { 0 } else { x }).collect();
                        flatten(&sshape, &sc)
                    } else {
                        // expand_dims: the new dim has size 1, flat indices agree.
                        c
                    }
                };
                let map = reg_map(&sl, &dl, &project).ok_or_else(|| {
                    self.err(format!("internal: layouts of `{}` and `{}` are not compatible", f.ty(src), rty))
                })?;
                self.set(res, map.iter().map(|&i| sregs[i as usize]).collect());
            }
            _ => return Err(self.err("internal: not a misc op")),
        }
        Ok(())
    }

    pub(crate) fn emit_shape_op(&mut self, op: Op) -> Res<()> {
        let f = self.f;
        let d = &f.ops[op];
        match &d.kind {
            OpKind::Reshape { .. } | OpKind::Trans { .. } => {
                let src = d.operands[0];
                let res = d.results[0];
                let sregs = self.regs(src)?;
                let (Some(sl), Some(dl)) = (self.ll(src)?, self.ll(res)?) else {
                    return Err(self.err("reshape/trans need tensors"));
                };
                let perm = match &d.kind {
                    OpKind::Trans { perm } => Some(perm.as_slice()),
                    _ => None,
                };
                let project = reshape_projection(&sl.shape, &dl.shape, perm);
                match reg_map(&sl, &dl, &project) {
                    Some(map) => {
                        self.set(res, map.iter().map(|&i| sregs[i as usize]).collect());
                        Ok(())
                    }
                    None => self.shuffle_through_shared(op, &[(src, sl.clone())], &dl, &project),
                }
            }
            _ => self.emit_join_split_cat(op),
        }
    }
}
