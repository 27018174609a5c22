"""Generates promotion.txt: the dtype (or ERROR) real Triton gives each expression.

Run with the oracle's Python (it has Triton 3.x):
    ~/.cache/trident-oracle/bin/python crates/front/tests/data/gen_promotion.py > crates/front/tests/data/promotion.txt

Each expression is compiled by Triton's own front end (to TTIR, no GPU needed)
inside the kernel template below, which tests/promotion.rs rebuilds identically.
"""
import contextlib
import io
import os
import sys
import tempfile
import warnings
import importlib.util

warnings.filterwarnings("ignore")
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402
from triton._C.libtriton import ir  # noqa: E402
from triton.backends.nvidia.compiler import CUDABackend  # noqa: E402

TYPES = ["i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64"]
SIG = {"i1": "*i1", "i8": "*i8", "i16": "*i16", "i32": "*i32", "i64": "*i64", "u8": "*u8", "u16": "*u16",
       "u32": "*u32", "u64": "*u64", "f16": "*fp16", "bf16": "*bf16", "f32": "*fp32", "f64": "*fp64"}
LITERALS = ["1", "-1", "2**31", "2**40", "2.5", "1e-300", "True", "0"]
SCALARS = ["s_i32", "s_i64", "s_f32", "s_i1"]

HEADER = "import triton\nimport triton.language as tl\n\n\n"


def kernel(expr, stmt=""):
    params = ", ".join([f"p_{t}" for t in TYPES] + SCALARS)
    lines = [f"@triton.jit", f"def k({params}):", "    o = tl.arange(0, 16)"]
    for t in TYPES:
        lines.append(f"    B_{t} = tl.load(p_{t} + o)")
        lines.append(f"    S_{t} = tl.load(p_{t})")
    if stmt:
        lines.append(f"    {stmt}")
    lines.append(f"    tl.static_print({expr})")
    return HEADER + "\n".join(lines) + "\n"


def expressions():
    ops = ["+", "-", "*", "/", "//", "%", "&", "<<", ">>", "<", "=="]
    for a in TYPES:
        for b in TYPES:
            for op in ["+", "/", "//", "%", "&", ">>", "<"]:
                yield f"(B_{a} {op} B_{b}).dtype", ""
    for a in TYPES:
        for lit in LITERALS:
            for op in ops:
                yield f"(B_{a} {op} {lit}).dtype", ""
            yield f"({lit} - B_{a}).dtype", ""
    for a in TYPES:
        for s in SCALARS + [f"S_{t}" for t in ["i8", "u8", "f16", "bf16", "i64"]]:
            for op in ["+", "*", "/", "<", "&"]:
                yield f"(B_{a} {op} {s}).dtype", ""
    for s in SCALARS:
        for t in SCALARS:
            yield f"({s} + {t}).dtype", ""
    for a in TYPES:
        yield f"(-B_{a}).dtype", ""
        yield f"(~B_{a}).dtype", ""
        yield f"tl.sum(B_{a}).dtype", ""
        yield f"tl.max(B_{a}, 0).dtype", ""
        yield f"tl.cumsum(B_{a}, 0).dtype", ""
        yield f"tl.argmax(B_{a}, 0).dtype", ""
        yield f"tl.exp(B_{a}).dtype", ""
        yield f"tl.abs(B_{a}).dtype", ""
        yield f"tl.where(B_i1, B_{a}, 1).dtype", ""
        yield f"tl.where(B_i1, B_{a}, 1.5).dtype", ""
        yield f"tl.maximum(B_{a}, B_f16).dtype", ""
        yield f"tl.minimum(B_{a}, 2).dtype", ""
        yield f"tl.fma(B_{a}, B_{a}, 1.0).dtype", ""
        yield f"tl.clamp(B_{a}, 0, 1).dtype", ""
        yield f"(B_{a} + t).dtype", "t = 2"
        yield f"(B_{a} * t).dtype", "t = 2.0"
        yield f"(B_{a} * t).dtype", "t: tl.constexpr = 2.0"
        yield f"tl.xor_sum(B_{a}, 0).dtype", ""
        yield f"tl.umulhi(B_{a}, B_{a}).dtype", ""
        yield f"tl.fdiv(B_{a}, 3).dtype", ""
        yield f"B_{a}.to(tl.float16).dtype", ""


def main():
    target = GPUTarget("cuda", 90, 32)
    backend = CUDABackend(target)
    options = backend.parse_options({})
    tmp = tempfile.mkdtemp()
    for n, (expr, stmt) in enumerate(expressions()):
        path = os.path.join(tmp, f"k{n}.py")
        with open(path, "w") as f:
            f.write(kernel(expr, stmt))
        spec = importlib.util.spec_from_file_location(f"k{n}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sig = {f"p_{t}": SIG[t] for t in TYPES}
        sig.update({"s_i32": "i32", "s_i64": "i64", "s_f32": "fp32", "s_i1": "i1"})
        src = ASTSource(mod.k, signature=sig, constexprs={})
        ctx = ir.context()
        ir.load_dialects(ctx)
        backend.load_dialects(ctx)
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                src.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(), ctx)
            result = buf.getvalue().strip()
        except Exception:
            result = "ERROR"
        print(f"{stmt}\t{expr}\t{result}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
