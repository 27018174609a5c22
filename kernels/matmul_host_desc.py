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
