#!/usr/bin/env python3
"""Static comparison of Trident's and Triton's machine code for the same kernels (no GPU needed).

For each kernel below (the kernels/ sources, at the configurations scripts/gpu_check.py
benchmarks) and each target (sm_90, sm_80):

  * Trident: `trident compile FILE::KERNEL --emit ptx --target sm_XX` (and `--emit cubin`
    for the dynamic shared-memory size it plans);
  * Triton: the pip `triton` package compiles the very same function
    (`triton.compile(ASTSource(fn, signature, constexprs, attrs), target=GPUTarget(...))`)
    with the specialization a real launch would get: pointers and ints divisible by 16
    carry `tt.divisibility=16`, ints equal to 1 become constexprs (Trident's front end
    specializes the same way);
  * both PTX files go through the SAME ptxas (`-arch=sm_XX -v`, our pinned 13.0 from
    scripts/install-tools) and the same nvdisasm; we count registers, spills, stack,
    shared memory, and the SASS instruction mix by class, for the whole kernel and for
    the main loop body (the largest backward branch range), and we check that every
    `tl.dot` runs on tensor cores (tensor-core multiply-adds per loop iteration against
    the dots' M*N*K).

Writes bench/STATIC.md (tables; the analysis section between the markers
`<!-- analysis -->` and `<!-- /analysis -->` of an existing file is kept as it is).

Usage (needs the Triton venv; the script re-executes itself with it when `triton` is
not importable):
    ~/.cache/trident-oracle/bin/python scripts/static_compare.py --rev HEAD \
        [--out bench/STATIC.md] [--keep DIR] [--only NAME]
`--rev REV` builds trident-cli from that commit (git archive + cargo, cached under
~/.cache/trident-static) so that the numbers belong to a commit; without it the script
uses `--trident` (default target/debug/trident), which in a shared working tree may
hold someone's unfinished changes.
"""
import argparse
import contextlib
import datetime
import importlib.util
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, OrderedDict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A Python with the pip `triton` package: the oracle's venv (../shared/tools/setup-oracle) or the
# conformance harness's (../shared/conformance/setup.sh), whichever exists.
ORACLE_PY = next((p for p in map(os.path.expanduser, ["~/.cache/trident-oracle/bin/python",
                                                      "~/.cache/trident-conformance/bin/python"])
                  if os.path.exists(p)), os.path.expanduser("~/.cache/trident-oracle/bin/python"))

try:
    import triton  # noqa: F401
except ImportError:
    # (Compare prefixes, not executables: a venv's python is a link to the system one.)
    if os.path.exists(ORACLE_PY) and os.path.realpath(sys.prefix) != os.path.realpath(os.path.dirname(os.path.dirname(ORACLE_PY))):
        os.execv(ORACLE_PY, [ORACLE_PY] + sys.argv)
    sys.exit("static_compare: needs the pip `triton` package (venv at ~/.cache/trident-oracle)")

# Triton 3.9 warns when this is unset; 1 is its current default (fma contraction on).
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402

# ---------------------------------------------------------------------------------------
# The kernels and configurations (those of scripts/gpu_check.py, which bench/RESULTS.md
# times on the H100). `args` lists every parameter: pointers as "*f16", the rest as values.


def attention_case(causal):
    Z, H, S, D = 4, 16, 4096, 64
    strides = [H * S * D, S * D, D, 1]
    args = OrderedDict((t, "*f16") for t in "qkvo")
    args["sm_scale"] = D ** -0.5
    for t in "qkvo":
        for d, s in zip(["z", "h", "n" if t in "kv" else "m", "d"], strides):
            args[f"stride_{t}{d}"] = s
    args.update(H=H, N_CTX=S, BLOCK_M=128, BLOCK_N=64, HEAD_DIM=D, IS_CAUSAL=causal)
    return dict(
        name="attention" + (" causal" if causal else ""), file="kernels/flash_attention.py", kernel="attn_fwd",
        what=f"f16 Z{Z} H{H} S{S} D{D}, BLOCK_M=128 BLOCK_N=64", warps=8, stages=2, args=args,
        # (M, N, K) of each tl.dot per loop iteration: S = Q K^T, then acc += P V.
        dots=[(128, 64, D), (128, D, 64)])


def attention_desc_case(causal, d=64, ws=False):
    """Triton's Hopper attention tutorial's shape: descriptors over (Z*H*N_CTX, D), K as k.T."""
    Z, H, S = 4, 16, 4096
    args = OrderedDict((t, "*f16") for t in "qkvo")
    args.update(sm_scale=d ** -0.5, Z=Z, H=H, N_CTX=S, BLOCK_M=128, BLOCK_N=64 if d == 64 else 128,
                HEAD_DIM=d, IS_CAUSAL=causal)
    if ws:
        args["WARP_SPECIALIZE"] = True
    bn = args["BLOCK_N"]
    return dict(
        name=f"attention desc D{d}" + (" causal" if causal else "") + (" WS" if ws else ""),
        file="kernels/flash_attention_desc.py",
        kernel="attn_fwd_desc",
        what=f"f16 Z{Z} H{H} S{S} D{d}, BLOCK_M=128 BLOCK_N={bn}" + (", WARP_SPECIALIZE=True" if ws else ""),
        warps=8, stages=2,
        args=args, dots=[(128, bn, d), (128, d, bn)])


