"""``@autotune`` and ``@heuristics``, run in Python as Triton runs them.

The compiler receives the plain kernel (``trident._live`` describes the function without its
decorators); choosing a config happens here, so ``prune_configs_by`` (``early_config_prune``,
``perf_model``, ``top_k``), ``pre_hook``/``post_hook``, ``reset_to_zero`` and ``restore_value``
are real Python calls.

Choosing among several configs times each on the launch's arguments (copies of them, so the
caller's arrays are untouched): on the emulator by its modelled time, on the interpreter by
wall time only when ``TRIDENT_AUTOTUNE_INTERP=1`` (interpreter time says little about GPU
time), otherwise the interpreter takes the first config — what the CLI does too.
"""

from __future__ import annotations

import copy as _copy
import functools
import os

from . import _args
from ._errors import ArgumentError
from ._jit import JITFunction, KernelInterface, _native, backend


class Config:
    """One point of a tuning space: meta-parameter values and launch options."""

    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None, pre_hook=None,
                 num_buffers_warp_spec=0, num_consumer_groups=0, reg_dec_producer=0, reg_inc_consumer=0):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self):
        out = dict(self.kwargs)
        out.update(num_warps=self.num_warps, num_stages=self.num_stages)
        return out

    def __repr__(self):
        parts = [f"{k}: {v}" for k, v in self.kwargs.items()]
        parts += [f"num_warps: {self.num_warps}", f"num_stages: {self.num_stages}"]
        return ", ".join(parts)


# Values that are never arrays: a tuning key's usual sizes and flags, and what the backend
# choice need not probe for device memory (numpy arrays are host memory).
_PLAIN = frozenset({int, float, bool, str, type(None)})


_HOST = None


def _host_types():
    """``_PLAIN`` and numpy arrays (numpy imported when a tuned kernel first launches, as
    ``_args`` imports it: ``import trident`` stays cheap)."""
    global _HOST
    if _HOST is None:
        import numpy
        _HOST = _PLAIN | {numpy.ndarray}
    return _HOST


def _base(fn):
    """The JITFunction under decorators."""
    while not hasattr(fn, "arg_names") or not hasattr(fn, "program"):
        fn = fn.fn
    return fn


class Heuristics(KernelInterface):
    """Meta-parameters computed from the other arguments before each launch."""

    def __init__(self, fn, values):
        self.fn = fn
        self.values = dict(values)
        self._names = None  # the kernel's parameter names (read at the first launch)
        self.__name__ = getattr(fn, "__name__", "kernel")

    def __getitem__(self, grid):
        launch = self._launch
        return lambda *args, **kwargs: launch(grid, args, kwargs)

    def run(self, *args, grid, **kwargs):
        return self._launch(grid, args, kwargs)

    def _launch(self, grid, args, kwargs):
        names = self._names
        if names is None:
            names = self._names = _base(self.fn).arg_names
        named = dict(zip(names, args))
        if kwargs:
            named.update(kwargs)
        for name, f in self.values.items():
            named[name] = kwargs[name] = f(named)
        fn = self.fn
        # Right over a `@jit` function: its native fast path directly (what its `run` would
        # call first), saving a Python call per launch.
        d = getattr(fn, "_dispatcher", None)
        if d is not None and "warmup" not in kwargs:
            done, result = d.try_launch(grid, args, kwargs)
            if done:
                return result
        return fn.run(*args, grid=grid, **kwargs)


def heuristics(values):
    """``@heuristics({"BLOCK": lambda args: ...})``."""
    return lambda fn: Heuristics(fn, values)


