//! End to end: Triton source compiled by the front end, run on the interpreter.
//! (The catalog of every bundled kernel against f64 references runs in
//! trident-testkit's `interp_cases`; these tests cover what is the interpreter's
//! own: diagnostics on real source, prints, asserts, custom combines, atomics.)

mod common;

use common::front::{compile_source, A};
use common::{poison, Rng};
use trident_core::{DType, HostTensor};
use trident_interp::{launch, ErrorKind, InterpError, InterpOptions, LaunchReport};
use trident_ir::Module;

struct Run {
    module: Module,
    result: Result<LaunchReport, InterpError>,
    /// Tensor arguments after the launch, in the order given.
    tensors: Vec<HostTensor>,
}

fn run(path: &str, src: &str, kernel: &str, args: Vec<(&str, A)>, grid: [u32; 3], debug: bool) -> Run {
    let mut c = compile_source(path, src, kernel, args, debug, false);
    let result = launch(&c.module, &c.kernel, grid, &mut c.args, &InterpOptions { debug, ..Default::default() });
    let tensors = c.tensor_slots.iter().map(|&i| c.args[i].as_tensor().unwrap().clone()).collect();
    Run { module: c.module, result, tensors }
}

const VECTOR_ADD: &str = include_str!("../../../kernels/vector_add.py");

#[test]
fn vector_add_from_source() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let n = 1000;
    let x = rng.tensor(DType::F16, &[n], 10.0);
    let y = rng.tensor(DType::F16, &[n], 10.0);
    let r = run(
        "kernels/vector_add.py",
        VECTOR_ADD,
        "add_kernel",
        vec![
            ("x", A::T(x.clone())),
            ("y", A::T(y.clone())),
            ("out", A::T(poison(DType::F16, &[n]))),
            ("n_elements", A::I(n as i64)),
            ("BLOCK", A::C(128)),
        ],
        [8, 1, 1],
        false,
    );
    r.result.unwrap();
    for i in 0..n {
        let want = half::f16::from_f64(x.get_f64(i) + y.get_f64(i)).to_f64();
        assert_eq!(r.tensors[2].get_f64(i), want, "[{i}], seed {seed}");
    }
}

#[test]
fn out_of_bounds_points_at_the_kernel_line() {
    // n_elements says 1000 but x holds only 900: the load of x faults in program 7.
    let r = run(
        "kernels/vector_add.py",
        VECTOR_ADD,
        "add_kernel",
        vec![
            ("x", A::T(HostTensor::zeros(DType::F32, &[900]))),
            ("y", A::T(HostTensor::zeros(DType::F32, &[1000]))),
            ("out", A::T(poison(DType::F32, &[1000]))),
            ("n_elements", A::I(1000)),
            ("BLOCK", A::C(128)),
        ],
        [8, 1, 1],
        false,
    );
    let e = r.result.unwrap_err();
    assert_eq!(e.kind, ErrorKind::OutOfBounds);
    assert!(e.message().contains("index 900 of buffer `x` (900 elements of f32)"), "{}", e.message());
    assert!(e.message().contains("program (7, 0, 0), element [4]"), "{}", e.message());
    let text = e.render(&r.module);
    assert!(text.contains("kernels/vector_add.py:15"), "{text}");
    assert!(text.contains("a = tl.load(x + offsets, mask=in_bounds)"), "{text}");
    assert!(text.contains('^'), "{text}");
    // The output was not touched although programs 0..6 stored their blocks.
    assert!(r.tensors[2].to_f64_vec().iter().all(|v| v.is_nan()));
}

const MISC: &str = r#"
import triton
import triton.language as tl


