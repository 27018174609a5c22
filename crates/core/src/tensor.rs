//! Host tensors: what users pass to kernels and get back.

use crate::dtype::DType;
use crate::fp8;
use half::{bf16, f16};

/// A dense, row-major tensor in host memory: dtype, shape and little-endian bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub data: Vec<u8>,
}

impl HostTensor {
    pub fn zeros(dtype: DType, shape: &[usize]) -> HostTensor {
        let n: usize = shape.iter().product();
        HostTensor { dtype, shape: shape.to_vec(), data: vec![0; n * dtype.size_bytes()] }
    }

    /// Builds a tensor from f64 values, converting each with [`encode_f64`].
    pub fn from_f64(dtype: DType, shape: &[usize], values: &[f64]) -> HostTensor {
        let mut t = HostTensor::zeros(dtype, shape);
        assert_eq!(values.len(), t.numel(), "value count does not match shape");
        for (i, &v) in values.iter().enumerate() {
            t.set_f64(i, v);
        }
        t
    }

    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn size_bytes(&self) -> usize {
        self.data.len()
    }

    /// Element `i` (flat index) as f64 (integers converted exactly up to 2^53).
    pub fn get_f64(&self, i: usize) -> f64 {
        let w = self.dtype.size_bytes();
        decode_f64(self.dtype, &self.data[i * w..(i + 1) * w])
    }

    pub fn set_f64(&mut self, i: usize, v: f64) {
        let w = self.dtype.size_bytes();
        encode_f64(self.dtype, v, &mut self.data[i * w..(i + 1) * w]);
    }

    /// Element `i` as raw bits, zero-extended to 64 bits.
    pub fn get_bits(&self, i: usize) -> u64 {
        let w = self.dtype.size_bytes();
        let mut b = [0u8; 8];
        b[..w].copy_from_slice(&self.data[i * w..(i + 1) * w]);
        u64::from_le_bytes(b)
    }

    pub fn to_f64_vec(&self) -> Vec<f64> {
        (0..self.numel()).map(|i| self.get_f64(i)).collect()
    }
}

/// Decodes one element of `dtype` from little-endian bytes to f64.
pub fn decode_f64(dtype: DType, b: &[u8]) -> f64 {
    use DType::*;
    match dtype {
        I1 => (b[0] != 0) as u8 as f64,
        I8 => b[0] as i8 as f64,
        U8 => b[0] as f64,
        I16 => i16::from_le_bytes([b[0], b[1]]) as f64,
        U16 => u16::from_le_bytes([b[0], b[1]]) as f64,
        I32 => i32::from_le_bytes(b[..4].try_into().unwrap()) as f64,
        U32 => u32::from_le_bytes(b[..4].try_into().unwrap()) as f64,
        I64 => i64::from_le_bytes(b[..8].try_into().unwrap()) as f64,
        U64 => u64::from_le_bytes(b[..8].try_into().unwrap()) as f64,
        F8E4M3 => fp8::e4m3_to_f64(b[0]),
        F8E5M2 => fp8::e5m2_to_f64(b[0]),
        F16 => f16::from_le_bytes([b[0], b[1]]).to_f64(),
        BF16 => bf16::from_le_bytes([b[0], b[1]]).to_f64(),
        F32 => f32::from_le_bytes(b[..4].try_into().unwrap()) as f64,
        F64 => f64::from_le_bytes(b[..8].try_into().unwrap()),
    }
}

/// Encodes an f64 as one element of `dtype`: floats round to nearest even
/// (fp8 without saturation), integers truncate toward zero and saturate like
/// Rust's `as` (NaN → 0), bool is `v != 0`.
pub fn encode_f64(dtype: DType, v: f64, out: &mut [u8]) {
    use DType::*;
    match dtype {
        I1 => out[0] = (v != 0.0) as u8,
        I8 => out[0] = v as i8 as u8,
        U8 => out[0] = v as u8,
        I16 => out.copy_from_slice(&(v as i16).to_le_bytes()),
        U16 => out.copy_from_slice(&(v as u16).to_le_bytes()),
        I32 => out.copy_from_slice(&(v as i32).to_le_bytes()),
        U32 => out.copy_from_slice(&(v as u32).to_le_bytes()),
        I64 => out.copy_from_slice(&(v as i64).to_le_bytes()),
        U64 => out.copy_from_slice(&(v as u64).to_le_bytes()),
        F8E4M3 => out[0] = fp8::f64_to_e4m3(v, false),
        F8E5M2 => out[0] = fp8::f64_to_e5m2(v, false),
        F16 => out.copy_from_slice(&f64_to_f16_bits(v).to_le_bytes()),
        BF16 => out.copy_from_slice(&f64_to_bf16_bits(v).to_le_bytes()),
        F32 => out.copy_from_slice(&(v as f32).to_le_bytes()),
        F64 => out.copy_from_slice(&v.to_le_bytes()),
    }
}

