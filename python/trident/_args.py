"""Python values to the native launcher's tagged values (see ``crates/python/src/lib.rs``).

Host arrays — numpy arrays, CPU torch tensors, anything with ``__array_interface__``,
``__array__`` or ``__dlpack__`` — go as the byte span of their memory that the kernel can
reach from their first element; the launcher copies it in, runs, and copies back only what
the kernel changed. Arguments whose spans overlap are one alias group.

Arrays in CUDA device memory — torch CUDA tensors, anything with ``__cuda_array_interface__``
— go as ``("device", dtype, address, nbytes)``: the kernel runs on the ``cuda`` backend on them
in place (nothing is copied), queued on the caller's stream (see ``launch_stream``).
"""

from __future__ import annotations

import numbers
import sys

from ._errors import ArgumentError
from .language import _core as _tl

_NUMPY_NAMES = {
    "bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "float32": "f32", "float64": "f64",
}
# Triton's dtype names (``tl.dtype.name``) to Trident's.
_TL_NAMES = {
    "int1": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "fp8e4nv": "f8e4m3", "fp8e5": "f8e5m2", "fp16": "f16", "bf16": "bf16", "fp32": "f32", "fp64": "f64",
}
_TORCH_NAMES = {
    "bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2",
}


def _np():
    import numpy
    return numpy


def _torch_tensor(v):
    t = type(v)
    return t.__module__.split(".")[0] == "torch" and t.__name__ in ("Tensor", "Parameter")


