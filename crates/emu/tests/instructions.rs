//! Per-instruction-class tests: hand-written PTX against known answers.
//!
//! Most tests use `lanes3`: each of 32 lanes loads a = in[lane], b = in[32+lane],
//! c = in[64+lane] (as %r1, %r3, %r5 / %rd11, %rd13, %rd15 for 64-bit), runs the body,
//! and stores %r2 (or %rd12) to out[lane]. Expected values come from Rust.

#![allow(clippy::needless_range_loop)]

mod common;

use common::*;
use half::{bf16, f16};
use trident_core::{DType, HostTensor};
use trident_emu::KernelArg;

const HEADER: &str = ".version 8.0\n.target sm_80\n.address_size 64\n";
/// fp8 conversions need sm_89+ (ptxas rejects them for sm_80).
const HEADER_SM90: &str = ".version 8.1\n.target sm_90\n.address_size 64\n";

fn wrap(body: &str, wide: bool) -> String {
    let sz = if wide { 8 } else { 4 };
    let header = if body.contains("e4m3") || body.contains("e5m2") { HEADER_SM90 } else { HEADER };
    format!(
        "{header}
.visible .entry k(.param .u64 out, .param .u64 inp)
{{
  .reg .pred %p<8>;
  .reg .b16 %h<16>;
  .reg .b32 %r<64>;
  .reg .b64 %rd<32>;
  .reg .f32 %f<32>;
  .reg .f64 %fd<8>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [inp];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd3, %r0, {sz};
  add.s64 %rd4, %rd1, %rd3;
  add.s64 %rd5, %rd2, %rd3;
  ld.global.u{w} %{p}1, [%rd5];
  ld.global.u{w} %{p}3, [%rd5+{o1}];
  ld.global.u{w} %{p}5, [%rd5+{o2}];
{body}
  st.global.u{w} [%rd4], %{p}2;
  ret;
}}",
        w = sz * 8,
        p = if wide { "rd1" } else { "r" },
        o1 = 32 * sz,
        o2 = 64 * sz,
    )
}

fn run32(body: &str, a: &[u32; 32], b: &[u32; 32], c: &[u32; 32]) -> Vec<u32> {
    let mut inp = HostTensor::zeros(DType::U32, &[96]);
    for i in 0..32 {
        inp.data[4 * i..4 * i + 4].copy_from_slice(&a[i].to_le_bytes());
        inp.data[4 * (32 + i)..4 * (32 + i) + 4].copy_from_slice(&b[i].to_le_bytes());
        inp.data[4 * (64 + i)..4 * (64 + i) + 4].copy_from_slice(&c[i].to_le_bytes());
    }
    let mut args = vec![KernelArg::Buffer(poisoned(DType::U32, &[32])), KernelArg::Buffer(inp)];
    run(&wrap(body, false), "k", [1, 1, 1], [32, 1, 1], &mut args).unwrap_or_else(|e| panic!("{e}\n{body}"));
    (0..32).map(|i| buf(&args, 0).get_bits(i) as u32).collect()
}

fn run64(body: &str, a: &[u64; 32], b: &[u64; 32], c: &[u64; 32]) -> Vec<u64> {
    let mut inp = HostTensor::zeros(DType::U64, &[96]);
    for i in 0..32 {
        inp.data[8 * i..8 * i + 8].copy_from_slice(&a[i].to_le_bytes());
        inp.data[8 * (32 + i)..8 * (32 + i) + 8].copy_from_slice(&b[i].to_le_bytes());
        inp.data[8 * (64 + i)..8 * (64 + i) + 8].copy_from_slice(&c[i].to_le_bytes());
    }
    let mut args = vec![KernelArg::Buffer(poisoned(DType::U64, &[32])), KernelArg::Buffer(inp)];
    run(&wrap(body, true), "k", [1, 1, 1], [32, 1, 1], &mut args).unwrap_or_else(|e| panic!("{e}\n{body}"));
    (0..32).map(|i| buf(&args, 0).get_bits(i)).collect()
}

/// Random inputs with some special values mixed in.
fn inputs(seed: u64, special: &[u32]) -> [u32; 32] {
    let mut rng = Rng(seed);
    let mut v = [0u32; 32];
    for (i, x) in v.iter_mut().enumerate() {
        *x = if i < special.len() { special[i] } else { rng.next_u64() as u32 };
    }
    v
}

fn check3(body: &str, special: &[u32], f: impl Fn(u32, u32, u32) -> u32) {
    for seed in 0..3 {
        let (a, b, c) = (inputs(seed, special), inputs(seed + 100, special), inputs(seed + 200, &[]));
        let got = run32(body, &a, &b, &c);
        for l in 0..32 {
            let want = f(a[l], b[l], c[l]);
            assert_eq!(got[l], want, "{body}\nlane {l}: a={:#x} b={:#x} c={:#x}", a[l], b[l], c[l]);
        }
    }
}

