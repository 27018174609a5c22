"""``triton.language.extra.cuda.libdevice``: the same functions as ``extra.libdevice``."""

from ..._core import module_getattr as _module_getattr

__getattr__ = _module_getattr(__name__)
