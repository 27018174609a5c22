"""Settles GPU-specific semantics the interpreter must choose, by running compiled
Triton on a real GPU (needs torch + triton + CUDA; not used by the test suite).

    python3 crates/interp/tools/gpu_probe.py > gpu_probe.txt

Each probe prints `name: result`. The results, and the decisions taken from them,
are recorded in crates/interp/README.md ("Checked on a GPU").
"""
import sys

import numpy as np
import torch
import triton
import triton.language as tl

dev = "cuda"


def show(name, value):
    print(f"{name}: {value}", flush=True)


def t(values, dtype):
    return torch.tensor(values, dtype=dtype, device=dev)


@triton.jit
def shift_k(x, y, o1, o2, N: tl.constexpr):
    i = tl.arange(0, N)
    a = tl.load(x + i)
    b = tl.load(y + i)
    tl.store(o1 + i, a >> b)
    tl.store(o2 + i, a << b)


def probe_shifts():
    for dt in (torch.int32, torch.uint32):
        if dt == torch.int32:
            x = t([-8, -8, 1, -1, 5, -8, 3, 7], dt)
        else:
            x = torch.tensor(np.array([2**31, 2**32 - 1, 1, 8, 5, 8, 3, 7], dtype=np.uint32).view(np.int32),
                             device=dev).view(torch.uint32)
        y = t([1, 40, 31, 32, 0, 33, 64, 100], dt)
        o1, o2 = torch.empty_like(x), torch.empty_like(x)
        shift_k[(1,)](x, y, o1, o2, N=8)
        show(f"shifts {dt} x", x.cpu().tolist())
        show(f"shifts {dt} y", y.cpu().tolist())
        show(f"shifts {dt} x>>y", o1.cpu().tolist())
        show(f"shifts {dt} x<<y", o2.cpu().tolist())


@triton.jit
def cvt_k(x, o_i32, o_u8, o_i8, o_u32, o_i1, N: tl.constexpr):
    i = tl.arange(0, N)
    a = tl.load(x + i)
    tl.store(o_i32 + i, a.to(tl.int32))
    tl.store(o_u8 + i, a.to(tl.uint8))
    tl.store(o_i8 + i, a.to(tl.int8))
    tl.store(o_u32 + i, a.to(tl.uint32))
    tl.store(o_i1 + i, a.to(tl.int1).to(tl.int32))


def probe_float_to_int():
    x = t([3e9, -3e9, float("nan"), -2.7, 2.7, float("inf"), 300.0, -5.0], torch.float32)
    outs = [torch.empty(8, dtype=d, device=dev) for d in (torch.int32, torch.uint8, torch.int8, torch.uint32, torch.int32)]
    cvt_k[(1,)](x, *outs, N=8)
    show("f32->int x", x.cpu().tolist())
    for name, o in zip(("i32", "u8", "i8", "u32", "i1"), outs):
        show(f"f32->{name}", o.cpu().tolist())


@triton.jit
def div_k(x, y, o1, o2, N: tl.constexpr):
    i = tl.arange(0, N)
    a = tl.load(x + i)
    b = tl.load(y + i)
    tl.store(o1 + i, a // b)
    tl.store(o2 + i, a % b)


def probe_div():
    x = t([-7, 7, -7, 7, 1, -1, 0, -2147483648], torch.int32)
    y = t([2, -2, -2, 2, 0, 0, 0, -1], torch.int32)
    o1, o2 = torch.empty_like(x), torch.empty_like(x)
    div_k[(1,)](x, y, o1, o2, N=8)
    show("idiv x", x.cpu().tolist())
    show("idiv y", y.cpu().tolist())
    show("idiv x//y", o1.cpu().tolist())
    show("idiv x%y", o2.cpu().tolist())


@triton.jit
def narrow_k(x, o_h, o_hz, o_e4, o_e5, N: tl.constexpr):
    i = tl.arange(0, N)
    a = tl.load(x + i)
    tl.store(o_h + i, a.to(tl.float16))
    tl.store(o_hz + i, a.to(tl.float16, fp_downcast_rounding="rtz"))
    tl.store(o_e4 + i, a.to(tl.float8e4nv))
    tl.store(o_e5 + i, a.to(tl.float8e5))


def probe_narrowing():
    x = t([1e6, -1e6, 1000.0, -1000.0, 1.0625, 60000.0, float("nan"), 1.0 + 0.75 * 2**-10], torch.float32)
    oh = torch.empty(8, dtype=torch.float16, device=dev)
    ohz = torch.empty(8, dtype=torch.float16, device=dev)
    o4 = torch.empty(8, dtype=torch.float8_e4m3fn, device=dev)
    o5 = torch.empty(8, dtype=torch.float8_e5m2, device=dev)
    narrow_k[(1,)](x, oh, ohz, o4, o5, N=8)
    show("narrow x", x.cpu().tolist())
    show("narrow f16 rtne", oh.float().cpu().tolist())
    show("narrow f16 rtz", ohz.float().cpu().tolist())
    show("narrow e4m3", o4.float().cpu().tolist())
    show("narrow e5m2", o5.float().cpu().tolist())


@triton.jit
def misc_k(x, y, omax, omaxnan, ohi, N: tl.constexpr):
    i = tl.arange(0, N)
    a = tl.load(x + i)
    b = tl.load(y + i)
    tl.store(omax + i, tl.maximum(a, b))
    tl.store(omaxnan + i, tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL))
    ai = a.to(tl.int32)
    tl.store(ohi + i, tl.umulhi(ai * 0 - 1, ai * 0 - 1))


