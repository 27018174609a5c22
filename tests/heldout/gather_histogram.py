"""tl.gather and tl.histogram (our own kernels)."""
import triton
import triton.language as tl


@triton.jit
def gather_k(x_ptr, i_ptr, y_ptr, z_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    x = tl.load(x_ptr + r[:, None] * C + c[None, :])
    idx = tl.load(i_ptr + r[:, None] * C + c[None, :])
    g0 = tl.gather(x, idx % R, 0)
    g1 = x.gather(idx % C, axis=1)
    tl.store(y_ptr + r[:, None] * C + c[None, :], g0)
    tl.store(z_ptr + r[:, None] * C + c[None, :], g1)


@triton.jit
def hist_k(x_ptr, h_ptr, h2_ptr, n, BLOCK: tl.constexpr, BINS: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    h = tl.histogram(x, BINS)
    tl.store(h_ptr + tl.arange(0, BINS), h)
    h2 = tl.histogram(x, BINS, mask=offs < n)
    tl.store(h2_ptr + tl.arange(0, BINS), h2)
