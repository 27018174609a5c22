"""Regenerates the Triton-compiled PTX used by the emulator's conformance tests.

Run with the Triton venv (no GPU needed):
    ~/.cache/trident-oracle/bin/python crates/emu/tests/data/gen_triton_ptx.py

Each kernel is compiled for sm_80 (GPUTarget("cuda", 80, 32)) and sm_90; the PTX
text is written next to this script as NAME.ptx and NAME.sm90.ptx, with launch.txt
(threads and dynamic shared bytes per kernel) and VERSION.txt (the Triton version).
The kernels are written for these tests (small, with the features the emulator
must handle: vector loads, reductions via shfl, cp.async pipelines, ldmatrix, mma).
"""
import os
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget

HERE = os.path.dirname(os.path.abspath(__file__))


@triton.jit
def vadd(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    keep = idx < n
    x = tl.load(a_ptr + idx, mask=keep)
    y = tl.load(b_ptr + idx, mask=keep)
    tl.store(out_ptr + idx, x + y, mask=keep)


@triton.jit
def row_softmax(x_ptr, y_ptr, stride, ncols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < ncols
    v = tl.load(x_ptr + row * stride + cols, mask=ok, other=-float("inf"))
    v = v - tl.max(v, axis=0)
    e = tl.exp(v)
    s = tl.sum(e, axis=0)
    tl.store(y_ptr + row * stride + cols, e / s, mask=ok)


@triton.jit
def layernorm(x_ptr, w_ptr, b_ptr, y_ptr, stride, ncols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < ncols
    x = tl.load(x_ptr + row * stride + cols, mask=ok, other=0.0).to(tl.float32)
    mu = tl.sum(x, axis=0) / ncols
    d = tl.where(ok, x - mu, 0.0)
    var = tl.sum(d * d, axis=0) / ncols
    r = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=ok)
    b = tl.load(b_ptr + cols, mask=ok)
    y = d * r * w + b
    tl.store(y_ptr + row * stride + cols, y.to(tl.float16), mask=ok)


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    pa = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    pb = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kr = K - k * BK
        a = tl.load(pa, mask=rk[None, :] < kr, other=0.0)
        b = tl.load(pb, mask=rk[:, None] < kr, other=0.0)
        acc += tl.dot(a, b)
        pa += BK * sak
        pb += BK * sbk
    pc = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    ok = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(pc, acc.to(tl.float16), mask=ok)


@triton.jit
def attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, seqlen, scale,
             D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    # One (batch*head) slice per program_id(1); rows [pm*BM, pm*BM+BM) of Q.
    pm = tl.program_id(0)
    bh = tl.program_id(1)
    base = bh * seqlen * D
    rm = pm * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + base + rm[:, None] * D + rd[None, :])
    m_i = tl.full((BM,), -float("inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    for start in range(0, seqlen, BN):
        rn = start + tl.arange(0, BN)
        k = tl.load(k_ptr + base + rn[None, :] * D + rd[:, None])
        s = tl.dot(q, k) * scale
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + rn[:, None] * D + rd[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(o_ptr + base + rm[:, None] * D + rd[None, :], acc.to(tl.float16))


def div16(*idx):
    return {(i,): [["tt.divisibility", 16]] for i in idx}


KERNELS = [
    # name, fn, signature, constexprs, attrs, options
    ("vadd", vadd, {"a_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
     {"BLOCK": 256}, div16(0, 1, 2), {"num_warps": 4}),
    ("softmax", row_softmax, {"x_ptr": "*fp32", "y_ptr": "*fp32", "stride": "i32", "ncols": "i32", "BLOCK": "constexpr"},
     {"BLOCK": 128}, div16(0, 1, 2), {"num_warps": 4}),
    ("layernorm", layernorm, {"x_ptr": "*fp16", "w_ptr": "*fp32", "b_ptr": "*fp32", "y_ptr": "*fp16", "stride": "i32",
                              "ncols": "i32", "eps": "fp32", "BLOCK": "constexpr"},
     {"BLOCK": 256}, div16(0, 1, 2, 3, 4), {"num_warps": 4}),
    ("matmul", matmul, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
                        "sam": "i32", "sak": "i32", "sbk": "i32", "sbn": "i32", "scm": "i32", "scn": "i32",
                        "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"},
     {"BM": 64, "BN": 64, "BK": 32, "sak": 1, "sbn": 1, "scn": 1}, div16(0, 1, 2, 3, 4, 5, 6, 8, 10),
     {"num_warps": 4, "num_stages": 3}),
    ("attn_fwd", attn_fwd, {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp16", "seqlen": "i32",
                            "scale": "fp32", "D": "constexpr", "BM": "constexpr", "BN": "constexpr"},
     {"D": 32, "BM": 32, "BN": 32}, div16(0, 1, 2, 3, 4), {"num_warps": 4, "num_stages": 2}),
]


def main():
    meta = []
    # sm_80 (NAME.ptx) and sm_90 (NAME.sm90.ptx; Triton's sm_90 matmul uses wgmma,
    # which the emulator rejects as unsupported).
    for arch, suffix in [(80, ""), (90, ".sm90")]:
        target = GPUTarget("cuda", arch, 32)
        for name, fn, sig, consts, attrs, opts in KERNELS:
            src = triton.compiler.ASTSource(fn, sig, consts, attrs)
            k = triton.compile(src, target=target, options=opts)
            ptx = k.asm["ptx"]
            with open(os.path.join(HERE, name + suffix + ".ptx"), "w") as f:
                f.write(ptx)
            meta.append(f"{name}{suffix} threads={32 * k.metadata.num_warps} shared={k.metadata.shared}")
            print(meta[-1])
    with open(os.path.join(HERE, "VERSION.txt"), "w") as f:
        f.write(f"triton {triton.__version__}, targets sm_80 and sm_90 (GPUTarget('cuda', 80|90, 32))\n")
    with open(os.path.join(HERE, "launch.txt"), "w") as f:
        f.write("\n".join(meta) + "\n")


if __name__ == "__main__":
    main()
