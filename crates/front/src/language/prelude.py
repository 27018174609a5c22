# Trident's prelude: the parts of triton.language that Triton itself writes in
# Triton (random numbers, sort, flip, softmax, the reductions' combine
# functions). Trident compiles these like user code and expands them in place
# at the call site. Written for Trident; the algorithms (Philox-4x32-10, the
# bitonic sorting network on a 2x2x...x2 hypercube) are the standard ones, so
# the results match Triton's bit for bit.
import triton
import triton.language as tl

# ---- small helpers --------------------------------------------------------


@triton.jit
def cdiv(x, div):
    return (x + (div - 1)) // div


@triton.jit
def sigmoid(x):
    return 1 / (1 + tl.exp(-x))


@triton.jit
def zeros_like(input):
    return tl.zeros(input.shape, input.dtype)


@triton.jit
def ravel(x, can_reorder=False):
    return tl.reshape(x, [x.numel], can_reorder=can_reorder)


@triton.jit
def squeeze(x, dim: tl.constexpr):
    tl.static_assert(-len(x.shape) <= dim and dim < len(x.shape), "squeeze: dim out of range")
    d: tl.constexpr = dim + len(x.shape) if dim < 0 else dim
    tl.static_assert(x.shape[d] == 1, "squeeze: the dimension must have size 1")
    return tl.reshape(x, x.shape[:d] + x.shape[d + 1:])


@triton.jit
def unsqueeze(x, dim: tl.constexpr):
    rank: tl.constexpr = len(x.shape) + 1
    tl.static_assert(-rank <= dim and dim < rank, "unsqueeze: dim out of range")
    d: tl.constexpr = dim + rank if dim < 0 else dim
    return tl.reshape(x, x.shape[:d] + (1, ) + x.shape[d:])


@triton.jit
def interleave(a, b):
    c = tl.join(a, b)
    if len(c.shape) == 1:
        return c
    else:
        return tl.reshape(c, c.shape[:-2] + [2 * c.shape[-2]])


@triton.jit
def swizzle2d(i, j, size_i, size_j, size_g):
    # Row-major (i, j) -> the same element numbered column-major within groups of size_g rows.
    linear = i * size_j + j
    per_group = size_g * size_j
    group = linear // per_group
    first_row = group * size_g
    rows = tl.minimum(size_i - first_row, size_g)
    within = linear % per_group
    return first_row + within % rows, within // rows


# ---- reductions and scans -------------------------------------------------


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def _xor(a, b):
    return a ^ b


@triton.jit
def _or(a, b):
    return a | b


@triton.jit
def _maximum(a, b):
    return tl.maximum(a, b)


@triton.jit
def _minimum(a, b):
    return tl.minimum(a, b)


