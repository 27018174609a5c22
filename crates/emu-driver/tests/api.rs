//! The entry points called directly (as trident-cuda calls them through the shared library):
//! memory bounds, the context rules, error names, module loading and its logs, a launch on
//! fresh random inputs, a fault's report, tensor maps. The driver's state is process-wide, so
//! the tests take turns and each ends by releasing the context (which destroys it).

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::Mutex;

use trident_emu_driver::codes::*;
use trident_emu_driver::*;

static TURN: Mutex<()> = Mutex::new(());

const VADD_PTX: &str = include_str!("../../cuda/tests/kernels/vadd.ptx");
const FAULT_PTX: &str = include_str!("../../cuda/tests/kernels/fault.ptx");

/// Initialises the driver, retains the primary context and makes it current; releases it
/// (destroying it) on drop.
struct Ctx;

impl Ctx {
    fn open() -> Ctx {
        unsafe {
            assert_eq!(cuInit(0), SUCCESS);
            let mut c = std::ptr::null_mut();
            assert_eq!(cuDevicePrimaryCtxRetain(&mut c, 0), SUCCESS);
            assert_eq!(cuCtxSetCurrent(c), SUCCESS);
        }
        Ctx
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        unsafe { cuDevicePrimaryCtxRelease_v2(0) };
    }
}

fn name(code: u32) -> String {
    let mut p: *const c_char = std::ptr::null();
    assert_eq!(unsafe { cuGetErrorName(code, &mut p) }, SUCCESS, "code {code}");
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn seed() -> u64 {
    let s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    eprintln!("seed {s}");
    s | 1
}

fn alloc(n: usize) -> u64 {
    let mut p = 0u64;
    assert_eq!(unsafe { cuMemAlloc_v2(&mut p, n) }, SUCCESS);
    p
}

fn load(ptx: &str) -> Result<*mut c_void, (u32, String)> {
    let text = format!("{ptx}\0");
    let mut m = std::ptr::null_mut();
    let mut log = vec![0u8; 4096];
    let mut opts = [5u32, 6]; // CU_JIT_ERROR_LOG_BUFFER, its size
    let mut vals = [log.as_mut_ptr() as *mut c_void, std::ptr::without_provenance_mut(log.len())];
    let rc = unsafe {
        cuModuleLoadDataEx(
            &mut m as *mut _ as *mut _,
            text.as_ptr() as *const c_void,
            2,
            opts.as_mut_ptr(),
            vals.as_mut_ptr(),
        )
    };
    let end = log.iter().position(|&b| b == 0).unwrap_or(0);
    if rc == SUCCESS {
        Ok(m as *mut c_void)
    } else {
        Err((rc, String::from_utf8_lossy(&log[..end]).into_owned()))
    }
}

fn function(m: *mut c_void, n: &str) -> *mut c_void {
    let mut f = std::ptr::null_mut();
    let n = format!("{n}\0");
    assert_eq!(
        unsafe { cuModuleGetFunction(&mut f as *mut _ as *mut _, m as _, n.as_ptr() as *const c_char) },
        SUCCESS
    );
    f as *mut c_void
}

#[test]
fn the_device_says_it_is_emulated_and_calls_need_init_and_a_current_context() {
    let _t = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let _c = Ctx::open();
    let mut buf = [0 as c_char; 64];
    assert_eq!(unsafe { cuDeviceGetName(buf.as_mut_ptr(), 64, 0) }, SUCCESS);
    let n = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned();
    assert!(n.starts_with("Trident emulated sm_"), "{n}");
    let mut v: c_int = 0;
    assert_eq!(unsafe { cuDeviceGetAttribute(&mut v, 75, 0) }, SUCCESS); // compute capability major
    assert!(v == 8 || v == 9);
    assert_eq!(unsafe { cuDeviceGetAttribute(&mut v, 100_000, 0) }, INVALID_VALUE);
    assert_eq!(unsafe { cuDeviceGet(&mut v, 1) }, INVALID_DEVICE);
    // Another thread has no current context.
    let other = std::thread::spawn(|| {
        let mut p = 0u64;
        unsafe { cuMemAlloc_v2(&mut p, 16) }
    })
    .join()
    .unwrap();
    assert_eq!(name(other), "CUDA_ERROR_INVALID_CONTEXT");
    let mut p: *const c_char = std::ptr::null();
    assert_eq!(unsafe { cuGetErrorName(4242, &mut p) }, INVALID_VALUE);
    assert!(p.is_null());
}

#[test]
fn copies_must_lie_inside_one_allocation() {
    let _t = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let _c = Ctx::open();
    let (a, b) = (alloc(100), alloc(64));
    assert_eq!(a % 256, 0);
    let mut r = seed();
    let src: Vec<u8> = (0..100)
        .map(|_| {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            r as u8
        })
        .collect();
    unsafe {
        assert_eq!(cuMemcpyHtoD_v2(a, src.as_ptr() as *const c_void, 100), SUCCESS);
        assert_eq!(cuMemcpyHtoD_v2(a + 1, src.as_ptr() as *const c_void, 100), INVALID_VALUE);
        assert_eq!(cuMemcpyDtoD_v2(b, a + 36, 64), SUCCESS);
        assert_eq!(cuMemcpyDtoD_v2(b, a + 37, 64), INVALID_VALUE);
        let mut out = vec![0u8; 64];
        assert_eq!(cuMemcpyDtoH_v2(out.as_mut_ptr() as *mut c_void, b, 64), SUCCESS);
        assert_eq!(out, src[36..]);
        assert_eq!(cuMemsetD32_v2(b + 2, 7, 1), INVALID_VALUE);
        assert_eq!(cuMemsetD32_v2(b, 0x7fc0_0001, 17), INVALID_VALUE);
        assert_eq!(cuMemsetD32_v2(b, 0x7fc0_0001, 16), SUCCESS);
        assert_eq!(cuMemFree_v2(a + 4), INVALID_VALUE);
        assert_eq!(cuMemFree_v2(a), SUCCESS);
        assert_eq!(cuMemFree_v2(a), INVALID_VALUE);
        // A freed address is never handed out again, so a stale pointer cannot alias.
        assert!(alloc(100) > b);
        let mut p = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut p, TOTAL_MEMORY + 1), OUT_OF_MEMORY);
    }
}

