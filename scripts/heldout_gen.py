#!/usr/bin/env python3
"""Writes the expected outputs of our own held-out kernels (tests/heldout/*.py) with Triton's
interpreter, for crates/front/tests/heldout.rs (which needs no oracle).

usage: scripts/heldout_gen.py [--filter TEXT]

Reads the ```cases blocks of tests/heldout/CASES.md (the format of scripts/heldout_check.py,
REPO `local`), generates each case's inputs (numpy, seed 0), runs the kernel on the oracle
(scripts/heldout_oracle.py) and writes tests/heldout/data/ID.txt:
    kernel NAME / grid X Y Z
    in NAME DTYPE SHAPE      then one hex bit pattern per element
    scalar NAME VALUE        (an int, float or bool; constexpr or not is the kernel's business)
    out NAME DTYPE SHAPE RTOL ATOL   then the expected bit patterns
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heldout_check as H  # noqa: E402  (re-executes itself under the oracle's python if needed)

np = H.np
NAMES = {np.dtype(np.float16): "f16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
         np.dtype(np.int8): "i8", np.dtype(np.int16): "i16", np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
         np.dtype(np.uint8): "u8", np.dtype(np.uint16): "u16", np.dtype(np.uint32): "u32",
         np.dtype(np.uint64): "u64", np.dtype(np.bool_): "i1"}


def bits(a, dt):
    a = np.ascontiguousarray(a)
    if dt == "bf16":
        u = (a.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    elif a.dtype == np.bool_:
        return [str(int(x)) for x in a.reshape(-1)]
    else:
        u = a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])
    return [format(int(x), "x") for x in u.reshape(-1)]


def tensor_lines(tag, name, arr, dt, extra=""):
    dt = dt if dt == "bf16" else NAMES[arr.dtype]
    shape = "x".join(str(d) for d in arr.shape) if arr.shape else "1"
    return [f"{tag} {name} {dt} {shape}{extra}"] + bits(arr, dt)


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--filter", default="")
    args = ap.parse_args()
    cases_file = os.path.join(H.ROOT, "tests", "heldout", "CASES.md")
    out_dir = os.path.join(H.ROOT, "tests", "heldout", "data")
    os.makedirs(out_dir, exist_ok=True)
    for c in H.parse_cases(cases_file):
        if not re.search(args.filter, c["id"]):
            continue
        assert c["repo"] == "local", c
        path = os.path.join(H.ROOT, "tests", "heldout", c["target"].split("::")[0])
        kernel = c["target"].split("::")[1]
        with tempfile.TemporaryDirectory() as tmp:
            cargs, dtypes = H.materialize(c["args"], tmp, np.random.default_rng(0))
            saves = []
            for o in c["outs"]:
                saves += ["--save", f"{o}={tmp}/out_{o}.npy"]
            cmd = [os.path.join(H.VENV, "bin", "python"), os.path.join(H.HERE, "heldout_oracle.py"),
                   f"{path}::{kernel}"] + cargs + saves
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"{c['id']}: oracle failed:\n{r.stdout}{r.stderr}")
            lines = [f"kernel {kernel}"]
            grid = [1, 1, 1]
            i = 0
            while i < len(cargs):
                a = cargs[i]
                if a == "--grid":
                    g = [int(x) for x in cargs[i + 1].split(",")]
                    grid = (g + [1, 1])[:3]
                    i += 2
                    continue
                name, _, v = a.partition("=")
                if v.startswith("@"):
                    p = v[1:].rsplit(":", 1)[0] if v.endswith(":bf16") else v[1:]
                    lines += tensor_lines("in", name, np.load(p), dtypes.get(name))
                else:
                    lines.append(f"scalar {name} {v}")
                i += 1
            lines.insert(1, "grid " + " ".join(str(g) for g in grid))
            for o in c["outs"]:
                dt = dtypes.get(o)
                rtol, atol = c["tol"] or H.TOL.get(dt, H.TOL["f32"])
                arr = np.load(f"{tmp}/out_{o}.npy")
                if not np.issubdtype(arr.dtype, np.floating):
                    rtol, atol = 0, 0
                lines += tensor_lines("out", o, arr, dt, f" {rtol} {atol}")
        with open(os.path.join(out_dir, f"{c['id']}.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
        print("wrote", c["id"])


if __name__ == "__main__":
    main()
