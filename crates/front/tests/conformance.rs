//! Cases from Triton's own `test_core.py` (replayed by the conformance harness,
//! `bench/CONFORMANCE.md`) where the front end disagreed with Triton.

mod common;
use common::*;
use trident_core::{DType, HostTensor};

const HDR: &str = "import triton\nimport triton.language as tl\n\n\n";

fn t(d: DType) -> A {
    A::T(HostTensor::zeros(d, &[128, 128]))
}

/// `test_tma_load_block_shape_err`, `test_tma_store_block_shape_err`: Triton rejects a tensor
/// descriptor whose block spans fewer than 16 bytes in its last dimension (and, statically,
/// a last stride other than 1 or other strides not a multiple of 16 bytes); Trident ran them.
#[test]
fn tensor_descriptor_static_checks() {
    let cases = [
        ("[128, 1], [1, 2]", DType::I32, "at least 16 bytes in the last dimension, but got 2 * 4 = 8 bytes"),
        ("[128, 1], [8, 4]", DType::I16, "at least 16 bytes in the last dimension, but got 4 * 2 = 8 bytes"),
        ("[128, 2], [8, 8]", DType::I32, "last dim must be 1 but got 2"),
        ("[129, 1], [8, 4]", DType::I32, "strides must be 16-byte aligned, but got a stride of 129 * 4 = 516 bytes"),
    ];
    for (args, d, want) in cases {
        let src = format!(
            "{HDR}@triton.jit\ndef k(ptr):\n    desc = tl.make_tensor_descriptor(ptr, [128, 128], {args})\n    desc.load([0, 0])\n"
        );
        let err = compile_err(&src, "k", &[("ptr", t(d))]);
        assert!(err.contains(want), "{args} {d}: {err}");
    }
    // The same shapes within the rules compile.
    for (args, d) in
        [("[128, 1], [1, 4]", DType::I32), ("[128, 1], [8, 8]", DType::I16), ("[8, 1], [8, 4]", DType::I32)]
    {
        let src = format!(
            "{HDR}@triton.jit\ndef k(ptr):\n    desc = tl.make_tensor_descriptor(ptr, [128, 128], {args})\n    desc.load([0, 0])\n"
        );
        compile_ok(&src, "k", &[("ptr", t(d))]);
    }
}