fn check64(body: &str, f: impl Fn(u64, u64, u64) -> u64) {
    let mut rng = Rng(7);
    let mut gen = || -> [u64; 32] {
        let mut v = [0u64; 32];
        v.iter_mut().for_each(|x| *x = rng.next_u64() >> (rng.next_u64() % 64));
        v[0] = 0;
        v[1] = u64::MAX;
        v[2] = 1 << 63;
        v
    };
    let (a, b, c) = (gen(), gen(), gen());
    let got = run64(body, &a, &b, &c);
    for l in 0..32 {
        assert_eq!(got[l], f(a[l], b[l], c[l]), "{body}\nlane {l}: a={:#x} b={:#x}", a[l], b[l]);
    }
}

const SPECIAL_INT: &[u32] = &[0, 1, 0xffff_ffff, 0x8000_0000, 0x7fff_ffff, 31, 32, 33];

#[test]
fn integer_arithmetic() {
    check3("add.s32 %r2, %r1, %r3;", SPECIAL_INT, |a, b, _| a.wrapping_add(b));
    check3("sub.u32 %r2, %r1, %r3;", SPECIAL_INT, |a, b, _| a.wrapping_sub(b));
    check3("add.sat.s32 %r2, %r1, %r3;", SPECIAL_INT, |a, b, _| (a as i32).saturating_add(b as i32) as u32);
    check3("mul.lo.s32 %r2, %r1, %r3;", SPECIAL_INT, |a, b, _| a.wrapping_mul(b));
    check3("mul.hi.u32 %r2, %r1, %r3;", SPECIAL_INT, |a, b, _| ((a as u64 * b as u64) >> 32) as u32);
    check3("mul.hi.s32 %r2, %r1, %r3;", SPECIAL_INT, |a, b, _| ((a as i32 as i64 * b as i32 as i64) >> 32) as u32);
    check3("mad.lo.s32 %r2, %r1, %r3, %r5;", SPECIAL_INT, |a, b, c| a.wrapping_mul(b).wrapping_add(c));
    check3("mul24.lo.u32 %r2, %r1, %r3;", SPECIAL_INT, |a, b, _| {
        ((a & 0xffffff) as u64 * (b & 0xffffff) as u64) as u32
    });
    check3("div.u32 %r2, %r1, %r3;", SPECIAL_INT, |a, b, _| a.checked_div(b).unwrap_or(u32::MAX));
    check3("div.s32 %r2, %r1, %r3;", SPECIAL_INT, |a, b, _| {
        if b == 0 {
            u32::MAX
        } else {
            (a as i32).wrapping_div(b as i32) as u32
        }
    });
    check3("rem.s32 %r2, %r1, %r3;", SPECIAL_INT, |a, b, _| {
        if b == 0 {
            u32::MAX // remainder by zero is all ones on an H100
        } else {
            (a as i32).wrapping_rem(b as i32) as u32
        }
    });
    check3("min.s32 %r2, %r1, %r3;", SPECIAL_INT, |a, b, _| (a as i32).min(b as i32) as u32);
    check3("max.u32 %r2, %r1, %r3;", SPECIAL_INT, |a, b, _| a.max(b));
    check3("abs.s32 %r2, %r1;", SPECIAL_INT, |a, _, _| (a as i32).wrapping_abs() as u32);
    check3("neg.s32 %r2, %r1;", SPECIAL_INT, |a, _, _| (a as i32).wrapping_neg() as u32);
    check3("sad.u32 %r2, %r1, %r3, %r5;", SPECIAL_INT, |a, b, c| a.abs_diff(b).wrapping_add(c));
    // 16-bit arithmetic through b16 registers.
    check3(
        "cvt.u16.u32 %h1, %r1; cvt.u16.u32 %h2, %r3; add.u16 %h3, %h1, %h2; cvt.u32.u16 %r2, %h3;",
        SPECIAL_INT,
        |a, b, _| (a as u16).wrapping_add(b as u16) as u32,
    );
}

#[test]
fn wide_and_64bit() {
    check3(
        "mul.wide.u32 %rd10, %r1, %r3; shr.u64 %rd11, %rd10, 32; cvt.u32.u64 %r2, %rd11;",
        SPECIAL_INT,
        |a, b, _| ((a as u64 * b as u64) >> 32) as u32,
    );
    check3("mul.wide.s32 %rd10, %r1, %r3; cvt.u32.u64 %r2, %rd10;", SPECIAL_INT, |a, b, _| {
        (a as i32 as i64 * b as i32 as i64) as u32
    });
    check3(
        "mad.wide.s32 %rd10, %r1, 3, %rd2; sub.s64 %rd11, %rd10, %rd2; cvt.u32.u64 %r2, %rd11;",
        SPECIAL_INT,
        |a, _, _| (a as i32 as i64 * 3) as u32,
    );
    check64("add.s64 %rd12, %rd11, %rd13;", |a, b, _| a.wrapping_add(b));
    check64("mul.hi.u64 %rd12, %rd11, %rd13;", |a, b, _| ((a as u128 * b as u128) >> 64) as u64);
    check64("mul.lo.s64 %rd12, %rd11, %rd13;", |a, b, _| a.wrapping_mul(b));
    check64(
        "div.s64 %rd12, %rd11, %rd13;",
        |a, b, _| if b == 0 { u64::MAX } else { (a as i64).wrapping_div(b as i64) as u64 },
    );
    check64("shr.s64 %rd12, %rd11, 7;", |a, _, _| ((a as i64) >> 7) as u64);
    check64("popc.b64 %r20, %rd11; cvt.u64.u32 %rd12, %r20;", |a, _, _| a.count_ones() as u64);
    check64("clz.b64 %r20, %rd11; cvt.u64.u32 %rd12, %r20;", |a, _, _| a.leading_zeros() as u64);
    check64("brev.b64 %rd12, %rd11;", |a, _, _| a.reverse_bits());
    check64("min.s64 %rd12, %rd11, %rd13;", |a, b, _| (a as i64).min(b as i64) as u64);
}

