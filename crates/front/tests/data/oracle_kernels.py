"""Kernels run by Triton's interpreter (gen_oracle.py) and by Trident (tests/oracle.rs) on the same inputs."""
import triton
import triton.language as tl


@triton.jit
def rand_kernel(out_i, out_r, out_n, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_i + offs, tl.randint(seed, offs), mask=m)
    tl.store(out_r + offs, tl.rand(seed, offs), mask=m)
    tl.store(out_n + offs, tl.randn(seed, offs), mask=m)


@triton.jit
def rand4x_kernel(o0, o1, o2, o3, seed, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a, b, c, d = tl.randint4x(seed, offs + 1000)
    tl.store(o0 + offs, a)
    tl.store(o1 + offs, b)
    tl.store(o2 + offs, c)
    tl.store(o3 + offs, d)


@triton.jit
def sort_kernel(x, asc, desc, flipped, amax, amin, vmax, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    tl.store(asc + offs, tl.sort(v))
    tl.store(desc + offs, tl.sort(v, descending=True))
    tl.store(flipped + offs, tl.flip(v))
    tl.store(amax, tl.argmax(v, 0))
    tl.store(amin, tl.argmin(v, 0))
    tl.store(vmax, tl.max(v, 0))


@triton.jit
def sort2d_kernel(x, out, rmax, ridx, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)[:, None]
    c = tl.arange(0, C)[None, :]
    v = tl.load(x + r * C + c)
    tl.store(out + r * C + c, tl.sort(v, dim=1))
    m, i = tl.max(v, axis=1, return_indices=True)
    tl.store(rmax + tl.arange(0, R), m)
    tl.store(ridx + tl.arange(0, R), i)


@triton.jit
def _pair_max(a, ia, b, ib):
    take = a > b
    return tl.where(take, a, b), tl.where(take, ia, ib)


@triton.jit
def _mul_add(a, b):
    return a * 2 + b


@triton.jit
def scan_kernel(x, cs, cs_rev, cp, custom, red, red_idx, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    tl.store(cs + offs, tl.cumsum(v, 0))
    tl.store(cs_rev + offs, tl.cumsum(v, 0, reverse=True))
    tl.store(cp + offs, tl.cumprod(v % 3 + 1, 0))
    tl.store(custom + offs, tl.associative_scan(v, 0, _mul_add))
    # Distinct values: with ties the winner of a non-commutative combine depends on the reduction order.
    m, i = tl.reduce((v * 100 + offs, offs), 0, _pair_max)
    tl.store(red, m)
    tl.store(red_idx, i)


@triton.jit
def intdiv_kernel(a, b, q, r, sh, ush, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(a + offs)
    y = tl.load(b + offs)
    tl.store(q + offs, x // y)
    tl.store(r + offs, x % y)
    tl.store(sh + offs, x >> 3)
    tl.store(ush + offs, x.to(tl.uint32) >> 3)


@triton.jit
def float_kernel(a, b, fm, fd, mx, mn, cvt_i, cvt_h, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(a + offs)
    y = tl.load(b + offs)
    tl.store(fm + offs, x % y)
    tl.store(fd + offs, x / y)
    tl.store(mx + offs, tl.maximum(x, y))
    tl.store(mn + offs, tl.minimum(x, y))
    tl.store(cvt_i + offs, (x * 10).to(tl.int32))
    tl.store(cvt_h + offs, x.to(tl.float16))


@triton.jit
def _helper_early(x, t):
    if x > t:
        return x - t
    return t - x


@triton.jit
def _helper_pair(a, b):
    return a + b, a * b


@triton.jit
def control_kernel(x, out, out2, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    acc = tl.zeros((BLOCK, ), dtype=tl.float32)
    for i in range(0, n):
        acc += v * i
    k = 0
    while k < n:
        acc = acc + 1.0
        k += 2
    s = tl.sum(v, 0)
    if s > 0:
        acc = acc * 2.0
    else:
        acc = acc - 1.0
    for j in tl.static_range(3):
        acc += j
    p, q = _helper_pair(acc, v)
    tl.store(out + offs, p + q)
    tl.store(out2, _helper_early(s, 1.5))


@triton.jit
def atomic_kernel(cnt, old, fmax, vals, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    o = tl.atomic_add(cnt + offs % 4, offs, mask=offs < BLOCK - 2)
    # What masked-off lanes return is unspecified; keep only the active ones.
    tl.store(old + offs, o, mask=offs < BLOCK - 2)
    v = tl.load(vals + offs)
    tl.atomic_max(fmax + offs % 2, v)


@triton.jit
def shape_kernel(x, y, joined, lo, hi, inter, perm, catted, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x + offs)
    b = tl.load(y + offs)
    j = tl.join(a, b)
    tl.store(joined + offs[:, None] * 2 + tl.arange(0, 2)[None, :], j)
    l, h = tl.split(j)
    tl.store(lo + offs, l)
    tl.store(hi + offs, h)
    tl.store(inter + tl.arange(0, 2 * BLOCK), tl.interleave(a, b))
    m = tl.reshape(a, (4, BLOCK // 4))
    t = tl.permute(m, (1, 0))
    tl.store(perm + tl.arange(0, BLOCK // 4)[:, None] * 4 + tl.arange(0, 4)[None, :], t)
    tl.store(catted + tl.arange(0, 2 * BLOCK), tl.cat(a, b, can_reorder=True))


@triton.jit
def dot_kernel(a, b, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    x = tl.load(a + rm[:, None] * K + rk[None, :])
    y = tl.load(b + rk[:, None] * N + rn[None, :])
    acc = tl.dot(x, y)
    acc = tl.dot(x, y, acc)
    tl.store(c + rm[:, None] * N + rn[None, :], acc)


@triton.jit
def math_kernel(x, e, l, s, r, sg, er, fl, ab, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    tl.store(e + offs, tl.exp(v))
    tl.store(l + offs, tl.log(tl.abs(v) + 1))
    tl.store(s + offs, tl.sqrt(tl.abs(v)))
    tl.store(r + offs, tl.rsqrt(tl.abs(v) + 1))
    tl.store(sg + offs, tl.sigmoid(v))
    tl.store(er + offs, tl.erf(v))
    tl.store(fl + offs, tl.floor(v) + tl.ceil(v))
    tl.store(ab + offs, tl.softmax(v, 0))
