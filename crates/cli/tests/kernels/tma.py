"""Tensor-descriptor loads (and stores) that Trident copies with the tensor-memory accelerator on sm_90
(and one it cannot: a base that is not a kernel parameter). crates/cli/tests/tma.rs runs
each on the interpreter and on the emulators and compares (with the matmul of
kernels/matmul_descriptor.py)."""
import triton
import triton.language as tl


@triton.jit
def copy_2d(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr, NAN: tl.constexpr):
    # one ragged box per program; out-of-bounds elements read as 0 (or NaN) and are stored
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    if NAN:
        d = tl.make_tensor_descriptor(src, shape=[M, N], strides=[N, 1], block_shape=[BM, BN],
                                      padding_option="nan")
    else:
        d = tl.make_tensor_descriptor(src, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    t = d.load([pid_m * BM, pid_n * BN])
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    # dst is (M + BM) x (N + BN): the whole box is stored, padding included
    tl.store(dst + rows[:, None] * (N + BN) + cols[None, :], t)


@triton.jit
def copy_3d(src, dst, B, M, N, stride_b, BB: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    pid_b = tl.program_id(0)
    pid_m = tl.program_id(1)
    d = tl.make_tensor_descriptor(src, shape=[B, M, N], strides=[stride_b, N, 1], block_shape=[BB, BM, BN])
    t = d.load([pid_b * BB, pid_m * BM, 0])
    b = pid_b * BB + tl.arange(0, BB)
    r = pid_m * BM + tl.arange(0, BM)
    c = tl.arange(0, BN)
    mask = (b[:, None, None] < B) & (r[None, :, None] < M) & (c[None, None, :] < N)
    tl.store(dst + b[:, None, None] * (M * N) + r[None, :, None] * N + c[None, None, :], t * 2, mask=mask)


@triton.jit
def copy_1d(src, dst, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    d = tl.make_tensor_descriptor(src, shape=[n], strides=[1], block_shape=[BLOCK])
    t = d.load([pid * BLOCK])
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, t + 1, mask=offs < n)


@triton.jit
def row_sums(src, out, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # a descriptor load in a loop (not feeding a dot): one barrier, waited on every iteration
    pid = tl.program_id(0)
    d = tl.make_tensor_descriptor(src, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    acc = tl.zeros((BM,), dtype=tl.int32)
    for k in range(0, tl.cdiv(N, BN)):
        acc += tl.sum(d.load([pid * BM, k * BN]), axis=1)
    rows = pid * BM + tl.arange(0, BM)
    tl.store(out + rows, acc, mask=rows < M)


@triton.jit
def small_dot(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # one K tile: the loads feed the dot outside any loop (small integers: exact sums)
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    da = tl.make_tensor_descriptor(a, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    db = tl.make_tensor_descriptor(b, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    x = da.load([pid_m * BM, 0]).to(tl.float16)
    y = db.load([0, pid_n * BN]).to(tl.float16)
    acc = tl.dot(x, y)
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    tl.store(c + rows[:, None] * N + cols[None, :], acc, mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit
def offset_base(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # the base is not a kernel parameter: no host-built map, plain loads
    pid = tl.program_id(0)
    d = tl.make_tensor_descriptor(src + N, shape=[M - 1, N], strides=[N, 1], block_shape=[BM, BN])
    t = d.load([pid * BM, 0])
    rows = pid * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    tl.store(dst + rows[:, None] * BN + cols[None, :], t)


@triton.jit
def store_2d(src, dst, M, N, LD, BM: tl.constexpr, BN: tl.constexpr):
    # plain loads in, a descriptor store out: the window is M x N of a wider array (row
    # stride LD), so the boxes at the edges are ragged and what lies outside must stay as is
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    x = tl.load(src + rows[:, None] * N + cols[None, :], mask=(rows[:, None] < M) & (cols[None, :] < N), other=0)
    d = tl.make_tensor_descriptor(dst, shape=[M, N], strides=[LD, 1], block_shape=[BM, BN])
    d.store([pid_m * BM, pid_n * BN], x * 3)


@triton.jit
def store_3d_loop(src, dst, B, M, N, stride_b, BB: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    # descriptor load and store in a loop: the store's box is rewritten every iteration
    pid = tl.program_id(0)
    ds = tl.make_tensor_descriptor(src, shape=[B, M, N], strides=[stride_b, N, 1], block_shape=[BB, BM, BN])
    dd = tl.make_tensor_descriptor(dst, shape=[B, M, N], strides=[stride_b, N, 1], block_shape=[BB, BM, BN])
    for m in range(0, tl.cdiv(M, BM)):
        t = ds.load([pid * BB, m * BM, 0])
        dd.store([pid * BB, m * BM, 0], t + m)


@triton.jit
def batched_dot_bt(a, b, c, B, M, N, K, stride_ab, stride_bb, BB: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # rank-3 dot over a K loop, B given as [B, N, K] and read transposed (`trans` of the
    # last two dims): the pipeliner's ring keeps B's tiles as loaded and reads them through
    # a transposed view
    pid = tl.program_id(0)
    da = tl.make_tensor_descriptor(a, shape=[B, M, K], strides=[stride_ab, K, 1], block_shape=[BB, BM, BK])
    db = tl.make_tensor_descriptor(b, shape=[B, N, K], strides=[stride_bb, K, 1], block_shape=[BB, BN, BK])
    acc = tl.zeros((BB, BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = da.load([pid * BB, 0, k * BK])
        y = db.load([pid * BB, 0, k * BK])
        acc = tl.dot(x, tl.trans(y, 0, 2, 1), acc)
    bs = pid * BB + tl.arange(0, BB)
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    offs = bs[:, None, None] * (M * N) + rows[None, :, None] * N + cols[None, None, :]
    mask = (bs[:, None, None] < B) & (rows[None, :, None] < M) & (cols[None, None, :] < N)
    tl.store(c + offs, acc, mask=mask)


@triton.jit
def matmul_carried_offset(a, b, c, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          WARP_SPECIALIZE: tl.constexpr):
    # The K offset is a counter the loop carries (not computed from the induction variable):
    # it feeds the boxes' offsets and the windows' masks, which TMA does not need.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    da = tl.make_tensor_descriptor(a, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    db = tl.make_tensor_descriptor(b, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    off_k = 0
    for k in tl.range(0, tl.cdiv(K, BLOCK_K), warp_specialize=WARP_SPECIALIZE):
        acc = tl.dot(da.load([pid_m * BLOCK_M, off_k]), db.load([off_k, pid_n * BLOCK_N]), acc)
        off_k += BLOCK_K
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c + rows[:, None] * N + cols[None, :], acc, mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit
def host_desc_copy(src_desc, dst_desc, BM: tl.constexpr, BN: tl.constexpr):
    # Host descriptors (`desc[BOX]:TENSOR` on the command line): one box per program, copied
    # with the padding of the boxes that hang over src's edge, into a larger dst (3-D: the
    # first dimension whole).
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    t = src_desc.load([pid_m * BM, pid_n * BN])
    dst_desc.store([pid_m * BM, pid_n * BN], t + src_desc.shape[0])


@triton.jit
def host_desc_matmul(a_desc, b_desc, c_desc, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc)


@triton.jit
def dot_split_epilogue(a, b, c, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # The split epilogue on an MMA accumulator (no descriptors): reshape, permute, split; the
    # halves stored side by side, the second doubled so that a swapped half shows.
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
        y = tl.load(b + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(x, y, acc)
    h0, h1 = tl.split(tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1)))
    half = tl.arange(0, BN // 2)
    tl.store(c + rm[:, None] * BN + half[None, :], h0)
    tl.store(c + rm[:, None] * BN + (BN // 2 + half)[None, :], h1 * 2)
