"""``trident.testing``: ``do_bench`` and ``assert_close``, as ``triton.testing`` has them."""

from __future__ import annotations

import statistics
import time


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, fast_flush=True, return_mode="mean"):
    """Runs ``fn`` for about ``warmup`` ms, then for about ``rep`` ms, and returns the time per
    call in ms (``return_mode``: mean, min, max, median, all; or the given ``quantiles``).
    Host wall-clock time: on the CPU backends this is the emulator's or interpreter's own
    time, not a GPU's (the emulator's modelled time is in the launch's report: ``run_s``)."""
    fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-9)
    for _ in range(max(0, int(warmup / 1e3 / one))):
        fn()
    times = []
    for _ in range(max(1, int(rep / 1e3 / one))):
        s = time.perf_counter()
        fn()
        times.append((time.perf_counter() - s) * 1e3)
    if quantiles is not None:
        qs = statistics.quantiles(times, n=100, method="inclusive") if len(times) > 1 else times * 99
        out = [times[0] if len(times) == 1 else qs[max(0, min(98, int(q * 100) - 1))] for q in quantiles]
        return out[0] if len(out) == 1 else out
    return {"mean": statistics.fmean, "min": min, "max": max, "median": statistics.median,
            "all": list}[return_mode](times)


def assert_close(x, y, atol=None, rtol=None, err_msg=""):
    """``numpy.testing.assert_allclose`` on anything array-like (defaults: atol 1e-2, rtol 0)."""
    import numpy as np
    to_np = lambda v: v.detach().cpu().numpy() if hasattr(v, "detach") else np.asarray(v)  # noqa: E731
    np.testing.assert_allclose(to_np(x), to_np(y), atol=1e-2 if atol is None else atol,
                               rtol=0 if rtol is None else rtol, err_msg=err_msg)
