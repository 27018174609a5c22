//! # trident-emu-driver: an emulated CUDA driver
//!
//! A shared library with the CUDA driver API entry points trident-cuda resolves
//! (`crates/cuda/src/api.rs`), implemented on Trident's emulators: PTX images run on the PTX
//! emulator (trident-emu), cubins on the SASS emulator (trident-sass-emu). Point
//! `TRIDENT_CUDA_DRIVER` at `libtrident_emu_driver.so` and `--backend cuda` runs its whole host
//! path — device discovery, module loading, parameter packing, tensor maps, launches, events,
//! copies, errors — without a GPU. See the README for what this does and does not prove.
//!
//! * One device, `Trident emulated sm_90a` (or the `TRIDENT_EMU_TARGET` architecture), with
//!   its primary context current per thread as in CUDA (calls without it fail with
//!   `CUDA_ERROR_INVALID_CONTEXT`).
//! * Work runs when it is issued (every stream is in order with every other); a kernel's
//!   fault is reported by the next call that waits for the device and then by every call, as
//!   CUDA's sticky errors, until the primary context is released by all its users. The
//!   emulator's description of the fault is printed on stderr.
//! * Events read a modelled clock: the sum of the modelled durations of the kernels run so
//!   far (the PTX emulator's timing model, the SASS emulator's cycle estimate); copies and
//!   memsets take no time. Timings are deterministic, and not a GPU's.
//! * `cuTensorMapEncodeTiled` writes the PTX emulator's own map encoding (`TEM1`, see
//!   `trident_emu::tensormap`), not NVIDIA's.
//!
//! No entry point panics across the C ABI: each catches unwinding and returns
//! `CUDA_ERROR_UNKNOWN`.

// The entry points have the driver API's names.
#![allow(non_snake_case)]

pub mod codes;
mod load;
mod run;
mod state;

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use cudarc::driver::sys as cu;

use codes::*;
use state::{driver, Context, Driver, Event, Function, Target, CONTEXT_HANDLE, CURRENT};

pub use state::{DEFAULT_DYNAMIC_SHARED, TOTAL_MEMORY};

/// The CUDA version this driver reports (13.0, the toolkit Trident's tools come from).
pub const DRIVER_VERSION: c_int = 13000;

type R = Result<(), CuResult>;

/// Runs an entry point's body, catching any panic (reported on stderr as an internal error).
fn guard(name: &str, f: impl FnOnce() -> R) -> CuResult {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => SUCCESS,
        Ok(Err(code)) => code,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            eprintln!("trident-emu-driver: internal error in {name}: {msg}");
            UNKNOWN
        }
    }
}

/// Writes `v` through an out-pointer, refusing null.
///
/// # Safety
/// `p` is null or valid for a write of `T`.
unsafe fn put<T>(p: *mut T, v: T) -> R {
    if p.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: non-null and, by the caller's contract, writable.
    unsafe { p.write(v) };
    Ok(())
}

