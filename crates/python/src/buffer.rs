//! A numpy array's memory through the buffer protocol, for the dispatcher's fast path.
//!
//! The package's general path reads `__array_interface__` in Python, which builds a dict per
//! array (about 1.5 µs, more than the goal for a whole launch). The buffer protocol hands the
//! same facts — address, item size and format, shape, strides, read-only — in one C call.
//!
//! `PyObject_GetBuffer` is in the limited API only from Python 3.11, and the wheel is abi3
//! for 3.9+, so pyo3 does not declare it for us. The function and the `Py_buffer` layout have
//! been part of CPython's exported C API, unchanged, since 3.3 (3.11 only promised to keep
//! them), so declaring them here works on every CPython the wheel loads into. PyPy is not a
//! target of the abi3 wheel.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::marker::PhantomData;

use pyo3::ffi;
use pyo3::prelude::*;
use trident_runtime::DType;

#[repr(C)]
struct RawBuffer {
    buf: *mut c_void,
    obj: *mut ffi::PyObject,
    len: ffi::Py_ssize_t,
    itemsize: ffi::Py_ssize_t,
    readonly: c_int,
    ndim: c_int,
    format: *mut c_char,
    shape: *mut ffi::Py_ssize_t,
    strides: *mut ffi::Py_ssize_t,
    suboffsets: *mut ffi::Py_ssize_t,
    internal: *mut c_void,
}

extern "C" {
    fn PyObject_GetBuffer(obj: *mut ffi::PyObject, view: *mut RawBuffer, flags: c_int) -> c_int;
    fn PyBuffer_Release(view: *mut RawBuffer);
}

// CPython's flags: strides (which implies shape) and the format, read-only allowed.
const PYBUF_FORMAT: c_int = 0x0004;
const PYBUF_ND: c_int = 0x0008;
const PYBUF_STRIDES: c_int = 0x0010 | PYBUF_ND;

/// A held buffer view: the exporter keeps the memory alive (and numpy refuses to resize it)
/// until the view is released, on drop, with the GIL held (`'py`).
pub(crate) struct View<'py> {
    // Boxed: an exporter may keep pointers into the struct it filled.
    raw: Box<RawBuffer>,
    _py: PhantomData<Python<'py>>,
}

impl Drop for View<'_> {
    fn drop(&mut self) {
        // SAFETY: `raw` was filled by a successful `PyObject_GetBuffer`, is released once,
        // and `'py` proves the GIL is held.
        unsafe { PyBuffer_Release(&mut *self.raw) }
    }
}

/// What the fast path needs of an array.
pub(crate) struct ArrayInfo {
    pub dtype: DType,
    /// The first element's address.
    pub address: usize,
    /// Bytes from the first element to the end of the last one it can reach (as `_args.span`).
    pub nbytes: usize,
    pub writable: bool,
}

/// The struct-module format of a native-endian scalar to its dtype (`l`/`L` by item size).
fn dtype_of(format: &[u8], itemsize: usize) -> Option<DType> {
    let code = match format {
        [c] => *c,
        // Native byte order spelled out; `<` only where it is native.
        [b'@' | b'=', c] => *c,
        [b'<', c] if cfg!(target_endian = "little") => *c,
        _ => return None,
    };
    let dt = match (code, itemsize) {
        (b'?', 1) => DType::I1,
        (b'b', 1) => DType::I8,
        (b'B', 1) => DType::U8,
        (b'h', 2) => DType::I16,
        (b'H', 2) => DType::U16,
        (b'i', 4) | (b'l', 4) => DType::I32,
        (b'I', 4) | (b'L', 4) => DType::U32,
        (b'q', 8) | (b'l', 8) => DType::I64,
        (b'Q', 8) | (b'L', 8) => DType::U64,
        (b'e', 2) => DType::F16,
        (b'f', 4) => DType::F32,
        (b'd', 8) => DType::F64,
        _ => return None,
    };
    Some(dt)
}

/// `obj`'s memory as the fast path takes it, or None when anything is unusual (no buffer, a
/// format Triton has no dtype for, a negative stride, suboffsets): the caller then takes the
/// package's general path, which raises the error the package always raised.
pub(crate) fn view<'py>(obj: &Bound<'py, PyAny>) -> Option<(View<'py>, ArrayInfo)> {
    let mut raw = Box::new(RawBuffer {
        buf: std::ptr::null_mut(),
        obj: std::ptr::null_mut(),
        len: 0,
        itemsize: 0,
        readonly: 0,
        ndim: 0,
        format: std::ptr::null_mut(),
        shape: std::ptr::null_mut(),
        strides: std::ptr::null_mut(),
        suboffsets: std::ptr::null_mut(),
        internal: std::ptr::null_mut(),
    });
    // SAFETY: `obj` is a live object and the GIL is held (`Bound<'py, _>`); `raw` is a
    // zeroed Py_buffer the call fills.
    if unsafe { PyObject_GetBuffer(obj.as_ptr(), &mut *raw, PYBUF_STRIDES | PYBUF_FORMAT) } != 0 {
        // The failure's exception is dropped: the general path reports the argument itself.
        let _ = PyErr::take(obj.py());
        return None;
    }
    let v = View { raw, _py: PhantomData };
    let r = &*v.raw;
    if r.format.is_null() || r.itemsize <= 0 || !r.suboffsets.is_null() || r.ndim < 0 {
        return None;
    }
    // SAFETY: a filled view's format is a NUL-terminated string, and its shape and strides
    // arrays hold `ndim` entries each (PYBUF_STRIDES), all alive until the release.
    let format = unsafe { CStr::from_ptr(r.format) }.to_bytes();
    let itemsize = r.itemsize as usize;
    let dtype = dtype_of(format, itemsize)?;
    let ndim = r.ndim as usize;
    let (shape, strides) = if ndim == 0 {
        (&[][..], &[][..])
    } else if r.shape.is_null() || r.strides.is_null() {
        return None;
    } else {
        unsafe { (std::slice::from_raw_parts(r.shape, ndim), std::slice::from_raw_parts(r.strides, ndim)) }
    };
    let shape: Vec<i64> = shape.iter().map(|&n| n as i64).collect();
    let strides: Vec<i64> = strides.iter().map(|&s| s as i64).collect();
    let nbytes = span_bytes(&shape, &strides, itemsize)?;
    let info = ArrayInfo { dtype, address: r.buf as usize, nbytes, writable: r.readonly == 0 };
    if info.address == 0 && nbytes > 0 {
        return None;
    }
    Some((v, info))
}

/// Bytes from an array's first element to the end of the last one it can reach (`_args`'s
/// `_strided_nbytes`): 0 for an empty array; None for a negative stride, mismatched ranks or
/// an overflow (the general path then decides). `byte_strides` in bytes.
pub(crate) fn span_bytes(shape: &[i64], byte_strides: &[i64], itemsize: usize) -> Option<usize> {
    if shape.len() != byte_strides.len() || shape.iter().any(|&n| n < 0) || byte_strides.iter().any(|&s| s < 0) {
        return None;
    }
    if shape.contains(&0) {
        return Some(0);
    }
    let mut end = itemsize;
    for (&n, &s) in shape.iter().zip(byte_strides) {
        end = end.checked_add((n as usize - 1).checked_mul(s as usize)?)?;
    }
    Some(end)
}
