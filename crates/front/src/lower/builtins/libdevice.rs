//! `libdevice` functions (CUDA's math library as Triton exposes it), mapped onto
//! tile-IR ops so that every backend implements them. Argument types must match
//! one of the function's libdevice signatures exactly, as in Triton.

use super::super::call::Args;
use super::super::emit::type_str;
use super::super::{DiagExt, FnLowering, Val, R};
use crate::value::dtype_name;
use trident_core::DType;
use trident_ir::{BinaryOp, CastKind, Elem, OpKind, Rounding, Type, UnaryOp, Value};

use DType::{F32, F64, I32, I64, U32, U64};

/// How a libdevice function lowers.
#[derive(Copy, Clone)]
enum Lower {
    Unary(UnaryOp),
    /// A predicate returned as `int1` (`isnan`, `isinf`) or as `int32` 0/1 (`signbit`, `finitef`).
    Pred(UnaryOp, bool),
    Binary(BinaryOp),
    /// `pow` / `powi`: a float base and a float or int32 exponent.
    Pow,
    Fma,
    /// Bit count returned as int32.
    Count(UnaryOp),
    /// Signed high half of a product (via a double-width multiply).
    MulHi,
    Reciprocal,
    Saturate,
    /// Reinterpret the bits as the given type.
    Bits(DType),
    /// Convert to the given type after rounding with the given op (`None`: truncate / default rounding).
    Convert(DType, Option<UnaryOp>, Rounding),
}

const FLOATS: &[DType] = &[F32, F64];
const F32_ONLY: &[DType] = &[F32];
const F64_ONLY: &[DType] = &[F64];

/// The lowering and accepted first-argument types of a libdevice function. Which names a kernel
/// can reach is decided by `language::libdevice::is_known`; the tests below keep the two in step.
fn table(name: &str) -> Option<(Lower, &'static [DType])> {
    use Lower::*;
    use UnaryOp as U;
    Some(match name {
        "exp" => (Unary(U::Exp), FLOATS),
        "exp2" => (Unary(U::Exp2), FLOATS),
        "exp10" => (Unary(U::Exp10), FLOATS),
        "expm1" => (Unary(U::Expm1), FLOATS),
        "log" => (Unary(U::Log), FLOATS),
        "log2" => (Unary(U::Log2), FLOATS),
        "log10" => (Unary(U::Log10), FLOATS),
        "log1p" => (Unary(U::Log1p), FLOATS),
        "sqrt" | "sqrt_rn" => (Unary(U::SqrtRn), FLOATS),
        "rsqrt" | "rsqrt_rn" => (Unary(U::Rsqrt), FLOATS),
        "cbrt" => (Unary(U::Cbrt), FLOATS),
        "sin" => (Unary(U::Sin), FLOATS),
        "cos" => (Unary(U::Cos), FLOATS),
        "tan" => (Unary(U::Tan), FLOATS),
        "asin" => (Unary(U::Asin), FLOATS),
        "acos" => (Unary(U::Acos), FLOATS),
        "atan" => (Unary(U::Atan), FLOATS),
        "sinh" => (Unary(U::Sinh), FLOATS),
        "cosh" => (Unary(U::Cosh), FLOATS),
        "tanh" => (Unary(U::Tanh), FLOATS),
        "asinh" => (Unary(U::Asinh), FLOATS),
        "acosh" => (Unary(U::Acosh), FLOATS),
        "atanh" => (Unary(U::Atanh), FLOATS),
        "erf" => (Unary(U::Erf), FLOATS),
        "erfc" => (Unary(U::Erfc), FLOATS),
        "floor" => (Unary(U::Floor), FLOATS),
        "ceil" => (Unary(U::Ceil), FLOATS),
        "trunc" => (Unary(U::Trunc), FLOATS),
        "rint" | "nearbyint" => (Unary(U::Rint), FLOATS),
        "round" => (Unary(U::Round), FLOATS),
        "abs" => (Unary(U::Abs), &[I32, I64, F32, F64]),
        "fast_expf" => (Unary(U::Exp), F32_ONLY),
        "fast_exp10f" => (Unary(U::Exp10), F32_ONLY),
        "fast_logf" => (Unary(U::Log), F32_ONLY),
        "fast_log2f" => (Unary(U::Log2), F32_ONLY),
        "fast_log10f" => (Unary(U::Log10), F32_ONLY),
        "fast_sinf" => (Unary(U::Sin), F32_ONLY),
        "fast_cosf" => (Unary(U::Cos), F32_ONLY),
        "fast_tanf" => (Unary(U::Tan), F32_ONLY),
        "isnan" => (Pred(U::IsNan, true), FLOATS),
        "isinf" => (Pred(U::IsInf, true), FLOATS),
        "signbit" => (Pred(U::Signbit, false), FLOATS),
        "finitef" => (Pred(U::IsFinite, false), F32_ONLY),
        "isfinited" => (Pred(U::IsFinite, false), F64_ONLY),
        "pow" => (Pow, FLOATS),
        "fast_powf" => (Pow, F32_ONLY),
        "atan2" => (Binary(BinaryOp::Atan2), FLOATS),
        "hypot" => (Binary(BinaryOp::Hypot), FLOATS),
        "copysign" => (Binary(BinaryOp::CopySign), FLOATS),
        "fmod" => (Binary(BinaryOp::Rem), FLOATS),
        "fast_dividef" => (Binary(BinaryOp::Div), F32_ONLY),
        "div_rn" => (Binary(BinaryOp::Div), FLOATS),
        "add_rn" => (Binary(BinaryOp::Add), FLOATS),
        "sub_rn" => (Binary(BinaryOp::Sub), FLOATS),
        "mul_rn" => (Binary(BinaryOp::Mul), FLOATS),
        "fmin" => (Binary(BinaryOp::Min), FLOATS),
        "fmax" => (Binary(BinaryOp::Max), FLOATS),
        "fma" | "fma_rn" => (Fma, FLOATS),
        "rcp_rn" => (Reciprocal, FLOATS),
        "saturatef" => (Saturate, F32_ONLY),
        "popc" => (Count(U::Popc), &[I32, I64]),
        "clz" => (Count(U::Clz), &[I32, I64]),
        "mulhi" => (MulHi, &[I32]),
        "umulhi" => (Binary(BinaryOp::UMulHi), &[U32, U64, I32, I64]),
        "float_as_int" => (Bits(I32), F32_ONLY),
        "float_as_uint" => (Bits(U32), F32_ONLY),
        "int_as_float" => (Bits(F32), &[I32]),
        "uint_as_float" => (Bits(F32), &[U32]),
        "double_as_longlong" => (Bits(I64), F64_ONLY),
        "longlong_as_double" => (Bits(F64), &[I64]),
        "double2float_rn" => (Convert(F32, None, Rounding::Rtne), F64_ONLY),
        "double2float_rz" => (Convert(F32, None, Rounding::Rtz), F64_ONLY),
        "int2float_rn" => (Convert(F32, None, Rounding::Rtne), &[I32]),
        "uint2float_rn" => (Convert(F32, None, Rounding::Rtne), &[U32]),
        "ll2float_rn" => (Convert(F32, None, Rounding::Rtne), &[I64]),
        "ull2float_rn" => (Convert(F32, None, Rounding::Rtne), &[U64]),
        "int2double_rn" => (Convert(F64, None, Rounding::Rtne), &[I32]),
        "uint2double_rn" => (Convert(F64, None, Rounding::Rtne), &[U32]),
        "ll2double_rn" => (Convert(F64, None, Rounding::Rtne), &[I64]),
        "ull2double_rn" => (Convert(F64, None, Rounding::Rtne), &[U64]),
        _ => return float_to_int(name),
    })
}

