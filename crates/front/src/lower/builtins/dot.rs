//! `tl.dot`.

use super::super::call::{dtype_of, Args};
use super::super::emit::{shape_str, type_str};
use super::super::{FnLowering, Val, R};
use crate::value::{dtype_name, ConstValue};
use trident_core::DType;
use trident_ir::{Const, Elem, InputPrecision, OpKind, Type};

impl<'c, 'a> FnLowering<'c, 'a> {
    pub(super) fn dot(&mut self, args: Args) -> R<Val> {
        let b = self.bind(
            &args,
            &["input", "other", "acc=", "input_precision=", "allow_tf32=", "max_num_imprecise_acc=", "out_dtype="],
        )?;
        let r = args.r;
        let a = self.tensor_of(&b.val(0), b.range(0))?;
        let bb = self.tensor_of(&b.val(1), b.range(1))?;
        let acc = match b.opt(2) {
            Some(x) => Some(self.tensor_of(&x.v, x.r)?),
            None => None,
        };
        if b.opt(3).is_some() && b.opt(4).is_some() {
            return Err(self.err(r, "only one of input_precision and allow_tf32 can be given"));
        }
        let precision = match b.opt(3).map(|x| &x.v) {
            Some(Val::C(ConstValue::Str(s))) => match s.to_ascii_lowercase().as_str() {
                "tf32" => InputPrecision::Tf32,
                "tf32x3" => InputPrecision::Tf32x3,
                "ieee" => InputPrecision::Ieee,
                other => {
                    return Err(self.err(
                        b.range(3),
                        format!(
                        "input_precision {other:?} is not supported by Trident; use \"tf32\", \"tf32x3\" or \"ieee\""
                    ),
                    ))
                }
            },
            Some(other) => {
                return Err(self.err(b.range(3), format!("input_precision must be a string, not {}", other.kind_name())))
            }
            None => match b.opt(4).and_then(|x| x.v.as_const()).and_then(|c| c.truthy()) {
                Some(false) => InputPrecision::Ieee,
                _ => self.ctx.opts.default_dot_precision,
            },
        };
        let (sa, sb) = (self.shape(a), self.shape(bb));
        if sa.len() != sb.len() || sa.len() < 2 {
            return Err(self.err(
                r,
                format!(
                    "tl.dot needs two blocks of equal rank >= 2, got {} and {}",
                    type_str(self.ty(a)),
                    type_str(self.ty(bb))
                ),
            ));
        }
        let n = sa.len();
        if sa[..n - 2] != sb[..n - 2] {
            return Err(
                self.err(r, format!("tl.dot: batch dimensions differ: {} and {}", shape_str(&sa), shape_str(&sb)))
            );
        }
        if sa[n - 1] != sb[n - 2] {
            return Err(self.err(
                r,
                format!(
                    "tl.dot: inner dimensions differ: {} @ {} (K = {} on the left, {} on the right)",
                    shape_str(&sa),
                    shape_str(&sb),
                    sa[n - 1],
                    sb[n - 2]
                ),
            ));
        }
        let mut c_shape = sa[..n - 1].to_vec();
        c_shape.push(sb[n - 1]);
        if let Some(acc) = acc {
            if self.shape(acc) != c_shape {
                return Err(self.err(
                    b.range(2),
                    format!(
                        "tl.dot: the accumulator has shape {} but the product has shape {}",
                        shape_str(&self.shape(acc)),
                        shape_str(&c_shape)
                    ),
                ));
            }
        }
        let (Elem::Num(da), Elem::Num(db)) = (self.elem(a), self.elem(bb)) else {
            return Err(self.err(r, "tl.dot operands must be numbers"));
        };
        if !(da.is_fp8() && db.is_fp8()) {
            let ok = [DType::I8, DType::U8, DType::F16, DType::BF16, DType::F32, DType::F64];
            for (d, i) in [(da, 0), (db, 1)] {
                if !ok.contains(&d) {
                    return Err(self.err(b.range(i), format!("tl.dot does not support {} operands", dtype_name(d))));
                }
            }
            if da != db {
                return Err(self.err(
                    r,
                    format!("tl.dot operands must have the same dtype, got {} and {}", dtype_name(da), dtype_name(db)),
                ));
            }
        }
        let min_k = match da.bits() {
            8 => 32,
            16 => 16,
            32 => 8,
            _ => 4,
        };
        if sa[n - 1] < min_k {
            return Err(self
                .err(r, format!("tl.dot needs K >= {min_k} for {} operands, got K = {}", dtype_name(da), sa[n - 1])));
        }
        let out_dtype = match b.opt(6) {
            Some(x) => match dtype_of(&x.v) {
                Some(Elem::Num(d)) => Some(d),
                _ => return Err(self.err(x.r, "out_dtype must be a dtype")),
            },
            None => None,
        };
        let out = out_dtype.unwrap_or_else(|| acc.and_then(|v| self.elem(v).num()).unwrap_or(DType::F32));
        let ret = if da.is_int() {
            if da != DType::I8 {
                return Err(self.err(r, "tl.dot on integers only supports int8"));
            }
            DType::I32
        } else if out == DType::BF16 {
            return Err(self.err(r, "out_dtype=bfloat16 is not supported; use float32 and cast the result"));
        } else if da == DType::F32 || da == DType::BF16 {
            DType::F32
        } else if da == DType::F64 {
            DType::F64
        } else {
            out
        };
        if let Some(acc) = acc {
            let ad = self.elem(acc).num();
            if ad != Some(out) || ad != Some(ret) {
                return Err(self.err(
                    b.range(2),
                    format!(
                        "tl.dot: the accumulator is {} but the product is {}; pass out_dtype or cast the accumulator",
                        type_str(self.ty(acc)),
                        dtype_name(ret)
                    ),
                ));
            }
        }
        let max_imprecise = match b.opt(5) {
            Some(x) => super::const_int(self, &x.v, x.r, "max_num_imprecise_acc")?.clamp(0, u32::MAX as i128) as u32,
            None => 0,
        };
        // Rank >= 4: fold the batch dimensions into one.
        let (a, bb, acc, folded) = if n >= 4 {
            let batch: u32 = c_shape[..n - 2].iter().product();
            let a2 = self.reshape_to(a, &[batch, sa[n - 2], sa[n - 1]], false, r)?;
            let b2 = self.reshape_to(bb, &[batch, sb[n - 2], sb[n - 1]], false, r)?;
            let c2 = match acc {
                Some(c) => Some(self.reshape_to(c, &[batch, c_shape[n - 2], c_shape[n - 1]], false, r)?),
                None => None,
            };
            (a2, b2, c2, true)
        } else {
            (a, bb, acc, false)
        };
        let res_shape: Vec<u32> = if folded {
            vec![c_shape[..n - 2].iter().product(), c_shape[n - 2], c_shape[n - 1]]
        } else {
            c_shape.clone()
        };
        let ty = Type::tensor(&res_shape, ret);
        let acc = match acc {
            Some(c) => c,
            None => {
                let z = if ret.is_float() { Const::Float(0.0) } else { Const::Int(0) };
                self.constant(z, ty.clone())
            }
        };
        let v = self.emit1(OpKind::Dot { precision, max_num_imprecise_acc: max_imprecise }, &[a, bb, acc], ty);
        let v = if folded { self.reshape_to(v, &c_shape, false, r)? } else { v };
        Ok(Val::T(v))
    }
}
