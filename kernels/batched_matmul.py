"""Batched matmul C[b] = A[b] @ B[b] with one 3-D `tl.dot` per K step (A: [B, M, K],
B: [B, K, N], C: [B, M, N], contiguous). Each program takes BLOCK_B batches of a
BLOCK_M x BLOCK_N tile. The accumulator has C's element type: f32 for f16/bf16/f32 inputs,
i32 for int8, f16 for the f16-accumulating dot. IEEE=True asks for exact f32 products
(`input_precision="ieee"`). Trident runs the batched dot on tensor cores (`mma.sync`)."""
import triton
import triton.language as tl


@triton.jit
def bmm_kernel(a, b, c, B, M, N, K,
               BLOCK_B: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
               IEEE: tl.constexpr = False):
    pid_b = tl.program_id(0)
    pid_m = tl.program_id(1)
    pid_n = tl.program_id(2)
    rb = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a + rb[:, None, None] * (M * K) + rm[None, :, None] * K + rk[None, None, :]
    b_ptrs = b + rb[:, None, None] * (K * N) + rk[None, :, None] * N + rn[None, None, :]
    a_rows = (rb[:, None, None] < B) & (rm[None, :, None] < M)
    b_cols = (rb[:, None, None] < B) & (rn[None, None, :] < N)
    acc = tl.zeros((BLOCK_B, BLOCK_M, BLOCK_N), dtype=c.dtype.element_ty)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        x = tl.load(a_ptrs, mask=a_rows & (rk[None, None, :] < k_left), other=0)
        y = tl.load(b_ptrs, mask=b_cols & (rk[None, :, None] < k_left), other=0)
        if IEEE:
            acc = tl.dot(x, y, acc, input_precision="ieee", out_dtype=c.dtype.element_ty)
        else:
            acc = tl.dot(x, y, acc, out_dtype=c.dtype.element_ty)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    c_ptrs = c + rb[:, None, None] * (M * N) + rm[None, :, None] * N + rn[None, None, :]
    c_mask = (rb[:, None, None] < B) & (rm[None, :, None] < M) & (rn[None, None, :] < N)
    tl.store(c_ptrs, acc, mask=c_mask)


def bmm(a, b, block_b=2, block_m=32, block_n=32, block_k=32):
    """Host wrapper (torch-style; not executed by Trident)."""
    import torch
    nb, m, k = a.shape
    _, _, n = b.shape
    c = torch.empty((nb, m, n), device=a.device, dtype=torch.float32)
    grid = (triton.cdiv(nb, block_b), triton.cdiv(m, block_m), triton.cdiv(n, block_n))
    bmm_kernel[grid](a, b, c, nb, m, n, k, BLOCK_B=block_b, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k)
    return c
