//! Elementwise semantics: integer wrap and signedness, truncating division, shifts, casts,
//! float rounding, NaN rules, fma, math functions.

mod common;

use common::*;
use trident_core::{DType, HostTensor};
use trident_interp::{launch, ErrorKind, InterpArg, InterpError, InterpOptions};
use trident_ir::*;

/// Runs `out[i] = f(x[i], y[i])` over one block; `x`, `y` of `din`, `out` of `dout`.
fn run2(
    din: DType,
    dout: DType,
    x: &HostTensor,
    y: &HostTensor,
    f: impl FnOnce(&mut K, Value, Value) -> Value,
) -> Result<HostTensor, InterpError> {
    let n = x.numel() as u32;
    let mut k = K::new("ew", &[("x", ptr(din)), ("y", ptr(din)), ("o", ptr(dout))]);
    let (xp, yp, op) = (k.arg(0), k.arg(1), k.arg(2));
    let r = k.arange(n);
    let px = k.ptr_at(xp, r);
    let a = k.load(px, None, None);
    let py = k.ptr_at(yp, r);
    let b = k.load(py, None, None);
    let v = k.src("v = f(a, b)").pipe(|k| f(k, a, b));
    let po = k.ptr_at(op, r);
    k.store(po, v, None);
    let m = k.finish();
    let mut args = vec![
        InterpArg::Tensor(x.clone()),
        InterpArg::Tensor(y.clone()),
        InterpArg::Tensor(poison(dout, &[n as usize])),
    ];
    launch(&m, "ew", [1, 1, 1], &mut args, &InterpOptions::default())?;
    Ok(args[2].as_tensor().unwrap().clone())
}

trait Pipe: Sized {
    fn pipe<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        f(self)
    }
}
impl Pipe for K {}

fn t(d: DType, v: &[f64]) -> HostTensor {
    HostTensor::from_f64(d, &[v.len()], v)
}

fn bin(d: DType, op: BinaryOp, x: &[f64], y: &[f64]) -> Vec<f64> {
    run2(d, d, &t(d, x), &t(d, y), |k, a, b| k.bin(op, a, b)).unwrap().to_f64_vec()
}

#[test]
fn integer_ops_wrap_at_their_width() {
    assert_eq!(bin(DType::I8, BinaryOp::Add, &[100.0, -100.0], &[100.0, -100.0]), vec![-56.0, 56.0]);
    assert_eq!(bin(DType::U8, BinaryOp::Add, &[200.0, 3.0], &[100.0, 4.0]), vec![44.0, 7.0]);
    assert_eq!(bin(DType::U8, BinaryOp::Sub, &[3.0], &[4.0]), vec![255.0]);
    assert_eq!(bin(DType::I32, BinaryOp::Mul, &[65536.0], &[65536.0]), vec![0.0]);
    assert_eq!(bin(DType::I16, BinaryOp::Mul, &[300.0], &[300.0]), vec![(90000i32 as i16) as f64]);
}

#[test]
fn division_truncates_toward_zero() {
    let x = [-7.0, 7.0, -7.0, 7.0, 6.0];
    let y = [2.0, -2.0, -2.0, 2.0, 3.0];
    assert_eq!(bin(DType::I32, BinaryOp::Div, &x, &y), vec![-3.0, -3.0, 3.0, 3.0, 2.0]);
    assert_eq!(bin(DType::I32, BinaryOp::Rem, &x, &y), vec![-1.0, 1.0, -1.0, 1.0, 0.0]);
    assert_eq!(bin(DType::U32, BinaryOp::Div, &[4294967295.0], &[2.0]), vec![2147483647.0]);
    // i32::MIN / -1 wraps.
    assert_eq!(bin(DType::I32, BinaryOp::Div, &[-2147483648.0], &[-1.0]), vec![-2147483648.0]);
    // Floats: IEEE division and C fmod (sign of the dividend).
    assert_eq!(bin(DType::F32, BinaryOp::Rem, &[-7.5, 7.5], &[2.0, -2.0]), vec![-1.5, 1.5]);
}

