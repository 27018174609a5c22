"""Writes the live-function fixtures of `crates/front/tests/live.rs` and the runtime's tests:
`trident._live.describe` of the kernels in `src/`, imported by real Python (module-level `if`s,
closures, `exec`, patched source run as Python runs them) against the Triton stand-in of
`python/tests/test_live_describe.py` (real Triton when installed).

    python3 crates/front/tests/data/live/gen_fixtures.py     # needs pytest importable

Paths are written relative to the repository root, so the fixtures do not depend on the checkout.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "../../../../.."))
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "python/tests"), os.path.join(HERE, "src")]

import test_live_describe  # noqa: E402,F401  (installs the Triton stand-in when Triton is absent)
from trident._live import describe  # noqa: E402

import factories  # noqa: E402
import kernel_mod  # noqa: E402
import rms_norm  # noqa: E402


def relative(d):
    """Paths relative to the repository root, in every function of the description."""
    if isinstance(d, dict):
        out = {k: relative(v) for k, v in d.items()}
        if "path" in d and "source" in d and os.path.isabs(d["path"]):
            out["path"] = os.path.relpath(d["path"], ROOT)
        return out
    if isinstance(d, list):
        return [relative(x) for x in d]
    return d


FIXTURES = {
    "rms_norm.json": rms_norm._rms_norm_forward_kernel,
    "helpers.json": kernel_mod.combine,
    "closure.json": factories.make_scaler(64, 2.5),
    "generated.json": factories.make_generated(),
    "patched.json": factories.make_patched(),
}

for name, fn in FIXTURES.items():
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(relative(describe(fn)), f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote", name)
