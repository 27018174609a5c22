//! Builtins end to end on the interpreter, against Rust references.

mod common;
use common::*;
use trident_core::{DType, HostTensor};

const HDR: &str = "import triton\nimport triton.language as tl\nfrom triton.language.extra import libdevice\n\n\n";

fn f32s(v: &[f64]) -> HostTensor {
    HostTensor::from_f64(DType::F32, &[v.len()], v)
}

#[test]
fn libdevice_functions() {
    let src = format!(
        "{HDR}@triton.jit\ndef k(x, o, B: tl.constexpr):\n    i = tl.arange(0, B)\n    v = tl.load(x + i)\n    \
         tl.store(o + i, libdevice.tanh(v))\n    tl.store(o + B + i, libdevice.pow(v, 2))\n    \
         tl.store(o + 2 * B + i, libdevice.isnan(v / v).to(tl.float32))\n    tl.store(o + 3 * B + i, libdevice.fast_expf(v))\n    \
         tl.store(o + 4 * B + i, libdevice.float2int_rn(v * 3).to(tl.float32))\n    tl.store(o + 5 * B + i, tl.math.erf(v))\n"
    );
    let x = [0.5, -1.25, 0.0, 2.0];
    let out =
        run(&src, "k", &[("x", A::T(f32s(&x))), ("o", A::T(poison(DType::F32, &[24]))), ("B", cint(4))], [1, 1, 1]);
    let mut want = vec![];
    want.extend(x.iter().map(|v: &f64| (*v as f32).tanh() as f64));
    want.extend(x.iter().map(|v| v * v));
    want.extend(x.iter().map(|v| if *v == 0.0 { 1.0 } else { 0.0 }));
    want.extend(x.iter().map(|v| (*v as f32).exp() as f64));
    want.extend(x.iter().map(|v| ((v * 3.0) as f32).round_ties_even() as f64));
    want.extend(x.iter().map(|v| libm_erf(*v)));
    assert_close(&out["o"], &want, 2e-6, 2e-6);
}