#[test]
fn integer_division_by_zero_is_an_error_at_the_op() {
    let d = DType::I32;
    let e =
        run2(d, d, &t(d, &[1.0, 2.0, 3.0, 4.0]), &t(d, &[1.0, 1.0, 0.0, 1.0]), |k, a, b| k.bin(BinaryOp::Div, a, b))
            .unwrap_err();
    assert_eq!(e.kind, ErrorKind::DivisionByZero);
    assert!(e.message().contains("integer division by zero"), "{}", e.message());
    assert!(e.message().contains("element [2]"), "{}", e.message());
    assert!(e.diag.loc().is_some_and(|l| l.line > 1));
}

#[test]
fn division_by_zero_can_give_the_gpus_values() {
    let d = DType::I32;
    let mut k = K::new("dz", &[("x", ptr(d)), ("y", ptr(d)), ("q", ptr(d)), ("r", ptr(d))]);
    let (xp, yp, qp, rp) = (k.arg(0), k.arg(1), k.arg(2), k.arg(3));
    let i = k.arange(4);
    let px = k.ptr_at(xp, i);
    let a = k.load(px, None, None);
    let py = k.ptr_at(yp, i);
    let b = k.load(py, None, None);
    let q = k.bin(BinaryOp::Div, a, b);
    let r = k.bin(BinaryOp::Rem, a, b);
    let pq = k.ptr_at(qp, i);
    k.store(pq, q, None);
    let pr = k.ptr_at(rp, i);
    k.store(pr, r, None);
    let m = k.finish();
    let mut args = vec![
        InterpArg::Tensor(t(d, &[7.0, -7.0, 0.0, 9.0])),
        InterpArg::Tensor(t(d, &[0.0, 0.0, 0.0, 2.0])),
        InterpArg::Tensor(poison(d, &[4])),
        InterpArg::Tensor(poison(d, &[4])),
    ];
    let opts = InterpOptions { div_by_zero_is_error: false, ..Default::default() };
    launch(&m, "dz", [1, 1, 1], &mut args, &opts).unwrap();
    assert_eq!(args[2].as_tensor().unwrap().to_f64_vec(), vec![-1.0, -1.0, -1.0, 4.0]);
    assert_eq!(args[3].as_tensor().unwrap().to_f64_vec(), vec![7.0, -7.0, 0.0, 1.0]);
}

#[test]
fn shifts_follow_ptx_clamping() {
    let x = [-8.0, -8.0, 1.0, -1.0, 5.0];
    let y = [1.0, 40.0, 31.0, 32.0, 0.0];
    assert_eq!(bin(DType::I32, BinaryOp::Shr, &x, &y), vec![-4.0, -1.0, 0.0, -1.0, 5.0]);
    assert_eq!(bin(DType::I32, BinaryOp::Shl, &x, &y), vec![-16.0, 0.0, -2147483648.0, 0.0, 5.0]);
    let ux = [2147483648.0, 4294967295.0, 1.0];
    let uy = [31.0, 32.0, 33.0];
    assert_eq!(bin(DType::U32, BinaryOp::Shr, &ux, &uy), vec![1.0, 0.0, 0.0]);
    assert_eq!(bin(DType::U32, BinaryOp::Shl, &ux, &uy), vec![0.0, 0.0, 0.0]);
    // A negative shift amount is a huge unsigned amount.
    assert_eq!(bin(DType::I32, BinaryOp::Shl, &[3.0], &[-1.0]), vec![0.0]);
}

#[test]
fn signedness_comes_from_the_type() {
    let cmp = |d: DType, x: &[f64], y: &[f64]| {
        run2(d, DType::I1, &t(d, x), &t(d, y), |k, a, b| k.cmp(CmpPred::Lt, a, b)).unwrap().to_f64_vec()
    };
    assert_eq!(cmp(DType::I32, &[-1.0, 3.0], &[1.0, 2.0]), vec![1.0, 0.0]);
    assert_eq!(cmp(DType::U32, &[4294967295.0, 1.0], &[1.0, 2.0]), vec![0.0, 1.0]);
    assert_eq!(bin(DType::I8, BinaryOp::Max, &[-1.0], &[1.0]), vec![1.0]);
    assert_eq!(bin(DType::U8, BinaryOp::Max, &[255.0], &[1.0]), vec![255.0]);
    assert_eq!(
        bin(DType::U32, BinaryOp::UMulHi, &[4294967295.0, 65536.0], &[4294967295.0, 65536.0]),
        vec![4294967294.0, 1.0]
    );
    // umulhi on i32 treats the bits as unsigned: (-1 as u32)^2 >> 32 = 0xFFFFFFFE = -2.
    assert_eq!(bin(DType::I32, BinaryOp::UMulHi, &[-1.0], &[-1.0]), vec![-2.0]);
}

