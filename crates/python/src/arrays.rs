//! Torch tensors and `__cuda_array_interface__` arrays for the dispatcher's fast path.
//!
//! numpy arrays are read through the buffer protocol (`buffer`); torch tensors have no buffer
//! protocol, and device arrays none that reaches device memory. What the package's general
//! path (`_args.host_array`, `_args.device_array`, `_args.launch_stream`) learns of them in
//! Python — dtype, device, address, the byte span, the stream to queue on — is read here with
//! a few attribute reads per value. Anything the general path would refuse or treat in a way
//! not reproduced here (a dtype it does not take, a device that is neither the CPU nor CUDA,
//! a negative stride, a malformed interface, a masked array, a null address) makes the
//! reader return `None`, and the launch takes the general path, which raises its own errors.
//!
//! Tested through the package (the crate's tests are its pytest suite): `test_torch.py`
//! (CPU tensors: views, dtypes, Parameters, aliasing, other devices) and
//! `test_cuda_arrays.py` (interface arrays of every dtype, strided, unaligned, with streams,
//! and those left to the general path).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyString, PyTuple};
use pyo3::{intern, PyTraverseError, PyVisit};
use trident_runtime::DType;

use crate::buffer::span_bytes;

/// What the fast path needs of torch, read once from the package (`_args.torch_fast_info`)
/// after torch was imported: its tensor types (exact types only: subclasses take the general
/// path), its dtype objects, and its raw-stream query.
pub(crate) struct Torch {
    tensor: Py<PyAny>,
    parameter: Py<PyAny>,
    /// torch's dtype objects (singletons, compared by identity) and Trident's dtypes.
    dtypes: Vec<(Py<PyAny>, DType)>,
    /// `torch._C._cuda_getCurrentRawStream(device_index)`, where torch has it; without it a
    /// CUDA tensor takes the general path (`torch.cuda.current_stream`).
    raw_stream: Option<Py<PyAny>>,
}

/// `_args.torch_fast_info()`'s tuple, as extracted.
type TorchInfo = (Py<PyAny>, Py<PyAny>, Vec<(Py<PyAny>, String)>, Option<Py<PyAny>>);

impl Torch {
    /// From `_args.torch_fast_info()`: `(Tensor, Parameter, [(dtype, name)], raw_stream or None)`.
    pub(crate) fn from_info(info: &Bound<'_, PyAny>) -> Option<Torch> {
        let (tensor, parameter, dtypes, raw_stream): TorchInfo = info.extract().ok()?;
        let dtypes = dtypes.into_iter().filter_map(|(o, name)| Some((o, DType::parse(&name)?))).collect();
        Some(Torch { tensor, parameter, dtypes, raw_stream })
    }

    /// Whether `v` is exactly a `torch.Tensor` or `torch.nn.Parameter`.
    pub(crate) fn is_tensor(&self, py: Python<'_>, v: &Bound<'_, PyAny>) -> bool {
        let t = v.get_type();
        t.is(self.tensor.bind(py)) || t.is(self.parameter.bind(py))
    }

    pub(crate) fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.tensor)?;
        visit.call(&self.parameter)?;
        for (o, _) in &self.dtypes {
            visit.call(o)?;
        }
        if let Some(s) = &self.raw_stream {
            visit.call(s)?;
        }
        Ok(())
    }
}

/// Where an array's memory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Host memory the kernel's copy is made of (a CPU tensor); always writable.
    Host,
    /// CUDA device memory. `torch_device`: a torch tensor's device index (its current stream
    /// is the launch's); `stream`: the stream an interface array names (version 3), if any.
    Device { torch_device: Option<i64>, stream: Option<PyStream> },
}

/// The `stream` entry of a `__cuda_array_interface__`, as `_args.launch_stream` reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PyStream {
    /// None or 1 (CUDA's legacy default stream): no hint.
    Default,
    Handle(u64),
}

/// A torch tensor's or an interface array's facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Array {
    pub dtype: DType,
    pub address: usize,
    /// Bytes from the first element to the end of the last one (0 for an empty array).
    pub nbytes: usize,
    pub place: Place,
}

fn ints(v: &Bound<'_, PyAny>) -> Option<Vec<i64>> {
    // torch.Size is a tuple subclass; the interface's shape and strides are tuples.
    let t = v.cast::<PyTuple>().ok()?;
    t.iter().map(|x| if x.is_instance_of::<PyInt>() { x.extract().ok() } else { None }).collect()
}

