"""Shared helpers, as projects keep them in a utils module."""
import triton
import triton.language as tl
from packaging.version import Version

EPS = 1e-6

if Version(triton.__version__) >= Version("3.0.0"):
    from triton.language.extra import libdevice

    fast_tanh = libdevice.tanh
    to_dtype = tl.cast
else:
    fast_tanh = tl.math.tanh

    @triton.jit
    def to_dtype(x, dtype):
        return x.to(dtype)

if tuple(int(p) for p in triton.__version__.split(".")[:2]) < (3, 2):
    HAS_NEW_API = False
else:
    HAS_NEW_API = True


@triton.jit
def softcap(x, cap: tl.constexpr):
    return cap * fast_tanh(x / cap)


@triton.jit
def row_rms(x, n):
    return tl.sqrt(tl.sum(x * x, axis=0) / n + EPS)


def block_configs(name="BLOCK", warps=(2, 4)):
    """Autotune configs built by a plain function, as projects keep them in a utils module."""
    out = []
    for b in [32, 64, 128]:
        for w in warps:
            if b * w <= 256:
                out.append(triton.Config({name: b}, num_warps=w))
    return out