/// f64 → f16 bits, correctly rounded to nearest-even (see [`f64_to_f32_round_odd`]).
pub fn f64_to_f16_bits(v: f64) -> u16 {
    f16::from_f32(f64_to_f32_round_odd(v)).to_bits()
}

/// f64 → bf16 bits, correctly rounded to nearest-even (see [`f64_to_f32_round_odd`]).
pub fn f64_to_bf16_bits(v: f64) -> u16 {
    bf16::from_f32(f64_to_f32_round_odd(v)).to_bits()
}

/// f64 → f32 rounding to odd: truncate toward zero and set the last bit when inexact.
///
/// Rounding that result to nearest-even in a format with at least two bits fewer
/// (f16, bf16) gives the correctly rounded f64 → f16/bf16 value; rounding to nearest
/// twice (f64 → f32 → f16) would not (`half`'s `from_f64` has that flaw).
pub fn f64_to_f32_round_odd(v: f64) -> f32 {
    let f = v as f32;
    if v.is_nan() || f as f64 == v {
        return f;
    }
    let mut bits = f.to_bits();
    if (f as f64).abs() > v.abs() {
        // Rounded away from zero: step one code back toward zero (works across the
        // infinity/MAX boundary and in the subnormal range, as the encoding is monotonic).
        bits -= 1;
    }
    f32::from_bits(bits | 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_rounds_on_store() {
        let t = HostTensor::from_f64(DType::F16, &[3], &[1.0, 1.0 + 1.0 / 4096.0, -65504.0]);
        assert_eq!(t.to_f64_vec(), vec![1.0, 1.0, -65504.0]);
        assert_eq!(t.get_bits(0), 0x3c00);
    }

    #[test]
    fn f64_to_half_types_round_once() {
        // 1 + 2^-11 + 2^-40 is above the f16 midpoint; rounding via f32 to nearest loses the 2^-40.
        let t = HostTensor::from_f64(DType::F16, &[1], &[1.0 + 2f64.powi(-11) + 2f64.powi(-40)]);
        assert_eq!(t.get_bits(0), 0x3c01);
        // An exact f32 just above a bf16 midpoint rounds up.
        let t = HostTensor::from_f64(DType::BF16, &[1], &[f32::from_bits(0x026A_8002) as f64]);
        assert_eq!(t.get_bits(0), 0x026B);
        // Overflow and ties.
        let t = HostTensor::from_f64(DType::F16, &[3], &[1e6, 65520.0, 1.0 + 2f64.powi(-11)]);
        assert_eq!((t.get_bits(0), t.get_bits(1), t.get_bits(2)), (0x7c00, 0x7c00, 0x3c00));
        // Compared against an exhaustive nearest-code search on random values.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = f64::from_bits((x & 0x800F_FFFF_FFFF_FFFF) | ((1015 + (x >> 52) % 18) << 52));
            let got = HostTensor::from_f64(DType::F16, &[1], &[v]).get_bits(0) as u16;
            let below = f16::from_f32(v as f32).to_bits(); // a neighbour of the answer
            let best = [below.wrapping_sub(1), below, below.wrapping_add(1)]
                .into_iter()
                .filter(|&b| f16::from_bits(b).is_finite())
                .min_by(|&a, &b| {
                    let (da, db) = ((f16::from_bits(a).to_f64() - v).abs(), (f16::from_bits(b).to_f64() - v).abs());
                    da.partial_cmp(&db).unwrap().then((a & 1).cmp(&(b & 1)))
                })
                .unwrap();
            assert_eq!(got, best, "{v:e}");
        }
    }

    #[test]
    fn ints_and_bools() {
        let t = HostTensor::from_f64(DType::I8, &[2], &[-3.0, 127.0]);
        assert_eq!(t.data, vec![0xfd, 0x7f]);
        let b = HostTensor::from_f64(DType::I1, &[2], &[0.0, 2.0]);
        assert_eq!(b.data, vec![0, 1]);
    }
}
