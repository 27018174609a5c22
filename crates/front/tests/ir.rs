//! The IR emitted for individual constructs (printed-IR snapshots; `UPDATE_EXPECT=1` refreshes them).

mod common;
use common::*;
use expect_test::{expect, Expect};
use trident_core::{DType, HostTensor};

fn p(d: DType) -> A {
    A::T(HostTensor::zeros(d, &[1]))
}

fn check(body: &str, params: &str, args: &[(&str, A)], want: Expect) {
    let src = format!("import triton\nimport triton.language as tl\n\n\n{body}");
    let _ = params;
    let c = compile_ok(&src, "k", args);
    want.assert_eq(&c.module.to_string());
}

#[test]
fn masked_load_store_with_other() {
    check(
        "@triton.jit\ndef k(x, y, n, B: tl.constexpr):\n    o = tl.arange(0, B)\n    v = tl.load(x + o, mask=o < n, other=-1)\n    tl.store(y + o, v * 2, mask=o < n)\n",
        "",
        &[("x", p(DType::F16)), ("y", p(DType::F32)), ("n", A::I(10)), ("B", cint(8))],
        expect![[r#"
            kernel @k(%x: ptr<f16> {divisibility = 16}, %y: ptr<f32> {divisibility = 16}, %n: i32) {
              %0 = arange [start = 0, end = 8] : tensor<8xi32>
              %1 = splat %x : tensor<8xptr<f16>>
              %2 = addptr %1, %0 : tensor<8xptr<f16>>
              %3 = splat %n : tensor<8xi32>
              %4 = cmp %0, %3 [pred = lt] : tensor<8xi1>
              %5 = constant [value = -1] : i32
              %6 = splat %5 : tensor<8xi32>
              %7 = cast %6 [kind = convert] : tensor<8xf16>
              %8 = load %2, %4, %7 : tensor<8xf16>
              %9 = splat %y : tensor<8xptr<f32>>
              %10 = addptr %9, %0 : tensor<8xptr<f32>>
              %11 = constant [value = 2.0] : f16
              %12 = splat %11 : tensor<8xf16>
              %13 = mul %8, %12 : tensor<8xf16>
              %14 = splat %n : tensor<8xi32>
              %15 = cmp %0, %14 [pred = lt] : tensor<8xi1>
              %16 = cast %13 [kind = convert] : tensor<8xf32>
              store %10, %16, %15
              return
            }
        "#]],
    );
}

#[test]
fn weak_and_strong_scalars() {
    // A literal keeps the block's type; a variable holding a number is an i32/f32 tensor.
    check(
        "@triton.jit\ndef k(x, f):\n    o = tl.arange(0, 4)\n    v = tl.load(x + o)\n    a = v + 1\n    two = 2\n    b = v + two\n    c = v * f\n    tl.store(x + o, a + b.to(tl.int8) + c.to(tl.int8))\n",
        "",
        &[("x", p(DType::I8)), ("f", A::F(0.5))],
        expect![[r#"
            kernel @k(%x: ptr<i8> {divisibility = 16}, %f: f32) {
              %0 = arange [start = 0, end = 4] : tensor<4xi32>
              %1 = splat %x : tensor<4xptr<i8>>
              %2 = addptr %1, %0 : tensor<4xptr<i8>>
              %3 = load %2 : tensor<4xi8>
              %4 = constant [value = 1] : i8
              %5 = splat %4 : tensor<4xi8>
              %6 = add %3, %5 : tensor<4xi8>
              %7 = constant [value = 2] : i32
              %8 = cast %3 [kind = convert] : tensor<4xi32>
              %9 = splat %7 : tensor<4xi32>
              %10 = add %8, %9 : tensor<4xi32>
              %11 = cast %3 [kind = convert] : tensor<4xf32>
              %12 = splat %f : tensor<4xf32>
              %13 = mul %11, %12 : tensor<4xf32>
              %14 = splat %x : tensor<4xptr<i8>>
              %15 = addptr %14, %0 : tensor<4xptr<i8>>
              %16 = cast %10 [kind = convert] : tensor<4xi8>
              %17 = add %6, %16 : tensor<4xi8>
              %18 = cast %13 [kind = convert] : tensor<4xi8>
              %19 = add %17, %18 : tensor<4xi8>
              store %15, %19
              return
            }
        "#]],
    );
}

#[test]
fn runtime_if_merges_assigned_variables() {
    check(
        "@triton.jit\ndef k(x, n):\n    a = 1.0\n    if n > 3:\n        a = 2.0\n        b = 5\n    else:\n        b = 6\n    tl.store(x, a + b)\n",
        "",
        &[("x", p(DType::F32)), ("n", A::I(5))],
        expect![[r#"
            kernel @k(%x: ptr<f32> {divisibility = 16}, %n: i32) {
              %0 = constant [value = 1.0] : f32
              %1 = constant [value = 3] : i32
              %2 = cmp %n, %1 [pred = gt] : i1
              %3, %4 = if %2 {
                %5 = constant [value = 2.0] : f32
                %6 = constant [value = 5] : i32
                yield %5, %6
              } {
                %7 = constant [value = 6] : i32
                yield %0, %7
              } : f32, i32
              %8 = cast %4 [kind = convert] : f32
              %9 = add %3, %8 : f32
              store %x, %9
              return
            }
        "#]],
    );
}

#[test]
fn constexpr_if_picks_a_branch() {
    check(
        "@triton.jit\ndef k(x, MODE: tl.constexpr):\n    if MODE == \"relu\":\n        tl.store(x, 1.0)\n    elif MODE == \"gelu\":\n        tl.store(x, 2.0)\n    else:\n        tl.store(x, 3.0)\n",
        "",
        &[("x", p(DType::F32)), ("MODE", A::C(trident_front::ConstValue::Str("gelu".into())))],
        expect![[r#"
            kernel @k(%x: ptr<f32> {divisibility = 16}) {
              %0 = constant [value = 2.0] : f32
              store %x, %0
              return
            }
        "#]],
    );
}

#[test]
fn for_loop_carries_assigned_variables() {
    check(
        "@triton.jit\ndef k(x, n):\n    acc = tl.zeros((4,), dtype=tl.float32)\n    p = x + tl.arange(0, 4)\n    for i in range(1, n, 2):\n        acc += tl.load(p) * i\n        p += 4\n    tl.store(x + tl.arange(0, 4), acc)\n",
        "",
        &[("x", p(DType::F32)), ("n", A::I(9))],
        expect![[r#"
            kernel @k(%x: ptr<f32> {divisibility = 16}, %n: i32) {
              %0 = constant [value = 0.0] : f32
              %1 = splat %0 : tensor<4xf32>
              %2 = arange [start = 0, end = 4] : tensor<4xi32>
              %3 = splat %x : tensor<4xptr<f32>>
              %4 = addptr %3, %2 : tensor<4xptr<f32>>
              %5 = constant [value = 1] : i32
              %6 = constant [value = 2] : i32
              %7, %8 = for %5, %n, %6, %1, %4 {
              ^(%9: i32, %10: tensor<4xf32>, %11: tensor<4xptr<f32>>):
                %12 = load %11 : tensor<4xf32>
                %13 = cast %9 [kind = convert] : f32
                %14 = splat %13 : tensor<4xf32>
                %15 = mul %12, %14 : tensor<4xf32>
                %16 = add %10, %15 : tensor<4xf32>
                %17 = constant [value = 4] : i32
                %18 = splat %17 : tensor<4xi32>
                %19 = addptr %11, %18 : tensor<4xptr<f32>>
                yield %16, %19
              } : tensor<4xf32>, tensor<4xptr<f32>>
              %20 = arange [start = 0, end = 4] : tensor<4xi32>
              %21 = splat %x : tensor<4xptr<f32>>
              %22 = addptr %21, %20 : tensor<4xptr<f32>>
              store %22, %7
              return
            }
        "#]],
    );
}

#[test]
fn static_range_unrolls() {
    check(
        "@triton.jit\ndef k(x):\n    s = tl.load(x)\n    for i in tl.static_range(3):\n        s = s * (i + 1)\n    tl.store(x, s)\n",
        "",
        &[("x", p(DType::I32))],
        expect![[r#"
            kernel @k(%x: ptr<i32> {divisibility = 16}) {
              %0 = load %x : i32
              %1 = constant [value = 1] : i32
              %2 = mul %0, %1 : i32
              %3 = constant [value = 2] : i32
              %4 = mul %2, %3 : i32
              %5 = constant [value = 3] : i32
              %6 = mul %4, %5 : i32
              store %x, %6
              return
            }
        "#]],
    );
}

#[test]
fn helpers_are_specialized_per_signature() {
    check(
        "@triton.jit\ndef twice(v, K: tl.constexpr):\n    return v * K, v + K\n\n\n@triton.jit\ndef k(x, y):\n    a, b = twice(tl.load(x), 2)\n    c, d = twice(tl.load(x), 3)\n    e, f = twice(tl.load(y), 2)\n    g, h = twice(tl.load(x), 2)\n    tl.store(x, a + b + c + d + g + h)\n    tl.store(y, e + f)\n",
        "",
        &[("x", p(DType::I32)), ("y", p(DType::F32))],
        expect![[r#"
            kernel @k(%x: ptr<i32> {divisibility = 16}, %y: ptr<f32> {divisibility = 16}) {
              %0 = load %x : i32
              %1, %2 = call %0 [callee = "twice"] : i32, i32
              %3 = load %x : i32
              %4, %5 = call %3 [callee = "twice_1"] : i32, i32
              %6 = load %y : f32
              %7, %8 = call %6 [callee = "twice_2"] : f32, f32
              %9 = load %x : i32
              %10, %11 = call %9 [callee = "twice"] : i32, i32
              %12 = add %1, %2 : i32
              %13 = add %12, %4 : i32
              %14 = add %13, %5 : i32
              %15 = add %14, %10 : i32
              %16 = add %15, %11 : i32
              store %x, %16
              %17 = add %7, %8 : f32
              store %y, %17
              return
            }

            func @twice(%v: i32) -> (i32, i32) {
              %0 = constant [value = 2] : i32
              %1 = mul %v, %0 : i32
              %2 = constant [value = 2] : i32
              %3 = add %v, %2 : i32
              return %1, %3
            }

            func @twice_1(%v: i32) -> (i32, i32) {
              %0 = constant [value = 3] : i32
              %1 = mul %v, %0 : i32
              %2 = constant [value = 3] : i32
              %3 = add %v, %2 : i32
              return %1, %3
            }

            func @twice_2(%v: f32) -> (f32, f32) {
              %0 = constant [value = 2.0] : f32
              %1 = mul %v, %0 : f32
              %2 = constant [value = 2.0] : f32
              %3 = add %v, %2 : f32
              return %1, %3
            }
        "#]],
    );
}

#[test]
fn reductions_have_combine_regions() {
    check(
        "@triton.jit\ndef k(x):\n    r = tl.arange(0, 2)[:, None] * 4 + tl.arange(0, 4)[None, :]\n    v = tl.load(x + r)\n    tl.store(x + tl.arange(0, 2), tl.sum(v, axis=1))\n    tl.store(x, tl.argmax(tl.max(v, 0), 0))\n",
        "",
        &[("x", p(DType::I8))],
        expect![[r#"
            kernel @k(%x: ptr<i8> {divisibility = 16}) {
              %0 = arange [start = 0, end = 2] : tensor<2xi32>
              %1 = expand_dims %0 [axis = 1] : tensor<2x1xi32>
              %2 = constant [value = 4] : i32
              %3 = splat %2 : tensor<2x1xi32>
              %4 = mul %1, %3 : tensor<2x1xi32>
              %5 = arange [start = 0, end = 4] : tensor<4xi32>
              %6 = expand_dims %5 [axis = 0] : tensor<1x4xi32>
              %7 = broadcast %4 : tensor<2x4xi32>
              %8 = broadcast %6 : tensor<2x4xi32>
              %9 = add %7, %8 : tensor<2x4xi32>
              %10 = splat %x : tensor<2x4xptr<i8>>
              %11 = addptr %10, %9 : tensor<2x4xptr<i8>>
              %12 = load %11 : tensor<2x4xi8>
              %13 = arange [start = 0, end = 2] : tensor<2xi32>
              %14 = splat %x : tensor<2xptr<i8>>
              %15 = addptr %14, %13 : tensor<2xptr<i8>>
              %16 = cast %12 [kind = convert] : tensor<2x4xi32>
              %17 = reduce %16 [axis = 1] {
              ^(%18: i32, %19: i32):
                %20 = add %18, %19 : i32
                yield %20
              } : tensor<2xi32>
              %21 = cast %17 [kind = convert] : tensor<2xi8>
              store %15, %21
              %22 = cast %12 [kind = convert] : tensor<2x4xi32>
              %23 = reduce %22 [axis = 0] {
              ^(%24: i32, %25: i32):
                %26 = max %24, %25 : i32
                yield %26
              } : tensor<4xi32>
              %27 = arange [start = 0, end = 4] : tensor<4xi32>
              %28, %29 = reduce %23, %27 [axis = 0] {
              ^(%30: i32, %31: i32, %32: i32, %33: i32):
                %34 = cmp %30, %32 [pred = gt] : i1
                %35 = cmp %30, %32 [pred = eq] : i1
                %36 = cmp %31, %33 [pred = lt] : i1
                %37 = and %35, %36 : i1
                %38 = or %34, %37 : i1
                %39 = select %38, %30, %32 : i32
                %40 = select %38, %31, %33 : i32
                yield %39, %40
              } : i32, i32
              %41 = cast %29 [kind = convert] : i8
              store %x, %41
              return
            }
        "#]],
    );
}

#[test]
fn dot_and_transpose() {
    check(
        "@triton.jit\ndef k(a, c):\n    r = tl.arange(0, 16)\n    x = tl.load(a + r[:, None] * 16 + r[None, :])\n    y = tl.dot(x, x.T, input_precision=\"ieee\")\n    tl.store(c + r[:, None] * 16 + r[None, :], y)\n",
        "",
        &[("a", p(DType::F32)), ("c", p(DType::F32))],
        expect![[r#"
            kernel @k(%a: ptr<f32> {divisibility = 16}, %c: ptr<f32> {divisibility = 16}) {
              %0 = arange [start = 0, end = 16] : tensor<16xi32>
              %1 = expand_dims %0 [axis = 1] : tensor<16x1xi32>
              %2 = constant [value = 16] : i32
              %3 = splat %2 : tensor<16x1xi32>
              %4 = mul %1, %3 : tensor<16x1xi32>
              %5 = splat %a : tensor<16x1xptr<f32>>
              %6 = addptr %5, %4 : tensor<16x1xptr<f32>>
              %7 = expand_dims %0 [axis = 0] : tensor<1x16xi32>
              %8 = broadcast %6 : tensor<16x16xptr<f32>>
              %9 = broadcast %7 : tensor<16x16xi32>
              %10 = addptr %8, %9 : tensor<16x16xptr<f32>>
              %11 = load %10 : tensor<16x16xf32>
              %12 = trans %11 [perm = [1, 0]] : tensor<16x16xf32>
              %13 = constant [value = 0.0] : tensor<16x16xf32>
              %14 = dot %11, %12, %13 [precision = ieee] : tensor<16x16xf32>
              %15 = expand_dims %0 [axis = 1] : tensor<16x1xi32>
              %16 = constant [value = 16] : i32
              %17 = splat %16 : tensor<16x1xi32>
              %18 = mul %15, %17 : tensor<16x1xi32>
              %19 = splat %c : tensor<16x1xptr<f32>>
              %20 = addptr %19, %18 : tensor<16x1xptr<f32>>
              %21 = expand_dims %0 [axis = 0] : tensor<1x16xi32>
              %22 = broadcast %20 : tensor<16x16xptr<f32>>
              %23 = broadcast %21 : tensor<16x16xi32>
              %24 = addptr %22, %23 : tensor<16x16xptr<f32>>
              store %24, %14
              return
            }
        "#]],
    );
}

#[test]
fn atomics_and_casts() {
    check(
        "@triton.jit\ndef k(x, y):\n    o = tl.arange(0, 4)\n    old = tl.atomic_add(x + o, 1.5, mask=o < 3, sem=\"relaxed\")\n    m = tl.atomic_max(x, 2.0)\n    tl.store(y + o, old.to(tl.float16, fp_downcast_rounding=\"rtz\").to(tl.int16, bitcast=True))\n    tl.atomic_cas(y, 0, 1)\n",
        "",
        &[("x", p(DType::F32)), ("y", p(DType::I16))],
        expect![[r#"
            kernel @k(%x: ptr<f32> {divisibility = 16}, %y: ptr<i16> {divisibility = 16}) {
              %0 = arange [start = 0, end = 4] : tensor<4xi32>
              %1 = splat %x : tensor<4xptr<f32>>
              %2 = addptr %1, %0 : tensor<4xptr<f32>>
              %3 = constant [value = 3] : i32
              %4 = splat %3 : tensor<4xi32>
              %5 = cmp %0, %4 [pred = lt] : tensor<4xi1>
              %6 = constant [value = 1.5] : f32
              %7 = splat %6 : tensor<4xf32>
              %8 = atomic_rmw %2, %7, %5 [op = add, sem = relaxed, scope = gpu] : tensor<4xf32>
              %9 = constant [value = 2.0] : f32
              %10 = cast %9 [kind = bitcast] : i32
              %11 = cast %9 [kind = bitcast] : u32
              %12 = cast %x [kind = bitcast] : ptr<i32>
              %13 = cast %x [kind = bitcast] : ptr<u32>
              %14 = constant [value = 31] : u32
              %15 = shr %11, %14 : u32
              %16 = cast %15 [kind = convert] : i1
              %17 = not %16 : i1
              %18 = atomic_rmw %12, %10, %17 [op = max, sem = acq_rel, scope = gpu] : i32
              %19 = atomic_rmw %13, %11, %16 [op = min, sem = acq_rel, scope = gpu] : u32
              %20 = cast %19 [kind = bitcast] : i32
              %21 = select %17, %18, %20 : i32
              %22 = cast %21 [kind = bitcast] : f32
              %23 = splat %y : tensor<4xptr<i16>>
              %24 = addptr %23, %0 : tensor<4xptr<i16>>
              %25 = cast %8 [kind = convert, rounding = rtz] : tensor<4xf16>
              %26 = cast %25 [kind = bitcast] : tensor<4xi16>
              store %24, %26
              %27 = constant [value = 0] : i32
              %28 = constant [value = 1] : i32
              %29 = cast %27 [kind = convert] : i16
              %30 = cast %28 [kind = convert] : i16
              %31 = atomic_cas %y, %29, %30 [sem = acq_rel, scope = gpu] : i16
              return
            }
        "#]],
    );
}
