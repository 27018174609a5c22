//! Warp-collective instructions: `shfl.sync` (up/down/bfly/idx with the clamp and
//! segment mask of operand c), `vote.sync`, `match.sync`, `activemask`, `redux.sync`.

use super::int::as_i128;
use super::warp::{unsupported, Ex, R};
use crate::error::{EmuError, ErrorKind};
use crate::ir::{AtomOp, BoolOp, Instr, Kind, Operand, ShflMode, Ty, VoteMode};

/// Lanes named in a `membermask` must all execute the instruction.
fn check_members(ins: &Instr, mask: u32, members: u32) -> R<()> {
    if members & !mask != 0 && !ins.m.nosync && members != u32::MAX {
        return Err(EmuError::new(
            ErrorKind::Runtime,
            format!("{:?}: member mask {members:#010x} names lanes that do not execute it ({mask:#010x})", ins.kind),
        ));
    }
    Ok(())
}

pub fn exec(ex: &mut Ex, ins: &Instr, mask: u32) -> R<()> {
    let o = &ins.ops;
    match ins.kind {
        Kind::Shfl => {
            let mode = ins.m.shfl.ok_or_else(|| unsupported(ins, "shfl mode"))?;
            let (d, p) = match &o[0] {
                Operand::Vec(v) if v.len() == 2 => (v[0].clone(), Some(v[1].clone())),
                x => (x.clone(), None),
            };
            let a = ex.src(&o[1])?;
            let b = ex.src(&o[2])?;
            let c = ex.src(&o[3])?;
            if !ins.m.nosync {
                let members = ex.src1(o.get(4).unwrap_or(&Operand::Imm(u32::MAX as u64)), mask.trailing_zeros())?;
                check_members(ins, mask, members as u32)?;
            }
            let mut out = [0u64; 32];
            let mut pred = [0u64; 32];
            for lane in 0..32i64 {
                let l = lane as usize;
                let bval = (b[l] & 0x1f) as i64;
                let cval = (c[l] & 0x1f) as i64;
                let seg = ((c[l] >> 8) & 0x1f) as i64;
                let max_lane = (lane & seg) | (cval & !seg);
                let min_lane = lane & seg;
                let (j, ok) = match mode {
                    ShflMode::Up => (lane - bval, lane - bval >= max_lane),
                    ShflMode::Down => (lane + bval, lane + bval <= max_lane),
                    ShflMode::Bfly => (lane ^ bval, (lane ^ bval) <= max_lane),
                    ShflMode::Idx => {
                        let j = min_lane | (bval & !seg);
                        (j, j <= max_lane)
                    }
                };
                let j = if ok { j } else { lane };
                // Reading an inactive lane yields its stale register, as on hardware (undefined in PTX).
                out[l] = a[(j & 31) as usize];
                pred[l] = ok as u64;
            }
            ex.dst(&d, mask, &out, 0xffff_ffff)?;
            if let Some(p) = p {
                ex.dst(&p, mask, &pred, 1)?;
            }
            Ok(())
        }
        Kind::Vote => {
            let mode = ins.m.vote.ok_or_else(|| unsupported(ins, "vote mode"))?;
            let a = ex.src(&o[1])?;
            let members = if ins.m.nosync { mask } else { ex.src1(&o[2], mask.trailing_zeros())? as u32 };
            check_members(ins, mask, members)?;
            let group = mask & members;
            let mut set = 0u32;
            for l in 0..32 {
                if group >> l & 1 != 0 && a[l] != 0 {
                    set |= 1 << l;
                }
            }
            let v: u64 = match mode {
                VoteMode::Ballot => set as u64,
                VoteMode::All => (set == group) as u64,
                VoteMode::Any => (set != 0) as u64,
                VoteMode::Uni => (set == 0 || set == group) as u64,
            };
            let width = if mode == VoteMode::Ballot { 0xffff_ffff } else { 1 };
            ex.dst(&o[0], mask, &[v; 32], width)
        }
        Kind::Activemask => ex.dst(&o[0], mask, &[mask as u64; 32], 0xffff_ffff),
        Kind::Match => {
            let t = ins.ty();
            let (d, p) = match &o[0] {
                Operand::Vec(v) if v.len() == 2 => (v[0].clone(), Some(v[1].clone())),
                x => (x.clone(), None),
            };
            let a = ex.src(&o[1])?;
            let members = ex.src1(&o[2], mask.trailing_zeros())? as u32;
            check_members(ins, mask, members)?;
            let group = mask & members;
            let mut out = [0u64; 32];
            let mut pred = [0u64; 32];
            for l in 0..32 {
                let mut same = 0u32;
                for j in 0..32 {
                    if group >> j & 1 != 0 && a[j] & t.mask() == a[l] & t.mask() {
                        same |= 1 << j;
                    }
                }
                if ins.m.all {
                    let all = same == group;
                    out[l] = if all { group as u64 } else { 0 };
                    pred[l] = all as u64;
                } else {
                    out[l] = same as u64;
                }
            }
            ex.dst(&d, mask, &out, 0xffff_ffff)?;
            if let Some(p) = p {
                ex.dst(&p, mask, &pred, 1)?;
            }
            Ok(())
        }
        Kind::Redux => {
            let t = ins.ty();
            let a = ex.src(&o[1])?;
            let members = ex.src1(&o[2], mask.trailing_zeros())? as u32;
            check_members(ins, mask, members)?;
            let group = mask & members;
            let lanes = (0..32).filter(|l| group >> l & 1 != 0);
            let op = match (ins.m.atom, ins.m.boolop) {
                (Some(op), _) => op,
                (None, Some(BoolOp::And)) => AtomOp::And,
                (None, Some(BoolOp::Or)) => AtomOp::Or,
                (None, Some(BoolOp::Xor)) => AtomOp::Xor,
                _ => return Err(unsupported(ins, "redux operation")),
            };
            if t.is_float() || t.bits() != 32 {
                return Err(unsupported(ins, "redux type"));
            }
            let vals: Vec<i128> = lanes.map(|l| as_i128(a[l], t)).collect();
            let r: i128 = match op {
                AtomOp::Add => vals.iter().sum(),
                AtomOp::Min => vals.iter().copied().min().unwrap_or(0),
                AtomOp::Max => vals.iter().copied().max().unwrap_or(0),
                AtomOp::And => vals.iter().fold(u32::MAX as i128, |x, y| x & y),
                AtomOp::Or => vals.iter().fold(0, |x, y| x | y),
                AtomOp::Xor => vals.iter().fold(0, |x, y| x ^ y),
                _ => return Err(unsupported(ins, "redux operation")),
            };
            let _ = Ty::B32;
            ex.dst(&o[0], mask, &[r as u64; 32], 0xffff_ffff)
        }
        _ => Err(unsupported(ins, "collective")),
    }
}
