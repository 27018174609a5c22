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


@trident.jit
def desc_scale(x_desc, y_desc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """y = 2 x + (x's column count), box by box through two host tensor descriptors."""
    m = tl.program_id(0) * BLOCK_M
    n = tl.program_id(1) * BLOCK_N
    y_desc.store([m, n], x_desc.load([m, n]) * 2 + x_desc.shape[1])


@trident.jit
def _as_descriptor(p, shape, strides, block_shape):
    # Triton's fused-attention tutorial takes a host descriptor or a pointer the same way.
    if isinstance(p, tl.tensor_descriptor):
        return p
    else:
        return tl.make_tensor_descriptor(p, shape, strides, block_shape)


@trident.jit
def desc_or_pointer_copy(x, y, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """y = x + 1 where x and y are host descriptors or pointers to M x N row-major arrays."""
    dx = _as_descriptor(x, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    dy = _as_descriptor(y, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    m = tl.program_id(0) * BLOCK_M
    n = tl.program_id(1) * BLOCK_N
    dy.store([m, n], dx.load([m, n]) + 1)


def _desc_blocks(nargs):
    # Triton's persistent-matmul tutorial sets the descriptors' boxes from the config this way.
    bm, bn, bk = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["BLOCK_K"]
    nargs["a_desc"].block_shape = [bm, bk]
    nargs["b_desc"].block_shape = [bk, bn]
    nargs["c_desc"].block_shape = [bm, bn]


@trident.autotune(
    configs=[
        trident.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16}, num_warps=4, pre_hook=_desc_blocks),
        trident.Config({"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=4, pre_hook=_desc_blocks),
    ],
    key=["K"],
)
@trident.jit
def desc_matmul(a_desc, b_desc, c_desc, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """c = a @ b over host descriptors whose boxes the autotuning pre-hook sets."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc)
