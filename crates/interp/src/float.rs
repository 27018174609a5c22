//! Rounding of float results to their element type, and the conversions between float formats.
//!
//! Narrow floats (`f16`, `bf16`, fp8) live in `f32` storage; after every op the
//! result is rounded to the element type. For `+ - * / sqrt` computing in f32
//! and rounding once more is exact (f32 has at least 2p+2 bits for p = 11 and
//! p = 8), so the result equals the correctly rounded narrow operation.
//! Results computed in f64 (math functions) are rounded to narrow types
//! through an f32 rounded *to odd*, which makes the two-step rounding equal to
//! a single correct rounding.

use half::f16;
use std::sync::OnceLock;
use trident_core::{fp8, DType};

/// Rounds an f32 to the nearest bf16 (ties to even), kept as f32.
#[inline(always)]
pub(crate) fn bf16_rne(x: f32) -> f32 {
    let b = x.to_bits();
    if x.is_nan() {
        return f32::from_bits((b | 0x0040_0000) & 0xffff_0000);
    }
    let lsb = (b >> 16) & 1;
    f32::from_bits(b.wrapping_add(0x7fff + lsb) & 0xffff_0000)
}

#[inline(always)]
pub(crate) fn f16_rne(x: f32) -> f32 {
    f16::from_f32(x).to_f32()
}

/// f16 bits → f32, inline (no run-time CPU feature check in the hot loop).
#[inline(always)]
pub(crate) fn f16_bits_to_f32(b: u16) -> f32 {
    let sign = ((b as u32) & 0x8000) << 16;
    let exp = ((b >> 10) & 0x1f) as u32;
    let man = (b & 0x3ff) as u32;
    match exp {
        0 => {
            let v = man as f32 * f32::from_bits(0x3380_0000); // man * 2^-24, exact
            f32::from_bits(v.to_bits() | sign)
        }
        31 => f32::from_bits(sign | 0x7f80_0000 | (man << 13)),
        _ => f32::from_bits(sign | ((exp + 112) << 23) | (man << 13)),
    }
}

/// f32 → f16 bits, rounding to nearest even (exact for values already in f16).
#[inline(always)]
pub(crate) fn f32_to_f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let exp = (b >> 23) & 0xff;
    // Normal f16 range with nothing below the f16 mantissa: a pure re-biasing.
    if (113..=142).contains(&exp) && b & 0x1fff == 0 {
        let sign = ((b >> 16) & 0x8000) as u16;
        return sign | (((exp - 112) << 10) as u16) | (((b >> 13) & 0x3ff) as u16);
    }
    f16::from_f32(x).to_bits()
}

fn fp8_table(e5m2: bool) -> &'static [f32; 256] {
    static E4M3: OnceLock<[f32; 256]> = OnceLock::new();
    static E5M2: OnceLock<[f32; 256]> = OnceLock::new();
    let (cell, dec): (_, fn(u8) -> f64) = if e5m2 { (&E5M2, fp8::e5m2_to_f64) } else { (&E4M3, fp8::e4m3_to_f64) };
    cell.get_or_init(|| std::array::from_fn(|i| dec(i as u8) as f32))
}

/// Decodes an fp8 code of the given type.
#[inline]
pub(crate) fn fp8_decode(dt: DType, b: u8) -> f32 {
    fp8_table(dt == DType::F8E5M2)[b as usize]
}

/// Encodes to fp8, rounding to nearest even and saturating to the largest finite
/// value (as `cvt.rn.satfinite` does); NaN stays NaN.
pub(crate) fn fp8_encode(dt: DType, x: f64) -> u8 {
    if dt == DType::F8E5M2 {
        fp8::f64_to_e5m2(x, true)
    } else {
        fp8::f64_to_e4m3(x, true)
    }
}

/// Rounds an f32 to element type `dt` (a float type stored as f32), ties to even.
#[inline(always)]
pub(crate) fn round_f32(dt: DType, x: f32) -> f32 {
    match dt {
        DType::F16 => f16_rne(x),
        DType::BF16 => bf16_rne(x),
        DType::F8E4M3 | DType::F8E5M2 => fp8_decode(dt, fp8_encode(dt, x as f64)),
        _ => x,
    }
}

