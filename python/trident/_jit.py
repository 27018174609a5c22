"""``@trident.jit``: a kernel made of a live Python function, launched as ``kernel[grid](...)``."""

from __future__ import annotations

import functools
import inspect
import json
import os
import sys
import threading

from . import _args, _live
from ._errors import ArgumentError, from_native

# Launch keywords Triton takes besides the kernel's own parameters. `num_ctas`, `maxnreg`
# and the rest are accepted and ignored on the CPU backends.
_LAUNCH_KEYWORDS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion",
                    "launch_cooperative_grid", "backend", "debug", "sanitize", "sass_search",
                    # For device arrays: the CUDA stream to queue on; the autotuner's timed launches.
                    "stream", "_trident_timed")

_default_backend = None


def set_backend(name):
    """The backend later launches use: ``"interp"`` (Trident's tile-IR interpreter, the
    default), ``"emu"`` (the PTX emulator), ``"sass-emu"`` (the SASS ptxas makes, on the SASS
    emulator), ``"cuda"``, or None (back to ``TRIDENT_BACKEND`` / interp)."""
    global _default_backend
    if name not in (None, "interp", "emu", "cuda", "sass-emu"):
        raise ValueError(f"unknown backend {name!r}: 'interp', 'emu', 'sass-emu' or 'cuda'")
    _default_backend = name


def backend():
    """The backend a launch without ``backend=`` uses."""
    b = _default_backend or os.environ.get("TRIDENT_BACKEND") or "interp"
    if b not in ("interp", "emu", "cuda", "sass-emu"):
        raise ValueError(f"TRIDENT_BACKEND={b!r}: expected interp, emu, sass-emu or cuda")
    return b


_native_module = None


def _native():
    """``trident._native``, imported on first use: the pure-Python parts work without the build."""
    global _native_module
    if _native_module is None:
        from . import _native as n
        # Cache keys fingerprint the compiler's code: this module's file, not Python's.
        n.set_code_file(n.__file__)
        _native_module = n
    return _native_module


def grid3(name, grid, meta):
    """A grid (tuple or callable of the meta-parameters) as three positive ints, or None for
    an empty grid (nothing to launch, as in Triton)."""
    if type(grid) is tuple and len(grid) == 1 and type(grid[0]) is int and 0 < grid[0] < 1 << 31:
        return (grid[0], 1, 1)  # the common case, checked quickly
    g = grid(meta) if callable(grid) else grid
    if isinstance(g, int) or hasattr(g, "__index__"):
        g = (g,)
    try:
        g = tuple(int(x) for x in g)
    except TypeError:
        raise ArgumentError(f"{name}: the grid must be a tuple of 1 to 3 ints or a callable "
                            f"returning one, not {g!r}") from None
    if not 1 <= len(g) <= 3:
        raise ArgumentError(f"{name}: the grid has {len(g)} dimensions; 1 to 3 are allowed")
    if any(x < 0 for x in g):
        raise ArgumentError(f"{name}: negative grid {g}")
    if any(x == 0 for x in g):
        return None
    if any(x >= 1 << 31 for x in g):
        raise ArgumentError(f"{name}: grid {g} exceeds 2^31 - 1 programs in a dimension")
    return g + (1,) * (3 - len(g))


def _code_of(text, name):
    """The code object of function ``name`` defined at the top of ``text``, or None."""
    try:
        module = compile(text, "<string>", "exec")
    except (SyntaxError, ValueError):
        return None
    return next((c for c in module.co_consts if getattr(c, "co_name", None) == name), None)


def _exec_source(fn):
    """The text a function made by ``exec(text)`` came from, which Python does not keep: the
    string in a local of the frame that ran ``exec`` whose compiled function has the same
    bytecode (how Triton's test suite and other code patch kernels: source text edited, then
    exec'd). None if there is no such frame or string."""
    code = fn.__code__
    frame = inspect.currentframe()
    try:
        while frame is not None and frame.f_code.co_filename != code.co_filename:
            frame = frame.f_back
        caller = frame.f_back if frame is not None else None
        if caller is None:
            return None
        marker = f"def {fn.__name__}("
        for value in list(caller.f_locals.values()):
            if isinstance(value, str) and marker in value:
                other = _code_of(value, fn.__name__)
                if other is not None and other.co_code == code.co_code and other.co_names == code.co_names:
                    return value
        return None
    finally:
        del frame