fn un(d: DType, op: UnaryOp, x: &[f64]) -> Vec<f64> {
    let out = if matches!(op, UnaryOp::IsNan | UnaryOp::IsInf | UnaryOp::Signbit) { DType::I1 } else { d };
    run2(d, out, &t(d, x), &t(d, x), |k, a, _| {
        let ty = k.ty(a).with_elem(out);
        k.op1(OpKind::Unary(op), &[a], ty)
    })
    .unwrap()
    .to_f64_vec()
}

#[test]
fn bit_counting_and_integer_unary() {
    assert_eq!(un(DType::I32, UnaryOp::Clz, &[1.0, 0.0, -1.0]), vec![31.0, 32.0, 0.0]);
    assert_eq!(un(DType::I8, UnaryOp::Popc, &[-1.0, 6.0]), vec![8.0, 2.0]);
    assert_eq!(un(DType::I8, UnaryOp::Neg, &[-128.0, 5.0]), vec![-128.0, -5.0]);
    assert_eq!(un(DType::I32, UnaryOp::Not, &[0.0, 5.0]), vec![-1.0, -6.0]);
    assert_eq!(un(DType::I16, UnaryOp::Abs, &[-7.0, -32768.0]), vec![7.0, -32768.0]);
}

fn conv(din: DType, dout: DType, x: &[f64], rounding: Rounding) -> HostTensor {
    run2(din, dout, &t(din, x), &t(din, x), |k, a, _| k.cast_with(a, dout, CastKind::Convert, rounding)).unwrap()
}

#[test]
fn float_to_int_truncates_and_saturates() {
    let x = [3e9, -3e9, f64::NAN, -2.7, 2.7, f64::INFINITY];
    let got = conv(DType::F32, DType::I32, &x, Rounding::Rtne).to_f64_vec();
    assert_eq!(got, vec![2147483647.0, -2147483648.0, 0.0, -2.0, 2.0, 2147483647.0]);
    // 8-bit results: saturate to 16 bits, keep the low byte (as measured on an H100).
    let got = conv(DType::F32, DType::U8, &[300.0, -5.0, 254.9, 3e9], Rounding::Rtne).to_f64_vec();
    assert_eq!(got, vec![44.0, 0.0, 254.0, 255.0]);
    let got = conv(DType::F32, DType::I8, &[3e9, -3e9, 300.0, -5.0], Rounding::Rtne).to_f64_vec();
    assert_eq!(got, vec![-1.0, 0.0, 44.0, -5.0]);
    let got = conv(DType::F32, DType::I1, &[0.0, -0.0, 0.5, f64::NAN], Rounding::Rtne).to_f64_vec();
    assert_eq!(got, vec![0.0, 0.0, 1.0, 1.0]);
}

#[test]
fn int_casts_extend_by_source_signedness() {
    assert_eq!(conv(DType::I8, DType::I32, &[-1.0, 127.0], Rounding::Rtne).to_f64_vec(), vec![-1.0, 127.0]);
    assert_eq!(conv(DType::U8, DType::I32, &[255.0], Rounding::Rtne).to_f64_vec(), vec![255.0]);
    let u = conv(DType::I32, DType::U64, &[-1.0], Rounding::Rtne);
    assert_eq!(u.get_bits(0), u64::MAX);
    assert_eq!(conv(DType::I32, DType::I8, &[300.0, -129.0], Rounding::Rtne).to_f64_vec(), vec![44.0, 127.0]);
    assert_eq!(conv(DType::I32, DType::I1, &[2.0, 0.0, -1.0], Rounding::Rtne).to_f64_vec(), vec![1.0, 0.0, 1.0]);
    assert_eq!(conv(DType::I64, DType::F32, &[16777217.0], Rounding::Rtne).to_f64_vec(), vec![16777216.0]);
}

