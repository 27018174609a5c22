"""Runs `triton-oracle` (Triton's own interpreter) on a kernel file written by someone else.

Used by scripts/heldout_check.py; same arguments as ../shared/tools/triton-oracle, plus:
  - modules the file imports that are not installed (torch, the project's own packages)
    are replaced by permissive stand-ins, so that host code around the kernels loads;
  - `@PATH.npy:bf16` (Trident's syntax) passes an f32 .npy file's values as a bf16 tensor.
"""
import importlib.abc
import importlib.machinery
import os
import sys
import types

os.environ["TRITON_INTERPRET"] = "1"
TOOLS = os.environ.get("TRIDENT_ORACLE_TOOLS", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tools"))


class _Any:
    """Whatever host code asks of a missing module: attributes, calls, subclassing, decorators.
    Calls are true (version checks pass) except `is_*()`, which is false (`is_npu_available()`,
    `is_hip()`: the oracle stands for CUDA Triton)."""

    def __init__(self, name="", *a, **k):
        self._name = name if isinstance(name, str) else ""

    def __call__(self, *a, **k):
        if len(a) == 1 and callable(a[0]) and not k:
            return a[0]  # used as a decorator: keep the function
        if self._name == "get_device_capability":
            return (9, 0)  # the CUDA sm_90 device Trident's front end answers as
        if self._name == "is_available":
            return True
        if self._name.startswith("is_"):
            return False
        return _Any()

    def __getattr__(self, n):
        if n.startswith("__") and n.endswith("__"):
            raise AttributeError(n)
        return _Any(n)

    def __getitem__(self, k):
        return _Any()

    def __mro_entries__(self, bases):
        return (object,)

    def __iter__(self):
        return iter(())

    def __or__(self, o):
        return self

    __ror__ = __or__

    # Version checks (`Version(triton.__version__) >= Version("3.0")`) take the new-Triton branch.
    def __ge__(self, o):
        return True

    __gt__ = __ge__

    def __lt__(self, o):
        return False

    __le__ = __lt__


class _StubModule(types.ModuleType):
    def __getattr__(self, n):
        if n.startswith("__") and n.endswith("__"):
            raise AttributeError(n)
        return _Any(n)


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec):
        m = _StubModule(spec.name)
        m.__path__ = []  # a package, so that submodules import too
        return m

    def exec_module(self, module):
        pass


class _StubFinder(importlib.abc.MetaPathFinder):
    """Last on sys.meta_path: answers only for modules no other finder found."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("triton", "numpy"):
            return None
        return importlib.machinery.ModuleSpec(name, _StubLoader(), is_package=True)


class _BlockPtr:
    """A block pointer, as Triton's interpreter up to 3.3 ran them (3.4+ removed them)."""

    def __init__(self, base, shape, strides, offsets, block_shape, order):
        self.base, self.shape, self.strides, self.offsets = base, shape, strides, offsets
        self.block_shape, self.order = block_shape, order
        self.dtype = base.dtype  # so that `p.dtype.element_ty` is the element type

    def advance(self, offsets):
        import triton.language as tl
        return tl.advance(self, offsets)

    def window(self, boundary_check):
        import triton.language as tl
        n = len(self.block_shape)
        ptr, mask = self.base, None
        if isinstance(boundary_check, int):
            boundary_check = (boundary_check,)
        checked = {int(tl.core._unwrap_if_constexpr(d)) for d in (boundary_check or ())}
        for d in range(n):
            idx = (tl.arange(0, self.block_shape[d]) + self.offsets[d]).to(tl.int64)
            for ax in range(n):
                if ax != d:
                    idx = tl.expand_dims(idx, ax)
            ptr = ptr + idx * self.strides[d]
            if d in checked:
                m = (idx >= 0) & (idx < self.shape[d])
                mask = m if mask is None else mask & m
        ptr = tl.broadcast_to(ptr, self.block_shape)
        if mask is not None:
            mask = tl.broadcast_to(mask, self.block_shape)
        return ptr, mask


