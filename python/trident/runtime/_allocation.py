"""``triton.runtime._allocation``: scratch allocators (Trident's CPU backends need none)."""


class NullAllocator:
    """The allocator that allocates nothing (Triton's default)."""

    def __call__(self, size, alignment, stream):
        raise RuntimeError("Kernel requires a runtime memory allocation, but no allocator was set")
