"""Trident from Python: Triton kernels compiled and run by Trident.

    import trident
    import trident.language as tl

    @trident.jit
    def add(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) + tl.load(y + offs, mask=offs < n), mask=offs < n)

    add[(trident.cdiv(n, 256),)](x, y, out, n, BLOCK=256)     # numpy arrays, CPU torch tensors

Kernels run on Trident's tile-IR interpreter (default) or its PTX emulator
(``TRIDENT_BACKEND=emu``, ``trident.set_backend("emu")`` or ``backend="emu"`` at launch); arrays
are written in place. Errors are ``CompilationError`` (the source line and a caret),
``ArgumentError`` (a ``TypeError`` naming the argument) and ``LaunchError``; on any error the
caller's arrays are as they were. Programs written for Triton run unchanged with
``python -m trident PROGRAM.py`` (``import triton`` is Trident there).
"""

from . import language  # noqa: F401
from . import testing  # noqa: F401
from ._autotune import Autotuner, Config, Heuristics, autotune, heuristics  # noqa: F401
from ._errors import ArgumentError, CompilationError, LaunchError, TridentError  # noqa: F401
from ._jit import JITFunction, KernelInterface, TensorWrapper, backend, jit, reinterpret, set_backend  # noqa: F401
from . import runtime  # noqa: F401,E402

TritonError = TridentError  # Triton's name for the base class


def set_allocator(alloc_fn):
    """Triton's scratch-memory allocator hook: the CPU backends allocate their own."""

__version__ = "0.1.0"


def cdiv(x, y):
    """``ceil(x / y)`` for integers."""
    return (x + y - 1) // y


def next_power_of_2(n):
    """The smallest power of two >= ``n`` (1 for ``n <= 1``)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


class MockTensor:
    """A stand-in tensor for ``dtype`` (Triton's name); only its dtype matters."""

    def __init__(self, dtype):
        self.dtype = dtype
