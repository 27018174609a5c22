//! Block-level ops: shapes, dot, reduce, scan; control flow; print and assert.

mod common;

use common::*;
use trident_core::{DType, HostTensor};
use trident_interp::{launch, ErrorKind, InterpArg, InterpOptions};
use trident_ir::*;

/// Pointers `p + i*stride + j` for an `r x c` tile.
fn ptr2d(k: &mut K, p: Value, r: u32, c: u32, stride: Value) -> Value {
    let ar = k.arange(r);
    let ac = k.arange(c);
    let e0 = k.expand(ar, 1);
    let e1 = k.expand(ac, 0);
    let st = k.splat(stride, &[r, 1]);
    let ro = k.bin(BinaryOp::Mul, e0, st);
    let rb = k.bcast(ro, &[r, c]);
    let cb = k.bcast(e1, &[r, c]);
    let off = k.bin(BinaryOp::Add, rb, cb);
    k.ptr_at(p, off)
}

fn reshape(k: &mut K, v: Value, shape: &[u32]) -> Value {
    let e = k.ty(v).elem();
    k.op1(OpKind::Reshape { can_reorder: false }, &[v], Type::tensor(shape, e))
}

/// Stores a block (any shape) flat into `out`.
fn store_flat(k: &mut K, out: Value, v: Value) {
    let n = k.ty(v).numel() as u32;
    let flat = if k.ty(v).shape().len() == 1 { v } else { reshape(k, v, &[n]) };
    let r = k.arange(n);
    let p = k.ptr_at(out, r);
    k.store(p, flat, None);
}

fn run1(m: &Module, args: &mut [InterpArg]) {
    launch(m, m.funcs[0].name.clone().as_str(), [1, 1, 1], args, &InterpOptions::default()).unwrap();
}

#[test]
fn shape_ops_move_elements_row_major() {
    let mut k = K::new("shapes", &[("o", ptr(DType::I32))]);
    let o = k.arg(0);
    let r6 = k.arange(6);
    let m23 = reshape(&mut k, r6, &[2, 3]);
    let t32 = k.op1(OpKind::Trans { perm: vec![1, 0] }, &[m23], ten(&[3, 2], DType::I32));
    let a3 = k.arange(3);
    let c10 = k.const_t(Const::Int(10), ten(&[3], DType::I32));
    let b3 = k.bin(BinaryOp::Add, a3, c10);
    let j = k.op1(OpKind::Join, &[a3, b3], ten(&[3, 2], DType::I32));
    let parts = k.op(OpKind::Split, &[j], &[ten(&[3], DType::I32), ten(&[3], DType::I32)]);
    let cat = k.op1(OpKind::Cat, &[parts[1], parts[0]], ten(&[6], DType::I32));
    let e = k.expand(a3, 0); // [1,3]
    let bc = k.bcast(e, &[2, 3]);
    let all = [t32, j, cat, bc];
    let mut off = 0i64;
    for v in all {
        let n = k.ty(v).numel() as i64;
        let base = k.i32(off);
        let ob = k.addptr(o, base);
        store_flat(&mut k, ob, v);
        off += n;
    }
    let m = k.finish();
    let mut args = vec![InterpArg::Tensor(poison(DType::I32, &[24]))];
    run1(&m, &mut args);
    let got = args[0].as_tensor().unwrap().to_f64_vec();
    let want = [
        [0, 3, 1, 4, 2, 5],    // trans
        [0, 10, 1, 11, 2, 12], // join
        [10, 11, 12, 0, 1, 2], // cat(split(join)[1], split(join)[0])
        [0, 1, 2, 0, 1, 2],    // broadcast [1,3] -> [2,3]
    ];
    let want: Vec<f64> = want.iter().flatten().map(|&v| v as f64).collect();
    assert_eq!(got, want);
}

/// `c = a @ b` for one tile, a: m x kk, b: kk x n of `din`, c of `dacc`.
fn dot_kernel(din: DType, dacc: DType, m: u32, kk: u32, n: u32, precision: InputPrecision) -> Module {
    let mut k = K::new("dot", &[("a", ptr(din)), ("b", ptr(din)), ("c", ptr(dacc))]);
    let (a, b, c) = (k.arg(0), k.arg(1), k.arg(2));
    let sk = k.i32(kk as i64);
    let sn = k.i32(n as i64);
    let pa = ptr2d(&mut k, a, m, kk, sk);
    let ta = k.load(pa, None, None);
    let pb = ptr2d(&mut k, b, kk, n, sn);
    let tb = k.load(pb, None, None);
    let zero = if dacc.is_float() { Const::Float(0.0) } else { Const::Int(0) };
    let acc = k.const_t(zero, ten(&[m, n], dacc));
    let d = k.op1(OpKind::Dot { precision, max_num_imprecise_acc: 0 }, &[ta, tb, acc], ten(&[m, n], dacc));
    let pc = ptr2d(&mut k, c, m, n, sn);
    k.store(pc, d, None);
    k.finish()
}

