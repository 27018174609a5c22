"""Tiled matrix multiplication C = A @ B with A: (M, K), B: (K, N), C: (M, N).

Each program computes one BLOCK_M x BLOCK_N tile of C. Programs are numbered so
that GROUP_M consecutive tile-rows are visited column by column: neighbouring
programs then share tiles of A and B, which improves L2 reuse on a GPU (on the
CPU backends it only changes the visiting order, never the result).

Inputs are fp16 or bf16; the product is accumulated in fp32 by `tl.dot` and
rounded once to C's element type at the end. Every edge is masked, so M, N and
K need not be multiples of the block sizes; masked A/B lanes load 0, which adds
nothing to the dot product.

`matmul_kernel` takes its block sizes as constexpr arguments; `matmul_autotuned`
runs the same body (the `_matmul_tile` helper) under `@triton.autotune`.
"""
import triton
import triton.language as tl


@triton.jit
def _matmul_tile(a, b, c, M, N, K,
                 stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                 GROUP_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    # Grouped ordering: a group is GROUP_M tile-rows wide (the last group may be narrower).
    programs_per_group = GROUP_M * tiles_n
    group = pid // programs_per_group
    first_m = group * GROUP_M
    group_rows = min(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % programs_per_group) % group_rows
    tile_n = (pid % programs_per_group) // group_rows

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a_tile = a + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_tile = b + ks[:, None] * stride_bk + cols[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k0 * BLOCK_K
        a_blk = tl.load(a_tile, mask=(rows[:, None] < M) & (ks[None, :] < k_left), other=0.0)
        b_blk = tl.load(b_tile, mask=(ks[:, None] < k_left) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a_blk, b_blk, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk

    c_tile = c + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_tile, acc.to(c.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit
def matmul_kernel(a, b, c, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr):
    _matmul_tile(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                 BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 4}, num_warps=4, num_stages=3),
        triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 4}, num_warps=2, num_stages=2),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def matmul_autotuned(a, b, c, M, N, K,
                     stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     GROUP_M: tl.constexpr):
    _matmul_tile(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                 BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)


def matmul(a, b, out_dtype=None, autotune=False):
    """Host wrapper: returns a @ b for 2-D fp16/bf16 tensors (C defaults to A's dtype)."""
    import torch

    assert a.shape[1] == b.shape[0], "inner dimensions differ"
    assert a.dtype in (torch.float16, torch.bfloat16) and b.dtype == a.dtype
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=out_dtype or a.dtype)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    if autotune:
        matmul_autotuned[grid](a, b, c, M, N, K, *strides)
    else:
        matmul_kernel[grid](a, b, c, M, N, K, *strides, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8)
    return c
