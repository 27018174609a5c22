//! A kernel that faults. A fault breaks the process's CUDA context for good, so this test
//! has its own test binary (its own process) instead of sharing `gpu.rs`'s.

mod common;

use common::*;
use trident_cuda::{launch, CudaError, Event, Module, Param, Stream};

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn a_kernel_fault_is_reported_with_the_last_launch() {
    let dev = gpu();
    let module = Module::load_ptx(&dev, FAULT_PTX).unwrap();
    let k = module.kernel("store_to").unwrap();
    let stream = Stream::new(&dev).unwrap();
    let done = Event::new(&dev).unwrap();
    // An address no allocation covers: the launch is queued fine, the fault comes later.
    launch(&k, [2, 1, 1], [32, 1, 1], 0, &stream, &[Param::DevicePtr(0x10)]).unwrap();
    done.record(&stream).unwrap();
    let e = expect_err(stream.synchronize(), "synchronising after a faulting kernel");
    eprintln!("{e}");
    match &e {
        CudaError::Async { last_launch: Some(l), driver, .. } => {
            assert_eq!(l.kernel, "store_to");
            assert_eq!((l.grid, l.block), ([2, 1, 1], [32, 1, 1]));
            assert!(driver.name.starts_with("CUDA_ERROR_"), "{driver}");
        }
        other => panic!("expected an Async error naming the launch, got {other:?}"),
    }
    assert!(e.to_string().contains("after the launch of kernel `store_to`"), "{e}");
    // The event saw the same launch.
    let e = expect_err(done.synchronize(), "waiting on an event after the fault");
    assert!(e.to_string().contains("kernel `store_to`"), "{e}");
}