/// `float2int_rn`, `double2ull_rz`, ...: round, then convert.
fn float_to_int(name: &str) -> Option<(Lower, &'static [DType])> {
    let (src, rest) = if let Some(r) = name.strip_prefix("float2") {
        (F32_ONLY, r)
    } else if let Some(r) = name.strip_prefix("double2") {
        (F64_ONLY, r)
    } else {
        return None;
    };
    let (to, mode) = rest.split_once('_')?;
    let to = match to {
        "int" => I32,
        "uint" => U32,
        "ll" => I64,
        "ull" => U64,
        _ => return None,
    };
    let round = match mode {
        "rz" => None,
        "rn" => Some(UnaryOp::Rint),
        "rd" => Some(UnaryOp::Floor),
        "ru" => Some(UnaryOp::Ceil),
        _ => return None,
    };
    Some((Lower::Convert(to, round, Rounding::Rtne), src))
}

impl<'c, 'a> FnLowering<'c, 'a> {
    pub(crate) fn libdevice(&mut self, name: &str, args: Args) -> R<Val> {
        let Some((lower, accepted)) = table(name) else {
            return Err(self.err(args.r, format!("libdevice function `{name}` is not supported by Trident")));
        };
        let arity = match lower {
            Lower::Binary(_) | Lower::Pow | Lower::MulHi => 2,
            Lower::Fma => 3,
            _ => 1,
        };
        let spec: &[&str] = match arity {
            1 => &["arg0"],
            2 => &["arg0", "arg1"],
            _ => &["arg0", "arg1", "arg2"],
        };
        let b = self.bind(&args, spec)?;
        let mut vals: Vec<Value> = vec![];
        for i in 0..arity {
            vals.push(self.tensor_of(&b.val(i), b.range(i))?);
        }
        let d0 = self.elem(vals[0]).num();
        let ok = d0.is_some_and(|d| accepted.contains(&d))
            && match lower {
                Lower::Pow => {
                    let d1 = self.elem(vals[1]).num();
                    d1 == d0 || d1 == Some(I32)
                }
                _ => vals.iter().all(|v| self.elem(*v).num() == d0),
            };
        if !ok {
            let got: Vec<String> = vals.iter().map(|v| type_str(self.ty(*v))).collect();
            let want: Vec<&str> = accepted.iter().map(|d| dtype_name(*d)).collect();
            return Err(self
                .err(
                    args.r,
                    format!("libdevice.{name} does not accept ({}); it takes {}", got.join(", "), want.join(" or ")),
                )
                .with_note("cast the arguments explicitly, e.g. `x.to(tl.float32)`"));
        }
        // Broadcast all arguments to one shape.
        for i in 1..vals.len() {
            let (a, b2) = self.broadcast_pair(vals[0], vals[i], args.r)?;
            vals[0] = a;
            vals[i] = b2;
        }
        for i in 1..vals.len() {
            let s = self.shape(vals[0]);
            vals[i] = self.broadcast_to(vals[i], &s, args.r)?;
        }
        let ty = self.ty(vals[0]).clone();
        let d = d0.unwrap_or(F32);
        let r = args.r;
        let v = match lower {
            Lower::Unary(op) => self.emit1(OpKind::Unary(op), &vals, ty),
            Lower::Pred(op, as_bool) => {
                let p = self.emit1(OpKind::Unary(op), &vals, ty.with_elem(DType::I1));
                if as_bool {
                    p
                } else {
                    self.cast(p, Elem::Num(I32), None, r)?
                }
            }
            Lower::Binary(op) => self.emit1(OpKind::Binary(op), &vals, ty),
            Lower::Pow => {
                let e = self.cast(vals[1], Elem::Num(d), None, r)?;
                self.emit1(OpKind::Binary(BinaryOp::Pow), &[vals[0], e], ty)
            }
            Lower::Fma => self.emit1(OpKind::Fma, &vals, ty),
            Lower::Count(op) => {
                let c = self.emit1(OpKind::Unary(op), &vals, ty);
                self.cast(c, Elem::Num(I32), None, r)?
            }
            Lower::MulHi => {
                let wide = ty.with_elem(I64);
                let a = self.cast(vals[0], Elem::Num(I64), None, r)?;
                let b2 = self.cast(vals[1], Elem::Num(I64), None, r)?;
                let p = self.emit1(OpKind::Binary(BinaryOp::Mul), &[a, b2], wide.clone());
                let k = self.constant(trident_ir::Const::Int(32), wide.clone());
                let h = self.emit1(OpKind::Binary(BinaryOp::Shr), &[p, k], wide);
                self.cast(h, Elem::Num(I32), None, r)?
            }
            Lower::Reciprocal => {
                let one = self.constant(trident_ir::Const::Float(1.0), ty.clone());
                self.emit1(OpKind::Binary(BinaryOp::Div), &[one, vals[0]], ty)
            }
            Lower::Saturate => {
                let zero = self.constant(trident_ir::Const::Float(0.0), ty.clone());
                let one = self.constant(trident_ir::Const::Float(1.0), ty.clone());
                let m = self.emit1(OpKind::Binary(BinaryOp::Max), &[vals[0], zero], ty.clone());
                self.emit1(OpKind::Binary(BinaryOp::Min), &[m, one], ty)
            }
            Lower::Bits(to) => self.bitcast(vals[0], Elem::Num(to), r)?,
            Lower::Convert(to, round, rounding) => {
                let x = match round {
                    Some(op) => self.emit1(OpKind::Unary(op), &vals, ty.clone()),
                    None => vals[0],
                };
                let to_ty: Type = self.ty(x).with_elem(to);
                self.emit1(OpKind::Cast { kind: CastKind::Convert, rounding }, &[x], to_ty)
            }
        };
        Ok(Val::T(v))
    }
}

