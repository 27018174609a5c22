"""C = A @ B with tensor descriptors (`tl.make_tensor_descriptor`, `desc.load`): on sm_90
Trident copies both tiles with the tensor-memory accelerator into a ring of swizzled shared
slots; a tile whose rows span more than 128 bytes (B at 128x128x64 f16) is copied as several
128-byte-wide boxes. With `WARP_SPECIALIZE` (passed to `tl.range` on the K loop, as Triton's
tutorials do) a producer warp issues the copies and the kernel's warps only compute (sm_90a).
`scripts/gpu-check` times it beside the pointer matmul of `matmul.py`."""
import triton
import triton.language as tl


@triton.jit
def matmul_desc_kernel(a, b, c, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       WARP_SPECIALIZE: tl.constexpr = False):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    da = tl.make_tensor_descriptor(a, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    db = tl.make_tensor_descriptor(b, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_K), warp_specialize=WARP_SPECIALIZE):
        acc = tl.dot(da.load([pid_m * BLOCK_M, k * BLOCK_K]), db.load([k * BLOCK_K, pid_n * BLOCK_N]), acc)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c + rows[:, None] * N + cols[None, :], acc.to(c.dtype.element_ty),
             mask=(rows[:, None] < M) & (cols[None, :] < N))
