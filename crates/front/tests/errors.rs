//! Rendered diagnostics for bad kernels (snapshots; `UPDATE_EXPECT=1 cargo test` refreshes them).

mod common;
use common::*;
use expect_test::{expect, Expect};
use trident_core::DType;

fn ptr(d: DType) -> A {
    A::T(trident_core::HostTensor::zeros(d, &[4]))
}

fn check(src: &str, kernel: &str, args: &[(&str, A)], want: Expect) {
    want.assert_eq(&compile_err(src, kernel, args));
}

const HDR: &str = "import triton\nimport triton.language as tl\n\n\n";

#[test]
fn syntax_error() {
    let src = format!("{HDR}@triton.jit\ndef k(x):\n    y = (x +\n");
    check(
        &src,
        "k",
        &[],
        expect![[r#"
            error: syntax error: unexpected EOF while parsing
              ┌─ test.py:8:1
              │
            8 │ 
              │ ^ invalid syntax

        "#]],
    );
}

#[test]
fn unknown_tl_function_suggests() {
    let src = format!("{HDR}@triton.jit\ndef k(x):\n    o = tl.arang(0, 16)\n");
    check(
        &src,
        "k",
        &[("x", ptr(DType::F32))],
        expect![[r#"
            error: unknown function `tl.arang`: triton.language has no `arang`
              ┌─ test.py:7:12
              │
            7 │     o = tl.arang(0, 16)
              │            ^^^^^
              │
              = did you mean `tl.arange`?

        "#]],
    );
}

#[test]
fn unknown_keyword_suggests() {
    let src = format!("{HDR}@triton.jit\ndef k(x):\n    o = tl.arange(0, 16)\n    v = tl.load(x + o, masks=o < 4)\n");
    check(
        &src,
        "k",
        &[("x", ptr(DType::F32))],
        expect![[r#"
            error: tl.load() got an unexpected keyword argument `masks`
              ┌─ test.py:8:30
              │
            8 │     v = tl.load(x + o, masks=o < 4)
              │                              ^^^^^
              │
              = did you mean `mask=`?

        "#]],
    );
}

#[test]
fn broadcast_mismatch_shows_both_shapes() {
    let src =
        format!("{HDR}@triton.jit\ndef k(x):\n    a = tl.arange(0, 16)\n    b = tl.arange(0, 8)\n    c = a + b\n");
    check(
        &src,
        "k",
        &[("x", ptr(DType::F32))],
        expect![[r#"
            error: incompatible shapes [16] and [8]: dimension 0 is 16 on the left and 8 on the right
              ┌─ test.py:9:9
              │
            9 │     c = a + b
              │         ^^^^^

        "#]],
    );
}

#[test]
fn arange_needs_constexpr_and_power_of_two() {
    let src = format!("{HDR}@triton.jit\ndef k(x, n):\n    o = tl.arange(0, n)\n");
    check(
        &src,
        "k",
        &[("x", ptr(DType::F32)), ("n", A::I(16))],
        expect![[r#"
            error: arange's end must be a compile-time constant (tl.constexpr), not a tensor
              ┌─ test.py:7:22
              │
            7 │     o = tl.arange(0, n)
              │                      ^
              │
              = variables assigned a plain number are 0-d tensors in Triton; declare it `NAME: tl.constexpr = ...` or pass it as a tl.constexpr parameter

        "#]],
    );
    let src = format!("{HDR}@triton.jit\ndef k(x, N: tl.constexpr):\n    o = tl.arange(0, N)\n");
    check(
        &src,
        "k",
        &[("x", ptr(DType::F32)), ("N", cint(100))],
        expect![[r#"
            error: arange(0, 100): the range (100 elements) must be a power of 2
              ┌─ test.py:7:9
              │
            7 │     o = tl.arange(0, N)
              │         ^^^^^^^^^^^^^^^
              │
              = use arange(0, 128) and mask the elements past 100

        "#]],
    );
}

#[test]
fn missing_and_unknown_arguments() {
    let src = format!("{HDR}@triton.jit\ndef k(x, n, BLOCK: tl.constexpr):\n    pass\n");
    check(
        &src,
        "k",
        &[("x", ptr(DType::F32)), ("BLOCK", cint(4))],
        expect![[r#"
            error: missing argument `n` for kernel `k`
              ┌─ test.py:6:10
              │
            6 │ def k(x, n, BLOCK: tl.constexpr):
              │          ^ this parameter has no default value

        "#]],
    );
    check(
        &src,
        "k",
        &[("x", ptr(DType::F32)), ("n", A::I(3)), ("BLOK", cint(4))],
        expect![[r#"
            error: kernel `k` has no parameter named `BLOK`
              ┌─ test.py:6:5
              │
            6 │ def k(x, n, BLOCK: tl.constexpr):
              │     ^ kernel defined here
              │
              = did you mean `BLOCK`?

        "#]],
    );
}

#[test]
fn dtype_errors() {
    let src =
        format!("{HDR}@triton.jit\ndef k(x):\n    o = tl.arange(0, 16)\n    v = tl.load(x + o)\n    w = tl.exp(v)\n");
    check(
        &src,
        "k",
        &[("x", ptr(DType::F16))],
        expect![[r#"
            error: tl.exp expects fp32 or fp64 but got fp16[16]
              ┌─ test.py:9:9
              │
            9 │     w = tl.exp(v)
              │         ^^^^^^^^^
              │
              = cast explicitly first, e.g. `x.to(tl.float32)`

        "#]],
    );
    let src = format!("{HDR}@triton.jit\ndef k(x):\n    o = tl.arange(0, 16)\n    v = tl.load(x + o)\n    w = v & 1\n");
    check(
        &src,
        "k",
        &[("x", ptr(DType::F32))],
        expect![[r#"
            error: invalid operands of type fp32[16] and int (1) for `&`: integers required
              ┌─ test.py:9:9
              │
            9 │     w = v & 1
              │         ^^^^^

        "#]],
    );
}

#[test]
fn loop_carried_type_change() {
    let src = format!(
        "{HDR}@triton.jit\ndef k(x, n):\n    acc = tl.zeros((16,), dtype=tl.float16)\n    for i in range(n):\n        acc = acc + 1.5\n        acc = acc.to(tl.float32)\n"
    );
    check(
        &src,
        "k",
        &[("x", ptr(DType::F32)), ("n", A::I(3))],
        expect![[r#"
            error: loop-carried variable `acc` has type fp16[16] before the loop but fp32[16] after an iteration; make sure its type stays the same (e.g. with `.to()`)
              ┌─ test.py:8:5
              │
            8 │     for i in range(n):
              │     ^^^^^^^^^^^^^^^^^

        "#]],
    );
}

#[test]
fn static_assert_and_errors_in_helpers() {
    let src = format!(
        "{HDR}@triton.jit\ndef helper(v, N: tl.constexpr):\n    tl.static_assert(N % 2 == 0, \"N must be even\")\n    return v\n\n\n@triton.jit\ndef k(x, N: tl.constexpr):\n    v = helper(x, N)\n"
    );
    check(
        &src,
        "k",
        &[("x", ptr(DType::F32)), ("N", cint(3))],
        expect![[r#"
            error: static assertion failed: N must be even
               ┌─ test.py:7:5
               │
             7 │     tl.static_assert(N % 2 == 0, "N must be even")
               │     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
               ·
            13 │     v = helper(x, N)
               │         ------------ in this call of `helper`

        "#]],
    );
}

#[test]
fn prelude_errors_point_at_the_call() {
    let src = format!("{HDR}@triton.jit\ndef k(x):\n    r = tl.arange(0, 4)[:, None] * 4 + tl.arange(0, 4)[None, :]\n    v = tl.load(x + r)\n    s = tl.sort(v, dim=0)\n");
    check(
        &src,
        "k",
        &[("x", ptr(DType::F32))],
        expect![[r#"
            error: static assertion failed: only sorting along the last dimension is supported
              ┌─ test.py:9:9
              │
            9 │     s = tl.sort(v, dim=0)
              │         ^^^^^^^^^^^^^^^^^
              │
              = raised inside Trident's implementation of `tl.sort`

        "#]],
    );
}

#[test]
fn unsupported_constructs() {
    let src = format!("{HDR}@triton.jit\ndef k(x):\n    o = tl.arange(0, 16)\n    o[0] = 1\n");
    check(
        &src,
        "k",
        &[("x", ptr(DType::F32))],
        expect![[r#"
            error: item assignment is not supported: tensors are immutable (build a new one, e.g. with tl.where)
              ┌─ test.py:8:5
              │
            8 │     o[0] = 1
              │     ^^^^

        "#]],
    );
    let src = format!("{HDR}@triton.jit\ndef k(x):\n    try:\n        pass\n    except Exception:\n        pass\n");
    check(
        &src,
        "k",
        &[("x", ptr(DType::F32))],
        expect![[r#"
            error: `try` is not supported in kernels
              ┌─ test.py:7:5
              │
            7 │     try:
              │     ^^^

        "#]],
    );
}

#[test]
fn branch_type_mismatch() {
    let src = format!(
        "{HDR}@triton.jit\ndef k(x, n):\n    v = tl.zeros((16,), dtype=tl.float32)\n    if n > 0:\n        v = v.to(tl.float16)\n    tl.store(x + tl.arange(0, 16), v)\n"
    );
    check(
        &src,
        "k",
        &[("x", ptr(DType::F32)), ("n", A::I(3))],
        expect![[r#"
            error: `v` has type fp16[16] at the end of the `if` branch but fp32[16] at the end of the `else` branch
              ┌─ test.py:8:5
              │
            8 │     if n > 0:
              │     ^^^^^^^^

        "#]],
    );
}

#[test]
fn undefined_name_suggests() {
    let src = format!("{HDR}@triton.jit\ndef k(x, BLOCK: tl.constexpr):\n    o = tl.arange(0, BLOK)\n");
    check(
        &src,
        "k",
        &[("x", ptr(DType::F32)), ("BLOCK", cint(16))],
        expect![[r#"
            error: name `BLOK` is not defined
              ┌─ test.py:7:22
              │
            7 │     o = tl.arange(0, BLOK)
              │                      ^^^^
              │
              = did you mean `BLOCK`?

        "#]],
    );
}

#[test]
fn gather_with_mismatched_shapes_or_a_float_index() {
    let src = format!(
        "{HDR}@triton.jit\ndef k(x):\n    s = tl.load(x + tl.arange(0, 4)[:, None] + tl.arange(0, 2)[None, :])\n    \
         i = tl.arange(0, 4)[:, None] + tl.zeros((4, 4), tl.int32)\n    o = tl.gather(s, i, 0)\n"
    );
    check(
        &src,
        "k",
        &[("x", ptr(DType::F32))],
        expect![[r#"
        error: gather: source [4, 2] and index [4, 4] must have the same sizes outside axis 0
          ┌─ test.py:9:9
          │
        9 │     o = tl.gather(s, i, 0)
          │         ^^^^^^^^^^^^^^^^^^

    "#]],
    );
    let src =
        format!("{HDR}@triton.jit\ndef k(x):\n    s = tl.load(x + tl.arange(0, 4))\n    o = tl.gather(s, s, 0)\n");
    check(
        &src,
        "k",
        &[("x", ptr(DType::F32))],
        expect![[r#"
        error: gather: the index must be an integer tensor
          ┌─ test.py:8:22
          │
        8 │     o = tl.gather(s, s, 0)
          │                      ^

    "#]],
    );
}