def desc_case(bm, bn, bk, warps, ws=False):
    args = OrderedDict(a="*f16", b="*f16", c="*f16", M=4096, N=4096, K=4096, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk)
    if ws:
        args["WARP_SPECIALIZE"] = True
    return dict(name=f"matmul desc {bm}x{bn}x{bk}" + (" WS" if ws else ""), file="kernels/matmul_descriptor.py",
                kernel="matmul_desc_kernel",
                what=f"f16 4096^3, {bm}x{bn}x{bk}" + (", WARP_SPECIALIZE=True" if ws else ""), warps=warps, stages=3,
                args=args,
                dots=[(bm, bn, bk)])


def host_desc_case(ws):
    """Host tensor descriptors (Triton's `TensorDescriptor` arguments): a descriptor argument
    is `("desc", dtype, shape, block)`; Triton receives it as `tensordesc<...>` (a tensor map
    parameter plus its sizes and strides), Trident as `desc[BLOCK]:empty:DTYPE:SHAPE`."""
    d = lambda shape, block: ("desc", "f16", shape, block)  # noqa: E731
    args = OrderedDict(a_desc=d((4096, 4096), (128, 64)), b_desc=d((4096, 4096), (64, 128)),
                       c_desc=d((4096, 4096), (128, 128)), BLOCK_M=128, BLOCK_N=128, BLOCK_K=64)
    if ws:
        args["WARP_SPECIALIZE"] = True
    return dict(name="matmul host desc 128x128x64" + (" WS" if ws else ""), file="kernels/matmul_host_desc.py",
                kernel="matmul_host_desc_kernel",
                what="f16 4096^3, 128x128x64, host TensorDescriptors" + (", WARP_SPECIALIZE=True" if ws else ""),
                warps=8, stages=3, args=args, dots=[(128, 128, 64)])


def host_desc_persistent_case():
    """Triton's persistent-matmul tutorial's form: host descriptors, B as N x K, `tl.range(...,
    flatten=True, warp_specialize=True)` over NUM_SMS programs, the split epilogue."""
    d = lambda shape, block: ("desc", "f16", shape, block)  # noqa: E731
    args = OrderedDict(a_desc=d((4096, 4096), (128, 64)), b_desc=d((4096, 4096), (128, 64)),
                       c_desc=d((4096, 4096), (128, 64)), M=4096, N=4096, K=4096, BLOCK_M=128, BLOCK_N=128,
                       BLOCK_K=64, GROUP_M=8, EPILOGUE_SUBTILE=True, NUM_SMS=132, WARP_SPECIALIZE=True)
    return dict(name="matmul persistent host desc", file="kernels/matmul_host_desc.py",
                kernel="matmul_host_desc_persistent_kernel",
                what="f16 4096^3, 128x128x64, GROUP_M=8, EPILOGUE_SUBTILE, NUM_SMS=132, WARP_SPECIALIZE=True",
                warps=8, stages=3, args=args, dots=[(128, 128, 64)])


CASES = [
    dict(name="matmul", file="kernels/matmul.py", kernel="matmul_kernel",
         what="f16 4096^3, 128x128x32, GROUP_M=8", warps=8, stages=3,
         args=OrderedDict(a="*f16", b="*f16", c="*f16", M=4096, N=4096, K=4096,
                          stride_am=4096, stride_ak=1, stride_bk=4096, stride_bn=1, stride_cm=4096, stride_cn=1,
                          BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8),
         dots=[(128, 128, 32)]),
    dict(name="softmax", file="kernels/softmax.py", kernel="softmax_kernel",
         what="f32 8192x8192, BLOCK=8192", warps=8, stages=3,
         args=OrderedDict(x="*f32", y="*f32", x_row_stride=8192, y_row_stride=8192, n_cols=8192, BLOCK=8192),
         dots=[]),
    dict(name="layernorm", file="kernels/layernorm.py", kernel="layernorm_fwd",
         what="f16 8192x4096, BLOCK_N=4096", warps=8, stages=3,
         args=OrderedDict(x="*f16", y="*f16", w="*f16", b="*f16", mean="*f32", rstd="*f32",
                          stride=4096, N=4096, eps=1e-5, BLOCK_N=4096),
         dots=[]),
    attention_case(False),
    attention_case(True),
    attention_desc_case(False),
    attention_desc_case(True),
    attention_desc_case(False, d=128),
    # Sizes that are not multiples of 16: masks vary inside every vector (issue 13's spill case).
    dict(name="matmul ragged", file="kernels/matmul.py", kernel="matmul_kernel",
         what="f16 1000^3, 128x128x32, GROUP_M=8", warps=4, stages=3,
         args=OrderedDict(a="*f16", b="*f16", c="*f16", M=1000, N=1000, K=1000,
                          stride_am=1000, stride_ak=1, stride_bk=1000, stride_bn=1, stride_cm=1000, stride_cn=1,
                          BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8),
         dots=[(128, 128, 32)]),
    desc_case(128, 64, 64, 4),
    desc_case(128, 128, 64, 8),
    desc_case(128, 128, 64, 8, ws=True),
    attention_desc_case(False, ws=True),
    # Triton's Hopper recipe (its persistent-matmul tutorial's shape of kernel, written for
    # Trident): NUM_SMS programs over the tiles, descriptors, a descriptor store.
    dict(name="matmul persistent", file="kernels/matmul_persistent.py", kernel="matmul_persistent_kernel",
         what="f16 4096^3, 128x128x64, GROUP_M=8, NUM_SMS=132, WARP_SPECIALIZE=True", warps=8, stages=3,
         args=OrderedDict(a="*f16", b="*f16", c="*f16", M=4096, N=4096, K=4096,
                          BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, NUM_SMS=132, WARP_SPECIALIZE=True),
         dots=[(128, 128, 64)]),
    host_desc_case(False),
    host_desc_case(True),
    host_desc_persistent_case(),
]