#[test]
fn bit_operations() {
    check3("and.b32 %r2, %r1, %r3;", SPECIAL_INT, |a, b, _| a & b);
    check3("or.b32 %r2, %r1, %r3;", SPECIAL_INT, |a, b, _| a | b);
    check3("xor.b32 %r2, %r1, %r3;", SPECIAL_INT, |a, b, _| a ^ b);
    check3("not.b32 %r2, %r1;", SPECIAL_INT, |a, _, _| !a);
    check3("cnot.b32 %r2, %r1;", SPECIAL_INT, |a, _, _| (a == 0) as u32);
    check3("shl.b32 %r2, %r1, %r3;", SPECIAL_INT, |a, b, _| if b >= 32 { 0 } else { a << b });
    check3("and.b32 %r4, %r3, 63; shr.u32 %r2, %r1, %r4;", SPECIAL_INT, |a, b, _| {
        let s = b & 63;
        if s >= 32 {
            0
        } else {
            a >> s
        }
    });
    check3("and.b32 %r4, %r3, 63; shr.s32 %r2, %r1, %r4;", SPECIAL_INT, |a, b, _| {
        ((a as i32) >> (b & 63).min(31)) as u32
    });
    check3("popc.b32 %r2, %r1;", SPECIAL_INT, |a, _, _| a.count_ones());
    check3("clz.b32 %r2, %r1;", SPECIAL_INT, |a, _, _| a.leading_zeros());
    check3("brev.b32 %r2, %r1;", SPECIAL_INT, |a, _, _| a.reverse_bits());
    check3("bfind.u32 %r2, %r1;", SPECIAL_INT, |a, _, _| if a == 0 { u32::MAX } else { 31 - a.leading_zeros() });
    check3("bfind.s32 %r2, %r1;", SPECIAL_INT, |a, _, _| {
        let v = if (a as i32) < 0 { !a } else { a };
        if v == 0 {
            u32::MAX
        } else {
            31 - v.leading_zeros()
        }
    });
    check3("bfe.u32 %r2, %r1, 4, 8;", SPECIAL_INT, |a, _, _| (a >> 4) & 0xff);
    check3("bfe.s32 %r2, %r1, 28, 8;", SPECIAL_INT, |a, _, _| ((a as i32) >> 28) as u32);
    check3("bfe.u32 %r2, %r1, 30, 8;", SPECIAL_INT, |a, _, _| a >> 30);
    check3("bfi.b32 %r2, %r1, %r3, 8, 12;", SPECIAL_INT, |a, b, _| (b & !(0xfff << 8)) | ((a & 0xfff) << 8));
    check3("shf.l.wrap.b32 %r2, %r1, %r3, %r5;", SPECIAL_INT, |a, b, c| {
        let n = c & 31;
        ((((b as u64) << 32 | a as u64) << n) >> 32) as u32
    });
    check3("shf.r.clamp.b32 %r2, %r1, %r3, %r5;", SPECIAL_INT, |a, b, c| {
        let n = c.min(32);
        (((b as u64) << 32 | a as u64) >> n) as u32
    });
    // lop3 with LUT 0x96 is a ^ b ^ c; 0xe8 is majority.
    check3("lop3.b32 %r2, %r1, %r3, %r5, 0x96;", SPECIAL_INT, |a, b, c| a ^ b ^ c);
    check3("lop3.b32 %r2, %r1, %r3, %r5, 0xe8;", SPECIAL_INT, |a, b, c| (a & b) | (a & c) | (b & c));
    // prmt: selector 0x5410 takes the low halves of a and b; 0x3210 is a; sign replication with bit 3.
    check3("prmt.b32 %r2, %r1, %r3, 0x5410;", SPECIAL_INT, |a, b, _| (a & 0xffff) | (b << 16));
    check3("prmt.b32 %r2, %r1, %r3, 0x7632;", SPECIAL_INT, |a, b, _| (a >> 16) | (b & 0xffff_0000));
    check3("prmt.b32 %r2, %r1, %r3, 0x000b;", SPECIAL_INT, |a, _, _| {
        let byte3 = (a >> 24) as u8;
        let sign = if byte3 & 0x80 != 0 { 0xff } else { 0 };
        sign | ((a & 0xff) << 8) | ((a & 0xff) << 16) | ((a & 0xff) << 24)
    });
}

fn f(x: u32) -> f32 {
    f32::from_bits(x)
}

fn canon(x: f32) -> u32 {
    if x.is_nan() {
        0x7fff_ffff
    } else {
        x.to_bits()
    }
}

const SPECIAL_F32: &[u32] = &[
    0x0000_0000,
    0x8000_0000,
    0x3f80_0000,
    0x7f80_0000,
    0xff80_0000,
    0x7fc0_0000,
    0x0000_0001,
    0x7f7f_ffff,
    0x3eaa_aaab,
];

