"""Arrays in CUDA device memory (``__cuda_array_interface__``, as torch CUDA tensors, CuPy and
Numba arrays have it) through the package, without a GPU: Trident's emulated CUDA driver
(``crates/emu-driver``, ``TRIDENT_CUDA_DRIVER``; conftest.py points it there when
``TRIDENT_TEST_EMU_DRIVER`` names the library, as scripts/python-test does). The test allocates
device memory through the same driver library with ctypes, so the addresses the kernel gets are
the driver's own device addresses: the launch runs on the ``cuda`` backend, in place, on the
caller's stream, and the runtime's checks of those addresses are the driver's answers.

What this proves and what not: the package's whole device path (detection, dtype, span,
stream, backend choice, the runtime's pointer checks, parameters, in-place writes, sanitize,
autotuning by device time) runs here; the kernels run on the PTX emulator, not a GPU.
"""

import ctypes
import os

import pytest

np = pytest.importorskip("numpy")
trident = pytest.importorskip("trident")

import kernels_for_tests as K  # noqa: E402

LIB = os.environ.get("TRIDENT_TEST_EMU_DRIVER")
pytestmark = pytest.mark.skipif(not LIB or not os.path.isfile(LIB),
                                reason="TRIDENT_TEST_EMU_DRIVER does not name the emulated driver library")


