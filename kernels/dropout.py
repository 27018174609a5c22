"""Dropout with a counter-based random generator: no mask tensor is stored.

Element i draws r = tl.rand(seed, i), a uniform number in [0, 1) that depends
only on (seed, i). It is kept when r > p and scaled by 1 / (1 - p), so the
expected value of the output equals the input; otherwise it becomes 0. Running
the kernel again with the same seed reproduces the same mask (e.g. for the
backward pass), whatever the block size or grid.
"""
import triton
import triton.language as tl


@triton.jit
def dropout_kernel(x, out, n_elements, p, seed, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    in_bounds = offsets < n_elements
    vals = tl.load(x + offsets, mask=in_bounds, other=0.0)
    r = tl.rand(seed, offsets)
    keep = r > p
    scaled = vals / (1.0 - p)
    tl.store(out + offsets, tl.where(keep, scaled, 0.0).to(out.dtype.element_ty), mask=in_bounds)


def dropout(x, p, seed):
    """Host wrapper: returns dropout(x) with drop probability p (0 <= p < 1) and an integer seed."""
    import torch

    assert 0.0 <= p < 1.0
    assert x.is_contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
    dropout_kernel[grid](x, out, n, p, seed, BLOCK=1024)
    return out
