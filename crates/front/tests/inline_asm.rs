//! `tl.inline_asm_elementwise` in the front end: one `inline_asm` op over the arguments
//! broadcast to one shape, a tuple of results for a tuple of dtypes, and the errors at the call
//! (constraints that do not match the results and arguments, letters Trident does not lower,
//! no tensor argument, a bad `pack`).

mod common;

use common::*;
use trident_core::{DType, HostTensor};

fn kernel(call: &str) -> String {
    format!(
        r#"
import triton
import triton.language as tl


@triton.jit
def k(x, out):
    offs = tl.arange(0, 16)
    a = tl.load(x + offs)
    z = {call}
    tl.store(out + offs, z)
"#
    )
}

fn args() -> Vec<(&'static str, A)> {
    vec![("x", A::T(HostTensor::zeros(DType::I32, &[16]))), ("out", A::T(HostTensor::zeros(DType::I32, &[16])))]
}

#[test]
fn one_op_over_broadcast_arguments_and_a_tuple_of_results() {
    let src = kernel(
        r#"tl.inline_asm_elementwise("add.s32 $0, $2, $3; sub.s32 $1, $2, $3;", "=r,=r,r,r", [a, 5], dtype=(tl.int32, tl.int32), is_pure=True, pack=1)[1]"#,
    );
    let c = compile_ok(&src, "k", &args());
    let text = c.module.to_string();
    assert_eq!(text.matches("inline_asm").count(), 1, "{text}");
    assert!(text.contains(r#"constraints = "=r,=r,r,r""#) && text.contains("pure = true"), "{text}");
    assert!(text.contains("splat"), "the scalar 5 is broadcast to the tile: {text}");
}

#[test]
fn errors_name_the_problem_at_the_call() {
    let err = |call: &str| compile_err(&kernel(call), "k", &args());
    let e = err(r#"tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r", [a], dtype=tl.int32, is_pure=True, pack=1)"#);
    assert!(e.contains("must list 1 output register(s)") && e.contains("then 1 input register(s)"), "{e}");
    let e = err(r#"tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,q", [a], dtype=tl.int32, is_pure=True, pack=1)"#);
    assert!(e.contains("constraint \"q\" is not one Trident lowers"), "{e}");
    let e = err(r#"tl.inline_asm_elementwise("mov.b32 $0, 1;", "=r,r", [1], dtype=tl.int32, is_pure=True, pack=1)"#);
    assert!(e.contains("needs at least one tensor argument"), "{e}");
    let e = err(r#"tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [a], dtype=tl.int32, is_pure=True, pack=0)"#);
    assert!(e.contains("pack must be 1 to 16"), "{e}");
    let e = err(r#"tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [a], dtype=tl.int32, is_pure=1, pack=1)"#);
    assert!(e.contains("is_pure must be True or False"), "{e}");
}
