//! Proton's in-kernel profiling API: scopes become `record` ops when asked, nothing otherwise,
//! and misuse is a diagnostic (snapshots; `UPDATE_EXPECT=1 cargo test` refreshes them).

mod common;
use common::*;
use expect_test::{expect, Expect};
use trident_core::{DType, HostTensor};
use trident_front::CompileOptions;
use trident_ir::{print_module, PrintOptions};

const HDR: &str = "import triton\nimport triton.language as tl\nimport triton.profiler.language as pl\n\n";

fn p(d: DType) -> A {
    A::T(HostTensor::zeros(d, &[4]))
}

fn opts(profile_scopes: bool) -> CompileOptions {
    CompileOptions { debug: true, profile_scopes, ..Default::default() }
}

/// The IR with profiling on.
fn check_ir(body: &str, args: &[(&str, A)], want: Expect) {
    let src = format!("{HDR}{body}");
    want.assert_eq(&compile_opts(&src, "k", args, &opts(true)).module.to_string());
}

fn check_err(body: &str, args: &[(&str, A)], want: Expect) {
    let src = format!("{HDR}{body}");
    want.assert_eq(&compile_err(&src, "k", args));
}

fn xn() -> Vec<(&'static str, A)> {
    vec![("x", p(DType::F32)), ("n", A::I(4))]
}

// ---------------------------------------------------------------- records in the IR

