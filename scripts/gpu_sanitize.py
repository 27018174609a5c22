#!/usr/bin/env python3
"""Sanitize mode's cost (issue 14): each bundled benchmark kernel timed plain and with
`--sanitize` by `trident bench` (CUDA events, median of 50 launches, L2 flushed), and the ratio.
The goal is at most 2x kernel time.

    scripts/gpu-sanitize [--trident target/release/trident] [--quick] [--out bench/SANITIZE.md]
    scripts/gpu-sanitize --emu [--trident ...]    # no GPU: the emulator's modelled time, small shapes

On a GPU it uses the benchmark list of scripts/gpu_check.py (needs torch there only for the
shapes); `--emu` runs small shapes on the PTX emulator and labels the numbers as the emulator's
model, not a measurement of hardware.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

DT = {"torch.float32": "f32", "torch.float16": "f16", "f32": "f32", "f16": "f16"}


def emu_benches():
    """Small shapes the emulator runs in seconds (same kernels and configs as the GPU list)."""
    n = 1 << 16
    out = [dict(name=f"vector_add f32 n=2^16", file="kernels/vector_add.py", kernel="add_kernel", grid=(n // 1024,),
                warps=4, stages=3, tensors=[("x", "randn", "f32", (n,)), ("y", "randn", "f32", (n,)),
                                            ("out", "empty", "f32", (n,))],
                scalars=[("n_elements", n)], consts=[("BLOCK", 1024)])]
    M, N = 64, 1024
    out.append(dict(name=f"softmax f32 {M}x{N}", file="kernels/softmax.py", kernel="softmax_kernel", grid=(M,),
                    warps=8, stages=3, tensors=[("x", "randn", "f32", (M, N)), ("y", "empty", "f32", (M, N))],
                    scalars=[("x_row_stride", N), ("y_row_stride", N), ("n_cols", N)], consts=[("BLOCK", N)]))
    M, N = 64, 1024
    out.append(dict(name=f"layernorm fwd f16 {M}x{N}", file="kernels/layernorm.py", kernel="layernorm_fwd", grid=(M,),
                    warps=8, stages=3,
                    tensors=[("x", "randn", "f16", (M, N)), ("y", "empty", "f16", (M, N)), ("w", "randn", "f16", (N,)),
                             ("b", "randn", "f16", (N,)), ("mean", "empty", "f32", (M,)), ("rstd", "empty", "f32", (M,))],
                    scalars=[("stride", N), ("N", N), ("eps", 1e-5)], consts=[("BLOCK_N", N)]))
    Z, H, S, D = 1, 2, 256, 64
    strides = [H * S * D, S * D, D, 1]
    scal = [("sm_scale", D ** -0.5)]
    for t in "qkvo":
        dims = ["z", "h", "n" if t in "kv" else "m", "d"]
        scal += [(f"stride_{t}{d}", st) for d, st in zip(dims, strides)]
    scal += [("H", H), ("N_CTX", S)]
    out.append(dict(name=f"attention fwd f16 Z{Z} H{H} S{S} D{D} causal", file="kernels/flash_attention.py",
                    kernel="attn_fwd", grid=(S // 128, Z * H), warps=8, stages=2,
                    tensors=[(n, "randn", "f16", (Z, H, S, D)) for n in "qkv"] + [("o", "empty", "f16", (Z, H, S, D))],
                    scalars=scal, consts=[("BLOCK_M", 128), ("BLOCK_N", 64), ("HEAD_DIM", D), ("IS_CAUSAL", True)]))
    S = 256
    out.append(dict(name=f"matmul f16 {S}x{S}x{S}", file="kernels/matmul.py", kernel="matmul_kernel",
                    grid=((S // 128) ** 2,), warps=8, stages=3,
                    tensors=[("a", "randn", "f16", (S, S)), ("b", "randn", "f16", (S, S)), ("c", "empty", "f16", (S, S))],
                    scalars=[("M", S), ("N", S), ("K", S), ("stride_am", S), ("stride_ak", 1), ("stride_bk", S),
                             ("stride_bn", 1), ("stride_cm", S), ("stride_cn", 1)],
                    consts=[("BLOCK_M", 128), ("BLOCK_N", 128), ("BLOCK_K", 32), ("GROUP_M", 8)]))
    return out


def bench(trident, b, backend, sanitize):
    words = [trident, "bench", "--json", "--backend", backend, f"{b['file']}::{b['kernel']}",
             "--grid", ",".join(map(str, b["grid"])), "--num-warps", str(b["warps"]), "--num-stages", str(b["stages"])]
    if backend == "cuda":
        words += ["--flush-l2", "--warmup", "10", "--reps", "50"]
    else:
        words += ["--warmup", "0", "--reps", "1"]
    if sanitize:
        words.append("--sanitize")
    for name, kind, dt, shape in b["tensors"]:
        words.append(f"{name}={kind}:{DT[str(dt)]}:{'x'.join(map(str, shape))}")
    for name, v in b["scalars"] + b["consts"]:
        words.append(f"{name}={v}")
    p = subprocess.run(words, cwd=ROOT, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["failed"])[0][:160]
    return json.loads(p.stdout.strip().splitlines()[-1])["median_us"], None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trident", default=os.path.join(ROOT, "target/release/trident"))
    ap.add_argument("--quick", action="store_true", help="the smaller GPU shapes")
    ap.add_argument("--emu", action="store_true", help="the PTX emulator's modelled time, small shapes")
    ap.add_argument("--out", help="also write the table (markdown) here")
    a = ap.parse_args()
    if a.emu:
        backend, benches = "emu", emu_benches()
        what = "PTX emulator, modelled time (the emulator's timing model, not a measurement of hardware)"
    else:
        import gpu_check
        backend, benches = "cuda", gpu_check.benches(a.quick)
        import torch
        what = f"{torch.cuda.get_device_name(0)}, CUDA events, median of 50 launches, L2 flushed"
    lines = [f"Sanitize mode's cost, {datetime.date.today()}: {what}.", "",
             "| kernel | plain (us) | sanitized (us) | ratio |", "|---|---:|---:|---:|"]
    worst = 0.0
    failed = False
    for b in benches:
        plain, e1 = bench(a.trident, b, backend, False)
        san, e2 = bench(a.trident, b, backend, True)
        if plain is None or san is None:
            failed = True
            lines.append(f"| {b['name']} | {plain if plain is not None else e1} | {san if san is not None else e2} | — |")
        else:
            r = san / plain
            worst = max(worst, r)
            lines.append(f"| {b['name']} | {plain:.1f} | {san:.1f} | {r:.2f}x |")
        print(lines[-1], flush=True)
    lines += ["", f"Worst ratio: {worst:.2f}x (goal: at most 2x)."]
    print("\n".join(lines))
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