macro_rules! entry_points {
    ($( $(#[$doc:meta])* fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $body:block )*) => {
        $(
            $(#[$doc])*
            ///
            /// # Safety
            /// The CUDA driver API's contract for this function (pointers valid as it documents).
            #[no_mangle]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> CuResult {
                guard(stringify!($name), move || -> R { $body })
            }
        )*
    };
}

fn target_of(d: &Driver) -> Result<Target, CuResult> {
    d.target.clone().ok_or(NOT_INITIALIZED)
}

fn check_device(d: &Driver, dev: c_int) -> Result<Target, CuResult> {
    let t = target_of(d)?;
    if dev != 0 {
        return Err(INVALID_DEVICE);
    }
    Ok(t)
}

/// The device's name: says what it is.
fn device_name(t: &Target) -> String {
    format!("Trident emulated {}", t.name)
}

fn device_attribute(t: &Target, attr: c_uint) -> Option<i64> {
    use cu::CUdevice_attribute_enum as A;
    let m = t.machine();
    let hopper = t.cc.0 >= 9;
    let a = |x: A| x as c_uint;
    Some(match attr {
        x if x == a(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) => t.cc.0 as i64,
        x if x == a(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR) => t.cc.1 as i64,
        x if x == a(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) => m.sms as i64,
        x if x == a(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE) => 32,
        x if x == a(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK) => 1024,
        x if x == a(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR) => 2048,
        x if x == a(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X) => 1024,
        x if x == a(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y) => 1024,
        x if x == a(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z) => 64,
        x if x == a(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X) => i32::MAX as i64,
        x if x == a(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y) => 65535,
        x if x == a(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z) => 65535,
        x if x == a(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK) => DEFAULT_DYNAMIC_SHARED as i64,
        x if x == a(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) => t.shared_optin() as i64,
        x if x == a(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR) => t.shared_optin() as i64 + 1024,
        x if x == a(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK) => 65536,
        x if x == a(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR) => 65536,
        x if x == a(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE) => (m.clock_ghz * 1e6) as i64,
        x if x == a(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE) => {
            if hopper {
                2_619_000
            } else {
                1_593_000
            }
        }
        x if x == a(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH) => 5120,
        x if x == a(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE) => {
            if hopper {
                50 << 20
            } else {
                40 << 20
            }
        }
        // Anything else is not modelled: an error, so a new query shows up in CI.
        _ => return None,
    })
}

/// Whether `s` names a usable stream: the legacy default (null or `CU_STREAM_LEGACY`), the
/// per-thread default, or one created and not destroyed.
fn check_stream(c: &Context, s: usize) -> R {
    if s <= 2 || c.streams.contains_key(&s) {
        Ok(())
    } else {
        Err(INVALID_HANDLE)
    }
}

/// Writes a JIT log into the buffer an option array names (as much as fits, NUL-terminated).
///
/// # Safety
/// The option arrays are as `cuModuleLoadDataEx` documents (`n` entries each).
unsafe fn write_log(
    n: c_uint,
    opts: *const c_uint,
    vals: *mut *mut c_void,
    buf_opt: c_uint,
    size_opt: c_uint,
    log: &str,
) {
    if n == 0 || opts.is_null() || vals.is_null() {
        return;
    }
    // SAFETY: `n` entries each (the caller's contract).
    let (opts, vals) =
        unsafe { (std::slice::from_raw_parts(opts, n as usize), std::slice::from_raw_parts_mut(vals, n as usize)) };
    let find = |o: c_uint| opts.iter().position(|&x| x == o);
    let (Some(b), Some(s)) = (find(buf_opt), find(size_opt)) else { return };
    let (buf, size) = (vals[b] as *mut u8, vals[s] as usize);
    if buf.is_null() || size == 0 {
        return;
    }
    let len = log.len().min(size - 1);
    // SAFETY: the buffer holds `size` bytes (the option's contract).
    unsafe {
        std::ptr::copy_nonoverlapping(log.as_ptr(), buf, len);
        *buf.add(len) = 0;
    }
    // The driver writes back how much of the buffer it used.
    vals[s] = std::ptr::without_provenance_mut(len);
}

/// Loads a module for `cuModuleLoadData(Ex)`.
///
/// # Safety
/// As `cuModuleLoadDataEx`.
unsafe fn module_load(
    out: *mut cu::CUmodule,
    image: *const c_void,
    n: c_uint,
    opts: *const c_uint,
    vals: *mut *mut c_void,
) -> R {
    use cu::CUjit_option_enum as J;
    let mut d = driver();
    let target = target_of(&d)?;
    d.ctx()?;
    // SAFETY: the caller's contract.
    let loaded = unsafe { load::load(image as *const u8, &target) };
    let (info, error) = (J::CU_JIT_INFO_LOG_BUFFER as c_uint, J::CU_JIT_ERROR_LOG_BUFFER as c_uint);
    let (info_size, error_size) =
        (J::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES as c_uint, J::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES as c_uint);
    match loaded {
        Ok(m) => {
            let names: Vec<&str> = m.kernels.iter().map(|k| k.name.as_str()).collect();
            let on = match m.kernels.first().map(|k| &k.code) {
                Some(load::Code::Sass(_)) => "the SASS emulator",
                _ => "the PTX emulator",
            };
            let log = format!("trident-emu-driver: loaded on {on} for {}: {}", target.name, names.join(", "));
            // SAFETY: the caller's contract.
            unsafe { write_log(n, opts, vals, info, info_size, &log) };
            let h = d.handle();
            d.ctx()?.modules.insert(h, Arc::new(m));
            // SAFETY: out-pointer.
            unsafe { put(out, h as cu::CUmodule) }
        }
        Err(e) => {
            // SAFETY: the caller's contract.
            unsafe { write_log(n, opts, vals, error, error_size, &e.log) };
            Err(e.code)
        }
    }
}

/// The function behind a handle (its module, kernel and current limit).
fn function(c: &Context, f: cu::CUfunction) -> Result<&Function, CuResult> {
    c.functions.get(&(f as usize)).ok_or(INVALID_HANDLE)
}

entry_points! {
    /// Reads `TRIDENT_EMU_TARGET` (once) and starts the driver.
    fn cuInit(flags: c_uint) {
        if flags != 0 {
            return Err(INVALID_VALUE);
        }
        let mut d = driver();
        if d.target.is_none() {
            match Target::from_env() {
                Ok(t) => d.target = Some(t),
                Err(m) => {
                    eprintln!("trident-emu-driver: {m}");
                    return Err(NO_DEVICE);
                }
            }
        }
        Ok(())
    }

    fn cuDriverGetVersion(v: *mut c_int) {
        // SAFETY: out-pointer.
        unsafe { put(v, DRIVER_VERSION) }
    }

    fn cuGetErrorName(code: c_uint, out: *mut *const c_char) {
        let Some(s) = c_name(code) else {
            // SAFETY: out-pointer; the driver stores null for a code it does not know.
            unsafe { put(out, std::ptr::null())? };
            return Err(INVALID_VALUE);
        };
        // SAFETY: out-pointer; the string is static.
        unsafe { put(out, s.as_ptr()) }
    }

    fn cuGetErrorString(code: c_uint, out: *mut *const c_char) {
        let Some(s) = c_string(code) else {
            // SAFETY: as above.
            unsafe { put(out, std::ptr::null())? };
            return Err(INVALID_VALUE);
        };
        // SAFETY: as above.
        unsafe { put(out, s.as_ptr()) }
    }

    fn cuDeviceGetCount(n: *mut c_int) {
        target_of(&driver())?;
        // SAFETY: out-pointer.
        unsafe { put(n, 1) }
    }

    fn cuDeviceGet(dev: *mut c_int, ordinal: c_int) {
        check_device(&driver(), ordinal)?;
        // SAFETY: out-pointer.
        unsafe { put(dev, 0) }
    }

    fn cuDeviceGetName(buf: *mut c_char, len: c_int, dev: c_int) {
        let t = check_device(&driver(), dev)?;
        if buf.is_null() || len <= 0 {
            return Err(INVALID_VALUE);
        }
        let name = device_name(&t);
        let n = name.len().min(len as usize - 1);
        // SAFETY: the buffer holds `len` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(name.as_ptr() as *const c_char, buf, n);
            *buf.add(n) = 0;
        }
        Ok(())
    }

    fn cuDeviceGetAttribute(v: *mut c_int, attr: c_uint, dev: c_int) {
        let t = check_device(&driver(), dev)?;
        let x = device_attribute(&t, attr).ok_or(INVALID_VALUE)?;
        // SAFETY: out-pointer.
        unsafe { put(v, x as c_int) }
    }

    fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: c_int) {
        check_device(&driver(), dev)?;
        // SAFETY: out-pointer.
        unsafe { put(bytes, TOTAL_MEMORY) }
    }

    /// The first retain creates the context (empty memory, clock at 0).
    fn cuDevicePrimaryCtxRetain(ctx: *mut cu::CUcontext, dev: c_int) {
        let mut d = driver();
        check_device(&d, dev)?;
        if ctx.is_null() {
            return Err(INVALID_VALUE);
        }
        d.retains += 1;
        if d.ctx.is_none() {
            d.ctx = Some(Context { next_address: state::FIRST_ADDRESS, ..Context::default() });
        }
        // SAFETY: out-pointer, checked above.
        unsafe { put(ctx, CONTEXT_HANDLE as cu::CUcontext) }
    }

    /// The last release destroys the context: its memory, modules, streams, events and fault.
    fn cuDevicePrimaryCtxRelease_v2(dev: c_int) {
        let mut d = driver();
        check_device(&d, dev)?;
        if d.retains == 0 {
            return Err(INVALID_CONTEXT);
        }
        d.retains -= 1;
        if d.retains == 0 {
            d.ctx = None;
        }
        Ok(())
    }

    fn cuCtxGetCurrent(ctx: *mut cu::CUcontext) {
        let d = driver();
        target_of(&d)?;
        let cur = CURRENT.with(|c| c.get());
        let cur = if d.ctx.is_some() { cur } else { 0 };
        // SAFETY: out-pointer.
        unsafe { put(ctx, cur as cu::CUcontext) }
    }

    fn cuCtxSetCurrent(ctx: cu::CUcontext) {
        let d = driver();
        target_of(&d)?;
        let h = ctx as usize;
        if h != 0 && (h != CONTEXT_HANDLE || d.ctx.is_none()) {
            return Err(INVALID_CONTEXT);
        }
        CURRENT.with(|c| c.set(h));
        Ok(())
    }

    fn cuCtxSynchronize() {
        driver().ctx_sync()?;
        Ok(())
    }

    fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) {
        let mut d = driver();
        let c = d.ctx()?;
        // SAFETY: out-pointers.
        unsafe {
            put(free, TOTAL_MEMORY - c.allocated)?;
            put(total, TOTAL_MEMORY)
        }
    }

    /// What the driver knows of an address inside one of the context's allocations: its
    /// context, memory type (device), the address itself, the device (0), the allocation's
    /// start and size. An address in no allocation (a host pointer, a freed or made-up one) is
    /// `CUDA_ERROR_INVALID_VALUE`, as on a GPU; other attributes are `CUDA_ERROR_NOT_SUPPORTED`.
    fn cuPointerGetAttribute(data: *mut c_void, attr: c_uint, ptr: u64) {
        use cu::CUpointer_attribute_enum as P;
        let d = driver();
        target_of(&d)?;
        let c = d.ctx.as_ref().ok_or(INVALID_VALUE)?;
        let (&base, bytes) = c.allocs.range(..=ptr).next_back().ok_or(INVALID_VALUE)?;
        if ptr - base >= bytes.len() as u64 {
            return Err(INVALID_VALUE);
        }
        let a = |x: P| x as c_uint;
        // SAFETY (each arm): the out-pointer holds the attribute's documented type.
        match attr {
            x if x == a(P::CU_POINTER_ATTRIBUTE_CONTEXT) => unsafe { put(data as *mut usize, CONTEXT_HANDLE) },
            x if x == a(P::CU_POINTER_ATTRIBUTE_MEMORY_TYPE) => unsafe {
                put(data as *mut c_uint, cu::CUmemorytype_enum::CU_MEMORYTYPE_DEVICE as c_uint)
            },
            x if x == a(P::CU_POINTER_ATTRIBUTE_DEVICE_POINTER) => unsafe { put(data as *mut u64, ptr) },
            x if x == a(P::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) => unsafe { put(data as *mut c_int, 0) },
            x if x == a(P::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR) => unsafe { put(data as *mut u64, base) },
            x if x == a(P::CU_POINTER_ATTRIBUTE_RANGE_SIZE) => unsafe { put(data as *mut usize, bytes.len()) },
            _ => Err(NOT_SUPPORTED),
        }
    }

    /// Zero-filled host memory at a fresh fake address (never reused), 256-byte aligned.
    fn cuMemAlloc_v2(out: *mut u64, size: usize) {
        let mut d = driver();
        let c = d.ctx()?;
        if size == 0 || out.is_null() {
            return Err(INVALID_VALUE);
        }
        if size > TOTAL_MEMORY - c.allocated {
            return Err(OUT_OF_MEMORY);
        }
        let mut data = Vec::new();
        data.try_reserve_exact(size).map_err(|_| OUT_OF_MEMORY)?;
        data.resize(size, 0u8);
        let addr = c.next_address;
        c.next_address = addr + (size as u64).div_ceil(256) * 256 + state::GUARD_BYTES;
        c.allocated += size;
        c.allocs.insert(addr, data);
        // SAFETY: out-pointer, checked above.
        unsafe { put(out, addr) }
    }

    fn cuMemFree_v2(ptr: u64) {
        let mut d = driver();
        let c = d.ctx()?;
        if ptr == 0 {
            return Ok(());
        }
        // Only an allocation's own address frees it.
        let data = c.allocs.remove(&ptr).ok_or(INVALID_VALUE)?;
        c.allocated -= data.len();
        Ok(())
    }

    /// A copy that does not lie inside one allocation is `CUDA_ERROR_INVALID_VALUE`.
    fn cuMemcpyHtoD_v2(dst: u64, src: *const c_void, n: usize) {
        let mut d = driver();
        let c = d.ctx_sync()?;
        if n == 0 {
            return Ok(());
        }
        if src.is_null() {
            return Err(INVALID_VALUE);
        }
        // SAFETY: `n` readable host bytes (the caller's contract).
        let src = unsafe { std::slice::from_raw_parts(src as *const u8, n) };
        c.bytes_mut(dst, n)?.copy_from_slice(src);
        Ok(())
    }

    fn cuMemcpyDtoH_v2(dst: *mut c_void, src: u64, n: usize) {
        let mut d = driver();
        let c = d.ctx_sync()?;
        if n == 0 {
            return Ok(());
        }
        if dst.is_null() {
            return Err(INVALID_VALUE);
        }
        let bytes = c.bytes(src, n)?;
        // SAFETY: `n` writable host bytes (the caller's contract).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst as *mut u8, n) };
        Ok(())
    }

    fn cuMemcpyDtoD_v2(dst: u64, src: u64, n: usize) {
        let mut d = driver();
        let c = d.ctx_sync()?;
        if n == 0 {
            return Ok(());
        }
        let tmp = c.bytes(src, n)?.to_vec();
        c.bytes_mut(dst, n)?.copy_from_slice(&tmp);
        Ok(())
    }

    fn cuMemsetD8_v2(dst: u64, value: u8, n: usize) {
        let mut d = driver();
        let c = d.ctx()?;
        if n > 0 {
            c.bytes_mut(dst, n)?.fill(value);
        }
        Ok(())
    }

    /// `n` 32-bit words from a 4-byte-aligned address.
    fn cuMemsetD32_v2(dst: u64, value: c_uint, n: usize) {
        let mut d = driver();
        let c = d.ctx()?;
        if !dst.is_multiple_of(4) {
            return Err(INVALID_VALUE);
        }
        if n > 0 {
            let bytes = c.bytes_mut(dst, n.checked_mul(4).ok_or(INVALID_VALUE)?)?;
            for w in bytes.chunks_exact_mut(4) {
                w.copy_from_slice(&value.to_le_bytes());
            }
        }
        Ok(())
    }

    /// PTX → the PTX emulator, cubin → the SASS emulator; the JIT logs get what a refusal means.
    fn cuModuleLoadDataEx(
        out: *mut cu::CUmodule,
        image: *const c_void,
        n: c_uint,
        opts: *mut c_uint,
        vals: *mut *mut c_void,
    ) {
        // SAFETY: the caller's contract.
        unsafe { module_load(out, image, n, opts, vals) }
    }

    fn cuModuleLoadData(out: *mut cu::CUmodule, image: *const c_void) {
        // SAFETY: the caller's contract.
        unsafe { module_load(out, image, 0, std::ptr::null(), std::ptr::null_mut()) }
    }

    /// Unloading invalidates the module's functions.
    fn cuModuleUnload(m: cu::CUmodule) {
        let mut d = driver();
        let c = d.ctx()?;
        let module = c.modules.remove(&(m as usize)).ok_or(INVALID_HANDLE)?;
        c.functions.retain(|_, f| !Arc::ptr_eq(&f.module, &module));
        Ok(())
    }

    /// The same name gives the same handle (attributes set on it stay).
    fn cuModuleGetFunction(out: *mut cu::CUfunction, m: cu::CUmodule, name: *const c_char) {
        let mut d = driver();
        let h = d.handle();
        let c = d.ctx()?;
        let module = c.modules.get(&(m as usize)).ok_or(INVALID_HANDLE)?.clone();
        if name.is_null() {
            return Err(INVALID_VALUE);
        }
        // SAFETY: a NUL-terminated name (the caller's contract).
        let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy();
        let index = module.kernels.iter().position(|k| k.name == name).ok_or(NOT_FOUND)?;
        let existing = c.functions.iter().find(|(_, f)| Arc::ptr_eq(&f.module, &module) && f.index == index);
        let h = match existing {
            Some((&h, _)) => h,
            None => {
                c.functions.insert(h, Function { module, index, max_dynamic_shared: DEFAULT_DYNAMIC_SHARED });
                h
            }
        };
        // SAFETY: out-pointer.
        unsafe { put(out, h as cu::CUfunction) }
    }

    /// Registers are not known to the emulators: `NUM_REGS` is 0.
    fn cuFuncGetAttribute(v: *mut c_int, attr: c_uint, f: cu::CUfunction) {
        use cu::CUfunction_attribute_enum as F;
        let mut d = driver();
        let t = target_of(&d)?;
        let c = d.ctx()?;
        let func = function(c, f)?;
        let k = &func.module.kernels[func.index];
        let a = |x: F| x as c_uint;
        let x: i64 = match attr {
            x if x == a(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) => k.max_threads as i64,
            x if x == a(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) => k.static_shared as i64,
            x if x == a(F::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES) => 0,
            x if x == a(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES) => k.local_bytes as i64,
            x if x == a(F::CU_FUNC_ATTRIBUTE_NUM_REGS) => 0,
            x if x == a(F::CU_FUNC_ATTRIBUTE_PTX_VERSION) => k.ptx_version as i64,
            x if x == a(F::CU_FUNC_ATTRIBUTE_BINARY_VERSION) => (t.cc.0 * 10 + t.cc.1) as i64,
            x if x == a(F::CU_FUNC_ATTRIBUTE_CACHE_MODE_CA) => 0,
            x if x == a(F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) => func.max_dynamic_shared as i64,
            x if x == a(F::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) => -1,
            _ => return Err(INVALID_VALUE),
        };
        // SAFETY: out-pointer.
        unsafe { put(v, x as c_int) }
    }

    /// Only the dynamic shared-memory limit (checked against the device) and the carveout
    /// hint (ignored) can be set.
    fn cuFuncSetAttribute(f: cu::CUfunction, attr: c_uint, value: c_int) {
        use cu::CUfunction_attribute_enum as F;
        let mut d = driver();
        let t = target_of(&d)?;
        let c = d.ctx()?;
        let func = c.functions.get_mut(&(f as usize)).ok_or(INVALID_HANDLE)?;
        let static_shared = func.module.kernels[func.index].static_shared;
        if attr == F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as c_uint {
            if value < 0 || static_shared as u64 + value as u64 > t.shared_optin() as u64 {
                return Err(INVALID_VALUE);
            }
            func.max_dynamic_shared = value as u32;
            Ok(())
        } else if attr == F::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT as c_uint {
            Ok(())
        } else {
            Err(INVALID_VALUE)
        }
    }

    /// From the PTX `.entry` signature or the cubin's parameter records.
    fn cuFuncGetParamInfo(f: cu::CUfunction, index: usize, offset: *mut usize, size: *mut usize) {
        let mut d = driver();
        let c = d.ctx()?;
        let func = function(c, f)?;
        let &(o, s) = func.module.kernels[func.index].params.get(index).ok_or(INVALID_VALUE)?;
        // SAFETY: out-pointers.
        unsafe {
            put(offset, o as usize)?;
            put(size, s as usize)
        }
    }

    /// Runs the kernel now; see `run::launch`. After a fault, launches do nothing (the
    /// context is lost) until the fault is reported.
    fn cuLaunchKernel(
        f: cu::CUfunction,
        gx: c_uint,
        gy: c_uint,
        gz: c_uint,
        bx: c_uint,
        by: c_uint,
        bz: c_uint,
        shared: c_uint,
        stream: cu::CUstream,
        params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) {
        let mut d = driver();
        let t = target_of(&d)?;
        let c = d.ctx()?;
        let func = function(c, f)?;
        let func = Function { module: func.module.clone(), index: func.index, max_dynamic_shared: func.max_dynamic_shared };
        check_stream(c, stream as usize)?;
        if !extra.is_null() {
            // `CU_LAUNCH_PARAM_BUFFER_POINTER` packing is not implemented (trident-cuda never uses it).
            return Err(NOT_SUPPORTED);
        }
        if c.fault.is_some() {
            return Ok(());
        }
        let l = run::Launch { grid: [gx, gy, gz], block: [bx, by, bz], shared };
        // SAFETY: the caller's contract for `kernelParams`.
        unsafe { run::launch(c, &func, &t, &l, params) }
    }

    fn cuStreamCreate(out: *mut cu::CUstream, flags: c_uint) {
        let mut d = driver();
        let h = d.handle();
        let c = d.ctx()?;
        if flags > 1 || out.is_null() {
            return Err(INVALID_VALUE);
        }
        c.streams.insert(h, ());
        // SAFETY: out-pointer, checked above.
        unsafe { put(out, h as cu::CUstream) }
    }

    fn cuStreamDestroy_v2(s: cu::CUstream) {
        let mut d = driver();
        let c = d.ctx()?;
        c.streams.remove(&(s as usize)).ok_or(INVALID_HANDLE)
    }

    fn cuStreamSynchronize(s: cu::CUstream) {
        let mut d = driver();
        check_stream(d.current()?, s as usize)?;
        d.ctx_sync()?;
        Ok(())
    }

    /// Flags: `CU_EVENT_BLOCKING_SYNC` (1), `CU_EVENT_DISABLE_TIMING` (2), `CU_EVENT_INTERPROCESS` (4).
    fn cuEventCreate(out: *mut cu::CUevent, flags: c_uint) {
        let mut d = driver();
        let h = d.handle();
        let c = d.ctx()?;
        if flags & !7 != 0 || out.is_null() {
            return Err(INVALID_VALUE);
        }
        c.events.insert(h, Event { at_ns: None, timing: flags & 2 == 0 });
        // SAFETY: out-pointer, checked above.
        unsafe { put(out, h as cu::CUevent) }
    }

    fn cuEventDestroy_v2(e: cu::CUevent) {
        let mut d = driver();
        let c = d.ctx()?;
        c.events.remove(&(e as usize)).map(|_| ()).ok_or(INVALID_HANDLE)
    }

    /// Records the modelled clock: every kernel issued before has run.
    fn cuEventRecord(e: cu::CUevent, s: cu::CUstream) {
        let mut d = driver();
        let c = d.ctx()?;
        check_stream(c, s as usize)?;
        let now = c.clock_ns;
        c.events.get_mut(&(e as usize)).ok_or(INVALID_HANDLE)?.at_ns = Some(now);
        Ok(())
    }

    fn cuEventSynchronize(e: cu::CUevent) {
        let mut d = driver();
        if !d.current()?.events.contains_key(&(e as usize)) {
            return Err(INVALID_HANDLE);
        }
        d.ctx_sync()?;
        Ok(())
    }

    /// Milliseconds of modelled time between two recorded events with timing.
    fn cuEventElapsedTime(ms: *mut f32, start: cu::CUevent, end: cu::CUevent) {
        let mut d = driver();
        let c = d.ctx()?;
        let get = |e: cu::CUevent| c.events.get(&(e as usize)).copied().ok_or(INVALID_HANDLE);
        let (a, b) = (get(start)?, get(end)?);
        let (Some(t0), Some(t1), true, true) = (a.at_ns, b.at_ns, a.timing, b.timing) else {
            return Err(INVALID_HANDLE);
        };
        // SAFETY: out-pointer.
        unsafe { put(ms, ((t1 - t0) / 1e6) as f32) }
    }

    /// Writes the PTX emulator's own encoding of the map (`TEM1`); see the crate docs.
    fn cuTensorMapEncodeTiled(
        map: *mut c_void,
        data_type: c_uint,
        rank: c_uint,
        address: *mut c_void,
        dims: *const u64,
        strides: *const u64,
        box_dims: *const u32,
        element_strides: *const u32,
        interleave: c_uint,
        swizzle: c_uint,
        _l2_promotion: c_uint,
        oob_fill: c_uint,
    ) {
        if map.is_null() || !(map as usize).is_multiple_of(64) || !(1..=5).contains(&rank) {
            return Err(INVALID_VALUE);
        }
        if dims.is_null() || box_dims.is_null() || element_strides.is_null() || (rank > 1 && strides.is_null()) {
            return Err(INVALID_VALUE);
        }
        let r = rank as usize;
        // SAFETY: arrays of `rank` (strides: `rank - 1`) entries (the caller's contract).
        let (dims, box_dims, element_strides, strides) = unsafe {
            (
                std::slice::from_raw_parts(dims, r),
                std::slice::from_raw_parts(box_dims, r),
                std::slice::from_raw_parts(element_strides, r),
                if r > 1 { std::slice::from_raw_parts(strides, r - 1) } else { &[][..] },
            )
        };
        let m = tensor_map(data_type, address as u64, dims, strides, box_dims, element_strides, interleave, swizzle, oob_fill)?;
        let bytes = m.encode();
        // SAFETY: 128 writable bytes (the caller's contract).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), map as *mut u8, bytes.len()) };
        Ok(())
    }
}

