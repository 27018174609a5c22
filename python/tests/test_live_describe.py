"""``trident._live.describe``: the description of a live function, checked as dicts (pure Python).

The compiler side (``KernelProgram::from_live_json``) is tested in Rust on fixtures that
``crates/front/tests/data/live/gen_fixtures.py`` makes with this module's kernels; end-to-end
tests come with the package.

Without Triton installed, a small stand-in with Triton's module layout (``triton.language.core``,
``triton.language.math``, ``triton.language.extra.cuda.libdevice``, ``JITFunction`` with ``fn``,
``src`` and its options) is installed, so the kernels below read as Triton programs.
"""

import importlib.util
import inspect
import json
import linecache
import os
import sys
import textwrap
import types

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from trident._live import DescribeError, describe  # noqa: E402


def _module(name, **attrs):
    m = types.ModuleType(name)
    for k, v in attrs.items():
        if callable(v) and not isinstance(v, type) and getattr(v, "__module__", None) in (None, __name__):
            v.__module__ = name
        setattr(m, k, v)
    return m


def install_triton_shim():
    """Triton's module layout, as far as describe() looks at it (only when Triton is absent)."""
    if importlib.util.find_spec("triton") is not None:
        return False

    class JITFunction:
        def __init__(self, fn, do_not_specialize=None, debug=None, noinline=False):
            self.fn = fn
            self.__name__ = fn.__name__
            self.arg_names = list(inspect.signature(fn).parameters)
            self.do_not_specialize = [self.arg_names.index(a) if isinstance(a, str) else a
                                      for a in (do_not_specialize or [])]
            self.debug = debug
            self.noinline = noinline
            try:  # as Triton: the dedented source from `def` on
                src = textwrap.dedent(inspect.getsource(fn))
                self.src = src[src.index("def "):]
            except OSError:
                self.src = None

        def __call__(self, *a, **k):
            raise RuntimeError("not callable outside a kernel")

    JITFunction.__module__ = "triton.runtime.jit"

    def jit(fn=None, **kw):
        if fn is None:
            return lambda f: JITFunction(f, **kw)
        return JITFunction(fn, **kw)

    class Heuristics:
        def __init__(self, fn, values):
            self.fn, self.values = fn, values

    Heuristics.__module__ = "triton.runtime.autotuner"

    def heuristics(values):
        return lambda fn: Heuristics(fn, values)

    class dtype:
        def __init__(self, name):
            self.name = name

        def __repr__(self):
            return f"triton.language.{self.name}"

    class pointer_type(dtype):
        def __init__(self, element_ty):
            super().__init__(f"pointer<{element_ty.name}>")
            self.element_ty = element_ty

    class constexpr:
        def __init__(self, value):
            self.value = value

    for c in (dtype, pointer_type, constexpr):
        c.__module__ = "triton.language.core"

    def program_id(axis): ...
    def arange(start, end): ...
    def load(ptr, mask=None, other=None): ...
    def store(ptr, value, mask=None): ...
    def rsqrt_math(x): ...
    def rsqrt_libdevice(x): ...
    def _sum(x, axis=None): ...

    rsqrt_math.__name__ = rsqrt_math.__qualname__ = "rsqrt"
    rsqrt_libdevice.__name__ = rsqrt_libdevice.__qualname__ = "rsqrt"
    _sum.__name__ = _sum.__qualname__ = "sum"
    _sum.__module__ = "triton.language.standard"
    tl_sum = JITFunction.__new__(JITFunction)
    tl_sum.fn, tl_sum.src = _sum, None
    core = _module("triton.language.core", program_id=program_id, arange=arange, load=load, store=store,
                   dtype=dtype, pointer_type=pointer_type, constexpr=constexpr)
    math = _module("triton.language.math", rsqrt=rsqrt_math)
    libdevice = _module("triton.language.extra.cuda.libdevice", rsqrt=rsqrt_libdevice)
    extra_libdevice = _module("triton.language.extra.libdevice", rsqrt=rsqrt_libdevice)
    cuda = _module("triton.language.extra.cuda", libdevice=libdevice)
    extra = _module("triton.language.extra", cuda=cuda, libdevice=extra_libdevice)
    tl = _module("triton.language", core=core, math=math, extra=extra, program_id=program_id, arange=arange,
                 load=load, store=store, dtype=dtype, pointer_type=pointer_type, constexpr=constexpr,
                 float16=dtype("fp16"), float32=dtype("fp32"), int32=dtype("int32"), bfloat16=dtype("bf16"),
                 sum=tl_sum)
    jit_mod = _module("triton.runtime.jit", JITFunction=JITFunction, jit=jit)
    triton = _module("triton", jit=jit, heuristics=heuristics, language=tl, __version__="3.3.0")
    triton.runtime = _module("triton.runtime", jit=jit_mod)
    for m in (triton, triton.runtime, jit_mod, tl, core, math, extra, cuda, libdevice, extra_libdevice):
        sys.modules[m.__name__] = m
    return True