TARGETS = [("sm_90", 90), ("sm_80", 80)]
# Trident's --target per row: Hopper's warpgroup MMA needs the architecture-specific sm_90a
# (Triton's sm_90 PTX targets it too).
TRIDENT_ARCH = {"sm_90": "sm_90a"}

TRITON_DTYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32", "f64": "fp64", "i32": "i32", "i64": "i64",
                 "i8": "i8", "i16": "i16", "u8": "u8"}


def load_module(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], os.path.join(ROOT, path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({p.returncode}):\n{p.stderr.strip()[:2000]}")
    return p


def tools():
    env = os.path.join(ROOT, ".tools", "env")
    found = {}
    if os.path.exists(env):
        for line in open(env):
            m = re.match(r"export (\w+)=(.*)", line.strip())
            if m:
                found[m.group(1)] = m.group(2)
    ptxas = os.environ.get("TRIDENT_PTXAS") or found.get("TRIDENT_PTXAS")
    nvdisasm = os.environ.get("TRIDENT_NVDISASM") or found.get("TRIDENT_NVDISASM")
    if not ptxas or not nvdisasm:
        sys.exit("static_compare: run scripts/install-tools first (ptxas/nvdisasm)")
    return ptxas, nvdisasm


# ---------------------------------------------------------------------------------------
# Building the two cubins.


def trident_ptx(trident, case, arch, workdir):
    words = [trident, "compile", f"{case['file']}::{case['kernel']}", "--target", arch,
             "--num-warps", str(case["warps"]), "--num-stages", str(case["stages"])]
    for name, v in case["args"].items():
        if isinstance(v, tuple) and v[0] == "desc":
            _, dt, shape, block = v
            v = f"desc[{'x'.join(map(str, block))}]:empty:{dt}:{'x'.join(map(str, shape))}"
        words.append(f"{name}={v}")
    ptx = run(words + ["--emit", "ptx"], cwd=ROOT).stdout
    # `--emit cubin` reports the dynamic shared memory the kernel plans (ptxas cannot see it).
    cubin = os.path.join(workdir, "trident_emit.cubin")
    out = run(words + ["--emit", "cubin", "-o", cubin], cwd=ROOT).stdout
    m = re.search(r"(\d+) shared bytes", out)
    shared = int(m.group(1)) if m else None
    ttgir = run(words + ["--emit", "ttgir"], cwd=ROOT).stdout
    ttir = run(words + ["--emit", "ttir"], cwd=ROOT).stdout
    return ptx, shared, ttgir, ttir


def triton_ptx(case, cap):
    fn = getattr(load_module(case["file"]), case["kernel"])
    names = list(fn.arg_names)
    sig, consts, attrs = {}, {}, {}
    for i, name in enumerate(names):
        if name not in case["args"]:
            # A constexpr with a default the case leaves alone (WARP_SPECIALIZE=False).
            v = fn.params[i].default
        else:
            v = case["args"][name]
        if fn.params[i].is_constexpr:
            sig[name] = "constexpr"
            consts[name] = v
        elif isinstance(v, tuple) and v[0] == "desc":
            sig[name] = f"tensordesc<{TRITON_DTYPES[v[1]]}[{', '.join(map(str, v[3]))}]>"
        elif isinstance(v, str) and v.startswith("*"):
            sig[name] = "*" + TRITON_DTYPES[v[1:]]
            attrs[(i,)] = [["tt.divisibility", 16]]
        elif isinstance(v, bool):
            sig[name] = "i1"
        elif isinstance(v, int):
            if v == 1:  # specialized: folded into the code
                sig[name] = "constexpr"
                consts[name] = 1
            else:
                sig[name] = "i32" if -2**31 <= v < 2**31 else "i64"
                if v % 16 == 0:
                    attrs[(i,)] = [["tt.divisibility", 16]]
        elif isinstance(v, float):
            sig[name] = "fp32"
        else:
            raise ValueError(f"{name}={v!r}")
    src = triton.compiler.ASTSource(fn, sig, consts, attrs)
    # ptx_version=90: PTX ISA 9.0, the newest our ptxas 13.0 reads (Triton 3.9 would
    # otherwise stamp its own ptxas's 9.4; its LLVM generates 9.0-level PTX either way).
    opts = {"num_warps": case["warps"], "num_stages": case["stages"], "ptx_version": 90 if cap >= 90 else 80}
    with contextlib.redirect_stdout(io.StringIO()):
        k = triton.compile(src, target=GPUTarget("cuda", cap, 32), options=opts)
    own_regs = triton_own_regs(k)
    return k.asm["ptx"], k.metadata.shared, k.asm["ttgir"], own_regs


def triton_own_regs(k):
    """Registers of the cubin Triton built itself (its own ptxas and flags), for reference."""
    cuobjdump = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    if not os.path.exists(cuobjdump):
        return None
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(k.asm["cubin"])
        f.flush()
        p = subprocess.run([cuobjdump, "-res-usage", f.name], capture_output=True, text=True)
    m = re.search(r"REG:(\d+)", p.stdout)
    return int(m.group(1)) if m else None


def ptxas_compile(ptxas, ptx, arch, path):
    with open(path + ".ptx", "w") as f:
        f.write(ptx)
    p = run([ptxas, f"-arch={arch}", "-v", "-o", path + ".cubin", path + ".ptx"])
    log = p.stdout + p.stderr
    usage = {}
    for key, pat in [("regs", r"Used (\d+) registers"), ("smem_static", r"(\d+) bytes smem"),
                     ("stack", r"(\d+) bytes stack frame"), ("spill_st", r"(\d+) bytes spill stores"),
                     ("spill_ld", r"(\d+) bytes spill loads"), ("barriers", r"used (\d+) barriers")]:
        m = re.search(pat, log)
        usage[key] = int(m.group(1)) if m else 0
    return usage, log


# ---------------------------------------------------------------------------------------
# SASS: parse nvdisasm's listing, find the main loop, classify instructions.

INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*(/\*.*)?$")
LABEL = re.compile(r"^\s*(\.L_x_\d+):\s*$")
BRANCH_TARGET = re.compile(r"`\((\.L_x_\d+)\)")


def parse_sass(text):
    """[(addr, opcode, operands)] of the first function, and {label: addr}."""
    instrs, labels, pending = [], {}, []
    for line in text.splitlines():
        m = LABEL.match(line)
        if m:
            pending.append(m.group(1))
            continue
        m = INSTR.match(line)
        if not m:
            continue
        addr = int(m.group(1), 16)
        body = m.group(2).rstrip(" ;")
        body = re.sub(r"^@!?U?P[T0-9]+\s+", "", body)  # guard predicate
        parts = body.split(None, 1)
        op = parts[0].rstrip(";")
        for lab in pending:
            labels[lab] = addr
        pending = []
        instrs.append((addr, op, parts[1] if len(parts) > 1 else ""))
    for lab in pending:  # a label at the very end (function size marker)
        labels[lab] = instrs[-1][0] + 16 if instrs else 0
    return instrs, labels


def main_loop(instrs, labels, has_dots=False, case=None):
    """The main loop body: for kernels with dots the smallest backward-branch range holding
    every tensor-core multiply-add of one iteration of the kernel's dots (a persistent kernel's
    K loop, not its tile loop; not a stretch of a loop cut off by an mbarrier wait's retry
    branch), else — none covers the work — the smallest holding a tensor-core instruction;
    without dots the largest range [target, branch] of a backward branch (self-branches
    excluded)."""
    ranges = []
    for addr, op, rest in instrs:
        if not op.startswith("BRA"):
            continue
        m = BRANCH_TARGET.search(rest)
        if not m or m.group(1) not in labels:
            continue
        tgt = labels[m.group(1)]
        if tgt < addr:
            ranges.append((tgt, addr))
    if has_dots:
        tc = [a for a, op, _ in instrs if op.startswith(("HMMA", "HGMMA"))]
        holding = [r for r in ranges if any(r[0] <= a <= r[1] for a in tc)]
        if case is not None:
            whole = [r for r in holding
                     if (dot_coverage([i for i in instrs if r[0] <= i[0] <= r[1]], case) or 0) >= 1.0]
            holding = whole or holding
        if holding:
            ranges = [min(holding, key=lambda r: r[1] - r[0])]
    if not ranges:
        return []
    best = max(ranges, key=lambda r: r[1] - r[0])
    return [i for i in instrs if best[0] <= i[0] <= best[1]]


def width(mods, default="32"):
    for m in mods:
        if m in ("128", "64"):
            return m
        if m in ("U16", "S16", "16"):
            return "16"
        if m in ("U8", "S8"):
            return "8"
    return default


INT_ALU = {"IMAD", "IADD3", "IADD", "LEA", "LOP3", "LOP", "SHF", "SHL", "SHR", "ISETP", "IMNMX", "VIMNMX", "SEL",
           "PRMT", "IABS", "VIADD", "VIADDMNMX", "FLO", "POPC", "BREV", "SGXT", "BMSK", "IDP", "IMUL", "IMAD.WIDE"}
MOVES = {"MOV", "S2R", "CS2R", "LDC", "P2R", "R2P", "PLOP3", "VOTE", "VOTEU"}
FP32 = {"FFMA", "FMUL", "FADD", "FMNMX", "FSETP", "FSEL", "FCHK", "FSWZADD", "FSET"}
HALF2 = {"HADD2", "HMUL2", "HFMA2", "HMNMX2", "HSETP2", "HSET2"}
CONVERT = {"F2F", "F2FP", "I2F", "F2I", "I2FP", "F2IP", "FRND", "I2I", "I2IP"}
SYNC = {"BAR", "MEMBAR", "DEPBAR", "LDGDEPBAR", "SYNCS", "ERRBAR", "FENCE", "CCTL", "ARRIVES", "WARPSYNC"}
CONTROL = {"BRA", "BRX", "EXIT", "CALL", "RET", "BSSY", "BSYNC", "YIELD", "JMP", "BPT", "KILL"}


def classify(op):
    """(column, sub-key) for one SASS opcode such as LDG.E.128.CONSTANT."""
    parts = op.split(".")
    base, mods = parts[0], parts[1:]
    if base in ("LDG", "STG", "LDGSTS", "LDS", "STS", "LDL", "STL"):
        return base, width(mods)
    if base in ("LDSM", "STSM", "HMMA", "HGMMA", "MUFU", "SHFL", "ATOMG", "ATOM", "RED", "REDG", "ATOMS"):
        return base, ".".join(mods)
    if base.startswith("UTMA") or base == "UBLKCP":
        return "TMA", base
    if base == "WARPGROUP":
        return "WARPGROUP", ".".join(mods)
    if base in FP32:
        return base if base in ("FFMA", "FMUL", "FADD") else "FP32 other", base
    if base in HALF2:
        return "HALF2", base
    if base in CONVERT:
        return "CONVERT", base
    if base in SYNC:
        return "SYNC", base
    if base in CONTROL:
        return "CONTROL", base
    if base == "NOP":
        return "NOP", base
    if base in INT_ALU:
        return "INT", base
    if base in MOVES:
        return "MOVE", base
    if base.startswith("U") or base in ("R2UR", "S2UR"):
        return "UNIFORM", base
    return "OTHER", base


def mix(instrs):
    cols, detail = Counter(), Counter()
    for _, op, _ in instrs:
        col, sub = classify(op)
        cols[col] += 1
        detail[(col, sub)] += 1
    return cols, detail


def mma_macs(op):
    """Multiply-adds one tensor-core instruction performs: HMMA per warp, HGMMA per warpgroup."""
    m = re.match(r"HMMA\.(\d)(\d)(\d+)", op)  # HMMA.16816 = m16n8k16, HMMA.1688 = m16n8k8
    if m:
        shape = op.split(".")[1]
        mm, nn, kk = int(shape[:2]), int(shape[2]), int(shape[3:])
        return mm * nn * kk, "warp"
    m = re.match(r"HGMMA\.(\d+)x(\d+)x(\d+)", op)
    if m:
        return int(m.group(1)) * int(m.group(2)) * int(m.group(3)), "warpgroup"
    return 0, None


def dot_coverage(loop, case):
    """Tensor-core multiply-adds the loop body issues per CTA over those its dots need (1.0 = all)."""
    need = sum(m * n * k for m, n, k in case["dots"])
    if not need:
        return None
    have = 0
    for _, op, _ in loop:
        macs, unit = mma_macs(op)
        have += macs * (case["warps"] if unit == "warp" else case["warps"] // 4 if unit == "warpgroup" else 0)
    return have / need


def analyse(ptxas, nvdisasm, ptx, arch, path, has_dots=False, case=None):
    usage, log = ptxas_compile(ptxas, ptx, arch, path)
    sass = run([nvdisasm, "-c", path + ".cubin"]).stdout
    with open(path + ".sass", "w") as f:
        f.write(sass)
    instrs, labels = parse_sass(sass)
    loop = main_loop(instrs, labels, has_dots, case)
    # A warp-specialized kernel (more threads than its warps: a producer warp) copies in its
    # producer's loop, not in the main (consumer) loop: its TMA copies per iteration are those
    # of the smallest loop holding any.
    specialized = case is not None and f".reqntid {32 * case['warps']}\n" not in ptx and ".reqntid" in ptx
    producer = producer_loop(instrs, labels) if specialized else None
    return dict(usage=usage, log=log, instrs=instrs, loop=loop, mix=mix(instrs), loop_mix=mix(loop),
                producer_tma=None if producer is None else mix(producer)[0]["TMA"])


def producer_loop(instrs, labels):
    """The smallest backward-branch range holding a TMA copy (a producer warp's K loop)."""
    ranges = []
    for addr, op, rest in instrs:
        m = BRANCH_TARGET.search(rest) if op.startswith("BRA") else None
        if m and m.group(1) in labels and labels[m.group(1)] < addr:
            ranges.append((labels[m.group(1)], addr))
    tma = [a for a, op, _ in instrs if op.startswith("UTMALDG")]
    holding = [r for r in ranges if any(r[0] <= a <= r[1] for a in tma)]
    if not holding:
        return None
    lo, hi = min(holding, key=lambda r: r[1] - r[0])
    return [i for i in instrs if lo <= i[0] <= hi]


def ptx_arch(ptx):
    m = re.search(r"^\.target\s+(\S+)", ptx, re.M)
    return m.group(1).rstrip(",") if m else None


# ---------------------------------------------------------------------------------------
# Report.

MEM_COLS = [("LDG", "128"), ("LDG", "64"), ("LDG", "32"), ("LDG", "16"), ("STG", "128"), ("STG", "64"),
            ("STG", "32"), ("STG", "16"), ("LDGSTS", None), ("TMA", None), ("LDS", None), ("STS", None),
            ("LDSM", None), ("STSM", None), ("LDL", None), ("STL", None)]
OP_COLS = ["HMMA", "HGMMA", "FFMA", "FMUL", "FADD", "FP32 other", "HALF2", "MUFU", "CONVERT", "SHFL", "SYNC",
           "CONTROL", "INT", "UNIFORM", "MOVE", "NOP", "OTHER"]


def mem_cell(r, col, sub, loop=False):
    cols, detail = r["loop_mix"] if loop else r["mix"]
    n = cols[col] if sub is None else detail[(col, sub)]
    return str(n) if n else "·"


def widths_of(detail, col):
    parts = [f"{n}×{sub}" for (c, sub), n in sorted(detail.items()) if c == col]
    return ", ".join(parts)


def table(rows, header, fmt):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i < 2 else "---:" for i in range(len(header))) + "|"]
    for r in rows:
        out.append("| " + " | ".join(fmt(r)) + " |")
    return out


