"""Block pointers and tensor descriptors (our own kernels, for tests/heldout/CASES.md)."""
import triton
import triton.language as tl


@triton.jit
def _scaled_tile(p, scale):
    # a block pointer passed to a helper, loaded with a check on the first dimension only
    t = tl.load(p, boundary_check=(0,), padding_option="zero")
    return t * scale


@triton.jit
def tiled_row_sums(src, dst, sums, n_rows, n_cols, stride_r, stride_c, scale,
                   ROWS: tl.constexpr, COLS: tl.constexpr, ROW_MAJOR: tl.constexpr):
    # each program owns ROWS rows; walk across the columns COLS at a time
    r0 = tl.program_id(0) * ROWS
    if ROW_MAJOR:
        inp = tl.make_block_ptr(src, shape=(n_rows, n_cols), strides=(stride_r, stride_c),
                                offsets=(r0, 0), block_shape=(ROWS, COLS), order=(1, 0))
    else:
        inp = tl.make_block_ptr(src, (n_rows, n_cols), (stride_r, stride_c), (r0, 0), (ROWS, COLS), (0, 1))
    out = tl.make_block_ptr(base=dst, shape=[n_rows, n_cols], strides=[stride_r, stride_c],
                            offsets=[r0, 0], block_shape=[ROWS, COLS], order=[1, 0])
    acc = tl.zeros((ROWS,), dtype=tl.float32)
    for c in range(0, n_cols, COLS):
        x = tl.load(inp, boundary_check=(0, 1), padding_option="zero").to(tl.float32)
        acc += tl.sum(x, axis=1)
        tl.store(out, (x * 2.0).to(out.dtype.element_ty), boundary_check=(1, 0))
        inp = tl.advance(inp, (0, COLS))
        out = out.advance([0, COLS])
    sp = tl.make_block_ptr(sums, (n_rows,), (1,), (r0,), (ROWS,), (0,))
    tl.store(sp, acc * scale, boundary_check=(0,))


@triton.jit
def nan_padding(src, dst, n, BLOCK: tl.constexpr):
    # a window that starts before the tensor: negative offsets are masked too
    pid = tl.program_id(0)
    p = tl.make_block_ptr(src, (n,), (1,), (pid * BLOCK - BLOCK // 2,), (BLOCK,), (0,))
    x = tl.load(p, boundary_check=(0,), padding_option="nan")
    q = tl.make_block_ptr(dst, (2 * n,), (1,), (pid * BLOCK,), (BLOCK,), (0,))
    tl.store(q, tl.where(x != x, -1.0, x), boundary_check=(0,))


@triton.jit
def helper_tiles(src, dst, n_rows, n_cols, ROWS: tl.constexpr, COLS: tl.constexpr):
    pid = tl.program_id(0)
    p = tl.make_block_ptr(src, (n_rows, n_cols), (n_cols, 1), (pid * ROWS, 0), (ROWS, COLS), (1, 0))
    q = tl.make_block_ptr(dst, (n_rows, n_cols), (n_cols, 1), (pid * ROWS, 0), (ROWS, COLS), (1, 0))
    v = _scaled_tile(p, 3.0)
    tl.store(q, v, boundary_check=(0, 1))


@triton.jit
def descriptor_copy(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr, NAN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    if NAN:
        d_in = tl.make_tensor_descriptor(src, shape=[M, N], strides=[N, 1], block_shape=[BM, BN],
                                         padding_option="nan")
    else:
        d_in = tl.make_tensor_descriptor(src, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    d_out = tl.make_tensor_descriptor(dst, shape=[M + 8, N + 8], strides=[N + 8, 1], block_shape=[BM, BN])
    tile = d_in.load([pid_m * BM, pid_n * BN])
    d_out.store([pid_m * BM, pid_n * BN], tile + 1.0)