fn reference(a: &[f64], b: &[f64], m: usize, kk: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut c = vec![0.0; m * n];
    let mut mag = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            for p in 0..kk {
                c[i * n + j] += a[i * kk + p] * b[p * n + j];
                mag[i * n + j] += (a[i * kk + p] * b[p * n + j]).abs();
            }
        }
    }
    (c, mag)
}

#[test]
fn dot_f16_matches_f64_reference() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let (m, kk, n) = (32usize, 64usize, 16usize);
    for din in [DType::F16, DType::BF16] {
        let a = rng.tensor(din, &[m, kk], 2.0);
        let b = rng.tensor(din, &[kk, n], 2.0);
        let module = dot_kernel(din, DType::F32, m as u32, kk as u32, n as u32, InputPrecision::Tf32);
        let mut args = vec![
            InterpArg::Tensor(a.clone()),
            InterpArg::Tensor(b.clone()),
            InterpArg::Tensor(poison(DType::F32, &[m, n])),
        ];
        run1(&module, &mut args);
        let got = args[2].as_tensor().unwrap().to_f64_vec();
        let (want, mag) = reference(&a.to_f64_vec(), &b.to_f64_vec(), m, kk, n);
        for i in 0..m * n {
            // f32 accumulation of exact products: error within a few ulps of the magnitude sum.
            assert!((got[i] - want[i]).abs() <= mag[i] * 1e-6, "{din} [{i}] {} vs {}, seed {seed}", got[i], want[i]);
        }
    }
}

/// The tensor cores' view of an f32 in a tf32 dot: the low 13 mantissa bits dropped.
fn tf32(x: f64) -> f64 {
    f32::from_bits((x as f32).to_bits() & !0x1fff) as f64
}

#[test]
fn dot_f32_tf32_truncates_inputs_and_ieee_does_not() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let (m, kk, n) = (16usize, 16usize, 16usize);
    let a = rng.tensor(DType::F32, &[m, kk], 1.0);
    let b = rng.tensor(DType::F32, &[kk, n], 1.0);
    for (p, round) in [(InputPrecision::Tf32, true), (InputPrecision::Ieee, false)] {
        let module = dot_kernel(DType::F32, DType::F32, m as u32, kk as u32, n as u32, p);
        let mut args = vec![
            InterpArg::Tensor(a.clone()),
            InterpArg::Tensor(b.clone()),
            InterpArg::Tensor(poison(DType::F32, &[m, n])),
        ];
        run1(&module, &mut args);
        let got = args[2].as_tensor().unwrap().to_f64_vec();
        let r = |v: Vec<f64>| if round { v.into_iter().map(tf32).collect() } else { v };
        let (want, mag) = reference(&r(a.to_f64_vec()), &r(b.to_f64_vec()), m, kk, n);
        let (other, _) = reference(
            &r(a.to_f64_vec()).iter().map(|&x| if round { x } else { tf32(x) }).collect::<Vec<_>>(),
            &b.to_f64_vec(),
            m,
            kk,
            n,
        );
        let mut closer = 0;
        for i in 0..m * n {
            assert!((got[i] - want[i]).abs() <= mag[i] * 1e-6, "{p:?} [{i}], seed {seed}");
            if (got[i] - want[i]).abs() < (got[i] - other[i]).abs() {
                closer += 1;
            }
        }
        // The rounding is visible: most entries are nearer the matching reference than the other.
        assert!(closer > m * n / 2, "{p:?}: {closer}, seed {seed}");
    }
}

