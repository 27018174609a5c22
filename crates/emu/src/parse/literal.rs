//! Numeric literals of PTX: integers (decimal, hex, octal, binary, `U` suffix),
//! hex floats (`0f` single, `0d` double) and decimal floats.

use crate::ir::Ty;

/// A literal before it meets the type of the instruction that uses it.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Lit {
    Int(u64),
    /// `0fXXXXXXXX`: the bits of an f32.
    F32Bits(u32),
    /// `0dXXXXXXXXXXXXXXXX`: the bits of an f64.
    F64Bits(u64),
    Float(f64),
}

pub fn parse_lit(text: &str, neg: bool) -> Option<Lit> {
    let t = text.strip_suffix(['U', 'u']).unwrap_or(text);
    let lower = t.to_ascii_lowercase();
    let lit = if let Some(h) = lower.strip_prefix("0f") {
        if h.len() != 8 {
            return None;
        }
        Lit::F32Bits(u32::from_str_radix(h, 16).ok()?)
    } else if let Some(h) = lower.strip_prefix("0d") {
        if h.len() != 16 {
            return None;
        }
        Lit::F64Bits(u64::from_str_radix(h, 16).ok()?)
    } else if let Some(h) = lower.strip_prefix("0x") {
        Lit::Int(u64::from_str_radix(h, 16).ok()?)
    } else if let Some(h) = lower.strip_prefix("0b") {
        Lit::Int(u64::from_str_radix(h, 2).ok()?)
    } else if lower.contains('.') || lower.contains('e') {
        Lit::Float(lower.parse::<f64>().ok()?)
    } else if lower.len() > 1 && lower.starts_with('0') {
        Lit::Int(u64::from_str_radix(&lower[1..], 8).ok()?)
    } else {
        Lit::Int(lower.parse::<u64>().ok()?)
    };
    Some(if neg {
        match lit {
            Lit::Int(v) => Lit::Int(v.wrapping_neg()),
            Lit::F32Bits(b) => Lit::F32Bits(b ^ 0x8000_0000),
            Lit::F64Bits(b) => Lit::F64Bits(b ^ (1 << 63)),
            Lit::Float(f) => Lit::Float(-f),
        }
    } else {
        lit
    })
}

/// The bits a literal stands for when an operand of type `ty` is expected.
pub fn lit_bits(lit: Lit, ty: Ty) -> u64 {
    let as_f64 = |l: Lit| match l {
        Lit::Int(v) => v as i64 as f64,
        Lit::F32Bits(b) => f32::from_bits(b) as f64,
        Lit::F64Bits(b) => f64::from_bits(b),
        Lit::Float(f) => f,
    };
    match ty {
        Ty::F32 | Ty::TF32 => match lit {
            Lit::F32Bits(b) => b as u64,
            l => (as_f64(l) as f32).to_bits() as u64,
        },
        Ty::F64 => match lit {
            Lit::F64Bits(b) => b,
            l => as_f64(l).to_bits(),
        },
        Ty::F16 => match lit {
            Lit::Int(v) => v & 0xffff,
            l => trident_core::tensor::f64_to_f16_bits(as_f64(l)) as u64,
        },
        Ty::BF16 => match lit {
            Lit::Int(v) => v & 0xffff,
            l => trident_core::tensor::f64_to_bf16_bits(as_f64(l)) as u64,
        },
        _ => match lit {
            Lit::Int(v) => v,
            Lit::F32Bits(b) => b as u64,
            Lit::F64Bits(b) => b,
            Lit::Float(f) => (f as f32).to_bits() as u64,
        },
    }
}
