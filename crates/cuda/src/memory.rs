//! Device memory: untyped buffers, and copies to and from host tensors.
//!
//! Copies are synchronous and go through the legacy default stream, so they wait for
//! earlier work on every blocking stream (all streams this crate creates) and later work
//! waits for them. Device memory is not Rust memory: writes go through `&self`, and
//! kernels given a buffer may write it.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::sys as cu;
use trident_core::{DType, HostTensor};

use crate::device::{Device, DeviceInner};
use crate::error::CudaError;

/// A device allocation of `len` bytes (freed on drop). A zero-length buffer allocates
/// nothing and has address 0. A [`DeviceBuffer::borrowed`] one names memory someone else
/// allocated (a torch tensor's, say) and frees nothing.
pub struct DeviceBuffer {
    pub(crate) dev: Arc<DeviceInner>,
    ptr: cu::CUdeviceptr,
    len: usize,
    owned: bool,
}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuffer({:#x}, {} bytes, device {})", self.ptr, self.len, self.dev.info.ordinal)
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.owned && self.ptr != 0 && self.dev.make_current().is_ok() {
            // SAFETY: ptr came from cuMemAlloc in this context and is freed once.
            // A failure (say, a context broken by an earlier fault) cannot be reported here.
            unsafe { (self.dev.api.cuMemFree)(self.ptr) };
        }
    }
}

impl DeviceBuffer {
    /// Allocates `len` bytes (contents undefined: poison or upload before reading).
    pub fn alloc(device: &Device, len: usize) -> Result<DeviceBuffer, CudaError> {
        let dev = device.inner.clone();
        if len == 0 {
            return Ok(DeviceBuffer { dev, ptr: 0, len, owned: true });
        }
        dev.make_current()?;
        let mut ptr: cu::CUdeviceptr = 0;
        // SAFETY: out-pointer to a local; the context is current.
        let rc = unsafe { (dev.api.cuMemAlloc)(&mut ptr, len) };
        dev.api.check(rc, || format!("cuMemAlloc({len} bytes)"))?;
        Ok(DeviceBuffer { dev, ptr, len, owned: true })
    }

    /// The `len` bytes at device address `ptr`, allocated by other code in `device`'s context
    /// (the primary context, which the CUDA runtime and torch use too): never freed here. The
    /// caller keeps the memory alive while the buffer is used — the driver, not Rust, checks
    /// every access through it, so a wrong range is a CUDA error, not undefined behaviour in
    /// this process. Check the range first with [`Device::pointer_info`].
    pub fn borrowed(device: &Device, ptr: u64, len: usize) -> DeviceBuffer {
        DeviceBuffer { dev: device.inner.clone(), ptr, len, owned: false }
    }

    /// Whether this buffer names memory it does not own ([`DeviceBuffer::borrowed`]).
    pub fn is_borrowed(&self) -> bool {
        !self.owned
    }

    /// Allocates a buffer holding a copy of `bytes`.
    pub fn from_bytes(device: &Device, bytes: &[u8]) -> Result<DeviceBuffer, CudaError> {
        let buf = DeviceBuffer::alloc(device, bytes.len())?;
        buf.copy_from_host(bytes)?;
        Ok(buf)
    }