#[test]
fn pointer_attributes_name_the_allocation_holding_an_address() {
    let _t = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let _c = Ctx::open();
    let (a, b) = (alloc(100), alloc(64));
    // CU_POINTER_ATTRIBUTE_RANGE_START_ADDR (11), _RANGE_SIZE (12), _DEVICE_ORDINAL (9),
    // _MEMORY_TYPE (2; CU_MEMORYTYPE_DEVICE is 2).
    let start = |p: u64| {
        let mut v = 0u64;
        (unsafe { cuPointerGetAttribute(&mut v as *mut u64 as *mut c_void, 11, p) }, v)
    };
    let mut size = 0usize;
    let mut ordinal: c_int = -1;
    let mut kind: c_uint = 0;
    unsafe {
        assert_eq!(cuPointerGetAttribute(&mut size as *mut usize as *mut c_void, 12, a + 40), SUCCESS);
        assert_eq!(cuPointerGetAttribute(&mut ordinal as *mut c_int as *mut c_void, 9, a + 40), SUCCESS);
        assert_eq!(cuPointerGetAttribute(&mut kind as *mut c_uint as *mut c_void, 2, b), SUCCESS);
    }
    assert_eq!((size, ordinal, kind), (100, 0, 2));
    assert_eq!(start(a + 99), (SUCCESS, a));
    assert_eq!(start(b + 63), (SUCCESS, b));
    // Past an allocation's end (its guard gap), below the first, a host address, a freed one.
    assert_eq!(start(a + 100).0, INVALID_VALUE);
    assert_eq!(start(a - 1).0, INVALID_VALUE);
    assert_eq!(start(&size as *const usize as u64).0, INVALID_VALUE);
    assert_eq!(unsafe { cuMemFree_v2(b) }, SUCCESS);
    assert_eq!(start(b).0, INVALID_VALUE);
    let mut v = 0u64;
    assert_eq!(unsafe { cuPointerGetAttribute(&mut v as *mut u64 as *mut c_void, 6, a) }, NOT_SUPPORTED);
}

