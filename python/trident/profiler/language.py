"""``triton.profiler.language`` (``pl``): ``pl.scope``, ``pl.enter_scope``, ``pl.exit_scope`` —
used inside kernels only, where Trident's compiler reads them (see ``trident profile``)."""

from ..language._core import module_getattr as _module_getattr

__getattr__ = _module_getattr(__name__)
