//! Loads, stores, masks, bounds errors, launch argument checks, atomics.

mod common;

use common::*;
use trident_core::{DType, HostTensor};
use trident_interp::{launch, ErrorKind, InterpArg, InterpOptions};
use trident_ir::*;

/// `z[i] = x[i] + y[i]` for `i < n`, blocks of `block`; with `masked = false` the mask is dropped.
fn add_kernel(dt: DType, block: u32, masked: bool) -> Module {
    let mut k = K::new("add", &[("x_ptr", ptr(dt)), ("y_ptr", ptr(dt)), ("z_ptr", ptr(dt)), ("n", num(DType::I32))]);
    let (x, y, z, n) = (k.arg(0), k.arg(1), k.arg(2), k.arg(3));
    let (offs, mask) = k.offsets(block, n);
    let m = masked.then_some(mask);
    let px = k.ptr_at(x, offs);
    let a = k.src("a = tl.load(x_ptr + offs, mask=mask)").load(px, m, None);
    let py = k.ptr_at(y, offs);
    let b = k.load(py, m, None);
    let s = k.bin(BinaryOp::Add, a, b);
    let pz = k.ptr_at(z, offs);
    k.src("tl.store(z_ptr + offs, s, mask=mask)").store(pz, s, m);
    k.finish()
}

#[test]
fn vector_add_f32_with_masked_tail() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let n = 1000;
    let m = add_kernel(DType::F32, 128, true);
    let x = rng.tensor(DType::F32, &[n], 10.0);
    let y = rng.tensor(DType::F32, &[n], 10.0);
    let mut args = vec![
        InterpArg::Tensor(x.clone()),
        InterpArg::Tensor(y.clone()),
        InterpArg::Tensor(poison(DType::F32, &[n])),
        InterpArg::i32(n as i32),
    ];
    let grid = [n.div_ceil(128) as u32, 1, 1];
    let rep = launch(&m, "add", grid, &mut args, &InterpOptions::default()).unwrap();
    assert_eq!(rep.programs, 8);
    let z = args[2].as_tensor().unwrap();
    for i in 0..n {
        let want = (x.get_f64(i) as f32 + y.get_f64(i) as f32) as f64;
        assert_eq!(z.get_f64(i), want, "element {i}, seed {seed}");
    }
}

#[test]
fn f16_adds_round_to_f16_every_op() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let n = 256;
    let m = add_kernel(DType::F16, 64, true);
    let x = rng.tensor(DType::F16, &[n], 100.0);
    let y = rng.tensor(DType::F16, &[n], 1.0);
    let mut args = vec![
        InterpArg::Tensor(x.clone()),
        InterpArg::Tensor(y.clone()),
        InterpArg::Tensor(poison(DType::F16, &[n])),
        InterpArg::i32(n as i32),
    ];
    launch(&m, "add", [4, 1, 1], &mut args, &InterpOptions { threads: Some(1), ..Default::default() }).unwrap();
    let z = args[2].as_tensor().unwrap();
    for i in 0..n {
        let want = half::f16::from_f64(x.get_f64(i) + y.get_f64(i)).to_f64();
        assert_eq!(z.get_f64(i), want, "element {i}, seed {seed}");
    }
}

#[test]
fn out_of_bounds_store_names_line_buffer_index_and_leaves_buffers_unchanged() {
    let n = 1000;
    let m = add_kernel(DType::F32, 128, false);
    let mut rng = Rng::from_time();
    let x = rng.tensor(DType::F32, &[n], 1.0);
    let z0 = poison(DType::F32, &[n]);
    let mut args = vec![
        InterpArg::Tensor(x.clone()),
        InterpArg::Tensor(HostTensor::zeros(DType::F32, &[1024])), // y is big enough
        InterpArg::Tensor(z0.clone()),
        InterpArg::i32(n as i32),
    ];
    let err = launch(&m, "add", [8, 1, 1], &mut args, &InterpOptions::default()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::OutOfBounds);
    // The first unmasked out-of-bounds access is the load of x in program 7, element 104 (index 1000).
    assert!(
        err.message().contains("out-of-bounds load: index 1000 of buffer `x_ptr` (1000 elements of f32)"),
        "{}",
        err.message()
    );
    assert!(err.message().contains("program (7, 0, 0), element [104]"), "{}", err.message());
    let text = err.render(&m);
    assert!(text.contains("k.py:"), "{text}");
    assert!(text.contains("a = tl.load(x_ptr + offs, mask=mask)"), "{text}");
    assert!(text.contains('^'), "{text}");
    // The caller's buffers are as they were, although programs 0..7 stored successfully.
    assert_eq!(args[2].as_tensor().unwrap(), &z0);
    assert_eq!(args[0].as_tensor().unwrap(), &x);
}

