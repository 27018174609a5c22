//! Elementwise math: min/max/clamp, fma, umulhi, division variants, abs and the `tl.math` unary functions.

use super::super::call::Args;
use super::super::emit::type_str;
use super::super::sem::{computation_type, const_type};
use super::super::{DiagExt, FnLowering, Val, R};
use crate::value::{dtype_name, ConstValue};
use ruff_text_size::TextRange;
use trident_core::DType;
use trident_ir::{BinaryOp, Elem, OpKind, UnaryOp, Value};

fn propagate_all(v: &Val) -> bool {
    matches!(v, Val::C(ConstValue::Str(s)) if s.ends_with("ALL"))
}

impl<'c, 'a> FnLowering<'c, 'a> {
    pub(super) fn min_max_builtin(&mut self, is_max: bool, args: Args) -> R<Val> {
        let b = self.bind(&args, &["x", "y", "propagate_nan="])?;
        self.min_max(is_max, &b.val(0), &b.val(1), propagate_all(&b.val(2)), args.r)
    }

    /// Triton's three-operand typing: tensors promote among themselves, Python numbers among
    /// themselves, then the two results with the usual weak-number rule.
    pub(crate) fn ternary_operands(&mut self, vals: [&Val; 3], r: TextRange) -> R<[Value; 3]> {
        let mut tensor_t: Option<DType> = None;
        let mut scalar_t: Option<DType> = None;
        for v in vals {
            match v {
                Val::T(x) => {
                    let Elem::Num(d) = self.elem(*x) else {
                        return Err(self.err(r, "pointers are not allowed here"));
                    };
                    tensor_t = Some(match tensor_t {
                        None => d,
                        Some(t) => computation_type(t, false, d, false, false).map_err(|m| self.err(r, m))?,
                    });
                }
                Val::C(c) if c.is_number() => {
                    let d = const_type(c).map_err(|m| self.err(r, m))?;
                    scalar_t = Some(match scalar_t {
                        None => d,
                        Some(t) => computation_type(t, true, d, true, false).map_err(|m| self.err(r, m))?,
                    });
                }
                other => return Err(self.err(r, format!("expected a tensor or a number, got {}", other.kind_name()))),
            }
        }
        let d = match (tensor_t, scalar_t) {
            (Some(t), Some(s)) => computation_type(t, false, s, true, false).map_err(|m| self.err(r, m))?,
            (Some(t), None) => t,
            (None, Some(s)) => s,
            (None, None) => DType::F32,
        };
        let mut out = [Value::from_u32(0); 3];
        for (i, v) in vals.into_iter().enumerate() {
            out[i] = match v {
                Val::C(c) => self.const_value(c, d, r)?,
                Val::T(x) => self.cast(*x, Elem::Num(d), None, r)?,
                _ => unreachable!(),
            };
        }
        let (a, b) = self.broadcast_pair(out[0], out[1], r)?;
        let (a, c) = self.broadcast_pair(a, out[2], r)?;
        let (b, c) = self.broadcast_pair(b, c, r)?;
        let (a, b) = self.broadcast_pair(a, b, r)?;
        Ok([a, b, c])
    }