class KernelInterface:
    """``kernel[grid](*args, **kwargs)``, as Triton spells a launch."""

    def __getitem__(self, grid):
        return functools.partial(self.run, grid=grid)


class JITFunction(KernelInterface):
    """A kernel: the Python function (``fn``) and what Trident compiled of it."""

    def __init__(self, fn, *, do_not_specialize=(), do_not_specialize_on_alignment=(),
                 debug=None, noinline=None, repr=None, launch_metadata=None, sanitize=None, sass_search=None):
        if not inspect.isfunction(fn):
            raise TypeError(f"@jit needs a Python function, not {type(fn).__name__}")
        self.fn = fn
        # The native fast path of cached launches (`_native.Dispatcher`), made with the program
        # for plain signatures; dropped when `debug`, `sanitize` or `sass_search` change (it
        # keeps them).
        self._dispatcher = None
        self.do_not_specialize = list(do_not_specialize)
        self.do_not_specialize_on_alignment = list(do_not_specialize_on_alignment)
        self.debug = debug
        # Sanitize mode on emu and cuda (``sanitize=True`` here or at launch, or
        # TRIDENT_SANITIZE=1): every global access is bounds-checked in the kernel.
        self.sanitize = sanitize
        # A searched SASS schedule on sass-emu and cuda (``sass_search="30s"`` here or at
        # launch, or TRIDENT_SASS_SEARCH): the first launch searches, later ones reuse it.
        self.sass_search = sass_search
        self.noinline = noinline
        self.signature = inspect.signature(fn)
        self.arg_names = list(self.signature.parameters)
        params = self.signature.parameters.values()
        # The fast binder's view of the signature (plain positional-or-keyword parameters);
        # anything else (*args, keyword-only, positional-only) binds through inspect.
        self._simple = all(p.kind == p.POSITIONAL_OR_KEYWORD for p in params)
        self._defaults = {p.name: p.default for p in params if p.default is not p.empty}
        self._names = frozenset(self.arg_names)
        self._program = None
        self._lock = threading.Lock()
        functools.update_wrapper(self, fn)
        if fn.__code__.co_filename.startswith("<") and not hasattr(fn, "__trident_source__"):
            text = _exec_source(fn)
            if text is not None:
                fn.__trident_source__ = text

    @property
    def debug(self):
        return self._debug

    @debug.setter
    def debug(self, value):
        self._debug = value
        self._dispatcher = None

    @property
    def sanitize(self):
        return self._sanitize

    @sanitize.setter
    def sanitize(self, value):
        self._sanitize = value
        self._dispatcher = None

    @property
    def sass_search(self):
        return self._sass_search

    @sass_search.setter
    def sass_search(self, value):
        self._sass_search = value
        self._dispatcher = None

    def __getitem__(self, grid):
        d = self._dispatcher
        if d is not None:
            return d[grid]  # a native launcher: the fast path, else `_run_slow`
        return functools.partial(self.run, grid=grid)

    def __repr__(self):
        return f"JITFunction({self.fn.__module__}:{self.fn.__qualname__})"

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"`{self.__name__}` is a @jit function: launch it as "
                           f"`{self.__name__}[grid](...)`, or call it from another @jit function")

    def program(self):
        """The native program compiled from this function's live description (made once)."""
        if self._program is None:
            with self._lock:
                if self._program is None:
                    description = _live.describe(self)
                    n = _native()
                    try:
                        self._program = n.Program(json.dumps(description))
                    except n.NativeError as e:
                        raise from_native(e)  # its __cause__ carries the text
        if self._dispatcher is None and self._simple:
            self._make_dispatcher()
        return self._program

    def _make_dispatcher(self):
        import numpy
        from . import _errors
        n = _native()
        try:
            self._dispatcher = n.Dispatcher(
                self._program, self.__name__, self.arg_names,
                [(name in self._defaults, self._defaults.get(name)) for name in self.arg_names],
                bool(self.debug), bool(self.sanitize), self._run_slow, sys.modules[__name__],
                _errors.from_native, numpy.ndarray, self.sass_search is not None)
        except n.NativeError:
            self._dispatcher = None  # the general path reports whatever is wrong

    def bind(self, args, kwargs):
        """Arguments by parameter name, defaults applied (launch keywords removed first)."""
        names = self.arg_names
        if self._simple and len(args) <= len(names) and self._names.issuperset(kwargs):
            out = dict(zip(names, args))
            if not any(k in out for k in kwargs):
                out.update(kwargs)
                if len(out) < len(names):
                    for n in names:
                        if n not in out:
                            if n not in self._defaults:
                                break
                            out[n] = self._defaults[n]
                    else:
                        return {n: out[n] for n in names}
                else:
                    return {n: out[n] for n in names}
        # Anything unusual (and every error): inspect's binder and its messages.
        try:
            b = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise ArgumentError(f"{self.__name__}: {e}") from None
        b.apply_defaults()
        return dict(b.arguments)

    def run(self, *args, grid, warmup=False, **kwargs):
        d = self._dispatcher
        if d is not None:
            done, result = d.try_launch(grid, args, kwargs)
            if done:
                return result
        return self._run_slow(*args, grid=grid, **kwargs)

    def _run_slow(self, *args, grid, warmup=False, **kwargs):
        """The general path: binding and conversion in Python (every value, every error)."""
        launch = ({k: kwargs.pop(k) for k in _LAUNCH_KEYWORDS if k in kwargs and k not in self._names}
                  if kwargs else {})
        values = self.bind(args, kwargs)
        return self.launch(values, grid, launch)

    def warmup(self, *args, grid=None, arch="sm_80", **kwargs):
        """Compiles for these arguments without running (arrays are only read for their
        dtypes): a :class:`CompiledKernel` whose ``asm`` holds the stages."""
        launch = {k: kwargs.pop(k) for k in _LAUNCH_KEYWORDS if k in kwargs}
        values = self.bind(args, kwargs)
        return CompiledKernel(self, _args.convert(values), launch, arch)

    def launch(self, values, grid, launch):
        """Launches on bound arguments; returns the native launcher's report (a dict:
        ``backend``, ``compile_s``, ``run_s``, ``cache``, ``printed``), or None for an empty grid."""
        g = grid3(self.__name__, grid, values)
        if g is None:
            return None
        program = self._program
        if program is None or (self._dispatcher is None and self._simple):
            program = self.program()  # (re)makes the fast path's dispatcher too
        args = _args.convert(values)
        n = _native()
        debug = launch.get("debug", self.debug)
        sanitize = launch.get("sanitize", self.sanitize)
        sass_search = launch.get("sass_search", self.sass_search)
        # Arrays in device memory run where they are: on the GPU (unless a launch keyword says
        # otherwise, which the runtime then refuses naming the argument), on the caller's stream.
        on_device = any(v[0] == "device" or v[0] == "desc" and v[1][0] == "device" for _, v in args)
        run_backend = launch.get("backend") or ("cuda" if on_device else backend())
        stream = _args.launch_stream(values, launch.get("stream")) if on_device else None
        try:
            report = program.launch(None, g, args, run_backend,
                                    launch.get("num_warps"), launch.get("num_stages"), bool(debug), bool(sanitize),
                                    None if sass_search is None else str(sass_search), stream,
                                    bool(launch.get("_trident_timed")))
        except n.NativeError as e:
            raise from_native(e)  # its __cause__ carries the text
        if report["printed"]:
            sys.stdout.write(report["printed"])
            sys.stdout.flush()
        return report


