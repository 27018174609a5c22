"""``triton.language.extra.libdevice``: CUDA's libdevice math, known to the compiler by name."""

from .._core import module_getattr as _module_getattr

__getattr__ = _module_getattr(__name__)
