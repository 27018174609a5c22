//! `kernels/flash_attention.py`: O = softmax(Q K^T * sm_scale [+ causal mask]) V.

use trident_core::DType;

use super::{case, cdiv, grid, kernel_file, output};
use crate::case::{f64_copy, put, Case, Check, Elements, Inputs, RefError, Tolerance};
use crate::{HostTensor, TensorList};

pub(crate) fn cases() -> Vec<Case> {
    // (dtype, Z, H, N_CTX, HEAD_DIM, BLOCK_M, BLOCK_N, causal, sm_scale)
    let problems = [
        (DType::F16, 1, 2, 16, 16, 16, 16, true, "0.25"),
        (DType::F16, 2, 3, 21, 16, 16, 16, false, "0.25"),
        (DType::F16, 2, 3, 21, 16, 16, 16, true, "0.25"),
        (DType::F16, 1, 1, 40, 32, 16, 32, true, "0.17677669529663687"),
        (DType::F16, 1, 2, 33, 64, 32, 16, false, "0.125"),
        (DType::BF16, 1, 2, 24, 16, 16, 16, true, "0.25"),
        // Hopper-sized (64-row blocks over 4 warps: warpgroup MMA on an H100).
        (DType::F16, 1, 2, 100, 64, 64, 32, true, "0.125"),
        (DType::F16, 1, 1, 90, 64, 64, 64, false, "0.125"),
    ];
    problems
        .into_iter()
        .map(|(dt, z, h, n, d, bm, bn, causal, scale)| {
            let shape = format!("{z}x{h}x{n}x{d}");
            let mut args = vec![
                format!("q=randn:{dt}:{shape}"),
                format!("k=randn:{dt}:{shape}"),
                format!("v=randn:{dt}:{shape}"),
                format!("o=empty:{dt}:{shape}"),
                format!("sm_scale={scale}"),
            ];
            // Contiguous (Z, H, N_CTX, HEAD_DIM) strides for each tensor.
            for (t, row) in [("q", "m"), ("k", "n"), ("v", "n"), ("o", "m")] {
                args.push(format!("stride_{t}z={}", h * n * d));
                args.push(format!("stride_{t}h={}", n * d));
                args.push(format!("stride_{t}{row}={d}"));
                args.push(format!("stride_{t}d=1"));
            }
            args.extend([
                format!("H={h}"),
                format!("N_CTX={n}"),
                format!("BLOCK_M={bm}"),
                format!("BLOCK_N={bn}"),
                format!("HEAD_DIM={d}"),
                format!("IS_CAUSAL={}", if causal { "True" } else { "False" }),
            ]);
            // P is rounded to the input type before P @ V: a few ulps of fp16/bf16 on O.
            let tol = if dt == DType::BF16 { Tolerance::new(2e-2, 2e-2) } else { Tolerance::new(5e-3, 1e-2) };
            case(
                kernel_file!("flash_attention.py"),
                "attn_fwd",
                format!("attn_fwd/{dt}/{shape}/{}", if causal { "causal" } else { "full" }),
                args,
                grid(cdiv(n, bm), z * h, 1),
                vec![output("o", Check::Close(tol))],
                reference,
            )
        })
        .collect()
}

/// Strides of one (Z, H, N_CTX, HEAD_DIM) operand, from its `stride_*` arguments.
fn strides(i: &Inputs<'_>, t: &str, row: &str) -> Result<[usize; 4], RefError> {
    Ok([
        i.size(&format!("stride_{t}z"))?,
        i.size(&format!("stride_{t}h"))?,
        i.size(&format!("stride_{t}{row}"))?,
        i.size(&format!("stride_{t}d"))?,
    ])
}

fn reference(i: &Inputs<'_>) -> Result<TensorList, RefError> {
    let (q, k, v, o) = (i.tensor("q")?, i.tensor("k")?, i.tensor("v")?, i.tensor("o")?);
    let (sq, sk, sv, so) = (strides(i, "q", "m")?, strides(i, "k", "n")?, strides(i, "v", "n")?, strides(i, "o", "m")?);
    let (h, n, d) = (i.size("H")?, i.size("N_CTX")?, i.size("HEAD_DIM")?);
    let (scale, causal) = (i.float("sm_scale")?, i.flag("IS_CAUSAL")?);
    let zh_count = i.grid.y as usize;
    let off = |s: &[usize; 4], z: usize, hh: usize, r: usize, c: usize| z * s[0] + hh * s[1] + r * s[2] + c * s[3];
    let mut want = f64_copy(o);
    let strides = [sq, sk, sv, so];
    attention_into(
        &mut want,
        (zh_count, n, d),
        scale,
        causal,
        |t, zh, r, c| off(&strides[t], zh / h, zh % h, r, c),
        [q, k, v],
    )?;
    Ok(vec![("o".into(), want)])
}

/// Softmax attention of every head's rows (f64, exact exp), written into `o`, for `heads`
/// heads of `n` rows of `d` elements: `offset(t, head, row, col)` is the flat element of Q
/// (t = 0), K (1), V (2) or O (3).
pub(super) fn attention_into(
    o: &mut HostTensor,
    (heads, n, d): (usize, usize, usize),
    scale: f64,
    causal: bool,
    offset: impl Fn(usize, usize, usize, usize) -> usize,
    [q, k, v]: [&HostTensor; 3],
) -> Result<(), RefError> {
    for zh in 0..heads {
        for qi in 0..n {
            let keys = if causal { qi + 1 } else { n };
            let mut scores = Vec::with_capacity(keys);
            for kj in 0..keys {
                let mut dot = 0.0;
                for c in 0..d {
                    dot += q.at(offset(0, zh, qi, c))? * k.at(offset(1, zh, kj, c))?;
                }
                scores.push(dot * scale);
            }
            let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
            let total: f64 = weights.iter().sum();
            for c in 0..d {
                let mut acc = 0.0;
                for (kj, wgt) in weights.iter().enumerate() {
                    acc += wgt * v.at(offset(2, zh, kj, c))?;
                }
                put(o, offset(3, zh, qi, c), acc / total)?;
            }
        }
    }
    Ok(())
}
