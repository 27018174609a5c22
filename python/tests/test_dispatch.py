"""The cached launch's native fast path (``_native.Dispatcher``): which launches take it, that a
different dtype, constexpr, int specialization, backend or environment never reuses a wrong
compiled kernel, that its errors are the general path's (same class, same text, arrays
untouched), and that everything it does not handle falls back to the general path. No timings
are asserted here: ``python/benchmarks/dispatch.py`` measures them."""

import pytest

np = pytest.importorskip("numpy")
trident = pytest.importorskip("trident")
pytest.importorskip("trident._native")

tl = trident.language


@trident.jit
def scale_add(x, out, n, a, K: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * a + K + n, mask=mask)


@trident.jit
def by_mode(x, out, n, MODE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x + offs, mask=mask)
    if MODE == "neg":
        v = -v
    tl.store(out + offs, v, mask=mask)


@trident.jit
def unmasked(x, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs))


@trident.jit
def twice(a, b, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(a + offs, tl.load(a + offs) + 1.0)
    tl.store(b + offs, tl.load(b + offs) + 2.0)


@trident.jit
def printer(x, BLOCK: tl.constexpr):
    tl.device_print("v", tl.load(x + tl.arange(0, BLOCK)))


def _entries(kernel):
    return kernel._dispatcher.cached() if kernel._dispatcher is not None else 0


def _poisoned(n, dtype=np.float32):
    return np.full(n, np.nan, dtype)


def test_cached_launches_take_the_fast_path(backend):

    @trident.jit
    def k(x, out, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) * 2.0, mask=offs < n)

    x = np.arange(16, dtype=np.float32)
    out = _poisoned(16)
    # The first launch describes the function (the general path); the second keeps its
    # compiled kernel; the rest take it.
    k[(1,)](x, out, 16, BLOCK=16, backend=backend)
    assert k._dispatcher is not None and _entries(k) == 0
    for _ in range(3):
        out[:] = np.nan
        r = k[(1,)](x, out, 16, BLOCK=16, backend=backend)
        np.testing.assert_array_equal(out, 2 * x)
    assert _entries(k) == 1 and r["cache"] == "memo" and r["backend"] == backend
    # `run` (what the autotuner calls) takes it too.
    out[:] = np.nan
    k.run(x, out, 16, BLOCK=16, grid=(1,), backend=backend)
    np.testing.assert_array_equal(out, 2 * x)


def test_a_different_dtype_constexpr_or_int_specialization_gets_its_own_kernel():
    n = 40
    expect = lambda x, n, a, k: (x * a + k + n).astype(x.dtype)  # noqa: E731
    seen = set()
    # (dtype, n, a, K): every change of a key part, in an order where reusing the previous
    # kernel would give wrong numbers (n == 1 is folded into the code, K is a constant).
    for dtype, count, a, k in [(np.float32, n, 2.0, 1), (np.float64, n, 2.0, 1), (np.float32, n, 2.0, 5),
                               (np.float32, 1, 2.0, 5), (np.float32, 16, 2.0, 5), (np.float32, 33, 2.0, 5),
                               (np.float32, 32, 3.0, 5), (np.float32, 1, 3.0, 5)]:
        x = np.arange(n, dtype=dtype)
        out = _poisoned(n, dtype)
        scale_add[(1,)](x, out, count, a, K=k, BLOCK=64)
        np.testing.assert_allclose(out[:count], expect(x[:count], count, a, k))
        assert np.isnan(out[count:]).all()
        spec = "one" if count == 1 else "16" if count % 16 == 0 else "plain"
        seen.add((np.dtype(dtype).name, k, spec))
    # One kept kernel per distinct specialization: dtype, K and n's (== 1, % 16) class; the
    # float `a` is not specialized on. (The first, if this test runs first, describing the
    # function, took the general path.)
    assert _entries(scale_add) in (len(seen), len(seen) - 1)


