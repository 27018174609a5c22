//! PTX virtual registers and the mapping of IR element types onto them.
//!
//! Register classes follow the bit width only (`.pred`, `.b16`, `.b32`, `.b64`): PTX
//! lets a `.bN` register be used by any instruction type of N bits, so a value keeps
//! its register whatever it is reinterpreted as. Integers narrower than 16 bits and
//! fp8 values live in `.b16` registers (low byte), kept normalised: signed values
//! sign-extended, unsigned ones zero-extended, fp8 with a zero high byte.

use std::fmt;
use trident_ir::{DType, Elem};

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RegClass {
    Pred,
    B16,
    B32,
    B64,
}

impl RegClass {
    pub const ALL: [RegClass; 4] = [RegClass::Pred, RegClass::B16, RegClass::B32, RegClass::B64];

    pub fn prefix(self) -> &'static str {
        match self {
            RegClass::Pred => "%p",
            RegClass::B16 => "%h",
            RegClass::B32 => "%r",
            RegClass::B64 => "%rd",
        }
    }

    pub fn decl(self) -> &'static str {
        match self {
            RegClass::Pred => ".pred",
            RegClass::B16 => ".b16",
            RegClass::B32 => ".b32",
            RegClass::B64 => ".b64",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }

    /// Bits of the class (1 for predicates).
    pub fn bits(self) -> u32 {
        match self {
            RegClass::Pred => 1,
            RegClass::B16 => 16,
            RegClass::B32 => 32,
            RegClass::B64 => 64,
        }
    }

    /// `.bN` type name for moves of this class.
    pub fn btype(self) -> &'static str {
        match self {
            RegClass::Pred => "pred",
            RegClass::B16 => "b16",
            RegClass::B32 => "b32",
            RegClass::B64 => "b64",
        }
    }

    pub fn of_bits(bits: u32) -> RegClass {
        match bits {
            1 => RegClass::Pred,
            0..=16 => RegClass::B16,
            17..=32 => RegClass::B32,
            _ => RegClass::B64,
        }
    }
}

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

/// Register class holding one element of `e`.
pub fn class_of(e: Elem) -> RegClass {
    match e {
        Elem::Ptr { .. } => RegClass::B64,
        Elem::Num(d) => class_of_dtype(d),
    }
}

pub fn class_of_dtype(d: DType) -> RegClass {
    match d.bits() {
        1 => RegClass::Pred,
        8 | 16 => RegClass::B16,
        32 => RegClass::B32,
        _ => RegClass::B64,
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

/// Size in bytes of an element in memory (i1: one byte; pointers: eight).
pub fn mem_bytes(e: Elem) -> u32 {
    match e {
        Elem::Ptr { .. } => 8,
        Elem::Num(d) => d.size_bytes() as u32,
    }
}