/// Random finite floats of moderate magnitude (and the specials first).
fn finputs(seed: u64) -> [u32; 32] {
    let mut rng = Rng(seed);
    let mut v = [0u32; 32];
    for (i, x) in v.iter_mut().enumerate() {
        *x = if i < SPECIAL_F32.len() { SPECIAL_F32[i] } else { ((rng.uniform() * 100.0) as f32).to_bits() };
    }
    v
}

fn checkf(body: &str, g: impl Fn(f32, f32, f32) -> u32) {
    for seed in 0..3 {
        let (a, b, c) = (finputs(seed), finputs(seed + 10), finputs(seed + 20));
        let got = run32(body, &a, &b, &c);
        for l in 0..32 {
            let want = g(f(a[l]), f(b[l]), f(c[l]));
            assert_eq!(got[l], want, "{body}\nlane {l}: a={} b={} c={}", f(a[l]), f(b[l]), f(c[l]));
        }
    }
}

fn fbody(op: &str) -> String {
    format!("mov.b32 %f1, %r1; mov.b32 %f2, %r3; mov.b32 %f3, %r5;\n{op}\nmov.b32 %r2, %f4;")
}

#[test]
fn float_arithmetic() {
    checkf(&fbody("add.rn.f32 %f4, %f1, %f2;"), |a, b, _| canon(a + b));
    checkf(&fbody("sub.f32 %f4, %f1, %f2;"), |a, b, _| canon(a - b));
    checkf(&fbody("mul.rn.f32 %f4, %f1, %f2;"), |a, b, _| canon(a * b));
    checkf(&fbody("fma.rn.f32 %f4, %f1, %f2, %f3;"), |a, b, c| canon(a.mul_add(b, c)));
    checkf(&fbody("div.rn.f32 %f4, %f1, %f2;"), |a, b, _| canon(a / b));
    checkf(&fbody("sqrt.rn.f32 %f4, %f1;"), |a, _, _| canon(a.sqrt()));
    checkf(&fbody("rcp.rn.f32 %f4, %f1;"), |a, _, _| canon(1.0 / a));
    // NaN through abs/neg comes out canonical (as measured on an H100).
    checkf(&fbody("abs.f32 %f4, %f1;"), |a, _, _| if a.is_nan() { 0x7fff_ffff } else { a.to_bits() & 0x7fff_ffff });
    checkf(&fbody("neg.f32 %f4, %f1;"), |a, _, _| if a.is_nan() { 0x7fff_ffff } else { a.to_bits() ^ 0x8000_0000 });
    checkf(&fbody("copysign.f32 %f4, %f1, %f2;"), |a, b, _| (b.to_bits() & 0x7fff_ffff) | (a.to_bits() & 0x8000_0000));
    // Flush-to-zero: the smallest subnormal behaves as zero.
    checkf(&fbody("add.ftz.f32 %f4, %f1, 0f00000000;"), |a, _, _| if a.is_subnormal() { 0 } else { canon(a + 0.0) });
    checkf(&fbody("mul.sat.f32 %f4, %f1, %f2;"), |a, b, _| {
        let p = a * b;
        if p.is_nan() {
            0
        } else {
            p.clamp(0.0, 1.0).to_bits()
        }
    });
}

#[test]
fn float_rounding_modes() {
    // Directed rounding of add: compare with exact f64 sums.
    let dir = |a: f32, b: f32, mode: i32| -> u32 {
        let exact = a as f64 + b as f64;
        let n = exact as f32;
        if !exact.is_finite() || (n as f64) == exact {
            return canon(a + b);
        }
        let (lo, hi) = if (n as f64) < exact { (n, n.next_up()) } else { (n.next_down(), n) };
        let r = match mode {
            0 => {
                if exact > 0.0 {
                    lo
                } else {
                    hi
                }
            }
            1 => lo,
            _ => hi,
        };
        canon(r)
    };
    checkf(&fbody("add.rz.f32 %f4, %f1, %f2;"), |a, b, _| dir(a, b, 0));
    checkf(&fbody("add.rm.f32 %f4, %f1, %f2;"), |a, b, _| dir(a, b, 1));
    checkf(&fbody("add.rp.f32 %f4, %f1, %f2;"), |a, b, _| dir(a, b, 2));
    // Exact known cases: 1 + 2^-24 is a tie (rn → 1, rp → next up).
    let got = run32(&fbody("add.rp.f32 %f4, %f1, %f2;"), &[0x3f80_0000; 32], &[0x3380_0000; 32], &[0; 32]);
    assert_eq!(got[0], 0x3f80_0001);
    let got = run32(&fbody("add.rn.f32 %f4, %f1, %f2;"), &[0x3f80_0000; 32], &[0x3380_0000; 32], &[0; 32]);
    assert_eq!(got[0], 0x3f80_0000);
}

