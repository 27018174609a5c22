"""Trident's exceptions. Every error of a launch leaves the caller's arrays as they were."""


class TridentError(Exception):
    """Base class of Trident's errors."""


class CompilationError(TridentError):
    """The kernel's source did not compile. ``str(e)`` is the rendered diagnostic: file, line,
    the source line and a caret under the problem."""


class ArgumentError(TridentError, TypeError):
    """A launch argument is missing, unknown, of the wrong kind or value; the message names it."""


class LaunchError(TridentError, RuntimeError):
    """The kernel failed while running (an out-of-bounds access, a failed device assert, a
    fault on the GPU) or could not be run; the message says where."""


def from_native(err):
    """The package's exception for a ``_native.NativeError(kind, text)``. Its ``__cause__`` holds
    the same text, as Triton's errors carry their cause (tests read ``str(e.__cause__)``); the
    native error itself is suppressed from tracebacks."""
    kind, text = err.args if len(err.args) == 2 else ("launch", str(err))
    cls = {"compile": CompilationError, "argument": ArgumentError}.get(kind, LaunchError)
    out = cls(text)
    out.__cause__ = TridentError(text)
    out.__suppress_context__ = True
    return out
