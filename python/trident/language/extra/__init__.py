"""``triton.language.extra``: ``libdevice`` and the backends' extras."""

from . import libdevice  # noqa: F401