class _Stages(dict):
    """``CompiledKernel.asm``: each stage compiled when first asked for."""

    def __init__(self, make):
        super().__init__()
        self._make = make

    def __missing__(self, stage):
        if stage not in ("ttir", "ttgir", "ptx", "cubin", "sass"):
            raise KeyError(stage)
        value = self._make(stage)
        self[stage] = value
        return value

    def __contains__(self, stage):
        return stage in ("ttir", "ttgir", "ptx", "cubin", "sass")

    def keys(self):
        return ["ttir", "ttgir", "ptx", "cubin", "sass"]


class CompiledKernel:
    """What ``kernel.warmup(...)`` returns, as Triton's ``CompiledKernel``: ``asm`` (``ttir``,
    ``ttgir``, ``ptx``, ``cubin``, ``sass``, each compiled on first access; the last two need
    ``ptxas``/``nvdisasm``), ``metadata`` and, from the cubin, ``n_regs``/``n_spills``."""

    def __init__(self, jit, args, launch, arch):
        self.name = jit.__name__
        self._program = jit.program()
        self._args = args
        self._launch = launch
        self._arch = arch
        self._meta = {}
        self.asm = _Stages(self._stage)

    def _stage(self, stage):
        n = _native()
        try:
            out, meta = self._program.stage(None, self._args, stage, self._arch, self._launch.get("num_warps"),
                                            self._launch.get("num_stages"), bool(self._launch.get("debug")))
        except n.NativeError as e:
            raise from_native(e)  # its __cause__ carries the text
        self._meta.update({k: v for k, v in meta.items() if v is not None})
        return out

    @property
    def metadata(self):
        import types
        self.asm["ptx"]
        return types.SimpleNamespace(name=self.name, target=self._arch, **self._meta)

    @property
    def n_regs(self):
        self.asm["cubin"]
        return self._meta.get("registers")

    @property
    def n_spills(self):
        self.asm["cubin"]
        return self._meta.get("spill_stores")


