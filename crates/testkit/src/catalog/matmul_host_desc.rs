//! `kernels/matmul_host_desc.py`: C = A @ B over host tensor descriptors (`desc[BOX]:TENSOR`
//! arguments; TMA on sm_90). Ragged edges; rows a multiple of 16 bytes (the descriptors'
//! stride rule); the last case with a producer warp (sm_90a).

use trident_core::DType;

use super::{case, cdiv, grid, kernel_file, matmul_reference, output};
use crate::case::{Case, Check, Inputs, RefError};
use crate::TensorList;

pub(crate) fn cases() -> Vec<Case> {
    // (M, N, K, (BLOCK_M, BLOCK_N, BLOCK_K), WARP_SPECIALIZE)
    // The second: every size a multiple of 16 but not of the blocks (the sizes are specialized
    // as multiples of 16: bounds masks over whole vectors, vectorized accesses without TMA).
    let problems = [
        (100, 72, 96, (64, 64, 32), false),
        (80, 96, 48, (32, 64, 32), false),
        (33, 40, 40, (32, 32, 32), false),
        (70, 136, 136, (64, 128, 64), true),
    ];
    problems
        .into_iter()
        .map(|(m, n, k, (bm, bn, bk), ws)| {
            let dt = DType::F16;
            case(
                kernel_file!("matmul_host_desc.py"),
                "matmul_host_desc_kernel",
                format!("matmul_host_desc/{dt}/{m}x{n}x{k}/{bm}x{bn}x{bk}{}", if ws { "/ws" } else { "" }),
                vec![
                    format!("a_desc=desc[{bm}x{bk}]:randn:{dt}:{m}x{k}"),
                    format!("b_desc=desc[{bk}x{bn}]:randn:{dt}:{k}x{n}"),
                    format!("c_desc=desc[{bm}x{bn}]:empty:{dt}:{m}x{n}"),
                    format!("BLOCK_M={bm}"),
                    format!("BLOCK_N={bn}"),
                    format!("BLOCK_K={bk}"),
                    format!("WARP_SPECIALIZE={}", if ws { "True" } else { "False" }),
                ],
                grid(cdiv(m, bm), cdiv(n, bn), 1),
                vec![output("c_desc", Check::for_dtype(dt))],
                reference,
            )
        })
        .collect()
}

/// The persistent kernel (B given N x K): NUM_SMS programs over the tiles, with and without
/// the split epilogue and the producer warp.
pub(crate) fn persistent_cases() -> Vec<Case> {
    // (M, N, K, NUM_SMS, EPILOGUE_SUBTILE, WARP_SPECIALIZE); 64x64x32 tiles, GROUP_M=2.
    let problems = [(200, 136, 96, 3, false, false), (200, 136, 96, 3, true, true), (96, 64, 48, 5, true, false)];
    problems
        .into_iter()
        .map(|(m, n, k, sms, subtile, ws)| {
            let dt = DType::F16;
            let cn = if subtile { 32 } else { 64 };
            let py = |b: bool| if b { "True" } else { "False" };
            case(
                kernel_file!("matmul_host_desc.py"),
                "matmul_host_desc_persistent_kernel",
                format!(
                    "matmul_host_desc_persistent/{dt}/{m}x{n}x{k}/sms{sms}{}{}",
                    if subtile { "/subtile" } else { "" },
                    if ws { "/ws" } else { "" }
                ),
                vec![
                    format!("a_desc=desc[64x32]:randn:{dt}:{m}x{k}"),
                    format!("b_desc=desc[64x32]:randn:{dt}:{n}x{k}"),
                    format!("c_desc=desc[64x{cn}]:empty:{dt}:{m}x{n}"),
                    format!("M={m}"),
                    format!("N={n}"),
                    format!("K={k}"),
                    "BLOCK_M=64".into(),
                    "BLOCK_N=64".into(),
                    "BLOCK_K=32".into(),
                    "GROUP_M=2".into(),
                    format!("EPILOGUE_SUBTILE={}", py(subtile)),
                    format!("NUM_SMS={sms}"),
                    format!("WARP_SPECIALIZE={}", py(ws)),
                ],
                grid(sms, 1, 1),
                vec![output("c_desc", Check::for_dtype(dt))],
                reference_bt,
            )
        })
        .collect()
}

/// C = A @ B^T with B given N x K.
fn reference_bt(i: &Inputs<'_>) -> Result<TensorList, RefError> {
    let (a, b, c) = (i.tensor("a_desc")?, i.tensor("b_desc")?, i.tensor("c_desc")?);
    let want = matmul_reference(a, b, c, (a.shape[0], b.shape[0], a.shape[1]), true)?;
    Ok(vec![("c_desc".into(), want)])
}

fn reference(i: &Inputs<'_>) -> Result<TensorList, RefError> {
    let (a, b, c) = (i.tensor("a_desc")?, i.tensor("b_desc")?, i.tensor("c_desc")?);
    let want = matmul_reference(a, b, c, (a.shape[0], b.shape[1], a.shape[1]), false)?;
    Ok(vec![("c_desc".into(), want)])
}
