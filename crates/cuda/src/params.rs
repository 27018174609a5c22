//! Kernel parameters and their packing.
//!
//! A PTX kernel's parameters live in one `.param` space, each at an offset aligned to its
//! own size (pointers: 8 bytes). [`ParamBuffer`] lays the values out that way in one
//! 8-byte-aligned block and keeps the array of per-parameter pointers into it that
//! `cuLaunchKernel` takes, so relaunching a packed buffer allocates nothing.

use std::ffi::c_void;
use std::marker::PhantomData;

use trident_core::DType;

use crate::error::CudaError;
use crate::memory::DeviceBuffer;

/// One kernel argument. Pick the variant whose width matches the `.param` declaration in
/// the kernel's PTX signature (`.u64`/pointer → `Ptr`/`DevicePtr`/`U64`, `.u32` → `U32`, ...);
/// when the driver can report the kernel's parameter sizes (driver 12.4+), a mismatch is
/// an error before launch.
#[derive(Clone, Copy, Debug)]
pub enum Param<'a> {
    /// A device buffer's address.
    Ptr(&'a DeviceBuffer),
    /// A raw device address (e.g. `buf.device_ptr() + offset`); the caller vouches for it.
    DevicePtr(u64),
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F32(f32),
    F64(f64),
    /// A tensor map (TMA descriptor) by value: `.param .align 64 .b8 NAME[128]`.
    TensorMap([u8; 128]),
}

impl<'a> Param<'a> {
    /// A scalar of `dtype` from its raw bits (the low `size_bytes` bits are used): integers
    /// and `I1` by width, `F32`/`F64` as floats, f16/bf16/fp8 as their bit patterns.
    pub fn from_bits(dtype: DType, bits: u64) -> Param<'static> {
        match dtype {
            DType::F32 => Param::F32(f32::from_bits(bits as u32)),
            DType::F64 => Param::F64(f64::from_bits(bits)),
            _ => match dtype.size_bytes() {
                1 => Param::U8(bits as u8),
                2 => Param::U16(bits as u16),
                4 => Param::U32(bits as u32),
                _ => Param::U64(bits),
            },
        }
    }

    /// Size in bytes in the parameter space.
    pub fn size(&self) -> usize {
        match self {
            Param::U8(_) | Param::I8(_) => 1,
            Param::U16(_) | Param::I16(_) => 2,
            Param::U32(_) | Param::I32(_) | Param::F32(_) => 4,
            Param::Ptr(_) | Param::DevicePtr(_) | Param::U64(_) | Param::I64(_) | Param::F64(_) => 8,
            Param::TensorMap(_) => 128,
        }
    }

    /// Alignment in the parameter space: scalars are aligned to their size, tensor maps to 64.
    pub fn align(&self) -> usize {
        match self {
            Param::TensorMap(_) => 64,
            _ => self.size(),
        }
    }

    /// A short name for messages (`u32`, `ptr`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            Param::Ptr(_) | Param::DevicePtr(_) => "ptr",
            Param::U8(_) => "u8",
            Param::I8(_) => "i8",
            Param::U16(_) => "u16",
            Param::I16(_) => "i16",
            Param::U32(_) => "u32",
            Param::I32(_) => "i32",
            Param::U64(_) => "u64",
            Param::I64(_) => "i64",
            Param::F32(_) => "f32",
            Param::F64(_) => "f64",
            Param::TensorMap(_) => "tensormap",
        }
    }

    /// The buffer this parameter points at, if any.
    pub(crate) fn buffer(&self) -> Option<&'a DeviceBuffer> {
        match self {
            Param::Ptr(b) => Some(b),
            _ => None,
        }
    }

    fn write_le(&self, out: &mut [u8]) {
        match *self {
            Param::Ptr(b) => out.copy_from_slice(&b.device_ptr().to_le_bytes()),
            Param::DevicePtr(p) | Param::U64(p) => out.copy_from_slice(&p.to_le_bytes()),
            Param::U8(v) => out.copy_from_slice(&v.to_le_bytes()),
            Param::I8(v) => out.copy_from_slice(&v.to_le_bytes()),
            Param::U16(v) => out.copy_from_slice(&v.to_le_bytes()),
            Param::I16(v) => out.copy_from_slice(&v.to_le_bytes()),
            Param::U32(v) => out.copy_from_slice(&v.to_le_bytes()),
            Param::I32(v) => out.copy_from_slice(&v.to_le_bytes()),
            Param::I64(v) => out.copy_from_slice(&v.to_le_bytes()),
            Param::F32(v) => out.copy_from_slice(&v.to_le_bytes()),
            Param::F64(v) => out.copy_from_slice(&v.to_le_bytes()),
            Param::TensorMap(m) => out.copy_from_slice(&m),
        }
    }
}