def _patch_block_pointers():
    """Block pointers on Triton 3.9's interpreter: accesses become pointer blocks plus masks."""
    import triton.language as tl
    core = tl.core
    plain_load, plain_store = core.load, core.store
    unwrap = core._unwrap_if_constexpr

    def ints(v, dt):
        return [tl.full((), unwrap(x), dt) if not isinstance(x, core.tensor) else x.to(dt) for x in v]

    @core.builtin
    def make_block_ptr(base, shape, strides, offsets, block_shape, order, _semantic=None):
        return _BlockPtr(base, ints(shape, tl.int64), ints(strides, tl.int64), ints(offsets, tl.int32),
                         [int(unwrap(b)) for b in unwrap(block_shape)], order)

    @core.builtin
    def advance(base, offsets, _semantic=None):
        offs = [o + d for o, d in zip(base.offsets, ints(offsets, tl.int32))]
        return _BlockPtr(base.base, base.shape, base.strides, offs, base.block_shape, base.order)

    @core.builtin
    def load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
             eviction_policy="", volatile=False, _semantic=None):
        if isinstance(pointer, _BlockPtr):
            ptr, m = pointer.window(unwrap(boundary_check))
            pad = unwrap(padding_option)
            o = float("nan") if (m is not None and pad == "nan") else None
            return plain_load(ptr, m, o, _semantic=_semantic)
        return plain_load(pointer, mask, other, cache_modifier=cache_modifier, eviction_policy=eviction_policy,
                          volatile=volatile, _semantic=_semantic)

    @core.builtin
    def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy="", _semantic=None):
        if isinstance(pointer, _BlockPtr):
            ptr, m = pointer.window(unwrap(boundary_check))
            return plain_store(ptr, value, m, _semantic=_semantic)
        return plain_store(pointer, value, mask, cache_modifier=cache_modifier, eviction_policy=eviction_policy,
                           _semantic=_semantic)

    for mod in (tl, core):
        mod.make_block_ptr, mod.advance, mod.load, mod.store = make_block_ptr, advance, load, store


def _load_as_package_member():
    """The oracle loads the kernel file as a top-level module; a file inside a package (with
    `from .utils import ...`) must be loaded under its dotted name for relative imports to work."""
    import importlib.util
    plain = importlib.util.spec_from_file_location

    def spec_from_file_location(name, location=None, *a, **k):
        if name == "oracle_kernels" and location:
            d = os.path.dirname(os.path.abspath(location))
            parts = [os.path.splitext(os.path.basename(location))[0]]
            while os.path.isfile(os.path.join(d, "__init__.py")):
                parts.insert(0, os.path.basename(d))
                d = os.path.dirname(d)
            if len(parts) > 1:
                sys.path.insert(0, d)
                name = ".".join(parts)
                spec = plain(name, location, *a, **k)
                sys.modules[name] = importlib.util.module_from_spec(spec)
                return spec
        return plain(name, location, *a, **k)

    importlib.util.spec_from_file_location = spec_from_file_location


def _patch_builtin_aliases():
    """Module-level aliases of `tl` builtins (`triton_cast = tl.cast`) keep pointing at the
    unpatched function, which Triton's interpreter cannot run (compiled Triton can). Before a
    jit function runs, route such aliases in its globals to the live `tl` attribute."""
    import triton.language as tl
    import triton.runtime.interpreter as I

    def fix(glb):
        for k, v in list(glb.items()):
            if isinstance(v, type) or not callable(v) or not tl.core.is_builtin(v):
                continue
            for mod in (tl, tl.math):
                name = getattr(v, "__name__", "")
                if getattr(mod, name, None) is v and (k != name or glb.get("__name__") is not None):
                    glb[k] = (lambda m, n: lambda *a, **kw: getattr(m, n)(*a, **kw))(mod, name)
                    break

    # Compiled Triton hands a dtype argument to a jit function as a constexpr, so `dtype.value`
    # works there (FlagGems' get_dtype_min); the interpreter passes the bare dtype.
    if not hasattr(tl.core.dtype, "value"):
        tl.core.dtype.value = property(lambda self: self)

    for meth in ("run", "__call__"):
        plain = getattr(I.InterpretedFunction, meth)

        def wrapped(self, *a, _plain=plain, **k):
            fix(self.fn.__globals__)
            return _plain(self, *a, **k)

        setattr(I.InterpretedFunction, meth, wrapped)


