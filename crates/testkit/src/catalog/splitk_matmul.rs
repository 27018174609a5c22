//! `kernels/splitk_matmul.py`: C += A @ B with K split across programs and `tl.atomic_add`.

use trident_core::DType;

use super::{case, cdiv, grid, kernel_file, output};
use crate::case::{f64_copy, put, Case, Check, Elements, Inputs, RefError, Tolerance};
use crate::TensorList;

pub(crate) fn cases() -> Vec<Case> {
    // (M, N, K, (BLOCK_M, BLOCK_N, BLOCK_K), K_PER_SPLIT, initial C)
    let problems = [
        (37, 29, 100, (16, 16, 16), 48, "zeros"),
        (64, 64, 256, (32, 32, 32), 64, "zeros"),
        (20, 10, 70, (16, 16, 16), 32, "zeros"),
        // Accumulates into existing values, as a fused "C += A @ B" would.
        (16, 24, 50, (16, 16, 16), 16, "randn"),
    ];
    problems
        .into_iter()
        .map(|(m, n, k, (bm, bn, bk), kps, init)| {
            let dt = DType::F16;
            let mut name = format!("splitk_matmul/{dt}-f32/{m}x{n}x{k}/split{kps}");
            if init != "zeros" {
                name.push_str("/accumulate");
            }
            case(
                kernel_file!("splitk_matmul.py"),
                "splitk_matmul_kernel",
                name,
                vec![
                    format!("a=randn:{dt}:{m}x{k}"),
                    format!("b=randn:{dt}:{k}x{n}"),
                    format!("c={init}:f32:{m}x{n}"),
                    format!("M={m}"),
                    format!("N={n}"),
                    format!("K={k}"),
                    format!("stride_am={k}"),
                    "stride_ak=1".into(),
                    format!("stride_bk={n}"),
                    "stride_bn=1".into(),
                    format!("stride_cm={n}"),
                    "stride_cn=1".into(),
                    format!("K_PER_SPLIT={kps}"),
                    format!("BLOCK_M={bm}"),
                    format!("BLOCK_N={bn}"),
                    format!("BLOCK_K={bk}"),
                ],
                grid(cdiv(m, bm) * cdiv(n, bn), cdiv(k, kps), 1),
                // fp32 sums of up to K products, added in an unspecified order.
                vec![output("c", Check::Close(Tolerance::new(1e-4, 1e-4)))],
                reference,
            )
        })
        .collect()
}

fn reference(i: &Inputs<'_>) -> Result<TensorList, RefError> {
    let (a, b, c) = (i.tensor("a")?, i.tensor("b")?, i.tensor("c")?);
    let (m, n, k) = (i.size("M")?, i.size("N")?, i.size("K")?);
    let (sam, sak, sbk, sbn) = (i.size("stride_am")?, i.size("stride_ak")?, i.size("stride_bk")?, i.size("stride_bn")?);
    let (scm, scn) = (i.size("stride_cm")?, i.size("stride_cn")?);
    let mut want = f64_copy(c);
    for row in 0..m {
        for col in 0..n {
            let mut acc = c.at(row * scm + col * scn)?;
            for kk in 0..k {
                acc += a.at(row * sam + kk * sak)? * b.at(kk * sbk + col * sbn)?;
            }
            put(&mut want, row * scm + col * scn, acc)?;
        }
    }
    Ok(vec![("c".into(), want)])
}
