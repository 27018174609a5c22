//! Tests on a real GPU: `cargo test -p trident-cuda -- --ignored` on a machine with an
//! NVIDIA driver. Each test opens device 0 and shares the process's primary context, so
//! none of them may leave the context broken (the fault test lives in `gpu_fault.rs`).

mod common;

use common::*;
use trident_core::{DType, HostTensor};
use trident_cuda::{launch, CudaError, Device, DeviceBuffer, Event, ImageKind, Module, Param, PreparedLaunch, Stream};

/// Runs vadd on fresh random inputs of length `n` and checks every element exactly
/// (the kernel's add.f32 rounds to nearest like the host's f32 add).
fn run_vadd(dev: &Device, module: &Module, n: usize, rng: &mut Rng) {
    let kernel = module.kernel("vadd").unwrap();
    let a: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let b: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let da = DeviceBuffer::from_bytes(dev, &f32_bytes(&a)).unwrap();
    let db = DeviceBuffer::from_bytes(dev, &f32_bytes(&b)).unwrap();
    let dout = DeviceBuffer::alloc(dev, n * 4).unwrap();
    dout.fill_u32(0x7fc0_0001).unwrap(); // NaN poison
    let stream = Stream::new(dev).unwrap();
    let grid = (n as u32).div_ceil(256);
    launch(
        &kernel,
        [grid, 1, 1],
        [256, 1, 1],
        0,
        &stream,
        &[Param::Ptr(&da), Param::Ptr(&db), Param::Ptr(&dout), Param::U32(n as u32)],
    )
    .unwrap();
    stream.synchronize().unwrap();
    let mut out = vec![0u8; n * 4];
    dout.copy_to_host(&mut out).unwrap();
    let out = f32_from_bytes(&out);
    for i in 0..n {
        assert_eq!(out[i].to_bits(), (a[i] + b[i]).to_bits(), "element {i}: {} + {} gave {}", a[i], b[i], out[i]);
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn device_properties_are_plausible() {
    let dev = gpu();
    let i = dev.info();
    eprintln!("{i:#?}");
    assert!(!i.name.is_empty());
    assert!(i.compute_capability.0 >= 5, "{:?}", i.compute_capability);
    assert!(i.sm_count > 0 && i.warp_size == 32);
    assert!(i.shared_mem_per_block >= 48 * 1024);
    assert!(i.shared_mem_per_block_optin >= i.shared_mem_per_block);
    assert!(i.max_block_dim[0] >= 1024 && i.max_grid_dim[0] >= 65535);
    assert!(i.driver_version >= 11000, "{}", i.driver_version);
    assert!(i.total_memory_bytes > 1 << 30);
    let (free, total) = dev.memory_info().unwrap();
    assert!(free <= total && total == i.total_memory_bytes);
    assert!(Device::available());
    assert!(Device::count().unwrap() >= 1);
    assert!(matches!(Device::open(1000), Err(CudaError::NoDevice { ordinal: 1000, .. })));
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn vector_add_from_handwritten_ptx() {
    let dev = gpu();
    let mut rng = Rng::fresh("vector_add_from_handwritten_ptx");
    let module = Module::load_ptx(&dev, VADD_PTX).unwrap();
    eprintln!("JIT log: {}", module.jit_log());
    assert_eq!(module.kind(), ImageKind::Ptx);
    let k = module.kernel("vadd").unwrap();
    assert!(k.attributes().num_regs > 0);
    assert!(k.attributes().max_threads_per_block >= 256);
    if let Some(layout) = k.param_layout() {
        let got: Vec<(usize, usize)> = layout.iter().map(|s| (s.offset, s.size)).collect();
        assert_eq!(got, [(0, 8), (8, 8), (16, 8), (24, 4)]);
    }
    // Not a multiple of the block size, so the bounds check in the kernel matters.
    let n = 1000 + rng.below(5000) as usize;
    run_vadd(&dev, &module, n, &mut rng);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn vector_add_from_cubin() {
    let dev = gpu();
    if dev.info().compute_capability != (9, 0) {
        eprintln!("skipped: the committed cubin is for sm_90, this device is {}", dev.info().sm_name());
        return;
    }
    let mut rng = Rng::fresh("vector_add_from_cubin");
    let module = Module::load_cubin(&dev, VADD_SM90_CUBIN).unwrap();
    assert_eq!(module.kind(), ImageKind::Cubin);
    assert_eq!(module.kernel("vadd").unwrap().attributes().binary_version, 90);
    run_vadd(&dev, &module, 4096 + rng.below(100) as usize, &mut rng);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_parameter_type_arrives_at_its_offset() {
    let dev = gpu();
    let mut rng = Rng::fresh("every_parameter_type_arrives_at_its_offset");
    let module = Module::load_ptx(&dev, PARAMS_PTX).unwrap();
    let k = module.kernel("echo_params").unwrap();
    let out = DeviceBuffer::alloc(&dev, 64).unwrap();
    out.memset(0xa5).unwrap();
    let a = rng.next_u64() as u8 | 0x80;
    let b = -(rng.below(30000) as i16) - 1;
    let c = rng.next_u64() as u32 | 0x8000_0000;
    let d = rng.next_u64();
    let e = rng.f32();
    let f = rng.f32() as f64 * 1.000000001;
    let g = -(rng.below(127) as i8) - 1;
    let h = -(rng.next_u64() as i64 >> 2).abs() - 1;
    let stream = dev.default_stream();
    launch(
        &k,
        [1, 1, 1],
        [1, 1, 1],
        0,
        &stream,
        &[
            Param::Ptr(&out),
            Param::U8(a),
            Param::I16(b),
            Param::U32(c),
            Param::U64(d),
            Param::F32(e),
            Param::F64(f),
            Param::I8(g),
            Param::I64(h),
        ],
    )
    .unwrap();
    stream.synchronize().unwrap();
    let got = out.to_host(DType::U64, &[8]).unwrap();
    let want = [a as u64, b as i64 as u64, c as u64, d, e.to_bits() as u64, f.to_bits(), g as i64 as u64, h as u64];
    for (i, w) in want.iter().enumerate() {
        assert_eq!(got.get_bits(i), *w, "parameter {} (slot {i})", i + 1);
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn prepared_launch_relaunches_and_swaps_parameters() {
    let dev = gpu();
    let mut rng = Rng::fresh("prepared_launch_relaunches_and_swaps_parameters");
    let module = Module::load_ptx(&dev, VADD_PTX).unwrap();
    let k = module.kernel("vadd").unwrap();
    let n = 2048;
    let a: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let b: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let da = DeviceBuffer::from_bytes(&dev, &f32_bytes(&a)).unwrap();
    let db = DeviceBuffer::from_bytes(&dev, &f32_bytes(&b)).unwrap();
    let out1 = DeviceBuffer::alloc(&dev, n * 4).unwrap();
    let out2 = DeviceBuffer::alloc(&dev, n * 4).unwrap();
    out1.fill_u32(0x7fc0_0001).unwrap();
    out2.fill_u32(0x7fc0_0001).unwrap();
    let stream = Stream::new(&dev).unwrap();
    let half = n as u32 / 2;
    let mut p = PreparedLaunch::new(
        &k,
        [(n as u32).div_ceil(128), 1, 1],
        [128, 1, 1],
        0,
        &[Param::Ptr(&da), Param::Ptr(&db), Param::Ptr(&out1), Param::U32(n as u32)],
    )
    .unwrap();
    for _ in 0..3 {
        p.launch(&stream).unwrap();
    }
    // Second output, and only its first half.
    p.set_param(2, Param::Ptr(&out2)).unwrap();
    p.set_param(3, Param::U32(half)).unwrap();
    assert!(p.set_param(3, Param::U64(1)).is_err(), "a wider value must not replace a u32");
    p.launch(&stream).unwrap();
    stream.synchronize().unwrap();
    let o1 = f32_from_bytes(&out1.to_host(DType::F32, &[n]).unwrap().data);
    let o2 = f32_from_bytes(&out2.to_host(DType::F32, &[n]).unwrap().data);
    for i in 0..n {
        let want = a[i] + b[i];
        assert_eq!(o1[i], want, "out1[{i}]");
        if i < half as usize {
            assert_eq!(o2[i], want, "out2[{i}]");
        } else {
            assert!(o2[i].is_nan(), "out2[{i}] was written past n: {}", o2[i]);
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn event_timed_launch() {
    let dev = gpu();
    let mut rng = Rng::fresh("event_timed_launch");
    let module = Module::load_ptx(&dev, VADD_PTX).unwrap();
    let k = module.kernel("vadd").unwrap();
    let n = 1 << 22;
    let a: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let da = DeviceBuffer::from_bytes(&dev, &f32_bytes(&a)).unwrap();
    let dout = DeviceBuffer::alloc(&dev, n * 4).unwrap();
    dout.fill_u32(0x7fc0_0001).unwrap();
    let stream = Stream::new(&dev).unwrap();
    let (start, end) = (Event::new(&dev).unwrap(), Event::new(&dev).unwrap());
    let params = [Param::Ptr(&da), Param::Ptr(&da), Param::Ptr(&dout), Param::U32(n as u32)];
    start.record(&stream).unwrap();
    launch(&k, [(n as u32).div_ceil(256), 1, 1], [256, 1, 1], 0, &stream, &params).unwrap();
    end.record(&stream).unwrap();
    let ms = Event::elapsed_ms(&start, &end).unwrap();
    eprintln!("vadd of {n} f32: {ms:.4} ms on the device");
    assert!(ms.is_finite() && ms > 0.0, "{ms}");
    let out = f32_from_bytes(&dout.to_host(DType::F32, &[n]).unwrap().data);
    let i = rng.below(n as u64) as usize;
    assert_eq!(out[i], a[i] + a[i]);
    assert_eq!(out[n - 1], a[n - 1] + a[n - 1]);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn dynamic_shared_memory_beyond_48k() {
    let dev = gpu();
    let optin = dev.info().shared_mem_per_block_optin;
    let n: u32 = 25 * 1024; // 100 KiB of u32
    if optin < n * 4 {
        eprintln!("skipped: this device allows only {optin} B of shared memory per block");
        return;
    }
    let mut rng = Rng::fresh("dynamic_shared_memory_beyond_48k");
    let module = Module::load_ptx(&dev, SMEM_PTX).unwrap();
    let k = module.kernel("reverse_smem").unwrap();
    assert!(k.max_dynamic_shared_bytes() <= 48 * 1024);
    let input: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
    let din = DeviceBuffer::from_bytes(&dev, &input.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    let dout = DeviceBuffer::alloc(&dev, n as usize * 4).unwrap();
    dout.memset(0xee).unwrap();
    let stream = Stream::new(&dev).unwrap();
    launch(&k, [1, 1, 1], [512, 1, 1], n * 4, &stream, &[Param::Ptr(&din), Param::Ptr(&dout), Param::U32(n)]).unwrap();
    stream.synchronize().unwrap();
    assert!(k.max_dynamic_shared_bytes() >= n * 4);
    let out = dout.to_host(DType::U32, &[n as usize]).unwrap();
    for i in 0..n as usize {
        assert_eq!(out.get_bits(i) as u32, input[n as usize - 1 - i], "element {i}");
    }
    // More than the device allows is refused before the driver sees it.
    let e = expect_err(
        launch(&k, [1, 1, 1], [512, 1, 1], optin + 1, &stream, &[Param::Ptr(&din), Param::Ptr(&dout), Param::U32(n)]),
        "a launch over the shared-memory limit",
    );
    assert!(matches!(e, CudaError::InvalidLaunch { .. }), "{e}");
    assert!(e.to_string().contains("kernel `reverse_smem`"), "{e}");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn jit_errors_carry_the_ptxas_log() {
    let dev = gpu();
    // Break vadd's `add.f32` line with an undeclared register.
    let lines: Vec<&str> = VADD_PTX.lines().collect();
    let line = lines.iter().position(|l| l.trim_start().starts_with("add.f32")).unwrap();
    let mut broken: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
    broken[line] = "    add.f32         %f3, %f1, %undeclared;".into();
    let e = expect_err(Module::load_ptx(&dev, &broken.join("\n")), "loading broken PTX");
    eprintln!("{e}");
    match &e {
        CudaError::Jit { kind: ImageKind::Ptx, driver, log, .. } => {
            assert!(driver.name.starts_with("CUDA_ERROR_"), "{driver}");
            assert!(log.contains(&format!("line {}", line + 1)), "log does not name line {}: {log}", line + 1);
            assert!(log.contains("undeclared"), "{log}");
        }
        other => panic!("expected a Jit error, got {other:?}"),
    }
    // The message shows the log too.
    assert!(e.to_string().contains("undeclared"));

    // Garbage given as a cubin never reaches the driver.
    let e = expect_err(Module::load_cubin(&dev, b"not an elf"), "loading garbage as a cubin");
    assert!(matches!(e, CudaError::InvalidImage { kind: ImageKind::Cubin, .. }), "{e}");
    let e = expect_err(Module::load_cubin(&dev, &VADD_SM90_CUBIN[..200]), "loading a truncated cubin");
    assert!(matches!(e, CudaError::InvalidImage { .. }), "{e}");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn launch_errors_name_the_kernel_and_the_launch() {
    let dev = gpu();
    let module = Module::load_ptx(&dev, VADD_PTX).unwrap();
    let k = module.kernel("vadd").unwrap();
    let buf = DeviceBuffer::alloc(&dev, 1024).unwrap();
    let stream = Stream::new(&dev).unwrap();
    let params = [Param::Ptr(&buf), Param::Ptr(&buf), Param::Ptr(&buf), Param::U32(256)];

    // Too many threads: refused before the driver, with the launch in the message.
    let e = expect_err(launch(&k, [1, 1, 1], [64, 32, 1], 0, &stream, &params), "a 2048-thread block");
    let s = e.to_string();
    assert!(s.contains("kernel `vadd`") && s.contains("grid [1, 1, 1], block [64, 32, 1]"), "{s}");
    assert!(s.contains("2048 threads per block"), "{s}");
    let e = expect_err(launch(&k, [1, 70000, 1], [32, 1, 1], 0, &stream, &params), "grid y = 70000");
    assert!(e.to_string().contains("grid y = 70000 exceeds the device's limit 65535"), "{e}");

    // Wrong parameter list (checked where the driver reports the kernel's signature).
    if k.param_layout().is_some() {
        let e = expect_err(launch(&k, [1, 1, 1], [32, 1, 1], 0, &stream, &params[..3]), "3 of 4 parameters");
        assert!(e.to_string().contains("the kernel takes 4 parameters, 3 were given"), "{e}");
        let mut wrong = params;
        wrong[3] = Param::U64(256);
        let e = expect_err(launch(&k, [1, 1, 1], [32, 1, 1], 0, &stream, &wrong), "a u64 for a u32");
        assert!(e.to_string().contains("parameter 3 is 4 bytes in the kernel, but a u64"), "{e}");
    } else {
        eprintln!("driver reports no parameter layout (older than 12.4): signature checks skipped");
    }

    // A missing kernel.
    let e = expect_err(module.kernel("no_such_kernel"), "looking up a missing kernel");
    assert!(matches!(&e, CudaError::KernelNotFound { name, .. } if name == "no_such_kernel"), "{e}");
    assert!(e.to_string().contains("CUDA_ERROR_NOT_FOUND"), "{e}");

    // A launch the driver itself refuses: `.reqntid 64` with 32 threads.
    let m64 = Module::load_ptx(&dev, REQNTID_PTX).unwrap();
    let k64 = m64.kernel("needs_64").unwrap();
    let e =
        expect_err(launch(&k64, [3, 1, 1], [32, 1, 1], 0, &stream, &[Param::Ptr(&buf)]), "32 threads for .reqntid 64");
    eprintln!("{e}");
    let s = e.to_string();
    assert!(s.contains("kernel `needs_64`") && s.contains("grid [3, 1, 1], block [32, 1, 1], 0 B"), "{s}");
    assert!(e.driver_error().is_some_and(|d| d.name.starts_with("CUDA_ERROR_")), "{e:?}");
    // The context is still usable afterwards.
    launch(&k64, [1, 1, 1], [64, 1, 1], 0, &stream, &[Param::Ptr(&buf)]).unwrap();
    stream.synchronize().unwrap();
    let out = buf.to_host(DType::U32, &[256]).unwrap();
    assert_eq!(out.get_bits(63), 63);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn buffers_round_trip_and_check_sizes() {
    let dev = gpu();
    let mut rng = Rng::fresh("buffers_round_trip_and_check_sizes");
    let vals: Vec<f64> = (0..777).map(|_| rng.f32() as f64).collect();
    let t = HostTensor::from_f64(DType::F16, &[7, 111], &vals);
    let buf = DeviceBuffer::from_host(&dev, &t).unwrap();
    assert_eq!(buf.len(), t.size_bytes());
    assert_eq!(buf.to_host(DType::F16, &[7, 111]).unwrap(), t);

    let copy = DeviceBuffer::alloc(&dev, buf.len()).unwrap();
    copy.memset(0).unwrap();
    copy.copy_from_device(&buf).unwrap();
    let mut back = HostTensor::zeros(DType::F16, &[777]);
    copy.download(&mut back).unwrap();
    assert_eq!(back.data, t.data);

    copy.memset(0x3c).unwrap();
    assert!(copy.to_host(DType::U8, &[buf.len()]).unwrap().data.iter().all(|&b| b == 0x3c));

    assert!(matches!(buf.to_host(DType::F32, &[777]), Err(CudaError::SizeMismatch { .. })));
    assert!(matches!(buf.copy_from_host(&[0u8; 3]), Err(CudaError::SizeMismatch { expected: 1554, got: 3, .. })));
    assert!(matches!(DeviceBuffer::alloc(&dev, 6).unwrap().fill_u32(1), Err(CudaError::InvalidArgument(_))));

    let empty = DeviceBuffer::alloc(&dev, 0).unwrap();
    assert!(empty.is_empty() && empty.device_ptr() == 0);
    empty.copy_from_host(&[]).unwrap();
    empty.memset(1).unwrap();

    // Asking for more memory than the device has is an error value.
    let e = expect_err(DeviceBuffer::alloc(&dev, usize::MAX / 2), "a huge allocation");
    assert!(e.to_string().contains("CUDA_ERROR_OUT_OF_MEMORY"), "{e}");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn objects_can_be_used_from_other_threads() {
    let dev = gpu();
    let module = Module::load_ptx(&dev, VADD_PTX).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let (dev, module) = (dev.clone(), module.clone());
            s.spawn(move || {
                let mut rng = Rng::fresh(&format!("thread {t}"));
                run_vadd(&dev, &module, 300 + t * 17, &mut rng);
            });
        }
    });
}
