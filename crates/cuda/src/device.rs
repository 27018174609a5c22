//! Devices: discovery, properties, and the primary context every other object lives in.

use std::ffi::{c_char, c_int, CStr};
use std::sync::Arc;

use cudarc::driver::sys as cu;
use cudarc::driver::sys::CUdevice_attribute as A;

use crate::api::{api, Api, CUDA_SUCCESS};
use crate::error::CudaError;
use crate::stream::Stream;

/// Properties of a device, read once when it is opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    /// `(major, minor)`, e.g. `(9, 0)` for an H100.
    pub compute_capability: (u32, u32),
    pub sm_count: u32,
    pub warp_size: u32,
    pub max_threads_per_block: u32,
    pub max_threads_per_sm: u32,
    pub max_block_dim: [u32; 3],
    pub max_grid_dim: [u32; 3],
    /// Shared memory a block may use without opting in (48 KiB on every GPU so far).
    pub shared_mem_per_block: u32,
    /// Shared memory a block may use after raising the kernel's dynamic shared-memory limit
    /// (227 KiB on Hopper); [`crate::launch`] raises it when a launch asks for more.
    pub shared_mem_per_block_optin: u32,
    pub shared_mem_per_sm: u32,
    pub registers_per_block: u32,
    pub registers_per_sm: u32,
    /// Peak SM clock in kHz, if the driver still reports it (CUDA 13 deprecates the query).
    pub clock_khz: Option<u32>,
    /// Peak memory clock in kHz, if reported.
    pub memory_clock_khz: Option<u32>,
    pub memory_bus_width_bits: Option<u32>,
    pub l2_cache_bytes: u32,
    pub total_memory_bytes: usize,
    /// The driver's CUDA version as `1000 * major + 10 * minor` (13000 for CUDA 13.0).
    pub driver_version: u32,
    /// The library the driver was loaded from.
    pub driver_path: String,
}

impl DeviceInfo {
    /// The `sm_XY` name ptxas and PTX `.target` use for this device (`sm_90` for an H100;
    /// arch-specific variants such as `sm_90a` are the compiler's choice).
    pub fn sm_name(&self) -> String {
        format!("sm_{}{}", self.compute_capability.0, self.compute_capability.1)
    }
}

pub(crate) struct DeviceInner {
    pub(crate) api: &'static Api,
    pub(crate) dev: cu::CUdevice,
    pub(crate) ctx: cu::CUcontext,
    pub(crate) info: DeviceInfo,
}

// SAFETY: the context handle is only used through the driver, which is thread-safe; every
// entry point makes the context current on the calling thread first.
unsafe impl Send for DeviceInner {}
unsafe impl Sync for DeviceInner {}

impl Drop for DeviceInner {
    fn drop(&mut self) {
        // Every buffer, module, stream and event holds an Arc to this, so nothing of the
        // context is in use any more. Errors cannot be reported from drop.
        // SAFETY: balances the retain in `Device::open`.
        unsafe { (self.api.cuDevicePrimaryCtxRelease)(self.dev) };
    }
}

impl DeviceInner {
    pub(crate) fn make_current(&self) -> Result<(), CudaError> {
        self.api.make_current(self.ctx)
    }
}

/// Where a device address lives ([`Device::pointer_info`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PointerInfo {
    /// The device the memory is on.
    pub ordinal: usize,
    /// The start of the allocation holding the address.
    pub start: u64,
    /// The allocation's size in bytes.
    pub size: usize,
}

impl PointerInfo {
    /// Whether `[ptr, ptr + len)` lies inside this allocation.
    pub fn holds(&self, ptr: u64, len: usize) -> bool {
        ptr >= self.start && (ptr - self.start).checked_add(len as u64).is_some_and(|end| end <= self.size as u64)
    }
}

/// One GPU, opened through its primary context (the one the CUDA runtime also uses, so
/// Trident interoperates with other CUDA code in the same process). Cheap to clone; all
/// clones share the context, which is released when the last object using it is dropped.
#[derive(Clone)]
pub struct Device {
    pub(crate) inner: Arc<DeviceInner>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Device({}: {})", self.inner.info.ordinal, self.inner.info.name)
    }
}

impl Device {
    /// Whether a CUDA driver loads and reports at least one device. Never panics; costs a
    /// library load on first call only.
    pub fn available() -> bool {
        matches!(Device::count(), Ok(n) if n > 0)
    }