def test_string_constexprs_and_defaults_are_part_of_the_key():
    x = np.arange(8, dtype=np.float32)
    out = _poisoned(8)
    by_mode[(1,)](x, out, 8, "neg", BLOCK=8)
    np.testing.assert_array_equal(out, -x)
    by_mode[(1,)](x, out, 8, "id", BLOCK=8)
    np.testing.assert_array_equal(out, x)
    by_mode[(1,)](x, out, 8, MODE="neg", BLOCK=8)
    np.testing.assert_array_equal(out, -x)
    assert _entries(by_mode) == 2


def test_backend_debug_and_environment_changes_are_part_of_the_key(monkeypatch):
    x = np.arange(8, dtype=np.float32)
    out = _poisoned(8)
    assert by_mode[(1,)](x, out, 8, "id", BLOCK=8)["backend"] == "interp"
    before = _entries(by_mode)
    assert by_mode[(1,)](x, out, 8, "id", BLOCK=8, backend="emu")["backend"] == "emu"
    monkeypatch.setenv("TRIDENT_BACKEND", "emu")
    assert by_mode[(1,)](x, out, 8, "id", BLOCK=8)["backend"] == "emu"
    monkeypatch.delenv("TRIDENT_BACKEND")
    trident.set_backend("emu")
    try:
        assert by_mode[(1,)](x, out, 8, "id", BLOCK=8)["backend"] == "emu"
    finally:
        trident.set_backend(None)
    assert by_mode[(1,)](x, out, 8, "id", BLOCK=8)["backend"] == "interp"
    assert _entries(by_mode) == before + 1  # emu's kernel
    by_mode[(1,)](x, out, 8, "id", BLOCK=8, debug=True)
    monkeypatch.setenv("TRITON_F32_DEFAULT", "ieee")
    by_mode[(1,)](x, out, 8, "id", BLOCK=8)
    monkeypatch.setenv("TRIDENT_EMU_TARGET", "sm_90")
    by_mode[(1,)](x, out, 8, "id", BLOCK=8, backend="emu")
    assert _entries(by_mode) == before + 4
    np.testing.assert_array_equal(out, x)
    # With the compile cache off the fast path stands aside (each launch goes to the runtime).
    monkeypatch.setenv("TRIDENT_CACHE", "0")
    out[:] = np.nan
    by_mode[(1,)](x, out, 8, "neg", BLOCK=8)
    np.testing.assert_array_equal(out, -x)
    assert _entries(by_mode) == before + 4


def test_setting_debug_on_the_kernel_drops_its_dispatcher():
    @trident.jit
    def k(x, BLOCK: tl.constexpr):
        tl.store(x + tl.arange(0, BLOCK), 1.0)

    x = np.zeros(4, np.float32)
    k[(1,)](x, BLOCK=4)
    assert k._dispatcher is not None
    k.debug = True
    assert k._dispatcher is None
    k[(1,)](x, BLOCK=4)
    assert k._dispatcher is not None and (x == 1).all()


def _both_paths(kernel, grid, *args, **kwargs):
    """The exception of the fast path and of the general path for the same launch."""
    errors = []
    for launch in (lambda: kernel[grid](*args, **kwargs), lambda: kernel._run_slow(*args, grid=grid, **kwargs)):
        with pytest.raises(Exception) as e:
            launch()
        errors.append(e.value)
    return errors


def _same(errors, cls, match):
    fast, general = errors
    assert type(fast) is type(general) and isinstance(fast, cls), errors
    assert str(fast) == str(general) and str(fast.__cause__) == str(general.__cause__)
    assert match in str(fast), str(fast)


def test_errors_on_the_fast_path_are_the_general_paths(backend):
    x = np.arange(8, dtype=np.float32)
    out = _poisoned(64)
    unmasked[(1,)](np.arange(64, dtype=np.float32), out, BLOCK=64, backend=backend)  # cached now
    out[:] = np.nan
    _same(_both_paths(unmasked, (1,), x, out, BLOCK=64, backend=backend), trident.LaunchError, "out-of-bounds")
    assert np.isnan(out).all(), "nothing written back on error"

    buf = np.zeros(64, np.float32)
    twice[(1,)](np.zeros(32, np.float32), np.zeros(32, np.float32), BLOCK=32, backend=backend)
    _same(_both_paths(twice, (1,), buf[:32], buf[16:48], BLOCK=32, backend=backend), trident.LaunchError,
          "share memory")
    assert (buf == 0).all()
    ro = np.zeros(32, np.float32)
    ro.setflags(write=False)
    _same(_both_paths(twice, (1,), ro, np.zeros(32, np.float32), BLOCK=32, backend=backend), trident.LaunchError,
          "read-only")
    assert (ro == 0).all()