#[test]
fn dot_with_f16_accumulator_rounds_every_16_k() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let (m, kk, n) = (16usize, 80usize, 16usize);
    // Multiples of 1/64 below 2 in magnitude: every product and every sum of 16 is exact in
    // f32 and f64, so the model below and the interpreter agree bit for bit whatever order
    // they sum in (with arbitrary f16 inputs the sums round, and a sum landing next to an
    // f16 tie could round either way: a flaky test). f16 rounding of the accumulator still
    // shows: its values need up to 7 + 6 bits after the point.
    let mut grid = |shape: &[usize]| {
        let v: Vec<f64> = (0..shape.iter().product()).map(|_| (rng.below(255) as f64 - 127.0) / 64.0).collect();
        HostTensor::from_f64(DType::F16, shape, &v)
    };
    let a = grid(&[m, kk]);
    let b = grid(&[kk, n]);
    let module = dot_kernel(DType::F16, DType::F16, m as u32, kk as u32, n as u32, InputPrecision::Tf32);
    let mut args = vec![
        InterpArg::Tensor(a.clone()),
        InterpArg::Tensor(b.clone()),
        InterpArg::Tensor(poison(DType::F16, &[m, n])),
    ];
    run1(&module, &mut args);
    let got = args[2].as_tensor().unwrap().to_f64_vec();
    let (av, bv) = (a.to_f64_vec(), b.to_f64_vec());
    let f16 = |x: f64| half::f16::from_f64(x).to_f64();
    let mut once_rounded_differs = 0;
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0;
            for k0 in (0..kk).step_by(16) {
                let part: f64 = (k0..k0 + 16).map(|p| av[i * kk + p] * bv[p * n + j]).sum();
                acc = f16(acc + part);
            }
            assert_eq!(got[i * n + j], acc, "[{i},{j}], seed {seed}");
            let exact: f64 = (0..kk).map(|p| av[i * kk + p] * bv[p * n + j]).sum();
            once_rounded_differs += (f16(exact) != acc) as usize;
        }
    }
    // The model is distinguishable from rounding once at the end.
    assert!(once_rounded_differs > 0, "seed {seed}");
}

#[test]
fn dot_int8_accumulates_exactly_in_i32() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let (m, kk, n) = (16usize, 32usize, 16usize);
    let a = rng.tensor(DType::I8, &[m, kk], 127.0);
    let b = rng.tensor(DType::I8, &[kk, n], 127.0);
    let module = dot_kernel(DType::I8, DType::I32, m as u32, kk as u32, n as u32, InputPrecision::Ieee);
    let mut args = vec![
        InterpArg::Tensor(a.clone()),
        InterpArg::Tensor(b.clone()),
        InterpArg::Tensor(poison(DType::I32, &[m, n])),
    ];
    run1(&module, &mut args);
    let (want, _) = reference(&a.to_f64_vec(), &b.to_f64_vec(), m, kk, n);
    assert_eq!(args[2].as_tensor().unwrap().to_f64_vec(), want, "seed {seed}");
}

#[test]
fn batched_dot() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let mut k = K::new("bdot", &[("a", ptr(DType::F16)), ("b", ptr(DType::F16)), ("c", ptr(DType::F32))]);
    let (a, b, c) = (k.arg(0), k.arg(1), k.arg(2));
    let r = k.arange(64);
    let pa = k.ptr_at(a, r);
    let la = k.load(pa, None, None);
    let ta = reshape(&mut k, la, &[2, 4, 8]);
    let pb = k.ptr_at(b, r);
    let lb = k.load(pb, None, None);
    let tb = reshape(&mut k, lb, &[2, 8, 4]);
    let acc = k.const_t(Const::Float(1.0), ten(&[2, 4, 4], DType::F32));
    let d = k.op1(
        OpKind::Dot { precision: InputPrecision::Tf32, max_num_imprecise_acc: 0 },
        &[ta, tb, acc],
        ten(&[2, 4, 4], DType::F32),
    );
    store_flat(&mut k, c, d);
    let m = k.finish();
    let at = rng.tensor(DType::F16, &[64], 1.0);
    let bt = rng.tensor(DType::F16, &[64], 1.0);
    let mut args = vec![
        InterpArg::Tensor(at.clone()),
        InterpArg::Tensor(bt.clone()),
        InterpArg::Tensor(poison(DType::F32, &[32])),
    ];
    run1(&m, &mut args);
    let got = args[2].as_tensor().unwrap().to_f64_vec();
    let (av, bv) = (at.to_f64_vec(), bt.to_f64_vec());
    for bi in 0..2 {
        let (want, _) = reference(&av[bi * 32..], &bv[bi * 32..], 4, 8, 4);
        for i in 0..16 {
            assert!((got[bi * 16 + i] - (want[i] + 1.0)).abs() < 1e-5, "batch {bi} [{i}], seed {seed}");
        }
    }
}

