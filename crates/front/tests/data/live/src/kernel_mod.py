"""A kernel whose helpers live in another module, one of which calls back into this one."""
import triton
import triton.language as tl

import helper_mod as hm
from helper_mod import triple as t3


@triton.jit
def double(x):
    return x * 2


@triton.jit
def combine(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    y = t3(x) + hm.quadruple(x) + hm.FACTOR + double(x)
    tl.store(y_ptr + offs, y, mask=offs < n)
