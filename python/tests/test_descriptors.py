"""Host tensor descriptors (``trident.tools.tensor_descriptor.TensorDescriptor``, Triton's
``TensorDescriptor``) as kernel arguments, on the CPU backends: the kernel reads and writes
the described tensor in place of the caller's array, boxes past the shape read the padding,
``isinstance(x, tl.tensor_descriptor)`` tells them from pointers, an autotuning pre-hook can
set their boxes, and bad descriptors are refused by name with the arrays untouched. (Device
arrays under a descriptor: test_cuda_arrays.py.)"""

import pytest

np = pytest.importorskip("numpy")
trident = pytest.importorskip("trident")

from trident.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

import kernels_for_tests as K  # noqa: E402


def desc(a, block, **kw):
    return TensorDescriptor.from_tensor(a, block, **kw)


def test_a_kernel_reads_and_writes_through_descriptors(rng, backend):
    # 40 x 56 is not a multiple of the 16 x 32 box: the last boxes hang over the edges, and
    # the store must leave what lies beyond the shape alone.
    x = rng.standard_normal((40, 56)).astype(np.float32)
    y = np.full((40, 56), np.nan, np.float32)
    x0 = x.copy()
    report = K.desc_scale[(3, 2)](desc(x, [16, 32]), desc(y, [16, 32]), BLOCK_M=16, BLOCK_N=32, backend=backend)
    assert report["backend"] == backend
    np.testing.assert_array_equal(y, 2 * x + 56)
    np.testing.assert_array_equal(x, x0)


def test_a_descriptor_over_part_of_an_array_stays_inside_its_shape(rng, backend):
    # A 24 x 40 window with the row stride of a 24 x 64 array: columns past 40 are outside the
    # shape, so the kernel neither reads them nor writes them.
    x = rng.standard_normal((24, 64)).astype(np.float32)
    y = np.full((24, 64), -5.0, np.float32)
    dx = TensorDescriptor(x, [24, 40], [64, 1], [8, 16])
    dy = TensorDescriptor(y, [24, 40], [64, 1], [8, 16])
    K.desc_scale[(3, 3)](dx, dy, BLOCK_M=8, BLOCK_N=16, backend=backend)
    np.testing.assert_array_equal(y[:, :40], 2 * x[:, :40] + 40)
    np.testing.assert_array_equal(y[:, 40:], -5.0)


def test_nan_padding_reads_nan_past_the_shape(rng):
    x = rng.standard_normal((10, 16)).astype(np.float32)
    y = np.zeros((16, 16), np.float32)
    # x's descriptor ends at row 10; y's covers all 16 rows, so rows 10.. receive the padding.
    K.desc_scale[(1, 1)](desc(x, [16, 16], padding="nan"), desc(y, [16, 16]), BLOCK_M=16, BLOCK_N=16)
    np.testing.assert_array_equal(y[:10], 2 * x + 16)
    assert np.isnan(y[10:]).all()
    K.desc_scale[(1, 1)](desc(x, [16, 16]), desc(y, [16, 16]), BLOCK_M=16, BLOCK_N=16)
    np.testing.assert_array_equal(y[10:], 16.0)


def test_isinstance_tells_descriptors_from_pointers(rng, backend):
    x = rng.standard_normal((32, 32)).astype(np.float32)
    by_desc = np.full_like(x, np.nan)
    by_ptr = np.full_like(x, np.nan)
    K.desc_or_pointer_copy[(2, 2)](desc(x, [16, 16]), desc(by_desc, [16, 16]), 32, 32, BLOCK_M=16, BLOCK_N=16,
                                   backend=backend)
    K.desc_or_pointer_copy[(2, 2)](x, by_ptr, 32, 32, BLOCK_M=16, BLOCK_N=16, backend=backend)
    np.testing.assert_array_equal(by_desc, x + 1)
    np.testing.assert_array_equal(by_ptr, x + 1)


