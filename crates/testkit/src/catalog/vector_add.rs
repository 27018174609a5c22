//! `kernels/vector_add.py`: out = x + y.

use trident_core::DType;

use super::{case, cdiv, grid, kernel_file, output};
use crate::case::{f64_copy, put, wrap_int, Case, Check, Elements, Inputs, RefError};
use crate::TensorList;

pub(crate) fn cases() -> Vec<Case> {
    let file = kernel_file!("vector_add.py");
    // (dtype, elements computed, tensor length, BLOCK)
    let shapes = [
        (DType::F32, 1, 1, 64),
        (DType::F32, 1000, 1000, 256),
        (DType::F32, 4096, 4096, 1024),
        (DType::F32, 100, 130, 32), // the last 30 elements must stay untouched
        (DType::F16, 777, 777, 128),
        (DType::BF16, 300, 300, 128),
        (DType::I32, 300, 300, 128),
        (DType::I8, 200, 200, 64), // sums up to 198 wrap around in int8
    ];
    shapes
        .into_iter()
        .map(|(dt, n, len, block)| {
            let name = if n == len { format!("vector_add/{dt}/{n}") } else { format!("vector_add/{dt}/{n}-of-{len}") };
            case(
                file,
                "add_kernel",
                name,
                vec![
                    format!("x=rand{}:{dt}:{len}", if dt.is_float() { "n" } else { "" }),
                    format!("y=rand{}:{dt}:{len}", if dt.is_float() { "n" } else { "" }),
                    format!("out=empty:{dt}:{len}"),
                    format!("n_elements={n}"),
                    format!("BLOCK={block}"),
                ],
                grid(cdiv(n, block), 1, 1),
                vec![output("out", Check::for_dtype(dt))],
                reference,
            )
        })
        .collect()
}

fn reference(i: &Inputs<'_>) -> Result<TensorList, RefError> {
    let (x, y, out) = (i.tensor("x")?, i.tensor("y")?, i.tensor("out")?);
    let n = i.size("n_elements")?;
    let mut want = f64_copy(out);
    for k in 0..n {
        let sum = x.at(k)? + y.at(k)?;
        // Integer addition wraps in the operands' type (int8 + int8 stays int8).
        let v = if out.dtype.is_int() { wrap_int(sum as i128, out.dtype) } else { sum };
        put(&mut want, k, v)?;
    }
    Ok(vec![("out".into(), want)])
}