#[test]
fn errors_are_deterministic_lowest_program_wins() {
    // Every program stores out of bounds; the reported one is always program 0's.
    let m = add_kernel(DType::F32, 64, false);
    for _ in 0..5 {
        let mut args = vec![
            InterpArg::Tensor(HostTensor::zeros(DType::F32, &[4096])),
            InterpArg::Tensor(HostTensor::zeros(DType::F32, &[4096])),
            InterpArg::Tensor(HostTensor::zeros(DType::F32, &[10])),
            InterpArg::i32(0),
        ];
        let err = launch(&m, "add", [64, 1, 1], &mut args, &InterpOptions::default()).unwrap_err();
        assert!(err.message().contains("index 10 of buffer `z_ptr`"), "{}", err.message());
        assert!(err.message().contains("program (0, 0, 0), element [10]"), "{}", err.message());
    }
}

#[test]
fn masked_lanes_never_touch_memory_and_get_other() {
    // y[i] = load(x + i - 2, mask = 0 <= i-2 < n, other = -7): lanes before and after x are masked.
    let mut k = K::new("shift", &[("x", ptr(DType::I32)), ("y", ptr(DType::I32)), ("n", num(DType::I32))]);
    let (x, y, n) = (k.arg(0), k.arg(1), k.arg(2));
    let r = k.arange(16);
    let two = k.i32(2);
    let two_s = k.splat(two, &[16]);
    let src = k.bin(BinaryOp::Sub, r, two_s);
    let zero = k.i32(0);
    let zs = k.splat(zero, &[16]);
    let ns = k.splat(n, &[16]);
    let ge = k.cmp(CmpPred::Ge, src, zs);
    let lt = k.cmp(CmpPred::Lt, src, ns);
    let mask = k.bin(BinaryOp::And, ge, lt);
    let other = k.const_t(Const::Int(-7), ten(&[16], DType::I32));
    let px = k.ptr_at(x, src);
    let v = k.load(px, Some(mask), Some(other));
    let py = k.ptr_at(y, r);
    k.store(py, v, None);
    let m = k.finish();
    let xs = HostTensor::from_f64(DType::I32, &[10], &(0..10).map(|i| (i * 3 + 1) as f64).collect::<Vec<_>>());
    let mut args = vec![InterpArg::Tensor(xs), InterpArg::Tensor(poison(DType::I32, &[16])), InterpArg::i32(10)];
    launch(&m, "shift", [1, 1, 1], &mut args, &InterpOptions::default()).unwrap();
    let got = args[1].as_tensor().unwrap().to_f64_vec();
    let want: Vec<f64> =
        (0..16).map(|i: i64| if (2..12).contains(&i) { ((i - 2) * 3 + 1) as f64 } else { -7.0 }).collect();
    assert_eq!(got, want);
}

#[test]
fn launch_arguments_are_checked_by_name() {
    let m = add_kernel(DType::F32, 64, true);
    let t = || InterpArg::Tensor(HostTensor::zeros(DType::F32, &[4]));
    let mut few = vec![t(), t()];
    let e = launch(&m, "add", [1, 1, 1], &mut few, &InterpOptions::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Launch);
    assert!(e.message().contains("takes 4 arguments (x_ptr, y_ptr, z_ptr, n), got 2"), "{}", e.message());

    let mut wrong = vec![t(), InterpArg::Tensor(HostTensor::zeros(DType::F16, &[4])), t(), InterpArg::i32(4)];
    let e = launch(&m, "add", [1, 1, 1], &mut wrong, &InterpOptions::default()).unwrap_err();
    assert!(e.message().contains("argument 1 (`y_ptr`)"), "{}", e.message());
    assert!(e.message().contains("expected a tensor of f32, got a tensor of f16"), "{}", e.message());

    let mut scalar = vec![t(), t(), t(), InterpArg::i64(4)];
    let e = launch(&m, "add", [1, 1, 1], &mut scalar, &InterpOptions::default()).unwrap_err();
    assert!(
        e.message().contains("argument 3 (`n`)") && e.message().contains("expected a i32 scalar"),
        "{}",
        e.message()
    );

    let e = launch(&m, "nope", [1, 1, 1], &mut scalar, &InterpOptions::default()).unwrap_err();
    assert!(e.message().contains("no kernel `nope`"), "{}", e.message());
}