@triton.jit
def _argmax_combine(v1, i1, v2, i2):
    take1 = (v1 > v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(take1, v1, v2), tl.where(take1, i1, i2)


@triton.jit
def argmax_rows(x, out, N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, N)
    v = tl.load(x + row * N + cols)
    _, idx = tl.reduce((v, cols), 0, _argmax_combine)
    tl.store(out + row, idx)


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def cumprod(x, out, N: tl.constexpr):
    cols = tl.arange(0, N)
    tl.store(out + cols, tl.associative_scan(tl.load(x + cols), 0, _mul))


@triton.jit
def show(x, N: tl.constexpr):
    v = tl.load(x + tl.arange(0, N))
    tl.device_print("v", v)


@triton.jit
def checked(x, n):
    v = tl.load(x + tl.arange(0, 8))
    tl.device_assert(v < n, "value too large")


@triton.jit
def histogram(x, h, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m, other=0)
    tl.atomic_add(h + v, 1, mask=m)


@triton.jit
def collatz(out, start):
    x = start
    steps = 0
    while x != 1:
        if x % 2 == 1:
            x = 3 * x + 1
        else:
            x = x // 2
        steps += 1
    tl.store(out, steps)
"#;

#[test]
fn argmax_with_a_python_combine_function() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let (rows, n) = (6usize, 64usize);
    let vals: Vec<f64> = (0..rows * n).map(|_| rng.below(10) as f64).collect();
    let r = run(
        "misc.py",
        MISC,
        "argmax_rows",
        vec![
            ("x", A::T(HostTensor::from_f64(DType::F32, &[rows, n], &vals))),
            ("out", A::T(poison(DType::I32, &[rows]))),
            ("N", A::C(n as i64)),
        ],
        [rows as u32, 1, 1],
        false,
    );
    r.result.unwrap();
    for row in 0..rows {
        let v = &vals[row * n..(row + 1) * n];
        let max = v.iter().cloned().fold(f64::MIN, f64::max);
        let want = v.iter().position(|&x| x == max).unwrap();
        assert_eq!(r.tensors[1].get_f64(row), want as f64, "row {row}, seed {seed}");
    }
}

#[test]
fn associative_scan_with_a_python_combine_function() {
    let vals: Vec<f64> = (0..16).map(|i| [1.0, 2.0, -1.0, 0.5][i % 4]).collect();
    let r = run(
        "misc.py",
        MISC,
        "cumprod",
        vec![
            ("x", A::T(HostTensor::from_f64(DType::F32, &[16], &vals))),
            ("out", A::T(poison(DType::F32, &[16]))),
            ("N", A::C(16)),
        ],
        [1, 1, 1],
        false,
    );
    r.result.unwrap();
    let mut p = 1.0;
    for (i, v) in vals.iter().enumerate() {
        p *= v;
        assert_eq!(r.tensors[1].get_f64(i), p, "[{i}]");
    }
}

#[test]
fn device_print_from_source() {
    let r = run(
        "misc.py",
        MISC,
        "show",
        vec![("x", A::T(HostTensor::from_f64(DType::F32, &[2], &[0.5, -3.0]))), ("N", A::C(2))],
        [1, 1, 1],
        false,
    );
    assert_eq!(r.result.unwrap().printed, "pid (0, 0, 0) idx (0) v: 0.500000\npid (0, 0, 0) idx (1) v: -3.000000\n");
}

#[test]
fn device_assert_from_source_needs_debug() {
    let x = HostTensor::from_f64(DType::I32, &[8], &[1.0, 2.0, 3.0, 9.0, 4.0, 5.0, 6.0, 7.0]);
    let args = || vec![("x", A::T(x.clone())), ("n", A::I(8))];
    let r = run("misc.py", MISC, "checked", args(), [1, 1, 1], true);
    let e = r.result.unwrap_err();
    assert_eq!(e.kind, ErrorKind::AssertFailed);
    assert!(e.message().contains("value too large") && e.message().contains("element [3]"), "{}", e.message());
    assert!(e.render(&r.module).contains("tl.device_assert(v < n"), "{}", e.render(&r.module));
    // Without debug the front end drops the assert, as Triton does.
    run("misc.py", MISC, "checked", args(), [1, 1, 1], false).result.unwrap();
}

#[test]
fn histogram_with_atomics_from_source() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let (n, bins) = (5000usize, 16usize);
    let vals: Vec<f64> = (0..n).map(|_| rng.below(bins as u64) as f64).collect();
    let r = run(
        "misc.py",
        MISC,
        "histogram",
        vec![
            ("x", A::T(HostTensor::from_f64(DType::I32, &[n], &vals))),
            ("h", A::T(HostTensor::zeros(DType::I32, &[bins]))),
            ("n", A::I(n as i64)),
            ("BLOCK", A::C(128)),
        ],
        [n.div_ceil(128) as u32, 1, 1],
        false,
    );
    r.result.unwrap();
    let mut want = vec![0.0; bins];
    for v in vals {
        want[v as usize] += 1.0;
    }
    assert_eq!(r.tensors[1].to_f64_vec(), want, "seed {seed}");
}

#[test]
fn while_and_if_from_source() {
    for start in [1i64, 6, 27, 97] {
        let r = run(
            "misc.py",
            MISC,
            "collatz",
            vec![("out", A::T(poison(DType::I32, &[1]))), ("start", A::I(start))],
            [1, 1, 1],
            false,
        );
        r.result.unwrap();
        let (mut x, mut steps) = (start, 0);
        while x != 1 {
            x = if x % 2 == 1 { 3 * x + 1 } else { x / 2 };
            steps += 1;
        }
        assert_eq!(r.tensors[0].get_f64(0), steps as f64, "start {start}");
    }
}

