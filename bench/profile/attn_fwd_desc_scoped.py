"""kernels/flash_attention_desc.py's attn_fwd_desc with Proton scopes around the phases of
its key loop (K tile, QK^T, online softmax, V tile, PV), for the profiler's warp-specialized
case study in bench/PROFILE.md. The computation is line for line the bundled kernel's;
without profiling the scopes compile to nothing. With WARP_SPECIALIZE on sm_90a the scopes
stay with the consumer warps (`load_k` and `load_v` are then their waits for the producer's
tiles), and `--regions loops,loads` adds the producer warp's own loop and copy regions.
"""
import triton
import triton.language as tl
import triton.profiler.language as pl


@triton.jit
def attn_fwd_desc_scoped(q, k, v, o, sm_scale, Z, H, N_CTX,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
                         IS_CAUSAL: tl.constexpr, WARP_SPECIALIZE: tl.constexpr = False):
    start_m = tl.program_id(0)
    zh = tl.program_id(1)
    rows = Z * H * N_CTX
    dq = tl.make_tensor_descriptor(q, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[BLOCK_M, HEAD_DIM])
    dk = tl.make_tensor_descriptor(k, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[BLOCK_N, HEAD_DIM])
    dv = tl.make_tensor_descriptor(v, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[BLOCK_N, HEAD_DIM])
    head = zh * N_CTX
    q_blk = dq.load([head + start_m * BLOCK_M, 0])

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # log2(e): exp(x) == exp2(x * log2(e))

    if IS_CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, N_CTX)
    else:
        hi = N_CTX
    for start_n in tl.range(0, hi, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        with pl.scope("load_k"):
            k_blk = dk.load([head + start_n, 0])
        with pl.scope("qk"):
            s = tl.dot(q_blk, k_blk.T) * qk_scale
        with pl.scope("softmax"):
            offs_n = start_n + tl.arange(0, BLOCK_N)
            keep = offs_n[None, :] < N_CTX
            if IS_CAUSAL:
                keep = keep & (offs_m[:, None] >= offs_n[None, :])
            s = tl.where(keep, s, -float("inf"))
            m_new = tl.maximum(m_i, tl.max(s, axis=1))
            m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
            p = tl.exp2(s - m_safe[:, None])
            alpha = tl.exp2(m_i - m_safe)
            l_i = l_i * alpha + tl.sum(p, axis=1)
        with pl.scope("load_v"):
            v_blk = dv.load([head + start_n, 0])
        with pl.scope("pv"):
            acc = acc * alpha[:, None]
            acc = tl.dot(p.to(v_blk.dtype), v_blk, acc)
        m_i = m_new

    l_safe = tl.where(l_i == 0.0, 1.0, l_i)
    out = acc / l_safe[:, None]
    offs_d = tl.arange(0, HEAD_DIM)
    tl.store(o + (head + offs_m)[:, None] * HEAD_DIM + offs_d[None, :], out.to(o.dtype.element_ty),
             mask=(offs_m < N_CTX)[:, None])
