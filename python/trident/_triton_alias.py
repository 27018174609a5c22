"""``import triton`` as Trident: a meta-path finder that answers ``triton`` and ``triton.X``
with ``trident`` and ``trident.X`` — whether or not Triton is installed. A ``triton.X`` that
Trident does not have is a module of stubs (importing it works; calling into it says so)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class _TritonFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != "triton" and not fullname.startswith("triton."):
            return None
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
