"""Fused attention forward pass over tensor descriptors, `flash_attention_desc.py`'s kernel
written in FlashAttention-3's order inside a warpgroup (see `attn_fwd_desc_fa3`)."""
import triton
import triton.language as tl


@triton.jit
def attn_fwd_desc_fa3(q, k, v, o, sm_scale, Z, H, N_CTX,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
                      IS_CAUSAL: tl.constexpr):
    """`attn_fwd_desc` in FlashAttention-3's order within a warpgroup: iteration j issues
    Q·K_jᵀ, then P·V of block j-1, then the softmax of block j, which runs while P·V is still
    on the tensor cores (on sm_90a the softmax waits for Q·K_jᵀ only: `wgmma.wait_group 1`).
    Block 0's scores and softmax come before the loop, the last block's P·V after it."""
    start_m = tl.program_id(0)
    zh = tl.program_id(1)
    rows = Z * H * N_CTX
    dq = tl.make_tensor_descriptor(q, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[BLOCK_M, HEAD_DIM])
    dk = tl.make_tensor_descriptor(k, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[BLOCK_N, HEAD_DIM])
    dv = tl.make_tensor_descriptor(v, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[BLOCK_N, HEAD_DIM])
    head = zh * N_CTX
    q_blk = dq.load([head + start_m * BLOCK_M, 0])
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    qk_scale = sm_scale * 1.44269504  # log2(e): exp(x) == exp2(x * log2(e))
    if IS_CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, N_CTX)
    else:
        hi = N_CTX

    # Block 0: scores and softmax.
    s = tl.dot(q_blk, dk.load([head, 0]).T) * qk_scale
    offs_n = tl.arange(0, BLOCK_N)
    keep = offs_n[None, :] < N_CTX
    if IS_CAUSAL:
        keep = keep & (offs_m[:, None] >= offs_n[None, :])
    s = tl.where(keep, s, -float("inf"))
    m_i = tl.max(s, axis=1)
    m_safe = tl.where(m_i == -float("inf"), 0.0, m_i)
    p = tl.exp2(s - m_safe[:, None])
    l_i = tl.sum(p, axis=1)
    alpha = tl.full((BLOCK_M,), 1.0, dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)

    for start_n in range(BLOCK_N, hi, BLOCK_N):
        s = tl.dot(q_blk, dk.load([head + start_n, 0]).T)
        # P·V of the previous block, issued after this block's Q·Kᵀ ...
        v_blk = dv.load([head + start_n - BLOCK_N, 0])
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v_blk.dtype), v_blk, acc)
        # ... so that this block's softmax runs while it does.
        s = s * qk_scale
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
        m_i = m_new

    # The last block's P·V.
    last = ((hi - 1) // BLOCK_N) * BLOCK_N
    v_blk = dv.load([head + last, 0])
    acc = acc * alpha[:, None]
    acc = tl.dot(p.to(v_blk.dtype), v_blk, acc)

    l_safe = tl.where(l_i == 0.0, 1.0, l_i)
    out = acc / l_safe[:, None]
    offs_d = tl.arange(0, HEAD_DIM)
    tl.store(o + (head + offs_m)[:, None] * HEAD_DIM + offs_d[None, :], out.to(o.dtype.element_ty),
             mask=(offs_m < N_CTX)[:, None])