#[test]
fn ptx_loads_with_logs_and_a_launch_computes_and_advances_the_clock() {
    let _t = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let _c = Ctx::open();
    let (code, log) = load(".version 8.0\n.target sm_80\n.visible .entry k() { frob; }").unwrap_err();
    assert_eq!(name(code), "CUDA_ERROR_INVALID_PTX");
    assert!(log.contains("frob"), "{log}");
    let m = load(VADD_PTX).unwrap();
    let f = function(m, "vadd");
    let mut g = std::ptr::null_mut();
    assert_eq!(unsafe { cuModuleGetFunction(&mut g, m as _, c"nope".as_ptr()) }, NOT_FOUND);
    let (mut off, mut size) = (0usize, 0usize);
    assert_eq!(unsafe { cuFuncGetParamInfo(f as _, 3, &mut off, &mut size) }, SUCCESS);
    assert_eq!((off, size), (24, 4));
    assert_eq!(unsafe { cuFuncGetParamInfo(f as _, 4, &mut off, &mut size) }, INVALID_VALUE);

    let n = 1000usize;
    let mut r = seed();
    let mut next = || {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        (r >> 40) as f32 / 1024.0 - 8000.0
    };
    let a: Vec<f32> = (0..n).map(|_| next()).collect();
    let b: Vec<f32> = (0..n).map(|_| next()).collect();
    let (da, db, dout) = (alloc(n * 4), alloc(n * 4), alloc(n * 4));
    let mut ev = [std::ptr::null_mut(); 2];
    unsafe {
        cuMemcpyHtoD_v2(da, a.as_ptr() as *const c_void, n * 4);
        cuMemcpyHtoD_v2(db, b.as_ptr() as *const c_void, n * 4);
        cuMemsetD32_v2(dout, 0x7fc0_0001, n);
        for e in &mut ev {
            assert_eq!(cuEventCreate(e, 0), SUCCESS);
        }
        let mut args: [u64; 4] = [da, db, dout, n as u64];
        let mut ptrs: Vec<*mut c_void> = args.iter_mut().map(|x| x as *mut u64 as *mut c_void).collect();
        assert_eq!(cuEventRecord(ev[0], std::ptr::null_mut()), SUCCESS);
        let launch = |ptrs: &mut Vec<*mut c_void>, shared: c_uint| {
            cuLaunchKernel(
                f as _,
                4,
                1,
                1,
                256,
                1,
                1,
                shared,
                std::ptr::null_mut(),
                ptrs.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        // Over the 48 KiB default limit: refused until raised.
        assert_eq!(launch(&mut ptrs, 64 * 1024), INVALID_VALUE);
        assert_eq!(launch(&mut ptrs, 0), SUCCESS);
        assert_eq!(cuEventRecord(ev[1], std::ptr::null_mut()), SUCCESS);
        assert_eq!(cuEventSynchronize(ev[1]), SUCCESS);
        let mut ms = 0f32;
        assert_eq!(cuEventElapsedTime(&mut ms, ev[0], ev[1]), SUCCESS);
        assert!(ms > 0.0, "{ms}");
        let mut out = vec![0f32; n];
        assert_eq!(cuMemcpyDtoH_v2(out.as_mut_ptr() as *mut c_void, dout, n * 4), SUCCESS);
        for i in 0..n {
            assert_eq!(out[i].to_bits(), (a[i] + b[i]).to_bits(), "element {i}");
        }
    }
}

#[test]
fn a_fault_is_reported_by_the_next_wait_and_then_by_every_call_until_release() {
    let _t = TURN.lock().unwrap_or_else(|p| p.into_inner());
    {
        let _c = Ctx::open();
        let m = load(FAULT_PTX).unwrap();
        let f = function(m, "store_to");
        let buf = alloc(64);
        let mut bad: u64 = buf + 4096; // past the allocation
        let mut ptrs = [&mut bad as *mut u64 as *mut c_void];
        unsafe {
            let rc = cuLaunchKernel(
                f as _,
                1,
                1,
                1,
                32,
                1,
                1,
                0,
                std::ptr::null_mut(),
                ptrs.as_mut_ptr(),
                std::ptr::null_mut(),
            );
            assert_eq!(rc, SUCCESS, "the launch itself succeeds; the fault comes later");
            let mut p = 0u64;
            assert_eq!(cuMemAlloc_v2(&mut p, 8), SUCCESS, "not yet observed");
            assert_eq!(name(cuCtxSynchronize()), "CUDA_ERROR_ILLEGAL_ADDRESS");
            assert_eq!(name(cuMemAlloc_v2(&mut p, 8)), "CUDA_ERROR_ILLEGAL_ADDRESS");
        }
    }
    // Released by its only user: a fresh context.
    let _c = Ctx::open();
    alloc(8);
    assert_eq!(unsafe { cuCtxSynchronize() }, SUCCESS);
}

#[test]
fn tensor_maps_are_the_emulators_encoding_and_bad_arguments_are_refused() {
    let _t = TURN.lock().unwrap_or_else(|p| p.into_inner());
    #[repr(C, align(64))]
    struct Map([u8; 128]);
    let mut m = Map([0; 128]);
    let dims = [72u64, 100];
    let strides = [144u64];
    let boxes = [64u32, 64];
    let ones = [1u32, 1];
    // f16 (driver numbering 6), no interleave, 128B swizzle (3), L2 128B, no NaN fill.
    let enc = |m: &mut Map, addr: u64, dtype: u32, strides: &[u64]| unsafe {
        cuTensorMapEncodeTiled(
            m.0.as_mut_ptr() as *mut c_void,
            dtype,
            2,
            addr as *mut c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            ones.as_ptr(),
            0,
            3,
            2,
            0,
        )
    };
    assert_eq!(enc(&mut m, 0x7_0000_1000, 6, &strides), SUCCESS);
    let t = trident_emu::TensorMap::decode(&m.0).unwrap();
    assert_eq!(t.global_address, 0x7_0000_1000);
    assert_eq!(t.elem_type, trident_emu::tensormap::ElemType::F16);
    assert_eq!((t.global_dims[1], t.global_strides[0], t.box_dims[0]), (100, 144, 64));
    // bf16 is 9 in the driver's numbering, 10 in PTX's.
    assert_eq!(enc(&mut m, 0x7_0000_1000, 9, &strides), SUCCESS);
    assert_eq!(trident_emu::TensorMap::decode(&m.0).unwrap().elem_type, trident_emu::tensormap::ElemType::BF16);
    assert_eq!(enc(&mut m, 0x7_0000_1008, 6, &strides), INVALID_VALUE, "unaligned address");
    assert_eq!(enc(&mut m, 0x7_0000_1000, 6, &[100]), INVALID_VALUE, "stride not a multiple of 16");
    assert_eq!(enc(&mut m, 0x7_0000_1000, 99, &strides), INVALID_VALUE, "no such data type");
}
