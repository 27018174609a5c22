"""``triton._internal_testing``: the helpers Triton's own test suite imports (dtype lists,
platform predicates, random inputs, host/device conversions), written for Trident so that
Triton's ``test_core.py`` runs unchanged through ``python -m trident -m pytest``.

On Trident every launch from Python runs on a CPU backend, so the platform predicates say
"interpreter": ``is_interpreter()`` is True and no GPU family matches.
"""

from __future__ import annotations

import numpy as np

from . import language as tl
from ._jit import TensorWrapper, reinterpret

int_dtypes = ["int8", "int16", "int32", "int64"]
uint_dtypes = ["uint8", "uint16", "uint32", "uint64"]
integral_dtypes = int_dtypes + uint_dtypes
float_dtypes = ["float16", "float32", "float64"]
float_dtypes_with_bfloat16 = float_dtypes + ["bfloat16"]
dtypes = integral_dtypes + float_dtypes
dtypes_with_bfloat16 = dtypes + ["bfloat16"]
torch_float8_dtypes = ["float8_e4m3fn", "float8_e5m2"]
torch_dtypes = ["bool"] + int_dtypes + ["uint8"] + float_dtypes + ["bfloat16"]
tma_dtypes = sorted(set(dtypes_with_bfloat16) - {"int64", "uint64", "float64"})


def is_interpreter():
    return True


def _no(*_a, **_k):
    return False


is_cuda = is_hip = is_xpu = is_hopper = is_hopper_or_newer = is_blackwell = is_ampere_or_newer = _no
is_hip_cdna = is_hip_cdna2 = is_hip_cdna3 = is_hip_cdna4 = is_hip_rdna = is_hip_rdna3 = _no
is_hip_rdna4 = is_hip_rdna4m = is_hip_gfx1250 = is_hip_cdna3_or_newer = is_sm12x = is_rubin = _no
is_blackwell_ultra = supports_tma = supports_ws = supports_clc = _no


def get_arch():
    return ""


def tma_skip_msg(byval_only=False):
    return "TMA is not available on Trident's CPU backends"


try:
    import pytest as _pytest
    requires_tma = _pytest.mark.skipif(True, reason=tma_skip_msg())
except ImportError:  # pragma: no cover
    requires_tma = None


def random_int(low, high, *, warmup_value=None, **kwargs):
    return int(np.random.randint(low, high))


def random_float(*, warmup_value=0.5, **kwargs):
    return float(np.random.random())


def numpy_random(shape, dtype_str, rs=None, low=None, high=None):
    """Random values of ``dtype_str``, as Triton's tests expect them: integers over the type's
    range (never 0, so they divide; ``low``/``high`` narrow it), floats standard normal,
    bfloat16 values exactly representable (float32 with the low 16 bits cleared), fp8 types as
    int8 bit patterns of small positive numbers (20..39), bools from the sign of a normal."""
    if isinstance(shape, int):
        shape = (shape,)
    rs = rs if rs is not None else np.random.RandomState(seed=17)
    if dtype_str in int_dtypes + uint_dtypes:
        info = np.iinfo(getattr(np, dtype_str))
        lo = info.min if low is None else max(low, info.min)
        hi = info.max if high is None else min(high, info.max)
        x = rs.randint(lo, hi, shape, dtype=dtype_str)
        x[x == 0] = 1
        return x
    if "float8" in dtype_str:
        return rs.randint(20, 40, shape, dtype=np.int8)
    if dtype_str in float_dtypes:
        return rs.normal(0, 1, shape).astype(dtype_str)
    if dtype_str == "bfloat16":
        bits = rs.normal(0, 1, shape).astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
        return bits.view(np.float32)
    if dtype_str in ("bool", "int1", "bool_"):
        return rs.normal(0, 1, shape) > 0.0
    raise ValueError(f"numpy_random: unsupported dtype {dtype_str!r}")


def to_triton(x, device, dst_type=None):
    """A numpy array as a torch tensor on ``device`` (unsigned types wider than 8 bits as a
    ``TensorWrapper`` over the signed tensor, as torch lacks them; ``dst_type`` bfloat16 or
    float8 converts)."""
    import torch
    t = x.dtype.name
    if t in ("uint16", "uint32", "uint64"):
        signed = x.view(t[1:])
        return reinterpret(torch.tensor(signed, device=device), getattr(tl, t))
    if dst_type == "bfloat16":
        return torch.tensor(x, device=device).to(torch.bfloat16)
    if dst_type is not None and "float8" in dst_type:
        # `x` holds the fp8 bits; the kernel sees them typed as Triton's fp8 type.
        return reinterpret(torch.tensor(x, device=device), getattr(tl, dst_type))
    return torch.tensor(x, device=device)


_TORCH_STYLE = {"float8_e4m3fn": "float8e4nv", "float8_e5m2": "float8e5", "bool": "int1", "bool_": "int1"}


def str_to_triton_dtype(x):
    """A dtype by numpy's, torch's or Triton's name (``float32``, ``float8_e5m2``, ``bool``)."""
    v = getattr(tl, _TORCH_STYLE.get(x, x), None)
    if not isinstance(v, tl.dtype):
        raise ValueError(f"str_to_triton_dtype: unknown dtype {x!r}")
    return v


def torch_dtype_name(dtype):
    if isinstance(dtype, tl.dtype):
        return {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64",
                "int1": "bool"}.get(dtype.name, dtype.name)
    return str(dtype).split(".")[-1]


def to_numpy(x):
    """A tensor (or ``TensorWrapper``) as a numpy array on the host (bfloat16 as float32)."""
    import torch
    if isinstance(x, TensorWrapper):
        dt = torch_dtype_name(x.dtype)
        return x.base.cpu().numpy().view(dt)
    if isinstance(x, torch.Tensor):
        if x.dtype is torch.bfloat16:
            return x.cpu().float().numpy()
        return x.cpu().numpy()
    raise ValueError(f"to_numpy: not a tensor: {type(x).__name__}")


def unwrap_tensor(t):
    return t.base if isinstance(t, TensorWrapper) else t


def default_alloc_fn(size, align, _):
    import torch
    return torch.empty(size, dtype=torch.int8)
