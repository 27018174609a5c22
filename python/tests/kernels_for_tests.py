"""Kernels the package tests launch (a module of its own, as users' kernels are)."""

import trident
import trident.language as tl

SCALE = tl.constexpr(2.0)


@trident.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@trident.jit
def _scaled(v):
    return v * SCALE


@trident.jit
def scale_rows(x, out, stride_xm, stride_xn, stride_om, n_cols, BLOCK: tl.constexpr):
    """out[m, :] = 2 * x[m, :] through a helper and a module constant; x may be strided."""
    m = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x + m * stride_xm + cols * stride_xn, mask=mask, other=0.0)
    tl.store(out + m * stride_om + cols, _scaled(v), mask=mask)


@trident.jit
def softmax(x, y, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x + row * stride + cols, mask=mask, other=-float("inf"))
    v = v - tl.max(v, axis=0)
    e = tl.exp(v)
    tl.store(y + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


@trident.jit
def cast(x, out, n, OUT_DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask).to(OUT_DTYPE), mask=mask)


@trident.jit
def unmasked(x, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs))


@trident.jit
def axpy(a, x, y, n, ACT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = a * tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask)
    if ACT == "relu":
        v = tl.maximum(v, 0.0)
    tl.store(y + offs, v, mask=mask)


@trident.jit
def add_scaled(x, out, n, a, BLOCK: tl.constexpr):
    """out += a * x, in place."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, a * tl.load(x + offs, mask=m) + tl.load(out + offs, mask=m), mask=m)
