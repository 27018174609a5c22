//! A scalar argument as the bits of a kernel parameter: the one conversion every
//! backend uses (the interpreter, the emulator and CUDA for compiled kernels, and
//! raw PTX runs).

use trident_core::tensor::encode_f64;
use trident_core::DType;

use crate::args::ArgValue;

/// The bits of scalar `v` passed to a parameter of type `d`, in the low `d.bits()` bits
/// (higher bits zero): a Python int given to a float parameter becomes that float, a
/// float is rounded to the parameter's precision (f16 and bf16 included), a bool is 0 or 1,
/// and an int keeps its two's-complement bits. Backends copy the low bytes of the result
/// into a parameter of the declared size.
pub fn scalar_bits(v: &ArgValue, d: DType) -> u64 {
    // A float in the parameter's float format, as a tensor element of that dtype is stored.
    let f = |x: f64| {
        let mut b = [0u8; 8];
        encode_f64(d, x, &mut b[..d.size_bytes()]);
        u64::from_le_bytes(b)
    };
    let bits = match v {
        ArgValue::Int(x) if d.is_float() => f(*x as f64),
        ArgValue::Int(x) => *x as u64,
        ArgValue::Float(x) if d.is_float() => f(*x),
        // A float for an integer parameter does not arise (the front end types floats
        // as fp32, and raw PTX runs reject it first); its f32 bits, as for fp32.
        ArgValue::Float(x) => (*x as f32).to_bits() as u64,
        ArgValue::Bool(b) => *b as u64,
        // Compile-time values are folded into the code, never passed.
        ArgValue::Tensor(_)
        | ArgValue::Device(_)
        | ArgValue::Descriptor(_)
        | ArgValue::Str(_)
        | ArgValue::DType(_)
        | ArgValue::None
        | ArgValue::Tuple(_) => 0,
    };
    match d.bits() {
        w if w >= 64 => bits,
        w => bits & ((1u64 << w) - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_to_the_parameters_type_and_width() {
        assert_eq!(scalar_bits(&ArgValue::Int(-1), DType::I32), 0xFFFF_FFFF);
        assert_eq!(scalar_bits(&ArgValue::Int(-1), DType::I64), u64::MAX);
        assert_eq!(scalar_bits(&ArgValue::Int(3), DType::F32), 3.0f32.to_bits() as u64);
        assert_eq!(scalar_bits(&ArgValue::Int(3), DType::F64), 3.0f64.to_bits());
        assert_eq!(scalar_bits(&ArgValue::Float(0.1), DType::F32), 0.1f32.to_bits() as u64);
        assert_eq!(scalar_bits(&ArgValue::Float(1.0), DType::F16), 0x3C00);
        assert_eq!(scalar_bits(&ArgValue::Float(1.0), DType::BF16), 0x3F80);
        assert_eq!(scalar_bits(&ArgValue::Bool(true), DType::I1), 1);
        assert_eq!(scalar_bits(&ArgValue::None, DType::I32), 0);
    }
}