fn libm_erf(x: f64) -> f64 {
    // Abramowitz-Stegun 7.1.26 is too coarse; integrate instead (Simpson) for a reference.
    let n = 2000;
    let h = x / n as f64;
    let f = |t: f64| (-t * t).exp();
    let mut s = f(0.0) + f(x);
    for i in 1..n {
        s += f(i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    s * h / 3.0 * 2.0 / std::f64::consts::PI.sqrt()
}

#[test]
fn device_print_and_assert() {
    let src = format!(
        "{HDR}@triton.jit\ndef k(x, n):\n    v = tl.load(x + tl.arange(0, 2))\n    tl.device_print(\"v\", v)\n    print(\"n=\", n)\n    tl.device_assert(n < 10, \"n too big\")\n"
    );
    let (_, printed) = run_full(&src, "k", &[("x", A::T(f32s(&[1.5, -2.0]))), ("n", A::I(3))], [1, 1, 1]);
    assert!(printed.contains("v: ") && printed.contains("1.5") && printed.contains("-2"), "{printed}");
    assert!(printed.contains("n=") && printed.contains('3'), "{printed}");
    let c = compile_ok(&src, "k", &[("x", A::T(f32s(&[1.5, -2.0]))), ("n", A::I(30))]);
    assert!(c.module.to_string().contains("assert"), "{}", c.module);
    // Without debug, Triton drops device asserts.
    let file = trident_front::parse_file("t.py", &src).unwrap();
    let args = vec![
        ("x".to_string(), trident_front::ArgInfo::Pointer { dtype: DType::F32, aligned16: true }),
        ("n".to_string(), trident_front::ArgInfo::Int(30)),
    ];
    let c = trident_front::compile(&file, "k", &args, &Default::default()).unwrap();
    assert!(!c.module.to_string().contains("assert"));
}

#[test]
fn elementwise_helpers() {
    let src = format!(
        "{HDR}@triton.jit\ndef k(x, o, u, B: tl.constexpr):\n    i = tl.arange(0, B)\n    v = tl.load(x + i)\n    \
         tl.store(o + i, tl.clamp(v, -1.0, 1.0))\n    tl.store(o + B + i, tl.fdiv(v, 3))\n    \
         tl.store(o + 2 * B + i, tl.where(v > 0, v, 0))\n    tl.store(o + 3 * B + i, tl.fma(v, v, 1.0))\n    \
         tl.store(o + 4 * B + i, tl.maximum(v, v / 0.0, propagate_nan=tl.PropagateNan.ALL))\n    \
         w = tl.load(u + i)\n    tl.store(u + i, tl.umulhi(w, w))\n"
    );
    let x = [0.5, -1.25, 3.0, -0.0];
    let u: Vec<f64> = vec![4_000_000_000.0, 7.0, 65536.0, 123_456_789.0];
    let out = run(
        &src,
        "k",
        &[
            ("x", A::T(f32s(&x))),
            ("o", A::T(poison(DType::F32, &[20]))),
            ("u", A::T(HostTensor::from_f64(DType::U32, &[4], &u))),
            ("B", cint(4)),
        ],
        [1, 1, 1],
    );
    let mut want = vec![];
    want.extend(x.iter().map(|v: &f64| v.clamp(-1.0, 1.0)));
    want.extend(x.iter().map(|v| (*v as f32 / 3.0) as f64));
    want.extend(x.iter().map(|v| if *v > 0.0 { *v } else { 0.0 }));
    want.extend(x.iter().map(|v| v.mul_add(*v, 1.0)));
    // propagate_nan=ALL: a NaN operand (here -0.0 / 0.0) wins.
    want.extend(x.iter().map(|v| if (v / 0.0).is_nan() { f64::NAN } else { v.max(v / 0.0) }));
    assert_close(&out["o"], &want[..20], 1e-7, 0.0);
    let uw: Vec<f64> = u.iter().map(|&w| ((w as u64 * w as u64) >> 32) as f64).collect();
    assert_close(&out["u"], &uw, 0.0, 0.0);
}

#[test]
fn bool_memory_and_casts() {
    let src = format!(
        "{HDR}@triton.jit\ndef k(b, f, h):\n    i = tl.arange(0, 4)\n    m = tl.load(b + i)\n    tl.store(b + i, ~m)\n    \
         v = tl.load(f + i)\n    tl.store(h + i, v.to(tl.float16, fp_downcast_rounding=\"rtz\"))\n    \
         tl.store(f + i, (v.to(tl.int32, bitcast=True) >> 31).to(tl.float32))\n"
    );
    let b = HostTensor::from_f64(DType::I1, &[4], &[1.0, 0.0, 0.0, 1.0]);
    let x = [1.0 + 1.0 / 2048.0 + 1.0 / 4096.0, -3.999, 65519.0, -0.5];
    let out =
        run(&src, "k", &[("b", A::T(b)), ("f", A::T(f32s(&x))), ("h", A::T(poison(DType::F16, &[4])))], [1, 1, 1]);
    assert_close(&out["b"], &[0.0, 1.0, 1.0, 0.0], 0.0, 0.0);
    // Round toward zero to fp16.
    assert_close(&out["h"], &[1.0, -3.998046875, 65504.0, -0.5], 0.0, 0.0);
    assert_close(&out["f"], &[0.0, -1.0, 0.0, -1.0], 0.0, 0.0);
}

#[test]
fn shape_builtins() {
    let src = format!(
        "{HDR}@triton.jit\ndef k(x, o):\n    r = tl.arange(0, 2)[:, None] * 4 + tl.arange(0, 4)[None, :]\n    v = tl.load(x + r)\n    \
         c = tl.cat(v, v * 10, dim=1)\n    tl.store(o + tl.arange(0, 2)[:, None] * 8 + tl.arange(0, 8)[None, :], c)\n    \
         e = tl.expand_dims(tl.sum(v, 1), (0, 2))\n    tl.store(o + 16 + tl.arange(0, 2)[None, :, None], e)\n    \
         s = tl.reshape(tl.sum(v, axis=None, keep_dims=True), ())\n    tl.store(o + 18, s)\n    \
         z = tl.zeros_like(v) + tl.full((2, 4), 3, tl.float32)\n    tl.store(o + 19, tl.sum(z))\n    tl.store(o + 20, tl.ravel(v).shape[0])\n"
    );
    let x: Vec<f64> = (0..8).map(|i| i as f64 - 3.0).collect();
    let out = run(&src, "k", &[("x", A::T(f32s(&x))), ("o", A::T(poison(DType::F32, &[21])))], [1, 1, 1]);
    let mut want = vec![];
    for r in 0..2 {
        for c in 0..8 {
            want.push(if c < 4 { x[r * 4 + c] } else { x[r * 4 + c - 4] * 10.0 });
        }
    }
    want.push(x[..4].iter().sum());
    want.push(x[4..].iter().sum());
    want.push(x.iter().sum());
    want.push(24.0);
    want.push(8.0);
    assert_close(&out["o"], &want, 0.0, 0.0);
}
