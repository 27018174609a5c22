"""The Python objects behind ``trident.language``: dtypes, ``constexpr``, function stubs."""

from __future__ import annotations

import sys
import types


class constexpr:  # noqa: N801 - Triton's name
    """A compile-time value: ``tl.constexpr`` as an annotation marks a parameter whose value is
    part of the compiled kernel; ``tl.constexpr(v)`` at module level is a constant kernels use."""

    def __init__(self, value=None):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self):
        return f"constexpr[{self.value!r}]"

    def __index__(self):
        return self.value.__index__()

    def __bool__(self):
        return bool(self.value)

    def __eq__(self, other):
        return self.value == (other.value if isinstance(other, constexpr) else other)

    def __hash__(self):
        return hash(self.value)


class dtype:  # noqa: N801 - Triton's name
    """A Triton element type; ``name`` is Triton's (``fp16``, ``bf16``, ``int32``)."""

    SINT_TYPES = ("int8", "int16", "int32", "int64")
    UINT_TYPES = ("int1", "uint8", "uint16", "uint32", "uint64")
    FP_TYPES = ("fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64")
    STANDARD_FP_TYPES = ("fp16", "bf16", "fp32", "fp64")
    OTHER_TYPES = ("void",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"triton.language.{_PRETTY.get(self.name, self.name)}"

    __str__ = lambda self: self.name  # noqa: E731

    def __eq__(self, other):
        return isinstance(other, dtype) and type(other) is type(self) and other.name == self.name

    def __hash__(self):
        return hash((type(self).__name__, self.name))

    @property
    def primitive_bitwidth(self):
        return _BITS[self.name]

    @property
    def int_bitwidth(self):
        return _BITS[self.name]

    @property
    def fp_mantissa_width(self):
        return _FP[self.name][0]

    @property
    def exponent_bias(self):
        return _FP[self.name][1]

    @property
    def scalar(self):
        return self

    def is_fp8(self):
        return self.name.startswith("fp8")

    def is_fp16(self):
        return self.name == "fp16"

    def is_bf16(self):
        return self.name == "bf16"

    def is_fp32(self):
        return self.name == "fp32"

    def is_fp64(self):
        return self.name == "fp64"

    def is_bool(self):
        return self.name == "int1"

    def is_int_signed(self):
        return self.name in self.SINT_TYPES

    def is_int_unsigned(self):
        return self.name.startswith("uint")

    def is_block(self):
        return False

    def is_floating(self):
        return self.name.startswith(("fp", "bf"))

    def is_int(self):
        return self.name.startswith(("int", "uint"))

    def is_ptr(self):
        return False

    def to(self, *_a, **_k):  # pragma: no cover - only meaningful inside kernels
        raise RuntimeError("`.to()` on a dtype is only meaningful inside a @jit function")


class pointer_type(dtype):  # noqa: N801 - Triton's name
    """A pointer to ``element_ty`` (``*fp16``)."""

    def __init__(self, element_ty: dtype, address_space: int = 1):
        super().__init__("*" + element_ty.name)
        self.element_ty = element_ty
        self.address_space = address_space

    def __repr__(self):
        return f"pointer<{self.element_ty!r}>"

    def is_ptr(self):
        return True


class block_type(dtype):  # noqa: N801 - Triton's name
    """A block of ``element_ty`` with a shape (only seen in annotations)."""

    def __init__(self, element_ty: dtype, shape):
        super().__init__(element_ty.name)
        self.element_ty = element_ty
        self.shape = tuple(shape)


class tensor:  # noqa: N801 - Triton's name
    """The type of block values inside kernels; Python never makes one."""


_BITS = {
    "int1": 1, "int8": 8, "int16": 16, "int32": 32, "int64": 64,
    "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64,
    "fp8e4nv": 8, "fp8e5": 8, "fp8e4b15": 8, "fp8e4b8": 8, "fp8e5b16": 8,
    "fp16": 16, "bf16": 16, "fp32": 32, "fp64": 64, "void": 0,
}
# Floating types: (mantissa bits, exponent bias).
_FP = {
    "fp8e4b15": (3, 15), "fp8e4nv": (3, 7), "fp8e4b8": (3, 8), "fp8e5": (2, 15), "fp8e5b16": (2, 16),
    "fp16": (10, 15), "bf16": (7, 127), "fp32": (23, 127), "fp64": (52, 1023),
}
_PRETTY = {
    "int1": "int1", "fp8e4nv": "float8e4nv", "fp8e5": "float8e5", "fp16": "float16",
    "bf16": "bfloat16", "fp32": "float32", "fp64": "float64",
}

int1 = dtype("int1")
int8 = dtype("int8")
int16 = dtype("int16")
int32 = dtype("int32")
int64 = dtype("int64")
uint8 = dtype("uint8")
uint16 = dtype("uint16")
uint32 = dtype("uint32")
uint64 = dtype("uint64")
float8e4nv = dtype("fp8e4nv")
float8e5 = dtype("fp8e5")
float8e4b15 = dtype("fp8e4b15")
float8e4b8 = dtype("fp8e4b8")
float8e5b16 = dtype("fp8e5b16")
float16 = dtype("fp16")
bfloat16 = dtype("bf16")
float32 = dtype("fp32")
float64 = dtype("fp64")
void = dtype("void")
pi32_t = pointer_type(int32)


def builtin_stub(module: str, name: str):
    """A function object standing for ``module.name`` of the language: the compiler knows it by
    that name; called from Python (outside a kernel) it raises."""

    def stub(*_args, **_kwargs):
        raise RuntimeError(
            f"`{module.replace('trident', 'triton', 1)}.{name}` can only be called inside a "
            "@triton.jit function (Trident compiles kernels from their source; Python never runs them)")

    stub.__name__ = stub.__qualname__ = name
    stub.__module__ = module
    stub.__trident_builtin__ = True
    return stub


def module_getattr(module: str):
    """A module ``__getattr__`` that makes (and keeps) a stub for any public name asked for."""

    def __getattr__(name: str):  # noqa: N807
        if name.startswith("__"):
            raise AttributeError(name)
        stub = builtin_stub(module, name)
        setattr(sys.modules[module], name, stub)
        return stub

    return __getattr__


def stub_module(name: str, doc: str) -> types.ModuleType:
    """A module whose every public attribute is a stub; a package (empty ``__path__``), so
    its submodules import as stub modules too (``import triton.backends.compiler``)."""
    m = types.ModuleType(name, doc)
    m.__getattr__ = module_getattr(name)
    m.__path__ = []
    sys.modules[name] = m
    return m
