"""``triton.language.standard``: functions Triton writes in Triton (``tl.sum``, ``tl.cdiv`` ...)."""

from ._core import module_getattr as _module_getattr

__getattr__ = _module_getattr(__name__)
