//! Constant folding arithmetic: what an op computes on constant operands, with the
//! semantics the interpreter and the GPU give it.
//!
//! * Integers wrap at their width and take signedness from their type; results are
//!   stored canonically (sign-extended for signed types, zero-extended for unsigned,
//!   `Const::Bool` for i1). Division and remainder by zero, signed `MIN / -1`, and
//!   shifts by the width or more are left alone (they trap or are undefined at run time).
//! * Floats are computed in f64 and rounded once to the result type. For `+ - * /`,
//!   `sqrt` and conversions that is the correctly rounded result (f64 has more than
//!   twice the precision of f32, f16 and bf16, so the double rounding is harmless).
//!   Ops whose GPU result depends on a math library (`exp`, `pow`, `sin`, approximate
//!   `sqrt`, ...) are never folded, nor is arithmetic on fp8 (the GPU has none).
//! * Conversions follow `CastKind`'s documentation: float→int truncates (out of range
//!   and NaN are not folded), anything→i1 is `!= 0`, conversions to fp8 saturate.

use trident_core::tensor::{decode_f64, encode_f64};

use trident_core::DType;
use trident_ir::{BinaryOp, CastKind, CmpPred, Const, Rounding, UnaryOp};

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// The raw bits of an integer constant (low `bits` of the stored i64; 0/1 for i1).
pub fn int_bits(c: Const) -> Option<u64> {
    match c {
        Const::Int(v) => Some(v as u64),
        Const::Bool(b) => Some(b as u64),
        Const::Float(_) => None,
    }
}

/// The canonical constant of integer type `d` holding the low bits of `bits`.
pub fn int_const(d: DType, bits: u64) -> Const {
    if d.is_bool() {
        return Const::Bool(bits & 1 != 0);
    }
    let w = d.bits();
    let m = bits & mask(w);
    if d.is_signed_int() && w < 64 && m >> (w - 1) & 1 == 1 {
        Const::Int((m | !mask(w)) as i64)
    } else {
        Const::Int(m as i64)
    }
}

/// Signed value of `bits` at width `w`.
fn sval(w: u32, bits: u64) -> i64 {
    if w >= 64 {
        bits as i64
    } else {
        let m = bits & mask(w);
        if m >> (w - 1) & 1 == 1 {
            (m | !mask(w)) as i64
        } else {
            m as i64
        }
    }
}

/// The value of an integer constant as an i128 (signed or unsigned by type).
pub fn int_value(d: DType, c: Const) -> Option<i128> {
    let b = int_bits(c)?;
    Some(if d.is_signed_int() { sval(d.bits(), b) as i128 } else { (b & mask(d.bits())) as i128 })
}

/// The value of a float constant, as stored (callers round it to its type first).
pub fn float_value(c: Const) -> Option<f64> {
    match c {
        Const::Float(v) => Some(v),
        _ => None,
    }
}

/// Rounds `v` to the nearest value of float type `d` (ties to even); conversions to fp8
/// saturate to the largest finite value when `saturate`.
pub fn round_float(d: DType, v: f64, saturate: bool) -> f64 {
    match d {
        DType::F64 => v,
        DType::F32 => v as f32 as f64,
        DType::F16 => round_ieee(v, 10, -14, 65504.0),
        DType::BF16 => round_ieee(v, 7, -126, (2.0 - 2f64.powi(-7)) * 2f64.powi(127)),
        DType::F8E4M3 => trident_core::fp8::e4m3_to_f64(trident_core::fp8::f64_to_e4m3(v, saturate)),
        DType::F8E5M2 => trident_core::fp8::e5m2_to_f64(trident_core::fp8::f64_to_e5m2(v, saturate)),
        _ => v,
    }
}

