//! Modules (loaded cubins and JIT-compiled PTX) and the kernels in them.

use std::ffi::{c_int, c_uint, c_void, CString};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::sys as cu;
use cudarc::driver::sys::CUfunction_attribute as FA;

use crate::api::{CUDA_ERROR_INVALID_VALUE, CUDA_SUCCESS};
use crate::device::{Device, DeviceInner};
use crate::error::{CudaError, ImageKind};
use crate::image::{check_binary_image, ptx_to_c_string};
use crate::params::ParamSlot;

/// Bytes reserved for each of the JIT's info and error logs.
const JIT_LOG_BYTES: usize = 64 * 1024;
/// No kernel has more parameters than this (the parameter space is at most 32 KiB).
const MAX_PARAMS: usize = 32 * 1024;

pub(crate) struct ModuleInner {
    pub(crate) dev: Arc<DeviceInner>,
    raw: cu::CUmodule,
    kind: ImageKind,
    info_log: String,
}

// SAFETY: the module handle is only used through the thread-safe driver, with its context
// made current first.
unsafe impl Send for ModuleInner {}
unsafe impl Sync for ModuleInner {}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        if self.dev.make_current().is_ok() {
            // SAFETY: loaded in this context, unloaded once; every Kernel holds an Arc to us.
            unsafe { (self.dev.api.cuModuleUnload)(self.raw) };
        }
    }
}

/// A loaded module. Kernels taken from it keep it loaded.
#[derive(Clone)]
pub struct Module {
    inner: Arc<ModuleInner>,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Module({} on device {})", self.inner.kind, self.inner.dev.info.ordinal)
    }
}

fn log_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

impl Module {
    /// Loads a cubin (or fatbin) built for this device.
    pub fn load_cubin(device: &Device, image: &[u8]) -> Result<Module, CudaError> {
        check_binary_image(image).map_err(|reason| CudaError::InvalidImage { kind: ImageKind::Cubin, reason })?;
        Module::load(device, image.as_ptr() as *const c_void, ImageKind::Cubin)
    }

    /// Compiles PTX text with the driver's JIT (for the device's architecture) and loads it.
    /// On failure the error carries the JIT's log (ptxas messages with PTX line numbers).
    pub fn load_ptx(device: &Device, ptx: &str) -> Result<Module, CudaError> {
        let text = ptx_to_c_string(ptx).map_err(|reason| CudaError::InvalidImage { kind: ImageKind::Ptx, reason })?;
        Module::load(device, text.as_ptr() as *const c_void, ImageKind::Ptx)
    }

    fn load(device: &Device, image: *const c_void, kind: ImageKind) -> Result<Module, CudaError> {
        let dev = device.inner.clone();
        dev.make_current()?;
        let mut info = vec![0u8; JIT_LOG_BYTES];
        let mut error = vec![0u8; JIT_LOG_BYTES];
        use cu::CUjit_option as J;
        let mut opts = [
            J::CU_JIT_INFO_LOG_BUFFER,
            J::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            J::CU_JIT_ERROR_LOG_BUFFER,
            J::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            J::CU_JIT_LOG_VERBOSE,
        ];
        // Sizes and flags travel as integers cast to pointers, as the driver API specifies.
        let mut vals: [*mut c_void; 5] = [
            info.as_mut_ptr() as *mut c_void,
            std::ptr::without_provenance_mut(JIT_LOG_BYTES - 1),
            error.as_mut_ptr() as *mut c_void,
            std::ptr::without_provenance_mut(JIT_LOG_BYTES - 1),
            std::ptr::without_provenance_mut(1),
        ];
        let mut raw: cu::CUmodule = std::ptr::null_mut();
        // SAFETY: `image` is a checked binary or a NUL-terminated string that outlives the
        // call; the log buffers are JIT_LOG_BYTES long and we pass one less, so they stay
        // NUL-terminated; the option arrays have matching lengths.
        let rc = unsafe {
            (dev.api.cuModuleLoadDataEx)(&mut raw, image, opts.len() as c_uint, opts.as_mut_ptr(), vals.as_mut_ptr())
        };
        let info_log = log_text(&info);
        if rc != CUDA_SUCCESS {
            return Err(CudaError::Jit { kind, driver: dev.api.error(rc), log: log_text(&error), info_log });
        }
        Ok(Module { inner: Arc::new(ModuleInner { dev, raw, kind, info_log }) })
    }

