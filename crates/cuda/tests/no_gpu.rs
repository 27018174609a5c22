//! Runs everywhere: without a driver the crate must say so cleanly, never panic.

use trident_cuda::{CudaError, Device};

fn driver_library_present() -> bool {
    ["libcuda.so.1", "libcuda.so"].iter().any(|n| {
        // SAFETY: only probing whether the library loads.
        unsafe { libloading::Library::new(*n) }.is_ok()
    })
}

#[test]
fn availability_matches_open() {
    let available = Device::available();
    let opened = Device::open(0);
    assert_eq!(available, opened.is_ok(), "available() = {available} but open(0) = {opened:?}");
    if !driver_library_present() && std::env::var_os(trident_cuda::DRIVER_PATH_ENV).is_none() {
        // The machines CI and most developers use: no libcuda at all.
        assert!(!available);
        match opened {
            Err(CudaError::NoDriver { reason }) => assert!(reason.contains("libcuda.so.1"), "{reason}"),
            other => panic!("expected NoDriver, got {other:?}"),
        }
        assert!(matches!(Device::count(), Err(CudaError::NoDriver { .. })));
    }
}

#[test]
fn out_of_range_ordinal_is_an_error_not_a_panic() {
    match Device::open(usize::MAX) {
        Err(CudaError::NoDriver { .. }) | Err(CudaError::NoDevice { .. }) => {}
        other => panic!("expected NoDriver or NoDevice, got {other:?}"),
    }
}
