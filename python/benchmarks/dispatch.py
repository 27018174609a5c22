"""Dispatch overhead of a cached launch from Python: the time from ``kernel[grid](...)`` to the
backend's call, i.e. a launch's wall time minus the backend's own run time (the report's
``run_s``), for a kernel that does almost nothing, after the first (compiling) launch.

    python python/benchmarks/dispatch.py          # with the package installed (release build)

Prints per-launch microseconds: total, backend run, dispatch (total - run), and the parts of
dispatch spent in Python's argument binding and conversion.
"""

import statistics
import time

import numpy as np

import trident
import trident.language as tl
from trident import _args


@trident.jit
def touch(x, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x + offs, tl.load(x + offs, mask=offs < n) + 1.0, mask=offs < n)


def main(reps=3000):
    x = np.zeros(16, np.float32)
    out = {}
    for backend in ("interp", "emu"):
        touch[(1,)](x, 16, BLOCK=16, backend=backend)  # compile once
        totals, runs = [], []
        for _ in range(reps):
            t0 = time.perf_counter()
            r = touch[(1,)](x, 16, BLOCK=16, backend=backend)
            totals.append(time.perf_counter() - t0)
            runs.append(r["run_s"] if backend == "interp" else 0.0)
        # The emulator reports modelled time, not host time: its host run time is measured
        # as the launch minus what the same launch costs without running (not available), so
        # for emu only the total is meaningful.
        bind = []
        for _ in range(reps):
            t0 = time.perf_counter()
            values = touch.bind((x, 16), {"BLOCK": 16})
            _args.convert(values)
            bind.append(time.perf_counter() - t0)
        med = lambda v: statistics.median(v) * 1e6  # noqa: E731
        out[backend] = (med(totals), med(runs), med(bind))
    print(f"{'backend':<8} {'total us':>9} {'run us':>8} {'dispatch us':>12} {'python bind+convert us':>23}")
    for b, (t, r, p) in out.items():
        d = f"{t - r:12.1f}" if b == "interp" else f"{'-':>12}"
        print(f"{b:<8} {t:9.1f} {r:8.1f} {d} {p:23.1f}")


if __name__ == "__main__":
    main()
