//! Tensor maps of TMA kernels (`PtxKernel::tensor_maps`), built at launch from the
//! arguments: each is a hidden 128-byte parameter after every other one. The emulators take
//! maps in the PTX emulator's own encoding (`trident_emu::TensorMap`); a GPU takes the
//! driver's (`cuTensorMapEncodeTiled`, see `gpu::CudaRunner`). Both are built from the same
//! `trident_cuda::TiledMap` description, so the two backends read the same box.

use trident_core::DType;
use trident_cuda::TiledMap;
use trident_gpu::ptx::tma::{MapField, TensorMapSpec};
use trident_gpu::{AbiType, PtxKernel};

use crate::args::ArgValue;
use crate::error::RunError;
use crate::scalar::scalar_bits;

/// The value of scalar parameter `i` at this launch, as an integer of its type.
fn param_value(i: usize, ptx: &PtxKernel, args: &[ArgValue]) -> Result<i64, RunError> {
    let (Some(p), Some(v)) = (ptx.params.get(i), args.get(i)) else {
        return Err(RunError::msg(format!("internal: tensor map field names parameter {i}, which is missing")));
    };
    let AbiType::Scalar(d) = p.ty else {
        return Err(RunError::msg(format!("internal: tensor map field names pointer parameter `{}`", p.name)));
    };
    let bits = scalar_bits(v, d);
    let w = d.bits();
    Ok(if d.is_signed_int() && w < 64 { ((bits << (64 - w)) as i64) >> (64 - w) } else { bits as i64 })
}

/// The integer value of a map field at this launch.
fn field_value(f: &MapField, ptx: &PtxKernel, args: &[ArgValue]) -> Result<i64, RunError> {
    let mut err = None;
    let v = f.eval(&mut |i| match param_value(i, ptx, args) {
        Ok(v) => Some(v),
        Err(e) => {
            err = Some(e);
            None
        }
    });
    match (v, err) {
        (Some(v), _) => Ok(v),
        (None, Some(e)) => Err(e),
        (None, None) => Err(RunError::msg("internal: a tensor map field without a value")),
    }
}

/// How an error names a map field: the parameter, the constant, or the product's factors.
fn field_name(f: &MapField, ptx: &PtxKernel) -> String {
    match f {
        MapField::Param(i) => ptx.params.get(*i).map_or("?".to_string(), |p| format!("`{}`", p.name)),
        MapField::Const(c) => format!("the constant {c}"),
        MapField::Product { factors, .. } => {
            let parts: Vec<String> = factors
                .iter()
                .map(|x| match x {
                    MapField::Const(c) => c.to_string(),
                    _ => field_name(x, ptx),
                })
                .collect();
            format!("the product {}", parts.join(" * "))
        }
    }
}

/// Resolves `spec` against the launch's arguments (dimension 0, the contiguous one, first;
/// the global address left 0 for the backend's buffer); a negative or too large dimension or
/// stride is an error naming the parameter it came from.
pub(crate) fn resolve(spec: &TensorMapSpec, ptx: &PtxKernel, args: &[ArgValue]) -> Result<TiledMap, RunError> {
    let name = |f: &MapField| field_name(f, ptx);
    let base = ptx.params.get(spec.base_param).map_or("?", |p| p.name.as_str());
    let esize = spec.dtype.size_bytes() as u64;
    let mut dims = vec![];
    for f in spec.shape.iter().rev() {
        let v = field_value(f, ptx, args)?;
        if !(1..=u32::MAX as i64).contains(&v) {
            return Err(RunError::argument(format!(
                "tensor descriptor of `{base}`: a dimension of {v} (from {}); TMA needs 1 to 2^32 - 1",
                name(f)
            )));
        }
        dims.push(v as u64);
    }
    let mut strides = vec![];
    for f in spec.strides.iter().rev().skip(1) {
        let v = field_value(f, ptx, args)?;
        if v <= 0 {
            return Err(RunError::argument(format!(
                "tensor descriptor of `{base}`: a stride of {v} elements (from {}); TMA needs positive strides",
                name(f)
            )));
        }
        strides.push(v as u64 * esize);
    }
    Ok(TiledMap {
        global_address: 0,
        dtype: spec.dtype,
        dims,
        strides,
        box_dims: spec.block.iter().rev().copied().collect(),
        swizzle: spec.swizzle,
        nan: spec.nan,
    })
}

/// The emulator's element type for `d` (by size where the type does not matter to a copy).
fn emu_elem(d: DType) -> trident_emu::tensormap::ElemType {
    use trident_emu::tensormap::ElemType as E;
    match d {
        DType::F16 => E::F16,
        DType::BF16 => E::BF16,
        DType::F32 => E::F32,
        DType::F64 => E::F64,
        DType::I32 => E::S32,
        DType::U32 => E::U32,
        DType::I64 => E::S64,
        DType::U64 => E::U64,
        _ => match d.size_bytes() {
            1 => E::U8,
            2 => E::U16,
            4 => E::U32,
            _ => E::U64,
        },
    }
}

/// The hidden map arguments of an emulator launch (after every other argument).
pub(crate) fn emulator_maps(ptx: &PtxKernel, args: &[ArgValue]) -> Result<Vec<trident_emu::KernelArg>, RunError> {
    use trident_emu::tensormap::{OobFill, Swizzle};
    let mut out = vec![];
    for spec in &ptx.tensor_maps {
        let t = resolve(spec, ptx, args)?;
        let base_param = spec.base_param;
        let swizzle = match t.swizzle {
            0 => Swizzle::None,
            32 => Swizzle::B32,
            64 => Swizzle::B64,
            _ => Swizzle::B128,
        };
        let fill = if t.nan && t.dtype.is_float() { OobFill::Nan } else { OobFill::Zero };
        let address = trident_emu::buffer_base(base_param);
        let map =
            trident_emu::TensorMap::tiled(address, emu_elem(t.dtype), &t.dims, &t.strides, &t.box_dims, swizzle, fill)
                .map_err(|e| {
                    let base = ptx.params.get(base_param).map_or("?", |p| p.name.as_str());
                    RunError::argument(format!("tensor descriptor of `{base}`: {e}"))
                })?;
        out.push(trident_emu::KernelArg::Bytes(map.encode().to_vec()));
    }
    Ok(out)
}

/// The hidden maps of a CUDA launch, encoded by the driver for the uploaded buffers.
pub(crate) fn cuda_maps(
    ptx: &PtxKernel,
    args: &[ArgValue],
    bufs: &[Option<trident_cuda::DeviceBuffer>],
) -> Result<Vec<[u8; 128]>, RunError> {
    let mut out = vec![];
    for spec in &ptx.tensor_maps {
        let mut m = resolve(spec, ptx, args)?;
        let base = ptx.params.get(spec.base_param).map_or("?", |p| p.name.as_str());
        let Some(Some(buf)) = bufs.get(spec.base_param) else {
            return Err(RunError::argument(format!("tensor descriptor of `{base}`: `{base}` is not a tensor")));
        };
        m.global_address = buf.device_ptr();
        out.push(
            trident_cuda::encode_tiled(&m)
                .map_err(|e| RunError::argument(format!("tensor descriptor of `{base}`: {e}")))?,
        );
    }
    Ok(out)
}
