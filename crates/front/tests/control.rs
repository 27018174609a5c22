//! `break`, `continue` and `return` inside loops (beyond what Triton accepts), lowered to
//! structured IR and checked on the interpreter against the same logic written in Rust.

mod common;
use common::*;
use trident_core::{DType, HostTensor};

const SRC: &str = r#"
import triton
import triton.language as tl


@triton.jit
def prefix_until(x, out, n, limit):
    # Sum x[i] until the running sum exceeds `limit` (runtime break).
    acc = 0.0
    count = 0
    for i in range(0, n):
        v = tl.load(x + i)
        if acc + v > limit:
            break
        acc += v
        count += 1
    tl.store(out, acc)
    tl.store(out + 1, count.to(tl.float32))


@triton.jit
def skip_negative(x, out, n):
    # Sum of the non-negative entries (runtime continue).
    acc = 0.0
    for i in range(n):
        v = tl.load(x + i)
        if v < 0:
            continue
        acc += v
    tl.store(out, acc)


@triton.jit
def first_negative(x, out, n):
    # Kernel-level early return from inside a loop.
    for i in range(n):
        if tl.load(x + i) < 0:
            tl.store(out, i)
            return
    tl.store(out, -1)


@triton.jit
def _find(x, n, target):
    for i in range(n):
        if tl.load(x + i) == target:
            return i
    return -1


@triton.jit
def find_kernel(x, out, n, t0, t1):
    tl.store(out, _find(x, n, t0))
    tl.store(out + 1, _find(x, n, t1))


@triton.jit
def while_true(out, n):
    # Collatz steps of n, with `while True` and `break`.
    steps = 0
    v = n
    while True:
        if v == 1:
            break
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        steps += 1
    tl.store(out, steps)


@triton.jit
def nested(out, n, m):
    # Inner break leaves the outer loop running; continue in the outer loop.
    total = 0
    for i in range(n):
        if i == 2:
            continue
        for j in range(m):
            if j > i:
                break
            total += i * 10 + j
    tl.store(out, total)


@triton.jit
def static_loops(out):
    total = 0
    for i in tl.static_range(8):
        if i == 3:
            continue
        if i == 6:
            break
        total += i
    tl.store(out, total)


@triton.jit
def negative_step(out):
    total = 0
    k = 0
    for i in range(10, 0, -3):
        total += i * (k + 1)
        k += 1
    tl.store(out, total)


@triton.jit
def _classify(v):
    if v < 0:
        return -1
    elif v == 0:
        return 0
    if v > 100:
        return 2
    return 1


@triton.jit
def classify_kernel(x, out, n):
    for i in range(n):
        tl.store(out + i, _classify(tl.load(x + i)))


@triton.jit
def reassign_specialized(out, s, c):
    # `s` is 1 at this launch, so Triton makes it a constant; the branch still updates it.
    if c > 0:
        s = s * 3
    tl.store(out, s)


@triton.jit
def while_continue(x, out, n):
    # Count entries > 0 with a while loop and continue.
    i = 0
    c = 0
    while i < n:
        v = tl.load(x + i)
        i += 1
        if v <= 0:
            continue
        c += 1
    tl.store(out, c)
"#;

fn f32s(v: &[f32]) -> HostTensor {
    HostTensor::from_f64(DType::F32, &[v.len()], &v.iter().map(|&x| x as f64).collect::<Vec<_>>())
}

fn i32s(v: &[i32]) -> HostTensor {
    HostTensor::from_f64(DType::I32, &[v.len()], &v.iter().map(|&x| x as f64).collect::<Vec<_>>())
}

#[test]
fn runtime_break() {
    let x = [1.5f32, 2.0, 0.25, 3.0, 1.0, 4.0];
    for limit in [0.5f32, 3.6, 4.0, 100.0] {
        let out = run(
            SRC,
            "prefix_until",
            &[
                ("x", A::T(f32s(&x))),
                ("out", A::T(poison(DType::F32, &[2]))),
                ("n", A::I(6)),
                ("limit", A::F(limit as f64)),
            ],
            [1, 1, 1],
        );
        let (mut acc, mut count) = (0f32, 0);
        for v in x {
            if acc + v > limit {
                break;
            }
            acc += v;
            count += 1;
        }
        assert_close(&out["out"], &[acc as f64, count as f64], 0.0, 0.0);
    }
}