def narrow_global(r):
    """Global memory instructions narrower than 128 bits (cp.async and TMA count as wide)."""
    detail = r["mix"][1]
    return sum(n for (c, sub), n in detail.items() if c in ("LDG", "STG", "LDGSTS") and sub != "128")


def loop_units(t, o, ok):
    """TMA copies and tensor-core instructions in the main loop, Trident/Triton (goal: the same)."""
    def counts(r):
        cols = r["loop_mix"][0]
        tma = r.get("producer_tma")
        return (cols["TMA"] if tma is None else tma), cols["HGMMA"] + cols["HMMA"]
    (tt, tm), (ot, om) = counts(t), counts(o)
    if not (tt or tm or ot or om):
        return "–"
    where = " (producer warp's loop)" if t.get("producer_tma") is not None else ""
    return f"{ok((tt, tm) == (ot, om))} {tt}/{ot} TMA{where}, {tm}/{om} MMA"


def goals(results):
    """The codegen goals, per kernel and target: Trident against Triton."""
    L = ["## Goals", "",
         "Per kernel and target: spills (goal: none), registers against Triton's (goal: within +10%), global "
         "accesses narrower than 128 bits (goal: no more than Triton's; `LDGSTS.128` counts as 128-bit), the "
         "share of the `tl.dot` work on tensor cores (goal: 1.00), and the TMA copies (`UTMALDG`...) and "
         "tensor-core instructions in the main loop (goal: the same as Triton's).", ""]
    hdr = ["kernel", "target", "spills (Trident)", "regs Trident/Triton", "narrow global accesses Trident/Triton",
           "TC cover Trident/Triton", "TMA / tensor-core instrs in loop Trident/Triton"]
    rows = []
    by = {(r["case"], r["arch"], r["side"]): r for r in results}
    for (case, arch, side), t in by.items():
        if side != "Trident" or (case, arch, "Triton") not in by:
            continue
        o = by[(case, arch, "Triton")]
        spill = t["usage"]["spill_st"] + t["usage"]["spill_ld"] + t["usage"]["stack"]
        ratio = t["usage"]["regs"] / max(o["usage"]["regs"], 1)
        nt, no = narrow_global(t), narrow_global(o)
        cov = "–" if t["coverage"] is None else f"{t['coverage']:.2f} / {o['coverage']:.2f}"
        ok = lambda b: "✅" if b else "❌"
        rows.append([case, arch, f"{ok(spill == 0)} {spill} B",
                     f"{ok(ratio <= 1.10)} {t['usage']['regs']}/{o['usage']['regs']} ({(ratio - 1) * 100:+.0f}%)",
                     f"{ok(nt <= no)} {nt}/{no}",
                     cov if t["coverage"] is None else f"{ok(abs(t['coverage'] - 1) < 1e-9)} {cov}",
                     loop_units(t, o, ok)])
    L.append("| " + " | ".join(hdr) + " |")
    L.append("|---|---|---|---|---|---|---|")
    L += ["| " + " | ".join(r) + " |" for r in rows]
    L.append("")
    return L


