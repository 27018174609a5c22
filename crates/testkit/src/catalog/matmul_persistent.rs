//! `kernels/matmul_persistent.py`: a persistent C = A @ Bᵀ over tensor descriptors (B given
//! as [N, K]). `NUM_SMS` programs walk the tiles in grouped order; the sizes leave ragged
//! edges, more tiles than programs (each program takes several), and one case with more
//! programs than tiles (some take none). Rows stay multiples of 16 bytes (TMA's stride rule).

use trident_core::DType;

use super::{case, grid, kernel_file, matmul_reference, output};
use crate::case::{Case, Check, Inputs, RefError};
use crate::TensorList;

pub(crate) fn cases() -> Vec<Case> {
    // (M, N, K, (BLOCK_M, BLOCK_N, BLOCK_K), GROUP_M, NUM_SMS)
    let problems =
        [(200, 136, 96, (64, 64, 32), 2, 3), (72, 40, 48, (32, 32, 16), 4, 4), (48, 64, 64, (32, 32, 32), 1, 8)];
    problems
        .into_iter()
        .map(|(m, n, k, (bm, bn, bk), group, sms)| {
            let dt = DType::F16;
            case(
                kernel_file!("matmul_persistent.py"),
                "matmul_persistent_kernel",
                format!("matmul_persistent/{dt}/{m}x{n}x{k}/{bm}x{bn}x{bk}/g{group}/p{sms}"),
                vec![
                    format!("a=randn:{dt}:{m}x{k}"),
                    format!("b=randn:{dt}:{n}x{k}"),
                    format!("c=empty:{dt}:{m}x{n}"),
                    format!("M={m}"),
                    format!("N={n}"),
                    format!("K={k}"),
                    format!("BLOCK_M={bm}"),
                    format!("BLOCK_N={bn}"),
                    format!("BLOCK_K={bk}"),
                    format!("GROUP_M={group}"),
                    format!("NUM_SMS={sms}"),
                    "WARP_SPECIALIZE=True".to_string(),
                ],
                grid(sms, 1, 1),
                vec![output("c", Check::for_dtype(dt))],
                reference,
            )
        })
        .collect()
}

fn reference(i: &Inputs<'_>) -> Result<TensorList, RefError> {
    let (a, b, c) = (i.tensor("a")?, i.tensor("b")?, i.tensor("c")?);
    let want = matmul_reference(a, b, c, (i.size("M")?, i.size("N")?, i.size("K")?), true)?;
    Ok(vec![("c".into(), want)])
}
