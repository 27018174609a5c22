#!/usr/bin/env python3
"""Runs kernels written by other people through `trident run --backend interp` and through
Triton's own interpreter (the oracle), on the same inputs, and compares the outputs.

usage: scripts/heldout_check.py [--cases FILE] [--src DIR] [--filter TEXT] [--bin PATH] [--keep DIR]
                               [--backend interp|emu] [-v]

Cases are read from the ```cases fenced blocks of tests/heldout/SOURCES.md (or --cases FILE),
one per line, fields separated by ` | `:

    ID | REPO | PATH::KERNEL | --grid X[,Y,Z] NAME=VALUE ... | OUT1 OUT2 ... [| rtol,atol]

REPO is `owner/name` (the file is read from SRC/owner__name/PATH; SRC defaults to
/tmp/heldout/src, where the files were saved: other people's code is never committed) or
`local` (PATH is relative to tests/heldout/). VALUE is what `trident run` takes, plus two
generators of this script: `randint:DT:SHAPE:LO:HI` and `arange:DT:SHAPE`. Every generated
tensor is made here once (numpy, seed 0) and passed to both sides as an .npy file, so both
see the same inputs; `empty` is zeros on both sides. OUT names the tensors to compare
after the launch (exactly for integers; floats within rtol/atol by dtype unless given).

Needs the oracle's environment (../shared/tools/setup-oracle): re-executes itself with its python.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
VENV = os.environ.get("TRIDENT_ORACLE_VENV", os.path.expanduser("~/.cache/trident-oracle"))

try:
    import numpy as np
except ImportError:
    py = os.path.join(VENV, "bin", "python")
    if not os.path.exists(py):
        sys.exit(f"heldout_check: no oracle environment at {VENV}")
    os.execv(py, [py, os.path.abspath(sys.argv[0])] + sys.argv[1:])  # the script that was run

DT = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": "bf16", "f8e4m3": "f8e4m3", "f8e5m2": "f8e5m2", "i8": np.int8, "i16": np.int16,
      "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
      "bool": np.bool_, "i1": np.bool_}
ALIASES = {"fp16": "f16", "float16": "f16", "fp32": "f32", "float32": "f32", "fp64": "f64", "float64": "f64",
           "bfloat16": "bf16", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
           "uint16": "u16", "uint32": "u32", "uint64": "u64", "fp8e4nv": "f8e4m3", "fp8e5": "f8e5m2"}
TOL = {"f16": (1e-2, 1e-3), "bf16": (2e-2, 1e-2), "f32": (2e-4, 2e-5), "f64": (1e-9, 1e-12),
       "f8e4m3": (0.13, 1e-3), "f8e5m2": (0.26, 1e-3)}
NARROW = ("bf16", "f8e4m3", "f8e5m2")  # held as f32 in .npy files, passed as @PATH:DTYPE


def fp8_table(dt):
    """The value of every fp8 bit pattern (e4m3fn: no infinities; e5m2: IEEE-like)."""
    b = np.arange(256)
    sign = np.where(b >> 7, -1.0, 1.0)
    if dt == "f8e4m3":
        e, m, bias, mb = (b >> 3) & 0xF, b & 7, 7, 3
        v = np.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * 2.0 ** (e - bias))
        v = np.where((e == 15) & (m == 7), np.nan, v)
    else:
        e, m, bias, mb = (b >> 2) & 0x1F, b & 3, 15, 2
        v = np.where(e == 0, m / 4 * 2.0 ** -14, (1 + m / 4) * 2.0 ** (e - bias))
        v = np.where(e == 31, np.where(m == 0, np.inf, np.nan), v)
    return (sign * v).astype(np.float64)


def fp8_round(a, dt):
    """Rounds to the nearest fp8 value (ties to an even pattern), saturating at the largest finite."""
    t = fp8_table(dt)
    finite = np.isfinite(t)
    codes = np.nonzero(finite)[0]
    vals = t[codes]
    x = np.asarray(a, np.float64).reshape(-1)
    mx = np.nanmax(np.abs(vals))
    x = np.clip(x, -mx, mx)
    d = np.abs(x[:, None] - vals[None, :])
    best = d.min(axis=1, keepdims=True)
    cand = np.where(d == best, codes[None, :], 1 << 20)
    even = np.where(cand % 2 == 0, cand, 1 << 20).min(axis=1)
    pick = np.where(even < (1 << 20), even, cand.min(axis=1))
    return t[pick].reshape(np.shape(a)).astype(np.float32)
KINDS = ("zeros", "ones", "empty", "rand", "randn", "randint", "arange")


def parse_cases(path):
    cases, inside = [], False
    for line in open(path):
        s = line.strip()
        if s.startswith("```"):
            inside = s == "```cases"
            continue
        if not inside or not s or s.startswith("#"):
            continue
        f = [x.strip() for x in s.split(" | ")]
        if len(f) < 5:
            sys.exit(f"bad case line: {s}")
        tol = tuple(float(x) for x in f[5].split(",")) if len(f) > 5 and f[5] else None
        cases.append(dict(id=f[0], repo=f[1], target=f[2], args=f[3].split(), outs=f[4].split(), tol=tol))
    return cases


def bf16_round(a):
    b = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint32) << 16
    return r.view(np.float32)


def materialize(args, tmp, rng):
    """Generated tensors become .npy files; returns the argument list and {name: dtype name}."""
    out, dtypes = [], {}
    for a in args:
        name, eq, v = a.partition("=")
        if not eq or a.startswith("--"):
            out.append(a)
            continue
        parts = v.split(":")
        if parts[0] not in KINDS or len(parts) < 3:
            if v.startswith("@"):
                suffix = v.rsplit(":", 1)[-1]
                dtypes[name] = suffix if suffix in NARROW else "npy"
            out.append(a)
            continue
        kind, dt = parts[0], ALIASES.get(parts[1], parts[1])
        shape = tuple(int(s) for s in parts[2].split("x")) if parts[2] else ()
        npdt = np.float32 if dt in NARROW else DT[dt]
        if kind in ("zeros", "empty"):
            arr = np.zeros(shape, npdt)
        elif kind == "ones":
            arr = np.ones(shape, npdt)
        elif kind == "rand":
            arr = rng.random(shape) if np.issubdtype(np.dtype(npdt), np.floating) else rng.integers(0, 100, shape)
        elif kind == "randn":
            arr = rng.standard_normal(shape)
        elif kind == "randint":
            lo, hi = int(parts[3]), int(parts[4])
            arr = rng.integers(lo, hi, shape)
        else:  # arange
            arr = np.arange(int(np.prod(shape))).reshape(shape)
        arr = np.asarray(arr).astype(npdt)
        if dt == "bf16":
            arr = bf16_round(arr)
        elif dt in ("f8e4m3", "f8e5m2"):
            arr = fp8_round(arr, dt)
        p = os.path.join(tmp, f"in_{name}.npy")
        np.save(p, arr)
        dtypes[name] = dt
        out.append(f"{name}=@{p}" + (f":{dt}" if dt in NARROW else ""))
    return out, dtypes


def run(cmd, timeout):
    # Triton's interpreter computes fp32 dots exactly; ask Trident for the same (a GPU would use tf32).
    # No compile cache: kernel files (and the files they import) change between runs here.
    env = dict(os.environ, TRITON_F32_DEFAULT="ieee", TRIDENT_CACHE="0")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        return r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout}s"


def first_error(text):
    lines = [l for l in text.splitlines() if l.strip()]
    for i, l in enumerate(lines):
        if l.startswith("error") or "Error" in l:
            return " / ".join(x.strip() for x in lines[i:i + 6])
    return " / ".join(lines[-3:])


def compare(got, want, dt, tol):
    if got.shape != want.shape:
        got = got.reshape(want.shape) if got.size == want.size else got
        if got.shape != want.shape:
            return False, f"shape {got.shape} vs {want.shape}"
    if not np.issubdtype(want.dtype, np.floating):
        bad = np.nonzero(got.reshape(-1) != want.reshape(-1))[0]
        if len(bad):
            i = bad[0]
            return False, f"{len(bad)} of {want.size} differ; first [{i}]: {got.reshape(-1)[i]} vs {want.reshape(-1)[i]}"
        return True, "exact"
    rtol, atol = tol or TOL.get(dt, TOL["f32"])
    g, w = got.astype(np.float64).reshape(-1), want.astype(np.float64).reshape(-1)
    both_nan = np.isnan(g) & np.isnan(w)
    same_inf = np.isinf(w) & (g == w)
    with np.errstate(invalid="ignore"):
        err = np.where(both_nan | same_inf, 0.0, np.abs(g - w))
    bad = np.nonzero(~(err <= atol + rtol * np.abs(np.where(np.isfinite(w), w, 0))))[0]
    maxerr = float(np.nanmax(err)) if err.size else 0.0
    if len(bad):
        i = bad[0]
        return False, f"{len(bad)} of {w.size} differ (max abs err {maxerr:.3g}); first [{i}]: {g[i]} vs {w[i]}"
    return True, f"max abs err {maxerr:.3g}"


def check(case, args, tmp):
    if case["repo"] == "local":
        path = os.path.join(ROOT, "tests", "heldout", case["target"].split("::")[0])
    else:
        path = os.path.join(args.src, case["repo"].replace("/", "__"), case["target"].split("::")[0])
    if not os.path.exists(path):
        return "missing", f"no file {path}"
    target = path + "::" + case["target"].split("::")[1]
    rng = np.random.default_rng(0)
    cargs, dtypes = materialize(case["args"], tmp, rng)
    tsaves, osaves = [], []
    for o in case["outs"]:
        tsaves += ["--save", f"{o}={tmp}/trident_{o}.npy"]
        osaves += ["--save", f"{o}={tmp}/oracle_{o}.npy"]
    rc, text = run([args.bin, "run", target, "--backend", args.backend] + cargs + tsaves, args.timeout)
    if args.verbose:
        print(text)
    if rc != 0:
        return "trident-error", first_error(text)
    orc, otext = run([os.path.join(VENV, "bin", "python"), os.path.join(HERE, "heldout_oracle.py"), target] + cargs
                     + osaves, args.timeout)
    if args.verbose:
        print(otext)
    if orc != 0:
        return "oracle-error", first_error(otext)
    notes = []
    ok = True
    for o in case["outs"]:
        got, want = np.load(f"{tmp}/trident_{o}.npy"), np.load(f"{tmp}/oracle_{o}.npy")
        good, note = compare(got, want, dtypes.get(o), case["tol"])
        ok &= good
        notes.append(f"{o}: {note}")
    return ("pass" if ok else "mismatch"), "; ".join(notes)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=os.path.join(ROOT, "tests", "heldout", "SOURCES.md"))
    ap.add_argument("--src", default=os.environ.get("HELDOUT_SRC", "/tmp/heldout/src"))
    ap.add_argument("--filter", default="")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "debug", "trident"))
    ap.add_argument("--keep", default=None, help="keep the .npy files of each case under this folder")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--backend", default="interp", help="Trident's backend: interp (default) or emu")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    cases = [c for c in parse_cases(args.cases) if re.search(args.filter, c["id"])]
    counts = {}
    for c in cases:
        if args.keep:
            tmp = os.path.join(args.keep, c["id"])
            os.makedirs(tmp, exist_ok=True)
            status, note = check(c, args, tmp)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                status, note = check(c, args, tmp)
        counts[status] = counts.get(status, 0) + 1
        print(f"{c['id']:<40} {status:<14} {note}", flush=True)
    print("summary: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 0 if set(counts) <= {"pass"} else 1


if __name__ == "__main__":
    sys.exit(main())