    /// What the JIT printed while loading (with PTX: ptxas's register and memory usage).
    pub fn jit_log(&self) -> &str {
        &self.inner.info_log
    }

    pub fn kind(&self) -> ImageKind {
        self.inner.kind
    }

    /// The kernel whose `.entry` is `name`, with its attributes and (driver 12.4+) its
    /// parameter layout.
    pub fn kernel(&self, name: &str) -> Result<Kernel, CudaError> {
        let m = &self.inner;
        let api = m.dev.api;
        let cname = CString::new(name)
            .map_err(|_| CudaError::InvalidArgument(format!("kernel name {name:?} contains a NUL byte")))?;
        m.dev.make_current()?;
        let mut func: cu::CUfunction = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; module is loaded; name is NUL-terminated.
        let rc = unsafe { (api.cuModuleGetFunction)(&mut func, m.raw, cname.as_ptr()) };
        if rc != CUDA_SUCCESS {
            return Err(CudaError::KernelNotFound { name: name.to_string(), driver: api.error(rc) });
        }
        let attr = |a: FA| -> Result<u32, CudaError> {
            let mut v: c_int = 0;
            // SAFETY: out-pointer to a local; func is a live function handle.
            let rc = unsafe { (api.cuFuncGetAttribute)(&mut v, a, func) };
            api.check(rc, || format!("cuFuncGetAttribute({a:?}) of kernel `{name}`"))?;
            Ok(v.max(0) as u32)
        };
        let attributes = KernelAttributes {
            max_threads_per_block: attr(FA::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            num_regs: attr(FA::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            static_shared_bytes: attr(FA::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            local_bytes: attr(FA::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            const_bytes: attr(FA::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)?,
            ptx_version: attr(FA::CU_FUNC_ATTRIBUTE_PTX_VERSION)?,
            binary_version: attr(FA::CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
        };
        let max_dynamic = attr(FA::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?;
        let param_slots = param_info(api.cuFuncGetParamInfo, func);
        Ok(Kernel {
            inner: Arc::new(KernelInner {
                module: self.inner.clone(),
                func,
                name: name.into(),
                attributes,
                param_slots,
                max_dynamic_shared: AtomicU32::new(max_dynamic),
                limit_lock: Mutex::new(()),
            }),
        })
    }
}

/// The kernel's parameter offsets and sizes, if the driver can tell (12.4+).
fn param_info(
    f: Option<unsafe extern "C" fn(cu::CUfunction, usize, *mut usize, *mut usize) -> u32>,
    func: cu::CUfunction,
) -> Option<Vec<ParamSlot>> {
    let f = f?;
    let mut slots = Vec::new();
    for i in 0..MAX_PARAMS {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: out-pointers to locals; func is live.
        match unsafe { f(func, i, &mut offset, &mut size) } {
            CUDA_SUCCESS => slots.push(ParamSlot { offset, size }),
            // Past the last parameter.
            CUDA_ERROR_INVALID_VALUE => return Some(slots),
            _ => return None,
        }
    }
    None
}

/// Static facts about a compiled kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelAttributes {
    /// The most threads a block of this kernel may have (limited by registers, `.maxntid`).
    pub max_threads_per_block: u32,
    pub num_regs: u32,
    pub static_shared_bytes: u32,
    /// Local memory (spills, stack) per thread.
    pub local_bytes: u32,
    pub const_bytes: u32,
    /// PTX ISA version the kernel was compiled from, times 10 (e.g. 80 for 8.0).
    pub ptx_version: u32,
    /// Architecture of the machine code, times 10 (e.g. 90 for sm_90).
    pub binary_version: u32,
}

pub(crate) struct KernelInner {
    pub(crate) module: Arc<ModuleInner>,
    pub(crate) func: cu::CUfunction,
    pub(crate) name: Arc<str>,
    pub(crate) attributes: KernelAttributes,
    pub(crate) param_slots: Option<Vec<ParamSlot>>,
    /// The kernel's current dynamic shared-memory limit (raised on demand).
    pub(crate) max_dynamic_shared: AtomicU32,
    /// Serialises changes of that limit.
    limit_lock: Mutex<()>,
}

// SAFETY: the function handle is only used through the thread-safe driver.
unsafe impl Send for KernelInner {}
unsafe impl Sync for KernelInner {}

/// A kernel handle. Cheap to clone; keeps its module loaded.
#[derive(Clone)]
pub struct Kernel {
    pub(crate) inner: Arc<KernelInner>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernel(`{}`)", self.inner.name)
    }
}

impl Kernel {
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The raw `CUfunction`, for interoperating with other CUDA code (occupancy queries,
    /// say). Valid while this `Kernel` (or a clone) lives.
    pub fn as_raw(&self) -> *mut c_void {
        self.inner.func as *mut c_void
    }

    pub fn attributes(&self) -> &KernelAttributes {
        &self.inner.attributes
    }

    /// The kernel's parameters as the driver reports them (offset and size of each), or
    /// `None` when the driver is older than 12.4.
    pub fn param_layout(&self) -> Option<&[ParamSlot]> {
        self.inner.param_slots.as_deref()
    }

    pub fn device(&self) -> Device {
        Device { inner: self.inner.module.dev.clone() }
    }

    pub(crate) fn dev(&self) -> &Arc<DeviceInner> {
        &self.inner.module.dev
    }

    /// The dynamic shared memory a launch may currently ask for.
    pub fn max_dynamic_shared_bytes(&self) -> u32 {
        self.inner.max_dynamic_shared.load(Ordering::Relaxed)
    }

    /// Sets the kernel's dynamic shared-memory limit (`cuFuncSetAttribute` with
    /// `MAX_DYNAMIC_SHARED_SIZE_BYTES`). Launches call this themselves when they need more
    /// than the current limit, so callers rarely need to.
    pub fn set_max_dynamic_shared_bytes(&self, bytes: u32) -> Result<(), CudaError> {
        let _serial = self.inner.limit_lock.lock().unwrap_or_else(|p| p.into_inner());
        self.set_limit(bytes)
    }

    /// Raises the dynamic shared-memory limit to at least `bytes`, never lowering it: two
    /// threads preparing launches of different sizes must not undo each other's raise.
    pub(crate) fn ensure_dynamic_shared_bytes(&self, bytes: u32) -> Result<(), CudaError> {
        if bytes <= self.max_dynamic_shared_bytes() {
            return Ok(());
        }
        let _serial = self.inner.limit_lock.lock().unwrap_or_else(|p| p.into_inner());
        if bytes <= self.max_dynamic_shared_bytes() {
            return Ok(());
        }
        self.set_limit(bytes)
    }

    fn set_limit(&self, bytes: u32) -> Result<(), CudaError> {
        let dev = self.dev();
        dev.make_current()?;
        let value = c_int::try_from(bytes)
            .map_err(|_| CudaError::InvalidArgument(format!("{bytes} bytes of dynamic shared memory")))?;
        // SAFETY: func is live; the attribute takes an int byte count.
        let rc = unsafe {
            (dev.api.cuFuncSetAttribute)(self.inner.func, FA::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, value)
        };
        dev.api.check(rc, || {
            format!("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES = {bytes}) of kernel `{}`", self.inner.name)
        })?;
        self.inner.max_dynamic_shared.store(bytes, Ordering::Relaxed);
        Ok(())
    }
}