#[test]
fn float_min_max_nan_rules() {
    let nan = 0x7fc0_0000u32;
    let one = 0x3f80_0000u32;
    let mut a = [one; 32];
    let mut b = [nan; 32];
    a[1] = nan;
    b[1] = nan;
    a[2] = 0x8000_0000; // -0
    b[2] = 0x0000_0000; // +0
    let got = run32(&fbody("min.f32 %f4, %f1, %f2;"), &a, &b, &[0; 32]);
    assert_eq!(got[0], one, "NaN operand yields the other");
    assert_eq!(got[1], 0x7fff_ffff, "two NaNs yield canonical NaN");
    assert_eq!(got[2], 0x8000_0000, "min(-0, +0) = -0");
    let got = run32(&fbody("max.NaN.f32 %f4, %f1, %f2;"), &a, &b, &[0; 32]);
    assert_eq!(got[0], 0x7fff_ffff, ".NaN propagates");
    let got = run32(&fbody("max.f32 %f4, %f1, %f2;"), &a, &b, &[0; 32]);
    assert_eq!(got[2], 0x0000_0000);
}

#[test]
fn transcendental_approx() {
    let mut rng = Rng(9);
    let mut a = [0u32; 32];
    a.iter_mut().for_each(|x| *x = ((rng.uniform() * 8.0) as f32).to_bits());
    for (op, g) in [
        ("ex2.approx.ftz.f32", (|x: f64| x.exp2()) as fn(f64) -> f64),
        ("lg2.approx.f32", |x: f64| x.abs().log2()),
        ("sin.approx.f32", |x: f64| x.sin()),
        ("cos.approx.f32", |x: f64| x.cos()),
        ("tanh.approx.f32", |x: f64| x.tanh()),
        ("rsqrt.approx.f32", |x: f64| 1.0 / x.abs().sqrt()),
    ] {
        let pre = if op.starts_with("lg2") || op.starts_with("rsqrt") { "abs.f32 %f1, %f1;" } else { "" };
        let got = run32(&fbody(&format!("{pre} {op} %f4, %f1;")), &a, &[0; 32], &[0; 32]);
        for l in 0..32 {
            let want = g(f(a[l]) as f64);
            let g = f(got[l]) as f64;
            assert!((g - want).abs() <= 1e-5 * (1.0 + want.abs()), "{op}({}) = {g}, want {want}", f(a[l]));
        }
    }
}

#[test]
fn half_precision() {
    let mut rng = Rng(11);
    let mut a = [0u32; 32];
    let mut b = [0u32; 32];
    for l in 0..32 {
        let h = |r: &mut Rng| f16::from_f64(r.uniform() * 50.0).to_bits() as u32;
        a[l] = h(&mut rng) | h(&mut rng) << 16;
        b[l] = h(&mut rng) | h(&mut rng) << 16;
    }
    let hv = |x: u32, k: u32| f16::from_bits((x >> (16 * k)) as u16);
    let pack = |lo: f16, hi: f16| lo.to_bits() as u32 | (hi.to_bits() as u32) << 16;
    let got = run32("add.rn.f16x2 %r2, %r1, %r3;", &a, &b, &[0; 32]);
    for l in 0..32 {
        let want = pack(
            f16::from_f32(hv(a[l], 0).to_f32() + hv(b[l], 0).to_f32()),
            f16::from_f32(hv(a[l], 1).to_f32() + hv(b[l], 1).to_f32()),
        );
        assert_eq!(got[l], want);
    }
    let got = run32("mul.f16x2 %r2, %r1, %r3;", &a, &b, &[0; 32]);
    for l in 0..32 {
        let want = pack(
            f16::from_f32(hv(a[l], 0).to_f32() * hv(b[l], 0).to_f32()),
            f16::from_f32(hv(a[l], 1).to_f32() * hv(b[l], 1).to_f32()),
        );
        assert_eq!(got[l], want);
    }
    let got = run32("fma.rn.f16x2 %r2, %r1, %r3, %r1;", &a, &b, &[0; 32]);
    for l in 0..32 {
        let one = |k| f16::from_f64(hv(a[l], k).to_f64() * hv(b[l], k).to_f64() + hv(a[l], k).to_f64());
        assert_eq!(got[l], pack(one(0), one(1)));
    }
    // bf16x2 max and scalar f16 ops through b16 registers.
    let bv = |x: u32, k: u32| bf16::from_bits((x >> (16 * k)) as u16);
    let got = run32("max.bf16x2 %r2, %r1, %r3;", &a, &b, &[0; 32]);
    for l in 0..32 {
        let m = |k| if bv(a[l], k).to_f32() >= bv(b[l], k).to_f32() { bv(a[l], k) } else { bv(b[l], k) };
        assert_eq!(got[l], m(0).to_bits() as u32 | (m(1).to_bits() as u32) << 16);
    }
    let got = run32("mov.b32 {%h1, %h2}, %r1; sub.f16 %h3, %h1, %h2; mov.b32 %r2, {%h3, %h2};", &a, &b, &[0; 32]);
    for l in 0..32 {
        let d = f16::from_f32(hv(a[l], 0).to_f32() - hv(a[l], 1).to_f32());
        assert_eq!(got[l], pack(d, hv(a[l], 1)));
    }
}

