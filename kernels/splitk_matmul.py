"""Split-K matrix multiplication: C (fp32) += A @ B, with the K dimension split across programs.

Program (tile, s) computes the partial product of one BLOCK_M x BLOCK_N tile of
C over the K-slice [s * K_PER_SPLIT, (s + 1) * K_PER_SPLIT) and adds it into C
with `tl.atomic_add`. Small-M/N, large-K problems then still fill the machine.
C must be fp32 and zero-filled before the launch (the kernel accumulates into
it); the order in which slices land differs between runs, so the last bits of
C may differ from run to run on a GPU. K_PER_SPLIT must be a multiple of
BLOCK_K; every edge (M, N and the end of K) is masked.
"""
import triton
import triton.language as tl


@triton.jit
def splitk_matmul_kernel(a, b, c, M, N, K,
                         stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                         K_PER_SPLIT,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    tile = tl.program_id(0)
    split = tl.program_id(1)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tile_m = tile // tiles_n
    tile_n = tile % tiles_n

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k_lo = split * K_PER_SPLIT
    k_hi = tl.minimum(k_lo + K_PER_SPLIT, K)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(k_lo, k_hi, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        a_blk = tl.load(a + rows[:, None] * stride_am + ks[None, :] * stride_ak,
                        mask=(rows[:, None] < M) & (ks[None, :] < k_hi), other=0.0)
        b_blk = tl.load(b + ks[:, None] * stride_bk + cols[None, :] * stride_bn,
                        mask=(ks[:, None] < k_hi) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a_blk, b_blk, acc)

    c_tile = c + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.atomic_add(c_tile, acc, mask=(rows[:, None] < M) & (cols[None, :] < N))


def splitk_matmul(a, b, splits=4):
    """Host wrapper: returns a @ b as an fp32 tensor, splitting K into `splits` slices."""
    import torch

    M, K = a.shape
    _, N = b.shape
    block_m, block_n, block_k = 32, 32, 32
    k_per_split = triton.cdiv(triton.cdiv(K, splits), block_k) * block_k
    c = torch.zeros((M, N), device=a.device, dtype=torch.float32)
    grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n), triton.cdiv(K, k_per_split))
    splitk_matmul_kernel[grid](a, b, c, M, N, K,
                               a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                               k_per_split, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k)
    return c
