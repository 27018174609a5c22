"""``import trident``: kernels launched from Python on host arrays, on the interpreter and the
PTX emulator — results against numpy on fresh random inputs, outputs poisoned before each
launch, and every error case with the caller's arrays checked untouched."""

import os
import subprocess
import sys
import textwrap

import pytest

np = pytest.importorskip("numpy")
trident = pytest.importorskip("trident")
pytest.importorskip("trident._native")

import kernels_for_tests as K  # noqa: E402


def poisoned(shape, dtype=np.float32):
    return np.full(shape, np.nan, dtype)


def test_vector_add(rng, backend):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n)
    report = K.add[(trident.cdiv(n, 256),)](x, y, out, n, BLOCK=256, backend=backend)
    assert report["backend"] == backend
    np.testing.assert_array_equal(out, x + y)


def test_grid_callable_and_keyword_arguments(rng, backend):
    n = 777
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n)
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (trident.cdiv(meta["n"], meta["BLOCK"]),)

    K.add[grid](x=x, y=y, out=out, n=n, BLOCK=64, backend=backend)
    np.testing.assert_array_equal(out, x + y)
    assert seen["BLOCK"] == 64 and seen["n"] == n and seen["x"] is x


def test_strided_views_helpers_and_module_constants(rng, backend):
    base = rng.standard_normal((8, 40)).astype(np.float32)
    x = base[:, 3:33:2]  # a non-contiguous view, not starting at the buffer's start
    assert not x.flags.c_contiguous
    out = poisoned((8, 15))
    K.scale_rows[(8,)](x, out, x.strides[0] // 4, x.strides[1] // 4, out.strides[0] // 4, 15, BLOCK=16,
                       backend=backend)
    np.testing.assert_array_equal(out, 2 * x)
    before = base.copy()
    assert np.array_equal(base, before), "the input is left alone"


def test_transposed_input(rng):
    a = rng.standard_normal((16, 8)).astype(np.float32)
    x = a.T  # (8, 16), strides (4, 32)
    out = poisoned((8, 16))
    K.scale_rows[(8,)](x, out, x.strides[0] // 4, x.strides[1] // 4, 16, 16, BLOCK=16)
    np.testing.assert_array_equal(out, 2 * x)


def test_softmax_against_numpy(rng, backend):
    x = rng.standard_normal((33, 100)).astype(np.float32)
    y = poisoned(x.shape)
    K.softmax[(33,)](x, y, 100, 100, BLOCK=128, backend=backend)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype,tl_name", [("float16", "float16"), ("int32", "int32"), ("float64", "float64")])
def test_dtype_arguments(rng, dtype, tl_name):
    n = 300
    x = (rng.standard_normal(n) * 100).astype(np.float32)
    out = np.zeros(n, dtype)
    K.cast[(2,)](x, out, n, OUT_DTYPE=getattr(trident.language, tl_name), BLOCK=256)
    expect = x.astype(np.int32) if dtype == "int32" else x.astype(dtype)
    np.testing.assert_array_equal(out, expect)
    # numpy's dtype object works as a constexpr too.
    out2 = np.zeros(n, dtype)
    K.cast[(2,)](x, out2, n, OUT_DTYPE=np.dtype(dtype), BLOCK=256)
    np.testing.assert_array_equal(out2, expect)


def test_in_place_and_string_constexpr(rng, backend):
    n = 500
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    y0 = y.copy()
    K.axpy[(4,)](0.5, x, y, n, ACT="relu", BLOCK=128, backend=backend)
    np.testing.assert_allclose(y, np.maximum(np.float32(0.5) * x + y0, 0), rtol=1e-6)


def test_the_same_array_as_input_and_output(rng):
    n = 256
    x = rng.standard_normal(n).astype(np.float32)
    x0 = x.copy()
    K.add[(1,)](x, x, x, n, BLOCK=256)
    np.testing.assert_array_equal(x, x0 + x0)


def test_an_empty_grid_launches_nothing():
    out = poisoned(4)
    assert K.add[(0,)](out, out, out, 4, BLOCK=4) is None
    assert np.isnan(out).all()


# --- errors: each leaves the caller's arrays as they were -------------------------------------

def test_missing_and_unknown_arguments_are_type_errors():
    x = np.ones(4, np.float32)
    with pytest.raises(TypeError, match="BLOCK"):
        K.add[(1,)](x, x, x, 4)
    with pytest.raises(trident.ArgumentError, match="nope"):
        K.add[(1,)](x, x, x, 4, BLOCK=4, nope=1)


def test_unsupported_values_name_the_argument():
    x = np.ones(4, np.float32)
    with pytest.raises(trident.ArgumentError, match="argument `y`.*complex"):
        K.add[(1,)](x, np.ones(4, np.complex64), x, 4, BLOCK=4)
    with pytest.raises(trident.ArgumentError, match="argument `n`.*object"):
        K.add[(1,)](x, x, x, object(), BLOCK=4)
    with pytest.raises(trident.ArgumentError, match="negative strides"):
        K.add[(1,)](x[::-1], x, x, 4, BLOCK=4)
    with pytest.raises(trident.ArgumentError, match="grid"):
        K.add[(1, 2, 3, 4)](x, x, x, 4, BLOCK=4)


def test_compile_errors_show_the_line_and_a_caret():
    @trident.jit
    def broken(x, BLOCK: tl_constexpr):  # noqa: F821 - resolved below
        v = tl.load(x + tl.arange(0, BLOCK))
        tl.store(x + tl.arange(0, BLOCK), v + not_defined_anywhere)  # noqa: F821

    x = np.ones(16, np.float32)
    with pytest.raises(trident.CompilationError) as e:
        broken[(1,)](x, BLOCK=16)
    text = str(e.value)
    assert "not_defined_anywhere" in text and "^" in text and "test_package.py" in text, text
    assert (x == 1).all()


tl = trident.language
tl_constexpr = tl.constexpr


def test_out_of_bounds_is_a_launch_error_and_outputs_stay(backend):
    x = np.arange(8, dtype=np.float32)
    out = poisoned(64)
    with pytest.raises(trident.LaunchError, match="out-of-bounds"):
        K.unmasked[(1,)](x, out, BLOCK=64, backend=backend)
    assert np.isnan(out).all(), "nothing written back on error"


@trident.jit(sanitize=True)
def _unmasked_sanitized(x, out, BLOCK: tl_constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs))


