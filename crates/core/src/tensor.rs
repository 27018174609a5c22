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
        F16 => out.copy_from_slice(&f16::from_f64(v).to_le_bytes()),
        BF16 => out.copy_from_slice(&bf16::from_f64(v).to_le_bytes()),
        F32 => out.copy_from_slice(&(v as f32).to_le_bytes()),
        F64 => out.copy_from_slice(&v.to_le_bytes()),
    }
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
    fn ints_and_bools() {
        let t = HostTensor::from_f64(DType::I8, &[2], &[-3.0, 127.0]);
        assert_eq!(t.data, vec![0xfd, 0x7f]);
        let b = HostTensor::from_f64(DType::I1, &[2], &[0.0, 2.0]);
        assert_eq!(b.data, vec![0, 1]);
    }
}
