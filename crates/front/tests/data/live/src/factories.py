"""Kernels made at run time: closures over constants, exec'd strings, patched source."""
import linecache

import triton
import triton.language as tl


def make_scaler(block, scale):
    @triton.jit
    def scaler(x_ptr, y_ptr, n):
        offs = tl.program_id(0) * block + tl.arange(0, block)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        tl.store(y_ptr + offs, x * scale, mask=offs < n)

    return scaler


GENERATED = '''
import triton
import triton.language as tl

WIDTH = 32


@triton.jit
def generated_fill(y_ptr, n, value):
    offs = tl.program_id(0) * WIDTH + tl.arange(0, WIDTH)
    tl.store(y_ptr + offs, value + offs * 0.0, mask=offs < n)
'''


def make_generated():
    name = "<trident-generated-fill>"
    linecache.cache[name] = (len(GENERATED), None, GENERATED.splitlines(keepends=True), name)
    g = {}
    exec(compile(GENERATED, name, "exec"), g)
    return g["generated_fill"]


@triton.jit
def add_const(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, x + 1.0, mask=offs < n)


def make_patched():
    add_const.src = add_const.src.replace("x + 1.0", "x + 100.0")
    return add_const
