//! Tensor maps (TMA descriptors) encoded by the driver: `cuTensorMapEncodeTiled`.
//!
//! A map is 128 opaque bytes, passed to a kernel by value ([`crate::Param::TensorMap`]).
//! The enum values are the driver's (`CUtensorMapDataType` and friends, as `cudarc`'s
//! `sys` declares them), which differ from PTX's `tensormap.replace` numbering.

use std::ffi::c_void;

use cudarc::driver::sys as cu;
use trident_core::DType;

use crate::api::api;
use crate::error::CudaError;

/// A tiled tensor map's description, dimension 0 (the contiguous one) first.
#[derive(Clone, Debug, PartialEq)]
pub struct TiledMap {
    /// Device address of element (0, …, 0); 16-byte aligned.
    pub global_address: u64,
    pub dtype: DType,
    /// Elements per dimension (1 to 5 dimensions).
    pub dims: Vec<u64>,
    /// Bytes between consecutive indices of dimensions 1.. (`dims.len() - 1`; multiples of 16).
    pub strides: Vec<u64>,
    /// Box elements per dimension (each 1 to 256).
    pub box_dims: Vec<u32>,
    /// Shared-memory swizzle span in bytes: 0, 32, 64 or 128.
    pub swizzle: u32,
    /// Out-of-bounds float elements read as NaN (else 0).
    pub nan: bool,
}

/// The driver's data type for `d` (by width where the type does not change a copy).
fn data_type(d: DType) -> u32 {
    use cu::CUtensorMapDataType_enum as T;
    (match d {
        DType::F16 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        DType::BF16 => T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        DType::F32 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        DType::F64 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
        DType::I32 => T::CU_TENSOR_MAP_DATA_TYPE_INT32,
        DType::I64 => T::CU_TENSOR_MAP_DATA_TYPE_INT64,
        DType::U64 => T::CU_TENSOR_MAP_DATA_TYPE_UINT64,
        _ => match d.size_bytes() {
            1 => T::CU_TENSOR_MAP_DATA_TYPE_UINT8,
            2 => T::CU_TENSOR_MAP_DATA_TYPE_UINT16,
            4 => T::CU_TENSOR_MAP_DATA_TYPE_UINT32,
            _ => T::CU_TENSOR_MAP_DATA_TYPE_UINT64,
        },
    }) as u32
}

/// Checks what the driver would otherwise reject with a bare `CUDA_ERROR_INVALID_VALUE`,
/// so the error can say which rule.
pub fn check_tiled(m: &TiledMap) -> Result<(), String> {
    let rank = m.dims.len();
    if !(1..=5).contains(&rank) || m.box_dims.len() != rank || m.strides.len() + 1 != rank {
        return Err(format!(
            "a map has 1 to 5 dimensions with one box size each and one stride per dimension after the first (got {} dims, {} box sizes, {} strides)",
            rank,
            m.box_dims.len(),
            m.strides.len()
        ));
    }
    if !m.global_address.is_multiple_of(16) {
        return Err(format!("the global address {:#x} is not 16-byte aligned", m.global_address));
    }
    if let Some(s) = m.strides.iter().find(|&&s| !s.is_multiple_of(16) || s >= 1 << 40) {
        return Err(format!("a stride of {s} bytes: strides are multiples of 16 below 2^40"));
    }
    if let Some(d) = m.dims.iter().find(|&&d| d == 0 || d > 1 << 32) {
        return Err(format!("a dimension of {d}: dimensions are 1 to 2^32"));
    }
    if let Some(b) = m.box_dims.iter().find(|&&b| b == 0 || b > 256) {
        return Err(format!("a box dimension of {b}: box dimensions are 1 to 256"));
    }
    let inner = m.box_dims[0] as u64 * m.dtype.size_bytes() as u64;
    if !inner.is_multiple_of(16) {
        return Err(format!("the box's contiguous dimension spans {inner} bytes, not a multiple of 16"));
    }
    if m.swizzle != 0 && inner > m.swizzle as u64 {
        return Err(format!(
            "the box's contiguous dimension spans {inner} bytes, more than the {}-byte swizzle",
            m.swizzle
        ));
    }
    Ok(())
}

