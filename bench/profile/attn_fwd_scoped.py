"""kernels/flash_attention.py's attn_fwd with Proton scopes around the five phases of
its loop (K load, QK^T, online softmax, V load, PV), for the profiler's case study in
bench/PROFILE.md. The computation is line for line the bundled kernel's; without
profiling the scopes compile to nothing.
"""
import triton
import triton.language as tl
import triton.profiler.language as pl


@triton.jit
def attn_fwd_scoped(q, k, v, o, sm_scale,
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
        with pl.scope("load_k"):
            kt_blk = tl.load(k_base + offs_n[None, :] * stride_kn + offs_d[:, None] * stride_kd,
                             mask=col_ok[None, :], other=0.0)
        with pl.scope("qk"):
            s = tl.dot(q_blk, kt_blk) * qk_scale
        with pl.scope("softmax"):
            keep = col_ok[None, :]
            if IS_CAUSAL:
                keep = keep & (offs_m[:, None] >= offs_n[None, :])
            s = tl.where(keep, s, -float("inf"))
            m_new = tl.maximum(m_i, tl.max(s, axis=1))
            m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
            p = tl.exp2(s - m_safe[:, None])
            alpha = tl.exp2(m_i - m_safe)
            l_i = l_i * alpha + tl.sum(p, axis=1)
        with pl.scope("load_v"):
            v_blk = tl.load(v_base + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd,
                            mask=col_ok[:, None], other=0.0)
        with pl.scope("pv"):
            acc = acc * alpha[:, None]
            acc = tl.dot(p.to(v_blk.dtype), v_blk, acc)
        m_i = m_new

    l_safe = tl.where(l_i == 0.0, 1.0, l_i)
    out = acc / l_safe[:, None]
    tl.store(o_base + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od,
             out.to(o.dtype.element_ty), mask=row_ok[:, None])