#[test]
fn conversions() {
    let a = finputs(1);
    let b = finputs(2);
    // f32 pair → f16x2: the first source lands in the high half.
    let got = run32("cvt.rn.f16x2.f32 %r2, %r1, %r3;", &a, &b, &[0; 32]);
    for l in 0..32 {
        let want = (f16::from_f32(f(a[l])).to_bits() as u32) << 16 | f16::from_f32(f(b[l])).to_bits() as u32;
        let (g, w) = (got[l], want);
        // NaN payloads: any NaN is fine in each half.
        let nan_ok = |x: u32| f16::from_bits(x as u16).is_nan();
        assert!(
            g == w || (nan_ok(g) && nan_ok(w)) || (nan_ok(g >> 16) && nan_ok(w >> 16)),
            "lane {l}: {g:#x} vs {w:#x}"
        );
    }
    let got = run32("cvt.rn.bf16x2.f32 %r2, %r1, %r3;", &a, &b, &[0; 32]);
    for l in 9..32 {
        let want = (bf16::from_f32(f(a[l])).to_bits() as u32) << 16 | bf16::from_f32(f(b[l])).to_bits() as u32;
        assert_eq!(got[l], want);
    }
    // Just above, at and just below the halfway points: a sticky bit far below the
    // 16-bit format's last place must still round up (an f64 → bf16 conversion that
    // dropped the f64's low word rounded 158.50001526 down to 158).
    let mut t = [0u32; 32];
    let pats =
        [0x431E_8001u32, 0x431E_8000, 0x431F_8000, 0x431E_7FFF, 0x3F80_1001, 0x3F80_1000, 0x3F80_3000, 0xC31E_8001];
    for l in 0..32 {
        t[l] = pats[l % pats.len()];
    }
    let got = run32("cvt.rn.bf16.f32 %h1, %r1; cvt.u32.u16 %r2, %h1;", &t, &t, &[0; 32]);
    for l in 0..32 {
        assert_eq!(got[l], bf16::from_f32(f(t[l])).to_bits() as u32, "cvt.rn.bf16.f32 {:#x}", t[l]);
    }
    let got = run32("cvt.rn.f16.f32 %h1, %r1; cvt.u32.u16 %r2, %h1;", &t, &t, &[0; 32]);
    for l in 0..32 {
        assert_eq!(got[l], f16::from_f32(f(t[l])).to_bits() as u32, "cvt.rn.f16.f32 {:#x}", t[l]);
    }
    assert_eq!(bf16::from_f32(f(0x431E_8001)).to_f32(), 159.0);
    // f32 → f16 round toward zero, f16 → f32 exact.
    let got = run32("cvt.rz.f16.f32 %h1, %r1; cvt.f32.f16 %f1, %h1; mov.b32 %r2, %f1;", &a, &b, &[0; 32]);
    for l in 9..32 {
        let x = f(a[l]) as f64;
        let back = f(got[l]) as f64;
        assert!(back.abs() <= x.abs() && (x - back).abs() <= x.abs() / 1024.0 + 1e-7, "rz {x} -> {back}");
    }
    // Float → int with rounding and saturation; NaN → 0.
    let got = run32("cvt.rni.s32.f32 %r2, %r1;", &a, &b, &[0; 32]);
    for l in 0..32 {
        let x = f(a[l]);
        let want =
            if x.is_nan() { 0 } else { (x as f64).round_ties_even().clamp(i32::MIN as f64, i32::MAX as f64) as i32 };
        assert_eq!(got[l] as i32, want, "cvt.rni.s32.f32 {x}");
    }
    let got = run32("cvt.rzi.u32.f32 %r2, %r1;", &a, &b, &[0; 32]);
    for l in 0..32 {
        let x = f(a[l]);
        assert_eq!(got[l], if x.is_nan() { 0 } else { x as u32 }, "cvt.rzi.u32.f32 {x}");
    }
    check3("cvt.rn.f32.s32 %f1, %r1; mov.b32 %r2, %f1;", SPECIAL_INT, |a, _, _| (a as i32 as f32).to_bits());
    check3("cvt.rz.f32.u32 %f1, %r1; mov.b32 %r2, %f1;", SPECIAL_INT, |a, _, _| {
        let x = a as f32;
        (if x as f64 > a as f64 { x.next_down() } else { x }).to_bits()
    });
    // Integer narrowing: plain truncates, .sat clamps; signed widening sign-extends.
    check3("cvt.u8.u32 %h1, %r1; cvt.u32.u8 %r2, %h1;", SPECIAL_INT, |a, _, _| a & 0xff);
    check3("cvt.sat.s8.s32 %h1, %r1; cvt.s32.s8 %r2, %h1;", SPECIAL_INT, |a, _, _| (a as i32).clamp(-128, 127) as u32);
    check3("cvt.s32.s16 %r2, %r1;", SPECIAL_INT, |a, _, _| a as u16 as i16 as i32 as u32);
    check64("cvt.u32.u64 %r20, %rd11; cvt.s64.s32 %rd12, %r20;", |a, _, _| a as u32 as i32 as i64 as u64);
    // f32 → f64 → f32 round trip, f64 division.
    checkf(
        &fbody("cvt.f64.f32 %fd1, %f1; cvt.f64.f32 %fd2, %f2; div.rn.f64 %fd3, %fd1, %fd2; cvt.rn.f32.f64 %f4, %fd3;"),
        |a, b, _| {
            // f64 NaNs propagate (first NaN operand) or are the default 0xfff8...; the
            // f64 → f32 conversion keeps the sign (as an H100 does).
            let q = a as f64 / b as f64;
            if !q.is_nan() {
                (q as f32).to_bits()
            } else if a.is_nan() {
                a.to_bits() | 0x0040_0000
            } else if b.is_nan() {
                b.to_bits() | 0x0040_0000
            } else {
                0xffc0_0000
            }
        },
    );
    // tf32: 10 mantissa bits, round half away.
    let got = run32("cvt.rna.tf32.f32 %r2, %r1;", &[0x3f80_1000; 32], &[0; 32], &[0; 32]);
    assert_eq!(got[0], 0x3f80_2000);
}

