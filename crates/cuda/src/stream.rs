//! Streams and events.

use std::sync::{Arc, Mutex};

use cudarc::driver::sys as cu;

use crate::api::CUDA_SUCCESS;
use crate::device::{Device, DeviceInner};
use crate::error::{CudaError, LaunchDesc};

/// The last launch made on a stream, kept so that an asynchronous error reported at the
/// next synchronisation can name the kernel that probably caused it. Cloning the name is
/// an `Arc` increment, so recording it costs no allocation.
#[derive(Clone)]
pub(crate) struct LastLaunch {
    pub(crate) kernel: Arc<str>,
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
    pub(crate) shared: u32,
}

impl LastLaunch {
    pub(crate) fn desc(&self) -> Box<LaunchDesc> {
        Box::new(LaunchDesc {
            kernel: self.kernel.to_string(),
            grid: self.grid,
            block: self.block,
            dynamic_shared_bytes: self.shared,
        })
    }
}

/// A queue of work on one device. Streams made with [`Stream::new`] are *blocking*: they
/// synchronise with the legacy default stream, which is where this crate's synchronous
/// copies run, so a copy after a launch sees the launch's results.
pub struct Stream {
    pub(crate) dev: Arc<DeviceInner>,
    pub(crate) raw: cu::CUstream,
    owned: bool,
    pub(crate) last: Mutex<Option<LastLaunch>>,
}

// SAFETY: the stream handle is only used through the thread-safe driver.
unsafe impl Send for Stream {}
unsafe impl Sync for Stream {}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stream({:p} on device {})", self.raw, self.dev.info.ordinal)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.owned && self.dev.make_current().is_ok() {
            // SAFETY: created by us, destroyed once. Pending work still completes.
            unsafe { (self.dev.api.cuStreamDestroy)(self.raw) };
        }
    }
}

impl Stream {
    /// A new blocking stream.
    pub fn new(device: &Device) -> Result<Stream, CudaError> {
        Stream::create(device, 0)
    }

    /// A new non-blocking stream: it does not synchronise with the legacy default stream,
    /// so this crate's synchronous copies do not wait for its work. Call
    /// [`Stream::synchronize`] before reading results.
    pub fn new_non_blocking(device: &Device) -> Result<Stream, CudaError> {
        Stream::create(device, 1)
    }

    /// `flags`: 0 = CU_STREAM_DEFAULT, 1 = CU_STREAM_NON_BLOCKING.
    fn create(device: &Device, flags: u32) -> Result<Stream, CudaError> {
        let dev = device.inner.clone();
        dev.make_current()?;
        let mut raw: cu::CUstream = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; flags are one of the two documented values.
        let rc = unsafe { (dev.api.cuStreamCreate)(&mut raw, flags) };
        dev.api.check(rc, || "cuStreamCreate".into())?;
        Ok(Stream { dev, raw, owned: true, last: Mutex::new(None) })
    }

    /// The raw `CUstream`, for interoperating with other CUDA code (null for the default
    /// stream). Valid while this `Stream` lives.
    pub fn as_raw(&self) -> *mut std::ffi::c_void {
        self.raw as *mut std::ffi::c_void
    }

    /// A stream made by other code in `device`'s context (torch's current stream, say), from
    /// its raw `CUstream` (null: the legacy default stream). Not destroyed here; the caller
    /// keeps it alive while this `Stream` is used.
    pub fn borrowed(device: &Device, raw: *mut std::ffi::c_void) -> Stream {
        Stream { dev: device.inner.clone(), raw: raw as cu::CUstream, owned: false, last: Mutex::new(None) }
    }

    /// The legacy default stream of `device`.
    pub(crate) fn null(device: &Device) -> Stream {
        Stream { dev: device.inner.clone(), raw: std::ptr::null_mut(), owned: false, last: Mutex::new(None) }
    }

    pub fn device(&self) -> Device {
        Device { inner: self.dev.clone() }
    }

