"""C = A @ B with host-side tensor descriptors: the caller builds the descriptors
(`TensorDescriptor.from_tensor(a, [BLOCK_M, BLOCK_K])` in Python, `a_desc=desc[128x64]:...` on
the command line) and the kernel only names boxes. Trident passes each descriptor's base,
shape and strides as hidden parameters; on sm_90 the boxes are TMA copies from tensor maps
the runtime encodes at launch, elsewhere masked loads and stores. Same K loop as
`matmul_descriptor.py`, whose descriptors are made in the kernel."""
import triton
import triton.language as tl


@triton.jit
def matmul_host_desc_kernel(a_desc, b_desc, c_desc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                            BLOCK_K: tl.constexpr, WARP_SPECIALIZE: tl.constexpr = False):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    K = a_desc.shape[1]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_K), warp_specialize=WARP_SPECIALIZE):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))


@triton.jit
def _tile_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_M: tl.constexpr):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    return first_pid_m + (tile_id % group_size_m), (tile_id % num_pid_in_group) // group_size_m


@triton.jit
def matmul_host_desc_persistent_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr,
                                       BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                                       EPILOGUE_SUBTILE: tl.constexpr, NUM_SMS: tl.constexpr,
                                       WARP_SPECIALIZE: tl.constexpr):
    """The shape of Triton's persistent-matmul tutorial kernel on host descriptors: NUM_SMS
    programs walk the tiles (grouped along M), B is given N x K (read through `b.T`), and the
    epilogue may store the tile as two halves (c_desc's box is then BLOCK_M x BLOCK_N / 2)."""
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_pid_in_group = GROUP_M * num_pid_n
    for tile_id in tl.range(start_pid, num_pid_m * num_pid_n, NUM_SMS, flatten=True,
                            warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _tile_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_M)
        offs_m = pid_m * BLOCK_M
        offs_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([offs_m, ki * BLOCK_K])
            b = b_desc.load([offs_n, ki * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        if EPILOGUE_SUBTILE:
            halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            acc0, acc1 = tl.split(halves)
            c_desc.store([offs_m, offs_n], acc0.to(c_desc.dtype))
            c_desc.store([offs_m, offs_n + BLOCK_N // 2], acc1.to(c_desc.dtype))
        else:
            c_desc.store([offs_m, offs_n], acc.to(c_desc.dtype))
