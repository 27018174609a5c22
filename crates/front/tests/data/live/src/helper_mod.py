"""Helpers of kernel_mod.py: their own globals, and a call back into kernel_mod."""
import triton
import triton.language as tl

import kernel_mod as km

FACTOR = 3.0


@triton.jit
def triple(x):
    return x * FACTOR


@triton.jit
def quadruple(x):
    return km.double(km.double(x))
