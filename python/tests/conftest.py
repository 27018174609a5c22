"""Shared fixtures of the package's tests: a fresh random generator per test (its seed printed
on failure), the CPU backends (the SASS emulator too where ptxas and nvdisasm are installed:
scripts/test exports them), and a private compile cache."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

# The emulated CUDA driver for test_cuda_arrays.py (scripts/python-test builds it and names it
# here). Set before anything loads a driver: Trident reads TRIDENT_CUDA_DRIVER once. Cubins are
# refused so that the driver JITs the PTX onto the PTX emulator (no nvdisasm needed).
if os.path.isfile(os.environ.get("TRIDENT_TEST_EMU_DRIVER", "")):
    os.environ["TRIDENT_CUDA_DRIVER"] = os.environ["TRIDENT_TEST_EMU_DRIVER"]
    os.environ.setdefault("TRIDENT_EMU_DRIVER_NO_CUBIN", "1")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TRIDENT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture
def rng(request):
    np = pytest.importorskip("numpy")
    seed = int.from_bytes(os.urandom(4), "little")
    request.node.user_properties.append(("seed", seed))
    print(f"seed {seed}")
    return np.random.default_rng(seed)


def _sass_tools():
    return all(os.path.isfile(os.environ.get(v, "")) for v in ("TRIDENT_PTXAS", "TRIDENT_NVDISASM"))


@pytest.fixture(params=["interp", "emu"] + (["sass-emu"] if _sass_tools() else []))
def backend(request):
    return request.param
