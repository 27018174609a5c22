//! `kernels/dropout.py`: out = (tl.rand(seed, i) > p) ? x / (1 - p) : 0.

use trident_core::DType;

use super::{case, cdiv, grid, kernel_file, output};
use crate::case::{f64_copy, put, Case, Check, Elements, Inputs, RefError, Tolerance};
use crate::philox;
use crate::TensorList;

pub(crate) fn cases() -> Vec<Case> {
    // (dtype, n, p, seed, BLOCK)
    let problems = [
        (DType::F32, 1000, "0.3", "1234", 256),
        (DType::F16, 777, "0.5", "7", 128),
        (DType::F32, 4096, "0.1", "-5", 1024), // a negative seed is sign-extended to 64 bits
        (DType::F32, 513, "0.75", "4294967303", 64), // a seed above 2^32 uses Philox's second key word
    ];
    problems
        .into_iter()
        .map(|(dt, n, p, seed, block)| {
            let pf: f64 = p.parse().expect("catalog literal");
            // Kept values are x / (1 - p) computed in fp32 and stored in dt.
            let tol = if dt == DType::F32 { Tolerance::new(1e-6, 1e-6) } else { Tolerance::for_dtype(dt) };
            case(
                kernel_file!("dropout.py"),
                "dropout_kernel",
                format!("dropout/{dt}/{n}/p{p}/seed{seed}"),
                vec![
                    format!("x=randn:{dt}:{n}"),
                    format!("out=empty:{dt}:{n}"),
                    format!("n_elements={n}"),
                    format!("p={p}"),
                    format!("seed={seed}"),
                    format!("BLOCK={block}"),
                ],
                grid(cdiv(n, block), 1, 1),
                vec![output("out", Check::Dropout { input: "x".into(), p: pf, tol })],
                reference,
            )
        })
        .collect()
}

fn reference(i: &Inputs<'_>) -> Result<TensorList, RefError> {
    let (x, out) = (i.tensor("x")?, i.tensor("out")?);
    let (n, seed) = (i.size("n_elements")?, i.int("seed")?);
    // Float scalar arguments are fp32 inside a Triton kernel: compare and scale in fp32.
    let p = i.float("p")? as f32;
    let keep_prob = 1.0f32 - p;
    let mut want = f64_copy(out);
    for k in 0..n {
        let offset = i32::try_from(k).map_err(|_| RefError(format!("offset {k} does not fit in int32")))?;
        let kept = philox::rand(seed, offset) > p;
        put(&mut want, k, if kept { x.at(k)? / keep_prob as f64 } else { 0.0 })?;
    }
    Ok(vec![("out".into(), want)])
}