const BARRIER: &str = r#"
import triton
import triton.language as tl

@triton.jit
def reverse_through_memory(buf, out, BLOCK: tl.constexpr):
    # each element is read back by another thread of the program: the barrier orders them
    offs = tl.arange(0, BLOCK)
    tl.store(buf + offs, tl.load(out + offs) * 3)
    tl.debug_barrier()
    tl.store(out + offs, tl.load(buf + (BLOCK - 1 - offs)))
"#;

#[test]
fn debug_barrier_is_kept_and_runs() {
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let x = rng.tensor(DType::I32, &[64], 100.0);
    let r = run(
        "barrier.py",
        BARRIER,
        "reverse_through_memory",
        vec![("buf", A::T(poison(DType::I32, &[64]))), ("out", A::T(x.clone())), ("BLOCK", A::C(64))],
        [1, 1, 1],
        false,
    );
    assert!(r.module.to_string().contains("barrier"), "the barrier reaches the IR:\n{}", r.module);
    r.result.unwrap();
    for i in 0..64 {
        assert_eq!(r.tensors[1].get_f64(i), 3.0 * x.get_f64(63 - i), "[{i}], seed {seed}");
    }
}

/// Triton's `test_short_circuiting`: `isinstance(x.dtype, tl.pointer_type)` holds for a pointer
/// argument (it used to evaluate False, so the store never happened), and the `and` chain stops
/// before `x.dtype` is touched for a scalar.
const SHORT_CIRCUIT: &str = r#"
import triton
import triton.language as tl

@triton.jit
def short_circuiting_kernel(x):
    if (x is not None) and hasattr(x, "dtype") and isinstance(
            x.dtype, tl.pointer_type) and (x.dtype.element_ty == tl.int32) and (tl.load(x) > 42):
        tl.store(x, 42)

@triton.jit
def dtype_classes(x, out):
    tl.store(out + 0, isinstance(x.dtype, tl.pointer_type))
    tl.store(out + 1, isinstance(x.dtype, tl.dtype))
    tl.store(out + 2, isinstance(x.dtype.element_ty, tl.pointer_type))
    tl.store(out + 3, isinstance(tl.load(x).dtype, tl.pointer_type))
"#;

#[test]
fn isinstance_of_pointer_type() {
    for (dt, v, want) in [
        (DType::I32, 100000.0, 42.0),
        (DType::I32, 37.0, 37.0),
        (DType::I32, -76893.0, -76893.0),
        (DType::I64, 100000.0, 100000.0),
        (DType::F32, 84.0, 84.0),
    ] {
        let x = HostTensor::from_f64(dt, &[1], &[v]);
        let r = run("sc.py", SHORT_CIRCUIT, "short_circuiting_kernel", vec![("x", A::T(x))], [1, 1, 1], false);
        r.result.unwrap();
        assert_eq!(r.tensors[0].get_f64(0), want, "{dt} {v}");
    }
    for scalar in [1, 2] {
        let r = run("sc.py", SHORT_CIRCUIT, "short_circuiting_kernel", vec![("x", A::I(scalar))], [1, 1, 1], false);
        r.result.unwrap();
    }
    let r = run(
        "sc.py",
        SHORT_CIRCUIT,
        "dtype_classes",
        vec![("x", A::T(HostTensor::zeros(DType::F32, &[1]))), ("out", A::T(poison(DType::I32, &[4])))],
        [1, 1, 1],
        false,
    );
    r.result.unwrap();
    assert_eq!(r.tensors[1].to_f64_vec(), [1.0, 1.0, 0.0, 0.0]);
}

/// Triton's `test_if[if_exp_dynamic_void]`: a conditional expression on a runtime condition
/// whose sides are both calls without a value (`tl.store(..) if c else tl.store(..)`) is an `if`
/// statement (it used to fail: "expected a tensor or a number, got constant `None`").
const VOID_IF_EXPR: &str = r#"
import triton
import triton.language as tl

@triton.jit
def void_if_expr(XTrue, XFalse, Ret):
    pid = tl.program_id(0)
    tl.store(Ret + pid, tl.load(XTrue)) if pid % 2 == 0 else tl.store(Ret + pid, tl.load(XFalse))
"#;

#[test]
fn conditional_expression_with_void_sides() {
    let r = run(
        "void_if.py",
        VOID_IF_EXPR,
        "void_if_expr",
        vec![
            ("XTrue", A::T(HostTensor::from_f64(DType::F32, &[1], &[3.5]))),
            ("XFalse", A::T(HostTensor::from_f64(DType::F32, &[1], &[-1.25]))),
            ("Ret", A::T(poison(DType::F32, &[4]))),
        ],
        [4, 1, 1],
        false,
    );
    r.result.unwrap();
    assert_eq!(r.tensors[2].to_f64_vec(), [3.5, -1.25, 3.5, -1.25]);
}

