"""CPU torch tensors through the package (skipped where torch is not installed)."""

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
