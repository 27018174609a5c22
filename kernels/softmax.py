"""Fused row-wise softmax: y[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)).

One program owns one row and keeps it in registers, so BLOCK must be a power of
two no smaller than `n_cols`. Lanes past the end of the row load `-inf`, which
contributes exp(-inf) = 0 to the sum and never wins the max. Strides are in
elements, so the kernel works on row-strided views (e.g. a slice of a wider
matrix).
"""
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x, y, x_row_stride, y_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    in_row = cols < n_cols
    vals = tl.load(x + row * x_row_stride + cols, mask=in_row, other=-float("inf"))
    # Compute in fp32 whatever the storage type; subtracting the max keeps exp() finite.
    vals = vals.to(tl.float32)
    shifted = vals - tl.max(vals, axis=0)
    num = tl.exp(shifted)
    denom = tl.sum(num, axis=0)
    out = num / denom
    tl.store(y + row * y_row_stride + cols, out.to(y.dtype.element_ty), mask=in_row)


def softmax(x):
    """Host wrapper: softmax over the last dimension of a 2-D tensor."""
    import torch

    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(n_cols)
    # Wider rows need more warps to keep per-thread register use bounded.
    num_warps = 4 if block <= 2048 else (8 if block <= 8192 else 16)
    softmax_kernel[(n_rows,)](x, y, x.stride(0), y.stride(0), n_cols, BLOCK=block, num_warps=num_warps)
    return y