def _interp_error(x, out):
    with pytest.raises(trident.LaunchError) as e:
        K.unmasked[(1,)](x, out, BLOCK=64, backend="interp")
    return str(e.value).splitlines()[0]


def test_sanitize_as_a_launch_keyword_reports_the_interpreters_error():
    x = np.arange(8, dtype=np.float32)
    out = poisoned(64)
    want = _interp_error(x, out)
    assert "out-of-bounds load: index 8 of buffer `x` (8 elements of f32), program (0, 0, 0), element [8]" in want
    with pytest.raises(trident.LaunchError) as e:
        K.unmasked[(1,)](x, out, BLOCK=64, backend="emu", sanitize=True)
    text = str(e.value)
    assert text.splitlines()[0] == want, text
    assert "tl.load(x + offs)" in text and "^" in text, text
    assert np.isnan(out).all(), "nothing written back on error"
    # In bounds, sanitized: the same results as unsanitized.
    x = np.arange(64, dtype=np.float32)
    K.unmasked[(1,)](x, out, BLOCK=64, backend="emu", sanitize=True)
    np.testing.assert_array_equal(out, x)


def test_sanitize_on_the_decorator():
    x = np.arange(8, dtype=np.float32)
    out = poisoned(64)
    with pytest.raises(trident.LaunchError, match=r"index 8 of buffer `x` \(8 elements of f32\)") as e:
        _unmasked_sanitized[(1,)](x, out, BLOCK=64, backend="emu")
    assert "PTX line" not in str(e.value), "reported by the sanitizer, not the emulator's own check"
    assert np.isnan(out).all()