def _patch_bf16(oracle):
    """Triton's interpreter holds bf16 as uint16 bits and computes on the bits (so `-1 < 1` is false
    in bf16). Compute bf16 arithmetic, comparisons and min/max/sum reductions on the values
    instead, rounding results back to bf16 (to nearest even, as the GPU does)."""
    import numpy as np
    import triton.language as tl
    import triton.runtime.interpreter as I

    def is_bf16(h):
        return h.dtype.scalar == tl.bfloat16 and h.data.dtype == np.uint16

    def values(h):
        return oracle.bf16_bits_to_f32(h.data) if is_bf16(h) else h.data

    plain_binary = I.InterpreterBuilder.binary_op

    def binary_op(self, lhs, rhs, op):
        if not (is_bf16(lhs) or is_bf16(rhs)):
            return plain_binary(self, lhs, rhs, op)
        out = op(values(lhs), values(rhs))
        if out.dtype == np.bool_:
            return I.TensorHandle(out, tl.int1)
        return I.TensorHandle(oracle.f32_to_bf16_bits(out.astype(np.float32)), tl.bfloat16)

    I.InterpreterBuilder.binary_op = binary_op

    plain_min_max, plain_sum = I.ReduceOps.min_max, I.ReduceOps.sum

    def min_max(self, input, val_reduce_op, idx_reduce_op=None):
        x = input[0] if isinstance(input, tuple) else input
        if not is_bf16(x.handle):
            return plain_min_max(self, input, val_reduce_op, idx_reduce_op)
        data = values(x.handle)
        val = idx = None
        if val_reduce_op:
            v = val_reduce_op(data, axis=self.axis, keepdims=self.keep_dims)
            val = self.to_tensor(oracle.f32_to_bf16_bits(np.asarray(v, np.float32)), x.dtype)
        if idx_reduce_op:
            idx = self.to_tensor(idx_reduce_op(data, axis=self.axis, keepdims=self.keep_dims), tl.int32)
        if val is not None and idx is not None:
            return val, idx
        return val if val is not None else idx

    def sum_(self, input):
        if not is_bf16(input.handle):
            return plain_sum(self, input)
        v = np.sum(values(input.handle), axis=self.axis, keepdims=self.keep_dims)
        return self.to_tensor(oracle.f32_to_bf16_bits(np.asarray(v, np.float32)), input.dtype)

    I.ReduceOps.min_max, I.ReduceOps.sum = min_max, sum_


