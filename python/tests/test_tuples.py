"""Triton's tuple arguments: tuples (and lists) of tensors and scalars passed to a kernel
parameter that is not a `tl.constexpr`, indexed, unpacked and handed to helpers inside the
kernel — on every CPU backend, against numpy, outputs poisoned; tensors inside a tuple are
written in place like any other argument."""

import pytest

np = pytest.importorskip("numpy")
trident = pytest.importorskip("trident")
pytest.importorskip("trident._native")

import trident.language as tl  # noqa: E402


@trident.jit
def add_pair(ptrs, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(ptrs[0] + offs, mask=mask)
    y = tl.load(ptrs[1] + offs, mask=mask)
    tl.store(out + offs, x + y, mask=mask)


@trident.jit
def _axpy(pair, a, offs, mask):
    x, y = pair
    return a * tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask)


@trident.jit
def nested(io, params, BLOCK: tl.constexpr):
    # io = ((x, y), out); params = (n, a): a runtime int and a runtime float.
    inputs, out = io
    n, a = params
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, _axpy(inputs, a, offs, mask), mask=mask)


@trident.jit
def sum_all(ptrs, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in tl.static_range(len(ptrs)):
        acc += tl.load(ptrs[i] + offs, mask=mask).to(tl.float32)
    tl.store(out + offs, acc, mask=mask)


@trident.jit
def shape_const(x, out, SHAPE: tl.constexpr):
    offs = tl.arange(0, SHAPE[0])
    tl.store(out + offs, tl.load(x + offs) * SHAPE[1])


def poisoned(n, dtype=np.float32):
    return np.full(n, np.nan, dtype)


def test_a_tuple_of_two_tensors(rng, backend):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n)
    add_pair[(trident.cdiv(n, 128),)]((x, y), out, n, BLOCK=128, backend=backend)
    np.testing.assert_array_equal(out, x + y)
    # A list is a tuple too (Triton takes either).
    out2 = poisoned(n)
    add_pair[(trident.cdiv(n, 128),)]([y, x], out2, n, BLOCK=128, backend=backend)
    np.testing.assert_array_equal(out2, x + y)


def test_nested_tuples_unpacked_with_runtime_scalars_and_passed_to_a_helper(rng, backend):
    n = 555
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    a = float(rng.uniform(0.5, 2.0))
    for m in (n, n - 100):  # the same compiled kernel: n is a runtime int inside the tuple
        out = poisoned(n)
        nested[(trident.cdiv(n, 64),)](((x, y), out), (m, a), BLOCK=64, backend=backend)
        # The GPU code contracts a * x + y into an FMA (as Triton's does): compare near zero absolutely.
        np.testing.assert_allclose(out[:m], np.float32(a) * x[:m] + y[:m], rtol=1e-6, atol=1e-6)
        assert np.isnan(out[m:]).all()


def test_the_tuples_length_and_dtypes_make_separate_compilations(rng, backend):
    n = 300
    xs = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    out = poisoned(n)
    sum_all[(trident.cdiv(n, 128),)](tuple(xs), out, n, BLOCK=128, backend=backend)
    np.testing.assert_allclose(out, xs[0] + xs[1] + xs[2], rtol=1e-6)
    halves = [x.astype(np.float16) for x in xs[:2]]
    out = poisoned(n)
    sum_all[(trident.cdiv(n, 128),)](tuple(halves), out, n, BLOCK=128, backend=backend)
    np.testing.assert_allclose(out, halves[0].astype(np.float32) + halves[1].astype(np.float32), rtol=1e-6)


def test_a_tensor_written_through_a_tuple_reaches_the_caller(rng, backend):
    n = 200
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n)
    nested[(trident.cdiv(n, 64),)](((x, x), out), (n, 3.0), BLOCK=64, backend=backend)
    np.testing.assert_allclose(out, 4 * x, rtol=1e-6)


def test_a_constexpr_tuple_stays_a_compile_time_value(rng, backend):
    x = rng.standard_normal(16).astype(np.float32)
    out = poisoned(16)
    shape_const[(1,)](x, out, SHAPE=(16, 3), backend=backend)
    np.testing.assert_array_equal(out, x * 3)


def test_a_tensor_in_a_constexpr_tuple_is_refused_and_nothing_is_written(rng):
    x = rng.standard_normal(16).astype(np.float32)
    out = poisoned(16)
    with pytest.raises(trident.CompilationError, match="tl.constexpr"):
        shape_const[(1,)](x, out, SHAPE=(x, 3))
    assert np.isnan(out).all()
