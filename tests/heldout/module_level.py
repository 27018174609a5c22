"""Module-level code real kernel files carry: version checks around imports, host helpers."""
import triton
import triton.language as tl

from some_project.utils import triton_is_new_enough, is_rocm_platform  # not installed anywhere

if triton_is_new_enough("3.0"):
    try:
        from triton.language.extra.libdevice import tanh as _tanh
    except ModuleNotFoundError:
        from triton.language.extra.cuda.libdevice import tanh as _tanh
else:
    from triton.language.math import tanh as _tanh

if is_rocm_platform():
    def squash(x):
        return x / (1 + abs(x))
else:
    squash = tl.sigmoid


@triton.jit
def gelu_tanh_squash(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = 0.5 * x * (1.0 + _tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
    tl.store(y_ptr + offs, y, mask=m)
    tl.store(z_ptr + offs, squash(x), mask=m)