    /// Allocates a buffer holding a copy of the tensor's bytes.
    pub fn from_host(device: &Device, tensor: &HostTensor) -> Result<DeviceBuffer, CudaError> {
        DeviceBuffer::from_bytes(device, &tensor.data)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address (what a kernel's pointer parameter receives).
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    pub fn device(&self) -> Device {
        Device { inner: self.dev.clone() }
    }

    fn check_len(&self, what: &str, got: usize) -> Result<(), CudaError> {
        if got == self.len {
            Ok(())
        } else {
            Err(CudaError::SizeMismatch {
                what: format!("{what} (device buffer of {} bytes)", self.len),
                expected: self.len,
                got,
            })
        }
    }

    /// Overwrites the whole buffer with `bytes` (which must be exactly `len()` long).
    pub fn copy_from_host(&self, bytes: &[u8]) -> Result<(), CudaError> {
        self.check_len("host-to-device copy", bytes.len())?;
        if self.len == 0 {
            return Ok(());
        }
        self.dev.make_current()?;
        // SAFETY: both ranges are `len` bytes long; the context is current.
        let rc = unsafe { (self.dev.api.cuMemcpyHtoD)(self.ptr, bytes.as_ptr() as *const c_void, self.len) };
        self.dev.api.check(rc, || format!("cuMemcpyHtoD({} bytes)", self.len))
    }

    /// Copies the whole buffer into `out` (which must be exactly `len()` long).
    pub fn copy_to_host(&self, out: &mut [u8]) -> Result<(), CudaError> {
        self.check_len("device-to-host copy", out.len())?;
        if self.len == 0 {
            return Ok(());
        }
        self.dev.make_current()?;
        // SAFETY: both ranges are `len` bytes long; the context is current.
        let rc = unsafe { (self.dev.api.cuMemcpyDtoH)(out.as_mut_ptr() as *mut c_void, self.ptr, self.len) };
        self.dev.api.check(rc, || format!("cuMemcpyDtoH({} bytes)", self.len))
    }

    /// Copies the whole of `src` (same length, same device) into this buffer.
    pub fn copy_from_device(&self, src: &DeviceBuffer) -> Result<(), CudaError> {
        self.check_len("device-to-device copy", src.len)?;
        if self.dev.ctx != src.dev.ctx {
            return Err(CudaError::InvalidArgument("device-to-device copy between different devices".into()));
        }
        if self.len == 0 {
            return Ok(());
        }
        self.dev.make_current()?;
        // SAFETY: both ranges are `len` bytes long and live; the context is current.
        let rc = unsafe { (self.dev.api.cuMemcpyDtoD)(self.ptr, src.ptr, self.len) };
        self.dev.api.check(rc, || format!("cuMemcpyDtoD({} bytes)", self.len))
    }

    /// Overwrites the buffer with `tensor`'s bytes (sizes must match).
    pub fn upload(&self, tensor: &HostTensor) -> Result<(), CudaError> {
        self.copy_from_host(&tensor.data)
    }

    /// Reads the buffer into `tensor`'s bytes (sizes must match); dtype and shape are kept.
    pub fn download(&self, tensor: &mut HostTensor) -> Result<(), CudaError> {
        self.copy_to_host(&mut tensor.data)
    }

    /// Reads the buffer as a tensor of `dtype` and `shape` (whose size must match).
    pub fn to_host(&self, dtype: DType, shape: &[usize]) -> Result<HostTensor, CudaError> {
        let n = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        let bytes = n.and_then(|n| n.checked_mul(dtype.size_bytes()));
        match bytes {
            Some(b) if b == self.len => {
                let mut t = HostTensor { dtype, shape: shape.to_vec(), data: vec![0; b] };
                self.download(&mut t)?;
                Ok(t)
            }
            _ => Err(CudaError::SizeMismatch {
                what: format!("reading a {dtype} tensor of shape {shape:?}"),
                expected: self.len,
                got: bytes.unwrap_or(usize::MAX),
            }),
        }
    }

    /// Sets every byte to `value`.
    pub fn memset(&self, value: u8) -> Result<(), CudaError> {
        if self.len == 0 {
            return Ok(());
        }
        self.dev.make_current()?;
        // SAFETY: the range is the allocation; the context is current.
        let rc = unsafe { (self.dev.api.cuMemsetD8)(self.ptr, value, self.len) };
        self.dev.api.check(rc, || format!("cuMemsetD8({} bytes)", self.len))
    }

    /// Sets every 32-bit word to `value` (poisoning f32 outputs with a NaN pattern, say);
    /// the length must be a multiple of 4.
    pub fn fill_u32(&self, value: u32) -> Result<(), CudaError> {
        if !self.len.is_multiple_of(4) {
            return Err(CudaError::InvalidArgument(format!(
                "fill_u32 needs a length that is a multiple of 4, the buffer has {} bytes",
                self.len
            )));
        }
        if self.len == 0 {
            return Ok(());
        }
        self.dev.make_current()?;
        // SAFETY: len/4 words cover the allocation (cuMemAlloc aligns to at least 256 bytes).
        let rc = unsafe { (self.dev.api.cuMemsetD32)(self.ptr, value, self.len / 4) };
        self.dev.api.check(rc, || format!("cuMemsetD32({} words)", self.len / 4))
    }
}