/// Rounds every element to `dt` in place (no-op for f32).
pub(crate) fn round_slice(dt: DType, v: &mut [f32]) {
    match dt {
        DType::F16 => v.iter_mut().for_each(|x| *x = f16_rne(*x)),
        DType::BF16 => v.iter_mut().for_each(|x| *x = bf16_rne(*x)),
        DType::F8E4M3 | DType::F8E5M2 => v.iter_mut().for_each(|x| *x = round_f32(dt, *x)),
        _ => {}
    }
}

/// f64 → f32 rounded to odd: truncate, then set the last bit if anything was cut off.
/// A later round-to-nearest to a format with at least two bits fewer is then exact.
fn f64_to_f32_odd(x: f64) -> f32 {
    let r = x as f32;
    if !r.is_finite() || r as f64 == x {
        // Infinite results come from overflow: any rounding gives inf for narrower formats too.
        return r;
    }
    let mut b = r.to_bits();
    if (r as f64).abs() > x.abs() {
        b -= 1; // step toward zero
    }
    f32::from_bits(b | 1)
}

/// Rounds an f64 to float type `dt` (ties to even), returning the f32 storage value (for F-class types).
pub(crate) fn round_f64(dt: DType, x: f64) -> f32 {
    match dt {
        DType::F32 => x as f32,
        DType::F16 => f16_rne(f64_to_f32_odd(x)),
        DType::BF16 => bf16_rne(f64_to_f32_odd(x)),
        DType::F8E4M3 | DType::F8E5M2 => fp8_decode(dt, fp8_encode(dt, x)),
        _ => x as f32,
    }
}

/// The bit pattern of a value of float type `dt` held in f32 storage.
pub(crate) fn f32_to_bits(dt: DType, x: f32) -> u64 {
    match dt {
        DType::F16 => f32_to_f16_bits(x) as u64,
        DType::BF16 => (x.to_bits() >> 16) as u64,
        DType::F8E4M3 | DType::F8E5M2 => fp8_encode(dt, x as f64) as u64,
        _ => x.to_bits() as u64,
    }
}

/// The f32 storage value of a bit pattern of float type `dt`.
pub(crate) fn bits_to_f32(dt: DType, b: u64) -> f32 {
    match dt {
        DType::F16 => f16_bits_to_f32(b as u16),
        DType::BF16 => f32::from_bits((b as u32) << 16),
        DType::F8E4M3 | DType::F8E5M2 => fp8_decode(dt, b as u8),
        _ => f32::from_bits(b as u32),
    }
}

/// Moves a nonzero finite-or-infinite bit pattern of `dt` one step toward zero.
fn step_toward_zero(dt: DType, x: f32) -> f32 {
    let b = f32_to_bits(dt, x);
    let sign_bit = 1u64 << (dt.bits() - 1);
    if b & !sign_bit == 0 {
        return x;
    }
    bits_to_f32(dt, b - 1)
}

/// Narrowing float conversion with round-toward-zero (`rounding = rtz`) to an F-class type.
pub(crate) fn round_f64_rtz(dt: DType, x: f64) -> f32 {
    if x.is_nan() {
        return round_f64(dt, x);
    }
    let r = round_f64(dt, x);
    if (r as f64).abs() > x.abs() {
        step_toward_zero(dt, r)
    } else {
        r
    }
}

/// What the tensor cores see of an f32 input of a tf32 `dot`: the top 10 mantissa bits,
/// the rest dropped (truncation toward zero). Compiled Triton does not round the inputs
/// (no `cvt.rna.tf32.f32`); on an H100, results match truncated inputs (see the README).
#[inline(always)]
pub(crate) fn tf32_trunc(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    f32::from_bits(x.to_bits() & !0x1fff)
}

/// IEEE maxNum on a pair, with +0 > -0: NaN-suppressing `max` as the GPU's `max.f32` computes it.
#[inline(always)]
pub(crate) fn fmax<T: Flt>(a: T, b: T) -> T {
    if a.is_nan() {
        b
    } else if b.is_nan() || a > b {
        a
    } else if b > a || a.is_sign_negative() {
        b // (when equal: prefer +0 over -0)
    } else {
        a
    }
}