#[test]
fn histogram_with_atomic_add_counts_exactly() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let (n, bins, block) = (20_000usize, 37usize, 256u32);
    let mut k = K::new("hist", &[("x", ptr(DType::I32)), ("h", ptr(DType::I32)), ("n", num(DType::I32))]);
    let (x, h, nv) = (k.arg(0), k.arg(1), k.arg(2));
    let (offs, mask) = k.offsets(block, nv);
    let px = k.ptr_at(x, offs);
    let v = k.load(px, Some(mask), None);
    let ph = k.ptr_at(h, v);
    let one = k.const_t(Const::Int(1), ten(&[block], DType::I32));
    k.atomic(RmwOp::Add, ph, one, Some(mask));
    let m = k.finish();
    let vals: Vec<f64> = (0..n).map(|_| rng.below(bins as u64) as f64).collect();
    let mut want = vec![0f64; bins];
    for &v in &vals {
        want[v as usize] += 1.0;
    }
    let mut args = vec![
        InterpArg::Tensor(HostTensor::from_f64(DType::I32, &[n], &vals)),
        InterpArg::Tensor(HostTensor::zeros(DType::I32, &[bins])),
        InterpArg::i32(n as i32),
    ];
    let grid = [n.div_ceil(block as usize) as u32, 1, 1];
    launch(&m, "hist", grid, &mut args, &InterpOptions { threads: Some(4), ..Default::default() }).unwrap();
    assert_eq!(args[1].as_tensor().unwrap().to_f64_vec(), want, "seed {seed}");
}

#[test]
fn atomic_returns_old_values_in_index_order_and_cas_works() {
    // One program: old = atomic_add(c + [0,0,0,0], [1,2,3,4]) → olds 0,1,3,6; then cas(c, 10, 99) → 10.
    let mut k = K::new("atom", &[("c", ptr(DType::F32)), ("o", ptr(DType::F32)), ("q", ptr(DType::I32))]);
    let (c, o, q) = (k.arg(0), k.arg(1), k.arg(2));
    let zero = k.const_t(Const::Int(0), ten(&[4], DType::I32));
    let pc = k.ptr_at(c, zero);
    let r = k.arange(4);
    let one = k.const_t(Const::Int(1), ten(&[4], DType::I32));
    let r1 = k.bin(BinaryOp::Add, r, one);
    let vals = k.cast(r1, DType::F32);
    let old = k.atomic(RmwOp::Add, pc, vals, None);
    let po = k.ptr_at(o, r);
    k.store(po, old, None);
    let ten_ = k.cf(10.0, DType::F32);
    let nn = k.cf(99.0, DType::F32);
    let prev = k.op1(OpKind::AtomicCas { sem: MemSem::AcqRel, scope: MemScope::Gpu }, &[c, ten_, nn], num(DType::F32));
    let three = k.i32(3);
    let q3 = k.addptr(q, three);
    let prev_i = k.cast(prev, DType::I32);
    k.store(q3, prev_i, None);
    let m = k.finish();
    let mut args = vec![
        InterpArg::Tensor(HostTensor::zeros(DType::F32, &[1])),
        InterpArg::Tensor(poison(DType::F32, &[4])),
        InterpArg::Tensor(HostTensor::zeros(DType::I32, &[4])),
    ];
    launch(&m, "atom", [1, 1, 1], &mut args, &InterpOptions::default()).unwrap();
    assert_eq!(args[1].as_tensor().unwrap().to_f64_vec(), vec![0.0, 1.0, 3.0, 6.0]);
    assert_eq!(args[0].as_tensor().unwrap().to_f64_vec(), vec![99.0]);
    assert_eq!(args[2].as_tensor().unwrap().to_f64_vec(), vec![0.0, 0.0, 0.0, 10.0]);
}

