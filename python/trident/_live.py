"""Describe a live Python function for Trident's compiler.

From Python, a kernel's module has been imported by Python itself: its module-level code
(version checks, ``try`` imports, ``exec``, patched source) has run, and every global the kernel
uses is a value. ``describe(fn)`` writes the function down for the compiler
(``trident_front::live`` in Rust, ``KernelProgram::from_live_json``): its source text, where that
text sits in its file, and the values of exactly the names its code uses, jitted helpers described
the same way. The result is a JSON-serialisable dict::

    {"name", "path", "source", "first_line", "file_text", "globals": {name: value},
     "key", "options"?, "defaults"?}

where each value is a dict tagged by ``kind``: ``none``, ``bool``, ``int`` (decimal string),
``float`` (``repr``), ``str``, ``dtype`` (Triton's name: ``fp16``, ``*fp16``), ``module``
(qualified name; for a module Triton does not define, ``attrs`` holds the attributes the code may
use), ``builtin`` (qualified name of a function or class of ``triton``/``trident``/``math``),
``jit`` (``value``: a nested description, or ``ref``: the ``key`` of one given elsewhere in the
same description), ``constexpr`` (``value``), ``tuple`` (``value``: a list) and ``opaque``
(``repr``: anything else, an error only if the kernel uses it).

Pure Python, no dependency: it works whether the kernel was written against ``triton`` (real or
shimmed) or ``trident``; both packages' names are given as Triton's are.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import numbers
import re
import sys
import textwrap
import types

__all__ = ["describe", "DescribeError"]


class DescribeError(TypeError):
    """The object cannot be described: not a function, or Python kept no source for it."""


# The modules the compiler knows by name (``Mod::from_path`` in ``crates/front``); a function of
# any other module of ``triton``/``trident`` is named through the public namespace that has it.
_KNOWN_MODULES = {
    "triton", "triton.runtime", "triton.runtime.jit", "triton.runtime.autotuner",
    "triton.language", "triton.language.core", "triton.language.standard", "triton.language.random",
    "triton.language.math", "triton.language.extra", "triton.language.extra.cuda",
    "triton.language.extra.hip", "triton.language.extra.libdevice",
    "triton.language.extra.cuda.libdevice", "triton.language.extra.hip.libdevice",
    "triton.language.libdevice", "triton.language.math.libdevice", "math",
    "triton.profiler", "triton.profiler.language",
}
# Where a function of a private module is looked up by name, most specific first.
_PUBLIC_NAMESPACES = (
    "triton.language.extra.libdevice", "triton.language.math", "triton.language", "triton",
)
_ROOTS = ("triton", "trident", "math")
# Attributes of modules the compiler does not know are described this deep (``pkg.sub.NAME``).
_MAX_MODULE_DEPTH = 4
_MISSING = object()


def describe(fn) -> dict:
    """The description of ``fn``: a Python function, or a jitted function object (Triton's
    ``JITFunction``, ``Autotuner``, ``Heuristics``, Trident's own) reaching one through ``.fn``.

    The source comes from ``fn.__trident_source__`` (the text the function was made from, for
    ``exec``'d code), else from the jit object's ``src`` when it was patched (Triton's
    ``JITFunction.src``), else from ``inspect`` (files, and ``exec``'d code registered with
    ``linecache``). Raises :class:`DescribeError` when there is none.
    """
    return _Describer().function(fn)


def _unwrap(obj):
    """The Python function under ``obj`` and the jit object directly around it (or None)."""
    jit = None
    for _ in range(16):
        if isinstance(obj, types.FunctionType):
            return obj, jit
        inner = getattr(obj, "fn", None)
        if inner is None:
            break
        jit, obj = obj, inner
    raise DescribeError(f"{obj!r} is neither a Python function nor a jitted function")


def _is_jitted(v) -> bool:
    """A jit object (anything but a plain function, class or module that reaches a function
    through ``.fn``)."""
    if isinstance(v, (types.FunctionType, type, types.ModuleType, types.BuiltinFunctionType)):
        return False
    try:
        _unwrap(v)
        return True
    except DescribeError:
        return False


def _triton_name(path: str) -> str:
    """``trident.X`` as ``triton.X``: the ``trident`` package mirrors Triton's names."""
    if path == "trident" or path.startswith("trident."):
        return "triton" + path[len("trident"):]
    return path


def _qualified(obj):
    """``module.name`` of a function or class of ``triton``, ``trident`` or ``math``, else None."""
    mod = getattr(obj, "__module__", None)
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not isinstance(mod, str) or not isinstance(name, str) or mod.split(".")[0] not in _ROOTS:
        return None
    if _triton_name(mod) in _KNOWN_MODULES and "." not in name:
        return f"{mod}.{name}"
    # A private module (``triton.language.extra.cuda.utils``, ``trident.language._core``): the
    # public namespace that holds this very object under its name.
    short = getattr(obj, "__name__", name)
    for ns in _PUBLIC_NAMESPACES:
        for prefix in ("triton", "trident"):
            module = sys.modules.get(prefix + ns[len("triton"):])
            if module is not None and vars(module).get(short, _MISSING) is obj:
                return f"{module.__name__}.{short}"
    return f"{mod}.{name}"


def _dtype_name(v):
    """Triton's name of a dtype object (``fp16``; pointers ``*fp16``), else None."""
    cls = type(v)
    if not any(c.__name__ == "dtype" and (c.__module__ or "").split(".")[0] in ("triton", "trident")
               for c in cls.__mro__):
        return None
    element = getattr(v, "element_ty", None)
    if element is not None and "pointer" in cls.__name__:
        inner = _dtype_name(element)
        return None if inner is None else "*" + inner
    name = getattr(v, "name", None)
    return name if isinstance(name, str) else str(v)


def _is_constexpr(v) -> bool:
    cls = type(v)
    return (cls.__name__ == "constexpr" and (cls.__module__ or "").split(".")[0] in ("triton", "trident")
            and hasattr(v, "value"))


def _opaque(v) -> dict:
    try:
        text = repr(v)
    except Exception as e:  # a broken __repr__ must not stop the description
        text = f"<{type(v).__name__} object (repr failed: {e})>"
    if len(text) > 200:
        text = text[:197] + "..."
    return {"kind": "opaque", "value": text}


def _code_names(code) -> list:
    """Every name a code object and the code objects nested in it look up (globals and attributes:
    ``co_names`` holds both)."""
    names = list(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names.extend(_code_names(c))
    return names


def _signature_names(source: str) -> list:
    """Names the decorators, annotations and defaults of the function's ``def`` use: they are
    evaluated where the function is defined, so its code objects do not list them, but the
    compiler reads annotations (``tl.constexpr``, ``tl.int64``) and ``jit(...)`` keywords."""
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return []
    fdef = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if fdef is None:
        return []
    a = fdef.args
    parts = list(fdef.decorator_list) + list(a.defaults) + [d for d in a.kw_defaults if d is not None]
    parts += [p.annotation for p in a.posonlyargs + a.args + a.kwonlyargs if p.annotation is not None]
    out = []
    for part in parts:
        out.extend(n.id for n in ast.walk(part) if isinstance(n, ast.Name))
    return out


def _def_span(text: str, name: str, line: int):
    """The 1-based first and last lines of the ``def`` of ``name`` in ``text`` (decorators
    included): the one starting at ``line`` if there is one, else the only one. None if absent."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            found.append((start, node.end_lineno or node.lineno, node.lineno))
    for start, end, def_line in found:
        if line in (start, def_line):
            return start, end
    return (found[0][0], found[0][1]) if len(found) == 1 else None


def _strip_to_def(src: str) -> str:
    """What Triton keeps as ``JITFunction.src``: the dedented source from ``def`` on."""
    src = textwrap.dedent(src)
    m = re.search(r"^def\s+\w+\s*\(", src, re.MULTILINE)
    return src[m.start():] if m else src


def _source(fn, jit):
    """``(path, source, first_line, file_text)`` of a function."""
    code = fn.__code__
    path = code.co_filename
    given = getattr(fn, "__trident_source__", None)
    if given is None and jit is not None:
        given = getattr(jit, "__trident_source__", None)
    if isinstance(given, str):
        # The text the function was made from (a module or just the function): find the def in it.
        span = _def_span(given, fn.__name__, code.co_firstlineno)
        if span is None:
            raise DescribeError(f"`{fn.__name__}.__trident_source__` holds no definition of `{fn.__name__}`")
        lines = given.splitlines(keepends=True)
        return path, "".join(lines[span[0] - 1:span[1]]), span[0], given
    real = None
    try:
        lines, first = inspect.getsourcelines(fn)
        real = ("".join(lines), max(first, 1))
    except (OSError, TypeError):
        pass
    patched = getattr(jit, "src", None) if jit is not None else None
    if isinstance(patched, str) and (real is None or _strip_to_def(real[0]).rstrip() != patched.rstrip()):
        # Source text patched after definition (Triton's `_unsafe_update_src`): compile that text,
        # placed where the original `def` line was. It is no longer the file's text.
        first = code.co_firstlineno
        if real is not None:
            offset = next((i for i, l in enumerate(real[0].splitlines()) if l.lstrip().startswith("def ")), 0)
            first = real[1] + offset
        return path, patched, first, None
    if real is None:
        raise DescribeError(
            f"cannot find the source of `{fn.__name__}` (defined in {path}): Python keeps no source "
            "for code run by exec(); set `fn.__trident_source__` to the text it was made from, or "
            "register that text with linecache under the code's file name")
    text = "".join(linecache.getlines(path, fn.__globals__)) or None
    return path, real[0], real[1], text


class _Describer:
    def __init__(self):
        self.keys = {}  # id(function) -> key
        self.alive = []  # keeps described functions alive, so ids stay unique

    def function(self, obj) -> dict:
        fn, jit = _unwrap(obj)
        key = str(len(self.keys))
        self.keys[id(fn)] = key
        self.alive.append(fn)
        path, source, first_line, file_text = _source(fn, jit)
        code = fn.__code__
        names = _code_names(code)
        used = set(names) | set(code.co_freevars) | set(_signature_names(source))
        cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
        attr_names = set(names)
        globals_ = {}
        for name in sorted(used):
            if name in cells:
                try:
                    value = cells[name].cell_contents
                except ValueError:
                    globals_[name] = {"kind": "opaque", "value": f"<empty closure cell {name}>"}
                    continue
            elif name in fn.__globals__:
                value = fn.__globals__[name]
            else:
                continue  # a Python builtin, or undefined: the compiler knows or says so
            globals_[name] = self.value(value, attr_names, 0)
        out = {
            "name": fn.__name__,
            "path": path,
            "source": source,
            "first_line": first_line,
            "file_text": file_text,
            "globals": globals_,
            "key": key,
        }
        options = _options(jit)
        if options:
            out["options"] = options
        defaults = self.defaults(fn, attr_names)
        if defaults:
            out["defaults"] = defaults
        return out

    def defaults(self, fn, attr_names) -> dict:
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            return {}
        return {p.name: self.value(p.default, attr_names, 0)
                for p in params if p.default is not inspect.Parameter.empty}

    def value(self, v, attr_names, depth) -> dict:
        if v is None:
            return {"kind": "none"}
        if isinstance(v, bool) or (type(v).__module__ == "numpy" and type(v).__name__ in ("bool_", "bool")):
            return {"kind": "bool", "value": bool(v)}
        if isinstance(v, numbers.Integral):
            return {"kind": "int", "value": str(int(v))}
        if isinstance(v, float):
            return {"kind": "float", "value": float.__repr__(v)}
        if isinstance(v, numbers.Real) and not isinstance(v, numbers.Integral):
            return {"kind": "float", "value": float.__repr__(float(v))}
        if isinstance(v, str):
            return {"kind": "str", "value": v}
        if isinstance(v, types.ModuleType):
            out = {"kind": "module", "value": v.__name__}
            if _triton_name(v.__name__) not in _KNOWN_MODULES and depth < _MAX_MODULE_DEPTH:
                attrs = {}
                for n in sorted(attr_names):
                    a = vars(v).get(n, _MISSING)  # never a lazy import through __getattr__
                    if a is not _MISSING:
                        attrs[n] = self.value(a, attr_names, depth + 1)
                if attrs:
                    out["attrs"] = attrs
            return out
        dtype = _dtype_name(v)
        if dtype is not None:
            return {"kind": "dtype", "value": dtype}
        if _is_constexpr(v):
            return {"kind": "constexpr", "value": self.value(v.value, attr_names, depth)}
        if isinstance(v, (tuple, list)):
            return {"kind": "tuple", "value": [self.value(x, attr_names, depth) for x in v]}
        if _is_jitted(v):
            fn, _ = _unwrap(v)
            builtin = _qualified(fn)
            if builtin is not None:
                # Part of the language itself (`tl.sum`, `tl.cdiv` are jitted in Triton).
                return {"kind": "builtin", "value": builtin}
            if id(fn) in self.keys:
                return {"kind": "jit", "ref": self.keys[id(fn)]}
            return {"kind": "jit", "value": self.function(v)}
        if callable(v):
            builtin = _qualified(v)
            if builtin is not None:
                return {"kind": "builtin", "value": builtin}
        return _opaque(v)


def _options(jit):
    """The jit options a jit object carries (Triton's ``JITFunction`` attributes)."""
    if jit is None:
        return None
    out = {}
    for name in ("do_not_specialize", "do_not_specialize_on_alignment"):
        v = getattr(jit, name, None)
        if isinstance(v, (list, tuple)) and all(isinstance(x, (int, str)) and not isinstance(x, bool) for x in v):
            out[name] = list(v)
    debug = getattr(jit, "debug", None)
    if isinstance(debug, bool):
        out["debug"] = debug
    noinline = getattr(jit, "noinline", None)
    if isinstance(noinline, bool):
        out["noinline"] = noinline
    return out