    /// How many devices the driver reports.
    pub fn count() -> Result<usize, CudaError> {
        let api = match api() {
            Ok(api) => api,
            Err(CudaError::NoDevice { .. }) => return Ok(0),
            Err(e) => return Err(e),
        };
        let mut n: c_int = 0;
        // SAFETY: out-pointer to a local.
        api.check(unsafe { (api.cuDeviceGetCount)(&mut n) }, || "cuDeviceGetCount".into())?;
        Ok(n.max(0) as usize)
    }

    /// Opens device `ordinal`: loads the driver if needed, retains the primary context and
    /// reads the device's properties.
    pub fn open(ordinal: usize) -> Result<Device, CudaError> {
        let api = api().map_err(|e| match e {
            CudaError::NoDevice { .. } => CudaError::NoDevice { ordinal, count: 0 },
            e => e,
        })?;
        let count = Device::count()?;
        if ordinal >= count {
            return Err(CudaError::NoDevice { ordinal, count });
        }
        let mut dev: cu::CUdevice = 0;
        // SAFETY: out-pointer to a local; ordinal < count fits in c_int.
        api.check(unsafe { (api.cuDeviceGet)(&mut dev, ordinal as c_int) }, || format!("cuDeviceGet({ordinal})"))?;
        let mut ctx: cu::CUcontext = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        let rc = unsafe { (api.cuDevicePrimaryCtxRetain)(&mut ctx, dev) };
        api.check(rc, || format!("cuDevicePrimaryCtxRetain(device {ordinal})"))?;
        // From here on the Drop of `inner` releases the context, whatever fails next.
        let mut inner = DeviceInner { api, dev, ctx, info: placeholder_info(ordinal) };
        inner.make_current()?;
        inner.info = read_info(api, dev, ordinal)?;
        Ok(Device { inner: Arc::new(inner) })
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    pub fn ordinal(&self) -> usize {
        self.inner.info.ordinal
    }

    /// Waits for all work on the device (every stream) to finish.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.inner.make_current()?;
        // SAFETY: no arguments; the context is current.
        let rc = unsafe { (self.inner.api.cuCtxSynchronize)() };
        if rc == CUDA_SUCCESS {
            Ok(())
        } else {
            Err(CudaError::Async {
                call: "cuCtxSynchronize".into(),
                last_launch: None,
                driver: self.inner.api.error(rc),
            })
        }
    }

    /// `(free, total)` device memory in bytes.
    pub fn memory_info(&self) -> Result<(usize, usize), CudaError> {
        self.inner.make_current()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: out-pointers to locals; the context is current.
        let rc = unsafe { (self.inner.api.cuMemGetInfo)(&mut free, &mut total) };
        self.inner.api.check(rc, || "cuMemGetInfo".into())?;
        Ok((free, total))
    }

    /// The legacy default stream (stream 0), which synchronises with every blocking stream.
    pub fn default_stream(&self) -> Stream {
        Stream::null(self)
    }

    /// The raw `CUcontext` (the device's primary context), for interoperating with other
    /// CUDA code. Valid while this `Device` (or any object made from it) lives.
    pub fn raw_context(&self) -> *mut std::ffi::c_void {
        self.inner.ctx as *mut std::ffi::c_void
    }

    /// What the driver knows of device address `ptr` (`cuPointerGetAttribute`): the device it
    /// lives on and the allocation holding it. `None` when the driver does not know the
    /// address as device memory (a host pointer, a freed or made-up address): a kernel given
    /// it would fault.
    pub fn pointer_info(&self, ptr: u64) -> Result<Option<PointerInfo>, CudaError> {
        use cu::CUpointer_attribute as P;
        self.inner.make_current()?;
        let api = self.inner.api;
        let mut start: u64 = 0;
        // SAFETY: RANGE_START_ADDR writes one CUdeviceptr (u64) through the out-pointer.
        let rc = unsafe {
            (api.cuPointerGetAttribute)(
                &mut start as *mut u64 as *mut std::ffi::c_void,
                P::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                ptr,
            )
        };
        if rc != CUDA_SUCCESS {
            // CUDA_ERROR_INVALID_VALUE: not an address the driver allocated; anything else is
            // a real failure.
            const CUDA_ERROR_INVALID_VALUE: u32 = 1;
            return match rc {
                CUDA_ERROR_INVALID_VALUE => Ok(None),
                _ => Err(CudaError::Driver { call: "cuPointerGetAttribute".into(), driver: api.error(rc) }),
            };
        }
        let mut size: usize = 0;
        let mut ordinal: c_int = -1;
        // SAFETY: RANGE_SIZE writes a size_t, DEVICE_ORDINAL an int, through the out-pointers.
        unsafe {
            let rc = (api.cuPointerGetAttribute)(
                &mut size as *mut usize as *mut std::ffi::c_void,
                P::CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                ptr,
            );
            api.check(rc, || "cuPointerGetAttribute(RANGE_SIZE)".into())?;
            let rc = (api.cuPointerGetAttribute)(
                &mut ordinal as *mut c_int as *mut std::ffi::c_void,
                P::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                ptr,
            );
            api.check(rc, || "cuPointerGetAttribute(DEVICE_ORDINAL)".into())?;
        }
        Ok(Some(PointerInfo { ordinal: ordinal.max(0) as usize, start, size }))
    }