#[test]
fn narrowing_float_casts_round_as_asked() {
    let x = 1.0 + 0.75 * 2f64.powi(-10); // between f16 neighbours 1 and 1+2^-10, nearer the upper one
    let f = conv(DType::F32, DType::F16, &[x, -x, 1e6], Rounding::Rtne).to_f64_vec();
    assert_eq!(f, vec![1.0 + 2f64.powi(-10), -(1.0 + 2f64.powi(-10)), f64::INFINITY]);
    let f = conv(DType::F32, DType::F16, &[x, -x, 1e6], Rounding::Rtz).to_f64_vec();
    assert_eq!(f, vec![1.0, -1.0, 65504.0]);
    let b = conv(DType::F32, DType::BF16, &[1.0 + 3.0 * 2f64.powi(-9)], Rounding::Rtne).to_f64_vec();
    assert_eq!(b, vec![1.0 + 2.0 * 2f64.powi(-8)]);
    // fp8 conversions saturate.
    let e = conv(DType::F32, DType::F8E4M3, &[1000.0, -1000.0, 1.0625], Rounding::Rtne).to_f64_vec();
    assert_eq!(e, vec![448.0, -448.0, 1.0]);
    let e = conv(DType::F16, DType::F8E5M2, &[60000.0], Rounding::Rtne).to_f64_vec();
    assert_eq!(e, vec![57344.0]);
}

#[test]
fn bitcasts_keep_bits() {
    let got = run2(DType::F32, DType::I32, &t(DType::F32, &[1.0, -0.0]), &t(DType::F32, &[0.0, 0.0]), |k, a, _| {
        k.cast_with(a, DType::I32, CastKind::Bitcast, Rounding::Rtne)
    })
    .unwrap();
    assert_eq!(got.to_f64_vec(), vec![0x3f80_0000 as f64, i32::MIN as f64]);
    let got = run2(DType::I16, DType::F16, &t(DType::I16, &[0x3c00 as f64]), &t(DType::I16, &[0.0]), |k, a, _| {
        k.cast_with(a, DType::F16, CastKind::Bitcast, Rounding::Rtne)
    })
    .unwrap();
    assert_eq!(got.to_f64_vec(), vec![1.0]);
}

#[test]
fn float_max_min_nan_rules_and_comparisons() {
    let nan = f64::NAN;
    let x = [nan, 1.0, 2.0];
    let y = [1.0, nan, 3.0];
    assert_eq!(bin(DType::F32, BinaryOp::Max, &x, &y), vec![1.0, 1.0, 3.0]);
    assert_eq!(bin(DType::F32, BinaryOp::Min, &x, &y), vec![1.0, 1.0, 2.0]);
    let m = bin(DType::F32, BinaryOp::MaxNan, &x, &y);
    assert!(m[0].is_nan() && m[1].is_nan() && m[2] == 3.0);
    let c = |p: CmpPred| {
        run2(DType::F32, DType::I1, &t(DType::F32, &x), &t(DType::F32, &y), |k, a, b| k.cmp(p, a, b))
            .unwrap()
            .to_f64_vec()
    };
    assert_eq!(c(CmpPred::Ne), vec![1.0, 1.0, 1.0]);
    assert_eq!(c(CmpPred::Eq), vec![0.0, 0.0, 0.0]);
    assert_eq!(c(CmpPred::Lt), vec![0.0, 0.0, 1.0]);
    assert_eq!(c(CmpPred::Ge), vec![0.0, 0.0, 0.0]);
    assert_eq!(un(DType::F32, UnaryOp::IsNan, &[nan, 1.0]), vec![1.0, 0.0]);
    assert_eq!(un(DType::F32, UnaryOp::Signbit, &[-0.0, 0.0]), vec![1.0, 0.0]);
}