/// A torch tensor (`torch.is_tensor` already established) on the CPU or a CUDA device.
pub(crate) fn torch_tensor(py: Python<'_>, torch: &Torch, v: &Bound<'_, PyAny>) -> Option<Array> {
    let dtype_obj = v.getattr(intern!(py, "dtype")).ok()?;
    let dtype = torch.dtypes.iter().find(|(o, _)| o.as_ptr() == dtype_obj.as_ptr())?.1;
    let place = if v.getattr(intern!(py, "is_cuda")).ok()?.is_truthy().ok()? {
        torch.raw_stream.as_ref()?;
        let index: i64 = v.call_method0(intern!(py, "get_device")).ok()?.extract().ok()?;
        Place::Device { torch_device: Some(index), stream: None }
    } else if v.getattr(intern!(py, "is_cpu")).ok()?.is_truthy().ok()? {
        Place::Host
    } else {
        return None; // another device: the general path names it
    };
    let shape = ints(&v.getattr(intern!(py, "shape")).ok()?)?;
    let itemsize = dtype.size_bytes().max(1);
    let strides: Vec<i64> = ints(&v.call_method0(intern!(py, "stride")).ok()?)?
        .iter()
        .map(|&s| s.checked_mul(itemsize as i64))
        .collect::<Option<_>>()?;
    let nbytes = span_bytes(&shape, &strides, itemsize)?;
    let address: usize = v.call_method0(intern!(py, "data_ptr")).ok()?.extract().ok()?;
    if address == 0 && (nbytes > 0 || matches!(place, Place::Device { .. })) {
        return None; // the general path's "a null device pointer"
    }
    Some(Array { dtype, address, nbytes, place })
}

/// The stream a launch on torch CUDA tensors is queued on: torch's current stream on `device`.
pub(crate) fn torch_stream(py: Python<'_>, torch: &Torch, device: i64) -> Option<u64> {
    torch.raw_stream.as_ref()?.bind(py).call1((device,)).ok()?.extract().ok()
}

/// A numpy type string (`<f4`, `|b1`) in the machine's byte order, as `_args` takes them.
fn typestr_dtype(s: &str) -> Option<DType> {
    let b = s.as_bytes();
    if b.len() < 3 {
        return None;
    }
    let native = if cfg!(target_endian = "little") { b'<' } else { b'>' };
    if b[0] != native && b[0] != b'|' && b[0] != b'=' {
        return None;
    }
    let size: usize = s[2..].parse().ok()?;
    let name = match (b[1], size) {
        (b'b', 1) => "i1",
        (b'i', 1) => "i8",
        (b'i', 2) => "i16",
        (b'i', 4) => "i32",
        (b'i', 8) => "i64",
        (b'u', 1) => "u8",
        (b'u', 2) => "u16",
        (b'u', 4) => "u32",
        (b'u', 8) => "u64",
        (b'f', 2) => "f16",
        (b'f', 4) => "f32",
        (b'f', 8) => "f64",
        _ => return None,
    };
    DType::parse(name)
}

/// An object's `__cuda_array_interface__` (versions 0–3), read as `_args.device_array` reads
/// it; None when the object has none or anything in it is not plainly what that reads.
pub(crate) fn interface_array<'py>(py: Python<'py>, v: &Bound<'py, PyAny>) -> Option<Array> {
    let cai = v.getattr(intern!(py, "__cuda_array_interface__")).ok()?;
    let cai = cai.cast::<PyDict>().ok()?;
    let get = |k: &Bound<'py, PyString>| cai.get_item(k).ok().flatten();
    let shape = ints(&get(intern!(py, "shape"))?)?;
    let typestr = get(intern!(py, "typestr"))?;
    let dtype = typestr_dtype(&typestr.cast::<PyString>().ok()?.to_cow().ok()?)?;
    let data = get(intern!(py, "data"))?;
    let address = data.cast::<PyTuple>().ok()?.get_item(0).ok()?;
    if !address.is_instance_of::<PyInt>() {
        return None;
    }
    let address: usize = address.extract().ok()?;
    if get(intern!(py, "mask")).is_some_and(|m| !m.is_none()) {
        return None;
    }
    let itemsize = dtype.size_bytes().max(1);
    let nbytes = match get(intern!(py, "strides")).filter(|s| !s.is_none()) {
        None => {
            let n = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?))?;
            n.checked_mul(itemsize)?
        }
        Some(strides) => span_bytes(&shape, &ints(&strides)?, itemsize)?,
    };
    if address == 0 {
        return None;
    }
    // `_args.launch_stream` reads the stream entry whatever the version.
    let stream = match get(intern!(py, "stream")) {
        None => PyStream::Default,
        Some(s) if s.is_none() => PyStream::Default,
        Some(s) if s.is_exact_instance_of::<PyInt>() => match s.extract::<u64>().ok()? {
            1 => PyStream::Default,
            h => PyStream::Handle(h),
        },
        Some(_) => return None,
    };
    Some(Array { dtype, address, nbytes, place: Place::Device { torch_device: None, stream: Some(stream) } })
}
