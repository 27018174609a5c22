//! Elementwise ops: binary, unary, comparisons, select, fma, casts, pointer arithmetic, constants.
//!
//! Operands normally have the same shape (the front end broadcasts first); a
//! one-element operand is also accepted against any length, which lets reduce
//! and scan combine regions (whose constants are scalars) run on whole vectors.

use crate::error::{ErrorKind, Fault};
use crate::float::{self, fmax, fmax_nan, fmin, fmin_nan, round_f64, round_f64_rtz, round_slice};
use crate::value::{class_of, wrap, wrap_all, Class, Data, Tensor};
use trident_core::DType;
use trident_ir::{BinaryOp, CastKind, CmpPred, Const, Elem, Rounding, Type, UnaryOp};

/// `f(a[i], b[i])` with one-element operands broadcast.
#[inline(always)]
fn map2<T: Copy, R>(a: &[T], b: &[T], f: impl Fn(T, T) -> R) -> Vec<R> {
    if a.len() == b.len() {
        a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect()
    } else if a.len() == 1 {
        let x = a[0];
        b.iter().map(|&y| f(x, y)).collect()
    } else {
        let y = b[0];
        a.iter().map(|&x| f(x, y)).collect()
    }
}

#[inline(always)]
fn at<T: Copy>(v: &[T], i: usize) -> T {
    if v.len() == 1 {
        v[0]
    } else {
        v[i]
    }
}

/// The shape of an elementwise result: that of the longest operand; checks the others are 1 or as long.
fn result_shape<'a>(ops: &[&'a Tensor]) -> Result<&'a Tensor, Fault> {
    let mut big = ops[0];
    for t in ops {
        if t.len() > big.len() {
            big = t;
        }
    }
    for t in ops {
        if t.len() != 1 && t.len() != big.len() {
            return Err(Fault::internal(format!(
                "elementwise operands of different shapes {:?} and {:?}",
                t.shape.as_slice(),
                big.shape.as_slice()
            )));
        }
    }
    Ok(big)
}

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

fn unsigned(dt: DType) -> bool {
    dt.is_unsigned_int() || dt == DType::I1
}

/// What integer division by zero does.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum DivZero {
    /// Stop with `DivisionByZero`.
    Error,
    /// The GPU's values: quotient all ones (-1), remainder the dividend.
    Gpu,
}