    /// Whether two handles refer to the same context (buffers can only be passed to
    /// kernels of the device they were allocated on).
    pub fn same_as(&self, other: &Device) -> bool {
        self.inner.ctx == other.inner.ctx
    }
}

fn placeholder_info(ordinal: usize) -> DeviceInfo {
    DeviceInfo {
        ordinal,
        name: String::new(),
        compute_capability: (0, 0),
        sm_count: 0,
        warp_size: 0,
        max_threads_per_block: 0,
        max_threads_per_sm: 0,
        max_block_dim: [0; 3],
        max_grid_dim: [0; 3],
        shared_mem_per_block: 0,
        shared_mem_per_sm: 0,
        shared_mem_per_block_optin: 0,
        registers_per_block: 0,
        registers_per_sm: 0,
        clock_khz: None,
        memory_clock_khz: None,
        memory_bus_width_bits: None,
        l2_cache_bytes: 0,
        total_memory_bytes: 0,
        driver_version: 0,
        driver_path: String::new(),
    }
}

fn read_info(api: &'static Api, dev: cu::CUdevice, ordinal: usize) -> Result<DeviceInfo, CudaError> {
    let try_attr = |a: A| -> Option<u32> {
        let mut v: c_int = 0;
        // SAFETY: out-pointer to a local.
        let rc = unsafe { (api.cuDeviceGetAttribute)(&mut v, a, dev) };
        (rc == CUDA_SUCCESS && v > 0).then_some(v as u32)
    };
    let attr = |a: A| -> Result<u32, CudaError> {
        let mut v: c_int = 0;
        // SAFETY: out-pointer to a local.
        let rc = unsafe { (api.cuDeviceGetAttribute)(&mut v, a, dev) };
        api.check(rc, || format!("cuDeviceGetAttribute({a:?})"))?;
        Ok(v.max(0) as u32)
    };

    let mut name_buf = [0 as c_char; 256];
    // SAFETY: the buffer holds 256 chars and the driver writes a NUL-terminated name within len.
    let rc = unsafe { (api.cuDeviceGetName)(name_buf.as_mut_ptr(), name_buf.len() as c_int, dev) };
    api.check(rc, || "cuDeviceGetName".into())?;
    name_buf[255] = 0;
    // SAFETY: NUL-terminated above.
    let name = unsafe { CStr::from_ptr(name_buf.as_ptr()) }.to_string_lossy().into_owned();

    let mut total = 0usize;
    // SAFETY: out-pointer to a local.
    api.check(unsafe { (api.cuDeviceTotalMem)(&mut total, dev) }, || "cuDeviceTotalMem".into())?;
    let mut version: c_int = 0;
    // SAFETY: out-pointer to a local.
    api.check(unsafe { (api.cuDriverGetVersion)(&mut version) }, || "cuDriverGetVersion".into())?;

    Ok(DeviceInfo {
        ordinal,
        name,
        compute_capability: (
            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ),
        sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        warp_size: attr(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
        max_threads_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        max_threads_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
        max_block_dim: [
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
        ],
        max_grid_dim: [
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
        ],
        shared_mem_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
        shared_mem_per_block_optin: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
        shared_mem_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
        registers_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
        registers_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
        clock_khz: try_attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
        memory_clock_khz: try_attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
        memory_bus_width_bits: try_attr(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
        l2_cache_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
        total_memory_bytes: total,
        driver_version: version.max(0) as u32,
        driver_path: api.path.clone(),
    })
}