def test_argument_errors_fall_back_to_the_general_paths_messages():
    x = np.ones(4, np.float32)
    scale_add[(1,)](x, x.copy(), 4, 1.0, K=1, BLOCK=4)
    with pytest.raises(TypeError, match="BLOCK"):
        scale_add[(1,)](x, x, 4, 1.0, K=1)
    with pytest.raises(trident.ArgumentError, match="nope"):
        scale_add[(1,)](x, x, 4, 1.0, K=1, BLOCK=4, nope=1)
    with pytest.raises(trident.ArgumentError, match="negative strides"):
        scale_add[(1,)](x[::-1], x, 4, 1.0, K=1, BLOCK=4)
    with pytest.raises(trident.ArgumentError, match="argument `x`.*complex"):
        scale_add[(1,)](np.ones(4, np.complex64), x, 4, 1.0, K=1, BLOCK=4)
    with pytest.raises(trident.ArgumentError, match="grid"):
        scale_add[(1, 2, 3, 4)](x, x, 4, 1.0, K=1, BLOCK=4)
    with pytest.raises(trident.ArgumentError, match="negative grid"):
        scale_add[(-1,)](x, x, 4, 1.0, K=1, BLOCK=4)
    with pytest.raises(trident.ArgumentError, match="64 bits"):
        scale_add[(1,)](x, x, 1 << 70, 1.0, K=1, BLOCK=4)
    with pytest.raises(trident.ArgumentError):
        scale_add[(1,)](x, x, "four", 1.0, K=1, BLOCK=4)
    assert (x == 1).all()


def test_what_the_fast_path_leaves_to_the_general_path_still_works():
    x = np.arange(16, dtype=np.float32)
    out = _poisoned(16)
    # A callable grid (meta: the bound arguments), a dtype object, numpy scalars, a
    # big-endian array, a read-only view, an ignored launch keyword, an empty grid.
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (1,)

    scale_add[grid](x, out, np.int64(16), np.float32(2.0), K=1, BLOCK=16, num_ctas=1)
    np.testing.assert_array_equal(out, x * 2 + 1 + 16)
    assert seen["n"] == 16 and seen["x"] is x and seen["BLOCK"] == 16
    with pytest.raises(trident.ArgumentError, match="byte order"):
        scale_add[(1,)](x.astype(">f4"), out, 16, 2.0, K=1, BLOCK=16)
    out[:] = np.nan
    scale_add[(1,)](np.asarray(x), out, 16, 2.0, K=1, BLOCK=16, num_ctas=1)
    np.testing.assert_array_equal(out, x * 2 + 1 + 16)
    out[:] = np.nan
    assert scale_add[(0,)](x, out, 16, 2.0, K=1, BLOCK=16) is None
    assert np.isnan(out).all()
    # `warmup=` is taken and ignored by `run`, on either path.
    scale_add[(1,)](x, out, 16, 2.0, K=1, BLOCK=16, warmup=False)
    np.testing.assert_array_equal(out, x * 2 + 1 + 16)


def test_device_print_reaches_sys_stdout(capsys):
    x = np.arange(4, dtype=np.float32)
    for _ in range(2):  # compiled, then cached
        printer[(1,)](x, BLOCK=4)
        assert "v" in capsys.readouterr().out


def test_the_report_reads_like_a_dict():
    x = np.arange(4, dtype=np.float32)
    r = printer[(1,)](x, BLOCK=4)
    d = dict(r)
    assert set(d) == {"backend", "compile_s", "run_s", "cache", "printed"}
    assert r["backend"] == "interp" and r.get("nope", 7) == 7 and "run_s" in r and len(r) == 5
    assert d == r.as_dict() and r == d and isinstance(r["run_s"], float)
    with pytest.raises(KeyError):
        r["nope"]


