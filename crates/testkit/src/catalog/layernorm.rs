//! `kernels/layernorm.py`: forward (y, mean, rstd) and the two backward kernels.

use trident_core::DType;

use super::{case, cdiv, grid, kernel_file, output};
use crate::case::{f64_copy, put, Case, Check, Elements, Inputs, RefError, Tolerance};
use crate::TensorList;

const EPS: &str = "1e-05";

pub(crate) fn cases() -> Vec<Case> {
    let file = kernel_file!("layernorm.py");
    let mut cases = Vec::new();
    // Forward: (dtype, M, N, BLOCK_N)
    for (dt, m, n, block) in
        [(DType::F32, 13, 37, 64), (DType::F32, 3, 1000, 1024), (DType::F16, 8, 64, 64), (DType::BF16, 4, 50, 64)]
    {
        cases.push(case(
            file,
            "layernorm_fwd",
            format!("layernorm_fwd/{dt}/{m}x{n}"),
            vec![
                format!("x=randn:{dt}:{m}x{n}"),
                format!("y=empty:{dt}:{m}x{n}"),
                format!("w=randn:{dt}:{n}"),
                format!("b=randn:{dt}:{n}"),
                format!("mean=empty:f32:{m}"),
                format!("rstd=empty:f32:{m}"),
                format!("stride={n}"),
                format!("N={n}"),
                format!("eps={EPS}"),
                format!("BLOCK_N={block}"),
            ],
            grid(m, 1, 1),
            vec![
                output("y", Check::for_dtype(dt)),
                output("mean", Check::for_dtype(DType::F32)),
                output("rstd", Check::for_dtype(DType::F32)),
            ],
            forward,
        ));
    }
    // Backward, dx and partial dw/db: (dtype, M, N, ROWS_PER_PROGRAM, BLOCK_N)
    for (dt, m, n, rows, block) in
        [(DType::F32, 13, 37, 4, 64), (DType::F32, 9, 100, 8, 128), (DType::F16, 6, 48, 3, 64)]
    {
        let g = cdiv(m, rows);
        // dx sums N products per row before subtracting: allow for fp32 cancellation.
        let dx_check = if dt == DType::F32 { Check::Close(Tolerance::new(1e-4, 1e-4)) } else { Check::for_dtype(dt) };
        cases.push(case(
            file,
            "layernorm_bwd_dx",
            format!("layernorm_bwd_dx/{dt}/{m}x{n}/rows{rows}"),
            vec![
                format!("dy=randn:{dt}:{m}x{n}"),
                format!("x=randn:{dt}:{m}x{n}"),
                format!("w=randn:{dt}:{n}"),
                // Any mean and positive rstd define a valid input; they need not come from x.
                format!("mean=randn:f32:{m}"),
                format!("rstd=rand:f32:{m}"),
                format!("dx=empty:{dt}:{m}x{n}"),
                format!("dw_part=empty:f32:{g}x{n}"),
                format!("db_part=empty:f32:{g}x{n}"),
                format!("stride={n}"),
                format!("M={m}"),
                format!("N={n}"),
                format!("ROWS_PER_PROGRAM={rows}"),
                format!("BLOCK_N={block}"),
            ],
            grid(g, 1, 1),
            vec![
                output("dx", dx_check),
                output("dw_part", Check::Close(Tolerance::new(1e-4, 1e-4))),
                output("db_part", Check::Close(Tolerance::new(1e-4, 1e-4))),
            ],
            backward_dx,
        ));
    }
    // Backward, reduction of the partials: (G, N, BLOCK_G, BLOCK_N)
    for (g, n, bg, bn) in [(4, 37, 2, 32), (5, 130, 4, 64), (1, 16, 1, 16)] {
        cases.push(case(
            file,
            "layernorm_bwd_dwdb",
            format!("layernorm_bwd_dwdb/f32/{g}x{n}"),
            vec![
                format!("dw_part=randn:f32:{g}x{n}"),
                format!("db_part=randn:f32:{g}x{n}"),
                format!("dw=empty:f32:{n}"),
                format!("db=empty:f32:{n}"),
                format!("G={g}"),
                format!("N={n}"),
                format!("BLOCK_G={bg}"),
                format!("BLOCK_N={bn}"),
            ],
            grid(cdiv(n, bn), 1, 1),
            vec![output("dw", Check::for_dtype(DType::F32)), output("db", Check::for_dtype(DType::F32))],
            backward_dwdb,
        ));
    }
    cases
}

