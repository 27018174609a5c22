//! Floating-point arithmetic on f32, f64, f16, bf16 and their packed x2 forms,
//! with rounding modes, `.ftz`, `.sat`, the PTX NaN rules of min/max, and the
//! `.approx` transcendental functions.

use super::warp::{unsupported, Ex, R};
use crate::fp::{self, round_f32, round_f64, to_small, two_prod, two_sum, Small};
use crate::ir::{Instr, Kind, Rnd, Ty};

#[derive(Copy, Clone, PartialEq)]
pub enum Elem {
    F32,
    F64,
    H(Small),
}

pub fn elem_of(t: Ty) -> Option<(Elem, u32)> {
    Some(match t {
        Ty::F32 => (Elem::F32, 1),
        Ty::F64 => (Elem::F64, 1),
        Ty::F16 => (Elem::H(Small::F16), 1),
        Ty::BF16 => (Elem::H(Small::BF16), 1),
        Ty::F16x2 => (Elem::H(Small::F16), 2),
        Ty::BF16x2 => (Elem::H(Small::BF16), 2),
        _ => return None,
    })
}

impl Elem {
    pub fn bits(self) -> u32 {
        match self {
            Elem::F32 => 32,
            Elem::F64 => 64,
            Elem::H(_) => 16,
        }
    }

    pub fn decode(self, b: u64, ftz: bool) -> f64 {
        match self {
            Elem::F32 => {
                let x = f32::from_bits(b as u32);
                (if ftz { fp::ftz32(x) } else { x }) as f64
            }
            Elem::F64 => f64::from_bits(b),
            Elem::H(s) => {
                let v = fp::small_to_f64(s, b as u16);
                if ftz && s == Small::F16 && (b & 0x7c00) == 0 {
                    0.0f64.copysign(v)
                } else {
                    v
                }
            }
        }
    }

    /// Rounds `s + e` to this format and applies `.ftz`, `.sat`, `.relu`, canonical NaN.
    pub fn encode(self, s: f64, e: f64, rnd: Rnd, ftz: bool, sat: bool, relu: bool) -> u64 {
        let (s, e) = if sat {
            if s.is_nan() || s + e <= 0.0 {
                (0.0, 0.0)
            } else if s + e >= 1.0 {
                (1.0, 0.0)
            } else {
                (s, e)
            }
        } else if relu && (s < 0.0 || (s == 0.0 && e < 0.0)) {
            (0.0, 0.0)
        } else {
            (s, e)
        };
        match self {
            Elem::F32 => {
                let r = round_f32(s, e, rnd);
                let r = if ftz { fp::ftz32(r) } else { r };
                fp::canon32(r) as u64
            }
            Elem::F64 => round_f64(s, e, rnd).to_bits(),
            Elem::H(f) => {
                let b = to_small(f, s, e, rnd, false);
                if ftz && f == Small::F16 && b & 0x7c00 == 0 {
                    (b & 0x8000) as u64
                } else {
                    b as u64
                }
            }
        }
    }

    fn canon_nan(self) -> u64 {
        match self {
            Elem::F32 => fp::F32_CANON_NAN as u64,
            Elem::F64 => fp::F64_DEFAULT_NAN,
            Elem::H(_) => fp::F16_CANON_NAN as u64,
        }
    }
}

fn nan_quiet_bit(el: Elem) -> u64 {
    match el {
        Elem::F32 => 0x0040_0000,
        Elem::F64 => 0x0008_0000_0000_0000,
        Elem::H(Small::F16) => 0x0200,
        Elem::H(Small::BF16) => 0x0040,
    }
}

/// min/max with PTX's NaN rules: one NaN operand yields the other; `.NaN` propagates.
/// -0 orders below +0.
fn minmax(x: f64, y: f64, max: bool, nan: bool) -> Option<f64> {
    if x.is_nan() || y.is_nan() {
        if nan || (x.is_nan() && y.is_nan()) {
            return None;
        }
        return Some(if x.is_nan() { y } else { x });
    }
    let key = |v: f64| (v, v.is_sign_negative());
    let (kx, ky) = (key(x), key(y));
    let x_less = kx.0 < ky.0 || (kx.0 == ky.0 && kx.1 && !ky.1);
    Some(if max != x_less { x } else { y })
}