pub(crate) fn binary(op: BinaryOp, a: &Tensor, b: &Tensor, out: Elem, div0: DivZero) -> Result<Tensor, Fault> {
    use BinaryOp::*;
    let like = result_shape(&[a, b])?;
    let shape = &like.shape;
    let dt = out.num().ok_or_else(|| Fault::internal(format!("`{}` on pointers", op.name())))?;
    let data = match (&a.data, &b.data) {
        (Data::I(x), Data::I(y)) => {
            let bits = dt.bits();
            let uns = unsigned(dt);
            let mut r: Vec<i64> = match op {
                Add => map2(x, y, i64::wrapping_add),
                Sub => map2(x, y, i64::wrapping_sub),
                Mul => map2(x, y, i64::wrapping_mul),
                Div | Rem if div0 == DivZero::Gpu => match (op, uns) {
                    (Div, false) => map2(x, y, |p, q| if q == 0 { -1 } else { p.wrapping_div(q) }),
                    (Div, true) => map2(x, y, |p, q| if q == 0 { -1 } else { ((p as u64) / (q as u64)) as i64 }),
                    (_, false) => map2(x, y, |p, q| if q == 0 { p } else { p.wrapping_rem(q) }),
                    (_, true) => map2(x, y, |p, q| if q == 0 { p } else { ((p as u64) % (q as u64)) as i64 }),
                },
                Div | Rem => {
                    if let Some(i) = (0..like.len()).find(|&i| at(y, i) == 0) {
                        let what = if op == Div { "division" } else { "remainder" };
                        return Err(Fault::new(ErrorKind::DivisionByZero, format!("integer {what} by zero ({dt})"))
                            .at_element(i, shape));
                    }
                    match (op, uns) {
                        (Div, false) => map2(x, y, i64::wrapping_div),
                        (Div, true) => map2(x, y, |p, q| ((p as u64) / (q as u64)) as i64),
                        (_, false) => map2(x, y, i64::wrapping_rem),
                        (_, true) => map2(x, y, |p, q| ((p as u64) % (q as u64)) as i64),
                    }
                }
                And => map2(x, y, |p, q| p & q),
                Or => map2(x, y, |p, q| p | q),
                Xor => map2(x, y, |p, q| p ^ q),
                // Shift amounts are unsigned; amounts >= the width give 0 (or the sign for an
                // arithmetic right shift), as PTX's `shl`/`shr` clamp them.
                Shl => map2(x, y, |p, q| if (q as u64) >= bits as u64 { 0 } else { p << q }),
                Shr if uns => map2(x, y, |p, q| {
                    let p = p as u64 & mask(bits);
                    if (q as u64) >= bits as u64 {
                        0
                    } else {
                        (p >> q) as i64
                    }
                }),
                Shr => map2(x, y, |p, q| if (q as u64) >= bits as u64 { p >> 63 } else { p >> q }),
                Max | MaxNan if uns => map2(x, y, |p, q| (p as u64).max(q as u64) as i64),
                Min | MinNan if uns => map2(x, y, |p, q| (p as u64).min(q as u64) as i64),
                Max | MaxNan => map2(x, y, i64::max),
                Min | MinNan => map2(x, y, i64::min),
                UMulHi => map2(x, y, |p, q| {
                    let m = mask(bits);
                    (((p as u64 & m) as u128 * (q as u64 & m) as u128) >> bits) as i64
                }),
                Pow | Atan2 | Hypot | CopySign => {
                    return Err(Fault::internal(format!("`{}` on integers ({dt})", op.name())))
                }
            };
            wrap_all(&mut r, dt);
            Data::I(r)
        }
        (Data::F(x), Data::F(y)) => {
            let mut rounded = true;
            let mut r: Vec<f32> = match op {
                Add => map2(x, y, |p, q| p + q),
                Sub => map2(x, y, |p, q| p - q),
                Mul => map2(x, y, |p, q| p * q),
                Div => map2(x, y, |p, q| p / q),
                Rem => map2(x, y, |p, q| p % q),
                Max => map2(x, y, fmax),
                Min => map2(x, y, fmin),
                MaxNan => map2(x, y, fmax_nan),
                MinNan => map2(x, y, fmin_nan),
                CopySign => map2(x, y, f32::copysign),
                Pow | Atan2 | Hypot => {
                    rounded = false;
                    let f = math2(op);
                    map2(x, y, |p, q| round_f64(dt, f(p as f64, q as f64)))
                }
                And | Or | Xor | Shl | Shr | UMulHi => {
                    return Err(Fault::internal(format!("`{}` on floats ({dt})", op.name())))
                }
            };
            if rounded {
                round_slice(dt, &mut r);
            }
            Data::F(r)
        }
        (Data::D(x), Data::D(y)) => Data::D(match op {
            Add => map2(x, y, |p, q| p + q),
            Sub => map2(x, y, |p, q| p - q),
            Mul => map2(x, y, |p, q| p * q),
            Div => map2(x, y, |p, q| p / q),
            Rem => map2(x, y, |p, q| p % q),
            Max => map2(x, y, fmax),
            Min => map2(x, y, fmin),
            MaxNan => map2(x, y, fmax_nan),
            MinNan => map2(x, y, fmin_nan),
            CopySign => map2(x, y, f64::copysign),
            Pow | Atan2 | Hypot => map2(x, y, math2(op)),
            And | Or | Xor | Shl | Shr | UMulHi => {
                return Err(Fault::internal(format!("`{}` on floats ({dt})", op.name())))
            }
        }),
        _ => return Err(Fault::internal(format!("`{}` on operands of different types", op.name()))),
    };
    Ok(Tensor::new(out, shape, data))
}

fn math2(op: BinaryOp) -> fn(f64, f64) -> f64 {
    match op {
        BinaryOp::Pow => f64::powf,
        BinaryOp::Atan2 => f64::atan2,
        _ => f64::hypot,
    }
}