#[test]
fn f32_ops_are_single_precision_and_fma_rounds_once() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let n = 64;
    let x = rng.tensor(DType::F32, &[n], 3.0);
    let y = rng.tensor(DType::F32, &[n], 3.0);
    let got = run2(DType::F32, DType::F32, &x, &y, |k, a, b| k.bin(BinaryOp::Div, a, b)).unwrap();
    for i in 0..n {
        assert_eq!(got.get_f64(i), (x.get_f64(i) as f32 / y.get_f64(i) as f32) as f64, "seed {seed}");
    }
    let got = run2(DType::F32, DType::F32, &x, &y, |k, a, b| {
        let t = k.ty(a);
        k.op1(OpKind::Fma, &[a, b, a], t)
    })
    .unwrap();
    for i in 0..n {
        let (a, b) = (x.get_f64(i) as f32, y.get_f64(i) as f32);
        assert_eq!(got.get_f64(i), a.mul_add(b, a) as f64, "seed {seed}");
    }
    // f16 fma: exact product and sum, rounded once to f16.
    let a = 1.0 + 2f64.powi(-10);
    let c = -(1.0 + 2f64.powi(-9));
    let got = run2(DType::F16, DType::F16, &t(DType::F16, &[a]), &t(DType::F16, &[c]), |k, p, q| {
        let ty = k.ty(p);
        k.op1(OpKind::Fma, &[p, p, q], ty)
    })
    .unwrap();
    assert_eq!(got.get_f64(0), 2f64.powi(-20)); // (1+2^-10)^2 - (1+2^-9) = 2^-20, exact only with one rounding
}

#[test]
fn math_functions_are_correctly_rounded_from_f64() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let x = rng.tensor(DType::F16, &[128], 4.0);
    // f16 exp is the correctly rounded f32 exp rounded to f16 (computed in f32, as numpy and the GPU).
    let exp_via_f32 = |v: f64| cr_exp_f32(v as f32).unwrap_or(v.exp() as f32) as f64;
    for (op, f) in [
        (UnaryOp::Exp, &exp_via_f32 as &dyn Fn(f64) -> f64),
        (UnaryOp::Sin, &f64::sin),
        (UnaryOp::Tanh, &f64::tanh),
        (UnaryOp::Sqrt, &|v: f64| v.abs().sqrt()),
    ] {
        let xs: Vec<f64> = x.to_f64_vec().iter().map(|&v| if op == UnaryOp::Sqrt { v.abs() } else { v }).collect();
        let got = un(DType::F16, op, &xs);
        for (g, &v) in got.iter().zip(&xs) {
            assert_eq!(*g, half::f16::from_f64(f(v)).to_f64(), "{op:?}({v}), seed {seed}");
        }
    }
    // erf(0.5) = 0.5204998778130465..., rounded to f32.
    assert_eq!(un(DType::F32, UnaryOp::Erf, &[0.5])[0], 0.520_499_877_813_046_5_f64 as f32 as f64);
}

/// `rn32(exp(x))` from the system's f64 `exp` (an implementation independent of the
/// interpreter's), or `None` where that f64 value lies within 8 f64 ulps of an f32 rounding
/// boundary and the f64 result cannot settle the rounding.
fn cr_exp_f32(x: f32) -> Option<f32> {
    let y = (x as f64).exp();
    let f = y as f32;
    if f as f64 == y || x.is_nan() {
        return Some(f);
    }
    let boundary = if f.is_infinite() {
        2f64.powi(128) - 2f64.powi(103)
    } else if (f as f64) < y {
        (f as f64 + f.next_up() as f64) / 2.0
    } else {
        (f as f64 + f.next_down() as f64) / 2.0
    };
    let ulp = f64::from_bits(y.to_bits() + 1) - y;
    ((y - boundary).abs() > 8.0 * ulp).then_some(f)
}

