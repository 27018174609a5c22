//! The driver's entry points, resolved at run time from `libcuda`.
//!
//! We take the CUDA types and enums from `cudarc`'s `sys` layer and its list of library
//! names, but resolve the functions ourselves into one table, for two reasons:
//!
//! * cudarc's per-function loaders panic when the library or a symbol is missing; we want
//!   [`CudaError::NoDriver`] instead, decided once, before any call is made.
//! * cudarc declares every function as returning `CUresult`, a Rust enum. A driver newer
//!   than the bindings can return a code the enum does not list (CUDA 13.0 added one,
//!   13.4 six more), which would be undefined behaviour. Our table declares the result as
//!   a plain `u32`.
//!
//! Each symbol is looked up by its versioned name (`cuMemAlloc_v2`, ...), which fixes its
//! ABI independently of the driver's version.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::OnceLock;

use cudarc::driver::sys as cu;
use libloading::Library;

use crate::error::{CudaError, DriverError};

/// A raw `CUresult`.
pub(crate) type CuResult = u32;
pub(crate) const CUDA_SUCCESS: CuResult = 0;
pub(crate) const CUDA_ERROR_INVALID_VALUE: CuResult = 1;
pub(crate) const CUDA_ERROR_NO_DEVICE: CuResult = 100;

/// `cuTensorMapEncodeTiled(map, dataType, rank, globalAddress, globalDim, globalStrides,
/// boxDim, elementStrides, interleave, swizzle, l2Promotion, oobFill)`; the enums are C
/// `int`-sized.
pub(crate) type TensorMapEncodeTiled = unsafe extern "C" fn(
    *mut c_void,
    c_uint,
    c_uint,
    *mut c_void,
    *const u64,
    *const u64,
    *const u32,
    *const u32,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
) -> CuResult;

/// Environment variable naming the driver library to load instead of the default search.
pub const DRIVER_PATH_ENV: &str = "TRIDENT_CUDA_DRIVER";

macro_rules! driver_table {
    ($( $field:ident = $sym:literal : fn($($arg:ty),* $(,)?); )*) => {
        /// Function pointers into the loaded driver. Valid for as long as `_lib` lives, which
        /// is forever: the table sits in a process-wide `OnceLock` and is never dropped.
        #[allow(non_snake_case)]
        pub(crate) struct Api {
            $( pub $field: unsafe extern "C" fn($($arg),*) -> CuResult, )*
            /// `cuFuncGetParamInfo` (driver 12.4+); without it parameter lists are not checked.
            pub cuFuncGetParamInfo: Option<unsafe extern "C" fn(cu::CUfunction, usize, *mut usize, *mut usize) -> CuResult>,
            /// `cuTensorMapEncodeTiled` (driver 12.0+); without it TMA kernels cannot be launched.
            pub cuTensorMapEncodeTiled: Option<TensorMapEncodeTiled>,
            /// Where the library was found.
            pub path: String,
            _lib: Library,
        }

        /// Resolves every required symbol in `lib`; names the first one missing.
        #[allow(non_snake_case)]
        fn resolve(lib: Library, path: String) -> Result<Api, String> {
            // SAFETY: each symbol is read with the signature the CUDA headers give it (for the
            // versioned name used), except that results are widened to a plain u32.
            unsafe {
                $(
                    let $field = *lib
                        .get::<unsafe extern "C" fn($($arg),*) -> CuResult>(concat!($sym, "\0").as_bytes())
                        .map_err(|e| format!("{path} has no symbol {}: {e}", $sym))?;
                )*
                let cuFuncGetParamInfo = lib
                    .get::<unsafe extern "C" fn(cu::CUfunction, usize, *mut usize, *mut usize) -> CuResult>(
                        b"cuFuncGetParamInfo\0",
                    )
                    .ok()
                    .map(|s| *s);
                let cuTensorMapEncodeTiled =
                    lib.get::<TensorMapEncodeTiled>(b"cuTensorMapEncodeTiled\0").ok().map(|s| *s);
                Ok(Api { $( $field, )* cuFuncGetParamInfo, cuTensorMapEncodeTiled, path, _lib: lib })
            }
        }
    };
}