fn row(t: &trident_core::HostTensor, base: usize, n: usize) -> Result<Vec<f64>, RefError> {
    (0..n).map(|c| t.at(base + c)).collect()
}

fn forward(i: &Inputs<'_>) -> Result<TensorList, RefError> {
    let (x, y, w, b) = (i.tensor("x")?, i.tensor("y")?, i.tensor("w")?, i.tensor("b")?);
    let (mean, rstd) = (i.tensor("mean")?, i.tensor("rstd")?);
    let (stride, n, eps) = (i.size("stride")?, i.size("N")?, i.float("eps")?);
    let (mut want_y, mut want_mean, mut want_rstd) = (f64_copy(y), f64_copy(mean), f64_copy(rstd));
    let (w, b) = (row(w, 0, n)?, row(b, 0, n)?);
    for r in 0..i.grid.x as usize {
        let xr = row(x, r * stride, n)?;
        let mu = xr.iter().sum::<f64>() / n as f64;
        let var = xr.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / n as f64;
        let rs = 1.0 / (var + eps).sqrt();
        for c in 0..n {
            put(&mut want_y, r * stride + c, (xr[c] - mu) * rs * w[c] + b[c])?;
        }
        put(&mut want_mean, r, mu)?;
        put(&mut want_rstd, r, rs)?;
    }
    Ok(vec![("y".into(), want_y), ("mean".into(), want_mean), ("rstd".into(), want_rstd)])
}

fn backward_dx(i: &Inputs<'_>) -> Result<TensorList, RefError> {
    let (dy, x, w) = (i.tensor("dy")?, i.tensor("x")?, i.tensor("w")?);
    let (mean, rstd) = (i.tensor("mean")?, i.tensor("rstd")?);
    let (dx, dw_part, db_part) = (i.tensor("dx")?, i.tensor("dw_part")?, i.tensor("db_part")?);
    let (stride, m, n, rows) = (i.size("stride")?, i.size("M")?, i.size("N")?, i.size("ROWS_PER_PROGRAM")?);
    let w = row(w, 0, n)?;
    let (mut want_dx, mut want_dw, mut want_db) = (f64_copy(dx), f64_copy(dw_part), f64_copy(db_part));
    for g in 0..i.grid.x as usize {
        let (mut dw_acc, mut db_acc) = (vec![0.0; n], vec![0.0; n]);
        for r in g * rows..((g + 1) * rows).min(m) {
            let (xr, dyr) = (row(x, r * stride, n)?, row(dy, r * stride, n)?);
            let (mu, rs) = (mean.at(r)?, rstd.at(r)?);
            let xhat: Vec<f64> = xr.iter().map(|v| (v - mu) * rs).collect();
            let wdy: Vec<f64> = (0..n).map(|c| w[c] * dyr[c]).collect();
            let c1 = (0..n).map(|c| xhat[c] * wdy[c]).sum::<f64>() / n as f64;
            let c2 = wdy.iter().sum::<f64>() / n as f64;
            for c in 0..n {
                put(&mut want_dx, r * stride + c, (wdy[c] - (xhat[c] * c1 + c2)) * rs)?;
                dw_acc[c] += dyr[c] * xhat[c];
                db_acc[c] += dyr[c];
            }
        }
        for c in 0..n {
            put(&mut want_dw, g * n + c, dw_acc[c])?;
            put(&mut want_db, g * n + c, db_acc[c])?;
        }
    }
    Ok(vec![("dx".into(), want_dx), ("dw_part".into(), want_dw), ("db_part".into(), want_db)])
}

fn backward_dwdb(i: &Inputs<'_>) -> Result<TensorList, RefError> {
    let (dw_part, db_part, dw, db) = (i.tensor("dw_part")?, i.tensor("db_part")?, i.tensor("dw")?, i.tensor("db")?);
    let (g, n) = (i.size("G")?, i.size("N")?);
    let (mut want_dw, mut want_db) = (f64_copy(dw), f64_copy(db));
    for c in 0..n {
        let (mut sw, mut sb) = (0.0, 0.0);
        for k in 0..g {
            sw += dw_part.at(k * n + c)?;
            sb += db_part.at(k * n + c)?;
        }
        put(&mut want_dw, c, sw)?;
        put(&mut want_db, c, sb)?;
    }
    Ok(vec![("dw".into(), want_dw), ("db".into(), want_db)])
}
