//! `cvt`: every pair of integer and float types with rounding, saturation and
//! `.ftz`, plus the packed forms (`f16x2/bf16x2` from two f32, fp8 `e4m3x2/e5m2x2`
//! from two f32 or an f16x2, and back to f16x2).

use super::float::{elem_of, Elem};
use super::int::as_i128;
use super::warp::{unsupported, Ex, R};
use crate::fp::{self, round_int, Small};
use crate::ir::{Instr, Rnd, Ty};
use trident_core::fp8;

fn is_fp8x2(t: Ty) -> bool {
    matches!(t, Ty::E4M3x2 | Ty::E5M2x2)
}

fn to_fp8(t: Ty, x: f64, sat: bool, relu: bool) -> u64 {
    let x = if relu && x < 0.0 { 0.0 } else { x };
    (match t {
        Ty::E4M3x2 => fp8::f64_to_e4m3(x, sat),
        _ => fp8::f64_to_e5m2(x, sat),
    }) as u64
}

fn from_fp8(t: Ty, b: u64) -> f64 {
    match t {
        Ty::E4M3x2 => fp8::e4m3_to_f64(b as u8),
        _ => fp8::e5m2_to_f64(b as u8),
    }
}

/// Converts an f64 (plus error term) to a float type `dt` (scalar).
fn float_to(dt: Ty, ins: &Instr, x: f64, e: f64) -> R<u64> {
    let m = &ins.m;
    let rnd = if m.rnd == Rnd::None { Rnd::Rn } else { m.rnd };
    Ok(match dt {
        Ty::TF32 => {
            let f = fp::round_f32(x, e, Rnd::Rn);
            fp::to_tf32(f, rnd) as u64
        }
        _ => {
            let (el, n) = elem_of(dt).ok_or_else(|| unsupported(ins, "cvt destination"))?;
            if n != 1 {
                return Err(unsupported(ins, "packed cvt destination"));
            }
            match el {
                Elem::H(f) if m.satfinite => {
                    let b = fp::to_small(f, x, e, rnd, true);
                    if m.relu && x < 0.0 {
                        0
                    } else {
                        b as u64
                    }
                }
                _ => el.encode(x, e, rnd, m.ftz, m.sat, m.relu),
            }
        }
    })
}

pub fn exec(ex: &mut Ex, ins: &Instr, mask: u32) -> R<()> {
    let dt = ins.tys.first().copied().ok_or_else(|| unsupported(ins, "cvt without types"))?;
    let st = ins.tys.get(1).copied().ok_or_else(|| unsupported(ins, "cvt needs two types"))?;
    let m = &ins.m;
    let o = &ins.ops;
    let a = ex.src(&o[1])?;
    let b = if o.len() > 2 { Some(ex.src(&o[2])?) } else { None };
    let mut out = [0u64; 32];
    let sfloat = st.is_float() && !is_fp8x2(st);
    for l in 0..32 {
        if mask >> l & 1 == 0 {
            continue;
        }
        let v = a[l];
        out[l] = match (dt, st) {
            // Packed destinations from two f32 sources: `a` goes to the high half.
            (Ty::F16x2 | Ty::BF16x2, Ty::F32) => {
                let bb = b.ok_or_else(|| unsupported(ins, "packed cvt needs two sources"))?;
                let half = if dt == Ty::F16x2 { Ty::F16 } else { Ty::BF16 };
                let hi = float_to(half, ins, f32::from_bits(v as u32) as f64, 0.0)?;
                let lo = float_to(half, ins, f32::from_bits(bb[l] as u32) as f64, 0.0)?;
                (hi << 16) | lo
            }
            (Ty::E4M3x2 | Ty::E5M2x2, Ty::F32) => {
                let bb = b.ok_or_else(|| unsupported(ins, "packed cvt needs two sources"))?;
                let hi = to_fp8(dt, f32::from_bits(v as u32) as f64, m.satfinite, m.relu);
                let lo = to_fp8(dt, f32::from_bits(bb[l] as u32) as f64, m.satfinite, m.relu);
                (hi << 8) | lo
            }
            (Ty::E4M3x2 | Ty::E5M2x2, Ty::F16x2) => {
                let lo = to_fp8(dt, fp::small_to_f64(Small::F16, v as u16), m.satfinite, m.relu);
                let hi = to_fp8(dt, fp::small_to_f64(Small::F16, (v >> 16) as u16), m.satfinite, m.relu);
                (hi << 8) | lo
            }
            (Ty::F16x2, Ty::E4M3x2 | Ty::E5M2x2) => {
                let lo = float_to(Ty::F16, ins, from_fp8(st, v & 0xff), 0.0)?;
                let hi = float_to(Ty::F16, ins, from_fp8(st, (v >> 8) & 0xff), 0.0)?;
                (hi << 16) | lo
            }
            _ if !dt.is_float() && !sfloat => {
                // Integer to integer: sign comes from the source type.
                let x = as_i128(v, st);
                if m.sat {
                    let (lo, hi) = int_range(dt);
                    x.clamp(lo, hi) as u64
                } else {
                    x as u64
                }
            }
            _ if !dt.is_float() => {
                let (el, _) = elem_of(st).ok_or_else(|| unsupported(ins, "cvt source"))?;
                let x = el.decode(v, m.ftz);
                if x.is_nan() {
                    0
                } else {
                    let r = round_int(x, if m.rnd == Rnd::None { Rnd::Rzi } else { m.rnd });
                    let (lo, hi) = int_range(dt);
                    let r = r.clamp(lo as f64, hi as f64);
                    (r as i128).clamp(lo, hi) as u64
                }
            }
            _ if !sfloat => {
                let x = as_i128(v, st);
                let s = x as f64;
                let e = (x - s as i128) as f64;
                float_to(dt, ins, s, e)?
            }
            _ => {
                let x = match st {
                    Ty::TF32 => f32::from_bits(v as u32) as f64,
                    _ => elem_of(st).ok_or_else(|| unsupported(ins, "cvt source"))?.0.decode(v, m.ftz),
                };
                if let (true, Some(b)) = (x.is_nan(), nan_convert(dt, st, v)) {
                    out[l] = b;
                    continue;
                }
                if m.rnd.is_int() {
                    let r = round_int(x, m.rnd);
                    float_to(dt, ins, r, 0.0)?
                } else {
                    float_to(dt, ins, x, 0.0)?
                }
            }
        };
    }
    ex.dst(&o[0], mask, &out, dt.mask())
}

/// NaN through float-to-float conversions, as an H100 does it: f64↔f32 and bf16→f32
/// keep sign and (truncated) payload; everything else gives the canonical NaN.
fn nan_convert(dt: Ty, st: Ty, v: u64) -> Option<u64> {
    Some(match (dt, st) {
        (Ty::F32, Ty::F64) => (f64::from_bits(v) as f32).to_bits() as u64,
        (Ty::F64, Ty::F32) => (f32::from_bits(v as u32) as f64).to_bits(),
        (Ty::F32, Ty::BF16) => (v & 0xffff) << 16,
        (Ty::TF32, Ty::F32) => v & 0xffff_e000,
        _ => return None,
    })
}

fn int_range(t: Ty) -> (i128, i128) {
    let b = t.bits();
    if t.is_signed() {
        (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1)
    } else {
        (0, (1i128 << b) - 1)
    }
}