#[test]
fn fp8_conversions() {
    // Two f32 → e4m3x2 (first source in the high byte), then back to f16x2.
    let mut rng = Rng(12);
    let mut a = [0u32; 32];
    let mut b = [0u32; 32];
    for l in 0..32 {
        a[l] = ((rng.uniform() * 500.0) as f32).to_bits();
        b[l] = ((rng.uniform() * 2.0) as f32).to_bits();
    }
    let got = run32("cvt.rn.satfinite.e4m3x2.f32 %h1, %r1, %r3; cvt.u32.u16 %r2, %h1;", &a, &b, &[0; 32]);
    for l in 0..32 {
        let hi = trident_core::fp8::f64_to_e4m3(f(a[l]) as f64, true) as u32;
        let lo = trident_core::fp8::f64_to_e4m3(f(b[l]) as f64, true) as u32;
        assert_eq!(got[l], hi << 8 | lo, "lane {l}");
    }
    let got = run32("cvt.rn.satfinite.e5m2x2.f32 %h1, %r1, %r3; cvt.rn.f16x2.e5m2x2 %r2, %h1;", &a, &b, &[0; 32]);
    for l in 0..32 {
        let e = |x: u32| trident_core::fp8::e5m2_to_f64(trident_core::fp8::f64_to_e5m2(f(x) as f64, true));
        let want = (f16::from_f64(e(a[l])).to_bits() as u32) << 16 | f16::from_f64(e(b[l])).to_bits() as u32;
        assert_eq!(got[l], want, "lane {l}");
    }
}

#[test]
fn compare_and_select() {
    check3("setp.lt.s32 %p1, %r1, %r3; selp.b32 %r2, 1, 0, %p1;", SPECIAL_INT, |a, b, _| {
        ((a as i32) < (b as i32)) as u32
    });
    check3("setp.lo.u32 %p1, %r1, %r3; selp.b32 %r2, 1, 0, %p1;", SPECIAL_INT, |a, b, _| (a < b) as u32);
    check3(
        "setp.hs.u32 %p1, %r1, %r3; selp.b32 %r2, %r1, %r3, %p1;",
        SPECIAL_INT,
        |a, b, _| if a >= b { a } else { b },
    );
    check3(
        "setp.ne.b32 %p1, %r1, 0; setp.gt.and.s32 %p2, %r3, 0, %p1; selp.b32 %r2, 1, 0, %p2;",
        SPECIAL_INT,
        |a, b, _| (a != 0 && (b as i32) > 0) as u32,
    );
    check3(
        "setp.eq.s32 %p1|%p2, %r1, %r3; selp.b32 %r4, 2, 0, %p2; selp.b32 %r6, 1, 0, %p1; or.b32 %r2, %r4, %r6;",
        SPECIAL_INT,
        |a, b, _| {
            if a == b {
                1
            } else {
                2
            }
        },
    );
    check3(
        "setp.lt.s32 %p1, %r1, 0; setp.lt.or.s32 %p2, %r3, 0, !%p1; selp.b32 %r2, 1, 0, %p2;",
        SPECIAL_INT,
        |a, b, _| ((b as i32) < 0 || (a as i32) >= 0) as u32,
    );
    check3("set.gt.u32.s32 %r2, %r1, %r3;", SPECIAL_INT, |a, b, _| if (a as i32) > (b as i32) { u32::MAX } else { 0 });
    // Ordered vs unordered float comparisons with NaN.
    checkf(&fbody("setp.lt.f32 %p1, %f1, %f2; selp.f32 %f4, 0f3F800000, 0f00000000, %p1;"), |a, b, _| {
        if a < b {
            0x3f80_0000
        } else {
            0
        }
    });
    checkf(&fbody("setp.geu.f32 %p1, %f1, %f2; selp.f32 %f4, 0f3F800000, 0f00000000, %p1;"), |a, b, _| {
        if a.is_nan() || b.is_nan() || a >= b {
            0x3f80_0000
        } else {
            0
        }
    });
    checkf(&fbody("setp.nan.f32 %p1, %f1, %f2; selp.f32 %f4, 0f3F800000, 0f00000000, %p1;"), |a, b, _| {
        if a.is_nan() || b.is_nan() {
            0x3f80_0000
        } else {
            0
        }
    });
    check3("slct.s32.s32 %r2, %r1, %r3, %r5;", SPECIAL_INT, |a, b, c| if (c as i32) >= 0 { a } else { b });
    checkf(&fbody("testp.notanumber.f32 %p1, %f1; selp.f32 %f4, 0f3F800000, 0f00000000, %p1;"), |a, _, _| {
        if a.is_nan() {
            0x3f80_0000
        } else {
            0
        }
    });
}

