//! `kernels/matmul_descriptor.py`: C = A @ B over tensor descriptors (TMA on sm_90). Sizes
//! keep every row a multiple of 16 bytes (TMA's stride rule) and leave ragged edges.

use trident_core::DType;

use super::{case, cdiv, grid, kernel_file, matmul_reference, output};
use crate::case::{Case, Check, Inputs, RefError};
use crate::TensorList;

pub(crate) fn cases() -> Vec<Case> {
    // (M, N, K, (BLOCK_M, BLOCK_N, BLOCK_K), WARP_SPECIALIZE)
    // The 4th: B's rows are 128 f16 = 256 bytes, wider than TMA's 128-byte swizzle, so
    // each B tile is copied as two boxes (ragged: N's second tile lies partly outside); the
    // last again with a producer warp (sm_90a; a hint without effect elsewhere).
    let problems = [
        (100, 72, 96, (64, 64, 32), false),
        (64, 64, 256, (64, 32, 64), false),
        (33, 40, 40, (32, 32, 32), false),
        (70, 136, 136, (64, 128, 64), false),
        (70, 136, 136, (64, 128, 64), true),
    ];
    problems
        .into_iter()
        .map(|(m, n, k, (bm, bn, bk), ws)| {
            let dt = DType::F16;
            case(
                kernel_file!("matmul_descriptor.py"),
                "matmul_desc_kernel",
                format!("matmul_descriptor/{dt}/{m}x{n}x{k}/{bm}x{bn}x{bk}{}", if ws { "/ws" } else { "" }),
                vec![
                    format!("a=randn:{dt}:{m}x{k}"),
                    format!("b=randn:{dt}:{k}x{n}"),
                    format!("c=empty:{dt}:{m}x{n}"),
                    format!("M={m}"),
                    format!("N={n}"),
                    format!("K={k}"),
                    format!("BLOCK_M={bm}"),
                    format!("BLOCK_N={bn}"),
                    format!("BLOCK_K={bk}"),
                    format!("WARP_SPECIALIZE={}", if ws { "True" } else { "False" }),
                ],
                grid(cdiv(m, bm), cdiv(n, bn), 1),
                vec![output("c", Check::for_dtype(dt))],
                reference,
            )
        })
        .collect()
}

fn reference(i: &Inputs<'_>) -> Result<TensorList, RefError> {
    let (a, b, c) = (i.tensor("a")?, i.tensor("b")?, i.tensor("c")?);
    let want = matmul_reference(a, b, c, (i.size("M")?, i.size("N")?, i.size("K")?), false)?;
    Ok(vec![("c".into(), want)])
}