/// Rounds an f64 straight to an IEEE-style format with `mbits` stored mantissa bits, smallest
/// normal exponent `emin` and largest finite value `max` (ties to even, overflow to infinity).
///
/// Written out rather than taken from `half`, whose `from_f64` goes through f32 and so
/// rounds twice (1 + 2^-11 + 2^-40 would become 1.0 in f16 instead of 1 + 2^-10).
fn round_ieee(v: f64, mbits: i32, emin: i32, max: f64) -> f64 {
    if !v.is_finite() || v == 0.0 {
        return v;
    }
    let a = v.abs();
    // Exponent of a normal f64; f64 subnormals are far below both formats' ranges.
    let e = (((a.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(emin);
    // Dividing and multiplying by a power of two is exact, so only round_ties_even rounds.
    let quantum = 2f64.powi(e - mbits);
    let r = (a / quantum).round_ties_even() * quantum;
    let r = if r > max { f64::INFINITY } else { r };
    r.copysign(v)
}

/// Bits of a float value of type `d`; `v` must be representable in `d` (constants are
/// normalised before folding), so no rounding happens here.
fn float_to_bits(d: DType, v: f64) -> u64 {
    match d {
        DType::F64 => v.to_bits(),
        DType::F32 => (v as f32).to_bits() as u64,
        // A bf16 is the top half of the f32 with the same value.
        DType::BF16 => ((v as f32).to_bits() >> 16) as u64,
        DType::F16 => {
            let sign = if v.is_sign_negative() { 0x8000u64 } else { 0 };
            let a = v.abs();
            let mag = if a.is_infinite() {
                0x7C00
            } else if a < 2f64.powi(-14) {
                (a / 2f64.powi(-24)) as u64
            } else {
                let e = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
                (((e + 15) as u64) << 10) | ((a / 2f64.powi(e) - 1.0) * 1024.0) as u64
            };
            sign | mag
        }
        _ => {
            let mut buf = [0u8; 8];
            let n = d.size_bytes();
            encode_f64(d, v, &mut buf[..n]);
            u64::from_le_bytes(buf)
        }
    }
}

fn bits_to_float(d: DType, bits: u64) -> f64 {
    match d {
        DType::F64 => f64::from_bits(bits),
        DType::F32 => f32::from_bits(bits as u32) as f64,
        _ => decode_f64(d, &bits.to_le_bytes()[..d.size_bytes()]),
    }
}

/// A constant of element type `d` normalised: floats rounded to their type, integers canonical.
pub fn normalize(d: DType, c: Const) -> Option<Const> {
    if d.is_float() {
        let v = float_value(c)?;
        if d.is_fp8() {
            return Some(c);
        }
        Some(Const::Float(if v.is_nan() { v } else { round_float(d, v, false) }))
    } else {
        Some(int_const(d, int_bits(c)?))
    }
}

/// `a op b` on constants of element type `d`.
pub fn binary(op: BinaryOp, d: DType, a: Const, b: Const) -> Option<Const> {
    if d.is_float() {
        if d.is_fp8() {
            return None;
        }
        let (x, y) = (float_value(a)?, float_value(b)?);
        let r = binary_float(op, x, y)?;
        // A computed NaN is the GPU's canonical (positive) one: the host's sign of `inf - inf`
        // (negative on x86) must not reach a later `copysign` or `signbit`.
        return Some(Const::Float(if r.is_nan() { f64::NAN } else { round_float(d, r, false) }));
    }
    let w = d.bits();
    let (x, y) = (int_bits(a)? & mask(w), int_bits(b)? & mask(w));
    use BinaryOp::*;
    if d.is_bool() && !matches!(op, Add | Sub | Mul | And | Or | Xor) {
        return None;
    }
    let signed = d.is_signed_int();
    let (sx, sy) = (sval(w, x), sval(w, y));
    let min = if w >= 64 { i64::MIN } else { -(1i64 << (w - 1)) };
    let r: u64 = match op {
        Add => x.wrapping_add(y),
        Sub => x.wrapping_sub(y),
        Mul => x.wrapping_mul(y),
        Div | Rem => {
            if y == 0 || (signed && sx == min && sy == -1) {
                return None;
            }
            match (op, signed) {
                (Div, true) => (sx / sy) as u64,
                (Div, false) => x / y,
                (_, true) => (sx % sy) as u64,
                (_, false) => x % y,
            }
        }
        And => x & y,
        Or => x | y,
        Xor => x ^ y,
        Shl | Shr => {
            if y >= w as u64 {
                return None;
            }
            match (op, signed) {
                (Shl, _) => x << y,
                (_, true) => (sx >> y) as u64,
                (_, false) => x >> y,
            }
        }
        Max | Min => {
            let x_bigger = if signed { sx > sy } else { x > y };
            if x_bigger == (op == Max) {
                x
            } else {
                y
            }
        }
        UMulHi => ((x as u128 * y as u128) >> w) as u64,
        MaxNan | MinNan | Pow | Atan2 | Hypot | CopySign => return None,
    };
    Some(int_const(d, r))
}

fn binary_float(op: BinaryOp, x: f64, y: f64) -> Option<f64> {
    use BinaryOp::*;
    Some(match op {
        Add => x + y,
        Sub => x - y,
        Mul => x * y,
        Div => {
            if y == 0.0 {
                return None;
            }
            x / y
        }
        Rem => {
            if y == 0.0 {
                return None;
            }
            x % y
        }
        Max | Min | MaxNan | MinNan => {
            if x.is_nan() || y.is_nan() {
                if matches!(op, MaxNan | MinNan) {
                    f64::NAN
                } else if x.is_nan() {
                    y
                } else {
                    x
                }
            } else if x == 0.0 && y == 0.0 && x.to_bits() != y.to_bits() {
                // max(+0, -0): implementations differ; leave it to run time.
                return None;
            } else if matches!(op, Max | MaxNan) {
                x.max(y)
            } else {
                x.min(y)
            }
        }
        CopySign => x.copysign(y),
        _ => return None,
    })
}

/// `op a` on a constant of element type `d`; `Const::Bool` for the predicates.
pub fn unary(op: UnaryOp, d: DType, a: Const) -> Option<Const> {
    use UnaryOp::*;
    if d.is_float() {
        if d.is_fp8() {
            return None;
        }
        let x = float_value(a)?;
        let r = match op {
            Neg => -x,
            Abs => x.abs(),
            Floor => x.floor(),
            Ceil => x.ceil(),
            Trunc => x.trunc(),
            Rint => x.round_ties_even(),
            Round => x.round(),
            SqrtRn => x.sqrt(),
            IsNan => return Some(Const::Bool(x.is_nan())),
            IsInf => return Some(Const::Bool(x.is_infinite())),
            IsFinite => return Some(Const::Bool(x.is_finite())),
            Signbit => return Some(Const::Bool(x.is_sign_negative())),
            _ => return None,
        };
        return Some(Const::Float(if r.is_nan() { r } else { round_float(d, r, false) }));
    }
    let w = d.bits();
    let x = int_bits(a)? & mask(w);
    if d.is_bool() {
        return match op {
            Not => Some(Const::Bool(x == 0)),
            _ => None,
        };
    }
    let r = match op {
        Neg => x.wrapping_neg(),
        Not => !x,
        Abs => {
            if d.is_signed_int() {
                sval(w, x).wrapping_abs() as u64
            } else {
                x
            }
        }
        Popc => x.count_ones() as u64,
        Clz => (x.leading_zeros() - (64 - w)) as u64,
        _ => return None,
    };
    Some(int_const(d, r))
}

/// `a pred b` on constants of element type `d`. Float comparisons are ordered except `ne`.
pub fn cmp(pred: CmpPred, d: DType, a: Const, b: Const) -> Option<bool> {
    use std::cmp::Ordering;
    use CmpPred::*;
    if d.is_float() {
        let (x, y) = (float_value(a)?, float_value(b)?);
        return Some(match pred {
            Eq => x == y,
            Ne => x != y,
            Lt => x < y,
            Le => x <= y,
            Gt => x > y,
            Ge => x >= y,
        });
    }
    let ord = int_value(d, a)?.cmp(&int_value(d, b)?);
    Some(match pred {
        Eq => ord == Ordering::Equal,
        Ne => ord != Ordering::Equal,
        Lt => ord == Ordering::Less,
        Le => ord != Ordering::Greater,
        Gt => ord == Ordering::Greater,
        Ge => ord != Ordering::Less,
    })
}

/// Converts a constant of type `from` to type `to` (numbers only; pointer casts are not folded).
pub fn cast(kind: CastKind, rounding: Rounding, from: DType, to: DType, a: Const) -> Option<Const> {
    match kind {
        CastKind::Convert => convert(rounding, from, to, a),
        CastKind::Bitcast => {
            if from.bits() != to.bits() {
                return None;
            }
            let bits = if from.is_float() {
                let v = float_value(a)?;
                if v.is_nan() {
                    return None;
                }
                float_to_bits(from, v)
            } else {
                int_bits(a)? & mask(from.bits())
            };
            if to.is_float() {
                let v = bits_to_float(to, bits);
                if v.is_nan() {
                    return None;
                }
                Some(Const::Float(v))
            } else {
                Some(int_const(to, bits))
            }
        }
        CastKind::PtrToInt | CastKind::IntToPtr => None,
    }
}

fn convert(rounding: Rounding, from: DType, to: DType, a: Const) -> Option<Const> {
    if from.is_float() {
        let v = float_value(a)?;
        if to.is_bool() {
            return Some(Const::Bool(v != 0.0));
        }
        if to.is_float() {
            let r = if v.is_nan() { v } else { round_float(to, v, true) };
            // Round-toward-zero only folds when no rounding happens.
            if rounding == Rounding::Rtz && !v.is_nan() && r != v {
                return None;
            }
            return Some(Const::Float(r));
        }
        if v.is_nan() {
            return None;
        }
        let t = v.trunc();
        let w = to.bits();
        // In range means representable: [-2^(w-1), 2^(w-1)) or [0, 2^w), bounds exact in f64.
        let (lo, hi) = if to.is_signed_int() {
            (-(2f64.powi(w as i32 - 1)), 2f64.powi(w as i32 - 1))
        } else {
            (0.0, 2f64.powi(w as i32))
        };
        if !(t >= lo && t < hi) {
            return None;
        }
        let bits = if to.is_signed_int() { t as i64 as u64 } else { t as u64 };
        return Some(int_const(to, bits));
    }
    let x = int_value(from, a)?;
    if to.is_bool() {
        return Some(Const::Bool(x != 0));
    }
    if to.is_float() {
        let exact = x.unsigned_abs() <= 1u128 << 53;
        let v = if exact {
            x as f64
        } else {
            match to {
                // One correctly rounded conversion each.
                DType::F64 => x as f64,
                DType::F32 => x as f32 as f64,
                _ => return None,
            }
        };
        let r = round_float(to, v, true);
        if rounding == Rounding::Rtz && (r != v || !exact) {
            return None;
        }
        return Some(Const::Float(r));
    }
    Some(int_const(to, x as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    fn i(v: i64) -> Const {
        Const::Int(v)
    }

    fn f(v: f64) -> Const {
        Const::Float(v)
    }

    #[test]
    fn integers_wrap_at_their_width() {
        assert_eq!(binary(BinaryOp::Add, I8, i(127), i(1)), Some(i(-128)));
        assert_eq!(binary(BinaryOp::Add, U8, i(255), i(1)), Some(i(0)));
        assert_eq!(binary(BinaryOp::Mul, I32, i(65536), i(65536)), Some(i(0)));
        assert_eq!(binary(BinaryOp::Sub, U32, i(0), i(1)), Some(i(u32::MAX as i64)));
        assert_eq!(binary(BinaryOp::Add, U64, i(-1), i(2)), Some(i(1)));
        assert_eq!(binary(BinaryOp::Add, I1, Const::Bool(true), Const::Bool(true)), Some(Const::Bool(false)));
    }

    #[test]
    fn signedness_comes_from_the_type() {
        // -1 / 2: signed truncates to 0; as u32, 0xFFFFFFFF / 2.
        assert_eq!(binary(BinaryOp::Div, I32, i(-1), i(2)), Some(i(0)));
        assert_eq!(binary(BinaryOp::Div, U32, i(u32::MAX as i64), i(2)), Some(i(0x7FFF_FFFF)));
        assert_eq!(binary(BinaryOp::Rem, I32, i(-7), i(2)), Some(i(-1)));
        assert_eq!(binary(BinaryOp::Shr, I8, i(-128), i(7)), Some(i(-1)));
        assert_eq!(binary(BinaryOp::Shr, U8, i(128), i(7)), Some(i(1)));
        assert_eq!(binary(BinaryOp::Max, I16, i(-1), i(1)), Some(i(1)));
        assert_eq!(binary(BinaryOp::Max, U16, i(65535), i(1)), Some(i(65535)));
        assert_eq!(cmp(CmpPred::Lt, I32, i(-1), i(0)), Some(true));
        assert_eq!(cmp(CmpPred::Lt, U32, i(u32::MAX as i64), i(0)), Some(false));
        assert_eq!(cmp(CmpPred::Gt, U64, i(-1), i(1)), Some(true));
        assert_eq!(binary(BinaryOp::UMulHi, I32, i(-1), i(-1)), Some(i(-2)));
        assert_eq!(binary(BinaryOp::UMulHi, U64, i(-1), i(2)), Some(i(1)));
    }

    #[test]
    fn undefined_integer_cases_are_not_folded() {
        assert_eq!(binary(BinaryOp::Div, I32, i(1), i(0)), None);
        assert_eq!(binary(BinaryOp::Rem, U8, i(1), i(0)), None);
        assert_eq!(binary(BinaryOp::Div, I32, i(i32::MIN as i64), i(-1)), None);
        assert_eq!(binary(BinaryOp::Div, I64, i(i64::MIN), i(-1)), None);
        assert_eq!(binary(BinaryOp::Shl, I32, i(1), i(32)), None);
        assert_eq!(binary(BinaryOp::Shl, I32, i(1), i(-1)), None);
    }

    #[test]
    fn floats_round_to_their_type() {
        // 2049 is not an f16: the sum rounds to even (2048).
        assert_eq!(binary(BinaryOp::Add, F16, f(2048.0), f(1.0)), Some(f(2048.0)));
        assert_eq!(binary(BinaryOp::Add, F16, f(2048.0), f(3.0)), Some(f(2052.0)));
        assert_eq!(binary(BinaryOp::Mul, F16, f(300.0), f(300.0)), Some(f(f64::INFINITY)));
        assert_eq!(binary(BinaryOp::Add, BF16, f(256.0), f(1.0)), Some(f(256.0)));
        assert_eq!(binary(BinaryOp::Add, F32, f(1.0), f(1e-8)), Some(f(1.0)));
        assert_eq!(binary(BinaryOp::Add, F64, f(1.0), f(1e-8)), Some(f(1.0 + 1e-8)));
        assert_eq!(binary(BinaryOp::Div, F32, f(1.0), f(3.0)), Some(f((1.0f32 / 3.0) as f64)));
        assert_eq!(binary(BinaryOp::Div, F32, f(1.0), f(0.0)), None);
        assert_eq!(binary(BinaryOp::Pow, F32, f(2.0), f(2.0)), None);
        assert_eq!(binary(BinaryOp::Add, F8E4M3, f(1.0), f(1.0)), None);
    }

    #[test]
    fn f16_rounding_is_single_not_via_f32() {
        // 1 + 2^-11 + 2^-40: through f32 this would be a tie and round down to 1.0.
        let v = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(round_float(F16, v, false), 1.0 + 2f64.powi(-10));
        let v = 1.0 + 2f64.powi(-8) + 2f64.powi(-40);
        assert_eq!(round_float(BF16, v, false), 1.0 + 2f64.powi(-7));
    }

    /// Against a brute-force oracle: the nearest of all finite 16-bit codes (decoding is
    /// exact), ties to the even code, beyond the largest finite value plus half an ulp to inf.
    #[test]
    fn f16_and_bf16_round_to_the_nearest_code() {
        for d in [F16, BF16] {
            let mut table: Vec<(f64, u16)> =
                (0..=0x7FFFu16).map(|b| (decode_f64(d, &b.to_le_bytes()), b)).filter(|(v, _)| v.is_finite()).collect();
            table.sort_by(|a, b| a.0.total_cmp(&b.0));
            let max = table[table.len() - 1].0;
            let half_ulp = (max - table[table.len() - 2].0) / 2.0;
            let oracle = |v: f64| -> f64 {
                let a = v.abs();
                if a >= max + half_ulp {
                    return f64::INFINITY.copysign(v);
                }
                let i = table.partition_point(|&(x, _)| x <= a);
                let (lo, lb) = table[i - 1];
                let r = match table.get(i) {
                    None => lo,
                    Some(&(hi, _)) => {
                        if a - lo < hi - a || (a - lo == hi - a && lb % 2 == 0) {
                            lo
                        } else {
                            hi
                        }
                    }
                };
                r.copysign(v)
            };
            let mut x = 0x9E37_79B9_7F4A_7C15u64;
            for _ in 0..100_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Exponents around the format's range, all mantissa bits random.
                let e = (x >> 52) as i32 % 300 - 150;
                let v = f64::from_bits((x & 0x800F_FFFF_FFFF_FFFF) | (((1023 + e) as u64) << 52));
                assert_eq!(round_float(d, v, false).to_bits(), oracle(v).to_bits(), "{d} of {v:e}");
                // Exact midpoints between neighbouring codes (ties), and just beside them.
                let i = (x as usize >> 3) % (table.len() - 1);
                let mid = (table[i].0 + table[i + 1].0) / 2.0;
                for m in [mid, mid.next_up(), mid.next_down()] {
                    assert_eq!(round_float(d, m, false).to_bits(), oracle(m).to_bits(), "{d} of {m:e}");
                }
            }
        }
        assert_eq!(round_float(F16, 65519.99, false), 65504.0);
        assert_eq!(round_float(F16, 65520.0, false), f64::INFINITY);
        assert_eq!(round_float(F16, -1e-9, false).to_bits(), (-0.0f64).to_bits());
        assert_eq!(round_float(F16, 2f64.powi(-25) * 1.5, false), 2f64.powi(-24));
        // The case `half`'s bf16 conversion from f64 gets wrong: 0x026A8002 rounds up.
        let v = f32::from_bits(0x026A_8002) as f64;
        assert_eq!(round_float(BF16, v, false), f32::from_bits(0x026B_0000) as f64);
    }

    #[test]
    fn float_bits_of_every_f16_and_bf16() {
        for d in [F16, BF16] {
            for b in 0..=u16::MAX {
                let v = decode_f64(d, &b.to_le_bytes());
                if !v.is_nan() {
                    assert_eq!(float_to_bits(d, v), b as u64, "{d} {b:04x}");
                }
            }
        }
    }

    #[test]
    fn nan_handling() {
        assert_eq!(binary(BinaryOp::Max, F32, f(f64::NAN), f(1.0)), Some(f(1.0)));
        assert!(matches!(binary(BinaryOp::MaxNan, F32, f(f64::NAN), f(1.0)), Some(Const::Float(v)) if v.is_nan()));
        assert_eq!(binary(BinaryOp::Max, F32, f(0.0), f(-0.0)), None);
        assert_eq!(cmp(CmpPred::Ne, F32, f(f64::NAN), f(f64::NAN)), Some(true));
        assert_eq!(cmp(CmpPred::Eq, F32, f(f64::NAN), f(f64::NAN)), Some(false));
        assert_eq!(cmp(CmpPred::Ge, F32, f(f64::NAN), f(1.0)), Some(false));
    }

    #[test]
    fn unary_ops() {
        assert_eq!(unary(UnaryOp::Neg, I8, i(-128)), Some(i(-128)));
        assert_eq!(unary(UnaryOp::Abs, I8, i(-128)), Some(i(-128)));
        assert_eq!(unary(UnaryOp::Not, U8, i(0)), Some(i(255)));
        assert_eq!(unary(UnaryOp::Not, I1, Const::Bool(true)), Some(Const::Bool(false)));
        assert_eq!(unary(UnaryOp::Clz, I32, i(1)), Some(i(31)));
        assert_eq!(unary(UnaryOp::Clz, U8, i(0)), Some(i(8)));
        assert_eq!(unary(UnaryOp::Popc, I16, i(-1)), Some(i(16)));
        assert_eq!(unary(UnaryOp::Rint, F32, f(2.5)), Some(f(2.0)));
        assert_eq!(unary(UnaryOp::Round, F32, f(2.5)), Some(f(3.0)));
        assert_eq!(unary(UnaryOp::SqrtRn, F16, f(2.0)), Some(f(round_float(F16, 2f64.sqrt(), false))));
        assert_eq!(unary(UnaryOp::Sqrt, F32, f(4.0)), None);
        assert_eq!(unary(UnaryOp::Exp, F32, f(0.0)), None);
        assert_eq!(unary(UnaryOp::Signbit, F32, f(-0.0)), Some(Const::Bool(true)));
    }

    #[test]
    fn conversions() {
        let c = |from, to, v| cast(CastKind::Convert, Rounding::Rtne, from, to, v);
        assert_eq!(c(I32, I8, i(300)), Some(i(44)));
        assert_eq!(c(I8, U32, i(-1)), Some(i(u32::MAX as i64)));
        assert_eq!(c(U8, I32, i(255)), Some(i(255)));
        assert_eq!(c(I1, I32, Const::Bool(true)), Some(i(1)));
        assert_eq!(c(I32, I1, i(2)), Some(Const::Bool(true)));
        assert_eq!(c(F32, I1, f(f64::NAN)), Some(Const::Bool(true)));
        assert_eq!(c(F32, I32, f(-2.7)), Some(i(-2)));
        assert_eq!(c(F32, U8, f(256.0)), None);
        assert_eq!(c(F32, U8, f(-1.0)), None);
        assert_eq!(c(F32, I32, f(f64::NAN)), None);
        assert_eq!(c(F64, I64, f(2f64.powi(63))), None);
        assert_eq!(c(F64, I64, f(-(2f64.powi(63)))), Some(i(i64::MIN)));
        assert_eq!(c(F64, U64, f(2f64.powi(64))), None);
        assert_eq!(c(F32, U32, f(-0.5)), Some(i(0)));
        assert_eq!(c(F32, F16, f(65520.0)), Some(f(f64::INFINITY)));
        assert_eq!(c(F32, F8E4M3, f(1000.0)), Some(f(448.0)));
        assert_eq!(c(I64, F32, i((1 << 60) + 1)), Some(f(2f64.powi(60))));
        assert_eq!(c(U64, F64, i(-1)), Some(f(2f64.powi(64))));
        assert_eq!(c(I64, BF16, i((1 << 60) + 1)), None);
        assert_eq!(cast(CastKind::Convert, Rounding::Rtz, F32, F16, f(1.0 + 2f64.powi(-12))), None);
        assert_eq!(cast(CastKind::Convert, Rounding::Rtz, F32, F16, f(1.5)), Some(f(1.5)));
        assert_eq!(cast(CastKind::Bitcast, Rounding::Rtne, F32, I32, f(1.0)), Some(i(0x3f80_0000)));
        assert_eq!(cast(CastKind::Bitcast, Rounding::Rtne, F16, I16, f(-2.0)), Some(i(0xC000u16 as i16 as i64)));
        assert_eq!(cast(CastKind::Bitcast, Rounding::Rtne, U16, BF16, i(0x3F80)), Some(f(1.0)));
        assert_eq!(cast(CastKind::Bitcast, Rounding::Rtne, I32, F32, i(0x7FC0_0000)), None);
    }

    #[test]
    fn normalize_rounds_and_canonicalises() {
        assert_eq!(normalize(F16, f(0.1)), Some(f(round_float(F16, 0.1, false))));
        assert_ne!(round_float(F16, 0.1, false), 0.1);
        assert_eq!(normalize(U8, i(-1)), Some(i(255)));
        assert_eq!(normalize(I8, i(255)), Some(i(-1)));
    }
}
