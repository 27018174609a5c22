"""``triton.language.random``: ``tl.rand``, ``tl.randn``, ``tl.randint`` (known by name)."""

from ._core import module_getattr as _module_getattr

__getattr__ = _module_getattr(__name__)
