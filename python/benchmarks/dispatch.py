"""Dispatch overhead of a cached launch from Python: the time from ``kernel[grid](...)`` to the
backend's call, i.e. a launch's wall time minus the backend's own run time (the report's
``run_s``), for a kernel that does almost nothing, after the first (compiling) launch.

    python python/benchmarks/dispatch.py          # with the package installed (release build)

Prints per-launch microseconds (medians): total, backend run, dispatch (total - run), and the
parts of dispatch:

* ``getitem``: ``kernel[grid]`` alone (the Python method and the native launcher it returns);
* ``front``: the same launch with an empty grid (``(0,)``), minus ``getitem`` — binding,
  classifying the values (numpy arrays through the buffer protocol), the environment reads
  and the specialization key; it stops where the launch would start;
* ``back``: the rest — the key lookup, copying the array in, the runtime's run call around
  the interpreter's own timing, the copy back, the report;

and, for comparison, the general path every launch took before the fast path (still taken by
dtype objects, numpy scalars, tensor subclasses...): ``general`` is
``kernel._run_slow(...)``'s dispatch, ``bind+convert`` its Python binding and conversion.

Rows: numpy arrays on the interpreter and the emulator; a CPU torch tensor on the interpreter
(where torch is installed); an autotuned kernel (`tuned`), a kernel with heuristics
(`heur`) and an autotuned one with heuristics under it (`tuned+heur`: total, run and dispatch only); device arrays (``__cuda_array_interface__``) on ``cuda`` where
``TRIDENT_CUDA_DRIVER`` names a driver library — front only (``_device_row``).
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


def _median_us(f, reps):
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        f()
        samples.append(time.perf_counter_ns() - t0)
    return statistics.median(samples) / 1e3


def _host_row(label, x, backend, reps):
    """One row for a host array ``x`` (numpy or a CPU torch tensor) on ``backend``."""
    touch[(1,)](x, 16, BLOCK=16, backend=backend)  # compile once
    touch[(1,)](x, 16, BLOCK=16, backend=backend)  # kept by the fast path
    totals, runs = [], []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        r = touch[(1,)](x, 16, BLOCK=16, backend=backend)
        totals.append(time.perf_counter_ns() - t0)
        # The emulator reports modelled time, not host time: for emu only the total means
        # something (its fixed launch cost dominates).
        runs.append(r["run_s"] * 1e9 if backend == "interp" else 0.0)
    total = statistics.median(totals) / 1e3
    run = statistics.median(runs) / 1e3
    getitem = _median_us(lambda: touch[(1,)], reps)
    empty = _median_us(lambda: touch[(0,)](x, 16, BLOCK=16, backend=backend), reps)
    general_t, general_r = [], []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        r = touch._run_slow(x, 16, BLOCK=16, backend=backend, grid=(1,))
        general_t.append(time.perf_counter_ns() - t0)
        general_r.append(r["run_s"] * 1e9 if backend == "interp" else 0.0)
    general = (statistics.median(general_t) - statistics.median(general_r)) / 1e3

    def bind_convert():
        _args.convert(touch.bind((x, 16), {"BLOCK": 16}))

    bind = _median_us(bind_convert, reps)
    return (label, backend, total, run, getitem, empty - getitem, total - run - empty, general, bind)


@trident.autotune(configs=[trident.Config({"BLOCK": 16}), trident.Config({"BLOCK": 32})], key=["n"])
@trident.jit
def touch_tuned(x, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x + offs, tl.load(x + offs, mask=offs < n) + 1.0, mask=offs < n)


@trident.heuristics({"BLOCK": lambda args: 16})
@trident.jit
def touch_heur(x, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x + offs, tl.load(x + offs, mask=offs < n) + 1.0, mask=offs < n)


@trident.autotune(configs=[trident.Config({"K": 1.0}), trident.Config({"K": 2.0})], key=["n"])
@trident.heuristics({"BLOCK": lambda args: 16})
@trident.jit
def touch_tuned_heur(x, n, K: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x + offs, tl.load(x + offs, mask=offs < n) + K, mask=offs < n)


def _tuned_row(label, kernel, reps):
    """A cached launch of a decorated kernel (numpy, interpreter): total and run only."""
    x = np.zeros(16, np.float32)
    for _ in range(3):
        kernel[(1,)](x, 16)
    totals, runs = [], []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        r = kernel[(1,)](x, 16)
        totals.append(time.perf_counter_ns() - t0)
        runs.append(r["run_s"] * 1e9)
    total, run = statistics.median(totals) / 1e3, statistics.median(runs) / 1e3
    return (label, "interp", total, run, None, None, None, None, None)


def _device_row(reps):
    """Device arrays (``__cuda_array_interface__``) on the ``cuda`` backend, where a CUDA driver
    library is at hand (``TRIDENT_CUDA_DRIVER``: a GPU's, or Trident's emulated one). Only the
    front of the launch is measured (binding, reading the interface, the stream, the key: an
    empty grid stops there), next to the general path's binding, conversion and stream choice
    in Python: with the emulated driver the launch itself runs the kernel on the PTX emulator,
    which says nothing about a GPU's dispatch."""
    import ctypes
    import os

    lib = os.environ.get("TRIDENT_CUDA_DRIVER")
    if not lib:
        return None
    drv = ctypes.CDLL(lib)
    ctx, p = ctypes.c_void_p(), ctypes.c_uint64()
    if drv.cuInit(0) or drv.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) or drv.cuCtxSetCurrent(ctx):
        return None
    if drv.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(64)):
        return None

    class Dev:
        __cuda_array_interface__ = {"shape": (16,), "typestr": "<f4", "data": (p.value, False), "version": 3,
                                    "strides": None, "stream": None}

    x = Dev()
    touch[(1,)](x, 16, BLOCK=16)
    touch[(1,)](x, 16, BLOCK=16)
    getitem = _median_us(lambda: touch[(1,)], reps)
    empty = _median_us(lambda: touch[(0,)](x, 16, BLOCK=16), reps)

    def general():
        values = touch.bind((x, 16), {"BLOCK": 16})
        _args.convert(values)
        _args.launch_stream(values, None)

    return ("device", "cuda", None, None, getitem, empty - getitem, None, None, _median_us(general, reps))