def test_keyword_only_signatures_take_the_general_path():
    @trident.jit
    def k(x, *, BLOCK: tl.constexpr):
        tl.store(x + tl.arange(0, BLOCK), 3.0)

    x = np.zeros(4, np.float32)
    k[(1,)](x, BLOCK=4)
    assert k._dispatcher is None and (x == 3).all()


def test_threads_launch_the_same_kernel_on_their_own_arrays():
    import threading

    errors = []

    def work(seed):
        try:
            x = np.full(16, float(seed), np.float32)
            for i in range(20):
                out = _poisoned(16)
                scale_add[(1,)](x, out, 16, 2.0, K=i % 2, BLOCK=16)
                np.testing.assert_array_equal(out, x * 2 + i % 2 + 16)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_gpu_compile_options_from_the_environment_are_part_of_the_key(monkeypatch):
    # TRIDENT_PINGPONG, TRIDENT_SETMAXNREG, TRIDENT_NO_WGMMA and TRIDENT_SPLIT_LOOPS change
    # what the compile makes: a launch after a change must not reuse the kernel made before it.
    x = np.arange(8, dtype=np.float32)
    out = _poisoned(8)
    for _ in range(2):
        by_mode[(1,)](x, out, 8, "neg", BLOCK=8, backend="emu")
    before = _entries(by_mode)
    assert before >= 1
    for name, value in (("TRIDENT_PINGPONG", "0"), ("TRIDENT_SETMAXNREG", "1"), ("TRIDENT_NO_WGMMA", "1"),
                        ("TRIDENT_SPLIT_LOOPS", "1")):
        monkeypatch.setenv(name, value)
        out[:] = np.nan
        by_mode[(1,)](x, out, 8, "neg", BLOCK=8, backend="emu")
        np.testing.assert_array_equal(out, -x)
    assert _entries(by_mode) == before + 4


def test_cached_launches_of_an_autotuned_kernel_take_the_native_path(monkeypatch):
    @trident.autotune(configs=[trident.Config({"BLOCK": 16}), trident.Config({"BLOCK": 32}, num_warps=2)],
                      key=["n"])
    @trident.jit
    def tuned(x, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) * 3.0, mask=offs < n)

    calls = []
    run = type(tuned).run

    def counting(self, *args, **kwargs):
        calls.append(kwargs.get("grid"))
        return run(self, *args, **kwargs)

    monkeypatch.setattr(type(tuned), "run", counting)
    grid = lambda meta: (trident.cdiv(40, meta["BLOCK"]),)  # noqa: E731
    for i in range(4):
        x = np.random.default_rng(i).standard_normal(40).astype(np.float32)
        out = _poisoned(40)
        tuned[grid](x, out, 40, backend="emu")
        np.testing.assert_array_equal(out, x * np.float32(3.0))
    # The first launch of the key tunes (and the second makes the kernel's fast path); the
    # rest go native, and keep `best_config` current.
    assert len(calls) <= 2, calls
    assert tuned.best_config is not None and tuned.best_config.kwargs["BLOCK"] in (16, 32)
    # A new key value is tuned by the package once, then native too.
    before = len(calls)
    for _ in range(3):
        x = np.arange(24, dtype=np.float32)
        out = _poisoned(24)
        tuned[lambda meta: (trident.cdiv(24, meta["BLOCK"]),)](x, out, 24, backend="emu")
        np.testing.assert_array_equal(out, x * 3)
    assert len(calls) - before <= 2, calls
    # A meta-parameter given at the call as well as by the config is the package's TypeError.
    with pytest.raises(TypeError):
        tuned[grid](x, out, 24, BLOCK=16, backend="emu")


def test_autotuned_kernels_with_hooks_keep_the_package_path():
    seen = []

    @trident.autotune(configs=[trident.Config({"BLOCK": 16})], key=["n"], pre_hook=lambda args: seen.append(args["n"]))
    @trident.jit
    def hooked(x, out, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)

    x = np.arange(16, dtype=np.float32)
    for _ in range(3):
        out = _poisoned(16)
        hooked[(1,)](x, out, 16)
        np.testing.assert_array_equal(out, x)
    assert seen == [16, 16, 16]