driver_table! {
    cuInit = "cuInit": fn(c_uint);
    cuDriverGetVersion = "cuDriverGetVersion": fn(*mut c_int);
    cuGetErrorName = "cuGetErrorName": fn(c_uint, *mut *const c_char);
    cuGetErrorString = "cuGetErrorString": fn(c_uint, *mut *const c_char);
    cuDeviceGetCount = "cuDeviceGetCount": fn(*mut c_int);
    cuDeviceGet = "cuDeviceGet": fn(*mut cu::CUdevice, c_int);
    cuDeviceGetName = "cuDeviceGetName": fn(*mut c_char, c_int, cu::CUdevice);
    cuDeviceGetAttribute = "cuDeviceGetAttribute": fn(*mut c_int, cu::CUdevice_attribute, cu::CUdevice);
    cuDeviceTotalMem = "cuDeviceTotalMem_v2": fn(*mut usize, cu::CUdevice);
    cuDevicePrimaryCtxRetain = "cuDevicePrimaryCtxRetain": fn(*mut cu::CUcontext, cu::CUdevice);
    cuDevicePrimaryCtxRelease = "cuDevicePrimaryCtxRelease_v2": fn(cu::CUdevice);
    cuCtxGetCurrent = "cuCtxGetCurrent": fn(*mut cu::CUcontext);
    cuCtxSetCurrent = "cuCtxSetCurrent": fn(cu::CUcontext);
    cuCtxSynchronize = "cuCtxSynchronize": fn();
    cuMemGetInfo = "cuMemGetInfo_v2": fn(*mut usize, *mut usize);
    cuMemAlloc = "cuMemAlloc_v2": fn(*mut cu::CUdeviceptr, usize);
    cuMemFree = "cuMemFree_v2": fn(cu::CUdeviceptr);
    cuMemcpyHtoD = "cuMemcpyHtoD_v2": fn(cu::CUdeviceptr, *const c_void, usize);
    cuMemcpyDtoH = "cuMemcpyDtoH_v2": fn(*mut c_void, cu::CUdeviceptr, usize);
    cuMemcpyDtoD = "cuMemcpyDtoD_v2": fn(cu::CUdeviceptr, cu::CUdeviceptr, usize);
    cuMemsetD8 = "cuMemsetD8_v2": fn(cu::CUdeviceptr, u8, usize);
    cuMemsetD32 = "cuMemsetD32_v2": fn(cu::CUdeviceptr, c_uint, usize);
    cuModuleLoadDataEx = "cuModuleLoadDataEx": fn(*mut cu::CUmodule, *const c_void, c_uint, *mut cu::CUjit_option, *mut *mut c_void);
    cuModuleUnload = "cuModuleUnload": fn(cu::CUmodule);
    cuModuleGetFunction = "cuModuleGetFunction": fn(*mut cu::CUfunction, cu::CUmodule, *const c_char);
    cuFuncGetAttribute = "cuFuncGetAttribute": fn(*mut c_int, cu::CUfunction_attribute, cu::CUfunction);
    cuFuncSetAttribute = "cuFuncSetAttribute": fn(cu::CUfunction, cu::CUfunction_attribute, c_int);
    cuLaunchKernel = "cuLaunchKernel": fn(
        cu::CUfunction, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint,
        cu::CUstream, *mut *mut c_void, *mut *mut c_void,
    );
    cuStreamCreate = "cuStreamCreate": fn(*mut cu::CUstream, c_uint);
    cuStreamDestroy = "cuStreamDestroy_v2": fn(cu::CUstream);
    cuStreamSynchronize = "cuStreamSynchronize": fn(cu::CUstream);
    cuEventCreate = "cuEventCreate": fn(*mut cu::CUevent, c_uint);
    cuEventDestroy = "cuEventDestroy_v2": fn(cu::CUevent);
    cuEventRecord = "cuEventRecord": fn(cu::CUevent, cu::CUstream);
    cuEventSynchronize = "cuEventSynchronize": fn(cu::CUevent);
    cuEventElapsedTime = "cuEventElapsedTime": fn(*mut f32, cu::CUevent, cu::CUevent);
    cuPointerGetAttribute = "cuPointerGetAttribute": fn(*mut c_void, cu::CUpointer_attribute, cu::CUdeviceptr);
}

// SAFETY: the table holds plain function pointers into a library that is never unloaded;
// the CUDA driver API is thread-safe.
unsafe impl Send for Api {}
unsafe impl Sync for Api {}

/// The library names tried, in order: an explicit path from `TRIDENT_CUDA_DRIVER` if set,
/// else the run-time names first (`libcuda.so.1` is what the driver installs; `libcuda.so`
/// often only exists with a toolkit), then cudarc's full list.
pub(crate) fn candidates() -> Vec<String> {
    if let Some(p) = std::env::var_os(DRIVER_PATH_ENV) {
        return vec![p.to_string_lossy().into_owned()];
    }
    let mut v: Vec<String> = Vec::new();
    if cfg!(windows) {
        v.push("nvcuda.dll".to_string());
    } else {
        v.push("libcuda.so.1".to_string());
        v.push("libcuda.so".to_string());
    }
    for lib in ["cuda", "nvcuda"] {
        for c in cudarc::get_lib_name_candidates(lib) {
            if !v.contains(&c) {
                v.push(c);
            }
        }
    }
    v
}

