"""A kernel whose `triton` and `tl` come from the project's own re-exporting module."""
from projlike.triton_utils import tl, triton


@triton.jit
def silu_and_mul(x_ptr, out_ptr, d, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = cols < d
    a = tl.load(x_ptr + row * 2 * d + cols, mask=m, other=0.0).to(tl.float32)
    b = tl.load(x_ptr + row * 2 * d + d + cols, mask=m, other=0.0)
    y = (a * tl.sigmoid(a)).to(b.dtype) * b
    tl.store(out_ptr + row * d + cols, y, mask=m)
