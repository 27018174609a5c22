//! Element types.

use std::fmt;

/// An element type, as Triton's `tl.dtype` knows it (minus the exotic fp8 variants).
///
/// Integers carry their signedness in the type (Triton's `tl.int32` vs `tl.uint32`);
/// operations take signed/unsigned semantics from their operand types.
/// `I1` is Triton's `int1`, the type of comparisons and masks; in memory it is one byte.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    I1,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    /// `tl.float8e4nv`: 4 exponent bits, 3 mantissa bits, no infinities (e4m3fn).
    F8E4M3,
    /// `tl.float8e5`: 5 exponent bits, 2 mantissa bits (IEEE-like, e5m2).
    F8E5M2,
    F16,
    BF16,
    F32,
    F64,
}

impl DType {
    pub const ALL: [DType; 15] = [
        DType::I1,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F8E4M3,
        DType::F8E5M2,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// Width in bits of a value of this type (1 for `I1`).
    pub fn bits(self) -> u32 {
        use DType::*;
        match self {
            I1 => 1,
            I8 | U8 | F8E4M3 | F8E5M2 => 8,
            I16 | U16 | F16 | BF16 => 16,
            I32 | U32 | F32 => 32,
            I64 | U64 | F64 => 64,
        }
    }

    /// Bytes one element occupies in memory (`I1` is stored as one byte, 0 or 1).
    pub fn size_bytes(self) -> usize {
        (self.bits() as usize).div_ceil(8)
    }

    pub fn is_float(self) -> bool {
        use DType::*;
        matches!(self, F8E4M3 | F8E5M2 | F16 | BF16 | F32 | F64)
    }

    /// True for every integer type including `I1`.
    pub fn is_int(self) -> bool {
        !self.is_float()
    }

    pub fn is_bool(self) -> bool {
        self == DType::I1
    }

    pub fn is_signed_int(self) -> bool {
        use DType::*;
        matches!(self, I8 | I16 | I32 | I64)
    }

    pub fn is_unsigned_int(self) -> bool {
        use DType::*;
        matches!(self, U8 | U16 | U32 | U64)
    }

    pub fn is_fp8(self) -> bool {
        matches!(self, DType::F8E4M3 | DType::F8E5M2)
    }

    /// Mantissa bits of a float type (without the implicit bit); `None` for integers.
    pub fn mantissa_bits(self) -> Option<u32> {
        use DType::*;
        Some(match self {
            F8E4M3 => 3,
            F8E5M2 => 2,
            F16 => 10,
            BF16 => 7,
            F32 => 23,
            F64 => 52,
            _ => return None,
        })
    }

    /// The integer type of the same width and opposite signedness; `self` otherwise.
    pub fn with_signedness(self, signed: bool) -> DType {
        use DType::*;
        match (self, signed) {
            (U8, true) => I8,
            (U16, true) => I16,
            (U32, true) => I32,
            (U64, true) => I64,
            (I8, false) => U8,
            (I16, false) => U16,
            (I32, false) => U32,
            (I64, false) => U64,
            (t, _) => t,
        }
    }

    /// The integer type with the given width and signedness.
    pub fn int(bits: u32, signed: bool) -> Option<DType> {
        use DType::*;
        Some(match (bits, signed) {
            (1, _) => I1,
            (8, true) => I8,
            (16, true) => I16,
            (32, true) => I32,
            (64, true) => I64,
            (8, false) => U8,
            (16, false) => U16,
            (32, false) => U32,
            (64, false) => U64,
            _ => return None,
        })
    }

    /// Short canonical name, used by the IR text format and the CLI: `f16`, `bf16`, `i32`, `u8`, `i1`, `f8e4m3`.
    pub fn name(self) -> &'static str {
        use DType::*;
        match self {
            I1 => "i1",
            I8 => "i8",
            I16 => "i16",
            I32 => "i32",
            I64 => "i64",
            U8 => "u8",
            U16 => "u16",
            U32 => "u32",
            U64 => "u64",
            F8E4M3 => "f8e4m3",
            F8E5M2 => "f8e5m2",
            F16 => "f16",
            BF16 => "bf16",
            F32 => "f32",
            F64 => "f64",
        }
    }

    /// The name of the attribute of `triton.language` for this type (`tl.float16`, ...).
    pub fn triton_name(self) -> &'static str {
        use DType::*;
        match self {
            I1 => "int1",
            I8 => "int8",
            I16 => "int16",
            I32 => "int32",
            I64 => "int64",
            U8 => "uint8",
            U16 => "uint16",
            U32 => "uint32",
            U64 => "uint64",
            F8E4M3 => "float8e4nv",
            F8E5M2 => "float8e5",
            F16 => "float16",
            BF16 => "bfloat16",
            F32 => "float32",
            F64 => "float64",
        }
    }

    /// Parses every spelling users write: our short names (`f16`), Triton's
    /// (`float16`, `fp16`, `int32`, `bfloat16`, `float8e4nv`), numpy's (`float32`, `bool`).
    pub fn parse(s: &str) -> Option<DType> {
        use DType::*;
        Some(match s {
            "i1" | "int1" | "bool" | "bool_" => I1,
            "i8" | "int8" => I8,
            "i16" | "int16" => I16,
            "i32" | "int32" => I32,
            "i64" | "int64" => I64,
            "u8" | "uint8" => U8,
            "u16" | "uint16" => U16,
            "u32" | "uint32" => U32,
            "u64" | "uint64" => U64,
            "f8e4m3" | "fp8e4nv" | "float8e4nv" | "float8_e4m3fn" => F8E4M3,
            "f8e5m2" | "fp8e5" | "float8e5" | "float8_e5m2" => F8E5M2,
            "f16" | "fp16" | "float16" | "half" => F16,
            "bf16" | "bfloat16" => BF16,
            "f32" | "fp32" | "float32" | "float" => F32,
            "f64" | "fp64" | "float64" | "double" => F64,
            _ => return None,
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for t in DType::ALL {
            assert_eq!(DType::parse(t.name()), Some(t));
            assert_eq!(DType::parse(t.triton_name()), Some(t));
        }
        assert_eq!(DType::parse("fp32"), Some(DType::F32));
        assert_eq!(DType::parse("f128"), None);
    }

    #[test]
    fn sizes() {
        assert_eq!(DType::I1.size_bytes(), 1);
        assert_eq!(DType::BF16.size_bytes(), 2);
        assert_eq!(DType::U64.size_bytes(), 8);
        assert_eq!(DType::I32.with_signedness(false), DType::U32);
    }
}
