//! `kernels/matmul.py`: C = A @ B with grouped tile ordering (`matmul_kernel`,
//! and `matmul_autotuned` with one of its configs pinned).

use trident_core::DType;

use super::{case, cdiv, grid, kernel_file, output};
use crate::case::{f64_copy, put, Case, Check, Elements, Inputs, RefError};
use crate::TensorList;

/// One matmul problem: element types, sizes, blocks and whether B is stored transposed.
struct Problem {
    ab: DType,
    c: DType,
    m: usize,
    n: usize,
    k: usize,
    blocks: (usize, usize, usize),
    group_m: usize,
    b_transposed: bool,
}

pub(crate) fn cases() -> Vec<Case> {
    let p = |ab, c, (m, n, k), blocks, group_m, b_transposed| Problem { ab, c, m, n, k, blocks, group_m, b_transposed };
    let problems = [
        p(DType::F16, DType::F16, (16, 16, 16), (16, 16, 16), 1, false),
        p(DType::F16, DType::F16, (37, 29, 45), (16, 16, 16), 2, false),
        p(DType::F16, DType::F32, (64, 48, 80), (32, 16, 32), 2, false),
        p(DType::F16, DType::F16, (100, 70, 33), (32, 32, 16), 4, false),
        p(DType::F16, DType::F16, (24, 40, 36), (16, 16, 16), 2, true),
        p(DType::BF16, DType::BF16, (33, 17, 40), (16, 16, 16), 2, false),
        p(DType::BF16, DType::F32, (20, 40, 24), (16, 32, 16), 1, false),
    ];
    let mut cases: Vec<Case> = problems.iter().map(|pr| build(pr, "matmul_kernel")).collect();
    // Tiles big enough for Hopper's warpgroup MMA (at least 16 rows per warp, warps in fours):
    // on an H100 these run on `wgmma`, the ones above on `mma.sync`.
    for (pr, warps) in [
        (p(DType::F16, DType::F16, (130, 100, 96), (64, 64, 32), 2, false), 4),
        (p(DType::BF16, DType::F32, (96, 72, 64), (64, 64, 32), 1, true), 4),
        (p(DType::F16, DType::F32, (200, 136, 96), (128, 128, 32), 2, false), 8),
    ] {
        let mut c = build(&pr, "matmul_kernel");
        c.name.push_str(&format!("/{}x{}x{}w{warps}", pr.blocks.0, pr.blocks.1, pr.blocks.2));
        c.num_warps = Some(warps);
        cases.push(c);
    }
    // The autotuned kernel, with the smallest of its configs given explicitly.
    cases.push(build(&p(DType::F16, DType::F16, (50, 40, 70), (32, 32, 32), 4, false), "matmul_autotuned"));
    cases
}

fn build(pr: &Problem, kernel: &'static str) -> Case {
    let Problem { ab, c, m, n, k, blocks: (bm, bn, bk), group_m, b_transposed } = *pr;
    // B is K x N, stored row-major, or (transposed) N x K row-major and read through strides.
    let (b_shape, sbk, sbn) = if b_transposed { (format!("{n}x{k}"), 1, k) } else { (format!("{k}x{n}"), n, 1) };
    let mut name = format!("{kernel}/{ab}-{c}/{m}x{n}x{k}");
    if b_transposed {
        name.push_str("-bT");
    }
    let tol = Check::for_dtype(c);
    case(
        kernel_file!("matmul.py"),
        kernel,
        name,
        vec![
            format!("a=randn:{ab}:{m}x{k}"),
            format!("b=randn:{ab}:{b_shape}"),
            format!("c=empty:{c}:{m}x{n}"),
            format!("M={m}"),
            format!("N={n}"),
            format!("K={k}"),
            format!("stride_am={k}"),
            "stride_ak=1".into(),
            format!("stride_bk={sbk}"),
            format!("stride_bn={sbn}"),
            format!("stride_cm={n}"),
            "stride_cn=1".into(),
            format!("BLOCK_M={bm}"),
            format!("BLOCK_N={bn}"),
            format!("BLOCK_K={bk}"),
            format!("GROUP_M={group_m}"),
        ],
        grid(cdiv(m, bm) * cdiv(n, bn), 1, 1),
        vec![output("c", tol)],
        reference,
    )
}

fn reference(i: &Inputs<'_>) -> Result<TensorList, RefError> {
    let (a, b, c) = (i.tensor("a")?, i.tensor("b")?, i.tensor("c")?);
    let (m, n, k) = (i.size("M")?, i.size("N")?, i.size("K")?);
    let (sam, sak, sbk, sbn) = (i.size("stride_am")?, i.size("stride_ak")?, i.size("stride_bk")?, i.size("stride_bn")?);
    let (scm, scn) = (i.size("stride_cm")?, i.size("stride_cn")?);
    let mut want = f64_copy(c);
    for row in 0..m {
        for col in 0..n {
            let mut acc = 0.0;
            for kk in 0..k {
                acc += a.at(row * sam + kk * sak)? * b.at(kk * sbk + col * sbn)?;
            }
            put(&mut want, row * scm + col * scn, acc)?;
        }
    }
    Ok(vec![("c".into(), want)])
}