def main(reps=3000):
    rows = []
    for backend in ("interp", "emu"):
        rows.append(_host_row("numpy", np.zeros(16, np.float32), backend, reps))
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        rows.append(_host_row("torch", torch.zeros(16), "interp", reps))
    rows.append(_tuned_row("tuned", touch_tuned, reps))
    rows.append(_tuned_row("heur", touch_heur, reps))
    rows.append(_tuned_row("tuned+heur", touch_tuned_heur, reps))
    device = _device_row(reps)
    if device is not None:
        rows.append(device)
    print(f"{'arrays':<10} {'backend':<8} {'total':>7} {'run':>6} {'dispatch':>9} {'getitem':>8} {'front':>6}"
          f" {'back':>6} {'general':>8} {'bind+convert':>13}   (us)")
    dash = "-"
    for a, b, t, r, g, f, k, gen, p in rows:
        if b == "interp" and g is None:
            print(f"{a:<10} {b:<8} {t:7.1f} {r:6.1f} {t - r:9.1f} {dash:>8} {dash:>6} {dash:>6} {dash:>8} {dash:>13}")
        elif b == "interp":
            print(f"{a:<10} {b:<8} {t:7.1f} {r:6.1f} {t - r:9.1f} {g:8.2f} {f:6.2f} {k:6.2f} {gen:8.1f} {p:13.1f}")
        elif b == "emu":
            print(f"{a:<10} {b:<8} {t:7.1f} {dash:>6} {dash:>9} {g:8.2f} {f:6.2f} {dash:>6} {dash:>8} {p:13.1f}")
        else:
            print(f"{a:<10} {b:<8} {dash:>7} {dash:>6} {dash:>9} {g:8.2f} {f:6.2f} {dash:>6} {dash:>8} {p:13.1f}")


if __name__ == "__main__":
    main()