    pub(crate) fn last_launch(&self) -> Option<Box<LaunchDesc>> {
        self.last.lock().ok().and_then(|l| l.as_ref().map(LastLaunch::desc))
    }

    /// Waits until all work queued on this stream has finished. An error here usually
    /// comes from a kernel (an illegal address, say) and names the last launch queued.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.dev.make_current()?;
        // SAFETY: a live stream of this context (or the null stream).
        let rc = unsafe { (self.dev.api.cuStreamSynchronize)(self.raw) };
        if rc == CUDA_SUCCESS {
            Ok(())
        } else {
            Err(CudaError::Async {
                call: "cuStreamSynchronize".into(),
                last_launch: self.last_launch(),
                driver: self.dev.api.error(rc),
            })
        }
    }
}

/// A point in a stream's work, for timing on the device.
pub struct Event {
    dev: Arc<DeviceInner>,
    raw: cu::CUevent,
    /// The last launch on the stream this event was recorded on, for error messages.
    last: Mutex<Option<LastLaunch>>,
}

// SAFETY: the event handle is only used through the thread-safe driver.
unsafe impl Send for Event {}
unsafe impl Sync for Event {}

impl Drop for Event {
    fn drop(&mut self) {
        if self.dev.make_current().is_ok() {
            // SAFETY: created by us, destroyed once.
            unsafe { (self.dev.api.cuEventDestroy)(self.raw) };
        }
    }
}

impl Event {
    /// A new event with timing enabled.
    pub fn new(device: &Device) -> Result<Event, CudaError> {
        let dev = device.inner.clone();
        dev.make_current()?;
        let mut raw: cu::CUevent = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; flags 0 = CU_EVENT_DEFAULT (timing enabled).
        let rc = unsafe { (dev.api.cuEventCreate)(&mut raw, 0) };
        dev.api.check(rc, || "cuEventCreate".into())?;
        Ok(Event { dev, raw, last: Mutex::new(None) })
    }

    /// Records the event at the current end of `stream`'s queue.
    pub fn record(&self, stream: &Stream) -> Result<(), CudaError> {
        if stream.dev.ctx != self.dev.ctx {
            return Err(CudaError::InvalidArgument("event recorded on a stream of another device".into()));
        }
        self.dev.make_current()?;
        // SAFETY: both handles are live in this context.
        let rc = unsafe { (self.dev.api.cuEventRecord)(self.raw, stream.raw) };
        self.dev.api.check(rc, || "cuEventRecord".into())?;
        let latest = stream.last.lock().ok().and_then(|l| l.clone());
        if let Ok(mut l) = self.last.lock() {
            *l = latest;
        }
        Ok(())
    }

    /// Waits until the work before the event has finished.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.dev.make_current()?;
        // SAFETY: a live event of this context.
        let rc = unsafe { (self.dev.api.cuEventSynchronize)(self.raw) };
        if rc == CUDA_SUCCESS {
            Ok(())
        } else {
            let last_launch = self.last.lock().ok().and_then(|l| l.as_ref().map(LastLaunch::desc));
            Err(CudaError::Async { call: "cuEventSynchronize".into(), last_launch, driver: self.dev.api.error(rc) })
        }
    }

    /// Milliseconds of device time between two recorded events (resolution about 0.5 µs).
    /// Waits for `end` first.
    pub fn elapsed_ms(start: &Event, end: &Event) -> Result<f32, CudaError> {
        if start.dev.ctx != end.dev.ctx {
            return Err(CudaError::InvalidArgument("timing events of two different devices".into()));
        }
        end.synchronize()?;
        let mut ms = 0f32;
        // SAFETY: out-pointer to a local; both events live in this context.
        let rc = unsafe { (end.dev.api.cuEventElapsedTime)(&mut ms, start.raw, end.raw) };
        end.dev.api.check(rc, || "cuEventElapsedTime".into())?;
        Ok(ms)
    }
}