#[test]
fn runtime_continue() {
    let x = [1.5f32, -2.0, 0.25, -3.0, 1.0];
    let out = run(
        SRC,
        "skip_negative",
        &[("x", A::T(f32s(&x))), ("out", A::T(poison(DType::F32, &[1]))), ("n", A::I(5))],
        [1, 1, 1],
    );
    assert_close(&out["out"], &[2.75], 0.0, 0.0);
}

#[test]
fn early_return_from_kernel_loop() {
    for (x, want) in [(vec![1.0f32, 2.0, -1.0, -5.0], 2), (vec![1.0, 2.0, 3.0], -1), (vec![-1.0], 0)] {
        let n = x.len() as i64;
        let out = run(
            SRC,
            "first_negative",
            &[("x", A::T(f32s(&x))), ("out", A::T(poison(DType::I32, &[1]))), ("n", A::I(n))],
            [1, 1, 1],
        );
        assert_close(&out["out"], &[want as f64], 0.0, 0.0);
    }
}

#[test]
fn return_from_helper_loop() {
    let x = [5, 7, 9, 7, 3];
    let out = run(
        SRC,
        "find_kernel",
        &[
            ("x", A::T(i32s(&x))),
            ("out", A::T(poison(DType::I32, &[2]))),
            ("n", A::I(5)),
            ("t0", A::I(7)),
            ("t1", A::I(4)),
        ],
        [1, 1, 1],
    );
    assert_close(&out["out"], &[1.0, -1.0], 0.0, 0.0);
}

#[test]
fn while_true_with_break() {
    for n in [6i64, 27, 1] {
        let out = run(SRC, "while_true", &[("out", A::T(poison(DType::I32, &[1]))), ("n", A::I(n))], [1, 1, 1]);
        let (mut v, mut steps) = (n, 0);
        while v != 1 {
            v = if v % 2 == 0 { v / 2 } else { 3 * v + 1 };
            steps += 1;
        }
        assert_close(&out["out"], &[steps as f64], 0.0, 0.0);
    }
}

#[test]
fn nested_loops_break_inner_continue_outer() {
    let out = run(SRC, "nested", &[("out", A::T(poison(DType::I32, &[1]))), ("n", A::I(5)), ("m", A::I(4))], [1, 1, 1]);
    let mut total = 0;
    for i in 0..5 {
        if i == 2 {
            continue;
        }
        for j in 0..4 {
            if j > i {
                break;
            }
            total += i * 10 + j;
        }
    }
    assert_close(&out["out"], &[total as f64], 0.0, 0.0);
}

#[test]
fn static_range_break_continue() {
    let out = run(SRC, "static_loops", &[("out", A::T(poison(DType::I32, &[1])))], [1, 1, 1]);
    assert_close(&out["out"], &[[0, 1, 2, 4, 5].iter().sum::<i32>() as f64], 0.0, 0.0);
}

#[test]
fn negative_constant_step() {
    let out = run(SRC, "negative_step", &[("out", A::T(poison(DType::I32, &[1])))], [1, 1, 1]);
    let want: i32 = [10, 7, 4, 1].iter().enumerate().map(|(k, i)| i * (k as i32 + 1)).sum();
    assert_close(&out["out"], &[want as f64], 0.0, 0.0);
}

#[test]
fn returns_in_if_elif_chains() {
    let x = [-5, 0, 7, 1000, 100, 101];
    let out = run(
        SRC,
        "classify_kernel",
        &[("x", A::T(i32s(&x))), ("out", A::T(poison(DType::I32, &[6]))), ("n", A::I(6))],
        [1, 1, 1],
    );
    assert_close(&out["out"], &[-1.0, 0.0, 1.0, 2.0, 1.0, 2.0], 0.0, 0.0);
}

#[test]
fn while_with_continue() {
    let x = [3, -1, 0, 4, 5, -2];
    let out = run(
        SRC,
        "while_continue",
        &[("x", A::T(i32s(&x))), ("out", A::T(poison(DType::I32, &[1]))), ("n", A::I(6))],
        [1, 1, 1],
    );
    assert_close(&out["out"], &[3.0], 0.0, 0.0);
}

#[test]
fn runtime_if_reassigning_a_specialized_argument() {
    for (c, want) in [(1, 3.0), (0, 1.0)] {
        let out = run(
            SRC,
            "reassign_specialized",
            &[("out", A::T(poison(DType::I32, &[1]))), ("s", A::I(1)), ("c", A::I(c))],
            [1, 1, 1],
        );
        assert_close(&out["out"], &[want], 0.0, 0.0);
    }
}
