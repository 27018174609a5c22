//! `kernels/batched_matmul.py`: C[b] = A[b] @ B[b] with a 3-D `tl.dot` (tensor cores on the
//! GPU backend), ragged in every dim, f16/bf16 into f32 and exact f32 (`IEEE=True`).

use trident_core::DType;

use super::{case, cdiv, grid, kernel_file, output};
use crate::case::{f64_copy, put, Case, Check, Elements, Inputs, RefError};
use crate::TensorList;

pub(crate) fn cases() -> Vec<Case> {
    // (operand type, (B, M, N, K), (BLOCK_B, BLOCK_M, BLOCK_N, BLOCK_K), IEEE, warps)
    // Each also runs as SASS on the SASS emulator (`tests/sass_emu_cases.rs`); the last one is
    // a tile for whose uniform masks ptxas writes `UP2UR` (3x40x24x64 in 2x32x32x32 tiles, 4
    // warps).
    let problems = [
        (DType::F16, (5, 50, 30, 20), (2, 16, 16, 16), false, 2),
        (DType::BF16, (4, 16, 32, 48), (4, 16, 32, 16), false, 4),
        (DType::F16, (8, 16, 16, 32), (8, 16, 16, 32), false, 8),
        (DType::F32, (2, 20, 16, 24), (2, 16, 16, 16), true, 4),
        (DType::F16, (3, 40, 24, 64), (2, 32, 32, 32), false, 4),
    ];
    problems
        .into_iter()
        .map(|(dt, (nb, m, n, k), (bb, bm, bn, bk), ieee, warps)| {
            let mut c = case(
                kernel_file!("batched_matmul.py"),
                "bmm_kernel",
                format!("batched_matmul/{dt}/{nb}x{m}x{n}x{k}/{bb}x{bm}x{bn}x{bk}w{warps}"),
                vec![
                    format!("a=randn:{dt}:{nb}x{m}x{k}"),
                    format!("b=randn:{dt}:{nb}x{k}x{n}"),
                    format!("c=empty:f32:{nb}x{m}x{n}"),
                    format!("B={nb}"),
                    format!("M={m}"),
                    format!("N={n}"),
                    format!("K={k}"),
                    format!("BLOCK_B={bb}"),
                    format!("BLOCK_M={bm}"),
                    format!("BLOCK_N={bn}"),
                    format!("BLOCK_K={bk}"),
                    format!("IEEE={}", if ieee { "True" } else { "False" }),
                ],
                grid(cdiv(nb, bb), cdiv(m, bm), cdiv(n, bn)),
                vec![output("c", Check::for_dtype(DType::F32))],
                reference,
            );
            c.num_warps = Some(warps);
            c
        })
        .collect()
}

fn reference(i: &Inputs<'_>) -> Result<TensorList, RefError> {
    let (a, b, c) = (i.tensor("a")?, i.tensor("b")?, i.tensor("c")?);
    let (nb, m, n, k) = (i.size("B")?, i.size("M")?, i.size("N")?, i.size("K")?);
    let mut want = f64_copy(c);
    for bt in 0..nb {
        for row in 0..m {
            for col in 0..n {
                let mut acc = 0.0;
                for kk in 0..k {
                    acc += a.at((bt * m + row) * k + kk)? * b.at((bt * k + kk) * n + col)?;
                }
                put(&mut want, (bt * m + row) * n + col, acc)?;
            }
        }
    }
    Ok(vec![("c".into(), want)])
}
