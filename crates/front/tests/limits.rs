//! Deep nesting hits a stated limit with a diagnostic, never a stack overflow (issue 14's
//! reproducers): 10,000 nested unary minuses, 5,450 nested lists, 150 levels of
//! indentation are refused; 9,150 nested parentheses, a chain of 1,500 additions and a
//! chain of 300 distinct helper calls compile (the last was reported as "recursive").

mod common;
use common::*;
use trident_core::DType;

const HDR: &str = "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x):\n    v = tl.load(x)\n";

fn ptr() -> A {
    A::T(trident_core::HostTensor::zeros(DType::F32, &[4]))
}

#[test]
fn deep_expressions_are_refused_at_their_line() {
    let src = format!("{HDR}    tl.store(x, {}v)\n", "-".repeat(10_000));
    let e = compile_err(&src, "k", &[("x", ptr())]);
    assert!(e.contains("expression nested more than 2000 levels deep") && e.contains("test.py:8:"), "{e}");
    let src = format!("{HDR}    y = {}v{}\n    tl.store(x, v)\n", "[".repeat(5450), "]".repeat(5450));
    let e = compile_err(&src, "k", &[("x", ptr())]);
    assert!(e.contains("expression nested more than 2000 levels deep"), "{e}");
}

#[test]
fn deep_blocks_are_refused_as_python_does() {
    let mut src = HDR.to_string();
    for i in 0..150 {
        src += &format!("{}if v > {i}:\n", "    ".repeat(i + 1));
    }
    src += &format!("{}tl.store(x, v)\n", "    ".repeat(151));
    let e = compile_err(&src, "k", &[("x", ptr())]);
    assert!(e.contains("too many levels of indentation"), "{e}");
}

#[test]
fn deep_but_legal_nesting_compiles() {
    compile_ok(&format!("{HDR}    tl.store(x, {}v{})\n", "(".repeat(9150), ")".repeat(9150)), "k", &[("x", ptr())]);
    compile_ok(&format!("{HDR}    tl.store(x, {})\n", vec!["v"; 1500].join(" + ")), "k", &[("x", ptr())]);
    compile_ok(&format!("{HDR}    tl.store(x, {}v)\n", "-".repeat(1500)), "k", &[("x", ptr())]);
}

#[test]
fn long_helper_chains_are_not_recursion() {
    let mut src = String::from("import triton\nimport triton.language as tl\n\n");
    for i in 0..300 {
        src += &format!("@triton.jit\ndef f{i}(v):\n    return f{}(v) + 1.0\n\n", i + 1);
    }
    src += "@triton.jit\ndef f300(v):\n    return v\n\n@triton.jit\ndef k(x):\n    tl.store(x, f0(tl.load(x)))\n";
    compile_ok(&src, "k", &[("x", ptr())]);
    // Real recursion is still refused, by name.
    let rec = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef f(v):\n    return f(v)\n\n@triton.jit\ndef k(x):\n    tl.store(x, f(tl.load(x)))\n";
    let e = compile_err(rec, "k", &[("x", ptr())]);
    assert!(e.contains("recursive call of `f`"), "{e}");
}

/// Blocks made bigger than Triton's 2^20 elements by broadcasting, `join` or `cat` are
/// refused at the expression (issue 14: the interpreter tried to allocate 8 GB).
#[test]
fn blocks_past_the_element_limit_are_refused_wherever_they_grow() {
    let body = |expr: &str| {
        format!(
            "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x, R: tl.constexpr, C: tl.constexpr):\n    r = tl.arange(0, R)\n    c = tl.arange(0, C)\n    v = {expr}\n    tl.store(x + tl.arange(0, 4), tl.sum(tl.ravel(v), axis=0) + tl.zeros((4,), tl.int32))\n"
        )
    };
    let args = |r: i64, c: i64| {
        vec![("x", A::T(trident_core::HostTensor::zeros(DType::I32, &[4]))), ("R", cint(r)), ("C", cint(c))]
    };
    let e = compile_err(&body("r[:, None] + c[None, :]"), "k", &args(1024, 1 << 20));
    assert!(e.contains("a block of shape [1024, 1048576] has 1073741824 elements") && e.contains("test.py:9"), "{e}");
    let e = compile_err(&body("tl.join(c, c)"), "k", &args(1, 1 << 20));
    assert!(e.contains("more than Triton's limit of 1048576"), "{e}");
    let e = compile_err(&body("tl.cat(c, c, can_reorder=True)"), "k", &args(1, 1 << 20));
    assert!(e.contains("more than Triton's limit of 1048576"), "{e}");
    // At the limit, fine.
    compile_ok(&body("r[:, None] + c[None, :]"), "k", &args(16, 1 << 16));
}

#[test]
fn duplicate_parameters_are_refused_as_python_does() {
    let src = "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x, x):\n    tl.store(x, 1.0)\n";
    let e = compile_err(src, "k", &[("x", ptr())]);
    assert!(e.contains("duplicate argument 'x' in function definition") && e.contains("test.py:6:10"), "{e}");
}
