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


def test_cuda_tensors_are_refused_by_name():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    x = torch.ones(4, device="cuda")
    with pytest.raises(trident.ArgumentError, match="argument `x`"):
        K.add[(1,)](x, x, x, 4, BLOCK=4)
