"""Replays launches recorded by the emulator's tests on a real GPU and compares.

    TRIDENT_EMU_DUMP=/tmp/cases cargo test -p trident-emu      # record (CPU)
    python3 replay_on_gpu.py /tmp/cases                         # replay (needs a GPU)

Each recorded case has NAME.ptx, NAME.txt (entry, grid, block, shared bytes, and one
line per argument: `buf I BYTES`, `scalar VALUE SIZE`, `null`), NAME.in.I.bin (bytes
before the launch) and NAME.emu.I.bin (bytes after the emulated launch). The script
loads the PTX with the CUDA driver (ctypes, no other dependency), runs it on the same
inputs and reports every buffer whose bytes differ from the emulator's.
"""
import ctypes
import glob
import os
import struct
import sys

cu = ctypes.CDLL("libcuda.so.1")


def check(r, what):
    if r != 0:
        msg = ctypes.c_char_p()
        cu.cuGetErrorString(r, ctypes.byref(msg))
        raise RuntimeError(f"{what}: {r} {msg.value.decode() if msg.value else ''}")


check(cu.cuInit(0), "cuInit")
dev = ctypes.c_int()
check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ctx = ctypes.c_void_p()
check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "ctx")
check(cu.cuCtxSetCurrent(ctx), "ctx current")


def replay(base):
    meta = open(base + ".txt").read().split("\n")
    entry = meta[0].split()[1]
    grid = [int(x) for x in meta[1].split()[1:]]
    block = [int(x) for x in meta[2].split()[1:]]
    shared = int(meta[3].split()[1])
    ptx = open(base + ".ptx", "rb").read() + b"\0"
    mod = ctypes.c_void_p()
    log = ctypes.create_string_buffer(8192)
    # CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
    opts = (ctypes.c_int * 2)(5, 6)
    vals = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p), ctypes.c_void_p(8192))
    r = cu.cuModuleLoadDataEx(ctypes.byref(mod), ptx, 2, opts, vals)
    if r != 0:
        return f"JIT failed ({r}): {log.value.decode(errors='replace')[:300]}"
    fn = ctypes.c_void_p()
    check(cu.cuModuleGetFunction(ctypes.byref(fn), mod, entry.encode()), "function")
    holders, bufs = [], []
    for line in meta[4:]:
        if not line.strip():
            continue
        w = line.split()
        if w[0] == "buf":
            i, n = int(w[1]), int(w[2])
            data = open(f"{base}.in.{i}.bin", "rb").read()
            d = ctypes.c_uint64()
            check(cu.cuMemAlloc_v2(ctypes.byref(d), max(n, 1)), "alloc")
            check(cu.cuMemcpyHtoD_v2(d, data, n), "htod")
            bufs.append((i, d, n))
            holders.append(d)
        elif w[0] == "scalar":
            v, size = int(w[1]), int(w[2])
            holders.append({1: ctypes.c_uint8, 2: ctypes.c_uint16, 4: ctypes.c_uint32}.get(size, ctypes.c_uint64)(v & ((1 << (8 * min(size, 8))) - 1)))
        else:
            holders.append(ctypes.c_uint64(0))
    params = (ctypes.c_void_p * max(len(holders), 1))(*[ctypes.cast(ctypes.byref(h), ctypes.c_void_p) for h in holders])
    if shared > 48 * 1024:
        # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
        check(cu.cuFuncSetAttribute(fn, 8, shared), "smem attr")
    r = cu.cuLaunchKernel(fn, *grid, *block, shared, None, params, None)
    if r == 0:
        r = cu.cuCtxSynchronize()
    if r != 0:
        return f"launch failed ({r})"
    diffs = []
    for i, d, n in bufs:
        out = ctypes.create_string_buffer(n)
        check(cu.cuMemcpyDtoH_v2(out, d, n), "dtoh")
        got = out.raw
        want = open(f"{base}.emu.{i}.bin", "rb").read()
        if got != want:
            words = [k for k in range(0, n, 4) if got[k:k + 4] != want[k:k + 4]]
            k = words[0]
            diffs.append(f"arg {i}: {len(words)} of {n // 4} words differ; first at byte {k}: "
                         f"gpu {got[k:k + 4].hex()} emu {want[k:k + 4].hex()}")
        cu.cuMemFree_v2(d)
    cu.cuModuleUnload(mod)
    return "; ".join(diffs)


def main():
    cases = sorted(glob.glob(os.path.join(sys.argv[1], "*.txt")))
    same = 0
    for c in cases:
        base = c[:-4]
        res = replay(base)
        if res:
            print(f"DIFF {os.path.basename(base)}: {res}")
        else:
            same += 1
    print(f"{same} of {len(cases)} launches match the GPU byte for byte")


if __name__ == "__main__":
    main()

