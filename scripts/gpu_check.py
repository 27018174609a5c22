#!/usr/bin/env python3
"""GPU check: correctness of every bundled kernel on the GPU, then Trident vs Triton vs torch.

Meant for a machine with an NVIDIA GPU that has only the prebuilt `trident` release
binary and Python with torch and Triton (no Rust toolchain):

    scripts/gpu-check [--trident target/release/trident] [--out bench/RESULTS.md] [--quick]

1. `trident demo --backend cuda`: every catalog case of every kernel in kernels/ on the
   GPU, checked against its f64 reference (the same check the interpreter passes).
2. Benchmarks: each kernel below is timed three ways on the same shapes:
   Trident (`trident bench --backend cuda`, CUDA events, median of repetitions),
   Triton running the very same kernel file (`triton.testing.do_bench`, median), and
   torch's own operator (cuBLAS for matmul, SDPA for attention).
3. Where the `trident` Python package is installed (a wheel carried from a machine with Rust:
   `cd python && maturin build --release`; `pip install --no-deps target/wheels/trident-*.whl`):
   the same kernels through the package on torch CUDA tensors (`scripts/gpu_package_check.py`,
   run under `python3 -m trident` so the kernel files' `import triton` is Trident), checked
   against torch and timed with CUDA events, and the host time per launch from Python next to
   Triton's (`--skip-package` leaves it out).
A markdown table is printed and written to the results file with date and device.
"""
import argparse, datetime, importlib.util, json, math, os, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], os.path.join(ROOT, path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cdiv(a, b):
    return (a + b - 1) // b


def benches(quick):
    import torch
    import torch.nn.functional as F
    f16 = torch.float16
    out = []

    n = 1 << (24 if quick else 26)
    out.append(dict(
        name=f"vector_add f32 n=2^{int(math.log2(n))}", file="kernels/vector_add.py", kernel="add_kernel",
        grid=(cdiv(n, 1024),), warps=4, stages=3,
        tensors=[("x", "randn", torch.float32, (n,)), ("y", "randn", torch.float32, (n,)), ("out", "empty", torch.float32, (n,))],
        scalars=[("n_elements", n)], consts=[("BLOCK", 1024)],
        bytes=3 * 4 * n, flops=None, torch=lambda t: t["x"] + t["y"]))

    M, N = (4096, 4096) if quick else (8192, 8192)
    out.append(dict(
        name=f"softmax f32 {M}x{N}", file="kernels/softmax.py", kernel="softmax_kernel",
        grid=(M,), warps=8, stages=3,
        tensors=[("x", "randn", torch.float32, (M, N)), ("y", "empty", torch.float32, (M, N))],
        scalars=[("x_row_stride", N), ("y_row_stride", N), ("n_cols", N)], consts=[("BLOCK", N)],
        bytes=2 * 4 * M * N, flops=None, torch=lambda t: torch.softmax(t["x"], dim=1)))

    M, N = (4096, 4096) if quick else (8192, 4096)
    out.append(dict(
        name=f"layernorm fwd f16 {M}x{N}", file="kernels/layernorm.py", kernel="layernorm_fwd",
        grid=(M,), warps=8, stages=3,
        tensors=[("x", "randn", f16, (M, N)), ("y", "empty", f16, (M, N)), ("w", "randn", f16, (N,)),
                 ("b", "randn", f16, (N,)), ("mean", "empty", torch.float32, (M,)), ("rstd", "empty", torch.float32, (M,))],
        scalars=[("stride", N), ("N", N), ("eps", 1e-5)], consts=[("BLOCK_N", N)],
        bytes=2 * 2 * M * N, flops=None,
        torch=lambda t: F.layer_norm(t["x"], (t["x"].shape[1],), t["w"], t["b"], 1e-5)))

    for S in ([2048] if quick else [2048, 4096]):
        M = N = K = S
        out.append(dict(
            name=f"matmul f16 {M}x{N}x{K}", file="kernels/matmul.py", kernel="matmul_kernel",
            grid=(cdiv(M, 128) * cdiv(N, 128),), warps=8, stages=3,
            tensors=[("a", "randn", f16, (M, K)), ("b", "randn", f16, (K, N)), ("c", "empty", f16, (M, N))],
            scalars=[("M", M), ("N", N), ("K", K), ("stride_am", K), ("stride_ak", 1), ("stride_bk", N), ("stride_bn", 1),
                     ("stride_cm", N), ("stride_cn", 1)],
            consts=[("BLOCK_M", 128), ("BLOCK_N", 128), ("BLOCK_K", 32), ("GROUP_M", 8)],
            bytes=None, flops=2 * M * N * K, torch=lambda t: t["a"] @ t["b"]))

    # Descriptors at 128x64x64 (rows of 128 bytes: one TMA box per tile) and at the pointer
    # matmul's best 128x128x64 (B's 256-byte rows: two boxes per tile).
    # With warp specialization (a producer warp issues the copies) at the largest size: the
    # same kernel with WARP_SPECIALIZE=True (Triton 3.9 ignores it on Hopper).
    sizes = [2048] if quick else [2048, 4096]
    for S in sizes:
        for bn, warps, ws in ((64, 4, False), (128, 8, False), (128, 8, True)):
            if ws and S != sizes[-1]:
                continue
            M = N = K = S
            out.append(dict(
                name=f"matmul f16 {M}x{N}x{K} descriptors 128x{bn}x64{' warp-specialized' if ws else ''}",
                file="kernels/matmul_descriptor.py",
                kernel="matmul_desc_kernel", grid=(cdiv(M, 128), cdiv(N, bn)), warps=warps, stages=3,
                tensors=[("a", "randn", f16, (M, K)), ("b", "randn", f16, (K, N)), ("c", "empty", f16, (M, N))],
                scalars=[("M", M), ("N", N), ("K", K)],
                consts=[("BLOCK_M", 128), ("BLOCK_N", bn), ("BLOCK_K", 64), ("WARP_SPECIALIZE", ws)],
                bytes=None, flops=2 * M * N * K, torch=lambda t: t["a"] @ t["b"]))

    # Persistent over descriptors (B given as [N, K], used as b.T): NUM_SMS programs. And twice
    # as many with 2 stages (96 KB of shared memory instead of 131: two CTAs an SM, as the 2-D
    # descriptor kernel gets at 3 stages): on an H200 (2026-11-29) the persistent kernel ran at
    # 0.71x the 2-D one's rate, the same loop but one CTA an SM, so nothing hides its epilogue
    # and prologue — this row tests that guess.
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for S in ([2048] if quick else [4096, 8192]):
        for ws, per_sm in ((False, 1), (True, 1), (False, 2)):
            M = N = K = S
            programs = sms * per_sm
            out.append(dict(
                name=f"matmul f16 {M}x{N}x{K} persistent (B as [N,K]) 128x128x64{' warp-specialized' if ws else ''}"
                     f"{', 2 stages, 2 programs/SM' if per_sm == 2 else ''}",
                file="kernels/matmul_persistent.py",
                kernel="matmul_persistent_kernel", grid=(programs,), warps=8, stages=3 if per_sm == 1 else 2,
                tensors=[("a", "randn", f16, (M, K)), ("b", "randn", f16, (N, K)), ("c", "empty", f16, (M, N))],
                scalars=[("M", M), ("N", N), ("K", K)],
                consts=[("BLOCK_M", 128), ("BLOCK_N", 128), ("BLOCK_K", 64), ("GROUP_M", 8), ("NUM_SMS", programs),
                        ("WARP_SPECIALIZE", ws)],
                bytes=None, flops=2 * M * N * K, torch=lambda t: t["a"] @ t["b"].T))

    # Host tensor descriptors (Triton's `TensorDescriptor` arguments, as its persistent-matmul
    # tutorial passes them): the plain tile kernel, and the tutorial's form (B as [N, K],
    # `tl.range(flatten=True)` over NUM_SMS programs, the split epilogue: C's box is 128x64).
    # `descs` maps a tensor to the argument it is passed as and its box.
    for S in ([2048] if quick else [4096]):
        M = N = K = S
        out.append(dict(
            name=f"matmul f16 {M}x{N}x{K} host descriptors 128x128x64",
            file="kernels/matmul_host_desc.py", kernel="matmul_host_desc_kernel",
            grid=(cdiv(M, 128), cdiv(N, 128)), warps=8, stages=3,
            tensors=[("a", "randn", f16, (M, K)), ("b", "randn", f16, (K, N)), ("c", "empty", f16, (M, N))],
            descs={"a": ("a_desc", [128, 64]), "b": ("b_desc", [64, 128]), "c": ("c_desc", [128, 128])},
            scalars=[], consts=[("BLOCK_M", 128), ("BLOCK_N", 128), ("BLOCK_K", 64)],
            bytes=None, flops=2 * M * N * K, torch=lambda t: t["a"] @ t["b"]))
    for S in ([2048] if quick else [4096, 8192]):
        for ws in (False, True):
            M = N = K = S
            out.append(dict(
                name=f"matmul f16 {M}x{N}x{K} persistent host descriptors, split epilogue"
                     f"{' warp-specialized' if ws else ''}",
                file="kernels/matmul_host_desc.py", kernel="matmul_host_desc_persistent_kernel",
                grid=(sms,), warps=8, stages=3,
                tensors=[("a", "randn", f16, (M, K)), ("b", "randn", f16, (N, K)), ("c", "empty", f16, (M, N))],
                descs={"a": ("a_desc", [128, 64]), "b": ("b_desc", [128, 64]), "c": ("c_desc", [128, 64])},
                scalars=[("M", M), ("N", N), ("K", K)],
                consts=[("BLOCK_M", 128), ("BLOCK_N", 128), ("BLOCK_K", 64), ("GROUP_M", 8),
                        ("EPILOGUE_SUBTILE", True), ("NUM_SMS", sms), ("WARP_SPECIALIZE", ws)],
                bytes=None, flops=2 * M * N * K, torch=lambda t: t["a"] @ t["b"].T))

    # Attention over descriptors (Triton's Hopper tutorial's shape: K used as k.T).
    def attn_desc(D, causal, ws, bn, stages, suffix="", env=None, kernel="attn_fwd_desc"):
        Z, H = 4, 16
        S = 1024 if quick else 4096
        shape = (Z, H, S, D)
        return dict(
            name=f"attention fwd f16 Z{Z} H{H} S{S} D{D}{' causal' if causal else ''} descriptors"
                 f"{' warp-specialized' if ws else ''}{suffix}",
            file="kernels/flash_attention_fa3.py" if kernel.endswith("_fa3") else "kernels/flash_attention_desc.py",
            kernel=kernel, grid=(cdiv(S, 128), Z * H), warps=8,
            stages=stages, tensors=[(n, "randn", f16, shape) for n in "qkv"] + [("o", "empty", f16, shape)],
            scalars=[("sm_scale", D ** -0.5), ("Z", Z), ("H", H), ("N_CTX", S)],
            consts=[("BLOCK_M", 128), ("BLOCK_N", bn), ("HEAD_DIM", D), ("IS_CAUSAL", causal)]
            + ([] if kernel.endswith("_fa3") else [("WARP_SPECIALIZE", ws)]),
            env=env or {},
            bytes=None, flops=4 * Z * H * S * S * D * (0.5 if causal else 1.0),
            torch=(lambda c: lambda t: F.scaled_dot_product_attention(t["q"], t["k"], t["v"], is_causal=c))(causal))

    for D, causal, ws in ((64, False, False), (64, True, False), (128, False, False), (128, True, False),
                          (64, False, True), (128, True, True)):
        out.append(attn_desc(D, causal, ws, 64 if D == 64 else 128, 2))
    # The producer warpgroup that gives its registers to the consumers (TRIDENT_SETMAXNREG=1,
    # opt-in: the SASS emulator disagrees with itself across shapes, bench/STATIC.md), at D128
    # with 128-key blocks, which spills without it.
    for smr in (False, True):
        out.append(attn_desc(128, False, True, 128, 2, " 128-key blocks" + (" setmaxnreg" if smr else ""),
                             {"TRIDENT_SETMAXNREG": "1"} if smr else None))
    # FA3's ping-pong (gpu-pingpong): warp-specialized, 3 slots (2 give the producer no lead:
    # bench/PROFILE.md), with the turns and without (TRIDENT_PINGPONG=0).
    for D, causal in ((64, False), (128, True)):
        for pingpong in (True, False):
            out.append(attn_desc(D, causal, True, 64, 3, " 3 stages" + (" ping-pong" if pingpong else " no ping-pong"),
                                 None if pingpong else {"TRIDENT_PINGPONG": "0"}))

    # FA3's order inside a warpgroup (`attn_fwd_desc_fa3`: Q·K_jᵀ, then P·V of block j-1, then
    # block j's softmax under it; `wgmma.wait_group 1`): 136 registers at D64 (the plain
    # kernel 117), so one CTA an SM where the plain kernel has two.
    for D, causal in ((64, False), (64, True), (128, False), (128, True)):
        for stages in (2, 3):
            # 64-key blocks at D128 too: 155 registers (128-key blocks: 223, and 3 stages do not fit).
            out.append(attn_desc(D, causal, False, 64, stages, f" FA3 order {stages} stages",
                                 kernel="attn_fwd_desc_fa3"))

    Z, H, D = 4, 16, 64
    # The plain attention kernel, also with its loop split at the masks (TRIDENT_SPLIT_LOOPS=1,
    # opt-in: the emulators disagree and sm_90a takes 20 more registers; crates/opt/README.md).
    for causal, split in ((False, False), (True, False), (False, True), (True, True)):
        S = 1024 if quick else 4096
        shape = (Z, H, S, D)
        strides = [H * S * D, S * D, D, 1]
        scal = [("sm_scale", D ** -0.5)]
        for t in "qkvo":
            dims = ["z", "h", "n" if t in "kv" else "m", "d"]
            scal += [(f"stride_{t}{d}", s) for d, s in zip(dims, strides)]
        scal += [("H", H), ("N_CTX", S)]
        out.append(dict(
            name=f"attention fwd f16 Z{Z} H{H} S{S} D{D}{' causal' if causal else ''}{' split loops' if split else ''}",
            file="kernels/flash_attention.py",
            kernel="attn_fwd", grid=(cdiv(S, 128), Z * H), warps=8, stages=2,
            env={"TRIDENT_SPLIT_LOOPS": "1"} if split else {},
            tensors=[(n, "randn", f16, shape) for n in "qkv"] + [("o", "empty", f16, shape)],
            scalars=scal, consts=[("BLOCK_M", 128), ("BLOCK_N", 64), ("HEAD_DIM", D), ("IS_CAUSAL", causal)],
            bytes=None, flops=4 * Z * H * S * S * D * (0.5 if causal else 1.0),
            torch=(lambda c: lambda t: F.scaled_dot_product_attention(t["q"], t["k"], t["v"], is_causal=c))(causal)))
    return out


DT = {"torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16"}


def arg_word(b, name, value):
    """`NAME=VALUE` for tensor `name` of bench `b`: a host descriptor over it (`desc[BOX]:VALUE`,
    under the argument name `descs` gives) or the tensor itself."""
    if name in b.get("descs", {}):
        arg, block = b["descs"][name]
        return f"{arg}=desc[{'x'.join(map(str, block))}]:{value}"
    return f"{name}={value}"


def launch_args(b, t, descriptor):
    """The positional tensor arguments of bench `b` from torch tensors `t`: host descriptors
    (`descriptor`: Triton's or Trident's `TensorDescriptor` class) where `descs` says."""
    out = []
    for n, *_ in b["tensors"]:
        if n in b.get("descs", {}):
            out.append(descriptor.from_tensor(t[n], b["descs"][n][1]))
        else:
            out.append(t[n])
    return out


def trident_bench(trident, b):
    words = [trident, "bench", "--json", "--flush-l2", "--warmup", "10", "--reps", "50", "--backend", "cuda",
             f"{b['file']}::{b['kernel']}", "--grid", ",".join(map(str, b["grid"])),
             "--num-warps", str(b["warps"]), "--num-stages", str(b["stages"])]
    for name, kind, dt, shape in b["tensors"]:
        words.append(arg_word(b, name, f"{kind}:{DT[str(dt)]}:{'x'.join(map(str, shape))}"))
    for name, v in b["scalars"] + b["consts"]:
        words.append(f"{name}={v}")
    if b["flops"]:
        words += ["--flops", str(int(b["flops"]))]
    if b["bytes"]:
        words += ["--bytes", str(int(b["bytes"]))]
    env = dict(os.environ, **b.get("env", {}))
    try:
        # A launch that never returns (a pipeline that deadlocks on the device) must not take
        # the rest of the table with it.
        p = subprocess.run(words, cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    except subprocess.TimeoutExpired:
        return None, "no result within 60 s (hung?)"
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["failed"])[0][:120]
    return json.loads(p.stdout.strip().splitlines()[-1])["median_us"], None


def make_tensors(b):
    import torch
    t = {}
    g = torch.Generator(device="cuda").manual_seed(0)
    for name, kind, dt, shape in b["tensors"]:
        if kind == "randn":
            t[name] = torch.randn(shape, device="cuda", dtype=dt, generator=g)
        else:
            t[name] = torch.empty(shape, device="cuda", dtype=dt)
    return t


def check_shapes(trident):
    """Runs every benchmark kernel (its `--quick` shapes) once with `trident run --backend cuda` on
    inputs written from torch, and compares the output with torch's operator. The demo's catalog
    cases are small; this checks the benchmark configurations themselves (e.g. the 128x128 matmul
    tile on 8 warps and attention's 128-row blocks, which run on Hopper's warpgroup MMA)."""
    import tempfile
    import numpy as np
    lines = []
    for b in benches(True):
        t = make_tensors(b)
        d = tempfile.mkdtemp(prefix="trident-check-")
        words = [trident, "run", "--backend", "cuda", f"{b['file']}::{b['kernel']}",
                 "--grid", ",".join(map(str, b["grid"])), "--num-warps", str(b["warps"]),
                 "--num-stages", str(b["stages"])]
        out = None
        for name, kind, dt, shape in b["tensors"]:
            if kind == "empty":
                words.append(arg_word(b, name, f"empty:{DT[str(dt)]}:{'x'.join(map(str, shape))}"))
                out = out or b.get("descs", {}).get(name, (name,))[0]
            else:
                path = os.path.join(d, name + ".npy")
                np.save(path, t[name].cpu().numpy())
                words.append(arg_word(b, name, f"@{path}"))
        words += [f"{name}={v}" for name, v in b["scalars"] + b["consts"]]
        words += ["--save", f"{out}={os.path.join(d, 'out.npy')}"]
        try:
            p = subprocess.run(words, cwd=ROOT, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            lines.append(f"| {b['name']} | FAILED: no result within 60 s (hung?) | | |")
            print(lines[-1], flush=True)
            continue
        if p.returncode != 0:
            lines.append(f"| {b['name']} | FAILED to run: {(p.stderr.strip().splitlines() or ['?'])[-1][:150]} | | |")
            continue
        got = np.load(os.path.join(d, "out.npy")).astype(np.float64)
        want = b["torch"](t).float().cpu().numpy().astype(np.float64)
        err = float(np.max(np.abs(got - want)))
        scale = float(np.max(np.abs(want)))
        rel = err / max(scale, 1e-30)
        # A wrong layout or a race gives errors of the order of the values; rounding of f16
        # outputs and f32 accumulation order give well under 1% of the largest value.
        verdict = "ok" if rel < 1e-2 and np.isfinite(got).all() else "FAIL"
        lines.append(f"| {b['name']} | {err:.3e} | {rel:.2e} | {verdict} |")
        print(lines[-1], flush=True)
    return lines


def triton_bench(b):
    import torch
    import triton
    # In-kernel tensor descriptors need Triton's scratch allocator.
    if hasattr(triton, "set_allocator"):
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    mod = load(b["file"])
    kern = getattr(mod, b["kernel"])
    t = make_tensors(b)
    from triton.tools.tensor_descriptor import TensorDescriptor
    args = launch_args(b, t, TensorDescriptor) + [v for _, v in b["scalars"]]
    kw = dict(b["consts"])
    fn = lambda: kern[b["grid"]](*args, **kw, num_warps=b["warps"], num_stages=b["stages"])
    fn()
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3


def torch_bench(b):
    import triton
    t = make_tensors(b)
    return triton.testing.do_bench(lambda: b["torch"](t), warmup=25, rep=100, return_mode="median") * 1e3


def launch_overhead(n_launches=2000):
    """µs of host time per launch from Python of a tiny vector add on CUDA tensors (2000 launches
    queued, one synchronisation): with Triton here, with Trident's package when
    scripts/gpu_package_check.py calls it under `python -m trident` (`import triton` is Trident
    there, so the kernel file loads as Trident's)."""
    import time
    import torch
    mod = load("kernels/vector_add.py")
    x, y = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    out = torch.empty_like(x)
    k = mod.add_kernel[(1,)]
    k(x, y, out, 1024, BLOCK=1024)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n_launches):
        k(x, y, out, 1024, BLOCK=1024)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / n_launches * 1e6


def package_check(quick):
    """The package rows (scripts/gpu_package_check.py in a child under `python3 -m trident`)."""
    if importlib.util.find_spec("trident") is None:
        return ["Trident's Python package is not installed here: the package check did not run."]
    words = [sys.executable, "-m", "trident", os.path.join(ROOT, "scripts/gpu_package_check.py")]
    # Streamed, row by row, so that a session cut short by its time limit keeps the rows it got.
    p = subprocess.Popen(words + (["--quick"] if quick else []), cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    got = []
    for line in p.stdout:
        print(line, end="", flush=True)
        got.append(line.rstrip("\n"))
    p.wait()
    lines = ["Through the Python package (`scripts/gpu_package_check.py`: torch CUDA tensors in place, CUDA "
             "events, L2 flushed, median of 50):", ""]
    lines += [l for l in got if l.startswith("|") or l.startswith("Host time")] or \
        [f"did not run: {' '.join(got)[-300:]}"]
    try:
        lines.append(f"Triton, same protocol: {launch_overhead():.2f} µs per launch")
    except Exception as e:  # noqa: BLE001 - report and go on
        lines.append(f"Triton's launch overhead: not measured ({str(e).splitlines()[0][:100]})")
    return lines


def rate(b, us):
    if us is None:
        return "-"
    if b["flops"]:
        return f"{b['flops'] / (us * 1e-6) / 1e12:.1f} TFLOP/s"
    return f"{b['bytes'] / (us * 1e-6) / 1e9:.0f} GB/s"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trident", default=os.path.join(ROOT, "target/release/trident"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/RESULTS.md"))
    ap.add_argument("--quick", action="store_true", help="smaller shapes")
    ap.add_argument("--skip-demo", action="store_true")
    ap.add_argument("--skip-shapes", action="store_true", help="skip the benchmark-shape correctness check")
    ap.add_argument("--skip-bench", action="store_true", help="correctness only")
    ap.add_argument("--skip-package", action="store_true", help="skip the Python package's check")
    a = ap.parse_args()
    import torch
    dev = torch.cuda.get_device_name(0)
    lines = []
    if not a.skip_demo:
        p = subprocess.run([a.trident, "demo", "--backend", "cuda"], cwd=ROOT, capture_output=True, text=True, timeout=900)
        print(p.stdout, p.stderr, sep="\n")
        summary = [l for l in p.stdout.splitlines() if "passed" in l]
        lines.append(f"Correctness (`trident demo --backend cuda`, every catalog case vs its f64 reference): "
                     f"{summary[-1] if summary else 'did not finish: ' + p.stderr.strip()[-200:]}")
        lines.append("")
    if not a.skip_shapes:
        lines.append("Benchmark configurations at the `--quick` shapes, `trident run --backend cuda` against torch:")
        lines.append("")
        lines.append("| kernel | max abs error | / max abs value | result |")
        lines.append("|---|---:|---:|---|")
        lines += check_shapes(a.trident)
        lines.append("")
    import triton
    lines.append("| kernel | Trident µs | Triton µs | torch µs | Trident | Triton | torch | Trident/Triton time |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    for b in ([] if a.skip_bench else benches(a.quick)):
        tr, err = trident_bench(a.trident, b)
        try:
            tt = triton_bench(b)
        except Exception as e:  # noqa: BLE001 - report and go on
            tt, err2 = None, str(e).splitlines()[0][:100]
            print(f"triton failed on {b['name']}: {err2}", file=sys.stderr)
        to = torch_bench(b)
        f = lambda v: "-" if v is None else f"{v:.1f}"
        ratio = "-" if tr is None or tt is None else f"{tr / tt:.2f}"
        row = f"| {b['name']} | {f(tr)} | {f(tt)} | {f(to)} | {rate(b, tr)} | {rate(b, tt)} | {rate(b, to)} | {ratio} |"
        if err:
            row += f" Trident failed: {err}"
        print(row, flush=True)
        lines.append(row)
    if not a.skip_package:
        lines.append("")
        lines += package_check(a.quick)
    header = [f"## {datetime.date.today().isoformat()} — {dev}", "",
              f"torch {torch.__version__}, Triton {triton.__version__}; times are medians (Trident: CUDA events over 50 "
              f"launches after 10 warm-ups, L2 flushed before each (`--flush-l2`); Triton and torch: "
              f"`triton.testing.do_bench`, which flushes L2 too). Same kernel source for Trident and Triton, same block sizes, num_warps and num_stages.", ""]
    text = "\n".join(header + lines) + "\n"
    print(text)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    prev = open(a.out).read() if os.path.exists(a.out) else "# GPU results\n\nWritten by `scripts/gpu-check`.\n\n"
    with open(a.out, "w") as fh:
        fh.write(prev.rstrip() + "\n\n" + text)


if __name__ == "__main__":
    main()