def torch_fast_info():
    """What the native fast path needs of torch (``crates/python/src/arrays.rs``), once torch
    is imported: ``(Tensor, Parameter, [(torch dtype, Trident dtype name)], raw_stream)``, where
    ``raw_stream(device_index)`` is the raw handle of torch's current stream on that device (None
    where this torch has no such function); None before torch is imported."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        dtypes = [(getattr(torch, n), t) for n, t in _TORCH_NAMES.items() if hasattr(torch, n)]
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        return torch.Tensor, torch.nn.Parameter, dtypes, raw
    except AttributeError:  # a partly imported torch
        return None


def host_array(name, v):
    """``(array, trident dtype name)`` for a host array argument, else None."""
    if type(v).__name__ == "TensorWrapper" and hasattr(v, "base") and isinstance(v.dtype, _tl.dtype):
        inner = host_array(name, v.base)
        if inner is None:
            raise ArgumentError(f"argument `{name}`: a TensorWrapper over a `{type(v.base).__name__}`")
        dt = _TL_NAMES.get(v.dtype.name)
        if dt is None:
            raise ArgumentError(f"argument `{name}`: cannot reinterpret as `{v.dtype}`")
        return inner[0], dt
    if _torch_tensor(v):
        if v.device.type == "cuda":
            return None  # device memory: `device_array`
        if v.device.type != "cpu":
            raise ArgumentError(
                f"argument `{name}`: a tensor on `{v.device}`; kernels run on host arrays (interpreter, "
                "emulators) and CUDA tensors — pass `.cpu()` or `.cuda()` tensors")
        dt = str(v.dtype).replace("torch.", "")
        if dt not in _TORCH_NAMES:
            raise ArgumentError(f"argument `{name}`: torch dtype `{v.dtype}` is not supported")
        t = v.detach()
        if dt in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            import torch
            # numpy has no such dtype: the same bytes as integers (still the tensor's memory).
            t = t.view(torch.int16 if dt == "bfloat16" else torch.uint8)
        return t.numpy(), _TORCH_NAMES[dt]
    np = _np()
    if isinstance(v, np.ndarray):
        arr = v
    elif hasattr(v, "__cuda_array_interface__"):
        return None  # device memory: `device_array`
    elif hasattr(v, "__array_interface__") or hasattr(v, "__array__"):
        arr = np.asarray(v)
    elif hasattr(v, "__dlpack__"):
        dev = getattr(v, "__dlpack_device__", None)
        if dev is not None and dev()[0] not in (1, 3):  # kDLCPU, kDLCUDAHost
            raise ArgumentError(
                f"argument `{name}`: a DLPack array on device {tuple(dev())}; Trident takes device memory "
                "through `__cuda_array_interface__` (torch, CuPy, Numba have it) — pass the array itself")
        arr = np.from_dlpack(v)
    else:
        return None
    if isinstance(arr, np.generic) or arr.ndim == 0 and not isinstance(v, np.ndarray):
        return None  # a numpy scalar: a scalar argument
    name_ = arr.dtype.name
    if arr.dtype.byteorder == (">" if _np().little_endian else "<"):
        # The kernel reads memory in the machine's order; a swapped array would be misread.
        raise ArgumentError(f"argument `{name}`: an array of non-native byte order (`{arr.dtype}`); "
                            "pass `.astype(its dtype's native form)`, e.g. `x.astype(x.dtype.newbyteorder('='))`")
    if name_ not in _NUMPY_NAMES:
        raise ArgumentError(f"argument `{name}`: numpy dtype `{arr.dtype}` is not supported by Triton kernels")
    return arr, _NUMPY_NAMES[name_]


def _strided_nbytes(shape, strides, itemsize):
    """Bytes from the first element to the end of the last one (strides in bytes, all >= 0)."""
    if any(n == 0 for n in shape):
        return 0
    return sum((n - 1) * s for n, s in zip(shape, strides)) + itemsize


def device_array(name, v):
    """``(trident dtype name, address, nbytes, device index or None, stream or None)`` for an
    array in CUDA device memory — a torch CUDA tensor or anything with
    ``__cuda_array_interface__`` — else None. The stream is the one the array's producer
    named (interface version 3), if any."""
    if _torch_tensor(v):
        if v.device.type != "cuda":
            return None
        dt = str(v.dtype).replace("torch.", "")
        if dt not in _TORCH_NAMES:
            raise ArgumentError(f"argument `{name}`: torch dtype `{v.dtype}` is not supported")
        if any(s < 0 for s in v.stride()):
            raise ArgumentError(f"argument `{name}`: negative strides are not supported; pass a copy")
        size = v.element_size()
        nbytes = _strided_nbytes(v.shape, [s * size for s in v.stride()], size)
        return _TORCH_NAMES[dt], v.data_ptr(), nbytes, v.device.index, None
    cai = getattr(v, "__cuda_array_interface__", None)
    if cai is None:
        return None
    try:
        shape = tuple(cai["shape"])
        typestr = cai["typestr"]
        addr = int(cai["data"][0])
    except (KeyError, TypeError, IndexError, ValueError) as e:
        raise ArgumentError(f"argument `{name}`: a malformed __cuda_array_interface__ ({e})") from None
    np = _np()
    try:
        ndt = np.dtype(typestr)
    except TypeError:
        raise ArgumentError(f"argument `{name}`: unknown __cuda_array_interface__ typestr `{typestr}`") from None
    if ndt.byteorder == (">" if np.little_endian else "<"):
        raise ArgumentError(f"argument `{name}`: an array of non-native byte order (`{typestr}`)")
    if ndt.name not in _NUMPY_NAMES:
        raise ArgumentError(f"argument `{name}`: dtype `{ndt}` is not supported by Triton kernels")
    if cai.get("mask") is not None:
        raise ArgumentError(f"argument `{name}`: masked __cuda_array_interface__ arrays are not supported")
    strides = cai.get("strides")
    if strides is None:  # C-contiguous
        strides, acc = [], ndt.itemsize
        for n in reversed(shape):
            strides.insert(0, acc)
            acc *= n
    if any(s < 0 for s in strides):
        raise ArgumentError(f"argument `{name}`: negative strides are not supported; pass a copy")
    nbytes = _strided_nbytes(shape, strides, ndt.itemsize)
    stream = cai.get("stream") if cai.get("version", 0) >= 3 else None
    return _NUMPY_NAMES[ndt.name], addr, nbytes, None, stream


def launch_stream(values, given):
    """The raw ``CUstream`` to queue a launch on device arrays: ``given`` (the ``stream=`` launch
    keyword: an int handle or an object with ``cuda_stream``, as ``torch.cuda.Stream``), else
    torch's current stream on the first CUDA tensor's device, else the stream the first array's
    ``__cuda_array_interface__`` names, else None (the legacy default stream)."""
    if given is not None:
        h = getattr(given, "cuda_stream", given)
        if not isinstance(h, int) or h < 0:
            raise ArgumentError(f"stream={given!r}: give a CUstream handle (an int) or a torch.cuda.Stream")
        return h
    hint = None
    for v in values.values():
        if is_descriptor(v):
            v = v.base
        if _torch_tensor(v) and v.device.type == "cuda":
            import torch
            return torch.cuda.current_stream(v.device).cuda_stream
        if hint is None and hasattr(v, "__cuda_array_interface__"):
            s = v.__cuda_array_interface__.get("stream")
            # 1 and 2 are CUDA's legacy and per-thread default streams, as the interface spells them.
            hint = None if s in (None, 1) else s
    return hint


def span(name, arr):
    """``(address, nbytes, writable)`` of the memory ``arr`` reaches from its first element."""
    ai = arr.__array_interface__
    addr, readonly = ai["data"]
    strides = ai["strides"]
    if strides is None:  # C-contiguous
        return addr, arr.nbytes, not readonly
    if arr.size == 0:
        return addr, 0, not readonly
    if any(s < 0 for s in strides):
        raise ArgumentError(
            f"argument `{name}`: negative strides (a reversed view) are not supported; pass a copy")
    nbytes = sum((n - 1) * s for n, s in zip(arr.shape, strides)) + arr.itemsize
    return addr, nbytes, not readonly


def scalar(name, v):
    """The tagged value of a non-array argument."""
    if isinstance(v, _tl.constexpr):
        v = v.value
    if v is None:
        return ("none",)
    if isinstance(v, bool) or type(v).__name__ in ("bool_", "bool") and type(v).__module__ == "numpy":
        return ("bool", bool(v))
    if isinstance(v, numbers.Integral):
        v = int(v)
        if not -(1 << 63) <= v < (1 << 63):
            raise ArgumentError(f"argument `{name}`: {v} does not fit in 64 bits")
        return ("int", v)
    if isinstance(v, numbers.Real):
        return ("float", float(v))
    if isinstance(v, str):
        return ("str", v)
    if isinstance(v, (tuple, list)):
        # Compile-time tuples (a `tl.constexpr` shape); the runtime refuses them elsewhere.
        return ("tuple", [scalar(name, x) for x in v])
    if isinstance(v, _tl.dtype):
        return ("dtype", v.name)
    mod = type(v).__module__.split(".")[0]
    if mod == "torch" and type(v).__name__ == "dtype":
        dt = str(v).replace("torch.", "")
        if dt in _TORCH_NAMES:
            return ("dtype", _TORCH_NAMES[dt])
    if mod == "numpy" and isinstance(v, _np().dtype) and v.name in _NUMPY_NAMES:
        return ("dtype", _NUMPY_NAMES[v.name])
    raise ArgumentError(
        f"argument `{name}`: a `{type(v).__name__}` is not a kernel argument (tensors, ints, floats, "
        "bools, strings for constexprs, dtypes and None are)")


def is_descriptor(v):
    """A host tensor descriptor: Trident's ``TensorDescriptor`` or Triton's (the same fields)."""
    return type(v).__name__ == "TensorDescriptor" and all(
        hasattr(v, a) for a in ("base", "shape", "strides", "block_shape"))


def unwrap(v):
    """A descriptor's tensor; anything else as it is."""
    return v.base if is_descriptor(v) else v


