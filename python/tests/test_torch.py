"""CPU torch tensors through the package (skipped where torch is not installed), on the
general path and the native fast path of cached launches."""

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")
trident = pytest.importorskip("trident")

import kernels_for_tests as K  # noqa: E402


def test_torch_cpu_tensors_are_written_in_place(backend):
    g = torch.Generator().manual_seed(int.from_bytes(__import__("os").urandom(4), "little"))
    x = torch.randn(1000, generator=g)
    y = torch.randn(1000, generator=g)
    out = torch.full((1000,), float("nan"))
    K.add[(4,)](x, y, out, 1000, BLOCK=256, backend=backend)
    assert torch.equal(out, x + y)


def test_bfloat16_tensors():
    x = torch.randn(300).to(torch.bfloat16)
    out = torch.zeros(300, dtype=torch.float32)
    K.cast[(2,)](x, out, 300, OUT_DTYPE=torch.float32, BLOCK=256)
    assert torch.equal(out, x.float())


def test_cuda_tensors_run_on_the_gpu_in_place_on_the_current_stream():
    # Needs a real GPU and torch with CUDA (python/tests/test_cuda_arrays.py checks the same
    # path on the emulated driver everywhere).
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    g = torch.Generator(device="cuda").manual_seed(int.from_bytes(__import__("os").urandom(4), "little"))
    x = torch.randn(1000, device="cuda", generator=g)
    y = torch.randn(1000, device="cuda", generator=g).to(torch.bfloat16).float()
    out = torch.full((1000,), float("nan"), device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        ptr = out.data_ptr()
        report = K.add[(4,)](x, y, out, 1000, BLOCK=256)
    s.synchronize()
    assert report["backend"] == "cuda" and out.data_ptr() == ptr
    assert torch.equal(out, x + y)
    cpu = torch.ones(1000)
    with pytest.raises(trident.ArgumentError, match="argument `y` is a host array"):
        K.add[(4,)](x, cpu, out, 1000, BLOCK=256)


def _entries(kernel):
    return kernel._dispatcher.cached() if kernel._dispatcher is not None else 0


def test_cached_launches_on_cpu_tensors_take_the_fast_path(backend):
    g = torch.Generator().manual_seed(int.from_bytes(__import__("os").urandom(4), "little"))
    before = _entries(K.add_scaled)
    for i in range(4):
        x, y = torch.randn(700, generator=g), torch.randn(700, generator=g)
        out = y.clone()
        r = K.add_scaled[(3,)](x, out, 700, 0.5, BLOCK=256, backend=backend)
        assert torch.equal(out, 0.5 * x + y)
    assert r["cache"] == "memo" and _entries(K.add_scaled) == before + 1
    # A Parameter (exact type too), a tensor that requires grad, strided views: the same
    # kernel, each written in place where the kernel wrote.
    w = torch.nn.Parameter(torch.randn(700, generator=g))
    out = torch.zeros(700)
    K.add_scaled[(3,)](w, out, 700, 1.0, BLOCK=256, backend=backend)
    assert torch.equal(out, w.detach())
    # (The kernel indexes from the first element with its own strides, as in Triton: through
    # `base[::2]` it reads `base[:700]`, which lies in the view's span.)
    base = torch.randn(1400, generator=g)
    out = torch.zeros(2, 700)
    K.add_scaled[(3,)](base[::2], out[1], 700, 2.0, BLOCK=256, backend=backend)
    assert torch.equal(out[1], 2.0 * base[:700]) and torch.equal(out[0], torch.zeros(700))
    assert _entries(K.add_scaled) == before + 1
    # Other dtypes are other kernels.
    h = torch.randn(700, generator=g).to(torch.bfloat16)
    out = torch.zeros(700, dtype=torch.bfloat16)
    for _ in range(2):
        out.zero_()
        K.add_scaled[(3,)](h, out, 700, 1.0, BLOCK=256, backend=backend)
        assert torch.equal(out, h)
    assert _entries(K.add_scaled) == before + 2


def test_cpu_tensor_errors_on_the_fast_path_are_the_general_paths():
    @trident.jit
    def both(a, b, BLOCK: trident.language.constexpr):
        tl = trident.language
        offs = tl.arange(0, BLOCK)
        tl.store(a + offs, tl.load(a + offs) + 1.0)
        tl.store(b + offs, tl.load(b + offs) + 2.0)

    t = torch.arange(32, dtype=torch.float32)
    for _ in range(2):
        both[(1,)](t[:16], t[16:], BLOCK=16)  # disjoint halves: fine, and kept
    assert _entries(both) == 1
    snapshot = t.clone()
    errors = []
    for launch in (both[(1,)], lambda *a, **k: both._run_slow(*a, grid=(1,), **k)):
        with pytest.raises(trident.LaunchError) as e:
            launch(t[:16], t[8:24], BLOCK=16)  # overlapping, both written
        errors.append((type(e.value), str(e.value)))
    assert errors[0] == errors[1] and "share memory" in errors[0][1]
    assert torch.equal(t, snapshot)  # untouched
    # A device the fast path does not know goes to the general path's error.
    with pytest.raises(trident.ArgumentError, match="argument `a`: a tensor on `meta`"):
        both[(1,)](torch.empty(16, device="meta"), t[:16], BLOCK=16)
