//! Language constructs one by one (control flow, atomics, integer arithmetic, casts,
//! shape ops, scalars, debug ops) as small Python kernels: emulator vs interpreter.

mod common;
use common::*;
use trident_core::{DType, HostTensor};

const HEADER: &str = "import triton\nimport triton.language as tl\nfrom triton.language.extra import libdevice\n\n";

fn src(body: &str) -> String {
    format!("{HEADER}{body}")
}

#[test]
fn control_flow() {
    let s = src(r#"
@triton.jit
def flow(x, y, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m, other=0)
    acc = tl.zeros((BLOCK,), dtype=tl.int32)
    i = 0
    while i < pid + 3:
        acc += v * i
        i += 1
    if pid % 2 == 0:
        acc = acc + 1
    else:
        acc = acc - 7
    for j in range(0, n % 11):
        if j % 3 == 0:
            continue
        if j > 8:
            break
        acc ^= j
    for k in range(n % 5, 0, -1):
        acc += k
    tl.store(y + offs, acc, mask=m)
"#);
    let mut rng = Rng(seed());
    for &(n, block, warps) in &[(300usize, 128i64, 4u32), (77, 64, 2), (1000, 256, 8)] {
        let args = [
            ("x", A::T(random(&mut rng, DType::I32, &[n], 1000.0))),
            ("y", A::T(poisoned(DType::I32, &[n]))),
            ("n", A::I(n as i64)),
            ("BLOCK", A::C(block)),
        ];
        py_differential(&s, "flow", &args, warps, [(n as u32).div_ceil(block as u32), 1, 1], None);
    }
}

#[test]
fn atomics() {
    let s = src(r#"
@triton.jit
def atomics(x, f, cnt, mx, mn, fsum, fmx, xo, old, bits, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m, other=0)
    w = tl.load(f + offs, mask=m, other=0.0)
    tl.atomic_add(cnt + (offs % 7), 1, mask=m)
    tl.atomic_max(mx + (offs % 5), v, mask=m)
    tl.atomic_min(mn + (offs % 5), v, mask=m)
    tl.atomic_add(fsum + (offs % 3), w, mask=m)
    tl.atomic_max(fmx + (offs % 4), w, mask=m)
    tl.atomic_min(fmx + 4 + (offs % 4), w, mask=m)
    o = tl.atomic_xchg(xo + offs, v, mask=m)
    tl.store(old + offs, o, mask=m)
    tl.atomic_or(bits + (offs % 2), 1 << (offs % 31), mask=m)
    tl.atomic_xor(bits + 2 + offs * 0, offs, mask=m)
    tl.atomic_and(bits + 3 + offs * 0, ~(1 << (offs % 31)), mask=m)
"#);
    let mut rng = Rng(seed());
    for &(n, block, warps) in &[(1000usize, 256i64, 4u32), (300, 128, 2)] {
        let fmx = HostTensor::from_f64(DType::F32, &[8], &[-1e30, -1e30, -1e30, -1e30, 1e30, 1e30, 1e30, 1e30]);
        let bits = HostTensor::from_f64(DType::I32, &[4], &[0.0, 0.0, 0.0, -1.0]);
        let args = [
            ("x", A::T(random(&mut rng, DType::I32, &[n], 100000.0))),
            ("f", A::T(random(&mut rng, DType::F32, &[n], 100.0))),
            ("cnt", A::T(HostTensor::zeros(DType::I32, &[7]))),
            ("mx", A::T(HostTensor::from_f64(DType::I32, &[5], &[-1e9; 5]))),
            ("mn", A::T(HostTensor::from_f64(DType::I32, &[5], &[1e9; 5]))),
            ("fsum", A::T(HostTensor::zeros(DType::F32, &[3]))),
            ("fmx", A::T(fmx)),
            ("xo", A::T(random(&mut rng, DType::I32, &[n], 1000.0))),
            ("old", A::T(poisoned(DType::I32, &[n]))),
            ("bits", A::T(bits)),
            ("n", A::I(n as i64)),
            ("BLOCK", A::C(block)),
        ];
        py_differential(&s, "atomics", &args, warps, [(n as u32).div_ceil(block as u32), 1, 1], Some((1e-5, 1e-3)));
    }
}

#[test]
fn atomic_cas_counter() {
    // One ticket per program through a compare-and-swap retry loop.
    let s = src(r#"
@triton.jit
def tickets(lock, out):
    pid = tl.program_id(0)
    done = 0
    got = 0
    while done == 0:
        cur = tl.load(lock, volatile=True)
        prev = tl.atomic_cas(lock, cur, cur + 1)
        if prev == cur:
            done = 1
            got = cur
    tl.store(out + pid, got)
"#);
    let (m, k, rt) = front_text(
        "test.py",
        &s,
        "tickets",
        &[("lock", A::T(HostTensor::zeros(DType::I32, &[1]))), ("out", A::T(poisoned(DType::I32, &[16])))],
    );
    let kernel = compile(&m, &k, 4);
    let got = run_emu(&kernel, [16, 1, 1], &rt);
    assert_eq!(got[0].get_f64(0), 16.0, "lock counter");
    let mut tickets: Vec<i64> = (0..16).map(|i| got[1].get_f64(i) as i64).collect();
    tickets.sort();
    assert_eq!(tickets, (0..16).collect::<Vec<i64>>(), "every program got a distinct ticket");
}

/// Integer arithmetic of every width: out[k*N + i] = op_k(a[i], b[i]).
fn int_ops(dt: &str) -> String {
    let ops = [
        "a + b",
        "a - b",
        "a * b",
        "a // bnz",
        "a % bnz",
        "a & b",
        "a | b",
        "a ^ b",
        "tl.maximum(a, b)",
        "tl.minimum(a, b)",
        "a << sh",
        "a >> sh",
        "-a",
        "~a",
        "tl.where(a < b, a, b)",
        "(a == b).to(tl.DT)",
        "(a != b).to(tl.DT)",
        "(a >= b).to(tl.DT)",
        "tl.abs(a)",
    ];
    let mut body = String::new();
    for (k, o) in ops.iter().enumerate() {
        body.push_str(&format!("    tl.store(out + {k} * BLOCK + offs, ({o}).to(tl.DT))\n"));
    }
    src(&format!(
        r#"
@triton.jit
def int_ops(x, y, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x + offs)
    b = tl.load(y + offs)
    bnz = tl.where(b == 0, 1, b).to(tl.DT)
    sh = (b & (BITS - 1)).to(tl.DT)
{body}"#
    ))
    .replace("tl.DT", &format!("tl.{dt}"))
    .replace(
        "BITS",
        match dt {
            "int8" | "uint8" => "8",
            "int16" | "uint16" => "16",
            "int64" | "uint64" => "64",
            _ => "32",
        },
    )
}

#[test]
fn integer_arithmetic_of_every_width_is_exact() {
    let mut rng = Rng(seed());
    for (name, dt) in [
        ("int8", DType::I8),
        ("uint8", DType::U8),
        ("int16", DType::I16),
        ("uint16", DType::U16),
        ("int32", DType::I32),
        ("uint32", DType::U32),
        ("int64", DType::I64),
        ("uint64", DType::U64),
    ] {
        let block = 256usize;
        let range = match dt.bits() {
            8 => 100.0,
            16 => 30000.0,
            _ => 1e9,
        };
        let args = [
            ("x", A::T(random(&mut rng, dt, &[block], range))),
            ("y", A::T(random(&mut rng, dt, &[block], range))),
            ("out", A::T(poisoned(dt, &[19 * block]))),
            ("BLOCK", A::C(block as i64)),
        ];
        py_differential(&int_ops(name), "int_ops", &args, 4, [1, 1, 1], None);
    }
}

/// Division and remainder by constants (lowered to shifts and multiply-highs):
/// out[k*N + i] = a[i] // c_k or a[i] % c_k, negative dividends and the extremes included.
#[test]
fn integer_division_by_constants_is_exact() {
    let divisors = [1i64, 2, 16, 128, 3, 7, 10, 1000, 65537, 2147483647];
    let mut body = String::new();
    for (k, c) in divisors.iter().enumerate() {
        body.push_str(&format!("    tl.store(out + {} * BLOCK + offs, a // {c})\n", 2 * k));
        body.push_str(&format!("    tl.store(out + {} * BLOCK + offs, a % {c})\n", 2 * k + 1));
    }
    let s = src(&format!(
        r#"
@triton.jit
def divs(x, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x + offs)
{body}"#
    ));
    let mut rng = Rng(seed());
    for dt in [DType::I32, DType::U32, DType::I64, DType::U64] {
        let block = 256usize;
        let (lo, hi): (i64, i64) = match dt {
            DType::I32 => (i32::MIN as i64, i32::MAX as i64),
            DType::U32 => (0, u32::MAX as i64),
            DType::I64 => (-(1i64 << 52), 1i64 << 52),
            _ => (0, 1i64 << 52),
        };
        let mut vals: Vec<f64> = (0..block).map(|_| (lo + (rng.next_u64() % (hi - lo) as u64) as i64) as f64).collect();
        // Small values, the extremes and their neighbours.
        let special = [lo, lo + 1, hi, hi - 1, 0, 1, -1, 2, -2, 7, -7, 127, -128, 65537, -65537];
        for (i, &v) in special.iter().filter(|&&v| v >= lo && v <= hi).enumerate() {
            vals[i] = v as f64;
        }
        for v in vals.iter_mut().skip(32).take(64) {
            *v = (*v as i64 % 3000) as f64;
        }
        let args = [
            ("x", A::T(HostTensor::from_f64(dt, &[block], &vals))),
            ("out", A::T(poisoned(dt, &[2 * divisors.len() * block]))),
            ("BLOCK", A::C(block as i64)),
        ];
        py_differential(&s, "divs", &args, 4, [1, 1, 1], None);
    }
}

#[test]
fn umulhi_and_bit_counts() {
    let s = src(r#"
@triton.jit
def bits(x, y, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x + offs)
    b = tl.load(y + offs)
    tl.store(out + offs, tl.umulhi(a, b))
    tl.store(out + BLOCK + offs, libdevice.popc(a))
    tl.store(out + 2 * BLOCK + offs, libdevice.clz(a))
"#);
    let mut rng = Rng(seed());
    let args = [
        ("x", A::T(random(&mut rng, DType::I32, &[128], 2e9))),
        ("y", A::T(random(&mut rng, DType::I32, &[128], 2e9))),
        ("out", A::T(poisoned(DType::I32, &[384]))),
        ("BLOCK", A::C(128)),
    ];
    py_differential(&s, "bits", &args, 4, [1, 1, 1], None);
}

#[test]
fn casts_between_number_types() {
    let targets = [
        "int8",
        "uint8",
        "int16",
        "int32",
        "uint32",
        "int64",
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "float8e4nv",
        "float8e5",
    ];
    let mut body = String::new();
    for (k, t) in targets.iter().enumerate() {
        // Through the target type and back to f32, so that one output buffer holds everything.
        body.push_str(&format!("    tl.store(out + {k} * BLOCK + offs, a.to(tl.{t}).to(tl.float32))\n"));
        let rtz = if t.starts_with("float") && *t != "float32" && *t != "float64" || *t == "bfloat16" {
            format!("a.to(tl.{t}, fp_downcast_rounding='rtz')")
        } else {
            format!("a.to(tl.{t})")
        };
        body.push_str(&format!(
            "    tl.store(out + ({k} + {n}) * BLOCK + offs, {rtz}.to(tl.float32))\n",
            n = targets.len()
        ));
    }
    let s = src(&format!(
        r#"
@triton.jit
def casts(x, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x + offs)
{body}"#
    ));
    let mut rng = Rng(seed());
    let n = 512usize;
    let mut vals: Vec<f64> = (0..n).map(|i| if i % 3 == 0 { rng.unit() * 300.0 } else { rng.unit() * 3.0 }).collect();
    // Specials (kept in range of the integer targets where C leaves the result undefined).
    vals[1] = 0.5;
    vals[2] = -0.5;
    vals[4] = 2.5;
    vals[5] = 1e-7;
    vals[7] = 65504.0 * 2.0;
    let x = HostTensor::from_f64(DType::F32, &[n], &vals);
    let args =
        [("x", A::T(x)), ("out", A::T(poisoned(DType::F32, &[2 * targets.len() * n]))), ("BLOCK", A::C(n as i64))];
    // Float→int of values out of the target's range is undefined in C and Triton: the
    // kernel only converts in-range values except where saturation is defined (fp8).
    let (m, k, rt) = front_text("test.py", &s, "casts", &args);
    let kernel = compile(&m, &k, 4);
    let got = run_emu(&kernel, [1, 1, 1], &rt);
    let want = run_interp(&m, &k, [1, 1, 1], &rt);
    for (t, name) in targets.iter().enumerate() {
        for rnd in 0..2 {
            let base = (t + rnd * targets.len()) * n;
            for (i, &v) in vals.iter().enumerate() {
                let (g, w) = (got[1].get_f64(base + i), want[1].get_f64(base + i));
                let int_target = !name.starts_with("float") && !name.starts_with("bfloat");
                if int_target && (v.abs() >= 127.0 || (name.starts_with('u') && v < 0.0)) {
                    continue;
                }
                assert!(
                    g == w || (g.is_nan() && w.is_nan()),
                    "cast to {name} (rtz: {rnd}) of {v}: emulator {g}, interpreter {w}"
                );
            }
        }
    }
}

use trident_gpu::Target;

#[test]
fn fp8_conversions_match_on_both_targets() {
    let s = src(r#"
@triton.jit
def fp8(x, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x + offs)
    tl.store(out + offs, a.to(tl.float8e4nv).to(tl.float32))
    tl.store(out + BLOCK + offs, a.to(tl.float8e5).to(tl.float32))
    tl.store(out + 2 * BLOCK + offs, a.to(tl.float16).to(tl.float8e5).to(tl.float32))
"#);
    let mut rng = Rng(seed());
    let n = 1024usize;
    let mut vals: Vec<f64> = (0..n).map(|i| rng.unit() * [1e-3, 1.0, 30.0, 500.0, 70000.0][i % 5]).collect();
    vals[0] = f64::NAN;
    vals[1] = f64::INFINITY;
    vals[2] = -f64::INFINITY;
    vals[3] = 448.0;
    vals[4] = 464.0;
    vals[5] = 0.0;
    vals[6] = -0.0;
    vals[7] = 2f64.powi(-9);
    vals[8] = 2f64.powi(-10) * 1.5;
    let x = HostTensor::from_f64(DType::F32, &[n], &vals);
    let args = [("x", A::T(x)), ("out", A::T(poisoned(DType::F32, &[3 * n]))), ("BLOCK", A::C(n as i64))];
    let (m, k, rt) = front_text("test.py", &s, "fp8", &args);
    let want = run_interp(&m, &k, [1, 1, 1], &rt);
    for target in [Target::Sm80, Target::Sm90] {
        let opts = trident_gpu::GpuOptions { target, num_warps: 4, ..Default::default() };
        let kernel = trident_gpu::emit_ptx(&m, &k, &opts).unwrap_or_else(|d| panic!("{d}"));
        ptxas_ok(&kernel.ptx, target.arch());
        let got = run_emu(&kernel, [1, 1, 1], &rt);
        for i in 0..3 * n {
            let (g, w) = (got[1].get_f64(i), want[1].get_f64(i));
            assert!(
                g == w || (g.is_nan() && w.is_nan()),
                "{target}: element {i} (x = {}): emulator {g}, interpreter {w}",
                vals[i % n]
            );
        }
    }
}

#[test]
fn shape_ops() {
    let s = src(r#"
@triton.jit
def shapes(x, out, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    a = tl.load(x + r[:, None] * C + c[None, :])
    t = tl.trans(a)
    tl.store(out + c[:, None] * R + r[None, :], t * 2)
    flat = tl.reshape(a, (R * C,))
    tl.store(out + R * C + tl.arange(0, R * C), flat + 1)
    j = tl.join(a, a * 3)
    lo, hi = tl.split(j)
    tl.store(out + 2 * R * C + r[:, None] * C + c[None, :], lo + hi)
    both = tl.cat(r, r + 100, can_reorder=True)
    tl.store(out + 3 * R * C + tl.arange(0, 2 * R), tl.sort(both) if False else both)
    s = tl.sum(a, axis=1)
    tl.store(out + 3 * R * C + 2 * R + r, s)
"#);
    let mut rng = Rng(seed());
    for &(r, c, warps) in &[(16usize, 32usize, 4u32), (8, 8, 1), (64, 16, 8)] {
        let n = 3 * r * c + 3 * r;
        let args = [
            ("x", A::T(random(&mut rng, DType::I32, &[r * c], 1000.0))),
            ("out", A::T(poisoned(DType::I32, &[n]))),
            ("R", A::C(r as i64)),
            ("C", A::C(c as i64)),
        ];
        py_differential(&s, "shapes", &args, warps, [1, 1, 1], None);
    }
}

#[test]
fn scalars_and_program_ids() {
    let s = src(r#"
@triton.jit
def scalars(x, out, a, b):
    px = tl.program_id(0)
    py = tl.program_id(1)
    pz = tl.program_id(2)
    nx = tl.num_programs(0)
    ny = tl.num_programs(1)
    lin = (pz * ny + py) * nx + px
    v = tl.load(x + lin)
    r = v * a + b - lin
    if v > 0:
        r = r * 2
    tl.store(out + lin, r)
"#);
    let mut rng = Rng(seed());
    let n = 2 * 3 * 4;
    let args = [
        ("x", A::T(random(&mut rng, DType::F32, &[n], 10.0))),
        ("out", A::T(poisoned(DType::F32, &[n]))),
        ("a", A::F(1.5)),
        ("b", A::F(-0.25)),
    ];
    py_differential(&s, "scalars", &args, 4, [2, 3, 4], None);
}

#[test]
fn print_matches_the_interpreter() {
    let s = src(r#"
@triton.jit
def show(x, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    tl.device_print("v", v)
    tl.device_print("n", offs, v.to(tl.int32))
"#);
    let mut rng = Rng(seed());
    let (m, k, rt) =
        front_text("test.py", &s, "show", &[("x", A::T(random(&mut rng, DType::F32, &[8], 10.0))), ("BLOCK", A::C(8))]);
    let kernel = compile(&m, &k, 1);
    let (_, got) = run_emu_printed(&kernel, [2, 1, 1], &rt).unwrap();
    let (_, want) = run_interp_printed(&m, &k, [2, 1, 1], &rt).unwrap();
    let mut g: Vec<&str> = got.lines().collect();
    let mut w: Vec<&str> = want.lines().collect();
    g.sort();
    w.sort();
    assert_eq!(g, w, "emulator printed:\n{got}\ninterpreter printed:\n{want}");
    assert!(!g.is_empty());
}

#[test]
fn failing_assert_traps_with_its_message() {
    let s = src(r#"
@triton.jit
def check(x, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    tl.device_assert(v < 5, "v is too big")
"#);
    let mut vals = vec![1.0; 64];
    vals[17] = 9.0;
    let x = HostTensor::from_f64(DType::F32, &[64], &vals);
    let file = trident_front::parse_file("test.py", &s).unwrap();
    let c = trident_front::compile(
        &file,
        "check",
        &[
            ("x".into(), trident_front::ArgInfo::Pointer { dtype: DType::F32, aligned16: true }),
            ("BLOCK".into(), trident_front::ArgInfo::Constexpr(trident_front::ConstValue::int(64))),
        ],
        &trident_front::CompileOptions { debug: true, ..Default::default() },
    )
    .unwrap();
    let kernel = compile(&c.module, &c.kernel, 2);
    let err = run_emu_printed(&kernel, [1, 1, 1], &[Arg::Tensor(x.clone())]).unwrap_err();
    assert!(err.contains("trap") || err.contains("v is too big"), "{err}");
    let ok = HostTensor::from_f64(DType::F32, &[64], &[1.0; 64]);
    run_emu_printed(&kernel, [1, 1, 1], &[Arg::Tensor(ok)]).unwrap();
}

#[test]
fn small_and_batched_dots() {
    let s = src(r#"
@triton.jit
def small_dot(a, b, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    m = tl.arange(0, M)
    n = tl.arange(0, N)
    k = tl.arange(0, K)
    x = tl.load(a + m[:, None] * K + k[None, :])
    y = tl.load(b + k[:, None] * N + n[None, :])
    tl.store(c + m[:, None] * N + n[None, :], tl.dot(x, y))
"#);
    let mut rng = Rng(seed());
    for &(m, n, k, warps, dt) in &[
        (16usize, 8usize, 16usize, 1u32, DType::F16),
        (16, 16, 16, 4, DType::F16),
        (32, 16, 32, 2, DType::BF16),
        (16, 16, 8, 4, DType::F32),
    ] {
        let args = [
            ("a", A::T(random(&mut rng, dt, &[m * k], 1.0))),
            ("b", A::T(random(&mut rng, dt, &[k * n], 1.0))),
            ("c", A::T(poisoned(DType::F32, &[m * n]))),
            ("M", A::C(m as i64)),
            ("N", A::C(n as i64)),
            ("K", A::C(k as i64)),
        ];
        let tol = if dt == DType::F32 { (5e-3, 5e-3) } else { (1e-4, 1e-4) };
        py_differential(&s, "small_dot", &args, warps, [1, 1, 1], Some(tol));
    }
    let s3 = src(r#"
@triton.jit
def bdot(a, b, c, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    i = tl.arange(0, B)
    m = tl.arange(0, M)
    n = tl.arange(0, N)
    k = tl.arange(0, K)
    x = tl.load(a + i[:, None, None] * M * K + m[None, :, None] * K + k[None, None, :])
    y = tl.load(b + i[:, None, None] * K * N + k[None, :, None] * N + n[None, None, :])
    z = tl.dot(x, y)
    tl.store(c + i[:, None, None] * M * N + m[None, :, None] * N + n[None, None, :], z)
"#);
    let (bb, m, n, k) = (2usize, 16usize, 16usize, 16usize);
    let args = [
        ("a", A::T(random(&mut rng, DType::F16, &[bb * m * k], 1.0))),
        ("b", A::T(random(&mut rng, DType::F16, &[bb * k * n], 1.0))),
        ("c", A::T(poisoned(DType::F32, &[bb * m * n]))),
        ("B", A::C(bb as i64)),
        ("M", A::C(m as i64)),
        ("N", A::C(n as i64)),
        ("K", A::C(k as i64)),
    ];
    py_differential(&s3, "bdot", &args, 4, [1, 1, 1], Some((1e-4, 1e-4)));
}

#[test]
fn atomic_results_of_small_blocks_reach_every_copy() {
    // 16 elements over 128 threads: each element has 8 holders, one issues the atomic.
    let s = src(r#"
@triton.jit
def small(cnt, old, scal):
    offs = tl.arange(0, 16)
    o = tl.atomic_add(cnt + offs, offs + 1)
    tl.store(old + offs, o * 10 + tl.program_id(0) * 0)
    s = tl.atomic_add(scal, 1)
    tl.store(old + 16 + offs, s + offs * 0)
"#);
    let args = [
        ("cnt", A::T(HostTensor::from_f64(DType::I32, &[16], &[5.0; 16]))),
        ("old", A::T(poisoned(DType::I32, &[32]))),
        ("scal", A::T(HostTensor::from_f64(DType::I32, &[1], &[41.0]))),
    ];
    py_differential(&s, "small", &args, 4, [1, 1, 1], None);
}

fn narrow_atomics_kernel(dt: &str, op: &str) -> String {
    let zero = if dt.starts_with('f') || dt.starts_with("bf") { "0.0" } else { "0" };
    format!(
        r#"
kernel @narrow(%x: ptr<{dt}> {{divisibility = 16}}, %acc: ptr<{dt}> {{divisibility = 16}}, %old: ptr<{dt}> {{divisibility = 16}}) {{
  %r = arange [start = 0, end = 256] : tensor<256xi32>
  %xs = splat %x : tensor<256xptr<{dt}>>
  %p = addptr %xs, %r : tensor<256xptr<{dt}>>
  %v = load %p : tensor<256x{dt}>
  %k = constant [value = 5] : tensor<256xi32>
  %slot = rem %r, %k : tensor<256xi32>
  %as = splat %acc : tensor<256xptr<{dt}>>
  %q = addptr %as, %slot : tensor<256xptr<{dt}>>
  %o = atomic_rmw %q, %v [op = {op}, sem = acq_rel, scope = gpu] : tensor<256x{dt}>
  %os = splat %old : tensor<256xptr<{dt}>>
  %op2 = addptr %os, %r : tensor<256xptr<{dt}>>
  %z = constant [value = {zero}] : tensor<256x{dt}>
  %keep = cmp %o, %z [pred = ne] : tensor<256xi1>
  store %op2, %o, %keep
  return
}}
"#
    )
}

#[test]
fn atomics_without_native_instructions_use_cas_loops() {
    // Results that do not depend on the order of the atomics: the final accumulators of
    // commutative, exact operations (the old values are order-dependent and only checked
    // for one-element slots below).
    let mut rng = Rng(seed());
    for (dt, dtype, ops) in [
        ("i16", DType::I16, vec!["max", "min", "add", "and", "or", "xor"]),
        ("u8", DType::U8, vec!["max", "min", "or"]),
        ("i8", DType::I8, vec!["max", "min"]),
        ("f16", DType::F16, vec!["max", "min"]),
        ("bf16", DType::BF16, vec!["max", "min"]),
        ("f64", DType::F64, vec!["max", "min"]),
    ] {
        for op in ops {
            let m = parse(&narrow_atomics_kernel(dt, op));
            let init = random(&mut rng, dtype, &[8], 20.0);
            let x = random(&mut rng, dtype, &[256], 20.0);
            let args = [Arg::Tensor(x), Arg::Tensor(init), Arg::Tensor(HostTensor::zeros(dtype, &[256]))];
            let k = compile(&m, "narrow", 4);
            let got = run_emu(&k, [1, 1, 1], &args);
            let want = run_interp(&m, "narrow", [1, 1, 1], &args);
            for i in 0..8 {
                let (g, w) = (got[1].get_f64(i), want[1].get_f64(i));
                assert!(g == w, "{dt} atomic {op}: slot {i}: emulator {g}, interpreter {w}");
            }
        }
    }
}

#[test]
fn fp8_dots_run_on_tensor_cores_on_both_targets() {
    let text = r#"
kernel @fp8dot(%a: ptr<f8e4m3> {divisibility = 16}, %b: ptr<f8e5m2> {divisibility = 16}, %c: ptr<f32> {divisibility = 16}) {
  %m = arange [start = 0, end = 32] : tensor<32xi32>
  %me = expand_dims %m [axis = 1] : tensor<32x1xi32>
  %ke = expand_dims %m [axis = 0] : tensor<1x32xi32>
  %mb = broadcast %me : tensor<32x32xi32>
  %kb = broadcast %ke : tensor<32x32xi32>
  %s = constant [value = 32] : tensor<32x32xi32>
  %r = mul %mb, %s : tensor<32x32xi32>
  %o = add %r, %kb : tensor<32x32xi32>
  %as = splat %a : tensor<32x32xptr<f8e4m3>>
  %ap = addptr %as, %o : tensor<32x32xptr<f8e4m3>>
  %x = load %ap : tensor<32x32xf8e4m3>
  %bs = splat %b : tensor<32x32xptr<f8e5m2>>
  %bp = addptr %bs, %o : tensor<32x32xptr<f8e5m2>>
  %y = load %bp : tensor<32x32xf8e5m2>
  %z = constant [value = 0.0] : tensor<32x32xf32>
  %d = dot %x, %y, %z [precision = tf32] : tensor<32x32xf32>
  %cs = splat %c : tensor<32x32xptr<f32>>
  %cp = addptr %cs, %o : tensor<32x32xptr<f32>>
  store %cp, %d
  return
}
"#;
    let m = parse(text);
    let mut rng = Rng(seed());
    let args = [
        Arg::Tensor(random(&mut rng, DType::F8E4M3, &[1024], 4.0)),
        Arg::Tensor(random(&mut rng, DType::F8E5M2, &[1024], 4.0)),
        Arg::Tensor(poisoned(DType::F32, &[1024])),
    ];
    let want = run_interp(&m, "fp8dot", [1, 1, 1], &args);
    for target in [Target::Sm80, Target::Sm90] {
        let k = trident_gpu::emit_ptx(&m, "fp8dot", &trident_gpu::GpuOptions { target, ..Default::default() }).unwrap();
        ptxas_ok(&k.ptx, target.arch());
        assert!(k.ptx.contains("mma.sync"), "{target}: fp8 dot not on tensor cores");
        if target == Target::Sm90 {
            // Native e4m3/e5m2 mma (sm_89+): the emulator does not implement fp8 mma yet.
            assert!(k.ptx.contains(".e4m3.e5m2."), "sm_90 should use the fp8 mma");
            continue;
        }
        let got = run_emu(&k, [1, 1, 1], &args);
        assert_same(&got, &want, Some((1e-5, 1e-4)), &format!("fp8 dot on {target}"));
    }
}

/// `tl.gather` through shared memory (`ptx/gather.rs`) against the interpreter: along either
/// axis of a 2-D tile, with more and fewer index rows than source rows, 8- to 64-bit indices
/// (some outside the axis: 0 there), 8-bit, 16-bit, 32-bit and boolean sources, and a tile of
/// 128×64 gathered to 256×64 — the shape the one-hot formulation of `gather` it replaces
/// could not run at all (33,000 virtual registers: more than the PTX emulator takes).
#[test]
fn gather_through_shared_memory() {
    let s = src(r#"
@triton.jit
def gather2d(s_ptr, i_ptr, o_ptr, S0: tl.constexpr, S1: tl.constexpr, I0: tl.constexpr, I1: tl.constexpr,
             AXIS: tl.constexpr, BOOL: tl.constexpr):
    s = tl.load(s_ptr + tl.arange(0, S0)[:, None] * S1 + tl.arange(0, S1)[None, :])
    if BOOL:
        s = s > 0
    i = tl.load(i_ptr + tl.arange(0, I0)[:, None] * I1 + tl.arange(0, I1)[None, :])
    g = tl.gather(s, i, AXIS)
    tl.store(o_ptr + tl.arange(0, I0)[:, None] * I1 + tl.arange(0, I1)[None, :], g.to(tl.float32))
"#);
    let mut rng = Rng(seed());
    // (source dtype, index dtype, [S0, S1, I0, I1], axis, boolean source, warps)
    type Case = (DType, DType, [usize; 4], i64, bool, u32);
    let cases: &[Case] = &[
        (DType::F32, DType::I32, [128, 64, 256, 64], 0, false, 4),
        (DType::F32, DType::I64, [128, 64, 128, 128], 1, false, 4),
        (DType::F16, DType::I8, [16, 32, 8, 32], 0, false, 2),
        (DType::I8, DType::I16, [32, 16, 32, 4], 1, false, 1),
        (DType::F32, DType::U8, [8, 64, 8, 64], 1, true, 4),
    ];
    for &(sd, id, [s0, s1, i0, i1], axis, boolean, warps) in cases {
        let n = if axis == 0 { s0 } else { s1 } as f64;
        let mut idx = random(&mut rng, id, &[i0, i1], n + 3.0);
        // Mostly in range: fold most values into 0..n, keep a few outside (negative or past).
        for k in 0..i0 * i1 {
            let v = idx.get_f64(k);
            if k % 7 != 0 {
                idx.set_f64(k, v.abs() % n);
            }
        }
        let args = [
            ("s_ptr", A::T(random(&mut rng, sd, &[s0, s1], 100.0))),
            ("i_ptr", A::T(idx)),
            ("o_ptr", A::T(poisoned(DType::F32, &[i0, i1]))),
            ("S0", A::C(s0 as i64)),
            ("S1", A::C(s1 as i64)),
            ("I0", A::C(i0 as i64)),
            ("I1", A::C(i1 as i64)),
            ("AXIS", A::C(axis)),
            ("BOOL", A::C(boolean as i64)),
        ];
        py_differential(&s, "gather2d", &args, warps, [1, 1, 1], None);
    }
}