def jit(fn=None, *, version=None, repr=None, launch_metadata=None, do_not_specialize=(),
        do_not_specialize_on_alignment=(), debug=None, noinline=None, sanitize=None, sass_search=None):
    """Makes a kernel of a Python function, as ``triton.jit``: ``@jit``, ``@jit(...)`` or ``jit(fn)``.
    ``sanitize=True`` (Trident's own; also a launch keyword): on the emulator and CUDA every
    global load, store and atomic is bounds-checked in the kernel, and the first violation
    fails the launch with the interpreter's error. ``sass_search="30s"`` (also a launch keyword,
    or TRIDENT_SASS_SEARCH): on sass-emu and cuda, run the SASS schedule a search found (the
    first launch searches for that budget — seconds or a number of evaluations — and the
    schedule is kept in the compile cache's directory)."""

    def decorate(f):
        return JITFunction(f, do_not_specialize=do_not_specialize,
                           do_not_specialize_on_alignment=do_not_specialize_on_alignment,
                           debug=debug, noinline=noinline, repr=repr, launch_metadata=launch_metadata,
                           sanitize=sanitize, sass_search=sass_search)

    return decorate if fn is None else decorate(fn)


class TensorWrapper:
    """A tensor seen as another dtype of the same width (``triton.reinterpret``): the kernel
    receives ``base``'s memory typed as ``dtype`` (how unsigned types torch lacks are passed)."""

    def __init__(self, base, dtype):
        self.base = base
        self.dtype = dtype
        self.data = base.data if hasattr(base, "data") else base
        self.shape = base.shape

    def data_ptr(self):
        return self.base.data_ptr()

    def stride(self, *args):
        return self.base.stride(*args)

    def numel(self):
        return self.base.numel()

    def element_size(self):
        return self.base.element_size()

    def dim(self):
        return self.base.dim()

    @property
    def device(self):
        return self.base.device

    def cpu(self):
        return TensorWrapper(self.base.cpu(), self.dtype)

    def to(self, device):
        return TensorWrapper(self.base.to(device), self.dtype)

    def copy_(self, other):
        self.base.copy_(other.base if isinstance(other, TensorWrapper) else other)
        return self

    def clone(self):
        return TensorWrapper(self.base.clone(), self.dtype)

    def __str__(self):
        return f"TensorWrapper[{self.dtype}]({self.base})"


def reinterpret(tensor, dtype):
    """``tensor``'s memory typed as ``dtype`` (a ``TensorWrapper``; unwrapped when ``dtype`` is
    the base's own)."""
    if isinstance(tensor, TensorWrapper):
        tensor = tensor.base
    return TensorWrapper(tensor, dtype)