/// Loads an `r x c` f32 tile from `x` (row stride c).
fn load_tile(k: &mut K, x: Value, r: u32, c: u32) -> Value {
    let s = k.i32(c as i64);
    let p = ptr2d(k, x, r, c, s);
    k.load(p, None, None)
}

#[test]
fn reductions_along_each_axis_use_pairwise_order() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let (r, c) = (8u32, 100u32);
    let mut k = K::new(
        "red",
        &[("x", ptr(DType::F32)), ("s0", ptr(DType::F32)), ("s1", ptr(DType::F32)), ("m1", ptr(DType::F32))],
    );
    let (x, s0, s1, m1) = (k.arg(0), k.arg(1), k.arg(2), k.arg(3));
    let t = load_tile(&mut k, x, r, c);
    let a0 = k.reduce(t, 0, BinaryOp::Add);
    let a1 = k.reduce(t, 1, BinaryOp::Add);
    let mx = k.reduce(t, 1, BinaryOp::Max);
    // The same sum through a two-op region (`(a + b) * 1`): the vectorized region path,
    // which must combine in the same order as the single-op fast path.
    let red = k.raw(OpKind::Reduce { axis: 1 }, &[t], &[ten(&[r], DType::F32)]);
    k.region(red, &[num(DType::F32), num(DType::F32)], OpKind::Yield, |k, a| {
        let s = k.bin(BinaryOp::Add, a[0], a[1]);
        let one = k.cf(1.0, DType::F32);
        vec![k.bin(BinaryOp::Mul, s, one)]
    });
    let a1_region = k.results(red)[0];
    let same = k.cmp(CmpPred::Eq, a1_region, a1);
    let all_same = k.reduce(same, 0, BinaryOp::And);
    k.op(OpKind::Assert { msg: "region sum differs from fast sum".into() }, &[all_same], &[]);
    store_flat(&mut k, s0, a0);
    store_flat(&mut k, s1, a1);
    store_flat(&mut k, m1, mx);
    let m = k.finish();
    let xt = rng.tensor(DType::F32, &[r as usize, c as usize], 10.0);
    let mut args = vec![
        InterpArg::Tensor(xt.clone()),
        InterpArg::Tensor(poison(DType::F32, &[c as usize])),
        InterpArg::Tensor(poison(DType::F32, &[r as usize])),
        InterpArg::Tensor(poison(DType::F32, &[r as usize])),
    ];
    run1(&m, &mut args);
    let xv: Vec<f32> = xt.to_f64_vec().iter().map(|&v| v as f32).collect();
    // The documented order: combine row i with row i + ceil(n/2) until one is left.
    fn pairwise(mut v: Vec<f32>, f: fn(f32, f32) -> f32) -> f32 {
        while v.len() > 1 {
            let h = v.len().div_ceil(2);
            let n = v.len();
            for i in 0..n - h {
                v[i] = f(v[i], v[i + h]);
            }
            v.truncate(h);
        }
        v[0]
    }
    let (c, r) = (c as usize, r as usize);
    for j in 0..c {
        let col: Vec<f32> = (0..r).map(|i| xv[i * c + j]).collect();
        assert_eq!(args[1].as_tensor().unwrap().get_f64(j) as f32, pairwise(col, |a, b| a + b), "seed {seed}");
    }
    for i in 0..r {
        let row = xv[i * c..(i + 1) * c].to_vec();
        assert_eq!(args[2].as_tensor().unwrap().get_f64(i) as f32, pairwise(row.clone(), |a, b| a + b), "seed {seed}");
        let want = row.iter().cloned().fold(f32::MIN, f32::max);
        assert_eq!(args[3].as_tensor().unwrap().get_f64(i) as f32, want, "seed {seed}");
    }
}

