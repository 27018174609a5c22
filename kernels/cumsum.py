"""Inclusive prefix sum along each row of an (M, N) matrix: y[r, j] = sum_{i <= j} x[r, i].

Program r handles BLOCK_M rows starting at r * BLOCK_M, each held whole in one
block (BLOCK_N is a power of two >= N). Masked lanes load 0, which is neutral
for the scan and lies after the real elements, so it never changes them.
Integer inputs of 32 bits or more keep their type; the output is cast to y's
element type.
"""
import triton
import triton.language as tl


@triton.jit
def cumsum_kernel(x, y, M, N, stride_xm, stride_ym, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    vals = tl.load(x + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=0)
    scanned = tl.cumsum(vals, axis=1)
    tl.store(y + rows[:, None] * stride_ym + cols[None, :], scanned.to(y.dtype.element_ty), mask=mask)


def cumsum_rows(x, rows_per_program=4):
    """Host wrapper: inclusive cumulative sum over the last dimension of a 2-D tensor."""
    import torch

    M, N = x.shape
    y = torch.empty_like(x)
    grid = (triton.cdiv(M, rows_per_program),)
    cumsum_kernel[grid](x, y, M, N, x.stride(0), y.stride(0),
                        BLOCK_M=rows_per_program, BLOCK_N=triton.next_power_of_2(N))
    return y