fn math1(op: UnaryOp) -> Option<fn(f64) -> f64> {
    use UnaryOp::*;
    Some(match op {
        Exp => f64::exp,
        Exp2 => f64::exp2,
        Exp10 => libm::exp10,
        Expm1 => f64::exp_m1,
        Log => f64::ln,
        Log2 => f64::log2,
        Log10 => f64::log10,
        Log1p => f64::ln_1p,
        Rsqrt => |x| 1.0 / x.sqrt(),
        Cbrt => f64::cbrt,
        Sin => f64::sin,
        Cos => f64::cos,
        Tan => f64::tan,
        Asin => f64::asin,
        Acos => f64::acos,
        Atan => f64::atan,
        Sinh => f64::sinh,
        Cosh => f64::cosh,
        Tanh => f64::tanh,
        Asinh => f64::asinh,
        Acosh => f64::acosh,
        Atanh => f64::atanh,
        Erf => libm::erf,
        Erfc => libm::erfc,
        _ => return None,
    })
}

fn predicate(op: UnaryOp) -> Option<fn(f64) -> bool> {
    use UnaryOp::*;
    Some(match op {
        IsNan => f64::is_nan,
        IsInf => f64::is_infinite,
        IsFinite => f64::is_finite,
        Signbit => f64::is_sign_negative,
        _ => return None,
    })
}

/// 2^(j/16) for j = 0..15, correctly rounded to f64 (computed at 300 bits).
const EXP2_J16: [u64; 16] = [
    0x3ff0000000000000,
    0x3ff0b5586cf9890f,
    0x3ff172b83c7d517b,
    0x3ff2387a6e756238,
    0x3ff306fe0a31b715,
    0x3ff3dea64c123422,
    0x3ff4bfdad5362a27,
    0x3ff5ab07dd485429,
    0x3ff6a09e667f3bcd,
    0x3ff7a11473eb0187,
    0x3ff8ace5422aa0db,
    0x3ff9c49182a3f090,
    0x3ffae89f995ad3ad,
    0x3ffc199bdd85529c,
    0x3ffd5818dcfba487,
    0x3ffea4afa2a490da,
];
/// ln(2)/16 in two parts: the first with 42 significant bits, so that `k * LN2_16_HI` is exact
/// for |k| < 2^11, and `x - k * LN2_16_HI` is exact too (both are multiples of 2^-46).
const LN2_16_HI: f64 = f64::from_bits(0x3fa6_2e42_fefa_3800);
const LN2_16_LO: f64 = f64::from_bits(0x3cee_f357_93c7_6730);