def test_two_aliased_outputs_written_is_an_error(rng):
    buf = rng.standard_normal(64).astype(np.float32)
    before = buf.copy()

    @trident.jit
    def write_both(a, b, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(a + offs, tl.load(a + offs) + 1.0)
        tl.store(b + offs, tl.load(b + offs) + 2.0)

    with pytest.raises(trident.LaunchError, match="share memory"):
        write_both[(1,)](buf[:32], buf[16:48], BLOCK=32)
    np.testing.assert_array_equal(buf, before)


def test_read_only_arrays_may_be_read_not_written(rng):
    x = rng.standard_normal(64).astype(np.float32)
    x.setflags(write=False)
    out = poisoned(64)
    K.add[(1,)](x, x, out, 64, BLOCK=64)
    np.testing.assert_array_equal(out, x + x)
    with pytest.raises(trident.LaunchError, match="read-only"):
        K.add[(1,)](out, out, x, 64, BLOCK=64)


# --- autotune, heuristics -----------------------------------------------------------------------

def test_heuristics_and_autotune_with_pruning(rng, backend):
    calls = []

    def prune(configs, named, **kwargs):
        calls.append(sorted(named))
        return [c for c in configs if c.kwargs["BLOCK"] <= 256]

    @trident.autotune(configs=[trident.Config({"BLOCK": b}, num_warps=4) for b in (512, 128, 256)],
                      key=["n"], prune_configs_by={"early_config_prune": prune})
    @trident.heuristics({"EVEN": lambda a: a["n"] % 128 == 0})
    @trident.jit
    def tuned(x, out, n, EVEN: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        if EVEN:
            tl.store(out + offs, tl.load(x + offs) * 3.0)
        else:
            tl.store(out + offs, tl.load(x + offs, mask=offs < n) * 3.0, mask=offs < n)

    for n in (1000, 1024):
        x = rng.standard_normal(n).astype(np.float32)
        out = poisoned(n)
        tuned[lambda m: (trident.cdiv(m["n"], m["BLOCK"]),)](x, out, n, backend=backend)
        np.testing.assert_array_equal(out, x * np.float32(3.0))
        assert tuned.best_config.kwargs["BLOCK"] in (128, 256)
    assert len(calls) == 2 and "x" in calls[0], "prune_configs_by ran once per key"


# --- unchanged Triton programs --------------------------------------------------------------------

def test_python_dash_m_trident_runs_an_unchanged_triton_program(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent('''
        import numpy as np
        import triton
        import triton.language as tl

        @triton.jit
        def mul(x, out, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out + offs, tl.load(x + offs, mask=offs < n) * 2, mask=offs < n)

        x = np.arange(100, dtype=np.float32)
        out = np.zeros(100, np.float32)
        mul[(triton.cdiv(100, 32),)](x, out, 100, BLOCK=32)
        assert (out == 2 * x).all(), out
        print("ok", triton.__name__, triton.next_power_of_2(100))
    '''))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "-m", "trident", str(prog)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ok", "triton", "128"], r.stdout


def test_calling_a_kernel_directly_is_an_error():
    with pytest.raises(RuntimeError, match=r"add\[grid\]"):
        K.add(1, 2, 3)


def test_warmup_gives_the_stages_without_running(rng):
    x = rng.standard_normal(64).astype(np.float32)
    out = poisoned(64)
    ck = K.add.warmup(x, x, out, 64, BLOCK=64, grid=(1,))
    assert "tt.func" in ck.asm["ttir"] or "kernel @add" in ck.asm["ttir"], ck.asm["ttir"][:200]
    assert "#L0 = blocked" in ck.asm["ttgir"]
    ptx = ck.asm["ptx"]
    assert ".entry add" in ptx and ".target sm_80" in ptx
    assert np.isnan(out).all(), "warmup runs nothing"
    assert "ptx" in ck.asm and ck.metadata.name == "add"


def test_kernels_made_by_exec_of_patched_source(rng, backend):
    """Source text edited and exec'd (how Triton's own tests patch kernels): the text is found
    in the caller's frame and checked against the function's bytecode."""
    import inspect as _inspect
    import textwrap as _textwrap

    def patch(template, old, new):
        src = _textwrap.dedent(_inspect.getsource(template.fn)).replace(old, new)
        namespace = {}
        exec(src, vars(K), namespace)
        return namespace[template.fn.__name__]

    sub = patch(K.add, "tl.load(x + offs, mask=mask) + tl.load", "tl.load(x + offs, mask=mask) - tl.load")
    n = 300
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n)
    sub[(2,)](x, y, out, n, BLOCK=256, backend=backend)
    np.testing.assert_array_equal(out, x - y)


def test_errors_carry_their_text_as_cause_too():
    x = np.ones(4, np.float32)

    @trident.jit
    def bad_axis(x):
        tl.program_id(7)

    with pytest.raises(trident.CompilationError) as e:
        bad_axis[(1,)](x)
    assert "program_id" in str(e.value) and str(e.value.__cause__) == str(e.value)


def test_the_names_tritons_test_suite_imports():
    """What Triton's test_core.py needs of `triton` besides kernels (its helpers module, error
    classes, dtype properties), as `python -m trident` provides them."""
    from trident import _internal_testing as it
    from trident.runtime.errors import InterpreterError

    assert it.is_interpreter() and not it.is_cuda() and not it.is_hip_cdna3()
    x = it.numpy_random((3, 50), "int16", rs=np.random.RandomState(1))
    assert x.dtype == np.int16 and x.shape == (3, 50) and (x != 0).all(), "never zero: it divides"
    f = it.numpy_random(64, "bfloat16")
    assert f.dtype == np.float32 and (f.view(np.uint32) & 0xFFFF == 0).all(), "bf16-exact"
    assert it.numpy_random(8, "float8e5").dtype == np.int8
    assert InterpreterError is trident.LaunchError and trident.TritonError is trident.TridentError
    assert tl.float16.fp_mantissa_width == 10 and tl.bfloat16.exponent_bias == 127
    assert tl.dtype("int8") == tl.int8 and "int8" in tl.dtype.SINT_TYPES
    assert it.str_to_triton_dtype("float32") is tl.float32
    assert it.str_to_triton_dtype("float8_e5m2") is tl.float8e5 and it.str_to_triton_dtype("bool") is tl.int1


def test_constexpr_tuples(rng, backend):
    @trident.jit
    def reshape_copy(z, x, SHAPE: tl.constexpr):
        offs = tl.arange(0, 32)
        v = tl.reshape(tl.load(x + offs), SHAPE)
        r = tl.arange(0, SHAPE[0])[:, None] * SHAPE[1] + tl.arange(0, SHAPE[1])[None, :]
        tl.store(z + r, v)

    x = rng.standard_normal(32).astype(np.float32)
    z = poisoned(32)
    reshape_copy[(1,)](z, x, (4, 8), backend=backend)
    np.testing.assert_array_equal(z, x)
    # A tuple for a runtime parameter is Triton's tuple argument (test_tuples.py): here `n`
    # becomes a tuple the kernel compares with a tensor, which is a compile error.
    z = poisoned(32)
    with pytest.raises(trident.CompilationError, match="got tuple"):
        K.add[(1,)](x, x, z, (1, 2), BLOCK=32)
    assert np.isnan(z).all()


@trident.jit(sass_search="20")
def _searched_scale(x, out, n, BLOCK: tl_constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) * 2.0 + 1.0, mask=m)


@pytest.mark.skipif(not all(os.path.isfile(os.environ.get(v, "")) for v in ("TRIDENT_PTXAS", "TRIDENT_NVDISASM")),
                    reason="needs ptxas and nvdisasm (scripts/install-tools)")
def test_sass_search_on_the_decorator_and_at_launch(rng):
    # The first launch searches the cubin's schedule on the SASS emulator and keeps it in the
    # cache directory's schedules/; results are the kernel's either way.
    x = rng.standard_normal(300).astype(np.float32)
    out = poisoned(300)
    _searched_scale[(3,)](x, out, 300, BLOCK=128, backend="sass-emu")
    np.testing.assert_array_equal(out, x * np.float32(2.0) + np.float32(1.0))
    kept = os.listdir(os.path.join(os.environ["TRIDENT_CACHE_DIR"], "schedules"))
    assert any(f.endswith(".cubin") for f in kept), kept
    out2 = poisoned(300)
    K.unmasked[(1,)](x[:64], out2[:64], BLOCK=64, backend="sass-emu", sass_search="20")
    np.testing.assert_array_equal(out2[:64], x[:64])
