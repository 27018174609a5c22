"""Fused attention forward pass (FlashAttention-style): O = softmax(Q K^T * sm_scale) V.

Q, K, V and O have shape (Z, H, N_CTX, HEAD_DIM) with arbitrary element strides.
Program (m, zh) computes BLOCK_M rows of O for batch*head zh = z * H + h. It
walks over K/V in BLOCK_N blocks and keeps, per query row, a running maximum
m_i, a running normaliser l_i and an unnormalised accumulator; when the maximum
grows, the old partial sums are rescaled by exp(m_old - m_new) ("online
softmax"), so the N_CTX x N_CTX score matrix never exists in memory.

Scores use exp2 with log2(e) folded into the scale. With IS_CAUSAL, query i
only attends to keys j <= i, and the loop stops after the diagonal block.
Rows past N_CTX are masked on load and store; keys past N_CTX get a score of
-inf. Q·K^T and P·V use `tl.dot` with fp32 accumulation; P is cast to V's
element type before the second product, as on the GPU.
"""
import triton
import triton.language as tl


@triton.jit
def attn_fwd(q, k, v, o, sm_scale,
             stride_qz, stride_qh, stride_qm, stride_qd,
             stride_kz, stride_kh, stride_kn, stride_kd,
             stride_vz, stride_vh, stride_vn, stride_vd,
             stride_oz, stride_oh, stride_om, stride_od,
             H, N_CTX,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
             IS_CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    zh = tl.program_id(1)
    z = zh // H
    h = zh % H
    q_base = q + z * stride_qz + h * stride_qh
    k_base = k + z * stride_kz + h * stride_kh
    v_base = v + z * stride_vz + h * stride_vh
    o_base = o + z * stride_oz + h * stride_oh

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < N_CTX
    q_blk = tl.load(q_base + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd,
                    mask=row_ok[:, None], other=0.0)

    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # log2(e): exp(x) == exp2(x * log2(e))

    if IS_CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, N_CTX)
    else:
        hi = N_CTX
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        col_ok = offs_n < N_CTX
        kt_blk = tl.load(k_base + offs_n[None, :] * stride_kn + offs_d[:, None] * stride_kd,
                         mask=col_ok[None, :], other=0.0)
        s = tl.dot(q_blk, kt_blk) * qk_scale
        keep = col_ok[None, :]
        if IS_CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        # Every processed row has seen key 0 by now (causal rows see j <= i, and j = 0 is in
        # the first block), so m_new is finite for rows < N_CTX; padded rows stay harmless.
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v_blk = tl.load(v_base + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd,
                        mask=col_ok[:, None], other=0.0)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v_blk.dtype), v_blk, acc)
        m_i = m_new

    l_safe = tl.where(l_i == 0.0, 1.0, l_i)
    out = acc / l_safe[:, None]
    tl.store(o_base + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od,
             out.to(o.dtype.element_ty), mask=row_ok[:, None])


def attention(q, k, v, causal=False, sm_scale=None):
    """Host wrapper: q, k, v of shape (Z, H, N_CTX, HEAD_DIM), fp16 or bf16; returns O."""
    import torch

    Z, H, n_ctx, head_dim = q.shape
    assert head_dim in (16, 32, 64, 128) and k.shape == q.shape and v.shape == q.shape
    if sm_scale is None:
        sm_scale = head_dim ** -0.5
    o = torch.empty_like(q)
    grid = lambda meta: (triton.cdiv(n_ctx, meta["BLOCK_M"]), Z * H)
    attn_fwd[grid](q, k, v, o, sm_scale,
                   *q.stride(), *k.stride(), *v.stride(), *o.stride(),
                   H, n_ctx,
                   BLOCK_M=64, BLOCK_N=64, HEAD_DIM=head_dim, IS_CAUSAL=causal,
                   num_warps=4, num_stages=2)
    return o