/// `exp` of an f32, correctly rounded to f32, as Triton's interpreter (`np.exp`) gives where numpy
/// uses the C library's `expf`. In f64: x = (16m + j) ln2/16 + r with |r| <= ln2/32, e^r by its
/// Taylor series to r^7, times 2^(j/16) from the table and 2^m: within 2^-51 of e^x, so rounding
/// it to f32 gives the correctly rounded result unless it lies within a few f64 ulps of an f32
/// rounding boundary, where (about one input in 2^22) `libm::exp` decides, as it does outside
/// [-87, 88] (overflow, subnormal results, NaN). `tests` checks every f32 input against the
/// rounded `libm::exp`, itself correctly rounded for all 2^32 of them (checked exhaustively: the
/// 21 inputs whose f64 exp lies within 8 f64 ulps of an f32 boundary were settled at 300 bits;
/// see `tests/arith.rs`). Deterministic across platforms, unlike the system `exp`. The GPU keeps
/// Triton's fast `exp` (`ex2.approx` of `x * log2(e)`, up to 64 ulps away; `trident-gpu` README).
fn exp_f32(x: f32) -> f32 {
    if !(-87.0..=88.0).contains(&x) {
        return libm::exp(x as f64) as f32;
    }
    let xd = x as f64;
    let k = (xd * (16.0 / std::f64::consts::LN_2)).round_ties_even();
    let r = (xd - k * LN2_16_HI) - k * LN2_16_LO;
    let p = 1.0
        + r * (1.0
            + r * (1.0 / 2.0
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    let ki = k as i64;
    let scale = f64::from_bits(((1023 + (ki >> 4)) as u64) << 52);
    let y = p * f64::from_bits(EXP2_J16[(ki & 15) as usize]) * scale;
    // The 29 bits f32 drops: 1 << 28 is the midpoint between two f32 values.
    if (y.to_bits() & 0x1fff_ffff).abs_diff(1 << 28) <= 64 {
        return libm::exp(xd) as f32;
    }
    y as f32
}

pub(crate) fn unary(op: UnaryOp, a: &Tensor, out: Elem) -> Result<Tensor, Fault> {
    use UnaryOp::*;
    let dt = a.dtype()?;
    if let Some(p) = predicate(op) {
        let r: Vec<i64> = match &a.data {
            Data::F(x) => x.iter().map(|&v| p(v as f64) as i64).collect(),
            Data::D(x) => x.iter().map(|&v| p(v) as i64).collect(),
            Data::I(_) => return Err(Fault::internal(format!("`{}` on integers ({dt})", op.name()))),
        };
        return Ok(Tensor::new(out, &a.shape, Data::I(r)));
    }
    let data = match &a.data {
        Data::I(x) => {
            let bits = dt.bits();
            let m = mask(bits);
            let mut r: Vec<i64> = match op {
                Neg => x.iter().map(|v| v.wrapping_neg()).collect(),
                Not => x.iter().map(|v| !v).collect(),
                Abs if unsigned(dt) => x.clone(),
                Abs => x.iter().map(|v| v.wrapping_abs()).collect(),
                Popc => x.iter().map(|&v| (v as u64 & m).count_ones() as i64).collect(),
                Clz => x.iter().map(|&v| ((v as u64 & m).leading_zeros() - (64 - bits)) as i64).collect(),
                _ => return Err(Fault::internal(format!("`{}` on integers ({dt})", op.name()))),
            };
            wrap_all(&mut r, dt);
            Data::I(r)
        }
        Data::F(x) => {
            let mut r: Vec<f32> = match op {
                Neg => x.iter().map(|v| -v).collect(),
                Abs => x.iter().map(|v| v.abs()).collect(),
                Floor => x.iter().map(|v| v.floor()).collect(),
                Ceil => x.iter().map(|v| v.ceil()).collect(),
                Trunc => x.iter().map(|v| v.trunc()).collect(),
                Rint => x.iter().map(|v| v.round_ties_even()).collect(),
                Round => x.iter().map(|v| v.round()).collect(),
                // f32 sqrt is correctly rounded; rounding it again to f16/bf16 is exact.
                Sqrt | SqrtRn => {
                    let mut r: Vec<f32> = x.iter().map(|v| v.sqrt()).collect();
                    round_slice(dt, &mut r);
                    r
                }
                // Correctly rounded in f32; f16/bf16 round that f32 (as numpy's and the GPU's
                // exp, which compute in f32).
                Exp if dt == DType::F32 => x.iter().map(|&v| exp_f32(v)).collect(),
                Exp => x.iter().map(|&v| round_f64(dt, exp_f32(v) as f64)).collect(),
                _ => match math1(op) {
                    Some(f) => x.iter().map(|&v| round_f64(dt, f(v as f64))).collect(),
                    None => return Err(Fault::internal(format!("`{}` on floats ({dt})", op.name()))),
                },
            };
            if matches!(op, Neg | Abs) {
                // Exact, but keeps fp8 NaN encodings canonical.
                round_slice(dt, &mut r);
            }
            Data::F(r)
        }
        Data::D(x) => Data::D(match op {
            Neg => x.iter().map(|v| -v).collect(),
            Abs => x.iter().map(|v| v.abs()).collect(),
            Floor => x.iter().map(|v| v.floor()).collect(),
            Ceil => x.iter().map(|v| v.ceil()).collect(),
            Trunc => x.iter().map(|v| v.trunc()).collect(),
            Rint => x.iter().map(|v| v.round_ties_even()).collect(),
            Round => x.iter().map(|v| v.round()).collect(),
            Sqrt | SqrtRn => x.iter().map(|v| v.sqrt()).collect(),
            _ => match math1(op) {
                Some(f) => x.iter().map(|&v| f(v)).collect(),
                None => return Err(Fault::internal(format!("`{}` on floats ({dt})", op.name()))),
            },
        }),
    };
    Ok(Tensor::new(out, &a.shape, data))
}

pub(crate) fn cmp(pred: CmpPred, a: &Tensor, b: &Tensor, out: Elem) -> Result<Tensor, Fault> {
    let like = result_shape(&[a, b])?;
    let r: Vec<i64> = match (&a.data, &b.data) {
        (Data::I(x), Data::I(y)) => {
            let uns = match a.elem {
                Elem::Ptr { .. } => true,
                Elem::Num(d) => unsigned(d),
            };
            if uns {
                let (x, y): (Vec<u64>, Vec<u64>) =
                    (x.iter().map(|&v| v as u64).collect(), y.iter().map(|&v| v as u64).collect());
                cmp_slices(pred, &x, &y)
            } else {
                cmp_slices(pred, x, y)
            }
        }
        (Data::F(x), Data::F(y)) => cmp_slices(pred, x, y),
        (Data::D(x), Data::D(y)) => cmp_slices(pred, x, y),
        _ => return Err(Fault::internal("comparison of operands of different types".into())),
    };
    Ok(Tensor::new(out, &like.shape, Data::I(r)))
}

/// Comparisons through `PartialOrd`: ordered for floats (false on NaN) except `ne` (true on NaN).
fn cmp_slices<T: Copy + PartialOrd>(pred: CmpPred, x: &[T], y: &[T]) -> Vec<i64> {
    use CmpPred::*;
    match pred {
        Eq => map2(x, y, |p, q| (p == q) as i64),
        Ne => map2(x, y, |p, q| (p != q) as i64),
        Lt => map2(x, y, |p, q| (p < q) as i64),
        Le => map2(x, y, |p, q| (p <= q) as i64),
        Gt => map2(x, y, |p, q| (p > q) as i64),
        Ge => map2(x, y, |p, q| (p >= q) as i64),
    }
}

pub(crate) fn select(c: &Tensor, a: &Tensor, b: &Tensor, out: Elem) -> Result<Tensor, Fault> {
    let like = result_shape(&[c, a, b])?;
    let n = like.len();
    let cond = c.ints()?;
    fn pick<T: Copy>(n: usize, c: &[i64], a: &[T], b: &[T]) -> Vec<T> {
        (0..n).map(|i| if at(c, i) != 0 { at(a, i) } else { at(b, i) }).collect()
    }
    let data = match (&a.data, &b.data) {
        (Data::I(x), Data::I(y)) => Data::I(pick(n, cond, x, y)),
        (Data::F(x), Data::F(y)) => Data::F(pick(n, cond, x, y)),
        (Data::D(x), Data::D(y)) => Data::D(pick(n, cond, x, y)),
        _ => return Err(Fault::internal("select between values of different types".into())),
    };
    Ok(Tensor::new(out, &like.shape, data))
}

/// `a*b + c` in f64 rounded to odd (truncate, set the last bit when inexact), so that
/// rounding the result once more to f32/f16/bf16 gives the correctly rounded fma.
fn fma_odd(a: f64, b: f64, c: f64) -> f64 {
    let p = a * b; // exact: narrow floats have at most 24-bit significands
    let s = p + c;
    if !s.is_finite() {
        return s;
    }
    // TwoSum: the exact rounding error of p + c.
    let bb = s - p;
    let e = (p - (s - bb)) + (c - bb);
    if e == 0.0 {
        return s;
    }
    let mut bits = s.to_bits();
    if (e > 0.0) != (s > 0.0) {
        bits -= 1; // s was rounded away from zero: step back toward zero
    }
    f64::from_bits(bits | 1)
}

pub(crate) fn fma(a: &Tensor, b: &Tensor, c: &Tensor, out: Elem) -> Result<Tensor, Fault> {
    let like = result_shape(&[a, b, c])?;
    let n = like.len();
    let data = match (&a.data, &b.data, &c.data) {
        (Data::F(x), Data::F(y), Data::F(z)) => {
            let dt = a.dtype()?;
            Data::F(if dt == DType::F32 {
                (0..n).map(|i| at(x, i).mul_add(at(y, i), at(z, i))).collect()
            } else {
                (0..n).map(|i| round_f64(dt, fma_odd(at(x, i) as f64, at(y, i) as f64, at(z, i) as f64))).collect()
            })
        }
        (Data::D(x), Data::D(y), Data::D(z)) => Data::D((0..n).map(|i| at(x, i).mul_add(at(y, i), at(z, i))).collect()),
        (Data::I(x), Data::I(y), Data::I(z)) => {
            let dt = a.dtype()?;
            let mut r: Vec<i64> = (0..n).map(|i| at(x, i).wrapping_mul(at(y, i)).wrapping_add(at(z, i))).collect();
            wrap_all(&mut r, dt);
            Data::I(r)
        }
        _ => return Err(Fault::internal("fma of operands of different types".into())),
    };
    Ok(Tensor::new(out, &like.shape, data))
}

/// Raw bits of every element (width of the element type; pointers are 64-bit).
fn to_bits(t: &Tensor) -> Result<Vec<u64>, Fault> {
    Ok(match (&t.data, t.elem) {
        (Data::I(v), Elem::Ptr { .. }) => v.iter().map(|&x| x as u64).collect(),
        (Data::I(v), Elem::Num(d)) => v.iter().map(|&x| x as u64 & mask(d.bits())).collect(),
        (Data::F(v), _) => {
            let d = t.dtype()?;
            v.iter().map(|&x| float::f32_to_bits(d, x)).collect()
        }
        (Data::D(v), _) => v.iter().map(|x| x.to_bits()).collect(),
    })
}

fn from_bits(bits: &[u64], out: Elem) -> Data {
    match out {
        Elem::Ptr { .. } => Data::I(bits.iter().map(|&b| b as i64).collect()),
        Elem::Num(DType::F64) => Data::D(bits.iter().map(|&b| f64::from_bits(b)).collect()),
        Elem::Num(d) if d.is_float() => Data::F(bits.iter().map(|&b| float::bits_to_f32(d, b)).collect()),
        Elem::Num(d) => Data::I(bits.iter().map(|&b| wrap(b as i64, d)).collect()),
    }
}

/// Float (as f64) to an integer type: truncation toward zero, saturating at the type's
/// range, NaN → 0 (the GPU's `cvt.rzi` with its default saturation); to `i1`: `!= 0`.
fn float_to_int(x: f64, d: DType) -> i64 {
    match d {
        DType::I1 => (x != 0.0) as i64,
        // The GPU converts to 16 bits (saturating) and keeps the low byte: 300.0 → 44 (checked on an H100).
        DType::I8 => x as i16 as i8 as i64,
        DType::I16 => x as i16 as i64,
        DType::I32 => x as i32 as i64,
        DType::I64 => x as i64,
        DType::U8 => x as u16 as u8 as i64,
        DType::U16 => x as u16 as i64,
        DType::U32 => x as u32 as i64,
        _ => x as u64 as i64,
    }
}

pub(crate) fn cast(kind: CastKind, rounding: Rounding, a: &Tensor, out: Elem) -> Result<Tensor, Fault> {
    let data = match kind {
        CastKind::Bitcast => {
            let src_bits = match a.elem {
                Elem::Ptr { .. } => 64,
                Elem::Num(d) => d.bits(),
            };
            let dst_bits = match out {
                Elem::Ptr { .. } => 64,
                Elem::Num(d) => d.bits(),
            };
            if src_bits != dst_bits {
                return Err(Fault::internal(format!("bitcast from {} to {out} changes the width", a.elem)));
            }
            from_bits(&to_bits(a)?, out)
        }
        CastKind::PtrToInt | CastKind::IntToPtr => {
            let v = a.ints()?;
            match out {
                Elem::Ptr { .. } => Data::I(v.to_vec()),
                Elem::Num(d) if d.is_int() => Data::I(v.iter().map(|&x| wrap(x, d)).collect()),
                _ => return Err(Fault::internal(format!("{} to {out}", kind.name()))),
            }
        }
        CastKind::Convert => convert(a, out, rounding)?,
    };
    Ok(Tensor::new(out, &a.shape, data))
}

fn convert(a: &Tensor, out: Elem, rounding: Rounding) -> Result<Data, Fault> {
    let Elem::Num(dst) = out else {
        // A value conversion to a pointer type: keep the bits (the front end uses int_to_ptr).
        return Ok(Data::I(a.ints()?.to_vec()));
    };
    let src = match a.elem {
        Elem::Num(d) => d,
        Elem::Ptr { .. } => DType::U64,
    };
    let rtz = rounding == Rounding::Rtz;
    let narrow = |x: f64| if rtz { round_f64_rtz(dst, x) } else { round_f64(dst, x) };
    Ok(match (&a.data, class_of(out)) {
        (Data::I(v), Class::I) => {
            if dst == DType::I1 {
                Data::I(v.iter().map(|&x| (x != 0) as i64).collect())
            } else {
                Data::I(v.iter().map(|&x| wrap(x, dst)).collect())
            }
        }
        (Data::I(v), Class::F) => Data::F(if dst == DType::F32 && !rtz {
            if src == DType::U64 {
                v.iter().map(|&x| x as u64 as f32).collect()
            } else {
                v.iter().map(|&x| x as f32).collect()
            }
        } else if src == DType::U64 {
            v.iter().map(|&x| narrow(x as u64 as f64)).collect()
        } else {
            v.iter().map(|&x| narrow(x as f64)).collect()
        }),
        (Data::I(v), Class::D) => Data::D(if src == DType::U64 {
            v.iter().map(|&x| x as u64 as f64).collect()
        } else {
            v.iter().map(|&x| x as f64).collect()
        }),
        (Data::F(v), Class::I) => Data::I(v.iter().map(|&x| float_to_int(x as f64, dst)).collect()),
        (Data::D(v), Class::I) => Data::I(v.iter().map(|&x| float_to_int(x, dst)).collect()),
        (Data::F(v), Class::F) => Data::F(v.iter().map(|&x| narrow(x as f64)).collect()),
        (Data::D(v), Class::F) => Data::F(v.iter().map(|&x| narrow(x)).collect()),
        (Data::F(v), Class::D) => Data::D(v.iter().map(|&x| x as f64).collect()),
        (Data::D(v), Class::D) => Data::D(v.clone()),
    })
}

/// `ptr + offset * sizeof(pointee)`, in 64-bit wrapping arithmetic on the pointer encoding.
pub(crate) fn addptr(p: &Tensor, off: &Tensor, out: Elem) -> Result<Tensor, Fault> {
    let like = result_shape(&[p, off])?;
    let size = p.elem.pointee().ok_or_else(|| Fault::internal("addptr on a non-pointer".into()))?.size_bytes() as i64;
    let r = map2(p.ints()?, off.ints()?, |a, o| a.wrapping_add(o.wrapping_mul(size)));
    Ok(Tensor::new(out, &like.shape, Data::I(r)))
}

/// The value of a constant op of type `ty` (a tensor type means a splat).
pub(crate) fn constant(c: Const, ty: &Type) -> Result<Tensor, Fault> {
    let elem = ty.elem();
    let one = match (c, elem) {
        (_, Elem::Ptr { .. }) => match c {
            Const::Int(v) => Data::I(vec![v]),
            _ => return Err(Fault::internal(format!("constant {c:?} of pointer type"))),
        },
        (Const::Int(v), Elem::Num(d)) => match class_of(elem) {
            Class::I => Data::I(vec![if d == DType::I1 { (v != 0) as i64 } else { wrap(v, d) }]),
            Class::F => Data::F(vec![round_f64(d, v as f64)]),
            Class::D => Data::D(vec![v as f64]),
        },
        (Const::Bool(b), Elem::Num(d)) => match class_of(elem) {
            Class::I => Data::I(vec![b as i64]),
            Class::F => Data::F(vec![round_f64(d, b as i64 as f64)]),
            Class::D => Data::D(vec![b as i64 as f64]),
        },
        (Const::Float(v), Elem::Num(d)) => match class_of(elem) {
            Class::I => Data::I(vec![float_to_int(v, d)]),
            Class::F => Data::F(vec![round_f64(d, v)]),
            Class::D => Data::D(vec![v]),
        },
    };
    Ok(Tensor::splat_of(ty, &one))
}

#[cfg(test)]
mod tests {
    /// Every f32 input: `exp_f32` equals `libm::exp` rounded to f32 (correctly rounded for all
    /// inputs, see `exp_f32`). About a minute in release on 2 cores:
    /// `cargo test --release -p trident-interp --lib -- --ignored exp_f32_every_input`.
    #[test]
    #[ignore]
    fn exp_f32_every_input() {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
        let n = 1u64 << 32;
        let bad: u64 = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads)
                .map(|t| {
                    s.spawn(move || {
                        let mut bad = 0;
                        for b in t * n / threads..(t + 1) * n / threads {
                            let x = f32::from_bits(b as u32);
                            let (got, want) = (super::exp_f32(x), libm::exp(x as f64) as f32);
                            if got.to_bits() != want.to_bits() && !(got.is_nan() && want.is_nan()) {
                                if bad < 10 {
                                    eprintln!("exp({x:e} = {b:#010x}): {got:e}, want {want:e}");
                                }
                                bad += 1;
                            }
                        }
                        bad
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(bad, 0);
    }
}
