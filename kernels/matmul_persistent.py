"""Persistent matmul on tensor descriptors: a fixed number of programs (one per SM) walk the
output tiles in grouped order (GROUP_M tile rows at a time, for L2 reuse), each tile a K loop
of `desc.load`s feeding `tl.dot`, the result written with `desc.store`. B is given as
[N, K] (K contiguous) and used transposed, as Hopper's fastest layouts want it.
`WARP_SPECIALIZE` is passed to `tl.range` on the tile loop (Triton splits producer and
consumer warps there; Trident accepts it)."""
import triton
import triton.language as tl


@triton.jit
def matmul_persistent_kernel(a, b, c, M, N, K,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    da = tl.make_tensor_descriptor(a, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    db = tl.make_tensor_descriptor(b, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    dc = tl.make_tensor_descriptor(c, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    k_steps = tl.cdiv(K, BLOCK_K)
    group_tiles = GROUP_M * tiles_n
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, NUM_SMS, flatten=True,
                         warp_specialize=WARP_SPECIALIZE):
        first_m = (tile // group_tiles) * GROUP_M
        rows = min(tiles_m - first_m, GROUP_M)
        pm = first_m + (tile % group_tiles) % rows
        pn = (tile % group_tiles) // rows
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(k_steps):
            x = da.load([pm * BLOCK_M, k * BLOCK_K])
            y = db.load([pn * BLOCK_N, k * BLOCK_K])
            acc = tl.dot(x, y.T, acc)
        dc.store([pm * BLOCK_M, pn * BLOCK_N], acc.to(c.dtype.element_ty))
