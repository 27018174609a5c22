"""Dispatch of a cached launch whose argument is a host TensorDescriptor: the native fast path
against the package's general path (a launch keyword the fast path does not take, `num_ctas=1`,
forces the latter). Prints the total time per launch and the backend's own (`run_s`); dispatch
is the difference. bench/PYTHON.md has the numbers."""
import time, numpy as np, trident, trident.language as tl
from trident.tools.tensor_descriptor import TensorDescriptor

@trident.jit
def touch_desc(x_desc, BLOCK: tl.constexpr):
    x_desc.store([0], x_desc.load([0]) + 1)

x = np.zeros(16, np.float32)
d = TensorDescriptor.from_tensor(x, [16])
for name, fn in [("descriptor, fast path", lambda: touch_desc[(1,)](d, BLOCK=16)),
                 ("descriptor, general path (num_ctas=1 forces it)", lambda: touch_desc[(1,)](d, BLOCK=16, num_ctas=1))]:
    fn()
    ts = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(2000):
            r = fn()
        ts.append((time.perf_counter() - t) / 2000 * 1e6)
    print(name, f"{sorted(ts)[2]:.1f} us/launch total (median of 5), run_s {r['run_s']*1e6:.1f}")