def probe_misc():
    nan = float("nan")
    x = t([nan, 1.0, 2.0, -0.0], torch.float32)
    y = t([1.0, nan, 3.0, 0.0], torch.float32)
    om, omn = torch.empty_like(x), torch.empty_like(x)
    ohi = torch.empty(4, dtype=torch.int32, device=dev)
    misc_k[(1,)](x, y, om, omn, ohi, N=4)
    show("maximum", om.cpu().tolist())
    show("maximum propagate", omn.cpu().tolist())
    show("umulhi(-1,-1) i32", ohi.cpu().tolist())


@triton.jit
def sum_k(x, o, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(o, tl.sum(tl.load(x + i), axis=0))


@triton.jit
def cumsum_k(x, o, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(o + i, tl.cumsum(tl.load(x + i), axis=0))


def pairwise(v):
    v = list(np.asarray(v, dtype=np.float32))
    while len(v) > 1:
        h = (len(v) + 1) // 2
        n = len(v)
        for i in range(n - h):
            v[i] = np.float32(v[i] + v[i + h])
        v = v[:h]
    return v[0]


def probe_reductions():
    rng = np.random.default_rng(1)
    for n in (32, 256, 1024, 4096):
        for warps in (1, 4, 8):
            same_pair = same_seq = 0
            trials = 20
            for _ in range(trials):
                xv = rng.standard_normal(n).astype(np.float32) * 100
                x = torch.tensor(xv, device=dev)
                o = torch.empty(1, dtype=torch.float32, device=dev)
                sum_k[(1,)](x, o, N=n, num_warps=warps)
                g = o.cpu().numpy()[0]
                seq = np.float32(0)
                for v in xv:
                    seq = np.float32(seq + v)
                same_pair += int(g == pairwise(xv))
                same_seq += int(g == seq)
            show(f"tl.sum f32 n={n} warps={warps}: equal to pairwise", f"{same_pair}/{trials}, to sequential {same_seq}/{trials}")
    for n in (256, 1024):
        xv = rng.standard_normal(n).astype(np.float32)
        x = torch.tensor(xv, device=dev)
        o = torch.empty(n, dtype=torch.float32, device=dev)
        cumsum_k[(1,)](x, o, N=n, num_warps=4)
        seq = np.cumsum(xv, dtype=np.float32)
        g = o.cpu().numpy()
        show(f"tl.cumsum f32 n={n}: elements equal to sequential", f"{int((g == seq).sum())}/{n}, max abs diff {float(np.abs(g - seq).max())}")


@triton.jit
def dot_k(a, b, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, F16ACC: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    x = tl.load(a + rm[:, None] * K + rk[None, :])
    y = tl.load(b + rk[:, None] * N + rn[None, :])
    if F16ACC:
        z = tl.dot(x, y, out_dtype=tl.float16)
    else:
        z = tl.dot(x, y)
    tl.store(c + rm[:, None] * N + rn[None, :], z)


def probe_dot():
    rng = np.random.default_rng(2)
    M = N = 64
    for K in (32, 256):
        av = rng.standard_normal((M, K)).astype(np.float16)
        bv = rng.standard_normal((K, N)).astype(np.float16)
        ref = (av.astype(np.float64) @ bv.astype(np.float64))
        ref32 = (av.astype(np.float32) @ bv.astype(np.float32))
        a = torch.tensor(av, device=dev)
        b = torch.tensor(bv, device=dev)
        c = torch.empty((M, N), dtype=torch.float16, device=dev)
        dot_k[(1,)](a, b, c, M=M, N=N, K=K, F16ACC=True)
        g = c.cpu().numpy()
        show(f"dot f16 out_dtype=f16 K={K}: equal to f16(exact)", f"{int((g == ref.astype(np.float16)).sum())}/{M * N}, "
             f"equal to f16(f32 sum) {int((g == ref32.astype(np.float16)).sum())}/{M * N}, "
             f"max |diff| vs exact {float(np.abs(g.astype(np.float64) - ref).max())}")
        c32 = torch.empty((M, N), dtype=torch.float32, device=dev)
        dot_k[(1,)](a, b, c32, M=M, N=N, K=K, F16ACC=False)
        g = c32.cpu().numpy().astype(np.float64)
        show(f"dot f16 acc=f32 K={K}: max rel err vs exact", float((np.abs(g - ref) / np.abs(ref).clip(1e-3)).max()))


@triton.jit
def unary_k(x, y, oexp, odiv, osqrt, N: tl.constexpr):
    i = tl.arange(0, N)
    a = tl.load(x + i)
    b = tl.load(y + i)
    tl.store(oexp + i, tl.exp(a))
    tl.store(odiv + i, a / b)
    tl.store(osqrt + i, tl.sqrt(tl.abs(a)))


def ulps(g, want):
    gi = g.view(np.int32).astype(np.int64)
    wi = want.view(np.int32).astype(np.int64)
    return np.abs(gi - wi)


def probe_math():
    rng = np.random.default_rng(3)
    n = 4096
    xv = (rng.standard_normal(n) * 10).astype(np.float32)
    yv = (rng.standard_normal(n) * 10).astype(np.float32)
    x, y = torch.tensor(xv, device=dev), torch.tensor(yv, device=dev)
    oe, od, osq = torch.empty_like(x), torch.empty_like(x), torch.empty_like(x)
    unary_k[(1,)](x, y, oe, od, osq, N=n)
    e = oe.cpu().numpy()
    want = np.exp(xv.astype(np.float64)).astype(np.float32)
    d = ulps(e, want)
    show("tl.exp f32 vs correctly rounded", f"equal {int((d == 0).sum())}/{n}, max ulps {int(d.max())}")
    dv = od.cpu().numpy()
    wd = (xv / yv).astype(np.float32)
    d = ulps(dv, wd)
    show("f32 a/b vs IEEE", f"equal {int((d == 0).sum())}/{n}, max ulps {int(d.max())}")
    s = osq.cpu().numpy()
    ws = np.sqrt(np.abs(xv))
    d = ulps(s, ws)
    show("tl.sqrt f32 vs IEEE", f"equal {int((d == 0).sum())}/{n}, max ulps {int(d.max())}")


@triton.jit
def print_k(x, N: tl.constexpr):
    i = tl.arange(0, N)
    v = tl.load(x + i)
    tl.device_print("v", v)
    tl.device_print("pid", tl.program_id(0), hex=True)


def probe_print():
    x = t([1.5, -2.0, 0.25, 3.0], torch.float32)
    print("---- device_print begin", flush=True)
    print_k[(2,)](x, N=4, num_warps=1)
    torch.cuda.synchronize()
    sys.stdout.flush()
    print("---- device_print end", flush=True)


if __name__ == "__main__":
    show("triton", triton.__version__)
    show("gpu", torch.cuda.get_device_name())
    for p in (probe_shifts, probe_float_to_int, probe_div, probe_narrowing, probe_misc, probe_reductions, probe_dot,
              probe_math, probe_print):
        try:
            p()
        except Exception as e:  # keep going: one failing probe should not hide the others
            show(p.__name__ + " FAILED", repr(e)[:300])