const ATTN_SCOPED: &str = include_str!("../../../bench/profile/attn_fwd_scoped.py");

/// Profiling scopes compiled in (`CompileOptions::profile_scopes`) are record ops the
/// interpreter runs as nothing: the scoped attention of the profiler's case study gives
/// bit-identical outputs with and without them, optimised by the default tile pipeline.
#[test]
fn profiling_scopes_leave_the_interpreters_results_alone() {
    use common::front::compile_source_with;
    use trident_front::CompileOptions;
    let mut rng = Rng::from_time();
    let seed = rng.seed();
    let (z, h, n, d) = (1usize, 2usize, 80usize, 32usize);
    let q = rng.tensor(DType::F16, &[z, h, n, d], 1.0);
    let k = rng.tensor(DType::F16, &[z, h, n, d], 1.0);
    let v = rng.tensor(DType::F16, &[z, h, n, d], 1.0);
    let (bm, bn) = (32i64, 16i64);
    let mut outs = vec![];
    for scopes in [false, true] {
        let mut args: Vec<(&str, A)> = vec![
            ("q", A::T(q.clone())),
            ("k", A::T(k.clone())),
            ("v", A::T(v.clone())),
            ("o", A::T(poison(DType::F16, &[z, h, n, d]))),
            ("sm_scale", A::F(0.17)),
        ];
        let strides = [(h * n * d) as i64, (n * d) as i64, d as i64, 1];
        let names = [
            ["stride_qz", "stride_qh", "stride_qm", "stride_qd"],
            ["stride_kz", "stride_kh", "stride_kn", "stride_kd"],
            ["stride_vz", "stride_vh", "stride_vn", "stride_vd"],
            ["stride_oz", "stride_oh", "stride_om", "stride_od"],
        ];
        for tensor in names {
            for (name, &st) in tensor.into_iter().zip(&strides) {
                args.push((name, A::I(st)));
            }
        }
        args.push(("H", A::I(h as i64)));
        args.push(("N_CTX", A::I(n as i64)));
        args.push(("BLOCK_M", A::C(bm)));
        args.push(("BLOCK_N", A::C(bn)));
        args.push(("HEAD_DIM", A::C(d as i64)));
        args.push(("IS_CAUSAL", A::C(1)));
        let opts = CompileOptions { profile_scopes: scopes, ..Default::default() };
        let mut c = compile_source_with("attn_fwd_scoped.py", ATTN_SCOPED, "attn_fwd_scoped", args, &opts, true);
        let text = c.module.to_string();
        assert_eq!(text.contains("record ["), scopes, "records only when the scopes are compiled in");
        let grid = [(n as u32).div_ceil(bm as u32), (z * h) as u32, 1];
        launch(&c.module, &c.kernel, grid, &mut c.args, &InterpOptions::default())
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        outs.push(c.args[c.tensor_slots[3]].as_tensor().unwrap().clone());
    }
    assert_eq!(outs[0].data, outs[1].data, "seed {seed}: scopes changed the interpreter's results");
    assert!(outs[0].to_f64_vec().iter().all(|x| x.is_finite()), "seed {seed}: every output written");
}

const SPIN_LOCK: &str = "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(lock, out):\n    pid = tl.program_id(0)\n    while tl.atomic_cas(lock, 0, 1) == 1:\n        pass\n    tl.store(out + pid * 1000, 1.0)\n    tl.atomic_xchg(lock, 0)\n";

/// A program that faults while holding a spin lock must not leave the others spinning
/// (issue 14: 14 of 40 runs hung): every run ends with the fault, within a time limit.
#[test]
fn a_fault_under_a_spin_lock_ends_the_launch() {
    for round in 0..20 {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let lock = HostTensor::from_f64(DType::I32, &[1], &[0.0]);
            let out = HostTensor::from_f64(DType::F32, &[8], &[0.0; 8]);
            let r = run("lock.py", SPIN_LOCK, "k", vec![("lock", A::T(lock)), ("out", A::T(out))], [16, 1, 1], false);
            let _ = tx.send((r.result.map(|_| ()).map_err(|e| e.to_string()), r.tensors));
        });
        let (result, tensors) = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("round {round}: the launch hangs"));
        let e = result.expect_err("the store past the end faults");
        assert!(e.contains("out-of-bounds store") && e.contains("line 10"), "{e}");
        assert!(tensors[1].to_f64_vec().iter().all(|&v| v == 0.0), "outputs untouched on error");
    }
}
