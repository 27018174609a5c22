//! Floating-point helpers: correctly rounded f32/f64 results under every PTX
//! rounding mode (from an f64 value plus its exact error term), the small formats
//! (f16, bf16, tf32, fp8) with directed rounding and saturation, flush-to-zero,
//! and the GPU's canonical NaN.

use crate::ir::Rnd;
use half::{bf16, f16};

pub const F32_CANON_NAN: u32 = 0x7fff_ffff;
pub const F16_CANON_NAN: u16 = 0x7fff;
pub const F64_DEFAULT_NAN: u64 = 0xfff8_0000_0000_0000;

/// `s + e` exactly equals `a + b`.
pub fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    (s, if e.is_finite() { e } else { 0.0 })
}

/// `p + e` exactly equals `a * b`.
pub fn two_prod(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    let e = a.mul_add(b, -p);
    (p, if e.is_finite() { e } else { 0.0 })
}

/// Rounds the exact value `s + e` (s the f64 nearest to it) to f32.
pub fn round_f32(s: f64, e: f64, rnd: Rnd) -> f32 {
    let r0 = s as f32;
    if matches!(rnd.dir(), Rnd::Rn) && rnd != Rnd::Rna {
        // `s` rounds like the exact value unless it sits exactly halfway between two
        // f32 values (low 29 mantissa bits 1000...0) or in the subnormal range.
        let halfway = s.to_bits() & 0x1fff_ffff == 0x1000_0000;
        if e == 0.0 || s.is_nan() || (!halfway && s.abs() >= f32::MIN_POSITIVE as f64) {
            return r0;
        }
    } else if s.is_nan() {
        return r0;
    }
    if r0.is_infinite() && !s.is_infinite() {
        // Overflow: nearest keeps infinity; directed modes may stop at the largest finite value.
        let big = f32::MAX.copysign(r0);
        return match rnd.dir() {
            Rnd::Rz => big,
            Rnd::Rm if r0 > 0.0 => big,
            Rnd::Rp if r0 < 0.0 => big,
            _ => r0,
        };
    }
    // Sign of (candidate - exact).
    let diff = |c: f32| (c as f64 - s) - e;
    let d0 = diff(r0);
    if d0 == 0.0 {
        return r0;
    }
    let pos = s > 0.0 || (s == 0.0 && e > 0.0);
    match rnd.dir() {
        Rnd::Rm => {
            if d0 > 0.0 {
                r0.next_down()
            } else {
                r0
            }
        }
        Rnd::Rp => {
            if d0 < 0.0 {
                r0.next_up()
            } else {
                r0
            }
        }
        Rnd::Rz => {
            if pos && d0 > 0.0 {
                r0.next_down()
            } else if !pos && d0 < 0.0 {
                r0.next_up()
            } else {
                r0
            }
        }
        _ => {
            let other = if d0 > 0.0 { r0.next_down() } else { r0.next_up() };
            let d1 = diff(other);
            if d1.abs() < d0.abs() {
                other
            } else if d1.abs() == d0.abs() {
                let away = if other.abs() > r0.abs() { other } else { r0 };
                if rnd == Rnd::Rna {
                    away
                } else if r0.to_bits() & 1 == 0 {
                    r0
                } else {
                    other
                }
            } else {
                r0
            }
        }
    }
}

/// Rounds the exact value `s + e` (s already the nearest f64) in direction `rnd`.
pub fn round_f64(s: f64, e: f64, rnd: Rnd) -> f64 {
    if e == 0.0 || !s.is_finite() {
        return s;
    }
    match rnd.dir() {
        Rnd::Rm if e < 0.0 => s.next_down(),
        Rnd::Rp if e > 0.0 => s.next_up(),
        Rnd::Rz if s > 0.0 && e < 0.0 => s.next_down(),
        Rnd::Rz if s < 0.0 && e > 0.0 => s.next_up(),
        _ => s,
    }
}

pub fn ftz32(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

pub fn canon32(x: f32) -> u32 {
    if x.is_nan() {
        F32_CANON_NAN
    } else {
        x.to_bits()
    }
}

/// Rounds an integral value in mode `rnd` (the `.rni/.rzi/.rmi/.rpi` family).
pub fn round_int(x: f64, rnd: Rnd) -> f64 {
    match rnd.dir() {
        Rnd::Rz => x.trunc(),
        Rnd::Rm => x.floor(),
        Rnd::Rp => x.ceil(),
        Rnd::Rna => x.round(),
        _ => x.round_ties_even(),
    }
}

/// Half-precision formats the emulator converts to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Small {
    F16,
    BF16,
}

pub fn small_to_f64(fmt: Small, bits: u16) -> f64 {
    match fmt {
        Small::F16 => f16::from_bits(bits).to_f64(),
        Small::BF16 => bf16::from_bits(bits).to_f64(),
    }
}

/// Round to nearest-even. Not `half`'s `from_f64`: it drops the low 32 bits of the f64
/// first, so a value just above a tie (an f32 like 158.50001526 → bf16) rounded down.
fn small_rn(fmt: Small, x: f64) -> u16 {
    match fmt {
        Small::F16 => trident_core::tensor::f64_to_f16_bits(x),
        Small::BF16 => trident_core::tensor::f64_to_bf16_bits(x),
    }
}

