"""``import triton`` as Trident: a meta-path finder that answers ``triton`` and ``triton.X``
with ``trident`` and ``trident.X`` — whether or not Triton is installed. A ``triton.X`` that
Trident does not have is a module of stubs (importing it works; calling into it says so)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


# The Triton version `triton.__version__` reports under the alias: the language level Trident
# implements (programs compare it to pick code paths, as Liger-Kernel does).
TRITON_VERSION = "3.6.0"


def _triton_root():
    """``triton`` itself: Trident's top-level names, with Triton's ``__version__``."""
    import trident
    m = types.ModuleType("triton", "Trident standing in for Triton (`python -m trident`).")
    m.__dict__.update({k: v for k, v in vars(trident).items() if not k.startswith("__")})
    m.__version__ = TRITON_VERSION
    m.__path__ = []
    m.__getattr__ = lambda name: getattr(trident, name)
    return m


class _TritonFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != "triton" and not fullname.startswith("triton."):
            return None
        if fullname == "triton":
            return importlib.util.spec_from_loader(fullname, _AliasLoader(_triton_root()))
        alt = "trident" + fullname[len("triton"):]
        try:
            module = importlib.import_module(alt)
        except ImportError:
            from .language._core import stub_module
            module = stub_module(alt, f"Stand-in for `{fullname}`, which Trident does not provide.")
        return importlib.util.spec_from_loader(fullname, _AliasLoader(module))


def install():
    """From now on ``import triton...`` imports Trident (idempotent)."""
    if any(isinstance(f, _TritonFinder) for f in sys.meta_path):
        return
    for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
        del sys.modules[name]
    sys.meta_path.insert(0, _TritonFinder())
