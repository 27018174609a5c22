//! Decode-time checks that an instruction's form is one the executor implements,
//! so unsupported forms are rejected when the module is parsed, with their line.

use super::float::elem_of;
use crate::error::{EmuError, ErrorKind};
use crate::ir::{Instr, Kind, Rnd, Ty};

fn no(ins: &Instr, why: &str) -> Result<(), EmuError> {
    Err(EmuError::new(ErrorKind::Unsupported, format!("unsupported instruction form: {:?} {why}", ins.kind)))
}

pub fn validate(ins: &Instr) -> Result<(), EmuError> {
    use Kind::*;
    let t = ins.ty();
    let m = &ins.m;
    if m.cc {
        return no(ins, "with carry (.cc)");
    }
    let is_float = elem_of(t).is_some();
    match ins.kind {
        Add | Sub | Mul | Mad | Min | Max | Abs | Neg | Div | Rem if ins.tys.is_empty() => no(ins, "without a type"),
        Fma | Rcp | Sqrt | Rsqrt | Ex2 | Lg2 | Sin | Cos | Tanh | Copysign | Testp if !is_float => {
            no(ins, "needs a float type")
        }
        Fma | Mad | Div | Add | Sub | Mul | Sqrt | Rcp
            if t == Ty::F64 && matches!(ins.kind, Fma | Mad) && !matches!(m.rnd.dir(), Rnd::Rn) =>
        {
            no(ins, "f64 fma with directed rounding")
        }
        Rem | Popc | Clz | Brev | Bfind | Bfe | Bfi | Not | Cnot | Shl | Shr | Shf | Lop3 | Prmt | Sad | Mul24
        | Mad24
            if t.is_float() =>
        {
            no(ins, "on a float type")
        }
        And | Or | Xor if t.is_float() => no(ins, "on a float type"),
        Cvt => {
            if ins.tys.len() != 2 {
                return no(ins, "needs destination and source types");
            }
            let (d, s) = (ins.tys[0], ins.tys[1]);
            let packed_ok = matches!(
                (d, s),
                (Ty::F16x2 | Ty::BF16x2, Ty::F32)
                    | (Ty::E4M3x2 | Ty::E5M2x2, Ty::F32 | Ty::F16x2)
                    | (Ty::F16x2, Ty::E4M3x2 | Ty::E5M2x2)
            );
            let scalar = |x: Ty| {
                !matches!(
                    x,
                    Ty::F16x2 | Ty::BF16x2 | Ty::E4M3x2 | Ty::E5M2x2 | Ty::E4M3 | Ty::E5M2 | Ty::Pred | Ty::B128
                )
            };
            if packed_ok || (scalar(d) && scalar(s)) {
                Ok(())
            } else {
                no(ins, &format!("from {s:?} to {d:?}"))
            }
        }
        Ld | St => {
            if !matches!(m.vec, 1 | 2 | 4) || t.bytes() > 8 || t == Ty::Pred {
                no(ins, "vector width or type")
            } else {
                Ok(())
            }
        }
        Atom | Red if m.atom.is_none() => no(ins, "without an operation"),
        Shfl if m.shfl.is_none() => no(ins, "without a mode"),
        Vote if m.vote.is_none() => no(ins, "without a mode"),
        Vote if !m.nosync && ins.ops.len() < 3 => no(ins, "vote.sync needs a member mask"),
        Bar if m.red && ins.ops.len() < 3 => no(ins, "bar.red needs d, a{, b}, c"),
        Mma if m.shape == (0, 0, 0) || ins.tys.len() != 4 => no(ins, "needs a shape and four types"),
        Wgmma if m.shape == (0, 0, 0) || ins.tys.len() != 3 => no(ins, "needs a shape and three types"),
        _ => Ok(()),
    }
}
