"""``trident.profiler``: Proton's in-kernel API names (``profiler.language``)."""

from . import language  # noqa: F401