/// Next representable value up (`up`) or down from `bits` in a sign-magnitude 16-bit format.
fn small_step(bits: u16, up: bool) -> u16 {
    let neg = bits & 0x8000 != 0;
    let mag = bits & 0x7fff;
    if mag == 0 {
        return if up { 1 } else { 0x8001 };
    }
    if up != neg {
        bits + 1
    } else {
        bits - 1
    }
}

/// Rounds `x + e` to f16/bf16 in mode `rnd`; `satfinite` clamps to the largest finite value.
pub fn to_small(fmt: Small, x: f64, e: f64, rnd: Rnd, satfinite: bool) -> u16 {
    if x.is_nan() {
        return F16_CANON_NAN;
    }
    let mut r = small_rn(fmt, x);
    let dir = rnd.dir();
    // To nearest, infinity stands for the first power of two past the range (the value a
    // finite result would round to there): a value past the range's last midpoint becomes
    // infinity, not the largest finite value, however far past it is.
    let nearest = matches!(dir, Rnd::Rn | Rnd::Rna);
    let past = match fmt {
        Small::F16 => 65536.0,
        Small::BF16 => 2f64.powi(128),
    };
    let value = |b: u16| {
        let v = small_to_f64(fmt, b);
        if nearest && v.is_infinite() {
            past.copysign(v)
        } else {
            v
        }
    };
    let diff = |b: u16| (value(b) - x) - e;
    let d0 = diff(r);
    if d0 != 0.0 && !(dir == Rnd::Rn && e == 0.0) {
        let pos = x > 0.0 || (x == 0.0 && e > 0.0);
        let down = small_step(r, false);
        let up = small_step(r, true);
        r = match dir {
            Rnd::Rm if d0 > 0.0 => down,
            Rnd::Rp if d0 < 0.0 => up,
            Rnd::Rz if pos && d0 > 0.0 => down,
            Rnd::Rz if !pos && d0 < 0.0 => up,
            Rnd::Rn | Rnd::Rna => {
                let other = if d0 > 0.0 { down } else { up };
                let d1 = diff(other);
                if d1.abs() < d0.abs() || (d1.abs() == d0.abs() && (rnd == Rnd::Rna || r & 1 == 1)) {
                    other
                } else {
                    r
                }
            }
            _ => r,
        };
        // Directed rounding never produces infinity from a finite value past the range
        // in the direction away from it.
        let mag = r & 0x7fff;
        let inf = match fmt {
            Small::F16 => 0x7c00,
            Small::BF16 => 0x7f80,
        };
        if mag > inf {
            r = (r & 0x8000) | (inf - 1);
        }
    }
    if satfinite {
        let v = small_to_f64(fmt, r);
        if v.is_infinite() {
            let max = match fmt {
                Small::F16 => 0x7bff,
                Small::BF16 => 0x7f7f,
            };
            r = (r & 0x8000) | max;
        }
    }
    r
}

/// f32 → tf32 bits (kept in a 32-bit container, low 13 bits zero).
pub fn to_tf32(x: f32, rnd: Rnd) -> u32 {
    let b = x.to_bits();
    if x.is_nan() {
        return F32_CANON_NAN;
    }
    if x.is_infinite() {
        return b;
    }
    match rnd.dir() {
        Rnd::Rz => b & !0x1fff,
        Rnd::Rn => {
            let lsb = (b >> 13) & 1;
            (b.wrapping_add(0xfff + lsb)) & !0x1fff
        }
        _ => (b.wrapping_add(0x1000)) & !0x1fff,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An integer far past f16's range (`cvt.rn.f16.s64`, whose value is `s + e`) rounds to
    /// infinity to nearest, and to the largest finite value toward zero; just below the last
    /// midpoint (65520) it rounds to 65504.
    #[test]
    fn integers_past_the_range_round_to_infinity() {
        let big = 8_415_188_317_423_085_357i128;
        let (s, e) = (big as f64, (big - big as f64 as i128) as f64);
        assert!(e != 0.0);
        assert_eq!(to_small(Small::F16, s, e, Rnd::Rn, false), 0x7c00);
        assert_eq!(to_small(Small::F16, -s, -e, Rnd::Rn, false), 0xfc00);
        assert_eq!(to_small(Small::F16, s, e, Rnd::Rz, false), 0x7bff);
        assert_eq!(to_small(Small::F16, -s, -e, Rnd::Rp, false), 0xfbff);
        assert_eq!(to_small(Small::F16, s, e, Rnd::Rn, true), 0x7bff, "satfinite");
        assert_eq!(to_small(Small::F16, 65519.0, 0.25, Rnd::Rn, false), 0x7bff);
        assert_eq!(to_small(Small::F16, 65520.0, 0.0, Rnd::Rn, false), 0x7c00);
        assert_eq!(to_small(Small::F16, 65520.0, 2f64.powi(-30), Rnd::Rn, false), 0x7c00);
        assert_eq!(to_small(Small::F16, 65520.0, -2f64.powi(-30), Rnd::Rn, false), 0x7bff);
        assert_eq!(to_small(Small::BF16, 1e300, 1.0, Rnd::Rn, false), 0x7f80);
    }
}
