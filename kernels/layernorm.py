"""Layer normalisation over the last dimension of an (M, N) matrix, forward and backward.

Forward (one program per row; BLOCK_N is a power of two >= N):
    mean = sum(x) / N,  var = sum((x - mean)^2) / N,  rstd = 1 / sqrt(var + eps)
    y = (x - mean) * rstd * w + b
mean and rstd are saved (fp32, one per row) for the backward pass.

Backward, in two kernels and without atomics, so the result does not depend on
the order in which programs run:
  1. `layernorm_bwd_dx`: program g owns rows [g*ROWS_PER_PROGRAM, (g+1)*ROWS_PER_PROGRAM)
     (clipped to M). For each row it writes
         xhat = (x - mean) * rstd,  wdy = w * dy
         dx = (wdy - (xhat * mean(wdy * xhat) + mean(wdy))) * rstd
     and it sums dy * xhat and dy over its rows into one row of the fp32
     partial buffers dw_part[g, :] and db_part[g, :].
  2. `layernorm_bwd_dwdb`: reduces the partial buffers over their G rows,
     BLOCK_N columns per program: dw = sum_g dw_part[g, :], db = sum_g db_part[g, :].
The grid of kernel 1 is cdiv(M, ROWS_PER_PROGRAM); kernel 2 gets G = that count.
"""
import triton
import triton.language as tl


@triton.jit
def layernorm_fwd(x, y, w, b, mean, rstd, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    in_row = cols < N
    xr = tl.load(x + row * stride + cols, mask=in_row, other=0.0).to(tl.float32)
    mu = tl.sum(xr, axis=0) / N
    centred = tl.where(in_row, xr - mu, 0.0)
    var = tl.sum(centred * centred, axis=0) / N
    inv_std = 1.0 / tl.sqrt(var + eps)
    wr = tl.load(w + cols, mask=in_row, other=0.0).to(tl.float32)
    br = tl.load(b + cols, mask=in_row, other=0.0).to(tl.float32)
    out = centred * inv_std * wr + br
    tl.store(y + row * stride + cols, out.to(y.dtype.element_ty), mask=in_row)
    tl.store(mean + row, mu)
    tl.store(rstd + row, inv_std)


@triton.jit
def layernorm_bwd_dx(dy, x, w, mean, rstd, dx, dw_part, db_part, stride, M, N,
                     ROWS_PER_PROGRAM: tl.constexpr, BLOCK_N: tl.constexpr):
    g = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    in_row = cols < N
    wr = tl.load(w + cols, mask=in_row, other=0.0).to(tl.float32)
    dw_acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    db_acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    first = g * ROWS_PER_PROGRAM
    last = tl.minimum(first + ROWS_PER_PROGRAM, M)
    for row in range(first, last):
        xr = tl.load(x + row * stride + cols, mask=in_row, other=0.0).to(tl.float32)
        dyr = tl.load(dy + row * stride + cols, mask=in_row, other=0.0).to(tl.float32)
        mu = tl.load(mean + row)
        inv_std = tl.load(rstd + row)
        xhat = tl.where(in_row, (xr - mu) * inv_std, 0.0)
        wdy = wr * dyr
        c1 = tl.sum(xhat * wdy, axis=0) / N
        c2 = tl.sum(wdy, axis=0) / N
        dxr = (wdy - (xhat * c1 + c2)) * inv_std
        tl.store(dx + row * stride + cols, dxr.to(dx.dtype.element_ty), mask=in_row)
        dw_acc += dyr * xhat
        db_acc += dyr
    tl.store(dw_part + g * N + cols, dw_acc, mask=in_row)
    tl.store(db_part + g * N + cols, db_acc, mask=in_row)


@triton.jit
def layernorm_bwd_dwdb(dw_part, db_part, dw, db, G, N, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    dw_acc = tl.zeros((BLOCK_G, BLOCK_N), dtype=tl.float32)
    db_acc = tl.zeros((BLOCK_G, BLOCK_N), dtype=tl.float32)
    for g0 in range(0, G, BLOCK_G):
        gs = g0 + tl.arange(0, BLOCK_G)
        m = (gs[:, None] < G) & (cols[None, :] < N)
        offs = gs[:, None] * N + cols[None, :]
        dw_acc += tl.load(dw_part + offs, mask=m, other=0.0)
        db_acc += tl.load(db_part + offs, mask=m, other=0.0)
    tl.store(dw + cols, tl.sum(dw_acc, axis=0).to(dw.dtype.element_ty), mask=cols < N)
    tl.store(db + cols, tl.sum(db_acc, axis=0).to(db.dtype.element_ty), mask=cols < N)


def layer_norm_forward(x, weight, bias, eps=1e-5):
    """Host wrapper: returns (y, mean, rstd) for a 2-D x normalised over its last dimension."""
    import torch

    M, N = x.shape
    y = torch.empty_like(x)
    mean = torch.empty((M,), dtype=torch.float32, device=x.device)
    rstd = torch.empty((M,), dtype=torch.float32, device=x.device)
    block_n = triton.next_power_of_2(N)
    layernorm_fwd[(M,)](x, y, weight, bias, mean, rstd, x.stride(0), N, eps, BLOCK_N=block_n)
    return y, mean, rstd


def layer_norm_backward(dy, x, weight, mean, rstd, rows_per_program=8):
    """Host wrapper: returns (dx, dw, db) given the saved mean and rstd of the forward pass."""
    import torch

    M, N = x.shape
    block_n = triton.next_power_of_2(N)
    groups = triton.cdiv(M, rows_per_program)
    dx = torch.empty_like(x)
    dw_part = torch.empty((groups, N), dtype=torch.float32, device=x.device)
    db_part = torch.empty((groups, N), dtype=torch.float32, device=x.device)
    layernorm_bwd_dx[(groups,)](dy, x, weight, mean, rstd, dx, dw_part, db_part, x.stride(0), M, N,
                                ROWS_PER_PROGRAM=rows_per_program, BLOCK_N=block_n)
    dw = torch.empty_like(weight)
    db = torch.empty_like(weight)
    cols_per_program = 64
    layernorm_bwd_dwdb[(triton.cdiv(N, cols_per_program),)](dw_part, db_part, dw, db, groups, N,
                                                            BLOCK_G=16, BLOCK_N=cols_per_program)
    return dx, dw, db