def test_an_autotuning_pre_hook_sets_the_boxes(rng, monkeypatch):
    # Both configs are timed (on the emulator), each on copies: the caller's arrays change
    # only by the final launch.
    monkeypatch.setenv("TRIDENT_BACKEND", "emu")
    M, N, Kd = 48, 64, 64
    a = rng.standard_normal((M, Kd)).astype(np.float16)
    b = rng.standard_normal((Kd, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    a0 = a.copy()
    # The boxes given here are placeholders, as in Triton's tutorial: the pre-hook replaces them.
    da, db, dc = desc(a, [16, 16]), desc(b, [16, 16]), desc(c, [16, 16])
    grid = lambda meta: (trident.cdiv(M, meta["BLOCK_M"]), trident.cdiv(N, meta["BLOCK_N"]))  # noqa: E731
    K.desc_matmul[grid](da, db, dc, Kd)
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-3)
    np.testing.assert_array_equal(a, a0)
    best = K.desc_matmul.best_config.kwargs
    assert da.block_shape == [best["BLOCK_M"], best["BLOCK_K"]]


@pytest.mark.parametrize("make, message", [
    (lambda x: TensorDescriptor(x, [32, 32], [33, 1], [16, 16]), "multiple of 16 bytes"),
    (lambda x: TensorDescriptor(x, [32, 32], [32, 2], [16, 16]), "contiguous"),
    (lambda x: TensorDescriptor(x, [32, 32], [32, 1], [16, 12]), "power of 2"),
    (lambda x: TensorDescriptor(x, [32, 32], [32, 1], [16]), "same length"),
])
def test_descriptors_that_break_the_rules_are_refused_when_made(rng, make, message):
    x = rng.standard_normal((33, 33)).astype(np.float32)
    with pytest.raises(ValueError, match=message):
        make(x)


def test_bad_descriptors_are_refused_at_launch_by_name_with_the_arrays_untouched(rng, backend):
    x = rng.standard_normal((32, 32)).astype(np.float32)
    y = np.full((32, 32), 3.0, np.float32)
    x0, y0 = x.copy(), y.copy()
    good = desc(x, [16, 16])

    # Fields changed after construction are checked at the launch.
    far = desc(y, [16, 16])
    far.shape = [64, 32]  # past the end of y's memory
    with pytest.raises(trident.ArgumentError, match="argument `y_desc`.*beyond"):
        K.desc_scale[(2, 2)](good, far, BLOCK_M=16, BLOCK_N=16, backend=backend)
    narrow = desc(y, [16, 16])
    narrow.block_shape = [16, 2]  # 8 bytes: a box row must span 16 (a compile-time rule, as in Triton)
    with pytest.raises(trident.CompilationError, match="y_desc.*16 bytes"):
        K.desc_scale[(2, 2)](good, narrow, BLOCK_M=16, BLOCK_N=16, backend=backend)
    odd = desc(y, [16, 16])
    odd.strides = [18, 1]  # 72 bytes
    with pytest.raises(trident.ArgumentError, match="argument `y_desc`.*16 bytes"):
        K.desc_scale[(2, 2)](good, odd, BLOCK_M=16, BLOCK_N=16, backend=backend)
    huge = desc(y, [16, 16])
    huge.shape = [1 << 40, 32]
    with pytest.raises(trident.ArgumentError, match="argument `y_desc`.*shape.*out of range"):
        K.desc_scale[(2, 2)](good, huge, BLOCK_M=16, BLOCK_N=16, backend=backend)
    odd.strides, odd.padding = [32, 1], "inf"
    with pytest.raises(trident.ArgumentError, match="argument `y_desc`.*padding"):
        K.desc_scale[(2, 2)](good, odd, BLOCK_M=16, BLOCK_N=16, backend=backend)
    # A descriptor for a constexpr, an array where a descriptor was expected.
    with pytest.raises(trident.ArgumentError, match="BLOCK_M.*not a tensor descriptor"):
        K.desc_scale[(2, 2)](good, desc(y, [16, 16]), BLOCK_M=desc(y, [16, 16]), BLOCK_N=16, backend=backend)
    with pytest.raises((trident.CompilationError, trident.ArgumentError)):
        K.desc_scale[(2, 2)](good, y, BLOCK_M=16, BLOCK_N=16, backend=backend)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(y, y0)


def test_a_descriptor_and_an_array_sharing_memory_are_one_alias_group(rng):
    # The kernel writes through the descriptor only: the write is copied back.
    x = rng.standard_normal((16, 16)).astype(np.float32)
    y = np.zeros((16, 16), np.float32)
    K.desc_scale[(1, 1)](desc(x, [16, 16]), desc(y, [16, 16]), BLOCK_M=16, BLOCK_N=16)
    z = y.copy()
    K.desc_scale[(1, 1)](desc(z, [16, 16]), desc(z, [16, 16]), BLOCK_M=16, BLOCK_N=16)
    np.testing.assert_array_equal(z, 2 * y + 16)


tl = trident.language


def _entries(kernel):
    return kernel._dispatcher.cached() if kernel._dispatcher is not None else 0


@trident.jit
def _desc_add(x_desc, y_desc, c, BM: tl.constexpr, BN: tl.constexpr):
    m = tl.program_id(0) * BM
    n = tl.program_id(1) * BN
    y_desc.store([m, n], x_desc.load([m, n]) + c)



def test_cached_descriptor_launches_take_the_fast_path_keyed_by_what_specializes(rng, backend):
    pytest.importorskip("trident._native")
    k = _desc_add
    x = rng.standard_normal((48, 64)).astype(np.float32)
    y = np.full_like(x, np.nan)
    seen = 0
    # Each row: a fresh specialization (block shape, padding, dtype, sizes' divisibility by
    # 16) — kept once, then reused; results checked on every launch, so a reused wrong kernel
    # would show.
    for shape, block, pad, dtype in [((48, 64), [16, 32], "zero", np.float32),
                                     ((48, 64), [16, 32], "zero", np.float32),
                                     ((48, 64), [16, 16], "zero", np.float32),
                                     ((40, 64), [16, 16], "zero", np.float32),
                                     ((40, 64), [16, 16], "nan", np.float32),
                                     ((48, 64), [16, 16], "zero", np.float16)]:
        a = x.astype(dtype)
        out = np.full_like(a, np.nan)
        for i in range(3):
            out[:] = np.nan
            r = k[(3, 4)](TensorDescriptor(a, list(shape), [64, 1], block, pad),
                          TensorDescriptor(out, list(shape), [64, 1], block), 1.5, BM=16, BN=16, backend=backend)
            rows = shape[0]
            np.testing.assert_array_equal(out[:rows], (a[:rows] + np.asarray(1.5, dtype)).astype(dtype))
            assert np.isnan(out[rows:]).all()  # outside the descriptor's shape: untouched
        assert r["cache"] == "memo"
        seen = _entries(k)
    assert seen >= 4
    # A descriptor breaking a rule on the fast path gets the general path's error.
    bad = TensorDescriptor(x, [48, 64], [64, 1], [16, 16])
    bad.strides = [63, 1]
    y0 = y.copy()
    with pytest.raises(trident.ArgumentError, match="argument `x_desc`.*16 bytes"):
        k[(3, 4)](bad, TensorDescriptor(y, [48, 64], [64, 1], [16, 16]), 1.5, BM=16, BN=16, backend=backend)
    np.testing.assert_array_equal(y, y0)


def test_tritons_own_descriptor_class_is_taken_too(rng):
    # Triton's `TensorDescriptor` (when a program imports real Triton's) has the same fields:
    # taken by name and fields, on the general and the fast path alike.
    from dataclasses import dataclass
    from typing import Any, List

    @dataclass
    class TensorDescriptor:  # noqa: F811 - Triton's class, as Triton defines its fields
        base: Any
        shape: List[int]
        strides: List[int]
        block_shape: List[int]
        padding: str = "zero"
        round_f32_to_tf32: bool = False

    x = rng.standard_normal((32, 32)).astype(np.float32)
    for _ in range(3):
        y = np.full_like(x, np.nan)
        K.desc_scale[(2, 2)](TensorDescriptor(x, [32, 32], [32, 1], [16, 16]),
                             TensorDescriptor(y, [32, 32], [32, 1], [16, 16]), BLOCK_M=16, BLOCK_N=16)
        np.testing.assert_array_equal(y, 2 * x + 32)