SHIMMED = install_triton_shim()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.language.math import rsqrt as math_rsqrt  # noqa: E402

BLOCK_DEFAULT = 128
SCALE = 0.5
BIG = 2**70 + 1
MODE: tl.constexpr = tl.constexpr(1)
NAME = "gelu"
NOTHING = None
HALF = tl.float16
HALF_PTR = tl.pointer_type(tl.float16)
SHAPE = (4, 8)
FLAG = True


class Opaque:
    def __repr__(self):
        return "<Opaque thing>"


THING = Opaque()


@triton.jit
def scaled_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if MODE == 1 and FLAG:
        x = x * SCALE + BIG - BIG
    y = math_rsqrt(x.to(HALF)) if NAME == "gelu" and NOTHING is None else x
    tl.store(y_ptr + offs, y + SHAPE[0], mask=offs < n)


@triton.jit
def uses_opaque(x_ptr):
    tl.store(x_ptr, THING)


@triton.jit
def helper(x):
    return x * SCALE


@triton.jit
def countdown(x, n: tl.constexpr):
    if n > 0:
        return countdown(x, n - 1)
    return helper(x)


@triton.jit
def calls_helpers(x_ptr):
    x = tl.load(x_ptr)
    tl.store(x_ptr, helper(x) + helper(x) + countdown(x, 2))


@triton.jit(do_not_specialize=["n"], debug=True)
def with_options(x_ptr, n, BLOCK: tl.constexpr = BLOCK_DEFAULT * 2):
    tl.store(x_ptr + tl.arange(0, BLOCK), n)


def lines_of(fn):
    lines, first = inspect.getsourcelines(fn)
    return "".join(lines), first