def report(results, meta, old_text, failures=()):
    L = []
    L.append("# Static comparison: Trident vs Triton machine code")
    L.append("")
    L.append("Written by `scripts/static_compare.py` (no GPU needed; regenerate with "
             "`~/.cache/trident-oracle/bin/python scripts/static_compare.py --rev HEAD`; `--keep DIR` keeps the PTX, "
             "SASS and GPU IR of both sides).")
    L.append("")
    L.append(f"Generated {meta['date']}: {meta['trident']}, Triton {meta['triton']}, "
             f"ptxas {meta['ptxas']}, nvdisasm {meta['nvdisasm']}. Both PTX files go through the same ptxas "
             "(`-arch=<PTX .target> -v`, default -O3) and nvdisasm. Same kernel source, constexprs, num_warps and "
             "num_stages on both sides; Triton gets `tt.divisibility=16` on every pointer and on every int "
             "divisible by 16, and ints equal to 1 as constexprs (what a real launch specializes, and what "
             "Trident's front end specializes). On sm_90 both sides target `sm_90a` (wgmma needs it).")
    L.append("")
    L.append("Columns: **regs** registers per thread; **smem** dynamic shared memory the compiler plans "
             "(bytes); **spill** spill stores/loads in bytes (`ptxas -v`); **instrs** SASS instructions in the "
             "kernel; **loop** SASS instructions in the main loop body (for kernels with dots the smallest "
             "backward-branch range holding all the tensor-core work of one iteration of the dots (else the smallest "
             "holding any): one K-iteration for matmul, also in a persistent kernel, one KV block for attention, "
             "not a stretch cut off by an mbarrier wait's retry branch; else the largest backward-branch range); **TC cover** tensor-core multiply-adds issued "
             "per loop iteration / the M·N·K of the kernel's `tl.dot`s per iteration (1.00 = every dot on tensor "
             "cores, once); **own regs** what Triton's own build (its ptxas and flags) gives, for reference.")
    L.append("")
    if failures:
        L.append("**Failed to compile** (left out of the tables):")
        L.append("")
        L += [f"* {c} {a} {side}: `{msg}`" for c, a, side, msg in failures]
        L.append("")
    L += goals(results)
    for arch, _ in TARGETS:
        L.append(f"## {arch}")
        L.append("")
        L.append("### Resources")
        L.append("")
        hdr = ["kernel", "side", "regs", "smem", "spill st/ld", "stack", "instrs", "loop", "tensor-core instrs (loop)",
               "TC cover", "own regs"]

        def fmt(r):
            u = r["usage"]
            tc = [f"{n}×{op}" for op, n in sorted(Counter(op for _, op, _ in r["loop"]
                                                          if op.startswith(("HMMA", "HGMMA"))).items())]
            cov = r["coverage"]
            return [r["case"], r["side"], str(u["regs"]), str(r["shared"]), f"{u['spill_st']}/{u['spill_ld']}",
                    str(u["stack"]), str(len(r["instrs"])), str(len(r["loop"])) if r["loop"] else "–",
                    ", ".join(tc) or "–", "–" if cov is None else f"{cov:.2f}",
                    "–" if r.get("own_regs") is None else str(r["own_regs"])]
        L += table([r for r in results if r["arch"] == arch], hdr, fmt)
        L.append("")
        L.append("### Memory instructions (whole kernel; in the main loop in brackets)")
        L.append("")
        hdr = ["kernel", "side"] + [f"{c}{'.' + s if s else ''}" for c, s in MEM_COLS]

        def fmt_mem(r):
            cells = []
            for c, s in MEM_COLS:
                a = mem_cell(r, c, s)
                b = mem_cell(r, c, s, loop=True) if r["loop"] else "·"
                cells.append(a if b == "·" else f"{a} ({b})")
            return [r["case"], r["side"]] + cells
        L += table([r for r in results if r["arch"] == arch], hdr, fmt_mem)
        L.append("")
        L.append("### Other instructions by class (whole kernel; in the main loop in brackets)")
        L.append("")
        hdr = ["kernel", "side"] + OP_COLS

        def fmt_ops(r):
            cells = []
            for c in OP_COLS:
                a = r["mix"][0][c]
                b = r["loop_mix"][0][c] if r["loop"] else 0
                cells.append(("·" if not a else str(a)) + (f" ({b})" if b else ""))
            return [r["case"], r["side"]] + cells
        L += table([r for r in results if r["arch"] == arch], hdr, fmt_ops)
        L.append("")
    L.append("## Details")
    L.append("")
    L.append("Width and variant breakdown of the memory, tensor-core, MUFU and conversion instructions "
             "(whole kernel).")
    L.append("")
    for r in results:
        detail = r["mix"][1]
        bits = []
        for col in ["LDG", "STG", "LDGSTS", "TMA", "LDS", "STS", "LDSM", "STSM", "HMMA", "HGMMA", "WARPGROUP", "MUFU",
                    "CONVERT", "SYNC", "SHFL"]:
            w = widths_of(detail, col)
            if w:
                bits.append(f"{col}: {w}")
        L.append(f"* **{r['case']} {r['arch']} {r['side']}** — " + "; ".join(bits))
    L.append("")
    L.append("Cases: " + "; ".join(f"{c['name']}: `{c['file']}::{c['kernel']}` {c['what']}, num_warps={c['warps']}, "
                                  f"num_stages={c['stages']}" for c in meta["cases"]) + ".")
    L.append("")
    # The analysis block and every hand-written section after it are kept as they are.
    keep = re.search(r"<!-- analysis -->.*", old_text or "", re.S)
    L.append(keep.group(0).rstrip("\n") if keep else "<!-- analysis -->\n(analysis goes here)\n<!-- /analysis -->")
    L.append("")
    return "\n".join(L)


