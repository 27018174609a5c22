"""Module-level host code around kernels: platform queries, config filters written as plain
functions, and a helper whose `tl.constexpr` parameters receive tensors (our own kernels)."""
import torch
import triton
import triton.language as tl


def on_amd():
    return triton.runtime.driver.active.get_current_target().backend == "hip"


def big_gpu():
    major, minor = torch.cuda.get_device_capability()
    return major >= 9


def fits(conf):
    rows = conf.kwargs["ROWS"]
    if rows * conf.kwargs["COLS"] > 64 * 64 and conf.num_warps < 8:
        return False
    return True


CONFIGS = [
    triton.Config({"ROWS": r, "COLS": c}, num_warps=w, num_stages=s)
    for r in ([16] if on_amd() else [16, 32, 64])
    for c in [32, 64, 128]
    for w in ([4, 8] if big_gpu() else [4])
    for s in [2, 3]
]


@triton.jit
def _scaled_rows(x, rows: tl.constexpr, cols: tl.constexpr, ROWS: tl.constexpr):
    # `rows`/`cols` are annotated constexpr but receive index tensors, as Triton allows for helpers
    return x * (rows[:, None] % 3 + 1).to(x.dtype) + cols[None, :] * 0


@triton.autotune(configs=list(filter(fits, CONFIGS)), key=["M", "N"])
@triton.jit
def row_scale(x_ptr, y_ptr, M, N, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    for c0 in range(0, N, COLS):
        cols = c0 + tl.arange(0, COLS)
        m = (rows[:, None] < M) & (cols[None, :] < N)
        x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=m, other=0.0)
        tl.store(y_ptr + rows[:, None] * N + cols[None, :], _scaled_rows(x, rows, cols, ROWS), mask=m)