/// The common f32 round-to-nearest operations, lane by lane with native f32
/// arithmetic (IEEE round-to-nearest-even, the same results as the general path).
/// Returns false for operations it does not cover.
fn f32_fast(ins: &Instr, s: &[[u64; 32]; 3], out: &mut [u64; 32]) -> bool {
    use Kind::*;
    let f = |i: usize, l: usize| f32::from_bits(s[i][l] as u32);
    macro_rules! lanes {
        (|$l:ident| $e:expr) => {
            for $l in 0..32 {
                out[$l] = fp::canon32($e) as u64;
            }
        };
    }
    match ins.kind {
        Add => lanes!(|l| f(0, l) + f(1, l)),
        Sub => lanes!(|l| f(0, l) - f(1, l)),
        Mul => lanes!(|l| f(0, l) * f(1, l)),
        Fma | Mad => lanes!(|l| f(0, l).mul_add(f(1, l), f(2, l))),
        Div if !ins.m.approx => lanes!(|l| f(0, l) / f(1, l)),
        Sqrt if !ins.m.approx => lanes!(|l| f(0, l).sqrt()),
        Ex2 if ins.m.ftz => lanes!(|l| fp::ftz32(((f(0, l) as f64).exp2()) as f32)),
        Ex2 => lanes!(|l| ((f(0, l) as f64).exp2()) as f32),
        _ => return false,
    }
    true
}

