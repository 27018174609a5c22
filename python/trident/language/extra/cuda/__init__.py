"""``triton.language.extra.cuda``: CUDA-specific extras (``libdevice``)."""

from .. import libdevice  # noqa: F401