#[test]
fn float_atomic_add_across_programs_sums_everything() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    // Each of 64 programs adds its block of 32 small integers (exact in f32) to one cell.
    let mut k = K::new("sum", &[("x", ptr(DType::F32)), ("s", ptr(DType::F32)), ("n", num(DType::I32))]);
    let (x, s, nv) = (k.arg(0), k.arg(1), k.arg(2));
    let (offs, mask) = k.offsets(32, nv);
    let px = k.ptr_at(x, offs);
    let v = k.load(px, Some(mask), None);
    let zero = k.const_t(Const::Int(0), ten(&[32], DType::I32));
    let ps = k.ptr_at(s, zero);
    k.atomic(RmwOp::Add, ps, v, Some(mask));
    let m = k.finish();
    let x = rng.tensor(DType::F32, &[2048], 100.0).to_f64_vec().iter().map(|v| v.round()).collect::<Vec<_>>();
    let want: f64 = x.iter().sum();
    let mut args = vec![
        InterpArg::Tensor(HostTensor::from_f64(DType::F32, &[2048], &x)),
        InterpArg::Tensor(HostTensor::zeros(DType::F32, &[1])),
        InterpArg::i32(2048),
    ];
    launch(&m, "sum", [64, 1, 1], &mut args, &InterpOptions::default()).unwrap();
    assert_eq!(args[1].as_tensor().unwrap().get_f64(0), want, "seed {seed}");
}

#[test]
fn misaligned_and_invalid_pointers_are_errors() {
    // int_to_ptr(ptr_to_int(x) + 2) as ptr<f32>: misaligned; int_to_ptr(8): invalid.
    for (delta, kind) in [(2i64, ErrorKind::Misaligned), (-(1i64 << 40), ErrorKind::InvalidPointer)] {
        let mut k = K::new("mis", &[("x", ptr(DType::F32))]);
        let x = k.arg(0);
        let xi = k.cast_with(x, DType::I64, CastKind::PtrToInt, Rounding::Rtne);
        let d = k.ci(delta, DType::I64);
        let yi = k.bin(BinaryOp::Add, xi, d);
        let y = k.cast_with(yi, Elem::ptr(DType::F32), CastKind::IntToPtr, Rounding::Rtne);
        k.load(y, None, None);
        let m = k.finish();
        let mut args = vec![InterpArg::Tensor(HostTensor::zeros(DType::F32, &[4]))];
        let e = launch(&m, "mis", [1, 1, 1], &mut args, &InterpOptions::default()).unwrap_err();
        assert_eq!(e.kind, kind, "{}", e.message());
    }
}

#[test]
fn multi_dim_grid_program_ids() {
    // out[z][y][x] = x + 10*y + 100*z + 1000*num_programs(0)
    let mut k = K::new("grid", &[("o", ptr(DType::I32))]);
    let o = k.arg(0);
    let (px, py, pz) = (k.pid(0), k.pid(1), k.pid(2));
    let nx = k.op1(OpKind::NumPrograms { axis: 0 }, &[], num(DType::I32));
    let ny = k.op1(OpKind::NumPrograms { axis: 1 }, &[], num(DType::I32));
    let (c10, c100, c1000) = (k.i32(10), k.i32(100), k.i32(1000));
    let a = k.bin(BinaryOp::Mul, py, c10);
    let b = k.bin(BinaryOp::Mul, pz, c100);
    let c = k.bin(BinaryOp::Mul, nx, c1000);
    let s = k.bin(BinaryOp::Add, px, a);
    let s = k.bin(BinaryOp::Add, s, b);
    let v = k.bin(BinaryOp::Add, s, c);
    let row = k.bin(BinaryOp::Mul, pz, ny);
    let row = k.bin(BinaryOp::Add, row, py);
    let idx = k.bin(BinaryOp::Mul, row, nx);
    let idx = k.bin(BinaryOp::Add, idx, px);
    let p = k.addptr(o, idx);
    k.store(p, v, None);
    let m = k.finish();
    let mut args = vec![InterpArg::Tensor(poison(DType::I32, &[2 * 3 * 4]))];
    launch(&m, "grid", [4, 3, 2], &mut args, &InterpOptions::default()).unwrap();
    let got = args[0].as_tensor().unwrap().to_f64_vec();
    let mut want = vec![];
    for z in 0..2 {
        for y in 0..3 {
            for x in 0..4 {
                want.push((x + 10 * y + 100 * z + 4000) as f64);
            }
        }
    }
    assert_eq!(got, want);
}