class Driver:
    """The few driver calls the tests make, through the same library Trident loads."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.check(self.lib.cuInit(0), "cuInit")
        ctx = ctypes.c_void_p()
        self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0), "cuDevicePrimaryCtxRetain")
        self.check(self.lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    @staticmethod
    def check(rc, call):
        assert rc == 0, f"{call} failed: CUresult {rc}"

    def alloc(self, nbytes):
        p = ctypes.c_uint64()
        self.check(self.lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(nbytes)), "cuMemAlloc")
        return p.value

    def free(self, ptr):
        self.check(self.lib.cuMemFree_v2(ctypes.c_uint64(ptr)), "cuMemFree")

    def upload(self, ptr, arr):
        arr = np.ascontiguousarray(arr)
        self.check(self.lib.cuMemcpyHtoD_v2(ctypes.c_uint64(ptr), arr.ctypes.data_as(ctypes.c_void_p),
                                            ctypes.c_size_t(arr.nbytes)), "cuMemcpyHtoD")

    def download(self, ptr, nbytes):
        out = np.empty(nbytes, np.uint8)
        self.check(self.lib.cuMemcpyDtoH_v2(out.ctypes.data_as(ctypes.c_void_p), ctypes.c_uint64(ptr),
                                            ctypes.c_size_t(nbytes)), "cuMemcpyDtoH")
        return out

    def stream(self):
        s = ctypes.c_void_p()
        self.check(self.lib.cuStreamCreate(ctypes.byref(s), 0), "cuStreamCreate")
        return s.value


class DeviceArray:
    """A device array with ``__cuda_array_interface__`` (version 3), holding a copy of ``host``;
    ``offset`` elements into a larger allocation when given (a view)."""

    def __init__(self, drv, host, offset=0, extra=0, stream=None):
        self.drv, self.dtype, self.shape = drv, host.dtype, host.shape
        self.base = drv.alloc((host.size + offset + extra) * host.itemsize)
        self.ptr = self.base + offset * host.itemsize
        drv.upload(self.ptr, host)
        self.stream = stream

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False), "version": 3,
                "strides": None, "stream": self.stream}

    def get(self):
        n = int(np.prod(self.shape)) * self.dtype.itemsize
        return self.drv.download(self.ptr, n).view(self.dtype).reshape(self.shape)


@pytest.fixture(scope="module")
def drv():
    return Driver(LIB)


def poisoned(drv, n, dtype=np.float32):
    return DeviceArray(drv, np.full(n, np.nan, dtype) if np.dtype(dtype).kind == "f" else np.full(n, -7, dtype))


def test_a_kernel_writes_device_arrays_in_place(drv, rng):
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    dx, dy, out = DeviceArray(drv, x), DeviceArray(drv, y), poisoned(drv, 1000)
    report = K.add[(4,)](dx, dy, out, 1000, BLOCK=256)
    assert report["backend"] == "cuda"
    np.testing.assert_array_equal(out.get(), x + y)
    np.testing.assert_array_equal(dx.get(), x)  # inputs untouched


def test_views_at_unaligned_offsets_and_integer_dtypes(drv, rng):
    # A view 3 elements into its allocation: the pointer is not 16-byte aligned, so the kernel
    # is specialized without that assumption (as Triton specializes on alignment).
    x = rng.integers(-1000, 1000, 777).astype(np.int32)
    y = rng.integers(-1000, 1000, 777).astype(np.int32)
    dx, dy = DeviceArray(drv, x, offset=3), DeviceArray(drv, y, offset=1)
    out = DeviceArray(drv, np.full(777, -7, np.int32), offset=5)
    K.add[(4,)](dx, dy, out, 777, BLOCK=256)
    np.testing.assert_array_equal(out.get(), x + y)


def test_a_cast_kernel_on_half_precision(drv, rng):
    x = rng.standard_normal(300).astype(np.float16)
    out = poisoned(drv, 300)
    K.cast[(2,)](DeviceArray(drv, x), out, 300, OUT_DTYPE=trident.language.float32, BLOCK=256)
    np.testing.assert_array_equal(out.get(), x.astype(np.float32))


def test_the_same_answer_as_the_emulator_on_host_arrays(drv, rng):
    x = rng.standard_normal((8, 100)).astype(np.float32)
    host_out = np.full_like(x, np.nan)
    K.softmax[(8,)](x, host_out, 100, 100, BLOCK=128, backend="emu")
    out = poisoned(drv, 800)
    K.softmax[(8,)](DeviceArray(drv, x.ravel()), out, 100, 100, BLOCK=128)
    # The driver runs the PTX on the same emulator, for its device (sm_90a unless
    # TRIDENT_EMU_TARGET says otherwise), so the results agree to rounding at most.
    np.testing.assert_allclose(out.get().reshape(8, 100), host_out, rtol=1e-6, atol=1e-7)


def test_a_given_stream_is_used(drv, rng):
    x = rng.standard_normal(256).astype(np.float32)
    out = poisoned(drv, 256)
    K.add[(1,)](DeviceArray(drv, x), DeviceArray(drv, x), out, 256, BLOCK=256, stream=drv.stream())
    np.testing.assert_array_equal(out.get(), x + x)


def test_a_bad_stream_is_an_argument_error(drv, rng):
    x = DeviceArray(drv, rng.standard_normal(16).astype(np.float32))
    with pytest.raises(trident.ArgumentError, match="stream="):
        K.add[(1,)](x, x, x, 16, BLOCK=16, stream="fast")


def test_a_stream_unknown_to_the_driver_is_a_launch_error(drv, rng):
    x = rng.standard_normal(16).astype(np.float32)
    out = poisoned(drv, 16)
    with pytest.raises(trident.LaunchError):
        K.add[(1,)](DeviceArray(drv, x), DeviceArray(drv, x), out, 16, BLOCK=16, stream=123456789)
    assert np.isnan(out.get()).all()


def test_host_and_device_arrays_together_are_refused_by_name(drv, rng):
    x = rng.standard_normal(64).astype(np.float32)
    out = poisoned(drv, 64)
    with pytest.raises(trident.ArgumentError, match="argument `y` is a host array"):
        K.add[(1,)](DeviceArray(drv, x), x, out, 64, BLOCK=64)
    assert np.isnan(out.get()).all()


def test_memory_the_driver_does_not_know_is_refused_by_name(drv, rng):
    x = DeviceArray(drv, rng.standard_normal(64).astype(np.float32))
    out = poisoned(drv, 64)
    gone = DeviceArray(drv, np.zeros(64, np.float32))
    drv.free(gone.base)
    with pytest.raises(trident.ArgumentError, match="argument `y`: address .* is not device memory"):
        K.add[(1,)](x, gone, out, 64, BLOCK=64)
    assert np.isnan(out.get()).all()


def test_an_array_past_its_allocation_is_refused_by_name(drv, rng):
    x = DeviceArray(drv, rng.standard_normal(64).astype(np.float32))
    out = poisoned(drv, 64)

    class Longer(DeviceArray):
        @property
        def __cuda_array_interface__(self):
            d = dict(DeviceArray.__cuda_array_interface__.fget(self))
            d["shape"] = (65,)  # one element more than was allocated
            return d

    longer = Longer(drv, np.zeros(64, np.float32))
    with pytest.raises(trident.ArgumentError, match="argument `x`: its 260 bytes .* run past the end"):
        K.add[(1,)](longer, x, out, 64, BLOCK=64)
    assert np.isnan(out.get()).all()


def test_device_arrays_on_a_cpu_backend_are_refused_by_name(drv, rng):
    x = DeviceArray(drv, rng.standard_normal(32).astype(np.float32))
    with pytest.raises(trident.ArgumentError, match="argument `x` is in CUDA device memory"):
        K.add[(1,)](x, x, x, 32, BLOCK=32, backend="emu")


def test_unsupported_dtypes_and_dlpack_device_arrays_are_refused_by_name(drv):
    class Complex:
        __cuda_array_interface__ = {"shape": (4,), "typestr": "<c8", "data": (drv.alloc(32), False),
                                    "version": 3}

    with pytest.raises(trident.ArgumentError, match="argument `x`: dtype `complex64`"):
        K.add[(1,)](Complex(), Complex(), Complex(), 4, BLOCK=4)

    class DLPackOnGpu:
        def __dlpack__(self, stream=None):
            raise AssertionError("not to be called")

        def __dlpack_device__(self):
            return (2, 0)  # kDLCUDA

    with pytest.raises(trident.ArgumentError, match="argument `x`: a DLPack array on device"):
        K.add[(1,)](DLPackOnGpu(), 1, 2, 4, BLOCK=4)


def test_sanitize_mode_reports_the_first_out_of_bounds_access(drv, rng):
    x = DeviceArray(drv, rng.standard_normal(100).astype(np.float32))
    y = DeviceArray(drv, rng.standard_normal(100).astype(np.float32))
    out = poisoned(drv, 101)
    # n = 101 reads one element past both 100-element inputs.
    with pytest.raises(trident.LaunchError, match="out-of-bounds load: index 100 of buffer `[xy]`"):
        K.add[(1,)](x, y, out, 101, BLOCK=128, sanitize=True)


def test_autotuning_on_device_arrays_times_each_config_on_the_device(drv, rng):
    @trident.autotune(configs=[trident.Config({"BLOCK": 64}), trident.Config({"BLOCK": 256})], key=["n"])
    @trident.jit
    def tuned_add(x, y, out, n, BLOCK: trident.language.constexpr):
        offs = trident.language.program_id(0) * BLOCK + trident.language.arange(0, BLOCK)
        m = offs < n
        trident.language.store(out + offs, trident.language.load(x + offs, mask=m)
                               + trident.language.load(y + offs, mask=m), mask=m)

    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    out = poisoned(drv, 1000)
    tuned_add[lambda meta: (trident.cdiv(1000, meta["BLOCK"]),)](DeviceArray(drv, x), DeviceArray(drv, y), out, 1000)
    assert tuned_add.best_config is not None and tuned_add.best_config.kwargs["BLOCK"] in (64, 256)
    np.testing.assert_array_equal(out.get(), x + y)


def test_a_searched_schedule_on_device_arrays_is_refused(drv, rng):
    x = DeviceArray(drv, rng.standard_normal(32).astype(np.float32))
    out = poisoned(drv, 32)
    with pytest.raises(trident.ArgumentError, match="not supported on device arrays"):
        K.add[(1,)](x, x, out, 32, BLOCK=32, sass_search="2s")
    assert np.isnan(out.get()).all()


def _entries(kernel):
    return kernel._dispatcher.cached() if kernel._dispatcher is not None else 0


def test_cached_launches_on_device_arrays_take_the_fast_path(drv, rng):
    axpy = K.add_scaled
    before = _entries(axpy)
    # The first launch describes the function (the general path), the second keeps its kernel
    # for the native fast path, the rest take it: each on fresh arrays, results checked.
    for i in range(4):
        x, y = rng.standard_normal(500).astype(np.float32), rng.standard_normal(500).astype(np.float32)
        dx, dout = DeviceArray(drv, x), DeviceArray(drv, y)
        report = axpy[(2,)](dx, dout, 500, 3.0, BLOCK=256)
        assert report["backend"] == "cuda"
        np.testing.assert_array_equal(dout.get(), np.float32(3.0) * x + y)
        np.testing.assert_array_equal(dx.get(), x)
        if i >= 1:
            assert _entries(axpy) == before + 1 and report["cache"] == "memo"
    # A pointer that is not 16-byte aligned is another specialization (as in the runtime's
    # key), never the aligned kernel reused.
    x = rng.standard_normal(300).astype(np.float32)
    dout = DeviceArray(drv, np.zeros(300, np.float32), offset=1)
    axpy[(2,)](DeviceArray(drv, x, offset=3), dout, 300, 1.0, BLOCK=256)
    np.testing.assert_array_equal(dout.get(), x)
    assert _entries(axpy) == before + 2
    # The stream an array names (interface version 3) is the launch's, on the fast path too:
    # a stream the driver does not know fails the launch, the output untouched.
    dout = poisoned(drv, 300)
    with pytest.raises(trident.LaunchError):
        axpy[(2,)](DeviceArray(drv, x, stream=123456789), dout, 300, 1.0, BLOCK=256)
    assert np.isnan(dout.get()).all()
    s = drv.stream()
    dout = DeviceArray(drv, np.zeros(300, np.float32))
    axpy[(2,)](DeviceArray(drv, x, stream=s), dout, 300, 2.0, BLOCK=256)
    np.testing.assert_array_equal(dout.get(), np.float32(2.0) * x)
    assert _entries(axpy) == before + 2


def test_device_launches_the_fast_path_leaves_alone_still_get_their_errors(drv, rng):
    # Each of these falls back to the general path after the kernel is kept: the errors are
    # the ones that path raises (the tests above check them on first launches).
    x = rng.standard_normal(64).astype(np.float32)
    dx, out = DeviceArray(drv, x), poisoned(drv, 64)
    for _ in range(2):
        K.add[(1,)](dx, dx, out, 64, BLOCK=64)
    np.testing.assert_array_equal(out.get(), x + x)
    assert _entries(K.add) >= 1
    out = poisoned(drv, 64)
    with pytest.raises(trident.ArgumentError, match="argument `y` is a host array"):
        K.add[(1,)](dx, x, out, 64, BLOCK=64)
    with pytest.raises(trident.ArgumentError, match="argument `x` is in CUDA device memory"):
        K.add[(1,)](dx, dx, out, 64, BLOCK=64, backend="emu")
    with pytest.raises(trident.ArgumentError, match="not supported on device arrays"):
        K.add[(1,)](dx, dx, out, 64, BLOCK=64, sass_search="2s")

    class Masked(DeviceArray):
        @property
        def __cuda_array_interface__(self):
            return dict(DeviceArray.__cuda_array_interface__.fget(self), mask=object())

    with pytest.raises(trident.ArgumentError, match="masked"):
        K.add[(1,)](Masked(drv, x), dx, out, 64, BLOCK=64)
    assert np.isnan(out.get()).all()


def test_interface_arrays_of_every_dtype_and_stride_on_the_fast_path(drv, rng):
    @trident.jit
    def strided_copy(x, out, n, stride, BLOCK: trident.language.constexpr):
        tl = trident.language
        offs = tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out + offs, tl.load(x + offs * stride, mask=m), mask=m)

    class Strided(DeviceArray):
        """Every other element of a device copy of ``host`` (byte strides in the interface)."""

        def __init__(self, drv, host):
            super().__init__(drv, host)
            self.shape = (host.size // 2,)

        @property
        def __cuda_array_interface__(self):
            return dict(DeviceArray.__cuda_array_interface__.fget(self), strides=(2 * self.dtype.itemsize,))

    for dtype in (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
                  np.float16, np.float32, np.float64):
        host = (rng.standard_normal(64) * 50).astype(dtype)
        before = _entries(strided_copy)
        for i in range(3):
            out = DeviceArray(drv, np.zeros(32, dtype))
            strided_copy[(1,)](Strided(drv, host), out, 32, 2, BLOCK=32)
            np.testing.assert_array_equal(out.get(), host[::2])
        # Kept after the first launch of this dtype (its own specialization), then reused.
        assert _entries(strided_copy) == before + 1, dtype
    # A big-endian type string is the general path's error, on a kernel the fast path knows.
    class BigEndian(DeviceArray):
        @property
        def __cuda_array_interface__(self):
            return dict(DeviceArray.__cuda_array_interface__.fget(self), typestr=">f4")

    with pytest.raises(trident.ArgumentError, match="byte order"):
        strided_copy[(1,)](BigEndian(drv, np.zeros(4, np.float32)), out, 4, 1, BLOCK=32)


def test_malformed_interfaces_never_crash_the_fast_path(drv, rng):
    # Fuzz what the fast path parses: `__cuda_array_interface__` dicts with fields of the
    # wrong type, missing, negative, huge or inconsistent, on a kernel whose fast path is warm.
    # Each launch either runs (a well-formed interface) or raises the package's error (never a
    # Rust panic, never anything but `trident.TridentError` subclasses). The launches use
    # n = 0, so the kernel touches no memory: an interface that lies about its extent would
    # otherwise make a legitimate out-of-bounds kernel, which fails the (emulated) device.
    x = rng.standard_normal(64).astype(np.float32)
    dx = DeviceArray(drv, x)
    for _ in range(2):
        K.add[(1,)](dx, dx, poisoned(drv, 64), 64, BLOCK=64)
    good = dx.__cuda_array_interface__
    choices = {
        "shape": [(64,), (), (0,), (-1,), (2 ** 62,), (64, 1), ("64",), None, 64, (1.5,)],
        "typestr": ["<f4", ">f4", "|b1", "<c8", "f4", "", 4, None, "<f44", "<V4"],
        "data": [good["data"], (0, False), (dx.ptr, True), (-5, False), ("x", False), None, (), (2 ** 70, False)],
        "version": [3, 2, 0, "3", None, -1],
        "strides": [None, (4,), (-4,), (0,), (3,), (2 ** 62,), ("4",), 4],
        "stream": [None, 1, 2, "s", -1, 2 ** 70],
        "mask": [None, object()],
    }
    errors = trident.TridentError
    for i in range(150):
        cai = dict(good)
        for field, values in choices.items():
            if rng.random() < 0.3:
                v = values[rng.integers(len(values))]
                if v is None and rng.random() < 0.5:
                    cai.pop(field, None)
                else:
                    cai[field] = v

        class Odd:
            __cuda_array_interface__ = cai

        try:
            K.add[(1,)](Odd(), dx, dx, 0, BLOCK=64)
        except (errors, TypeError, ValueError, OverflowError):  # the package's, or Python's own
            pass
    # The device is still fine, and the kernel's fast path still right.
    out = poisoned(drv, 64)
    K.add[(1,)](dx, dx, out, 64, BLOCK=64)
    np.testing.assert_array_equal(out.get(), x + x)


def test_host_descriptors_over_device_arrays_run_in_place(drv, rng):
    # On the emulated sm_90a device the boxes are TMA copies through tensor maps the runtime
    # encodes with the driver (`cuTensorMapEncodeTiled`) from the descriptors' fields.
    from trident.tools.tensor_descriptor import TensorDescriptor

    x = rng.standard_normal((40, 56)).astype(np.float32)
    dx = DeviceArray(drv, x)
    dy = DeviceArray(drv, np.full((40, 56), np.nan, np.float32))
    report = K.desc_scale[(3, 2)](TensorDescriptor(dx, [40, 56], [56, 1], [16, 32]),
                                  TensorDescriptor(dy, [40, 56], [56, 1], [16, 32]), BLOCK_M=16, BLOCK_N=32)
    assert report["backend"] == "cuda"
    np.testing.assert_array_equal(dy.get(), 2 * x + 56)
    np.testing.assert_array_equal(dx.get(), x)
    # A base that is not 16-byte aligned cannot be a TMA source: refused by name, nothing written.
    off = DeviceArray(drv, np.full((40, 56), 1.0, np.float32), offset=1, extra=1)
    with pytest.raises(trident.ArgumentError, match="argument `y_desc`.*16-byte aligned"):
        K.desc_scale[(3, 2)](TensorDescriptor(dx, [40, 56], [56, 1], [16, 32]),
                             TensorDescriptor(off, [40, 56], [56, 1], [16, 32]), BLOCK_M=16, BLOCK_N=32)
    np.testing.assert_array_equal(off.get(), 1.0)
