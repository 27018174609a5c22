//! PTX virtual registers and the PTX type names of IR element types.
//!
//! Register classes (which register holds which element type) are a machine fact, in
//! [`crate::machine::regs`]. Values narrower than their register are kept normalised:
//! signed values sign-extended, unsigned ones zero-extended, fp8 with a zero high byte.

pub use crate::machine::regs::{class_of, class_of_dtype, mem_bytes, RegClass};
use std::fmt;
use trident_ir::{DType, Elem};

/// A virtual register.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reg {
    pub class: RegClass,
    pub id: u32,
}

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.class.prefix(), self.id)
    }
}

/// PTX integer type of an integer dtype at its register width (`s16` for i8, `u16` for u8).
pub fn int_ty(d: DType) -> &'static str {
    use DType::*;
    match d {
        I8 | I16 => "s16",
        U8 | U16 | I1 => "u16",
        I32 => "s32",
        U32 => "u32",
        I64 => "s64",
        U64 => "u64",
        F8E4M3 | F8E5M2 | F16 | BF16 => "b16",
        F32 => "b32",
        F64 => "b64",
    }
}

/// PTX type of a float dtype computed natively (`f16`, `f32`, `f64`).
pub fn float_ty(d: DType) -> &'static str {
    match d {
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::F64 => "f64",
        _ => "f32",
    }
}

/// `.bN` type of an element at its register width.
pub fn bits_ty(e: Elem) -> &'static str {
    class_of(e).btype()
}
