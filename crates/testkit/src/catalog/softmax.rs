//! `kernels/softmax.py`: row-wise softmax, one row per program.

use trident_core::DType;

use super::{case, grid, kernel_file, output};
use crate::case::{f64_copy, put, Case, Check, Elements, Inputs, RefError};
use crate::TensorList;

pub(crate) fn cases() -> Vec<Case> {
    let file = kernel_file!("softmax.py");
    // (dtype, rows, n_cols, row stride (= tensor width), BLOCK)
    let shapes = [
        (DType::F32, 3, 1, 1, 1),
        (DType::F32, 7, 33, 33, 64),
        (DType::F32, 4, 128, 128, 128),
        (DType::F32, 6, 40, 48, 64), // rows are strided: columns 40..48 of y stay untouched
        (DType::F32, 2, 1000, 1000, 1024),
        (DType::F16, 5, 100, 100, 128),
        (DType::BF16, 3, 50, 50, 64),
    ];
    shapes
        .into_iter()
        .map(|(dt, rows, n, stride, block)| {
            let name = if n == stride {
                format!("softmax/{dt}/{rows}x{n}")
            } else {
                format!("softmax/{dt}/{rows}x{n}-stride{stride}")
            };
            case(
                file,
                "softmax_kernel",
                name,
                vec![
                    format!("x=randn:{dt}:{rows}x{stride}"),
                    format!("y=empty:{dt}:{rows}x{stride}"),
                    format!("x_row_stride={stride}"),
                    format!("y_row_stride={stride}"),
                    format!("n_cols={n}"),
                    format!("BLOCK={block}"),
                ],
                grid(rows, 1, 1),
                vec![output("y", Check::for_dtype(dt))],
                reference,
            )
        })
        .collect()
}

fn reference(i: &Inputs<'_>) -> Result<TensorList, RefError> {
    let (x, y) = (i.tensor("x")?, i.tensor("y")?);
    let (xs, ys, n) = (i.size("x_row_stride")?, i.size("y_row_stride")?, i.size("n_cols")?);
    let mut want = f64_copy(y);
    for r in 0..i.grid.x as usize {
        let row: Vec<f64> = (0..n).map(|c| x.at(r * xs + c)).collect::<Result<_, _>>()?;
        let max = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let exps: Vec<f64> = row.iter().map(|v| (v - max).exp()).collect();
        let sum: f64 = exps.iter().sum();
        for (c, e) in exps.iter().enumerate() {
            put(&mut want, r * ys + c, e / sum)?;
        }
    }
    Ok(vec![("y".into(), want)])
}