/// Encodes `m` with the driver. Errors: no driver, a driver without `cuTensorMapEncodeTiled`,
/// a rule [`check_tiled`] names, or the driver's own refusal.
pub fn encode_tiled(m: &TiledMap) -> Result<[u8; 128], CudaError> {
    check_tiled(m).map_err(CudaError::InvalidArgument)?;
    let api = api()?;
    let f = api.cuTensorMapEncodeTiled.ok_or_else(|| {
        CudaError::InvalidArgument(format!(
            "{} has no cuTensorMapEncodeTiled (a CUDA 12 driver is needed for TMA)",
            api.path
        ))
    })?;
    use cu::CUtensorMapSwizzle_enum as S;
    let swizzle = match m.swizzle {
        0 => S::CU_TENSOR_MAP_SWIZZLE_NONE,
        32 => S::CU_TENSOR_MAP_SWIZZLE_32B,
        64 => S::CU_TENSOR_MAP_SWIZZLE_64B,
        _ => S::CU_TENSOR_MAP_SWIZZLE_128B,
    } as u32;
    let fill = if m.nan && m.dtype.is_float() {
        cu::CUtensorMapFloatOOBfill_enum::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
    } else {
        cu::CUtensorMapFloatOOBfill_enum::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
    } as u32;
    let interleave = cu::CUtensorMapInterleave_enum::CU_TENSOR_MAP_INTERLEAVE_NONE as u32;
    let l2 = cu::CUtensorMapL2promotion_enum::CU_TENSOR_MAP_L2_PROMOTION_L2_128B as u32;
    let element_strides = vec![1u32; m.dims.len()];
    // 64-byte aligned storage for the map, as the driver requires.
    #[repr(C, align(64))]
    struct Map([u8; 128]);
    let mut out = Map([0; 128]);
    // SAFETY: every pointer is valid for the lengths the rank implies (checked above); the
    // map is 128 writable bytes aligned to 64; the address is only recorded, not accessed.
    let rc = unsafe {
        f(
            out.0.as_mut_ptr() as *mut c_void,
            data_type(m.dtype),
            m.dims.len() as u32,
            m.global_address as *mut c_void,
            m.dims.as_ptr(),
            m.strides.as_ptr(),
            m.box_dims.as_ptr(),
            element_strides.as_ptr(),
            interleave,
            swizzle,
            l2,
            fill,
        )
    };
    api.check(rc, || format!("cuTensorMapEncodeTiled({m:?})"))?;
    Ok(out.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> TiledMap {
        TiledMap {
            global_address: 0x1000,
            dtype: DType::F16,
            dims: vec![72, 100],
            strides: vec![144],
            box_dims: vec![64, 64],
            swizzle: 128,
            nan: false,
        }
    }

    #[test]
    fn the_rules_are_checked_before_the_driver() {
        assert_eq!(check_tiled(&map()), Ok(()));
        let bad = [
            TiledMap { global_address: 0x1008, ..map() },
            TiledMap { strides: vec![100], ..map() },
            TiledMap { box_dims: vec![64, 257], ..map() },
            TiledMap { box_dims: vec![4, 64], ..map() },
            TiledMap { box_dims: vec![128, 64], ..map() },
            TiledMap { dims: vec![72, 0], ..map() },
            TiledMap { strides: vec![], ..map() },
        ];
        let words = ["aligned", "multiples of 16", "1 to 256", "multiple of 16", "swizzle", "1 to 2^32", "stride per"];
        for (m, w) in bad.iter().zip(words) {
            let e = check_tiled(m).unwrap_err();
            assert!(e.contains(w), "{e}");
        }
    }

    #[test]
    fn a_map_parameter_is_64_byte_aligned() {
        let (slots, size) = crate::param_layout(&[crate::Param::U32(1), crate::Param::TensorMap([0; 128])]);
        assert_eq!((slots[1].offset, slots[1].size, size), (64, 128, 192));
    }

    #[test]
    fn without_a_driver_encoding_is_an_error() {
        if crate::Device::available() {
            return;
        }
        assert!(encode_tiled(&map()).is_err());
    }
}