@triton.jit
def _argmax_left(v1, i1, v2, i2):
    # On equal values the smaller index wins.
    take_first = (v1 > v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(take_first, v1, v2), tl.where(take_first, i1, i2)


@triton.jit
def _argmax_any(v1, i1, v2, i2):
    take_first = v1 > v2
    return tl.where(take_first, v1, v2), tl.where(take_first, i1, i2)


@triton.jit
def _argmin_left(v1, i1, v2, i2):
    take_first = (v1 < v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(take_first, v1, v2), tl.where(take_first, i1, i2)


@triton.jit
def _argmin_any(v1, i1, v2, i2):
    take_first = v1 < v2
    return tl.where(take_first, v1, v2), tl.where(take_first, i1, i2)


@triton.jit
def _widen_for_sum(x, dtype: tl.constexpr):
    # Sums of narrow integers accumulate in 32 bits of the same signedness (int1 counts as unsigned).
    if dtype is not None:
        return x.to(dtype)
    elif x.dtype.is_int_signed() and x.dtype.int_bitwidth < 32:
        return x.to(tl.int32)
    elif x.dtype.is_int_unsigned() and x.dtype.int_bitwidth < 32:
        return x.to(tl.uint32)
    else:
        return x


@triton.jit
def sum(input, axis=None, keep_dims=False, dtype: tl.constexpr = None):
    input = _widen_for_sum(input, dtype)
    return tl.reduce(input, axis, _add, keep_dims=keep_dims)


@triton.jit
def xor_sum(input, axis=None, keep_dims=False):
    tl.static_assert(input.dtype.is_int(), "xor_sum only supported for integers")
    return tl.reduce(input, axis, _xor, keep_dims=keep_dims)


@triton.jit
def reduce_or(input, axis, keep_dims=False):
    tl.static_assert(input.dtype.is_int(), "reduce_or only supported for integers")
    return tl.reduce(input, axis, _or, keep_dims=keep_dims)


@triton.jit
def max(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    if return_indices:
        if return_indices_tie_break_left:
            return tl._reduce_with_indices(input, axis, _argmax_left, keep_dims=keep_dims)
        else:
            return tl._reduce_with_indices(input, axis, _argmax_any, keep_dims=keep_dims)
    else:
        if input.dtype.primitive_bitwidth < 32:
            if input.dtype.is_floating():
                input = input.to(tl.float32)
            else:
                input = input.to(tl.int32)
        return tl.reduce(input, axis, _maximum, keep_dims=keep_dims)


@triton.jit
def min(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    if return_indices:
        if return_indices_tie_break_left:
            return tl._reduce_with_indices(input, axis, _argmin_left, keep_dims=keep_dims)
        else:
            return tl._reduce_with_indices(input, axis, _argmin_any, keep_dims=keep_dims)
    else:
        if input.dtype.primitive_bitwidth < 32:
            if input.dtype.is_floating():
                input = input.to(tl.float32)
            else:
                input = input.to(tl.int32)
        return tl.reduce(input, axis, _minimum, keep_dims=keep_dims)


@triton.jit
def argmax(input, axis, tie_break_left=True, keep_dims=False):
    values, indices = max(input, axis, return_indices=True, return_indices_tie_break_left=tie_break_left,
                          keep_dims=keep_dims)
    return indices


@triton.jit
def argmin(input, axis, tie_break_left=True, keep_dims=False):
    values, indices = min(input, axis, return_indices=True, return_indices_tie_break_left=tie_break_left,
                          keep_dims=keep_dims)
    return indices


@triton.jit
def cumsum(input, axis=0, reverse=False, dtype: tl.constexpr = None):
    input = _widen_for_sum(input, dtype)
    return tl.associative_scan(input, axis, _add, reverse)


@triton.jit
def cumprod(input, axis=0, reverse=False, dtype: tl.constexpr = None):
    input = _widen_for_sum(input, dtype)
    return tl.associative_scan(input, axis, _mul, reverse)


@triton.jit
def softmax(x, dim=None, keep_dims=None, ieee_rounding=False):
    d: tl.constexpr = 0 if dim is None else dim
    shifted = x - max(x, d, keep_dims=True)
    num = tl.exp(shifted)
    den = sum(num, d, keep_dims=True)
    return tl.fdiv(num, den, ieee_rounding)


# ---- sort and flip: a bitonic network on a 2x2x...x2 view of the block ----


@triton.jit
def _axis_bit(n_dims: tl.constexpr, j: tl.constexpr):
    # 0/1 along hypercube axis n_dims-1-j (the j-th from the innermost), broadcastable to the cube.
    return tl.reshape(tl.arange(0, 2), [1] * (n_dims - j - 1) + [2] + [1] * j)


@triton.jit
def _swap_step(x, flip, j: tl.constexpr):
    # Compare each element with its partner along the j-th innermost axis; keep the smaller
    # first unless this position (or the flip pattern) asks for the larger.
    n_dims: tl.constexpr = tl._log2(x.numel)
    bits: tl.constexpr = tl._int_dtype(x.dtype.primitive_bitwidth, True)
    as_int = x.to(bits, bitcast=True)
    # a ^ (a ^ b) == b: xor with the pair's xor gives the partner.
    partner = (as_int ^ xor_sum(as_int, n_dims - 1 - j, True)).to(x.dtype, bitcast=True)
    second = _axis_bit(n_dims, j)
    return tl.where((x > partner) != (flip ^ second).to(tl.int1), partner, x)


@triton.jit
def _bitonic_stage(x, stage: tl.constexpr, order: tl.constexpr):
    # order: 0 ascending, 1 descending, 2 alternating by the stage's axis
    if order == 2:
        flip = _axis_bit(tl._log2(x.numel), stage)
    else:
        flip = order
    for k in tl.static_range(stage):
        x = _swap_step(x, flip, stage - 1 - k)
    return x


@triton.jit
def _sort(x, k: tl.constexpr = None, dim: tl.constexpr = None, descending: tl.constexpr = 0):
    last: tl.constexpr = len(x.shape) - 1
    d: tl.constexpr = last if dim is None else (dim + len(x.shape) if dim < 0 else dim)
    tl.static_assert(d == last, "only sorting along the last dimension is supported")
    if k is not None:
        tl.static_assert(k > 0, "topk: k must be greater than 0")
        tl.static_assert(tl._is_pow2(k), "topk: k must be a power of two")
        tl.static_assert(k <= x.shape[d], "topk: k must not exceed the size of the sorted dimension")
    log_n: tl.constexpr = tl._log2(x.shape[d])
    log_k: tl.constexpr = log_n if k is None else tl._log2(k)
    if log_k == 0:
        x = max(x, axis=d, keep_dims=True) if descending else min(x, axis=d, keep_dims=True)
    else:
        n_dims: tl.constexpr = tl._log2(x.numel)
        h = tl.reshape(x, [2] * n_dims if n_dims else [1])
        for s in tl.static_range(1, log_k + 1):
            h = _bitonic_stage(h, s, 2 if s < log_n else descending)
        # Bitonic top-k: halve the sorted axis, keeping the better of each pair, and re-merge.
        for s in tl.static_range(log_k + 1, log_n + 1):
            h = max(h, axis=(tl._log2(h.numel) - 1 - log_k)) if descending else min(h, axis=(tl._log2(h.numel) - 1 - log_k))
            h = _bitonic_stage(h, log_k, 2 if s < log_n else descending)
        x = tl.reshape(h, x.shape[:-1] + [2**log_k])
    return x


@triton.jit
def sort(x, dim: tl.constexpr = None, descending: tl.constexpr = 0):
    return _sort(x, dim=dim, descending=descending)


@triton.jit
def topk(x, k: tl.constexpr, dim: tl.constexpr = None, descending: tl.constexpr = True):
    return _sort(x, k=k, dim=dim, descending=descending)


@triton.jit
def flip(x, dim=None):
    rank: tl.constexpr = len(x.shape)
    d: tl.constexpr = rank - 1 if dim is None else (dim + rank if dim < 0 else dim)
    tl.static_assert(0 <= d and d < rank, "flip: dim must be None or in [-rank, rank)")
    tl.static_assert(tl._is_pow2(x.shape[d]), "flip: the flipped dimension must be a power of two")
    steps: tl.constexpr = tl._log2(x.shape[d])
    bits: tl.constexpr = tl._int_dtype(x.dtype.primitive_bitwidth, True)
    # Split the axis into log2(n) axes of size 2; swapping each pair reverses the axis.
    y = tl.reshape(x.to(bits, bitcast=True), x.shape[:d] + [2] * steps + x.shape[d + 1:])
    for s in tl.static_range(steps):
        y = y ^ xor_sum(y, d + s, True)
    return tl.reshape(y, x.shape).to(x.dtype, bitcast=True)


# ---- random numbers: Philox-4x32-10 ----------------------------------------


@triton.jit
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: tl.constexpr = 10):
    if c0.dtype == tl.uint32:
        KEY_A: tl.constexpr = 0x9E3779B9
        KEY_B: tl.constexpr = 0xBB67AE85
        MUL_A: tl.constexpr = 0xD2511F53
        MUL_B: tl.constexpr = 0xCD9E8D57
    else:
        tl.static_assert(c0.dtype == tl.uint64, "philox needs uint32 or uint64 counters")
        KEY_A: tl.constexpr = 0x9E3779B97F4A7C15
        KEY_B: tl.constexpr = 0xBB67AE8584CAA73B
        MUL_A: tl.constexpr = 0xD2E7470EE14C6C93
        MUL_B: tl.constexpr = 0xCA5A826395121157
    for _ in tl.static_range(n_rounds):
        prev0 = c0
        prev2 = c2
        c0 = tl.umulhi(MUL_B, prev2) ^ c1 ^ k0
        c2 = tl.umulhi(MUL_A, prev0) ^ c3 ^ k1
        c1 = MUL_B * prev2
        c3 = MUL_A * prev0
        k0 = k0 + KEY_A
        k1 = k1 + KEY_B
    return c0, c1, c2, c3


@triton.jit
def philox(seed, c0, c1, c2, c3, n_rounds: tl.constexpr = 10):
    seed = tl.to_tensor(seed)
    tl.static_assert(seed.dtype.is_int(), "the seed must be an integer")
    seed = seed.to(tl.uint64)
    c0 = tl.to_tensor(c0)
    c1 = tl.to_tensor(c1)
    c2 = tl.to_tensor(c2)
    c3 = tl.to_tensor(c3)
    if c0.dtype.primitive_bitwidth == 32:
        counter_type = tl.uint32
        seed_hi = ((seed >> 32) & 0xffffffff).to(tl.uint32)
        seed_lo = (seed & 0xffffffff).to(tl.uint32)
    else:
        tl.static_assert(c0.dtype.primitive_bitwidth == 64, "philox needs 32- or 64-bit counters")
        counter_type = tl.uint64
        seed_hi = tl.full((1, ), 0, dtype=counter_type)
        seed_lo = seed
    c0 = c0.to(counter_type, bitcast=True)
    c1 = c1.to(counter_type, bitcast=True)
    c2 = c2.to(counter_type, bitcast=True)
    c3 = c3.to(counter_type, bitcast=True)
    return philox_impl(c0, c1, c2, c3, seed_lo, seed_hi, n_rounds)


@triton.jit
def randint4x(seed, offset, n_rounds: tl.constexpr = 10):
    offset_lo = offset.to(tl.uint32)
    zero = offset_lo * 0
    if offset.dtype.primitive_bitwidth > 32:
        offset_hi = (offset >> 32).to(tl.uint32)
    else:
        offset_hi = zero
    return philox(seed, offset_lo, offset_hi, zero, zero, n_rounds)


@triton.jit
def randint(seed, offset, n_rounds: tl.constexpr = 10):
    r0, r1, r2, r3 = randint4x(seed, offset, n_rounds)
    return r0


@triton.jit
def uint_to_uniform_float(x):
    # Scale the integer's magnitude (31 or 63 bits) into [0, 1), staying below 1.0 after rounding.
    if x.dtype == tl.uint32 or x.dtype == tl.int32:
        x = x.to(tl.int32, bitcast=True)
        scale = 4.6566127342e-10
    else:
        tl.static_assert(x.dtype == tl.uint64 or x.dtype == tl.int64, "expected a 32- or 64-bit integer")
        x = x.to(tl.int64, bitcast=True)
        scale = 1.0842020432385337e-19
    x = tl.where(x < 0, ~x, x)
    return x * scale


@triton.jit
def rand(seed, offset, n_rounds: tl.constexpr = 10):
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


@triton.jit
def rand4x(seed, offsets, n_rounds: tl.constexpr = 10):
    r0, r1, r2, r3 = randint4x(seed, offsets, n_rounds)
    return uint_to_uniform_float(r0), uint_to_uniform_float(r1), uint_to_uniform_float(r2), uint_to_uniform_float(r3)


@triton.jit
def pair_uniform_to_normal(u1, u2):
    # Box-Muller.
    u1 = tl.maximum(1.0e-7, u1)
    theta = 6.283185307179586 * u2
    radius = tl.sqrt(-2.0 * tl.log(u1))
    return radius * tl.cos(theta), radius * tl.sin(theta)


@triton.jit
def randn(seed, offset, n_rounds: tl.constexpr = 10):
    r0, r1, r2, r3 = randint4x(seed, offset, n_rounds)
    n0, n1 = pair_uniform_to_normal(uint_to_uniform_float(r0), uint_to_uniform_float(r1))
    return n0


@triton.jit
def randn4x(seed, offset, n_rounds: tl.constexpr = 10):
    u0, u1, u2, u3 = rand4x(seed, offset, n_rounds)
    n0, n1 = pair_uniform_to_normal(u0, u1)
    n2, n3 = pair_uniform_to_normal(u2, u3)
    return n0, n1, n2, n3


# ---- gather and histogram ---------------------------------------------------


@triton.jit
def histogram(input, num_bins: tl.constexpr, mask=None):
    # counts of the values 0..num_bins-1 (others, and masked-off elements, are not counted)
    tl.static_assert(len(input.shape) == 1, "histogram only supports 1D input")
    tl.static_assert(input.dtype.is_int() and input.dtype.primitive_bitwidth == 32,
                     "histogram only supports 32-bit integer input")
    hit = input[:, None] == tl.arange(0, num_bins)[None, :]
    if mask is not None:
        hit = hit & tl.broadcast_to(mask, input.shape)[:, None]
    return tl.sum(hit.to(tl.int32), axis=0)
