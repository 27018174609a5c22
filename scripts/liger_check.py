#!/usr/bin/env python3
"""Liger-Kernel's own ops (its PyPI package, unchanged) on CPU tensors, run on Trident through
``python -m trident`` — and, for comparison, on Triton's interpreter (``TRITON_INTERPRET=1``,
real Triton) — each checked against a float64 torch reference, forward and backward.

    python -m trident scripts/liger_check.py            # Trident (interpreter)
    TRIDENT_BACKEND=emu python -m trident scripts/liger_check.py
    TRITON_INTERPRET=1 python scripts/liger_check.py    # Triton's interpreter

Needs torch and liger-kernel (not in CI). Prints one line per op: the worst error of the
outputs and gradients relative to the reference's largest magnitude, or the error raised.
"""

import sys
import traceback

import torch
import torch.nn.functional as F


def rel(got, ref):
    return ((got.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


def run(x_list, fn, ref_fn):
    """Outputs and gradients of fn and of ref_fn (float64 copies) for the same upstream grad."""
    xs = [x.clone().requires_grad_(x.is_floating_point()) for x in x_list]
    out = fn(*xs)
    out = out[0] if isinstance(out, tuple) else out
    g = torch.randn_like(out)
    g_ref = g.double()  # before the backward: Liger's in-place backward overwrites the upstream grad
    out.backward(g)
    rs = [x.detach().double().requires_grad_(x.is_floating_point()) for x in x_list]
    ref = ref_fn(*rs)
    ref.backward(g_ref)
    errs = [rel(out.detach(), ref.detach())]
    errs += [rel(a.grad, b.grad) for a, b in zip(xs, rs) if a.grad is not None and b.grad is not None]
    return max(errs)


def rms_norm():
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    x, w = torch.randn(8, 300), torch.randn(300)
    return run([x, w], lambda x, w: LigerRMSNormFunction.apply(x, w, 1e-6),
               lambda x, w: x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w)


def layer_norm():
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction
    x, w, b = torch.randn(8, 300), torch.randn(300), torch.randn(300)
    return run([x, w, b], lambda x, w, b: LigerLayerNormFunction.apply(x, w, b, 1e-5),
               lambda x, w, b: F.layer_norm(x, (300,), w, b, 1e-5))


def swiglu():
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction
    a, b = torch.randn(4, 6, 130), torch.randn(4, 6, 130)
    return run([a, b], lambda a, b: LigerSiLUMulFunction.apply(a, b), lambda a, b: F.silu(a) * b)


def geglu():
    from liger_kernel.ops.geglu import LigerGELUMulFunction
    a, b = torch.randn(4, 6, 130), torch.randn(4, 6, 130)
    return run([a, b], lambda a, b: LigerGELUMulFunction.apply(a, b),
               lambda a, b: F.gelu(a, approximate="tanh") * b)


def rope():
    from liger_kernel.ops.rope import LigerRopeFunction
    bsz, heads, seq, dim = 2, 4, 10, 64
    q, k = torch.randn(bsz, heads, seq, dim), torch.randn(bsz, heads, seq, dim)
    pos = torch.arange(seq, dtype=torch.float32)[:, None] / (10000 ** (torch.arange(0, dim, 2) / dim))
    emb = torch.cat([pos, pos], -1)
    cos, sin = emb.cos()[None], emb.sin()[None]

    def ref(q, k):
        def rot(t):
            return torch.cat([-t[..., dim // 2:], t[..., :dim // 2]], -1)
        c, s = cos.double()[:, None], sin.double()[:, None]
        return torch.cat([q * c + rot(q) * s, k * c + rot(k) * s], 1)

    def fn(q, k):
        qo, ko = LigerRopeFunction.apply(q, k, cos, sin)
        return torch.cat([qo, ko], 1)

    return run([q, k], fn, ref)


def cross_entropy():
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
    logits, target = torch.randn(16, 1000), torch.randint(0, 1000, (16,))

    def fn(x):
        return LigerCrossEntropyFunction.apply(x, target, None)

    return run([logits], fn, lambda x: F.cross_entropy(x, target))


def main():
    torch.manual_seed(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    import triton
    print(f"triton = {triton.__name__} {getattr(triton, '__version__', '?')}")
    failed = 0
    for op in (rms_norm, layer_norm, swiglu, geglu, rope, cross_entropy):
        try:
            err = op()
            ok = err < 1e-5
            failed += not ok
            print(f"{op.__name__:<14} {'ok ' if ok else 'BAD'} max relative error {err:.2e}")
        except Exception as e:  # report and go on: the point is the table
            failed += 1
            last = traceback.extract_tb(e.__traceback__)[-1]
            print(f"{op.__name__:<14} ERR {type(e).__name__}: {str(e).splitlines()[0][:150]} "
                  f"({last.filename.split('site-packages/')[-1]}:{last.lineno})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
