"""``triton.runtime.errors``: on Trident a kernel's run-time failure is ``LaunchError``, which
also answers to Triton's interpreter's ``InterpreterError``."""

from .._errors import LaunchError as InterpreterError  # noqa: F401
from .._errors import TridentError as TritonError  # noqa: F401


class OutOfResources(TritonError):
    """A kernel needs more shared memory or registers than the target has."""


class PTXASError(TritonError):
    """``ptxas`` rejected the PTX."""