#[test]
fn warp_shuffles_and_votes() {
    let lanes: [u32; 32] = std::array::from_fn(|i| 100 + i as u32);
    let z = [0u32; 32];
    let got = run32("shfl.sync.bfly.b32 %r2, %r1, 5, 31, -1;", &lanes, &z, &z);
    assert_eq!(got, (0..32).map(|l| 100 + (l ^ 5)).collect::<Vec<u32>>());
    let got = run32("shfl.sync.down.b32 %r2, %r1, 3, 31, -1;", &lanes, &z, &z);
    assert_eq!(got, (0..32).map(|l| 100 + if l + 3 <= 31 { l + 3 } else { l }).collect::<Vec<u32>>());
    let got = run32("shfl.sync.up.b32 %r2|%p1, %r1, 2, 0, -1;", &lanes, &z, &z);
    assert_eq!(got, (0..32).map(|l| 100 + if l >= 2 { l - 2 } else { l }).collect::<Vec<u32>>());
    // idx within 8-lane segments: c = ((32-8) << 8) | 31.
    let got = run32("shfl.sync.idx.b32 %r2, %r1, 3, 0x181f, -1;", &lanes, &z, &z);
    assert_eq!(got, (0..32).map(|l| 100 + (l & !7) + 3).collect::<Vec<u32>>());
    // down within 16-lane segments (width 16): lanes past the segment end keep their value.
    let got = run32("shfl.sync.down.b32 %r2, %r1, 4, 0x100f, -1;", &lanes, &z, &z);
    assert_eq!(got, (0..32).map(|l| 100 + if (l & 15) + 4 <= 15 { l + 4 } else { l }).collect::<Vec<u32>>());
    let odd: [u32; 32] = std::array::from_fn(|i| (i % 3 == 0) as u32);
    let got = run32("setp.ne.u32 %p1, %r1, 0; vote.sync.ballot.b32 %r2, %p1, -1;", &odd, &z, &z);
    let want: u32 = (0..32).filter(|l| l % 3 == 0).map(|l| 1u32 << l).sum();
    assert!(got.iter().all(|&g| g == want));
    let got = run32("setp.ne.u32 %p1, %r1, 0; vote.sync.any.pred %p2, %p1, -1; vote.sync.all.pred %p3, %p1, -1; selp.b32 %r4, 1, 0, %p2; selp.b32 %r6, 2, 0, %p3; or.b32 %r2, %r4, %r6;", &odd, &z, &z);
    assert!(got.iter().all(|&g| g == 1));
    let keys: [u32; 32] = std::array::from_fn(|i| (i % 4) as u32);
    let got = run32("match.any.sync.b32 %r2, %r1, -1;", &keys, &z, &z);
    for l in 0..32 {
        let want: u32 = (0..32).filter(|j| j % 4 == l % 4).map(|j| 1u32 << j).sum();
        assert_eq!(got[l], want);
    }
    let got = run32("redux.sync.add.u32 %r2, %r1, -1;", &lanes, &z, &z);
    assert!(got.iter().all(|&g| g == (100..132).sum::<u32>()));
    let got = run32("activemask.b32 %r2;", &lanes, &z, &z);
    assert!(got.iter().all(|&g| g == u32::MAX));
}

#[test]
fn divergence_and_reconvergence() {
    // Lanes loop a lane-dependent number of times; an if/else inside; after the loop
    // all lanes are active again (activemask), and each lane's result is its own.
    let body = "
  mov.u32 %r10, 0;
  mov.u32 %r11, 0;
LOOP:
  setp.ge.u32 %p1, %r11, %r1;
  @%p1 bra DONE;
  and.b32 %r12, %r11, 1;
  setp.eq.u32 %p2, %r12, 0;
  @%p2 bra EVEN;
  add.u32 %r10, %r10, 100;
  bra NEXT;
EVEN:
  add.u32 %r10, %r10, 1;
NEXT:
  add.u32 %r11, %r11, 1;
  bra LOOP;
DONE:
  activemask.b32 %r13;
  setp.eq.u32 %p3, %r13, -1;
  @!%p3 trap;
  mov.u32 %r2, %r10;
";
    let trips: [u32; 32] = std::array::from_fn(|i| i as u32 % 7);
    let got = run32(body, &trips, &[0; 32], &[0; 32]);
    for l in 0..32 {
        let n = trips[l];
        let want: u32 = (0..n).map(|i| if i % 2 == 0 { 1 } else { 100 }).sum();
        assert_eq!(got[l], want, "lane {l}");
    }
    // Predicated early exit of half the lanes; the rest keep going.
    let body = "
  and.b32 %r4, %r0, 1;
  setp.eq.u32 %p1, %r4, 1;
  mov.u32 %r2, 7;
  st.global.u32 [%rd4], %r2;
  @%p1 exit;
  activemask.b32 %r2;
";
    let got = run32(body, &[0; 32], &[0; 32], &[0; 32]);
    for l in 0..32 {
        assert_eq!(got[l], if l % 2 == 1 { 7 } else { 0x5555_5555 }, "lane {l}");
    }
}
