"""``triton.runtime``: the error classes and a driver that says "CPU"."""

import types

from . import errors  # noqa: F401
from .._jit import JITFunction, KernelInterface  # noqa: F401
from .._autotune import Autotuner, Config, Heuristics  # noqa: F401


class _Target(types.SimpleNamespace):
    pass


def _current_target():
    return _Target(backend="cpu", arch=0, warp_size=32)


driver = types.SimpleNamespace(active=types.SimpleNamespace(
    get_current_target=_current_target,
    get_current_device=lambda: 0,
    get_current_stream=lambda *_: 0,
    utils=types.SimpleNamespace(get_device_properties=lambda *_: {
        "max_shared_mem": 232448, "multiprocessor_count": 132, "max_num_regs": 65536, "warpSize": 32}),
))