#[test]
fn argmax_with_a_custom_two_value_combine_region() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let n = 64u32;
    let mut k = K::new("argmax", &[("x", ptr(DType::F32)), ("o", ptr(DType::I32))]);
    let (x, o) = (k.arg(0), k.arg(1));
    let r = k.arange(n);
    let p = k.ptr_at(x, r);
    let v = k.load(p, None, None);
    let red = k.raw(OpKind::Reduce { axis: 0 }, &[v, r], &[num(DType::F32), num(DType::I32)]);
    let (f, i) = (num(DType::F32), num(DType::I32));
    k.region(red, &[f.clone(), i.clone(), f, i], OpKind::Yield, |k, a| {
        let (v1, i1, v2, i2) = (a[0], a[1], a[2], a[3]);
        let gt = k.cmp(CmpPred::Gt, v1, v2);
        let eq = k.cmp(CmpPred::Eq, v1, v2);
        let lt = k.cmp(CmpPred::Lt, i1, i2);
        let tie = k.bin(BinaryOp::And, eq, lt);
        let keep = k.bin(BinaryOp::Or, gt, tie);
        vec![k.select(keep, v1, v2), k.select(keep, i1, i2)]
    });
    let idx = k.results(red)[1];
    k.store(o, idx, None);
    let m = k.finish();
    for _ in 0..5 {
        // Values from a small set so ties happen: the first index of the max must win.
        let vals: Vec<f64> = (0..n).map(|_| rng.below(8) as f64).collect();
        let mut args = vec![
            InterpArg::Tensor(HostTensor::from_f64(DType::F32, &[n as usize], &vals)),
            InterpArg::Tensor(poison(DType::I32, &[1])),
        ];
        run1(&m, &mut args);
        let max = vals.iter().cloned().fold(f64::MIN, f64::max);
        let want = vals.iter().position(|&v| v == max).unwrap();
        assert_eq!(args[1].as_tensor().unwrap().get_f64(0), want as f64, "{vals:?}, seed {seed}");
    }
}

#[test]
fn combine_region_with_control_flow_runs_element_by_element() {
    // max via `if a > b { a } else { b }`: not elementwise, so the general path runs it.
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let mut k = K::new("ifmax", &[("x", ptr(DType::I32)), ("o", ptr(DType::I32))]);
    let (x, o) = (k.arg(0), k.arg(1));
    let t = load_tile(&mut k, x, 4, 16);
    let red = k.raw(OpKind::Reduce { axis: 1 }, &[t], &[ten(&[4], DType::I32)]);
    k.region(red, &[num(DType::I32), num(DType::I32)], OpKind::Yield, |k, a| {
        let gt = k.cmp(CmpPred::Gt, a[0], a[1]);
        let (p, q) = (a[0], a[1]);
        k.if_else(gt, &[num(DType::I32)], |_| vec![p], |_| vec![q])
    });
    let rv = k.results(red)[0];
    store_flat(&mut k, o, rv);
    let m = k.finish();
    let xt = rng.tensor(DType::I32, &[4, 16], 1000.0);
    let mut args = vec![InterpArg::Tensor(xt.clone()), InterpArg::Tensor(poison(DType::I32, &[4]))];
    run1(&m, &mut args);
    let xv = xt.to_f64_vec();
    let want: Vec<f64> = (0..4).map(|i| xv[i * 16..(i + 1) * 16].iter().cloned().fold(f64::MIN, f64::max)).collect();
    assert_eq!(args[1].as_tensor().unwrap().to_f64_vec(), want, "seed {seed}");
}

