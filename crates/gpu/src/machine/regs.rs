//! Register classes and the sizes of elements in registers, memory and scratch.
//!
//! Register classes follow the bit width only (`.pred`, `.b16`, `.b32`, `.b64`): PTX
//! lets a `.bN` register be used by any instruction type of N bits, so a value keeps
//! its register whatever it is reinterpreted as. Integers narrower than 16 bits and
//! fp8 values live in `.b16` registers (low byte).

use trident_ir::{DType, Elem};

/// The PTX register class of a value.
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

/// Size in bytes of an element in memory (i1: one byte; pointers: eight).
pub fn mem_bytes(e: Elem) -> u32 {
    match e {
        Elem::Ptr { .. } => 8,
        Elem::Num(d) => d.size_bytes() as u32,
    }
}

/// Bytes one element of register class `c` takes in shared scratch (a data exchange
/// stores whole registers; predicates as 32-bit 0/1).
pub fn scratch_elem_bytes(c: RegClass) -> u32 {
    match c {
        RegClass::B16 => 2,
        RegClass::B64 => 8,
        _ => 4,
    }
}

/// Registers of an SM's register file (every target Trident compiles for).
pub const REGISTER_FILE: u32 = 65536;

/// The registers per thread a CTA of `threads` threads can start with when it alone fills
/// the register file (allocation is per 8): what a kernel that moves registers between its
/// warpgroups with `setmaxnreg` declares as `.maxnreg`, since ptxas ignores `setmaxnreg`
/// when it cannot tell the count at entry.
pub fn entry_registers(threads: u32) -> u32 {
    (REGISTER_FILE / threads.max(1)).min(255) / 8 * 8
}