def import_file(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def functions(d, out=None):
    """Every function dict of a description, by key."""
    out = {} if out is None else out
    out[d["key"]] = d

    def walk(v):
        if v.get("kind") == "jit" and "value" in v:
            functions(v["value"], out)
        for x in v.get("attrs", {}).values():
            walk(x)
        if v.get("kind") in ("tuple",):
            for x in v["value"]:
                walk(x)

    for v in list(d["globals"].values()) + list(d.get("defaults", {}).values()):
        walk(v)
    return out


def jit_target(d, v):
    """The function dict a jit value names (described in place or referred to by key)."""
    assert v["kind"] == "jit", v
    return v["value"] if "value" in v else functions(d)[v["ref"]]


def test_a_kernel_is_its_source_position_file_and_the_values_of_the_names_it_uses():
    d = describe(scaled_copy)
    source, first = lines_of(scaled_copy.fn)
    assert d["name"] == "scaled_copy"
    assert d["path"] == os.path.abspath(__file__)
    assert d["source"] == source and source.startswith("@triton.jit\ndef scaled_copy(")
    assert d["first_line"] == first
    assert d["file_text"] == open(__file__).read()
    assert d["key"] == "0"
    assert "options" in d and d["options"]["do_not_specialize"] == []
    g = d["globals"]
    assert g["tl"] == {"kind": "module", "value": "triton.language"}
    assert g["SCALE"] == {"kind": "float", "value": "0.5"}
    assert g["BIG"] == {"kind": "int", "value": str(2**70 + 1)}
    assert g["MODE"] == {"kind": "constexpr", "value": {"kind": "int", "value": "1"}}
    assert g["FLAG"] == {"kind": "bool", "value": True}
    assert g["NAME"] == {"kind": "str", "value": "gelu"}
    assert g["NOTHING"] == {"kind": "none"}
    assert g["HALF"] == {"kind": "dtype", "value": "fp16"}
    assert g["SHAPE"] == {"kind": "tuple", "value": [{"kind": "int", "value": "4"}, {"kind": "int", "value": "8"}]}
    # An alias is what it names.
    assert g["math_rsqrt"] == {"kind": "builtin", "value": "triton.language.math.rsqrt"}
    # Exactly the names the code uses: attributes of modules are resolved by the compiler, and
    # Python builtins and locals are not globals.
    assert "offs" not in g and "min" not in g and "THING" not in g and "HALF_PTR" not in g
    assert set(g) >= {"tl", "SCALE", "BIG", "MODE", "FLAG", "NAME", "NOTHING", "HALF", "SHAPE", "math_rsqrt"}
    json.loads(json.dumps(d))


def test_pointer_dtypes_and_opaque_values():
    vals = describe(uses_opaque)["globals"]
    assert vals["THING"] == {"kind": "opaque", "value": "<Opaque thing>"}

    @triton.jit
    def k(x_ptr):
        tl.store(x_ptr, HALF_PTR)

    assert describe(k)["globals"]["HALF_PTR"] == {"kind": "dtype", "value": "*fp16"}


def test_liger_module_level_if_binding_rsqrt_is_just_a_builtin(tmp_path):
    # Liger-Kernel's rms_norm.py: host Python only real Python can run chooses `rsqrt`.
    mod = import_file(tmp_path, "liger_like_rms_norm", '''
        import operator
        import triton
        import triton.language as tl

        def compare_version(package, op, target):
            have = tuple(int(p) for p in triton.__version__.split(".")[:2])
            return op(have, tuple(int(p) for p in target.split(".")[:2]))

        def is_npu_available():
            return False

        if compare_version("triton", operator.ge, "3.0.0") and not is_npu_available():
            try:
                from triton.language.extra.libdevice import rsqrt
            except ModuleNotFoundError:
                from triton.language.extra.cuda.libdevice import rsqrt
        else:
            from triton.language.math import rsqrt

        _CASTING_MODE_NONE: tl.constexpr = tl.constexpr(-1)
        _CASTING_MODE_LLAMA: tl.constexpr = tl.constexpr(0)

        @triton.jit
        def _rms_norm_forward_kernel(Y_ptr, X_ptr, n_cols, eps, casting_mode: tl.constexpr, BLOCK_SIZE: tl.constexpr):
            cols = tl.arange(0, BLOCK_SIZE)
            x = tl.load(X_ptr + cols, mask=cols < n_cols, other=0)
            if casting_mode == _CASTING_MODE_LLAMA:
                x = x.to(tl.float32)
            rstd = rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
            tl.store(Y_ptr + cols, x * rstd, mask=cols < n_cols)
    ''')
    d = describe(mod._rms_norm_forward_kernel)
    g = d["globals"]
    assert g["rsqrt"]["kind"] == "builtin"
    assert g["rsqrt"]["value"].endswith(".rsqrt") and "libdevice" in g["rsqrt"]["value"]
    assert g["_CASTING_MODE_LLAMA"] == {"kind": "constexpr", "value": {"kind": "int", "value": "0"}}
    assert "compare_version" not in g and "is_npu_available" not in g
    assert d["path"] == str(tmp_path / "liger_like_rms_norm.py")
    assert d["first_line"] == d["file_text"].splitlines().index("@triton.jit") + 1


def test_helpers_are_described_once_and_cycles_are_references():
    d = describe(calls_helpers)
    g = d["globals"]
    h = jit_target(d, g["helper"])
    assert h["name"] == "helper" and h["globals"]["SCALE"] == {"kind": "float", "value": "0.5"}
    c = jit_target(d, g["countdown"])
    # Recursion refers back to the function being described; a helper used twice is described once.
    assert c["globals"]["countdown"] == {"kind": "jit", "ref": c["key"]}
    assert jit_target(d, c["globals"]["helper"]) is h
    assert sorted(functions(d)) == ["0", "1", "2"]
    assert json.dumps(d).count('"name": "helper"') == 1
    json.loads(json.dumps(d))


def test_helpers_from_other_modules_carry_their_own_source_and_globals(tmp_path):
    import_file(tmp_path, "live_helpers_mod", '''
        import triton
        import triton.language as tl
        FACTOR = 3

        @triton.jit
        def triple(x):
            return x * FACTOR
    ''')
    mod = import_file(tmp_path, "live_kernel_mod", '''
        import triton
        import triton.language as tl
        import live_helpers_mod as hm
        from live_helpers_mod import triple as t

        @triton.jit
        def k(x_ptr):
            x = tl.load(x_ptr)
            tl.store(x_ptr, t(x) + hm.triple(x) + hm.FACTOR)
    ''')
    d = describe(mod.k)
    t = jit_target(d, d["globals"]["t"])
    assert t["path"] == str(tmp_path / "live_helpers_mod.py")
    # `triton` for the decorator (`@triton.jit(...)` keywords are read by the compiler).
    assert t["globals"] == {"FACTOR": {"kind": "int", "value": "3"}, "triton": {"kind": "module", "value": "triton"}}
    hm = d["globals"]["hm"]
    assert hm["kind"] == "module" and hm["value"] == "live_helpers_mod"
    # Attributes of a module the compiler does not know: what the code may take of it.
    assert hm["attrs"]["FACTOR"] == {"kind": "int", "value": "3"}
    assert jit_target(d, hm["attrs"]["triple"]) is t


def test_exec_of_a_string_with_its_source_given_or_registered():
    src = textwrap.dedent('''
        import triton
        import triton.language as tl
        WIDTH = 64

        @triton.jit
        def generated(x_ptr):
            tl.store(x_ptr + tl.arange(0, WIDTH), 1.0)
    ''')
    # Registered with linecache under the code's file name: inspect (and Triton) find it.
    name = "<trident-test-generated-1>"
    linecache.cache[name] = (len(src), None, src.splitlines(keepends=True), name)
    g = {}
    exec(compile(src, name, "exec"), g)
    d = describe(g["generated"])
    assert d["path"] == name
    assert d["first_line"] == 6 and d["source"].startswith("@triton.jit\ndef generated(")
    assert d["file_text"] == src
    assert d["globals"]["WIDTH"] == {"kind": "int", "value": "64"}

    # Not registered: the source must be given. (Triton itself refuses to decorate such a
    # function, so this part runs on the stand-in only.)
    g = {}
    try:
        exec(src.replace("generated", "generated2"), g)
    except ValueError as e:
        assert "defined in a Python file" in str(e)
        return
    with pytest.raises(DescribeError, match="__trident_source__"):
        describe(g["generated2"])
    g["generated2"].fn.__trident_source__ = src.replace("generated", "generated2")
    d = describe(g["generated2"])
    assert d["path"] == "<string>" and d["first_line"] == 6
    assert d["file_text"].splitlines()[5:7] == d["source"].splitlines()[:2]


def test_text_patched_source_is_compiled_as_patched():
    @triton.jit
    def patched(x_ptr):
        tl.store(x_ptr, 1)

    real, first = lines_of(patched.fn)
    new_src = patched.src.replace("1)", "2)")
    if hasattr(patched, "_unsafe_update_src"):
        patched._unsafe_update_src(new_src)  # Triton 3.4+: `src` is read-only
    else:
        patched.src = new_src
    d = describe(patched)
    assert d["source"] == patched.src and d["file_text"] is None
    # Placed where the original `def` line was.
    assert d["first_line"] == first + 1


def test_closures_over_constants_resolve_their_cells():
    def make(block, scale):
        @triton.jit
        def closed(x_ptr):
            offs = tl.arange(0, block)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) * scale)
        return closed

    a, b = make(16, 2.0), make(32, 0.25)
    da, db = describe(a), describe(b)
    assert da["globals"]["block"] == {"kind": "int", "value": "16"}
    assert db["globals"]["scale"] == {"kind": "float", "value": "0.25"}
    assert da["source"] == db["source"] and da["source"].startswith("        @triton.jit\n")
    src, first = lines_of(a.fn)
    assert da["first_line"] == first and da["source"] == src