def _patch_fp8_rounding():
    """Triton's interpreter rounds float -> fp8 by adding the first dropped bit to the mantissa,
    without carrying into the exponent and without ties-to-even (7.96 becomes 4.0, 168 becomes 176).
    Round to nearest even with saturation instead, as the GPU's cvt.rn.satfinite does."""
    import numpy as np
    import triton.runtime.interpreter as I
    import heldout_check as H

    plain = I._convert_float
    names = {"fp8e4nv": "f8e4m3", "fp8e5": "f8e5m2"}

    def values(data, dt):
        if dt.name == "bf16":
            return (data.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        if dt.name in names:
            return H.fp8_table(names[dt.name])[data.view(np.uint8)]
        return data.astype(np.float64)

    def convert(input, input_dtype, output_dtype, rounding_mode):
        out = names.get(output_dtype.name)
        if out is None or input_dtype.name in names:
            return plain(input, input_dtype, output_dtype, rounding_mode)
        v = values(np.asarray(input), input_dtype)
        table = H.fp8_table(out)
        r = H.fp8_round(np.nan_to_num(v, nan=0.0), out).astype(np.float64)
        finite = np.where(np.isnan(table), np.inf, table)
        codes = np.array([np.argmin(np.abs(finite - x)) for x in r.reshape(-1)], np.uint8).reshape(r.shape)
        neg_zero = (r == 0) & np.signbit(v)
        codes = np.where(neg_zero, np.uint8(0x80), codes)
        codes = np.where(np.isnan(v), np.uint8(0x7F), codes)
        return codes.astype(np.uint8)

    I._convert_float = convert


def _patch_driver():
    """Kernel files query the GPU at import time (`triton.runtime.driver.active...`); the oracle
    has none. Answer as a CUDA sm_90 device, as Trident's front end does."""
    import types
    import triton

    class _Driver:
        def get_current_target(self):
            return types.SimpleNamespace(backend="cuda", arch=90, warp_size=32)

        def get_active_torch_device(self):
            return "cuda"

        def get_current_device(self):
            return 0

        def __getattr__(self, n):
            return _Any(n)

    try:
        triton.runtime.driver.set_active(_Driver())
    except Exception:
        pass


def main():
    sys.path.insert(0, os.path.abspath(TOOLS))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import numpy as np
    import triton_oracle as oracle

    sys.meta_path.append(_StubFinder())
    _patch_block_pointers()
    _load_as_package_member()
    _patch_builtin_aliases()
    _patch_bf16(oracle)
    _patch_fp8_rounding()
    _patch_driver()
    plain = oracle.make_tensor
    fp8 = {"f8e4m3": "float8e4nv", "f8e5m2": "float8e5"}

    def make_tensor(spec, rng):
        suffix = spec.rsplit(":", 1)[-1]
        if spec.startswith("@") and suffix in ("bf16", "bfloat16"):
            return np.load(spec[1:].rsplit(":", 1)[0]).astype(np.float32), "bf16"
        if spec.startswith("@") and suffix in fp8:
            # fp8 tensors are their bit patterns, in a uint8 array whose dtype says which fp8 it is
            import heldout_check as H
            vals = np.load(spec[1:].rsplit(":", 1)[0]).astype(np.float64)
            table = H.fp8_table(suffix)
            bits = np.zeros(vals.shape, np.uint8).reshape(-1)
            for i, v in enumerate(vals.reshape(-1)):
                bits[i] = np.nanargmin(np.where(np.isnan(table), np.inf, np.abs(table - v))) if v == v else 0x7F
            return bits.reshape(vals.shape).view(np.dtype(np.uint8, metadata={"tl": fp8[suffix], "fp8": suffix})), None
        return plain(spec, rng)

    oracle.make_tensor = make_tensor

    class _TL(dict):
        def __getitem__(self, k):
            if k.metadata and "tl" in k.metadata:
                return k.metadata["tl"]
            return dict.__getitem__(self, k)

    oracle.TL = _TL(oracle.TL)
    plain_save = np.save

    def save(path, arr, *a, **k):
        # fp8 outputs are saved as their values in f32, as Trident saves them
        md = getattr(np.asarray(arr).dtype, "metadata", None)
        if md and "fp8" in md:
            import heldout_check as H
            arr = H.fp8_table(md["fp8"])[np.asarray(arr).view(np.uint8)].astype(np.float32)
        return plain_save(path, arr, *a, **k)

    oracle.np.save = save

    # The oracle passes constexprs by keyword and the rest by position, which misplaces
    # runtime parameters declared after a constexpr (`beta: tl.constexpr, n: int, ...`).
    # Passing every argument by keyword works for any order: make all of them look constexpr
    # to that one check.
    import inspect

    class _Inspect:
        Parameter = inspect.Parameter

        @staticmethod
        def signature(f):
            sig = inspect.signature(f)
            return sig.replace(parameters=[p.replace(annotation="constexpr") for p in sig.parameters.values()])

    oracle.inspect = _Inspect
    sys.exit(oracle.main(sys.argv[1:]))


if __name__ == "__main__":
    main()