#[test]
fn scopes_become_records_at_their_source_lines() {
    let body = "@triton.jit\ndef k(x, n):\n    pl.enter_scope(\"load\")\n    v = tl.load(x)\n    pl.exit_scope(\"load\")\n    with pl.scope(\"math\"):\n        w = v * 2\n    tl.store(x, w)\n";
    let src = format!("{HDR}{body}");
    let m = compile_opts(&src, "k", &xn(), &opts(true)).module;
    // Start records sit at the call (`enter_scope`, the `pl.scope(...)` of the `with`), ends at
    // `exit_scope` and, for a `with`, at its `pl.scope(...)` again: the region's source line.
    expect![[r#"
        // file 0: test.py
        // file 1: <trident-prelude>

        kernel @k(%x: ptr<f32> {divisibility = 16}, %n: i32) loc(6:5) {
          record [name = "load", end = false, kind = scope] loc(7:5)
          %0 = load %x : f32 loc(8:9)
          record [name = "load", end = true, kind = scope] loc(9:5)
          record [name = "math", end = false, kind = scope] loc(10:10)
          %1 = constant [value = 2.0] : f32 loc(11:13)
          %2 = mul %0, %1 : f32 loc(11:13)
          record [name = "math", end = true, kind = scope] loc(10:10)
          store %x, %2 loc(12:5)
          return loc(5:1)
        }
    "#]]
    .assert_eq(&print_module(&m, &PrintOptions::with_locs()));
}

#[test]
fn scopes_in_loops_branches_and_helpers() {
    check_ir(
        "@triton.jit\ndef h(v):\n    with pl.scope(\"helper\"):\n        w = v + 1\n    return w\n\n@triton.jit\ndef k(x, n, S: tl.constexpr):\n    acc = tl.load(x)\n    for i in range(n):\n        pl.enter_scope(\"body\")\n        if acc > 0:\n            with pl.scope(\"pos\"), pl.scope(\"inner\"):\n                acc = h(acc)\n        pl.exit_scope(\"body\")\n    for j in tl.static_range(2):\n        with pl.scope(\"unrolled\"):\n            acc = acc * 2\n    if S:\n        pl.enter_scope(\"static_if\")\n    acc = acc + 1\n    if S:\n        pl.exit_scope(\"static_if\")\n    tl.store(x, acc)\n",
        &[("x", p(DType::F32)), ("n", A::I(4)), ("S", cint(1))],
        expect![[r#"
            kernel @k(%x: ptr<f32> {divisibility = 16}, %n: i32) {
              %0 = load %x : f32
              %1 = constant [value = 0] : i32
              %2 = constant [value = 1] : i32
              %3 = for %1, %n, %2, %0 {
              ^(%4: i32, %5: f32):
                record [name = "body", end = false, kind = scope]
                %6 = constant [value = 0.0] : f32
                %7 = cmp %5, %6 [pred = gt] : i1
                %8 = if %7 {
                  record [name = "pos", end = false, kind = scope]
                  record [name = "inner", end = false, kind = scope]
                  %9 = call %5 [callee = "h"] : f32
                  record [name = "inner", end = true, kind = scope]
                  record [name = "pos", end = true, kind = scope]
                  yield %9
                } {
                  yield %5
                } : f32
                record [name = "body", end = true, kind = scope]
                yield %8
              } : f32
              record [name = "unrolled", end = false, kind = scope]
              %10 = constant [value = 2.0] : f32
              %11 = mul %3, %10 : f32
              record [name = "unrolled", end = true, kind = scope]
              record [name = "unrolled", end = false, kind = scope]
              %12 = constant [value = 2.0] : f32
              %13 = mul %11, %12 : f32
              record [name = "unrolled", end = true, kind = scope]
              record [name = "static_if", end = false, kind = scope]
              %14 = constant [value = 1.0] : f32
              %15 = add %13, %14 : f32
              record [name = "static_if", end = true, kind = scope]
              store %x, %15
              return
            }

            func @h(%v: f32) -> (f32) {
              record [name = "helper", end = false, kind = scope]
              %0 = constant [value = 1.0] : f32
              %1 = add %v, %0 : f32
              record [name = "helper", end = true, kind = scope]
              return %1
            }
        "#]],
    );
}

#[test]
fn with_scope_is_closed_on_early_exits() {
    // `return` and `break` inside `with pl.scope` leave through the end record, as Python
    // runs `__exit__`: the end sits after the guarded rest of the body, in the start's block.
    check_ir(
        "@triton.jit\ndef k(x, n):\n    with pl.scope(\"all\"):\n        v = tl.load(x)\n        if v > 0:\n            return\n        for i in range(n):\n            with pl.scope(\"iter\"):\n                if v > i:\n                    break\n                v = v + 1\n        tl.store(x, v)\n",
        &xn(),
        expect![[r#"
            kernel @k(%x: ptr<f32> {divisibility = 16}, %n: i32) {
              record [name = "all", end = false, kind = scope]
              %0 = load %x : f32
              %1 = constant [value = 0.0] : f32
              %2 = cmp %0, %1 [pred = gt] : i1
              %3 = if %2 {
                %4 = constant [value = true] : i1
                yield %4
              } {
                %5 = constant [value = false] : i1
                yield %5
              } : i1
              %6 = not %3 : i1
              %7, %8 = if %6 {
                %9 = constant [value = 0] : i32
                %10 = constant [value = 1] : i32
                %11 = constant [value = false] : i1
                %12, %13, %14 = while %9, %0, %11 {
                ^(%15: i32, %16: f32, %17: i1):
                  %18 = cmp %15, %n [pred = lt] : i1
                  %19 = not %17 : i1
                  %20 = and %18, %19 : i1
                  condition %20, %15, %16, %17
                } {
                ^(%21: i32, %22: f32, %23: i1):
                  record [name = "iter", end = false, kind = scope]
                  %24 = cast %21 [kind = convert] : f32
                  %25 = cmp %22, %24 [pred = gt] : i1
                  %26 = if %25 {
                    %27 = constant [value = true] : i1
                    yield %27
                  } {
                    %28 = constant [value = false] : i1
                    yield %28
                  } : i1
                  %29 = not %26 : i1
                  %30, %31 = if %29 {
                    %32 = constant [value = 1.0] : f32
                    %33 = add %22, %32 : f32
                    %34 = constant [value = false] : i1
                    yield %34, %33
                  } {
                    %35 = constant [value = true] : i1
                    yield %35, %22
                  } : i1, f32
                  record [name = "iter", end = true, kind = scope]
                  %36 = add %21, %10 : i32
                  yield %36, %31, %30
                } : i32, f32, i1
                store %x, %13
                %37 = constant [value = false] : i1
                yield %37, %13
              } {
                %38 = constant [value = true] : i1
                yield %38, %0
              } : i1, f32
              record [name = "all", end = true, kind = scope]
              return
            }
        "#]],
    );
}

#[test]
fn import_spellings() {
    let bodies = [
        "import triton\nimport triton.language as tl\nfrom triton.profiler import language as pl\n\n@triton.jit\ndef k(x):\n    with pl.scope(\"a\"):\n        tl.store(x, 1.0)\n",
        "import triton\nimport triton.language as tl\nfrom triton.profiler.language import scope, enter_scope, exit_scope\n\n@triton.jit\ndef k(x):\n    enter_scope(\"a\")\n    tl.store(x, 1.0)\n    exit_scope(\"a\")\n",
        "import triton\nimport triton.language as tl\nimport triton.profiler as proton\n\n@triton.jit\ndef k(x):\n    proton.language.enter_scope(\"a\")\n    tl.store(x, 1.0)\n    proton.language.exit_scope(\"a\")\n",
        "import triton\nimport triton.language as tl\nimport triton.profiler.language as pl\npl.enable_semantic(\"triton\")\nNAME: tl.constexpr = \"a\"\n\n@triton.jit\ndef k(x):\n    pl.enter_scope(NAME)\n    tl.store(x, 1.0)\n    pl.exit_scope(NAME)\n",
    ];
    for src in bodies {
        let m = compile_opts(src, "k", &[("x", p(DType::F32))], &opts(true)).module;
        let text = m.to_string();
        assert_eq!(text.matches("record [name = \"a\"").count(), 2, "{src}\n{text}");
    }
}

/// `src` with every line mentioning `pl.` removed and `with pl.scope` bodies dedented.
fn without_scopes(src: &str) -> String {
    let mut out = String::new();
    let mut dedent: Vec<usize> = vec![];
    for line in src.lines() {
        let ind = line.len() - line.trim_start().len();
        while dedent.last().is_some_and(|&d| ind <= d) {
            dedent.pop();
        }
        if line.trim_start().starts_with("with pl.scope") {
            dedent.push(ind);
            continue;
        }
        if line.contains("pl.") {
            continue;
        }
        let cut = 4 * dedent.len();
        out.push_str(&line[cut.min(ind)..]);
        out.push('\n');
    }
    out
}

#[test]
fn without_profiling_scopes_compile_to_nothing() {
    let kernels = [
        "@triton.jit\ndef k(x, n):\n    pl.enter_scope(\"a\")\n    v = tl.load(x)\n    for i in range(n):\n        with pl.scope(\"b\"):\n            v = v * 2\n            if v > 100:\n                break\n    pl.exit_scope(\"a\")\n    tl.store(x, v)\n",
        "@triton.jit\ndef k(x, n):\n    with pl.scope(\"a\"):\n        v = tl.load(x)\n        if v > 0:\n            with pl.scope(\"t\"):\n                v = v + 1\n        else:\n            return\n    while v < 10:\n        with pl.scope(\"w\"):\n            v = v * 3\n    tl.store(x, v)\n",
    ];
    for body in kernels {
        let src = format!("{HDR}{body}");
        let plain = format!("{HDR}{}", without_scopes(body));
        assert!(!plain.contains("pl."), "{plain}");
        let off = compile_opts(&src, "k", &xn(), &opts(false)).module;
        let none = compile_opts(&plain, "k", &xn(), &opts(true)).module;
        // Locations too: the IR is exactly what the kernel gives without the scopes, except
        // that lines moved (the plain source lacks the scope lines).
        assert_eq!(off.to_string(), none.to_string(), "{src}");
        // With profiling on, the records are the only difference.
        let on = compile_opts(&src, "k", &xn(), &opts(true)).module.to_string();
        assert!(on.contains("record ["), "{on}");
        let stripped: String = on.lines().filter(|l| !l.contains("record [")).map(|l| format!("{l}\n")).collect();
        assert_eq!(stripped, off.to_string());
    }
}

#[test]
fn records_do_not_change_results_on_the_interpreter() {
    let body = "@triton.jit\ndef k(x, y, n, B: tl.constexpr):\n    o = tl.arange(0, B)\n    with pl.scope(\"load\"):\n        v = tl.load(x + o)\n    acc = tl.zeros([B], tl.float32)\n    for i in range(n):\n        pl.enter_scope(\"iter\")\n        acc += v * i\n        pl.exit_scope(\"iter\")\n    tl.store(y + o, acc)\n";
    let src = format!("{HDR}{body}");
    let x = HostTensor::from_f64(DType::F32, &[8], &[1.0, 2.0, 3.0, -4.0, 5.0, 0.5, 7.0, 8.0]);
    let args = |y: &HostTensor| vec![("x", A::T(x.clone())), ("y", A::T(y.clone())), ("n", A::I(5)), ("B", cint(8))];
    let y0 = poison(DType::F32, &[8]);
    let (a, _) = run_opts_at("test.py", &src, "k", &args(&y0), [1, 1, 1], &opts(true));
    let (b, _) = run_opts_at("test.py", &src, "k", &args(&y0), [1, 1, 1], &opts(false));
    assert_eq!(a["y"].data, b["y"].data);
    assert_close(&a["y"], &[10.0, 20.0, 30.0, -40.0, 50.0, 5.0, 70.0, 80.0], 0.0, 0.0);
}

// ---------------------------------------------------------------- diagnostics

#[test]
fn bad_names() {
    check_err(
        "@triton.jit\ndef k(x, n):\n    v = tl.load(x)\n    pl.enter_scope(v)\n",
        &xn(),
        expect![[r#"
            error: a scope name must be known at compile time: a string literal or a tl.constexpr string, not a tensor
              ┌─ test.py:8:20
              │
            8 │     pl.enter_scope(v)
              │                    ^

        "#]],
    );
    check_err(
        "@triton.jit\ndef k(x, n):\n    pl.enter_scope(3)\n",
        &xn(),
        expect![[r#"
        error: a scope name must be a string, not constant `3`
          ┌─ test.py:7:20
          │
        7 │     pl.enter_scope(3)
          │                    ^

    "#]],
    );
    check_err(
        "@triton.jit\ndef k(x, n):\n    with pl.scope(\"\"):\n        pass\n",
        &xn(),
        expect![[r#"
        error: a scope name must not be empty
          ┌─ test.py:7:19
          │
        7 │     with pl.scope(""):
          │                   ^^

    "#]],
    );
    check_err(
        "@triton.jit\ndef k(x, n):\n    pl.enter_scope()\n",
        &xn(),
        expect![[r#"
        error: pl.enter_scope() missing required argument `name`
          ┌─ test.py:7:5
          │
        7 │     pl.enter_scope()
          │     ^^^^^^^^^^^^^^^^

    "#]],
    );
}

#[test]
fn unbalanced_exits() {
    check_err(
        "@triton.jit\ndef k(x, n):\n    pl.exit_scope(\"a\")\n",
        &xn(),
        expect![[r#"
        error: `pl.exit_scope("a")` closes no open scope
          ┌─ test.py:7:5
          │
        7 │     pl.exit_scope("a")
          │     ^^^^^^^^^^^^^^^^^^

    "#]],
    );
    check_err(
        "@triton.jit\ndef k(x, n):\n    pl.enter_scope(\"a\")\n    pl.enter_scope(\"b\")\n    pl.exit_scope(\"a\")\n    pl.exit_scope(\"b\")\n",
        &xn(),
        expect![[r#"
            error: `pl.exit_scope("a")` must close the innermost open scope, which is `b`
              ┌─ test.py:9:5
              │
            8 │     pl.enter_scope("b")
              │     ------------------- `b` opened here
            9 │     pl.exit_scope("a")
              │     ^^^^^^^^^^^^^^^^^^

        "#]],
    );
    check_err(
        "@triton.jit\ndef k(x, n):\n    with pl.scope(\"a\"):\n        pl.exit_scope(\"a\")\n",
        &xn(),
        expect![[r#"
            error: scope `a` belongs to a `with pl.scope(...)` block, which closes it; remove this `pl.exit_scope`
              ┌─ test.py:8:9
              │
            7 │     with pl.scope("a"):
              │          ------------- the `with` scope
            8 │         pl.exit_scope("a")
              │         ^^^^^^^^^^^^^^^^^^

        "#]],
    );
    check_err(
        "@triton.jit\ndef k(x, n):\n    pl.enter_scope(\"a\")\n    with pl.scope(\"b\"):\n        pl.exit_scope(\"a\")\n",
        &xn(),
        expect![[r#"
            error: `pl.exit_scope("a")` inside the `with pl.scope("b")` block it does not belong to
              ┌─ test.py:9:9
              │
            8 │     with pl.scope("b"):
              │          ------------- the `with` scope
            9 │         pl.exit_scope("a")
              │         ^^^^^^^^^^^^^^^^^^

        "#]],
    );
    check_err(
        "@triton.jit\ndef k(x, n):\n    with pl.scope(\"b\"):\n        pl.enter_scope(\"a\")\n    pl.exit_scope(\"a\")\n",
        &xn(),
        expect![[r#"
            error: scope `a` is opened inside this `with` block but not closed in it
              ┌─ test.py:7:10
              │
            7 │     with pl.scope("b"):
              │          ^^^^^^^^^^^^^
            8 │         pl.enter_scope("a")
              │         ------------------- `a` opened here

        "#]],
    );
    check_err(
        "@triton.jit\ndef k(x, n):\n    pl.enter_scope(\"a\")\n    pl.enter_scope(\"a\")\n",
        &xn(),
        expect![[r#"
            error: scope `a` is already open; close it before opening it again
              ┌─ test.py:8:5
              │
            7 │     pl.enter_scope("a")
              │     ------------------- opened here
            8 │     pl.enter_scope("a")
              │     ^^^^^^^^^^^^^^^^^^^

        "#]],
    );
}

#[test]
fn scopes_left_open() {
    check_err(
        "@triton.jit\ndef k(x, n):\n    pl.enter_scope(\"a\")\n    tl.store(x, 1.0)\n",
        &xn(),
        expect![[r#"
            error: scope `a` is still open at the end of `k`
              ┌─ test.py:7:5
              │
            7 │     pl.enter_scope("a")
              │     ^^^^^^^^^^^^^^^^^^^

        "#]],
    );
    check_err(
        "@triton.jit\ndef h(v):\n    pl.enter_scope(\"h\")\n    return v\n\n@triton.jit\ndef k(x, n):\n    tl.store(x, h(1.0))\n",
        &xn(),
        expect![[r#"
            error: `return` leaves scope `h` open: it would skip its `pl.exit_scope("h")`
               ┌─ test.py:8:5
               │
             7 │     pl.enter_scope("h")
               │     ------------------- opened here
             8 │     return v
               │     ^^^^^^^^
               ·
            12 │     tl.store(x, h(1.0))
               │                 ------ in this call of `h`
               │
               = close it before the `return`, or use `with pl.scope("h"):`, which closes it on every exit

        "#]],
    );
}

#[test]
fn scopes_across_branches() {
    check_err(
        "@triton.jit\ndef k(x, n):\n    if n > 2:\n        pl.enter_scope(\"a\")\n    else:\n        pass\n    pl.exit_scope(\"a\")\n",
        &xn(),
        expect![[r#"
            error: scope `a` is opened in this branch of an `if` but not closed in it: a scope must be closed in the block that opens it, so that it is balanced on every path
              ┌─ test.py:8:9
              │
            8 │         pl.enter_scope("a")
              │         ^^^^^^^^^^^^^^^^^^^

        "#]],
    );
    check_err(
        "@triton.jit\ndef k(x, n):\n    pl.enter_scope(\"a\")\n    if n > 2:\n        pl.exit_scope(\"a\")\n    else:\n        pl.exit_scope(\"a\")\n",
        &xn(),
        expect![[r#"
            error: scope `a` was opened outside this branch of an `if` and cannot be closed inside it: each scope must be closed in the block that opens it
              ┌─ test.py:9:9
              │
            7 │     pl.enter_scope("a")
              │     ------------------- opened here
            8 │     if n > 2:
            9 │         pl.exit_scope("a")
              │         ^^^^^^^^^^^^^^^^^^

        "#]],
    );
}

#[test]
fn scopes_across_loops() {
    check_err(
        "@triton.jit\ndef k(x, n):\n    for i in range(n):\n        pl.enter_scope(\"a\")\n    pl.exit_scope(\"a\")\n",
        &xn(),
        expect![[r#"
            error: scope `a` is opened in this loop body but not closed in it: a scope must be closed in the block that opens it, so that it is balanced on every path
              ┌─ test.py:8:9
              │
            8 │         pl.enter_scope("a")
              │         ^^^^^^^^^^^^^^^^^^^

        "#]],
    );
    check_err(
        "@triton.jit\ndef k(x, n):\n    pl.enter_scope(\"a\")\n    for i in range(n):\n        pl.exit_scope(\"a\")\n        pl.enter_scope(\"a\")\n    pl.exit_scope(\"a\")\n",
        &xn(),
        expect![[r#"
            error: scope `a` was opened outside this loop body and cannot be closed inside it: each scope must be closed in the block that opens it
              ┌─ test.py:9:9
              │
            7 │     pl.enter_scope("a")
              │     ------------------- opened here
            8 │     for i in range(n):
            9 │         pl.exit_scope("a")
              │         ^^^^^^^^^^^^^^^^^^

        "#]],
    );
    check_err(
        "@triton.jit\ndef k(x, n):\n    for i in tl.static_range(2):\n        pl.enter_scope(\"a\")\n    pl.exit_scope(\"a\")\n",
        &xn(),
        expect![[r#"
            error: scope `a` is opened in this loop body but not closed in it: a scope must be closed in the block that opens it, so that it is balanced on every path
              ┌─ test.py:8:9
              │
            8 │         pl.enter_scope("a")
              │         ^^^^^^^^^^^^^^^^^^^

        "#]],
    );
    check_err(
        "@triton.jit\ndef k(x, n):\n    v = tl.load(x)\n    while v < 10:\n        with pl.scope(\"w\"):\n            pl.enter_scope(\"a\")\n        v = v + 1\n",
        &xn(),
        expect![[r#"
            error: scope `a` is opened inside this `with` block but not closed in it
               ┌─ test.py:9:14
               │
             9 │         with pl.scope("w"):
               │              ^^^^^^^^^^^^^
            10 │             pl.enter_scope("a")
               │             ------------------- `a` opened here

        "#]],
    );
}

#[test]
fn exits_leaving_scopes_open() {
    check_err(
        "@triton.jit\ndef k(x, n):\n    pl.enter_scope(\"a\")\n    if n > 2:\n        return\n    pl.exit_scope(\"a\")\n",
        &xn(),
        expect![[r#"
            error: `return` leaves scope `a` open: it would skip its `pl.exit_scope("a")`
              ┌─ test.py:9:9
              │
            7 │     pl.enter_scope("a")
              │     ------------------- opened here
            8 │     if n > 2:
            9 │         return
              │         ^^^^^^
              │
              = close it before the `return`, or use `with pl.scope("a"):`, which closes it on every exit

        "#]],
    );
    check_err(
        "@triton.jit\ndef k(x, n):\n    for i in range(n):\n        pl.enter_scope(\"a\")\n        if i > 2:\n            break\n        pl.exit_scope(\"a\")\n",
        &xn(),
        expect![[r#"
            error: `break` leaves scope `a` open: it would skip its `pl.exit_scope("a")`
               ┌─ test.py:10:13
               │
             8 │         pl.enter_scope("a")
               │         ------------------- opened here
             9 │         if i > 2:
            10 │             break
               │             ^^^^^
               │
               = close it before the `break`, or use `with pl.scope("a"):`, which closes it on every exit

        "#]],
    );
    check_err(
        "@triton.jit\ndef k(x, n):\n    for i in range(n):\n        pl.enter_scope(\"a\")\n        continue\n",
        &xn(),
        expect![[r#"
            error: `continue` leaves scope `a` open: it would skip its `pl.exit_scope("a")`
              ┌─ test.py:9:9
              │
            8 │         pl.enter_scope("a")
              │         ------------------- opened here
            9 │         continue
              │         ^^^^^^^^
              │
              = close it before the `continue`, or use `with pl.scope("a"):`, which closes it on every exit

        "#]],
    );
    // A scope opened outside the loop is not left by `break`.
    let src = format!("{HDR}@triton.jit\ndef k(x, n):\n    pl.enter_scope(\"a\")\n    for i in range(n):\n        if i > 2:\n            break\n    pl.exit_scope(\"a\")\n");
    compile_opts(&src, "k", &xn(), &opts(true));
}

#[test]
fn misuse_of_the_api() {
    check_err(
        "@triton.jit\ndef k(x, n):\n    pl.scope(\"a\")\n",
        &xn(),
        expect![[r#"
        error: `pl.scope(...)` is a context manager: use it as `with pl.scope("name"):`
          ┌─ test.py:7:5
          │
        7 │     pl.scope("a")
          │     ^^^^^^^^^^^^^
          │
          = or mark the region with `pl.enter_scope("name")` ... `pl.exit_scope("name")`

    "#]],
    );
    check_err(
        "@triton.jit\ndef k(x, n):\n    with pl.scope(\"a\") as s:\n        pass\n",
        &xn(),
        expect![[r#"
        error: `pl.scope(...)` has no value to bind: remove the `as ...`
          ┌─ test.py:7:27
          │
        7 │     with pl.scope("a") as s:
          │                           ^

    "#]],
    );
    check_err(
        "@triton.jit\ndef k(x, n):\n    with open(\"f\"):\n        pass\n",
        &xn(),
        expect![[r#"
            error: `with` is not supported in kernels, except `with pl.scope("name"):` (triton.profiler.language)
              ┌─ test.py:7:10
              │
            7 │     with open("f"):
              │          ^^^^^^^^^
              │
              = name `open` is not defined

        "#]],
    );
    check_err(
        "@triton.jit\ndef k(x, n):\n    pl.record(True, \"a\")\n",
        &xn(),
        expect![[r#"
        error: `triton.profiler.language.record` is not supported by Trident (in-kernel profiling has `enter_scope`, `exit_scope` and `scope`)
          ┌─ test.py:7:8
          │
        7 │     pl.record(True, "a")
          │        ^^^^^^

    "#]],
    );
    check_err(
        "import triton.profiler as proton\n@triton.jit\ndef k(x, n):\n    proton.start(\"a\")\n",
        &xn(),
        expect![[r#"
            error: `triton.profiler.start` is host-side profiling and cannot be used inside a kernel
              ┌─ test.py:8:12
              │
            8 │     proton.start("a")
              │            ^^^^^

        "#]],
    );
    check_err(
        "@triton.jit\ndef comb(a, b):\n    with pl.scope(\"c\"):\n        s = a + b\n    return s\n\n@triton.jit\ndef k(x, n):\n    v = tl.load(x + tl.arange(0, 4))\n    tl.store(x, tl.reduce(v, 0, comb))\n",
        &xn(),
        expect![[r#"
            error: profiling scopes cannot be used in the combine function of a reduction or scan
               ┌─ test.py:7:10
               │
             7 │     with pl.scope("c"):
               │          ^^^^^^^^^^^^^
               ·
            14 │     tl.store(x, tl.reduce(v, 0, comb))
               │                 --------------------- in this call of `comb`

        "#]],
    );
}