    pub(super) fn clamp(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["x", "min", "max", "propagate_nan="])?;
        let (x, lo, hi) = (b.val(0), b.val(1), b.val(2));
        let [x, lo, hi] = self.ternary_operands([&x, &lo, &hi], args.r)?;
        let nan = propagate_all(&b.val(3)) && self.elem(x).is_float();
        let ty = self.ty(x).clone();
        let (mx, mn) = if nan { (BinaryOp::MaxNan, BinaryOp::MinNan) } else { (BinaryOp::Max, BinaryOp::Min) };
        let t = self.emit1(OpKind::Binary(mx), &[x, lo], ty.clone());
        Ok(Val::T(self.emit1(OpKind::Binary(mn), &[t, hi], ty)))
    }

    pub(super) fn fma(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["x", "y", "z"])?;
        let (x, y, z) = (b.val(0), b.val(1), b.val(2));
        let [x, y, z] = self.ternary_operands([&x, &y, &z], args.r)?;
        let ty = self.ty(x).clone();
        Ok(Val::T(self.emit1(OpKind::Fma, &[x, y, z], ty)))
    }

    /// Triton's `_check_dtype`: tensor arguments must have one of `allowed` types.
    fn check_dtypes(&self, name: &str, vals: &[&Val], allowed: &[DType], r: TextRange) -> R<()> {
        for v in vals {
            if let Val::T(x) = v {
                let ok = matches!(self.elem(*x), Elem::Num(d) if allowed.contains(&d));
                if !ok {
                    let names: Vec<&str> = allowed.iter().map(|d| dtype_name(*d)).collect();
                    return Err(self
                        .err(r, format!("{name} expects {} but got {}", names.join(" or "), type_str(self.ty(*x))))
                        .with_note("cast explicitly first, e.g. `x.to(tl.float32)`"));
                }
            }
        }
        Ok(())
    }

    pub(super) fn umulhi(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["x", "y"])?;
        let (x, y) = (b.val(0), b.val(1));
        self.check_dtypes(&args.name, &[&x, &y], &[DType::I32, DType::I64, DType::U32, DType::U64], args.r)?;
        let (x, y) = self.binary_operands(&x, &y, Default::default(), args.r, "umulhi")?;
        let ty = self.ty(x).clone();
        Ok(Val::T(self.emit1(OpKind::Binary(BinaryOp::UMulHi), &[x, y], ty)))
    }

    pub(super) fn fdiv(&mut self, args: Args, rn: bool) -> R<Val> {
        let spec: &[&str] = if rn { &["x", "y"] } else { &["x", "y", "ieee_rounding=", "approx="] };
        let b = self.bind(&args, spec)?;
        let (x, y) = (b.val(0), b.val(1));
        if rn {
            self.check_dtypes(&args.name, &[&x, &y], &[DType::F32], args.r)?;
        }
        let opts = super::super::sem::BinOpts { div_or_mod: !rn, ..Default::default() };
        let (x, y) = self.binary_operands(&x, &y, opts, args.r, "fdiv")?;
        if !self.elem(x).is_float() {
            return Err(self.err(args.r, "fdiv requires floating-point operands"));
        }
        let ty = self.ty(x).clone();
        Ok(Val::T(self.emit1(OpKind::Binary(BinaryOp::Div), &[x, y], ty)))
    }

    pub(super) fn abs(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["x"])?;
        let x = self.tensor_of(&b.val(0), b.range(0))?;
        match self.elem(x) {
            Elem::Num(d) if d.is_unsigned_int() || d == DType::I1 => Ok(Val::T(x)),
            Elem::Num(_) => {
                let ty = self.ty(x).clone();
                Ok(Val::T(self.emit1(OpKind::Unary(UnaryOp::Abs), &[x], ty)))
            }
            Elem::Ptr { .. } => Err(self.err(args.r, "abs of a pointer")),
        }
    }

    pub(super) fn unary_math(&mut self, name: &str, args: Args) -> R<Val> {
        let b = self.bind(&args, &["x"])?;
        let v = b.val(0);
        let allowed: &[DType] = if name == "sqrt_rn" { &[DType::F32] } else { &[DType::F32, DType::F64] };
        self.check_dtypes(&args.name, &[&v], allowed, args.r)?;
        let x = self.tensor_of(&v, b.range(0))?;
        if !self.elem(x).is_float() {
            return Err(self.err(args.r, format!("{} expects a float, got {}", args.name, type_str(self.ty(x)))));
        }
        let op = match name {
            "exp" => UnaryOp::Exp,
            "exp2" => UnaryOp::Exp2,
            "log" => UnaryOp::Log,
            "log2" => UnaryOp::Log2,
            "cos" => UnaryOp::Cos,
            "sin" => UnaryOp::Sin,
            "sqrt" => UnaryOp::Sqrt,
            "sqrt_rn" => UnaryOp::SqrtRn,
            "rsqrt" => UnaryOp::Rsqrt,
            "erf" => UnaryOp::Erf,
            "floor" => UnaryOp::Floor,
            _ => UnaryOp::Ceil,
        };
        let ty = self.ty(x).clone();
        Ok(Val::T(self.emit1(OpKind::Unary(op), &[x], ty)))
    }
}