/// The emulator's map for `cuTensorMapEncodeTiled`'s arguments (the driver's enum numbering,
/// which is not PTX's), validated as the driver would; a refusal says why on stderr.
#[allow(clippy::too_many_arguments)]
fn tensor_map(
    data_type: c_uint,
    address: u64,
    dims: &[u64],
    strides: &[u64],
    box_dims: &[u32],
    element_strides: &[u32],
    interleave: c_uint,
    swizzle: c_uint,
    oob_fill: c_uint,
) -> Result<trident_emu::TensorMap, CuResult> {
    use cu::CUtensorMapDataType_enum as T;
    use trident_emu::tensormap::{ElemType as E, OobFill, Swizzle};
    let refuse = |why: String| {
        eprintln!("trident-emu-driver: cuTensorMapEncodeTiled: {why}");
        INVALID_VALUE
    };
    let types = [
        (T::CU_TENSOR_MAP_DATA_TYPE_UINT8, E::U8),
        (T::CU_TENSOR_MAP_DATA_TYPE_UINT16, E::U16),
        (T::CU_TENSOR_MAP_DATA_TYPE_UINT32, E::U32),
        (T::CU_TENSOR_MAP_DATA_TYPE_INT32, E::S32),
        (T::CU_TENSOR_MAP_DATA_TYPE_UINT64, E::U64),
        (T::CU_TENSOR_MAP_DATA_TYPE_INT64, E::S64),
        (T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16, E::F16),
        (T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32, E::F32),
        (T::CU_TENSOR_MAP_DATA_TYPE_FLOAT64, E::F64),
        (T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, E::BF16),
        (T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ, E::F32Ftz),
        (T::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, E::TF32),
        (T::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ, E::TF32Ftz),
    ];
    let elem = types
        .iter()
        .find(|(t, _)| *t as c_uint == data_type)
        .map(|&(_, e)| e)
        .ok_or_else(|| refuse(format!("data type {data_type} is not one the emulator has")))?;
    if interleave != cu::CUtensorMapInterleave_enum::CU_TENSOR_MAP_INTERLEAVE_NONE as c_uint {
        return Err(refuse(format!("interleave {interleave}: interleaved layouts are not emulated")));
    }
    use cu::CUtensorMapSwizzle_enum as S;
    let sw = match swizzle {
        x if x == S::CU_TENSOR_MAP_SWIZZLE_NONE as c_uint => Swizzle::None,
        x if x == S::CU_TENSOR_MAP_SWIZZLE_32B as c_uint => Swizzle::B32,
        x if x == S::CU_TENSOR_MAP_SWIZZLE_64B as c_uint => Swizzle::B64,
        x if x == S::CU_TENSOR_MAP_SWIZZLE_128B as c_uint => Swizzle::B128,
        _ => return Err(refuse(format!("swizzle {swizzle} is not emulated"))),
    };
    use cu::CUtensorMapFloatOOBfill_enum as O;
    let fill = match oob_fill {
        x if x == O::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE as c_uint => OobFill::Zero,
        x if x == O::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA as c_uint => OobFill::Nan,
        _ => return Err(refuse(format!("out-of-bounds fill {oob_fill}"))),
    };
    let mut m = trident_emu::TensorMap::tiled(address, elem, dims, strides, box_dims, sw, fill)
        .map_err(|e| refuse(e.to_string()))?;
    m.element_strides[..element_strides.len()].copy_from_slice(element_strides);
    m.validate().map_err(|e| refuse(e.to_string()))?;
    Ok(m)
}