def host_or_device_dtype(name, v):
    """Trident's dtype name of a host or device array (None for anything else)."""
    try:
        arr = host_array(name, v)
        if arr is not None:
            return arr[1]
        dev = device_array(name, v)
        return None if dev is None else dev[0]
    except ArgumentError:
        return None


def _descriptor_fields(name, v):
    """``(shape, strides, block_shape, padding)`` of descriptor ``v``, read now (a pre-hook may
    have changed them since it was made)."""
    try:
        shape = [int(d) for d in v.shape]
        strides = [int(s) for s in v.strides]
        block = [int(b) for b in v.block_shape]
    except (TypeError, ValueError) as e:
        raise ArgumentError(f"argument `{name}`: a tensor descriptor's shape, strides and block shape must be "
                            f"ints ({e})") from None
    for what, vals, lo, hi in (("shape", shape, 1, (1 << 31) - 1), ("strides", strides, -(1 << 63), (1 << 63) - 1),
                               ("block shape", block, 1, (1 << 31) - 1)):
        if any(not lo <= x <= hi for x in vals):
            raise ArgumentError(f"argument `{name}`: tensor descriptor {what} {vals} out of range ({lo} to {hi})")
    padding = getattr(v, "padding", "zero")
    if padding not in ("zero", "nan"):
        raise ArgumentError(f"argument `{name}`: padding {padding!r}; use \"zero\" or \"nan\"")
    if getattr(v, "round_f32_to_tf32", False):
        raise ArgumentError(f"argument `{name}`: round_f32_to_tf32 descriptors are not supported by Trident yet")
    return shape, strides, block, padding == "nan"