#[test]
fn ill_typed_ir_is_an_error_not_a_panic() {
    // add of f32 values declared to give i32; a mask of the wrong length; a store of i32 through ptr<f32>.
    type Build = fn(&mut K, Value, Value);
    let cases: [(&str, Build); 3] = [
        ("computed float values for a result of type i32", |k, x, _| {
            let v = k.load(x, None, None);
            k.op1(OpKind::Binary(BinaryOp::Add), &[v, v], num(DType::I32));
        }),
        ("different shapes", |k, x, _| {
            let r = k.arange(4);
            let p = k.ptr_at(x, r);
            let m = k.const_t(Const::Bool(true), ten(&[3], DType::I1));
            k.op1(
                OpKind::Load { cache: CacheModifier::None, evict: EvictionPolicy::Normal, volatile: false },
                &[p, m],
                ten(&[4], DType::F32),
            );
        }),
        ("store of i32 values through a pointer to f32", |k, x, n| {
            k.store(x, n, None);
        }),
    ];
    for (want, build) in cases {
        let mut k = K::new("bad", &[("x", ptr(DType::F32)), ("n", num(DType::I32))]);
        let (x, n) = (k.arg(0), k.arg(1));
        build(&mut k, x, n);
        let m = k.finish_unverified();
        let mut args = vec![InterpArg::Tensor(HostTensor::zeros(DType::F32, &[4])), InterpArg::i32(1)];
        let e = launch(&m, "bad", [1, 1, 1], &mut args, &InterpOptions::default()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unsupported, "{}", e.message());
        assert!(e.message().contains(want), "{}", e.message());
    }
}

#[test]
fn narrow_float_and_wide_int_memory_round_trips() {
    // y = x * 2 for fp8 (e4m3, e5m2) and bf16 buffers; loads decode, stores encode exactly.
    for dt in [DType::F8E4M3, DType::F8E5M2, DType::BF16] {
        let mut k = K::new("dbl", &[("x", ptr(dt)), ("y", ptr(dt))]);
        let (x, y) = (k.arg(0), k.arg(1));
        let r = k.arange(8);
        let px = k.ptr_at(x, r);
        let v = k.load(px, None, None);
        let two = k.const_t(Const::Float(2.0), ten(&[8], dt));
        let w = k.bin(BinaryOp::Mul, v, two);
        let py = k.ptr_at(y, r);
        k.store(py, w, None);
        let m = k.finish();
        let vals = [0.5, -1.5, 3.0, 0.0, -0.25, 7.0, 100.0, 300.0];
        let xt = HostTensor::from_f64(dt, &[8], &vals);
        let mut args = vec![InterpArg::Tensor(xt.clone()), InterpArg::Tensor(poison(dt, &[8]))];
        launch(&m, "dbl", [1, 1, 1], &mut args, &InterpOptions::default()).unwrap();
        let got = args[1].as_tensor().unwrap().to_f64_vec();
        for (i, g) in got.iter().enumerate() {
            let doubled = xt.get_f64(i) * 2.0;
            // e4m3 saturates at 448 (300*2 = 600); the others represent every doubled value.
            let want = if dt == DType::F8E4M3 { doubled.clamp(-448.0, 448.0) } else { doubled };
            assert_eq!(*g, want, "{dt} [{i}]");
        }
    }
}

#[test]
fn atomics_on_every_width() {
    // bf16 add, u32 max (unsigned compare), i64 add, f64 min, i8 xchg — one lane each, old values returned.
    let cases: [(DType, RmwOp, f64, f64, f64); 5] = [
        (DType::BF16, RmwOp::Add, 1.5, 0.25, 1.75),
        (DType::U32, RmwOp::Max, 5.0, 4294967295.0, 4294967295.0),
        (DType::I64, RmwOp::Add, -((1u64 << 40) as f64), 7.0, -((1u64 << 40) as f64) + 7.0),
        (DType::F64, RmwOp::Min, 2.5, -1.0, -1.0),
        (DType::I8, RmwOp::Xchg, -3.0, 100.0, 100.0),
    ];
    for (dt, op, init, val, want) in cases {
        let mut k = K::new("at", &[("c", ptr(dt)), ("o", ptr(dt)), ("v", num(dt))]);
        let (c, o, v) = (k.arg(0), k.arg(1), k.arg(2));
        let old = k.atomic(op, c, v, None);
        k.store(o, old, None);
        let m = k.finish();
        let v_arg = {
            let t = HostTensor::from_f64(dt, &[1], &[val]);
            InterpArg::Scalar { dtype: dt, bits: t.get_bits(0) }
        };
        let mut args = vec![
            InterpArg::Tensor(HostTensor::from_f64(dt, &[1], &[init])),
            InterpArg::Tensor(poison(dt, &[1])),
            v_arg,
        ];
        launch(&m, "at", [1, 1, 1], &mut args, &InterpOptions::default()).unwrap();
        assert_eq!(args[0].as_tensor().unwrap().get_f64(0), want, "{dt} {op:?}");
        assert_eq!(args[1].as_tensor().unwrap().get_f64(0), init, "{dt} {op:?} old value");
    }
}
