"""``triton.language.core``: the language's core names (dtypes, ``constexpr``, builtins)."""

from ._core import *  # noqa: F401,F403
from ._core import constexpr, dtype, pointer_type, tensor  # noqa: F401
from ._core import module_getattr as _module_getattr

__getattr__ = _module_getattr(__name__)