def test_jit_options_and_python_evaluated_defaults():
    d = describe(with_options)
    o = d["options"]
    # The stand-in keeps positions, Triton 3.9 the names as given (the front end reads both),
    # and has no `noinline` attribute.
    assert o["do_not_specialize"] in ([1], ["n"]) and o["debug"] is True
    assert o.get("noinline", False) is False and o.get("do_not_specialize_on_alignment", []) == []
    assert d["defaults"] == {"BLOCK": {"kind": "int", "value": "256"}}
    # Names only the signature uses (annotations, defaults) are described too.
    assert "BLOCK_DEFAULT" in d["globals"]


def test_language_functions_that_are_jitted_are_builtins():
    @triton.jit
    def k(x_ptr):
        tl.store(x_ptr, s(tl.load(x_ptr)))

    s = tl.sum
    assert describe(k)["globals"]["s"] == {"kind": "builtin", "value": "triton.language.standard.sum"}


def test_trident_spelled_kernels(tmp_path):
    # A `trident` package whose language lives in a private module and is re-exported.
    core = types.ModuleType("trident.language._core")

    def load(ptr):
        ...

    load.__module__ = "trident.language._core"
    core.load = load
    lang = types.ModuleType("trident.language")
    lang.load = load
    trident_pkg = types.ModuleType("trident")
    trident_pkg.language = lang
    saved = {k: sys.modules.get(k) for k in ("trident.language", "trident.language._core")}
    sys.modules["trident.language"], sys.modules["trident.language._core"] = lang, core
    try:
        g = {"tl": lang, "ld": load}

        def k(x_ptr):
            return tl.load(x_ptr) + ld(x_ptr)

        k2 = types.FunctionType(k.__code__, g, "k")
        d = describe(k2)
    finally:
        for name, m in saved.items():
            if m is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = m
    assert d["globals"]["tl"] == {"kind": "module", "value": "trident.language"}
    assert d["globals"]["ld"] == {"kind": "builtin", "value": "trident.language.load"}


def test_not_a_function():
    with pytest.raises(DescribeError):
        describe(42)
    with pytest.raises(DescribeError):
        describe(tl)


def test_heuristics_wrappers_reach_the_jitted_function():
    wrapped = triton.heuristics({"BLOCK": lambda args: 64})(scaled_copy)
    d = describe(wrapped)
    assert d["name"] == "scaled_copy" and d["source"].startswith("@triton.jit")