def test_a_hook_set_after_native_launches_still_runs():
    @trident.autotune(configs=[trident.Config({"BLOCK": 16})], key=["n"])
    @trident.jit
    def later(x, out, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)

    x = np.arange(16, dtype=np.float32)
    out = _poisoned(16)
    for _ in range(3):
        later[(1,)](x, out, 16)  # tuned, then native
    seen = []
    later.pre_hook = lambda args: seen.append(args["n"])
    out[:] = np.nan
    later[(1,)](x, out, 16)
    np.testing.assert_array_equal(out, x)
    assert seen == [16]


def test_cached_launches_of_autotune_over_heuristics_skip_the_tuner(monkeypatch, backend):
    # Not a @jit function under the autotuner, so not the native `Tuned` path: the package's
    # table of chosen configs, in Python. Heuristics still run at every launch (SCALE follows
    # `a`, which is not in the key).
    @trident.autotune(configs=[trident.Config({"BLOCK": 16}), trident.Config({"BLOCK": 32}, num_warps=2)],
                      key=["n"])
    @trident.heuristics({"SCALE": lambda args: 2.0 if args["a"] > 0 else -2.0})
    @trident.jit
    def tuned(x, out, n, a, SCALE: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) * SCALE, mask=offs < n)

    keys = []
    key = type(tuned)._key
    monkeypatch.setattr(type(tuned), "_key", lambda self, named: keys.append(named["n"]) or key(self, named))
    grid = lambda meta: (trident.cdiv(meta["n"], meta["BLOCK"]),)  # noqa: E731
    for i, a in enumerate([1.0, -1.0, 3.0, -0.5]):
        x = np.random.default_rng(i).standard_normal(40).astype(np.float32)
        out = _poisoned(40)
        tuned[grid](x, out, 40, a, backend=backend)
        np.testing.assert_array_equal(out, x * np.float32(2.0 if a > 0 else -2.0))
    assert keys == [40], "tuned once; the later launches took the table"
    assert tuned.best_config.kwargs["BLOCK"] in (16, 32)
    # A new key value goes through the tuner once.
    x = np.arange(24, dtype=np.float32)
    for _ in range(2):
        out = _poisoned(24)
        tuned[grid](x, out, n=24, a=1.0, backend=backend)
        np.testing.assert_array_equal(out, x * 2)
    assert keys == [40, 24]
    # A hook set now runs: the table is dropped.
    seen = []
    tuned.pre_hook = lambda args: seen.append(args["n"])
    out = _poisoned(24)
    tuned[grid](x, out, 24, 1.0, backend=backend)
    np.testing.assert_array_equal(out, x * 2)
    assert seen == [24]


def test_heuristics_over_jit_run_at_every_launch_on_the_fast_path(backend):
    # The heuristics' functions see the arguments by name (positional and keyword) at every
    # launch, and their values reach the kernel, which then launches through its native fast
    # path (called by the heuristics directly).
    calls = []

    @trident.heuristics({"BLOCK": lambda args: calls.append(args["n"]) or trident.next_power_of_2(args["n"]),
                         "SCALE": lambda args: args["BLOCK"] * 0 + (3.0 if args["a"] > 0 else -1.0)})
    @trident.jit
    def scaled(x, out, n, a, BLOCK: tl.constexpr, SCALE: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) * SCALE, mask=offs < n)

    for i, (n, a) in enumerate([(10, 1.0), (40, -2.0), (10, 5.0), (33, 1.0)]):
        x = np.random.default_rng(i).standard_normal(n).astype(np.float32)
        out = _poisoned(n)
        if i % 2:
            scaled[(1,)](x, out, n, a=a, backend=backend)
        else:
            scaled[(1,)](x, out, n, a, backend=backend)
        np.testing.assert_array_equal(out, x * np.float32(3.0 if a > 0 else -1.0))
    assert calls == [10, 40, 10, 33]
