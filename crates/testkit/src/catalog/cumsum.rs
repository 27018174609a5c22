//! `kernels/cumsum.py`: inclusive prefix sums along rows.

use trident_core::DType;

use super::{case, cdiv, grid, kernel_file, output};
use crate::case::{f64_copy, put, wrap_int, Case, Check, Elements, Inputs, RefError};
use crate::TensorList;

pub(crate) fn cases() -> Vec<Case> {
    // (dtype, M, N, x row stride, y row stride, BLOCK_M, BLOCK_N)
    let shapes = [
        (DType::F32, 1, 1, 1, 1, 1, 1),
        (DType::F32, 10, 37, 37, 37, 4, 64),
        (DType::F32, 7, 45, 50, 48, 2, 64), // strided rows; y[:, 45..48] stays untouched
        (DType::I32, 5, 64, 64, 64, 2, 64),
        (DType::I8, 6, 100, 100, 100, 4, 128), // scanned in int32, wraps when stored as int8
        (DType::I64, 3, 20, 20, 20, 4, 32),
    ];
    shapes
        .into_iter()
        .map(|(dt, m, n, sx, sy, bm, bn)| {
            let mut name = format!("cumsum/{dt}/{m}x{n}");
            if sx != n || sy != n {
                name.push_str(&format!("-strides{sx},{sy}"));
            }
            let gen = if dt.is_float() { "randn" } else { "rand" };
            case(
                kernel_file!("cumsum.py"),
                "cumsum_kernel",
                name,
                vec![
                    format!("x={gen}:{dt}:{m}x{sx}"),
                    format!("y=empty:{dt}:{m}x{sy}"),
                    format!("M={m}"),
                    format!("N={n}"),
                    format!("stride_xm={sx}"),
                    format!("stride_ym={sy}"),
                    format!("BLOCK_M={bm}"),
                    format!("BLOCK_N={bn}"),
                ],
                grid(cdiv(m, bm), 1, 1),
                vec![output("y", Check::for_dtype(dt))],
                reference,
            )
        })
        .collect()
}

fn reference(i: &Inputs<'_>) -> Result<TensorList, RefError> {
    let (x, y) = (i.tensor("x")?, i.tensor("y")?);
    let (m, n, sx, sy) = (i.size("M")?, i.size("N")?, i.size("stride_xm")?, i.size("stride_ym")?);
    let mut want = f64_copy(y);
    for r in 0..m {
        if y.dtype.is_int() {
            // Exact integer sums, wrapped to y's type on store.
            let mut acc: i128 = 0;
            for c in 0..n {
                acc += x.at(r * sx + c)? as i128;
                put(&mut want, r * sy + c, wrap_int(acc, y.dtype))?;
            }
        } else {
            let mut acc = 0.0;
            for c in 0..n {
                acc += x.at(r * sx + c)?;
                put(&mut want, r * sy + c, acc)?;
            }
        }
    }
    Ok(vec![("y".into(), want)])
}