/// Triton's interpreter computes `exp` with numpy, correctly rounded; the interpreter used to
/// model the GPU's fast `exp2(f32(x * log2 e))`, one or more ulps off (up to 60 for large |x|).
/// Fresh random inputs over the whole range (overflow to inf above 88.72, subnormal results
/// below -87.34, zero below -103.97), near 0 and at the rounding boundaries around those limits,
/// against the correctly rounded value; plus the inputs hardest to round.
#[test]
fn exp_f32_is_correctly_rounded() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let mut xs: Vec<f32> = vec![0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::MIN_POSITIVE, -1e-30];
    // The limits: largest finite result, smallest normal result, smallest nonzero result.
    for b in [0x42b1_7217u32, 0xc2ae_ac4f, 0xc2cf_f1b4] {
        xs.extend((b - 40..b + 40).map(f32::from_bits));
    }
    while xs.len() < 4096 {
        let u = rng.f();
        xs.push(match xs.len() % 4 {
            0 => (u * 96.5 - 7.5) as f32,                         // [-104, 89]
            1 => (u * 4.0) as f32,                                // [-4, 4]
            2 => (u * 2f64.powi(-(rng.below(30) as i32))) as f32, // near 0
            _ => f32::from_bits(rng.next() as u32),               // any bit pattern (NaN, huge, tiny)
        });
    }
    let got = un(DType::F32, UnaryOp::Exp, &xs.iter().map(|&x| x as f64).collect::<Vec<_>>());
    let mut checked = 0;
    for (&x, &g) in xs.iter().zip(&got) {
        let Some(want) = cr_exp_f32(x) else { continue };
        checked += 1;
        let g = g as f32;
        assert!(
            g.to_bits() == want.to_bits() || g.is_nan() && want.is_nan(),
            "exp({x:e}) = {g:e}, correctly rounded {want:e}; seed {seed}"
        );
    }
    assert!(checked > 4000, "{checked}");
    // Either side of each limit (results computed at 300 bits).
    let at = |b: u32| (un(DType::F32, UnaryOp::Exp, &[f32::from_bits(b) as f64])[0] as f32).to_bits();
    assert_eq!(at(0x42b1_7217), 0x7f7f_ff84); // 3.4027985e38
    assert_eq!(at(0x42b1_7218), 0x7f80_0000); // inf
    assert_eq!(at(0xc2ae_ac4f), 0x0080_0026); // normal
    assert_eq!(at(0xc2ae_ac50), 0x007f_ffe6); // subnormal
    assert_eq!(at(0xc2cf_f1b4), 0x0000_0001); // 2^-149
    assert_eq!(at(0xc2cf_f1b5), 0);
    // The f32 inputs whose exp lies closest to an f32 rounding boundary (f64 alone leaves them
    // within 8 f64 ulps of it, found by an exhaustive search over all 2^32 inputs), with the
    // correctly rounded results computed at 300 bits.
    const HARD: [(u32, u32); 21] = [
        (0x337fffff, 0x3f800000),
        (0x33800000, 0x3f800001),
        (0x343fffff, 0x3f800002),
        (0x34dffffd, 0x3f800004),
        (0x356ffff9, 0x3f800008),
        (0x35f7fff1, 0x3f800010),
        (0x367bffe1, 0x3f800020),
        (0x36fdffc1, 0x3f800040),
        (0x377eff81, 0x3f800080),
        (0x383a3ef1, 0x3f800175),
        (0x38e69cc1, 0x3f80039a),
        (0x39c6be5b, 0x3f800c6d),
        (0x39e5bb1d, 0x3f800e5d),
        (0x3d1a274e, 0x3f84e8ba),
        (0x4001b249, 0x40f2cd14),
        (0x40315b33, 0x417fa47d),
        (0x4288942b, 0x70b7a4c5),
        (0xb3000000, 0x3f800000),
        (0xbae0e25c, 0x3f7f8fa7),
        (0xbbf0edf1, 0x3f7e1fe9),
        (0xc16912cd, 0x34fd331b),
    ];
    let hx: Vec<f64> = HARD.iter().map(|&(x, _)| f32::from_bits(x) as f64).collect();
    for (g, &(x, want)) in un(DType::F32, UnaryOp::Exp, &hx).iter().zip(&HARD) {
        assert_eq!((*g as f32).to_bits(), want, "exp({:e})", f32::from_bits(x));
    }
}
