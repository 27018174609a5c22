"""Helpers that compute compile-time values, loop-variable reuse, `.item()` (our own kernels)."""
import triton
import triton.language as tl


@triton.jit
def _lowest(dtype):
    # a dtype argument arrives as a constexpr; `.value` unwraps it, as in compiled Triton
    d = dtype.value
    if d.is_floating():
        v: tl.constexpr = float("-inf")
        return v
    if d.is_int_signed():
        bits: tl.constexpr = d.int_bitwidth
        v: tl.constexpr = -(2 ** (bits - 1))
        return v
    v: tl.constexpr = 0
    return v


@triton.jit
def _is_float(x):
    return (x + tl.zeros((1,), tl.int1)).dtype.is_floating()


@triton.jit
def masked_row_max(x_ptr, out_ptr, idx_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dt = x_ptr.type.element_ty
    acc_t = tl.float32 if dt is tl.float16 else dt
    low = _lowest(dt)
    best = tl.full([BLOCK_M], low, dtype=acc_t)
    where = tl.zeros([BLOCK_M], dtype=tl.int32)
    for i in tl.static_range(2):
        best = best + i * 0
    for i in range(0, N, BLOCK_N):
        cols = i + tl.arange(0, BLOCK_N)
        m = rows[:, None] < M and cols[None, :] < N
        v = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=m, other=low)
        bv, bi = tl.max(v, 1, return_indices=True, return_indices_tie_break_left=True)
        up = bv > best
        best = tl.where(up, bv, best)
        where = tl.where(up, i + bi, where)
    if _is_float(best):
        best = best * 1.0
    tl.store(out_ptr + rows, best.to(out_ptr.dtype.element_ty), mask=rows < M)
    tl.store(idx_ptr + rows, where, mask=rows < M)


@triton.jit
def first_minus_max(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    head = tl.load(x_ptr + tl.arange(0, 1))
    tl.store(y_ptr + offs, x - tl.max(x, 0) + head.item())
