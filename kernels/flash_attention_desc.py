"""Fused attention forward pass over tensor descriptors, in the shape of Triton's Hopper
attention tutorial: O = softmax(Q K^T * sm_scale) V.

Q, K, V and O are contiguous (Z, H, N_CTX, HEAD_DIM) tensors, seen by the descriptors as one
(Z * H * N_CTX, HEAD_DIM) matrix; program (m, zh) takes BLOCK_M query rows of head zh. K's
tile is loaded as [BLOCK_N, HEAD_DIM] and used transposed (`k.T`): on sm_90 both K's and V's
tiles are copied with TMA into rings that the loop's wgmma reads (K's through a transposed
view). The online softmax is the one of `flash_attention.py`. With `WARP_SPECIALIZE` (on the
key loop's `tl.range`, as in Triton's tutorial) a producer warp copies K and V ahead while
the kernel's warps compute (sm_90a).

A block of keys that runs past N_CTX reads the next head's rows (or, after the last head,
TMA's zero fill); those keys get a score of -inf, so any N_CTX works. Query rows past N_CTX
are computed from the next head's rows and not stored.
"""
import triton
import triton.language as tl


@triton.jit
def attn_fwd_desc(q, k, v, o, sm_scale, Z, H, N_CTX,
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
        k_blk = dk.load([head + start_n, 0])
        s = tl.dot(q_blk, k_blk.T) * qk_scale
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
        v_blk = dv.load([head + start_n, 0])
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v_blk.dtype), v_blk, acc)
        m_i = m_new

    l_safe = tl.where(l_i == 0.0, 1.0, l_i)
    out = acc / l_safe[:, None]
    offs_d = tl.arange(0, HEAD_DIM)
    tl.store(o + (head + offs_m)[:, None] * HEAD_DIM + offs_d[None, :], out.to(o.dtype.element_ty),
             mask=(offs_m < N_CTX)[:, None])