#[test]
fn scans_are_inclusive_and_sequential() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let mut k = K::new(
        "scan",
        &[("x", ptr(DType::I32)), ("f", ptr(DType::F32)), ("o", ptr(DType::I32)), ("of", ptr(DType::F32))],
    );
    let (x, fx, o, of) = (k.arg(0), k.arg(1), k.arg(2), k.arg(3));
    let t = load_tile(&mut k, x, 4, 16);
    let fwd = k.raw(OpKind::Scan { axis: 1, reverse: false }, &[t], &[ten(&[4, 16], DType::I32)]);
    k.region(fwd, &[num(DType::I32), num(DType::I32)], OpKind::Yield, |k, a| vec![k.bin(BinaryOp::Add, a[0], a[1])]);
    let rev = k.raw(OpKind::Scan { axis: 0, reverse: true }, &[t], &[ten(&[4, 16], DType::I32)]);
    k.region(rev, &[num(DType::I32), num(DType::I32)], OpKind::Yield, |k, a| vec![k.bin(BinaryOp::Add, a[0], a[1])]);
    let (fv, rv) = (k.results(fwd)[0], k.results(rev)[0]);
    store_flat(&mut k, o, fv);
    let base = k.i32(64);
    let o2 = k.addptr(o, base);
    store_flat(&mut k, o2, rv);
    let r = k.arange(256);
    let pf = k.ptr_at(fx, r);
    let fl = k.load(pf, None, None);
    let fs = k.raw(OpKind::Scan { axis: 0, reverse: false }, &[fl], &[ten(&[256], DType::F32)]);
    k.region(fs, &[num(DType::F32), num(DType::F32)], OpKind::Yield, |k, a| vec![k.bin(BinaryOp::Add, a[0], a[1])]);
    let fsv = k.results(fs)[0];
    store_flat(&mut k, of, fsv);
    let m = k.finish();
    let xt = rng.tensor(DType::I32, &[4, 16], 100.0);
    let ft = rng.tensor(DType::F32, &[256], 1.0);
    let mut args = vec![
        InterpArg::Tensor(xt.clone()),
        InterpArg::Tensor(ft.clone()),
        InterpArg::Tensor(poison(DType::I32, &[128])),
        InterpArg::Tensor(poison(DType::F32, &[256])),
    ];
    run1(&m, &mut args);
    let xv = xt.to_f64_vec();
    let got = args[2].as_tensor().unwrap().to_f64_vec();
    for i in 0..4 {
        let mut s = 0.0;
        for j in 0..16 {
            s += xv[i * 16 + j];
            assert_eq!(got[i * 16 + j], s, "row scan [{i},{j}], seed {seed}");
        }
    }
    for j in 0..16 {
        let mut s = 0.0;
        for i in (0..4).rev() {
            s += xv[i * 16 + j];
            assert_eq!(got[64 + i * 16 + j], s, "reverse column scan [{i},{j}], seed {seed}");
        }
    }
    let mut s = 0f32;
    for (i, v) in ft.to_f64_vec().iter().enumerate() {
        s += *v as f32;
        assert_eq!(args[3].as_tensor().unwrap().get_f64(i) as f32, s, "float scan [{i}], seed {seed}");
    }
}

#[test]
fn for_while_and_nested_if() {
    // out[0] = sum of even i in 0..n (for + if); out[1] = Collatz steps of n (while).
    let mut k = K::new("cf", &[("o", ptr(DType::I32)), ("n", num(DType::I32))]);
    let (o, n) = (k.arg(0), k.arg(1));
    let (zero, one, two) = (k.i32(0), k.i32(1), k.i32(2));
    let s = k.for_loop(zero, n, one, &[zero], |k, i, it| {
        let r = k.bin(BinaryOp::Rem, i, two);
        let z = k.i32(0);
        let even = k.cmp(CmpPred::Eq, r, z);
        let acc = it[0];
        k.if_else(even, &[num(DType::I32)], |k| vec![k.bin(BinaryOp::Add, acc, i)], |_| vec![acc])
    })[0];
    k.store(o, s, None);
    let w = k.raw(OpKind::While, &[n, zero], &[num(DType::I32), num(DType::I32)]);
    let i32t = num(DType::I32);
    k.region(w, &[i32t.clone(), i32t.clone()], OpKind::Condition, |k, a| {
        let one = k.i32(1);
        let c = k.cmp(CmpPred::Ne, a[0], one);
        vec![c, a[0], a[1]]
    });
    k.region(w, &[i32t.clone(), i32t], OpKind::Yield, |k, a| {
        let (x, steps) = (a[0], a[1]);
        let (one, two, three) = (k.i32(1), k.i32(2), k.i32(3));
        let r = k.bin(BinaryOp::Rem, x, two);
        let odd = k.cmp(CmpPred::Eq, r, one);
        let nx = k.if_else(
            odd,
            &[num(DType::I32)],
            |k| {
                let t = k.bin(BinaryOp::Mul, x, three);
                vec![k.bin(BinaryOp::Add, t, one)]
            },
            |k| vec![k.bin(BinaryOp::Div, x, two)],
        )[0];
        vec![nx, k.bin(BinaryOp::Add, steps, one)]
    });
    let steps = k.results(w)[1];
    let o1 = k.addptr(o, one);
    k.store(o1, steps, None);
    let m = k.finish();
    for n in [1i32, 7, 27, 100] {
        let mut args = vec![InterpArg::Tensor(poison(DType::I32, &[2])), InterpArg::i32(n)];
        run1(&m, &mut args);
        let mut collatz = (n, 0);
        while collatz.0 != 1 {
            collatz = (if collatz.0 % 2 == 1 { 3 * collatz.0 + 1 } else { collatz.0 / 2 }, collatz.1 + 1);
        }
        let evens: i32 = (0..n).filter(|i| i % 2 == 0).sum();
        assert_eq!(args[0].as_tensor().unwrap().to_f64_vec(), vec![evens as f64, collatz.1 as f64], "n = {n}");
    }
}