def version_line(exe):
    out = run([exe, "--version"]).stdout.strip().splitlines()
    m = re.search(r"cuda_(\d+\.\d+)", out[-1])
    return m.group(1) if m else out[-1]


def build_committed(rev):
    """Builds trident-cli from commit `rev` (not the shared working tree, which holds other people's
    unfinished edits) into ~/.cache/trident-static; returns the binary and the short hash."""
    full = run(["git", "rev-parse", rev], cwd=ROOT).stdout.strip()
    short = full[:7]
    cache = os.path.expanduser("~/.cache/trident-static")
    # One source folder (replaced when the commit changes) and one target folder, so that
    # dependencies are compiled once and only the workspace crates are rebuilt.
    src = os.path.join(cache, "src")
    stamp = os.path.join(src, ".rev")
    if not os.path.exists(stamp) or open(stamp).read().strip() != full:
        if os.path.exists(src):
            shutil.rmtree(src)
        os.makedirs(src)
        archive = subprocess.Popen(["git", "archive", full], cwd=ROOT, stdout=subprocess.PIPE)
        run(["tar", "-x", "-C", src], stdin=archive.stdout)
        archive.wait()
        with open(stamp, "w") as f:
            f.write(full + "\n")
    target = os.path.join(cache, "target")
    print(f"== building trident-cli at {short} (cargo, {target})", file=sys.stderr)
    p = subprocess.run(["cargo", "build", "-q", "-p", "trident-cli"], cwd=src,
                       env=dict(os.environ, CARGO_TARGET_DIR=target))
    if p.returncode != 0:
        sys.exit(f"static_compare: building {short} failed")
    return os.path.join(target, "debug", "trident"), short


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trident", default=os.path.join(ROOT, "target", "debug", "trident"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "STATIC.md"))
    ap.add_argument("--keep", help="directory for the PTX, cubins, SASS and IR of both sides")
    ap.add_argument("--rev", help="build trident-cli from this commit (e.g. HEAD) instead of using --trident")
    ap.add_argument("--only", help="run only the case with this name (no file written)")
    args = ap.parse_args()
    ptxas, nvdisasm = tools()
    # The trident binary needs ptxas for `--emit cubin`; give it ours.
    os.environ["TRIDENT_PTXAS"], os.environ["TRIDENT_NVDISASM"] = ptxas, nvdisasm
    built_rev = None
    if args.rev:
        args.trident, built_rev = build_committed(args.rev)
    workdir = args.keep or tempfile.mkdtemp(prefix="static_compare.")
    os.makedirs(workdir, exist_ok=True)
    cases = [c for c in CASES if not args.only or c["name"] == args.only]
    results = []
    failures = []
    for arch, cap in TARGETS:
        for case in cases:
            stem = os.path.join(workdir, f"{case['name'].replace(' ', '_')}.{arch}")
            print(f"== {case['name']} {arch}", file=sys.stderr)
            # A side that fails to compile is reported, not fatal: the other rows still say something.
            try:
                ptx, shared, ttgir, ttir = trident_ptx(args.trident, case, TRIDENT_ARCH.get(arch, arch), workdir)
                with open(stem + ".trident.ttgir", "w") as f:
                    f.write(ttgir)
                n_dots = len(re.findall(r"= dot ", ttir))
                if n_dots != len(case["dots"]):
                    print(f"warning: {case['name']}: {n_dots} dots in the tile IR, {len(case['dots'])} listed",
                          file=sys.stderr)
                r = analyse(ptxas, nvdisasm, ptx, ptx_arch(ptx) or arch, stem + ".trident", bool(case["dots"]), case)
                r.update(case=case["name"], arch=arch, side="Trident", shared=shared)
                r["coverage"] = dot_coverage(r["loop"], case)
                results.append(r)
            except Exception as e:  # noqa: BLE001 (any failure of one side is reported the same way)
                failures.append((case["name"], arch, "Trident", " ".join(str(e).split())[:400]))
            try:
                tptx, tshared, tttgir, own = triton_ptx(case, cap)
                with open(stem + ".triton.ttgir", "w") as f:
                    f.write(tttgir)
                r = analyse(ptxas, nvdisasm, tptx, ptx_arch(tptx) or arch, stem + ".triton", bool(case["dots"]), case)
                r.update(case=case["name"], arch=arch, side="Triton", shared=tshared, own_regs=own)
                r["coverage"] = dot_coverage(r["loop"], case)
                results.append(r)
            except Exception as e:  # noqa: BLE001
                failures.append((case["name"], arch, "Triton", " ".join(str(e).split())[:400]))
    for f in failures:
        print(f"error: {f[0]} {f[1]} {f[2]}: {f[3]}", file=sys.stderr)
    if built_rev:
        trident_desc = f"Trident at commit `{built_rev}` (built from the commit by `--rev`)"
    else:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "crates"], cwd=ROOT, capture_output=True,
                               text=True)
        built = datetime.datetime.fromtimestamp(os.path.getmtime(args.trident), datetime.timezone.utc)
        trident_desc = (f"Trident binary `{os.path.relpath(args.trident, ROOT)}` (built "
                        f"{built.strftime('%Y-%m-%d %H:%M UTC')}; tree at `{rev.stdout.strip() or '?'}`"
                        + (", with uncommitted changes under crates/ that the binary may include" if dirty.stdout.strip()
                           else "") + ")")
    meta = dict(date=datetime.date.today().isoformat(), trident=trident_desc,
                triton=triton.__version__, ptxas=version_line(ptxas), nvdisasm=version_line(nvdisasm), cases=cases)
    old = open(args.out).read() if os.path.exists(args.out) else None
    text = report(results, meta, old, failures)
    if args.only:
        print(text)
    else:
        with open(args.out, "w") as f:
            f.write(text)
        print(f"wrote {os.path.relpath(args.out, ROOT)}; artifacts in {workdir}", file=sys.stderr)
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
