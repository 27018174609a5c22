"""Values merged by runtime `if`s when only part of them changes (our own kernels)."""
import triton
import triton.language as tl


@triton.jit
def tuple_partly_changed(x_ptr, y_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    a = tl.load(x_ptr + offs)
    t = (a, a * 2.0, 3)
    if pid == 0:
        t = (a, a + 1.0, 3)  # first and last elements stay what they were
    tl.store(y_ptr + pid * BLOCK + offs, t[0] + t[1] + t[2])


@triton.jit
def block_ptr_chosen_at_run_time(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid % 2 == 0:
        p = tl.make_block_ptr(x_ptr, (n,), (1,), (pid * BLOCK,), (BLOCK,), (0,))
    else:
        p = tl.make_block_ptr(x_ptr, (n,), (1,), (pid * BLOCK + 3,), (BLOCK,), (0,))
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    i = 0
    while i < 3:
        acc += tl.load(p, boundary_check=(0,))
        p = p.advance((1,))
        i += 1
    q = tl.make_block_ptr(y_ptr, (n,), (1,), (pid * BLOCK,), (BLOCK,), (0,))
    tl.store(q, acc, boundary_check=(0,))