#[test]
fn device_print_uses_tritons_format() {
    let mut k = K::new("pr", &[("x", ptr(DType::F32))]);
    let x = k.arg(0);
    let pid = k.pid(0);
    let r = k.arange(3);
    let p = k.ptr_at(x, r);
    let v = k.load(p, None, None);
    k.op(OpKind::Print { prefix: "v".into(), hex: false }, &[v], &[]);
    k.op(OpKind::Print { prefix: "pid".into(), hex: true }, &[pid], &[]);
    let m = k.finish();
    let mut args = vec![InterpArg::Tensor(HostTensor::from_f64(DType::F32, &[3], &[1.5, -2.0, 0.25]))];
    let rep = launch(&m, "pr", [2, 1, 1], &mut args, &InterpOptions::default()).unwrap();
    let want = "pid (0, 0, 0) idx (0) v: 1.500000\npid (0, 0, 0) idx (1) v: -2.000000\npid (0, 0, 0) idx (2) v: 0.250000\n\
                pid (0, 0, 0) idx () pid: 0x00000000\n\
                pid (1, 0, 0) idx (0) v: 1.500000\npid (1, 0, 0) idx (1) v: -2.000000\npid (1, 0, 0) idx (2) v: 0.250000\n\
                pid (1, 0, 0) idx () pid: 0x00000001\n";
    assert_eq!(rep.printed, want);
}

#[test]
fn device_assert_stops_the_launch_in_debug_mode() {
    let mut k = K::new("as", &[("o", ptr(DType::I32))]);
    let o = k.arg(0);
    let r = k.arange(4);
    let three = k.const_t(Const::Int(3), ten(&[4], DType::I32));
    let ok = k.cmp(CmpPred::Lt, r, three);
    k.src("tl.device_assert(r < 3, \"r too big\")");
    k.op(OpKind::Assert { msg: "r too big".into() }, &[ok], &[]);
    let p = k.ptr_at(o, r);
    k.store(p, r, None);
    let m = k.finish();
    let mut args = vec![InterpArg::Tensor(poison(DType::I32, &[4]))];
    let e = launch(&m, "as", [1, 1, 1], &mut args, &InterpOptions::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::AssertFailed);
    assert!(
        e.message().contains("device assertion failed: r too big, program (0, 0, 0), element [3]"),
        "{}",
        e.message()
    );
    assert!(e.render(&m).contains("tl.device_assert(r < 3"), "{}", e.render(&m));
    launch(&m, "as", [1, 1, 1], &mut args, &InterpOptions { debug: false, ..Default::default() }).unwrap();
    assert_eq!(args[0].as_tensor().unwrap().to_f64_vec(), vec![0.0, 1.0, 2.0, 3.0]);
}

#[test]
fn calls_to_helpers_are_interpreted() {
    // helper(a, b) = a * b + 1, called with scalars.
    let mut h =
        Function::new("helper", &[("a", num(DType::I32)), ("b", num(DType::I32))], vec![num(DType::I32)], false);
    let (a, b) = (h.params[0].value, h.params[1].value);
    let body = h.body;
    let mut bl = Builder::at_end(&mut h, body);
    let p = bl.binary(BinaryOp::Mul, a, b);
    let one = bl.constant(Const::Int(1), num(DType::I32));
    let s = bl.binary(BinaryOp::Add, p, one);
    bl.op(OpKind::Return, &[s], &[]);
    let mut k = K::new("caller", &[("o", ptr(DType::I32)), ("x", num(DType::I32))]);
    let (o, x) = (k.arg(0), k.arg(1));
    let r = k.op1(OpKind::Call { callee: "helper".into() }, &[x, x], num(DType::I32));
    k.store(o, r, None);
    let mut m = k.finish();
    m.funcs.push(h);
    let mut args = vec![InterpArg::Tensor(poison(DType::I32, &[1])), InterpArg::i32(7)];
    launch(&m, "caller", [1, 1, 1], &mut args, &InterpOptions::default()).unwrap();
    assert_eq!(args[0].as_tensor().unwrap().to_f64_vec(), vec![50.0]);
}
