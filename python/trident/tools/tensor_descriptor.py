"""``triton.tools.tensor_descriptor``: host-side tensor descriptors.

A ``TensorDescriptor`` passed to a kernel is a tensor the kernel reads and writes in boxes of
``block_shape`` (``desc.load([i, j])``, ``desc.store([i, j], x)``), every access bounds-checked
against ``shape`` (out-of-bounds elements read 0, or NaN with ``padding="nan"``). On Hopper the
accesses are TMA copies; elsewhere they are masked loads and stores. The fields may be changed
until the launch (Triton's tutorials set ``block_shape`` in an autotuning ``pre_hook``): they
are read, and checked, when the kernel is launched.

``base`` is any array a kernel takes (numpy, torch CPU or CUDA, ...); ``strides`` count
elements; the last must be 1 and the others multiples of 16 bytes, as TMA needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List


def _elem_size(base):
    dt = getattr(base, "dtype", None)
    size = getattr(dt, "itemsize", None)  # numpy dtypes, torch dtypes (2.1+)
    if size is None and hasattr(base, "element_size"):
        size = base.element_size()
    return size


def _strides_of(tensor):
    if callable(getattr(tensor, "stride", None)):  # torch: elements
        return list(tensor.stride())
    return [x // tensor.itemsize for x in tensor.strides]  # numpy: bytes


@dataclass
class TensorDescriptor:
    base: Any
    shape: List[int]
    strides: List[int]
    block_shape: List[int]
    padding: str = "zero"
    round_f32_to_tf32: bool = False

    def __post_init__(self):
        self.shape = [int(d) for d in self.shape]
        self.strides = [int(s) for s in self.strides]
        rank = len(self.shape)
        if not 1 <= rank <= 5:
            raise ValueError(f"a tensor descriptor has rank 1 to 5, not {rank}")
        if len(self.strides) != rank or len(self.block_shape) != rank:
            raise ValueError(f"shape {self.shape}, strides {self.strides} and block shape {list(self.block_shape)} "
                             "must have the same length")
        for i, d in enumerate(self.block_shape):
            if not isinstance(d, int) or d < 1 or d & (d - 1):
                raise ValueError(f"block shape element {i} ({d!r}) must be a power of 2")
        if any(d <= 0 for d in self.shape):
            raise ValueError(f"shape {self.shape}: every dimension must be positive")
        if self.strides[-1] != 1:
            raise ValueError(f"strides {self.strides}: the last dimension must be contiguous (stride 1)")
        size = _elem_size(self.base)
        if size is not None and any(s * size % 16 for s in self.strides[:-1]):
            raise ValueError(f"strides {self.strides}: every stride but the last must be a multiple of 16 bytes")
        if self.padding not in ("zero", "nan"):
            raise ValueError(f"padding {self.padding!r}: use \"zero\" or \"nan\"")
        if self.round_f32_to_tf32:
            raise NotImplementedError("round_f32_to_tf32 descriptors are not supported by Trident yet")

    @staticmethod
    def from_tensor(tensor: Any, block_shape: List[int], padding="zero", round_f32_to_tf32=False):
        """A descriptor over all of ``tensor`` (its own shape and strides)."""
        return TensorDescriptor(tensor, list(tensor.shape), _strides_of(tensor), block_shape, padding,
                                round_f32_to_tf32)
