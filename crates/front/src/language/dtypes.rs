//! Triton's spellings of element types: `triton.language` dtype attributes (`tl.float16`) and
//! the signature strings of annotations (`"*fp16"`, `"i64"`).

use trident_core::DType;
use trident_ir::Elem;

/// Triton dtype attribute names of `triton.language`.
pub(crate) fn tl_dtype(name: &str) -> Option<DType> {
    Some(match name {
        "int1" => DType::I1,
        "int8" => DType::I8,
        "int16" => DType::I16,
        "int32" => DType::I32,
        "int64" => DType::I64,
        "uint8" => DType::U8,
        "uint16" => DType::U16,
        "uint32" => DType::U32,
        "uint64" => DType::U64,
        "float8e4nv" => DType::F8E4M3,
        "float8e5" => DType::F8E5M2,
        "float16" => DType::F16,
        "bfloat16" => DType::BF16,
        "float32" => DType::F32,
        "float64" => DType::F64,
        _ => return None,
    })
}

/// Triton's signature strings (`"i32"`, `"fp16"`, `"*fp32"`) as used in annotations.
pub(crate) fn sig_type(s: &str) -> Option<Elem> {
    if let Some(p) = s.strip_prefix("*k").or_else(|| s.strip_prefix('*')) {
        return sig_type(p).and_then(|e| e.num()).map(Elem::ptr);
    }
    let d = match s {
        "i1" | "u1" => DType::I1,
        "i8" => DType::I8,
        "i16" => DType::I16,
        "i32" => DType::I32,
        "i64" => DType::I64,
        "u8" => DType::U8,
        "u16" => DType::U16,
        "u32" => DType::U32,
        "u64" => DType::U64,
        "fp16" => DType::F16,
        "bf16" => DType::BF16,
        "fp32" => DType::F32,
        "fp64" => DType::F64,
        "fp8e4nv" => DType::F8E4M3,
        "fp8e5" => DType::F8E5M2,
        _ => return None,
    };
    Some(Elem::Num(d))
}
