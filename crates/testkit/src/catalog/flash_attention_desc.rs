//! `kernels/flash_attention_desc.py`: the attention of `flash_attention.py` over tensor
//! descriptors (contiguous Q, K, V seen as one (Z·H·N_CTX, HEAD_DIM) matrix; K read as `k.T`).
//! Sizes leave key blocks that run into the next head's rows (masked to -inf) and query
//! blocks past N_CTX (not stored); HEAD_DIM keeps rows a multiple of 16 bytes (TMA's rule).

use trident_core::DType;

use super::{case, cdiv, grid, kernel_file, output};
use crate::case::{f64_copy, Case, Check, Inputs, RefError, Tolerance};
use crate::TensorList;

pub(crate) fn cases() -> Vec<Case> {
    // (Z, H, N_CTX, HEAD_DIM, BLOCK_M, BLOCK_N, causal, sm_scale, WARP_SPECIALIZE, FA3 order)
    let problems = [
        (1, 2, 40, 16, 16, 16, true, "0.25", false, false),
        (2, 2, 37, 32, 16, 32, false, "0.17677669529663687", false, false),
        (1, 2, 100, 64, 64, 32, true, "0.125", false, false),
        (1, 1, 90, 64, 64, 64, false, "0.125", false, false),
        (1, 2, 100, 64, 64, 32, true, "0.125", true, false),
        // `attn_fwd_desc_fa3`: one block (no loop), several, causal with a ragged last block.
        (1, 2, 40, 16, 16, 64, false, "0.25", false, true),
        (2, 1, 100, 64, 64, 32, false, "0.125", false, true),
        (1, 2, 100, 64, 64, 32, true, "0.125", false, true),
    ];
    problems
        .into_iter()
        .map(|(z, h, n, d, bm, bn, causal, scale, ws, fa3)| {
            let dt = DType::F16;
            let shape = format!("{z}x{h}x{n}x{d}");
            let args = vec![
                format!("q=randn:{dt}:{shape}"),
                format!("k=randn:{dt}:{shape}"),
                format!("v=randn:{dt}:{shape}"),
                format!("o=empty:{dt}:{shape}"),
                format!("sm_scale={scale}"),
                format!("Z={z}"),
                format!("H={h}"),
                format!("N_CTX={n}"),
                format!("BLOCK_M={bm}"),
                format!("BLOCK_N={bn}"),
                format!("HEAD_DIM={d}"),
                format!("IS_CAUSAL={}", if causal { "True" } else { "False" }),
            ];
            let mut args = args;
            if !fa3 {
                args.push(format!("WARP_SPECIALIZE={}", if ws { "True" } else { "False" }));
            }
            let kernel = if fa3 { "attn_fwd_desc_fa3" } else { "attn_fwd_desc" };
            let file =
                if fa3 { kernel_file!("flash_attention_fa3.py") } else { kernel_file!("flash_attention_desc.py") };
            case(
                file,
                kernel,
                format!(
                    "{kernel}/{dt}/{shape}/{}{}",
                    if causal { "causal" } else { "full" },
                    if ws { "/ws" } else { "" }
                ),
                args,
                grid(cdiv(n, bm), z * h, 1),
                // P is rounded to f16 before P @ V: a few ulps on O.
                vec![output("o", Check::Close(Tolerance::new(5e-3, 1e-2)))],
                reference,
            )
        })
        .collect()
}

fn reference(i: &Inputs<'_>) -> Result<TensorList, RefError> {
    let (q, k, v, o) = (i.tensor("q")?, i.tensor("k")?, i.tensor("v")?, i.tensor("o")?);
    let (heads, n, d) = (i.size("Z")? * i.size("H")?, i.size("N_CTX")?, i.size("HEAD_DIM")?);
    let (scale, causal) = (i.float("sm_scale")?, i.flag("IS_CAUSAL")?);
    let mut want = f64_copy(o);
    super::flash_attention::attention_into(
        &mut want,
        (heads, n, d),
        scale,
        causal,
        |_, zh, r, c| (zh * n + r) * d + c,
        [q, k, v],
    )?;
    Ok(vec![("o".into(), want)])
}