/// Where one parameter sits in the packed block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamSlot {
    pub offset: usize,
    pub size: usize,
}

/// Parameters packed for launch. Borrows the buffers it points at (`'a`), so they outlive
/// every launch made with it.
pub struct ParamBuffer<'a> {
    /// The packed block; `u64` storage makes it 8-byte aligned.
    storage: Box<[u64]>,
    size: usize,
    slots: Vec<ParamSlot>,
    /// `cuLaunchKernel`'s `kernelParams`: one pointer per parameter into `storage`, whose
    /// heap block does not move when the `ParamBuffer` does.
    ptrs: Vec<*mut c_void>,
    _borrow: PhantomData<&'a DeviceBuffer>,
}

// SAFETY: `ptrs` only point into `storage`, which the buffer owns; nothing is shared.
unsafe impl Send for ParamBuffer<'_> {}
unsafe impl Sync for ParamBuffer<'_> {}

fn align_up(x: usize, a: usize) -> usize {
    x.div_ceil(a) * a
}

/// Offsets of `params` in the parameter space and the space's total size.
pub fn param_layout(params: &[Param<'_>]) -> (Vec<ParamSlot>, usize) {
    let mut at = 0;
    let slots = params
        .iter()
        .map(|p| {
            let offset = align_up(at, p.align());
            at = offset + p.size();
            ParamSlot { offset, size: p.size() }
        })
        .collect();
    (slots, at)
}

impl<'a> ParamBuffer<'a> {
    pub fn pack(params: &[Param<'a>]) -> ParamBuffer<'a> {
        let (slots, size) = param_layout(params);
        let storage = vec![0u64; size.div_ceil(8).max(1)].into_boxed_slice();
        let mut buf =
            ParamBuffer { storage, size, slots, ptrs: Vec::with_capacity(params.len()), _borrow: PhantomData };
        for (i, p) in params.iter().enumerate() {
            let s = buf.slots[i];
            p.write_le(&mut buf.bytes_mut()[s.offset..s.offset + s.size]);
        }
        let base = buf.storage.as_mut_ptr() as *mut u8;
        // SAFETY: every offset is inside `storage` (size <= 8 * storage.len()).
        buf.ptrs = buf.slots.iter().map(|s| unsafe { base.add(s.offset) } as *mut c_void).collect();
        buf
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `storage` holds 8 * len initialised bytes; size <= that; u8 has no alignment.
        unsafe { std::slice::from_raw_parts_mut(self.storage.as_mut_ptr() as *mut u8, self.size) }
    }

    /// The packed parameter space (little-endian values at their offsets, zero padding).
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: as in `bytes_mut`.
        unsafe { std::slice::from_raw_parts(self.storage.as_ptr() as *const u8, self.size) }
    }

    pub fn slots(&self) -> &[ParamSlot] {
        &self.slots
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Replaces parameter `index` in place with a value of the same size (for sweeps that
    /// change a scalar between launches without repacking).
    pub fn set(&mut self, index: usize, param: Param<'a>) -> Result<(), CudaError> {
        let Some(&s) = self.slots.get(index) else {
            return Err(CudaError::InvalidArgument(format!(
                "parameter index {index} out of range ({} parameters)",
                self.slots.len()
            )));
        };
        if param.size() != s.size {
            return Err(CudaError::InvalidArgument(format!(
                "parameter {index} is {} bytes, cannot replace it with a {} ({} bytes)",
                s.size,
                param.type_name(),
                param.size()
            )));
        }
        param.write_le(&mut self.bytes_mut()[s.offset..s.offset + s.size]);
        Ok(())
    }

    /// The `kernelParams` array for `cuLaunchKernel` (the driver only reads through it).
    pub(crate) fn kernel_params(&self) -> *mut *mut c_void {
        self.ptrs.as_ptr() as *mut *mut c_void
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_follow_natural_alignment() {
        let p = [
            Param::U8(1),
            Param::U32(2),
            Param::I8(-3),
            Param::DevicePtr(0x7000_0000_1000),
            Param::F32(1.5),
            Param::U16(7),
            Param::F64(-2.0),
            Param::I16(-1),
        ];
        let (slots, size) = param_layout(&p);
        let offsets: Vec<usize> = slots.iter().map(|s| s.offset).collect();
        assert_eq!(offsets, [0, 4, 8, 16, 24, 28, 32, 40]);
        assert_eq!(slots.iter().map(|s| s.size).collect::<Vec<_>>(), [1, 4, 1, 8, 4, 2, 8, 2]);
        assert_eq!(size, 42);
    }

    #[test]
    fn packed_bytes_are_little_endian_values_with_zero_padding() {
        let b = ParamBuffer::pack(&[Param::U8(0xab), Param::I32(-2), Param::U16(0x1234), Param::I64(-5)]);
        let mut want = vec![0u8; 16];
        want[0] = 0xab;
        want[4..8].copy_from_slice(&(-2i32).to_le_bytes());
        want[8..10].copy_from_slice(&0x1234u16.to_le_bytes());
        want.extend_from_slice(&(-5i64).to_le_bytes());
        assert_eq!(b.bytes(), &want[..]);
        assert_eq!(b.len(), 4);
    }

    #[test]
    fn kernel_params_point_at_each_slot() {
        let b = ParamBuffer::pack(&[Param::U16(3), Param::F64(0.25), Param::U8(9), Param::F32(-1.0)]);
        let base = b.bytes().as_ptr() as usize;
        assert_eq!(base % 8, 0, "the block must be 8-byte aligned");
        // SAFETY: the array has one entry per parameter.
        let ptrs = unsafe { std::slice::from_raw_parts(b.kernel_params(), b.len()) };
        for (p, s) in ptrs.iter().zip(b.slots()) {
            assert_eq!(*p as usize - base, s.offset);
        }
        // Moving the buffer keeps the pointers valid (they point into its heap block).
        let moved = Box::new(b);
        let ptrs = unsafe { std::slice::from_raw_parts(moved.kernel_params(), moved.len()) };
        let f = unsafe { *(ptrs[1] as *const f64) };
        assert_eq!(f, 0.25);
        let x = unsafe { *(ptrs[3] as *const f32) };
        assert_eq!(x, -1.0);
    }

    #[test]
    fn set_replaces_same_size_values_only() {
        let mut b = ParamBuffer::pack(&[Param::DevicePtr(16), Param::U32(10)]);
        b.set(1, Param::I32(-7)).unwrap();
        assert_eq!(&b.bytes()[8..12], &(-7i32).to_le_bytes());
        let e = b.set(1, Param::U64(1)).unwrap_err().to_string();
        assert!(e.contains("parameter 1 is 4 bytes") && e.contains("u64"), "{e}");
        assert!(b.set(2, Param::U32(1)).is_err());
    }

    #[test]
    fn empty_parameter_list() {
        let b = ParamBuffer::pack(&[]);
        assert!(b.is_empty());
        assert!(b.bytes().is_empty());
    }

    #[test]
    fn from_bits_picks_the_dtype_width() {
        assert_eq!(Param::from_bits(DType::F16, 0x3c00).size(), 2);
        assert_eq!(Param::from_bits(DType::I1, 1).size(), 1);
        assert_eq!(Param::from_bits(DType::F8E4M3, 0x38).size(), 1);
        assert_eq!(Param::from_bits(DType::I64, u64::MAX).size(), 8);
        assert!(matches!(Param::from_bits(DType::F32, 1.5f32.to_bits() as u64), Param::F32(v) if v == 1.5));
        assert!(matches!(Param::from_bits(DType::F64, 2.5f64.to_bits()), Param::F64(v) if v == 2.5));
        assert!(matches!(Param::from_bits(DType::U32, 0x1_0000_0007), Param::U32(7)));
    }
}