_FAST_SCALARS = {int: "int", float: "float", bool: "bool", str: "str"}
# numpy dtype object -> Trident's dtype name, filled as dtypes are seen.
_DTYPE_NAMES = {}


def convert(values: dict):
    """The native launcher's ``[(name, tagged value)]`` for bound arguments (name -> value)."""
    out = []
    spans = []  # (address, end, index in out)
    np = None
    if any(type(v) in (tuple, list) for v in values.values()):
        values = _tuple_elements(values)
    for name, v in values.items():
        t = type(v)
        tag = _FAST_SCALARS.get(t)
        if tag is not None:  # the common scalars, without the checks below
            if t is int and not -(1 << 63) <= v < (1 << 63):
                raise ArgumentError(f"argument `{name}`: {v} does not fit in 64 bits")
            out.append((name, (tag, v)))
            continue
        if np is None:
            np = _np()
        if t is np.ndarray:
            dt = _DTYPE_NAMES.get(v.dtype)  # `dtype.name` builds a string each time: 2.5 µs
            if dt is None:
                arr = host_array(name, v)
                _DTYPE_NAMES[v.dtype] = arr[1]
            else:
                arr = (v, dt)
        elif is_descriptor(v):
            fields = _descriptor_fields(name, v)
            arr = host_array(name, v.base)
            if arr is None:
                dev = device_array(name, v.base)
                if dev is None:
                    raise ArgumentError(f"argument `{name}`: a tensor descriptor's base must be an array, "
                                        f"not a `{type(v.base).__name__}`")
                out.append((name, ("desc", ("device", dev[0], dev[1], dev[2])) + fields))
                continue
            a, dt = arr
            addr, nbytes, writable = span(name, a)
            spans.append((addr, addr + nbytes, len(out)))
            out.append([name, ["desc", ["tensor", dt, addr, nbytes, -1, a, writable], *fields]])
            continue
        else:
            arr = host_array(name, v)
        if arr is None:
            dev = device_array(name, v)
            if dev is not None:
                out.append((name, ("device", dev[0], dev[1], dev[2])))
                continue
            out.append((name, scalar(name, v)))
            continue
        a, dt = arr
        addr, nbytes, writable = span(name, a)
        spans.append((addr, addr + nbytes, len(out)))
        out.append([name, ["tensor", dt, addr, nbytes, -1, a, writable]])
    if len(spans) < 2:
        return [(n, _tuples(v)) for n, v in out]
    # Alias groups: clusters of overlapping spans (a sweep over the spans sorted by start).
    spans.sort()
    clusters, end = [], -1
    for lo, hi, i in spans:
        if hi == lo:
            continue
        if clusters and lo < end:
            clusters[-1].append(i)
            end = max(end, hi)
        else:
            clusters.append([i])
            end = hi
    for g, members in enumerate(c for c in clusters if len(c) > 1):
        for i in members:
            tagged = out[i][1]
            (tagged[1] if tagged[0] == "desc" else tagged)[4] = g
    return [(n, _tuples(v)) for n, v in out]


def _only_scalars(v):
    if isinstance(v, (tuple, list)):
        return all(_only_scalars(x) for x in v)
    return host_or_device_dtype("", v) is None and not is_descriptor(v)


def _tuple_elements(values):
    """``values`` with each tuple that holds tensors given element by element, as
    ``name[0]``, ``name[1][0]``, … (Triton's tuple arguments; the runtime reassembles them)."""
    out = {}

    def add(name, v):
        if isinstance(v, (tuple, list)) and len(v) > 0:
            for i, x in enumerate(v):
                add(f"{name}[{i}]", x)
        else:
            out[name] = v

    for name, v in values.items():
        if isinstance(v, (tuple, list)) and not _only_scalars(v):
            add(name, v)
        else:
            out[name] = v
    return out


def _tuples(v):
    """A tagged value with its lists made tuples (a descriptor's tensor too)."""
    if isinstance(v, tuple) or v[0] != "desc":
        return tuple(v)
    return ("desc", tuple(v[1]), *v[2:])
