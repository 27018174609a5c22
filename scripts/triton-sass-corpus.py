#!/usr/bin/env python3
"""Triton's half of the SASS toolkit's corpus (issue 10): every case of Trident's test catalog
compiled ahead of time by Triton itself, for sm_80 and sm_90a, written as cubins.

usage: scripts/triton-sass-corpus.py OUT_DIR [--list FILE] [--filter TEXT] [--arch 80,90]

Needs a Python with triton (3.x; 3.9.0 was used) and torch, e.g.
~/.cache/trident-conformance/bin/python; no GPU: `triton.compile` is given a GPUTarget, and
Triton assembles with the ptxas it bundles. The cases are the catalog's
(`testkit-oracle list`, run through cargo unless --list names a file holding its output): the
same kernel files (kernels/*.py), the same constexprs, the same scalar values and tensor dtypes,
the case's --num-warps (else Triton's default, 4). Each case is specialized exactly as Triton's
JIT would specialize that launch (its own binder: pointers and integers divisible by 16 get
`tt.divisibility`; pointers are taken 16-byte aligned), so the cubins are what `kernel[grid](...)`
would build on an A100 / H100.

Writes OUT_DIR/NNN.CASE.sm_80.cubin and .sm_90a.cubin (identical cubins once, under the first
case that made them) and OUT_DIR/manifest.tsv (file, cases, kernel, num_warps). Then:

    TRIDENT_TRITON_SASS_CORPUS=OUT_DIR cargo test -p trident-sass --test triton_corpus -- --nocapture
"""
import argparse
import hashlib
import importlib.util
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

DTYPES = {
    "f32": "float32",
    "f16": "float16",
    "bf16": "bfloat16",
    "f64": "float64",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "bool": "bool",
    "i1": "bool",
}


def catalog(list_file):
    """(name, kernel file, kernel, num_warps, [NAME=VALUE]) for every catalog case."""
    if list_file:
        text = open(list_file).read()
    else:
        text = subprocess.run(
            ["cargo", "run", "-q", "-p", "trident-testkit", "--bin", "testkit-oracle", "list"],
            cwd=ROOT, check=True, capture_output=True, text=True).stdout
    cases = []
    for line in text.splitlines():
        if not line.strip():
            continue
        name, cmd = line.split("\t", 1)
        words = cmd.split()
        file, kernel = words[0].split("::")
        num_warps, args, i = None, [], 1
        while i < len(words):
            if words[i] == "--grid":
                i += 2
            elif words[i] == "--num-warps":
                num_warps = int(words[i + 1])
                i += 2
            else:
                args.append(words[i])
                i += 1
        cases.append((name, file, kernel, num_warps, args))
    return cases


def value(text, torch, MockTensor):
    """A catalog argument value as the launch would pass it: a tensor spec `GEN:DTYPE:SHAPE`
    becomes a MockTensor of that dtype (its data_ptr is 0: 16-byte aligned), numbers numbers."""
    parts = text.split(":")
    if len(parts) >= 2 and parts[1] in DTYPES:
        shape = [int(s) for s in parts[2].split("x")] if len(parts) > 2 and parts[2] else [1]
        return MockTensor(getattr(torch, DTYPES[parts[1]]), shape)
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    if re.fullmatch(r"[-+]?\d+", text):
        return int(text)
    return float(text)


def load_kernel(path, name, cache={}):
    if path not in cache:
        spec = importlib.util.spec_from_file_location("trident_corpus_" + os.path.basename(path)[:-3], path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        cache[path] = mod
    fn = getattr(cache[path], name)
    # An @triton.autotune kernel: the catalog gives its constexprs; compile the function under it.
    while not hasattr(fn, "params") and hasattr(fn, "fn"):
        fn = fn.fn
    return fn


def compile_case(fn, args, num_warps, capability):
    """What Triton's JIT does for `fn[grid](*args, num_warps=...)` on a device of `capability`,
    without the device: its binder specializes the arguments, `_pack_args` turns that into the
    signature, constexprs and attributes, `triton.compile` builds."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import create_function_from_signature

    target = GPUTarget("cuda", capability, 32)
    backend = make_backend(target)
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    kwargs = {} if num_warps is None else {"num_warps": num_warps}
    bound, specialization, options = binder(**args, **kwargs)
    options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, specialization, options)
    src = ASTSource(fn, signature, constexprs, attrs)
    return triton.compile(src, target=target, options=options.__dict__)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="output directory for the cubins")
    ap.add_argument("--list", help="a file holding `testkit-oracle list`'s output (default: run it)")
    ap.add_argument("--filter", default="", help="only cases whose name contains this")
    ap.add_argument("--arch", default="80,90", help="compute capabilities (90 builds sm_90a)")
    a = ap.parse_args()

    # Triton 3.9's default, said explicitly (it warns when unset).
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    import torch
    import triton
    from triton.runtime.jit import MockTensor

    os.makedirs(a.out, exist_ok=True)
    caps = [int(c) for c in a.arch.split(",")]
    seen = {}
    manifest = []
    failed = []
    n = 0
    for name, file, kernel, num_warps, words in catalog(a.list):
        if a.filter not in name:
            continue
        fn = load_kernel(os.path.join(ROOT, file), kernel)
        args = {}
        for w in words:
            k, v = w.split("=", 1)
            args[k] = value(v, torch, MockTensor)
        for cap in caps:
            arch = "sm_90a" if cap == 90 else f"sm_{cap}"
            try:
                compiled = compile_case(fn, args, num_warps, cap)
            except Exception as e:  # report and go on: one case must not hide the others
                failed.append(f"{name} {arch}: {type(e).__name__}: {e}")
                continue
            cubin = compiled.asm["cubin"]
            digest = hashlib.sha256(cubin).hexdigest()
            if digest in seen:
                manifest[seen[digest]][1].append(name)
                continue
            stem = re.sub(r"[^A-Za-z0-9]", "_", name)
            path = f"{n:03}.{stem}.{arch}.cubin"
            with open(os.path.join(a.out, path), "wb") as f:
                f.write(cubin)
            seen[digest] = len(manifest)
            manifest.append((path, [name], kernel, compiled.metadata.num_warps))
            n += 1
    with open(os.path.join(a.out, "manifest.tsv"), "w") as f:
        f.write(f"# triton {triton.__version__}\n")
        for path, names, kernel, warps in manifest:
            f.write(f"{path}\t{','.join(names)}\t{kernel}\t{warps}\n")
    print(f"{len(manifest)} cubins in {a.out} (triton {triton.__version__})")
    for e in failed:
        print("failed:", e, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
