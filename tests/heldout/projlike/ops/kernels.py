"""Kernels that use helpers from .common through every import spelling."""
import triton
import triton.language as tl

from .common import softcap, to_dtype, HAS_NEW_API
from . import common
from projlike.ops.common import row_rms as rms
import projlike.ops.common as C
from projlike.ops import DEFAULT_EPS


def _capped_rms_norm(x_ptr, y_ptr, stride, n, CAP: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n
    base = row * to_dtype(stride, tl.int64)
    x = tl.load(x_ptr + base + offs, mask=m, other=0.0).to(tl.float32)
    if HAS_NEW_API:
        x = softcap(x, CAP)
    else:
        x = common.softcap(x, CAP)
    r = rms(x, n) + DEFAULT_EPS * 0
    y = x / r + C.EPS * 0
    tl.store(y_ptr + base + offs, y, mask=m)


capped_rms_norm = triton.jit(_capped_rms_norm)
capped_rms_norm = triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n"])})(capped_rms_norm)


@triton.autotune(configs=common.block_configs("BLOCK_N"), key=["n"])
@triton.jit
def scaled_copy(x_ptr, y_ptr, n, BLOCK_N: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
