"""Element-wise addition of two vectors: out[i] = x[i] + y[i].

One program handles BLOCK consecutive elements; the tail block is masked so
`n_elements` need not be a multiple of BLOCK.
"""
import triton
import triton.language as tl


@triton.jit
def add_kernel(x, y, out, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    in_bounds = offsets < n_elements
    a = tl.load(x + offsets, mask=in_bounds)
    b = tl.load(y + offsets, mask=in_bounds)
    tl.store(out + offsets, a + b, mask=in_bounds)


def add(x, y, block=1024):
    """Host wrapper: returns a new tensor holding x + y (same shape and dtype)."""
    import torch

    assert x.shape == y.shape and x.dtype == y.dtype
    assert x.is_contiguous() and y.is_contiguous()
    out = torch.empty_like(x)
    n = out.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
    add_kernel[grid](x, y, out, n, BLOCK=block)
    return out
