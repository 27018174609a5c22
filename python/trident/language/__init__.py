"""``trident.language`` (``tl``): the names a Triton kernel uses, as Python objects.

Kernel bodies are never run by Python — Trident compiles their source — so what lives here is
what Python itself evaluates while it imports a kernel's module and defines the kernel: the
dtypes (``tl.float16`` ...), ``tl.constexpr`` (annotations, module-level constants), and a stub
for every other ``tl.*`` function, so that ``from triton.language.math import rsqrt`` or
``exp = tl.exp`` at module level work; a stub says so if it is called outside a kernel. The
compiler knows each of them by its qualified name (``trident.language.rsqrt`` reads as Triton's
``triton.language.rsqrt``).
"""

from __future__ import annotations

from ._core import (  # noqa: F401
    constexpr, dtype, pointer_type, block_type, tensor, builtin_stub,
    int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float8e4nv, float8e5, float16, bfloat16, float32, float64,
    float8e4b15, float8e4b8, float8e5b16,
    void, pi32_t,
)
from ._core import module_getattr as _module_getattr

# Names that alias others, as in Triton.
bool_ = int1  # noqa: N816

__getattr__ = _module_getattr(__name__)
