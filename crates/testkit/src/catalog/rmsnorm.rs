//! `kernels/rmsnorm.py`: the forward pass (y, rstd).

use trident_core::DType;

use super::{case, grid, kernel_file, output};
use crate::case::{f64_copy, put, Case, Check, Elements, Inputs, RefError};
use crate::TensorList;

pub(crate) fn cases() -> Vec<Case> {
    let file = kernel_file!("rmsnorm.py");
    let mut cases = Vec::new();
    // (dtype, M, N, BLOCK_N): ragged rows, a wide one, half types.
    for (dt, m, n, block) in
        [(DType::F32, 13, 37, 64), (DType::F32, 3, 1000, 1024), (DType::F16, 8, 64, 64), (DType::BF16, 5, 300, 512)]
    {
        cases.push(case(
            file,
            "rmsnorm_fwd",
            format!("rmsnorm_fwd/{dt}/{m}x{n}"),
            vec![
                format!("x=randn:{dt}:{m}x{n}"),
                format!("y=empty:{dt}:{m}x{n}"),
                format!("w=randn:{dt}:{n}"),
                format!("rstd=empty:f32:{m}"),
                format!("stride={n}"),
                format!("N={n}"),
                "eps=1e-06".to_string(),
                format!("BLOCK_N={block}"),
            ],
            grid(m, 1, 1),
            vec![output("y", Check::for_dtype(dt)), output("rstd", Check::for_dtype(DType::F32))],
            forward,
        ));
    }
    cases
}

fn forward(i: &Inputs<'_>) -> Result<TensorList, RefError> {
    let (x, y, w, rstd) = (i.tensor("x")?, i.tensor("y")?, i.tensor("w")?, i.tensor("rstd")?);
    let (stride, n, eps) = (i.size("stride")?, i.size("N")?, i.float("eps")?);
    let (mut want_y, mut want_rstd) = (f64_copy(y), f64_copy(rstd));
    let w: Vec<f64> = (0..n).map(|c| w.at(c)).collect::<Result<_, _>>()?;
    for r in 0..i.grid.x as usize {
        let xr: Vec<f64> = (0..n).map(|c| x.at(r * stride + c)).collect::<Result<_, _>>()?;
        let rs = 1.0 / (xr.iter().map(|v| v * v).sum::<f64>() / n as f64 + eps).sqrt();
        for c in 0..n {
            put(&mut want_y, r * stride + c, xr[c] * rs * w[c])?;
        }
        put(&mut want_rstd, r, rs)?;
    }
    Ok(vec![("y".into(), want_y), ("rstd".into(), want_rstd)])
}