/// Opens the first library of `names` that loads, resolves the table and runs `cuInit`.
/// Never panics: every failure is a [`CudaError::NoDriver`] (or [`CudaError::NoDevice`] when
/// the driver loads but reports no device).
pub(crate) fn load_from(names: &[String]) -> Result<Api, CudaError> {
    let mut first_error = None;
    let mut found = None;
    for name in names {
        // SAFETY: loading libcuda runs its initialisers, which is what using CUDA means.
        match unsafe { Library::new(name) } {
            Ok(lib) => {
                found = Some((lib, name.clone()));
                break;
            }
            Err(e) => {
                first_error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    let Some((lib, path)) = found else {
        return Err(CudaError::NoDriver {
            reason: format!(
                "the CUDA driver library was not found (tried {}; set {DRIVER_PATH_ENV} to its path): {}",
                names.join(", "),
                first_error.unwrap_or_else(|| "no names to try".to_string())
            ),
        });
    };
    let api = resolve(lib, path).map_err(|reason| CudaError::NoDriver { reason })?;
    // SAFETY: cuInit takes flags that must be 0.
    let rc = unsafe { (api.cuInit)(0) };
    if rc == CUDA_ERROR_NO_DEVICE {
        return Err(CudaError::NoDevice { ordinal: 0, count: 0 });
    }
    if rc != CUDA_SUCCESS {
        let e = api.error(rc);
        return Err(CudaError::NoDriver { reason: format!("cuInit failed in {}: {e}", api.path) });
    }
    Ok(api)
}

static API: OnceLock<Result<Api, CudaError>> = OnceLock::new();

/// The process-wide driver table, loaded on first use (the outcome, good or bad, is kept).
pub(crate) fn api() -> Result<&'static Api, CudaError> {
    API.get_or_init(|| load_from(&candidates())).as_ref().map_err(Clone::clone)
}

impl Api {
    /// The driver's name and description of `code`.
    pub(crate) fn error(&self, code: CuResult) -> DriverError {
        let text = |f: unsafe extern "C" fn(c_uint, *mut *const c_char) -> CuResult| {
            let mut p: *const c_char = std::ptr::null();
            // SAFETY: on success the driver stores a pointer to a static NUL-terminated string.
            let rc = unsafe { f(code, &mut p) };
            if rc == CUDA_SUCCESS && !p.is_null() {
                // SAFETY: see above.
                Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
            } else {
                None
            }
        };
        DriverError {
            code,
            name: text(self.cuGetErrorName).unwrap_or_else(|| format!("CUDA_ERROR_{code}")),
            message: text(self.cuGetErrorString).unwrap_or_else(|| "unrecognised error code".to_string()),
        }
    }

    /// `Ok` for `CUDA_SUCCESS`, else a [`CudaError::Driver`] naming `call`.
    pub(crate) fn check(&self, rc: CuResult, call: impl FnOnce() -> String) -> Result<(), CudaError> {
        if rc == CUDA_SUCCESS {
            Ok(())
        } else {
            Err(CudaError::Driver { call: call(), driver: self.error(rc) })
        }
    }

    /// Makes `ctx` current on this thread unless it already is. Every entry point that
    /// touches a context calls this first, so objects can be used from any thread.
    pub(crate) fn make_current(&self, ctx: cu::CUcontext) -> Result<(), CudaError> {
        let mut cur: cu::CUcontext = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        let rc = unsafe { (self.cuCtxGetCurrent)(&mut cur) };
        if rc == CUDA_SUCCESS && cur == ctx {
            return Ok(());
        }
        // SAFETY: ctx is a retained primary context (kept alive by the caller's Device).
        let rc = unsafe { (self.cuCtxSetCurrent)(ctx) };
        self.check(rc, || "cuCtxSetCurrent".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_library_is_no_driver() {
        let e = load_from(&["/nonexistent/trident/libcuda.so.1".to_string()]).err().expect("must fail");
        match &e {
            CudaError::NoDriver { reason } => assert!(reason.contains("/nonexistent/trident/libcuda.so.1"), "{reason}"),
            other => panic!("expected NoDriver, got {other:?}"),
        }
    }

    #[test]
    fn library_without_driver_symbols_is_no_driver() {
        // libc loads everywhere we run tests but exports no cu* symbols.
        let e = load_from(&["libc.so.6".to_string()]).err().expect("must fail");
        match &e {
            CudaError::NoDriver { reason } => assert!(reason.contains("no symbol cuInit"), "{reason}"),
            other => panic!("expected NoDriver, got {other:?}"),
        }
    }

    #[test]
    fn candidates_start_with_runtime_names() {
        if std::env::var_os(DRIVER_PATH_ENV).is_none() {
            let c = candidates();
            assert_eq!(c[0], "libcuda.so.1");
            assert!(c.iter().filter(|n| *n == "libcuda.so").count() == 1, "{c:?}");
        }
    }
}
