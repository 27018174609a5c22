"""Second round of GPU probes: models of the GPU's rounding for tl.exp/tl.log, f16-accumulating
and tf32 dots, checked against compiled Triton (needs torch + triton + CUDA).

    python3 crates/interp/tools/gpu_probe2.py > gpu_probe2.txt
"""
import numpy as np
import torch
import triton
import triton.language as tl

dev = "cuda"


def show(name, value):
    print(f"{name}: {value}", flush=True)


@triton.jit
def math_k(x, oexp, olog, osin, oexp2, olog2, N: tl.constexpr):
    i = tl.arange(0, N)
    a = tl.load(x + i)
    tl.store(oexp + i, tl.exp(a))
    tl.store(olog + i, tl.log(tl.abs(a)))
    tl.store(osin + i, tl.sin(a))
    tl.store(oexp2 + i, tl.exp2(a))
    tl.store(olog2 + i, tl.log2(tl.abs(a)))


def ulps(g, want):
    return np.abs(g.view(np.int32).astype(np.int64) - want.astype(np.float32).view(np.int32).astype(np.int64))


def report(name, g, model):
    d = ulps(g, model)
    show(name, f"equal {int((d == 0).sum())}/{len(g)}, <=1ulp {int((d <= 1).sum())}, max ulps {int(d.max())}")


def probe_math():
    rng = np.random.default_rng(3)
    n = 4096
    xv = (rng.standard_normal(n) * 10).astype(np.float32)
    x = torch.tensor(xv, device=dev)
    outs = [torch.empty_like(x) for _ in range(5)]
    math_k[(1,)](x, *outs, N=n)
    e, lg, s, e2, l2 = [o.cpu().numpy() for o in outs]
    x64 = xv.astype(np.float64)
    ax = np.abs(xv)
    log2e = np.float32(1.4426950408889634)
    ln2 = np.float32(0.6931471805599453)
    report("exp vs correctly rounded", e, np.exp(x64))
    report("exp vs exp2(f32(x*log2e)) rounded", e, np.exp2((xv * log2e).astype(np.float64)))
    report("log vs correctly rounded", lg, np.log(ax.astype(np.float64)))
    report("log vs f32(f32(log2 x) * ln2)", lg, (np.log2(ax.astype(np.float64)).astype(np.float32) * ln2))
    report("sin vs correctly rounded", s, np.sin(x64))
    report("exp2 vs correctly rounded", e2, np.exp2(x64))
    report("log2 vs correctly rounded", l2, np.log2(ax.astype(np.float64)))


@triton.jit
def dot_k(a, b, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, F16ACC: tl.constexpr, IEEE: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    x = tl.load(a + rm[:, None] * K + rk[None, :])
    y = tl.load(b + rk[:, None] * N + rn[None, :])
    if F16ACC:
        z = tl.dot(x, y, out_dtype=tl.float16)
    elif IEEE:
        z = tl.dot(x, y, input_precision="ieee")
    else:
        z = tl.dot(x, y)
    tl.store(c + rm[:, None] * N + rn[None, :], z)


def chunked_f16(av, bv, chunk):
    """f16 accumulator rounded after every `chunk` of k (products summed exactly within a chunk)."""
    M, K = av.shape
    acc = np.zeros((M, bv.shape[1]), dtype=np.float16)
    for k0 in range(0, K, chunk):
        part = av[:, k0:k0 + chunk].astype(np.float64) @ bv[k0:k0 + chunk].astype(np.float64)
        acc = (acc.astype(np.float64) + part).astype(np.float16)
    return acc


def tf32(v, mode):
    b = v.astype(np.float32).view(np.uint32).astype(np.uint64)
    if mode == "rna":
        b = (b + 0x1000) & ~np.uint64(0x1FFF)
    elif mode == "rne":
        b = (b + 0xFFF + ((b >> 13) & 1)) & ~np.uint64(0x1FFF)
    else:
        b = b & ~np.uint64(0x1FFF)
    return b.astype(np.uint32).view(np.float32)


def probe_dot():
    rng = np.random.default_rng(4)
    M = N = 64
    for K in (32, 256):
        av = rng.standard_normal((M, K)).astype(np.float16)
        bv = rng.standard_normal((K, N)).astype(np.float16)
        a, b = torch.tensor(av, device=dev), torch.tensor(bv, device=dev)
        c = torch.empty((M, N), dtype=torch.float16, device=dev)
        dot_k[(1,)](a, b, c, M=M, N=N, K=K, F16ACC=True, IEEE=False)
        g = c.cpu().numpy()
        for chunk in (1, 8, 16, 32, K):
            show(f"dot f16acc K={K} vs f16 rounding every {chunk} k", f"{int((g == chunked_f16(av, bv, chunk)).sum())}/{M * N}")
    K = 64
    av = rng.standard_normal((M, K)).astype(np.float32)
    bv = rng.standard_normal((K, N)).astype(np.float32)
    a, b = torch.tensor(av, device=dev), torch.tensor(bv, device=dev)
    for ieee in (False, True):
        c = torch.empty((M, N), dtype=torch.float32, device=dev)
        dot_k[(1,)](a, b, c, M=M, N=N, K=K, F16ACC=False, IEEE=ieee)
        g = c.cpu().numpy().astype(np.float64)
        for mode in ("rna", "rne", "trunc", "none"):
            if mode == "none":
                ref = av.astype(np.float64) @ bv.astype(np.float64)
            else:
                ref = tf32(av, mode).astype(np.float64) @ tf32(bv, mode).astype(np.float64)
            show(f"dot f32 ieee={ieee} vs inputs rounded {mode}", f"mean |err| {float(np.abs(g - ref).mean()):.3e}")


if __name__ == "__main__":
    show("triton", triton.__version__)
    for p in (probe_math, probe_dot):
        try:
            p()
        except Exception as e:
            show(p.__name__ + " FAILED", repr(e)[:300])