class Autotuner(KernelInterface):
    """Chooses a config per value of ``key`` and launches with it."""

    def __init__(self, fn, configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None,
                 pre_hook=None, post_hook=None, warmup=None, rep=None, use_cuda_graph=False, do_bench=None,
                 cache_results=False):
        self.fn = fn
        self.configs = list(configs) or [Config({})]
        self.keys = list(key)
        self.prune_configs_by = prune_configs_by or {}
        self.reset_to_zero = list(reset_to_zero or [])
        self.restore_value = list(restore_value or [])
        self.pre_hook = pre_hook
        self.post_hook = post_hook
        self.cache = {}
        # The native fast path of cached launches (`_native.Tuned`): plain key → (config, its
        # kwargs), filled by `run` when no hook has to run; the launcher made for the kernel's
        # current dispatcher.
        self._fast = {}
        self._key_pos = None
        self._tuned = None
        self.best_config = None
        self.__name__ = getattr(fn, "__name__", "kernel")

    def _hooked(self):
        return bool(self.pre_hook or self.post_hook or any(c.pre_hook for c in self.configs))

    # Hooks set after construction clear the native table (`run` fills it only for autotuners
    # without hooks), so a hook is never skipped.
    @property
    def pre_hook(self):
        return self._pre_hook

    @pre_hook.setter
    def pre_hook(self, value):
        self._pre_hook = value
        self._fast = {}

    @property
    def post_hook(self):
        return self._post_hook

    @post_hook.setter
    def post_hook(self, value):
        self._post_hook = value
        self._fast = {}

    def __getitem__(self, grid):
        fn = self.fn
        d = getattr(fn, "_dispatcher", None) if isinstance(fn, JITFunction) else None
        if d is None:
            launch = self._launch
            return lambda *args, **kwargs: launch(grid, args, kwargs)
        t = self._tuned
        if t is None or t[0] is not d or t[1] is not self._fast:
            names = fn.arg_names
            if not all(k in names for k in self.keys):
                return functools.partial(self.run, grid=grid)
            keys = [(names.index(k), k) for k in self.keys]
            t = self._tuned = (d, self._fast, _native().Tuned(d, self, keys, self._fast))
        return t[2][grid]

    def _key(self, named):
        out = []
        for k in self.keys:
            v = named.get(k)
            if type(v) in _PLAIN:  # the common key (a size), without the array probes below
                out.append(v)
                continue
            if _args.is_descriptor(v):  # by what the kernel is specialized on
                out.append(("desc", _args.host_or_device_dtype(k, v.base), tuple(v.block_shape)))
                continue
            arr = None
            try:
                arr = _args.host_array(k, v)
                if arr is None:
                    dev = _args.device_array(k, v)
                    arr = None if dev is None else (None, dev[0])
            except ArgumentError:
                pass
            out.append(("tensor", arr[1]) if arr is not None else v)
        return tuple(out)

    def prune(self, named, kwargs):
        configs = self.configs
        early = self.prune_configs_by.get("early_config_prune")
        if early is not None:
            configs = list(early(configs, named, **kwargs))
        model = self.prune_configs_by.get("perf_model")
        top_k = self.prune_configs_by.get("top_k")
        if model is not None and len(configs) > 1:
            est = sorted(configs, key=lambda c: model(**named, **kwargs, **c.all_kwargs()))
            k = top_k if isinstance(top_k, int) else max(1, int(len(est) * (top_k or 1.0)))
            configs = est[:k]
        if not configs:
            raise ArgumentError(f"{self.__name__}: every autotune config was pruned")
        return configs

    def _bench(self, config, args, kwargs, launch_backend):
        """The run time of one config, on copies of the array arguments (torch CUDA tensors are
        cloned on their device; other device arrays, which Trident cannot copy, are used in
        place, as Triton's autotuner uses every argument). On device arrays the time is the
        kernel's device time (CUDA events)."""
        import numpy as np

        def copy(name, a):
            if _args.is_descriptor(a):  # the same view of a copy of its tensor
                d = _copy.copy(a)
                d.base = copy(name, a.base)
                return d
            if _args.host_array(name, a) is not None:
                return np.array(a, copy=True)
            if _args._torch_tensor(a) and _args.device_array(name, a) is not None:
                return a.clone()
            return a

        copies = [copy("_", a) for a in args]
        kw = {k: copy(k, v) for k, v in kwargs.items()}
        base = _base(self.fn)
        named = dict(zip(base.arg_names, copies))
        named.update(kw)
        for name in self.reset_to_zero:
            if name in named:
                a = named[name]
                if hasattr(a, "zero_"):
                    a.zero_()
                elif hasattr(a, "fill"):
                    a.fill(0)
        if config.pre_hook:
            # As in the final launch: the arguments and the config's meta-parameters.
            config.pre_hook(dict(named, **config.all_kwargs()))
        on_device = any(_args.device_array("_", _args.unwrap(a)) is not None for a in list(copies) + list(kw.values()))
        extra = {"_trident_timed": True} if on_device else {}
        report = self.fn.run(*copies, grid=self._grid, **kw, **config.all_kwargs(), backend=launch_backend,
                             **extra)
        return float("inf") if report is None else report["run_s"]

    def run(self, *args, grid, **kwargs):
        return self._launch(grid, args, kwargs)

    def _launch(self, grid, args, kwargs):
        # A cached choice for a key of plain values, without hooks (what the native `Tuned`
        # path does for a kernel that is directly a @jit function; here for the rest, such
        # as @autotune over @heuristics): the key from the arguments as given, the config's
        # meta-parameters added; a `backend` keyword goes to the kernel, which picks one by
        # the same rule as below when there is none.
        fast = self._fast
        if fast:
            pos = self._key_pos
            if pos is None:
                names = _base(self.fn).arg_names
                # A key that names no parameter is looked up in the keywords only.
                pos = self._key_pos = [(names.index(k) if k in names else 1 << 30, k) for k in self.keys]
            n = len(args)
            key = tuple(args[i] if i < n else kwargs.get(k) for i, k in pos)
            plain = True
            for v in key:
                if type(v) not in _PLAIN:
                    plain = False
                    break
            hit = fast.get(key) if plain else None
            if hit is not None:
                self.best_config = hit[0]
                meta = hit[1]
                inner = getattr(self.fn, "_launch", None)
                # (A keyword the config also sets goes the long way, which raises on it.)
                if inner is not None and (not kwargs or kwargs.keys().isdisjoint(meta)):
                    return inner(grid, args, {**kwargs, **meta})
                return self.fn.run(*args, grid=grid, **kwargs, **meta)
        base = _base(self.fn)
        named = dict(zip(base.arg_names, args))
        named.update(kwargs)
        key = self._key(named)
        launch_backend = kwargs.pop("backend", None)
        if launch_backend is None:
            host = _host_types()
            on_device = any(type(v) not in host and _args.device_array(k, _args.unwrap(v)) is not None
                            for k, v in named.items())
            launch_backend = "cuda" if on_device else backend()
        if key not in self.cache:
            configs = self.prune(named, kwargs)
            timed = len(configs) > 1 and (launch_backend != "interp" or os.environ.get("TRIDENT_AUTOTUNE_INTERP") == "1")
            if timed:
                self._grid = grid
                times = [self._bench(c, args, kwargs, launch_backend) for c in configs]
                self.cache[key] = configs[min(range(len(configs)), key=times.__getitem__)]
            else:
                self.cache[key] = configs[0]
        config = self.best_config = self.cache[key]
        meta = config.all_kwargs()
        if all(type(v) in _PLAIN for v in key) and not self._hooked():
            self._fast[key] = (config, meta)
        if config.pre_hook or self.pre_hook or self.post_hook:
            full = dict(named, **meta)
            if config.pre_hook:
                config.pre_hook(full)
            if self.pre_hook:
                self.pre_hook(full)
        ret = self.fn.run(*args, grid=grid, **kwargs, **meta, backend=launch_backend)
        if self.post_hook:
            self.post_hook(full, None)
        return ret


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None, pre_hook=None,
             post_hook=None, warmup=None, rep=None, use_cuda_graph=False, do_bench=None, cache_results=False):
    """``@autotune(configs=[Config(...)], key=["n"])``."""
    return lambda fn: Autotuner(fn, configs, key, prune_configs_by, reset_to_zero, restore_value, pre_hook,
                                post_hook, warmup, rep, use_cuda_graph, do_bench, cache_results)