#[cfg(test)]
mod tests {
    use super::table;
    use crate::language::libdevice::{is_known, FUNCS};

    /// Every name the scanner and the name lookup accept lowers, and every name the table lowers
    /// is accepted: the list in `language` and this table describe the same functions.
    #[test]
    fn known_names_are_the_ones_the_table_lowers() {
        let mut names: Vec<String> = FUNCS.iter().map(|s| s.to_string()).collect();
        for from in ["float2", "double2"] {
            for to in ["int", "uint", "ll", "ull", "float", "double", "half"] {
                for mode in ["rn", "rz", "rd", "ru", "xx"] {
                    names.push(format!("{from}{to}_{mode}"));
                }
            }
        }
        // The explicit arms of `table`, read from this file.
        let src = include_str!("libdevice.rs");
        let body = &src[src.find("fn table(").unwrap()..src.find("fn float_to_int(").unwrap()];
        for line in body.lines().filter(|l| l.contains("=>")) {
            let arm = line.split("=>").next().unwrap();
            names.extend(arm.split('"').skip(1).step_by(2).map(str::to_string));
        }
        names.extend(["", "frobnicate", "float2", "double2int", "expf"].map(str::to_string));
        for n in &names {
            assert_eq!(is_known(n), table(n).is_some(), "libdevice name `{n}`");
        }
    }
}