pub fn exec(ex: &mut Ex, ins: &Instr, mask: u32) -> R<()> {
    use Kind::*;
    let t = ins.ty();
    let (el, n) = elem_of(t).ok_or_else(|| unsupported(ins, "float type"))?;
    let eb = el.bits();
    let em = if eb == 64 { u64::MAX } else { (1u64 << eb) - 1 };
    let o = &ins.ops;
    let m = &ins.m;
    let ftz = m.ftz;
    let rnd = m.rnd;
    let nsrc = match ins.kind {
        Fma | Mad => 3,
        Add | Sub | Mul | Div | Min | Max | Copysign => 2,
        _ => 1,
    };
    let mut srcs = [[0u64; 32]; 3];
    for (i, s) in srcs.iter_mut().enumerate().take(nsrc) {
        *s = ex.src(&o[1 + i])?;
    }
    let mut out = [0u64; 32];
    if el == Elem::F32
        && matches!(rnd, Rnd::None | Rnd::Rn)
        && (!ftz || ins.kind == Ex2)
        && !m.sat
        && !m.relu
        && f32_fast(ins, &srcs, &mut out)
    {
        return ex.dst(&o[0], mask, &out, t.mask());
    }
    for lane in 0..32 {
        if mask >> lane & 1 == 0 {
            continue;
        }
        let mut word = 0u64;
        for k in 0..n {
            let sh = k * eb;
            let raw = |i: usize| (srcs[i][lane] >> sh) & em;
            let x = el.decode(raw(0), ftz);
            let y = if nsrc > 1 { el.decode(raw(1), ftz) } else { 0.0 };
            let z = if nsrc > 2 { el.decode(raw(2), ftz) } else { 0.0 };
            let enc = |s: f64, e: f64| el.encode(s, e, rnd, ftz, m.sat, m.relu);
            let bits: u64 = match ins.kind {
                Add => {
                    let (s, e) = two_sum(x, y);
                    enc(s, e)
                }
                Sub => {
                    let (s, e) = two_sum(x, -y);
                    enc(s, e)
                }
                Mul => {
                    let (p, e) = if el == Elem::F64 { two_prod(x, y) } else { (x * y, 0.0) };
                    enc(p, e)
                }
                Fma | Mad => {
                    if el == Elem::F64 {
                        enc(x.mul_add(y, z), 0.0)
                    } else {
                        let (s, e) = two_sum(x * y, z);
                        enc(s, e)
                    }
                }
                Div => {
                    if m.approx && el == Elem::F32 {
                        enc((x as f32 / y as f32) as f64, 0.0)
                    } else {
                        let q = x / y;
                        let e = if q.is_finite() && y != 0.0 { (-q).mul_add(y, x) / y } else { 0.0 };
                        enc(q, e)
                    }
                }
                Rcp => {
                    let q = 1.0 / x;
                    let e = if q.is_finite() && !m.approx { (-q).mul_add(x, 1.0) / x } else { 0.0 };
                    enc(q, e)
                }
                Sqrt => {
                    let q = x.sqrt();
                    let e = if q.is_finite() && q > 0.0 && !m.approx { (-q).mul_add(q, x) / (2.0 * q) } else { 0.0 };
                    enc(q, e)
                }
                Rsqrt => enc(1.0 / x.sqrt(), 0.0),
                Ex2 => enc(x.exp2(), 0.0),
                Lg2 => enc(x.log2(), 0.0),
                Sin => enc(x.sin(), 0.0),
                Cos => enc(x.cos(), 0.0),
                Tanh => enc(x.tanh(), 0.0),
                Min | Max => match minmax(x, y, ins.kind == Max, m.nan) {
                    // Two NaNs: f32 gives the canonical NaN, f16/bf16/f64 return the first
                    // operand (measured on an H100).
                    None if !m.nan && el != Elem::F32 => raw(0) | nan_quiet_bit(el),
                    None => el.canon_nan(),
                    Some(v) => {
                        // The chosen operand, bit for bit (after ftz), unless relu clamps it.
                        let r = if v.to_bits() == x.to_bits() { raw(0) } else { raw(1) };
                        if m.relu && (v < 0.0 || v.is_nan()) {
                            0
                        } else if ftz {
                            enc(v, 0.0)
                        } else {
                            r
                        }
                    }
                },
                Abs | Neg if x.is_nan() => match el {
                    // NaN in: f32/f16/bf16 give the canonical NaN, f64 returns the input.
                    Elem::F64 => raw(0),
                    _ => el.canon_nan(),
                },
                Abs | Neg => {
                    let sign = 1u64 << (eb - 1);
                    let b = if ftz { el.encode(x, 0.0, Rnd::Rn, false, false, false) } else { raw(0) };
                    if ins.kind == Abs {
                        b & !sign
                    } else {
                        b ^ sign
                    }
                }
                Copysign => {
                    let sign = 1u64 << (eb - 1);
                    (raw(1) & !sign) | (raw(0) & sign)
                }
                Testp => {
                    let r = match m.count {
                        1 => x.is_finite(),
                        2 => x.is_infinite(),
                        3 => !x.is_nan(),
                        4 => x.is_nan(),
                        5 => x.is_normal() && (el != Elem::F32 || (x as f32).is_normal()),
                        _ => match el {
                            Elem::F32 => (x as f32).is_subnormal(),
                            _ => x.is_subnormal(),
                        },
                    };
                    r as u64
                }
                _ => return Err(unsupported(ins, "float op")),
            };
            // f64 follows IEEE propagation: a NaN operand comes back (quieted), an
            // invalid operation gives the default NaN 0xfff8... (measured on an H100).
            let bits = if el == Elem::F64
                && f64::from_bits(bits).is_nan()
                && !matches!(ins.kind, Abs | Neg | Min | Max | Copysign | Testp)
            {
                (0..nsrc)
                    .map(raw)
                    .find(|&b| f64::from_bits(b).is_nan())
                    .map(|b| b | nan_quiet_bit(el))
                    .unwrap_or(fp::F64_DEFAULT_NAN)
            } else {
                bits
            };
            word |= (bits & em) << sh;
        }
        out[lane] = word;
    }
    let width = if ins.kind == Testp { 1 } else { t.mask() };
    ex.dst(&o[0], mask, &out, width)
}
