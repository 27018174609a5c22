#!/usr/bin/env python3
"""Trident through its Python package on torch CUDA tensors (issue 15's GPU check).

Run by `scripts/gpu-check` as `python3 -m trident scripts/gpu_package_check.py [--quick]`, so
that `import triton` in the kernel files is Trident (the unchanged-program mode) while torch is
the real one. Needs the `trident` package installed (a wheel built on a machine with Rust:
`cd python && maturin build --release`, then `pip install --no-deps target/wheels/trident-*.whl`
on the GPU machine, which has numpy).

For each benchmark of `scripts/gpu_check.py` (the same kernels, shapes and configs):
1. correctness: the kernel launched through the package on torch CUDA tensors (in place, on
   torch's current stream) against torch's operator;
2. device time: CUDA events around the launch, L2 flushed before each (median of 50 after 10
   warm-ups) — the same protocol as `trident bench --flush-l2`;
Then the host cost of a launch from Python: 2000 back-to-back launches of a tiny vector add
(host wall clock, one synchronisation at the end), µs per launch.

Prints a markdown table (and the overhead line) on stdout for gpu_check.py to record.
"""
import argparse
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))


def device_time(fn, warmup=10, reps=50):
    import torch
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    return statistics.median(times)


def inline_asm_rows():
    """`tl.inline_asm_elementwise` on the GPU (compiled by Trident, run on CUDA tensors) against
    torch: one result from two int32 arguments, and Triton's packed example — four uint8s of
    one argument in one register beside one register per f32 — with two results."""
    import torch
    import triton
    sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
    from inline_asm_kernels import mad3, widen_and_max

    rows = []
    try:
        n = 100_000
        x = torch.randint(-2**20, 2**20, (n,), dtype=torch.int32, device="cuda")
        y = torch.randint(-2**20, 2**20, (n,), dtype=torch.int32, device="cuda")
        out = torch.full((n,), -1, dtype=torch.int32, device="cuda")
        mad3[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        torch.cuda.synchronize()
        rows.append(("inline asm: mad.lo.s32, one result", bool(torch.equal(out, x * 3 + y))))
    except Exception as e:  # noqa: BLE001
        rows.append((f"inline asm: mad.lo.s32 (FAILED: {str(e).splitlines()[0][:120]})", False))
    try:
        n = 512
        a = torch.randint(0, 256, (n,), dtype=torch.uint8, device="cuda")
        b = torch.randn(n, device="cuda") * 200
        c = torch.full((n,), -7, dtype=torch.int32, device="cuda")
        d = torch.full((n,), float("nan"), device="cuda")
        widen_and_max[(1,)](a, b, c, d, BLOCK=n)
        torch.cuda.synchronize()
        ok = torch.equal(c, a.int()) and torch.equal(d, torch.maximum(a.float(), b))
        rows.append(("inline asm: packed uint8s and two results (pack=4)", bool(ok)))
    except Exception as e:  # noqa: BLE001
        rows.append((f"inline asm: packed (FAILED: {str(e).splitlines()[0][:120]})", False))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    import torch
    import triton  # Trident, under `python -m trident`
    import trident
    import gpu_check
    if triton.jit is not trident.jit:
        print("run me as `python3 -m trident scripts/gpu_package_check.py`", file=sys.stderr)
        return 2
    print("| kernel | max abs error / max abs value | result | Trident (package) µs | rate |")
    print("|---|---:|---|---:|---:|")
    for b in gpu_check.benches(a.quick):
        try:
            mod = gpu_check.load(b["file"])
            kern = getattr(mod, b["kernel"])
            t = gpu_check.make_tensors(b)
            for name, kind, _, _ in b["tensors"]:
                if kind == "empty":
                    t[name].fill_(float("nan"))
            from triton.tools.tensor_descriptor import TensorDescriptor  # Trident's, under `-m trident`
            args = gpu_check.launch_args(b, t, TensorDescriptor) + [v for _, v in b["scalars"]]
            kw = dict(b["consts"])
            fn = lambda: kern[b["grid"]](*args, **kw, num_warps=b["warps"], num_stages=b["stages"])  # noqa: E731
            fn()
            torch.cuda.synchronize()
            out = next(n for n, kind, _, _ in b["tensors"] if kind == "empty")
            got, want = t[out].double(), b["torch"](t).double()
            rel = float((got - want).abs().max() / want.abs().max().clamp_min(1e-30))
            ok = rel < 1e-2 and bool(torch.isfinite(got).all())
            us = device_time(fn)
            print(f"| {b['name']} | {rel:.2e} | {'ok' if ok else 'FAIL'} | {us:.1f} | {gpu_check.rate(b, us)} |",
                  flush=True)
        except Exception as e:  # noqa: BLE001 - report the row and go on
            print(f"| {b['name']} | FAILED: {str(e).splitlines()[0][:150] if str(e) else type(e).__name__} | | | |",
                  flush=True)
    for name, ok in inline_asm_rows():
        print(f"| {name} | | {'ok' if ok else 'FAIL'} | | |", flush=True)
    print()
    print(f"Host time per launch from Python (2000 launches of a 1024-element vector add on CUDA tensors, "
          f"queued, one synchronisation): {gpu_check.launch_overhead():.2f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