#[inline(always)]
pub(crate) fn fmin<T: Flt>(a: T, b: T) -> T {
    if a.is_nan() {
        b
    } else if b.is_nan() || a < b || (a == b && a.is_sign_negative()) {
        a // (when equal: prefer -0 over +0)
    } else {
        b
    }
}

/// NaN-propagating max (`propagate_nan=ALL`).
#[inline(always)]
pub(crate) fn fmax_nan<T: Flt>(a: T, b: T) -> T {
    if a.is_nan() {
        a
    } else if b.is_nan() {
        b
    } else {
        fmax(a, b)
    }
}

#[inline(always)]
pub(crate) fn fmin_nan<T: Flt>(a: T, b: T) -> T {
    if a.is_nan() {
        a
    } else if b.is_nan() {
        b
    } else {
        fmin(a, b)
    }
}

/// The float operations generic code needs from f32 and f64.
pub(crate) trait Flt: Copy + PartialOrd + std::fmt::Debug {
    fn is_nan(self) -> bool;
    fn is_sign_negative(self) -> bool;
}

impl Flt for f32 {
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    fn is_sign_negative(self) -> bool {
        f32::is_sign_negative(self)
    }
}

impl Flt for f64 {
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    fn is_sign_negative(self) -> bool {
        f64::is_sign_negative(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_f16_conversions_match_half() {
        for b in 0..=u16::MAX {
            let x = f16::from_bits(b).to_f32();
            let y = f16_bits_to_f32(b);
            assert!(x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()), "{b:#x}");
            if !x.is_nan() {
                assert_eq!(f32_to_f16_bits(x), b, "{b:#x}");
            }
        }
        for x in [1.0f32 + 2f32.powi(-11), 65520.0, 1e-8, -3.0e-5] {
            assert_eq!(f32_to_f16_bits(x), f16::from_f32(x).to_bits(), "{x}");
        }
    }

    #[test]
    fn bf16_ties_to_even() {
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to 1 (even).
        assert_eq!(bf16_rne(1.0 + 2f32.powi(-8)), 1.0);
        assert_eq!(bf16_rne(1.0 + 3.0 * 2f32.powi(-8)), 1.0 + 2.0 * 2f32.powi(-7));
        assert!(bf16_rne(f32::NAN).is_nan());
        assert_eq!(bf16_rne(f32::MAX), f32::INFINITY);
    }

    #[test]
    fn f64_to_f16_single_rounding() {
        // Just above the halfway point between 1 and 1+2^-10: must round up, which a
        // naive f64→f32→f16 path (rounding to f32 first to exactly halfway) gets wrong.
        let x = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(round_f64(DType::F16, x), 1.0 + 2f32.powi(-10));
        assert_eq!(round_f64(DType::F16, 1.0 + 2f64.powi(-11)), 1.0);
    }

    #[test]
    fn rtz_and_tf32() {
        assert_eq!(round_f64_rtz(DType::F16, 1.0 + 0.9 * 2f64.powi(-10)), 1.0);
        assert_eq!(round_f64_rtz(DType::F16, -1e6), -65504.0);
        assert_eq!(round_f64_rtz(DType::F32, 1.0 + 0.9 * 2f64.powi(-23)), 1.0);
        assert_eq!(tf32_trunc(1.0 + 2f32.powi(-10) + 2f32.powi(-11)), 1.0 + 2f32.powi(-10));
        assert_eq!(tf32_trunc(-(1.0 + 2f32.powi(-11))), -1.0);
        assert_eq!(tf32_trunc(f32::INFINITY), f32::INFINITY);
        assert!(tf32_trunc(f32::NAN).is_nan());
    }

    #[test]
    fn max_min_nan_rules() {
        assert_eq!(fmax(f32::NAN, 1.0f32), 1.0);
        assert!(fmax_nan(1.0f32, f32::NAN).is_nan());
        assert!(fmax(-0.0f32, 0.0).is_sign_positive());
        assert!(fmin(0.0f32, -0.0).is_sign_negative());
    }
}
