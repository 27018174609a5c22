"""Runs oracle_kernels.py on Triton's interpreter and writes the inputs and outputs to oracle/*.txt.

    ~/.cache/trident-oracle/bin/python crates/front/tests/data/gen_oracle.py

tests/oracle.rs compiles the same kernels with Trident, runs them on Trident's
interpreter with the same inputs and compares. File format (one item per line):
    kernel NAME / grid X Y Z
    in NAME DTYPE SHAPE   then one hex bit pattern per element
    int|float|bool|cint|cbool NAME VALUE
    out NAME DTYPE SHAPE RTOL ATOL   then the expected bit patterns
"""
import os
import sys
import importlib.util
import numpy as np

sys.path.insert(0, "/work/shared/tools")
os.environ["TRITON_INTERPRET"] = "1"
import triton_oracle as O  # noqa: E402  (Buf and the interpreter patches)

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("oracle_kernels", os.path.join(HERE, "oracle_kernels.py"))
K = importlib.util.module_from_spec(spec)
spec.loader.exec_module(K)

NAMES = {np.dtype(np.float16): "f16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
         np.dtype(np.int8): "i8", np.dtype(np.int16): "i16", np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
         np.dtype(np.uint8): "u8", np.dtype(np.uint16): "u16", np.dtype(np.uint32): "u32",
         np.dtype(np.uint64): "u64", np.dtype(np.bool_): "i1"}
rng = np.random.default_rng(20240601)


def bits(a):
    a = np.ascontiguousarray(a)
    if a.dtype == np.bool_:
        return [str(int(x)) for x in a.reshape(-1)]
    u = a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])
    return [format(int(x), "x") for x in u.reshape(-1)]


def shape_str(a):
    return "x".join(str(d) for d in a.shape)


def run_case(name, kernel, grid, args, consts, outputs):
    """args: name -> numpy array (tensor) or python scalar; consts: constexpr name -> value; outputs: name -> (rtol, atol)."""
    fn = getattr(K, kernel)
    lines = [f"kernel {kernel}", "grid " + " ".join(str(g) for g in (list(grid) + [1, 1])[:3])]
    call = []
    arrays = {}
    for p in fn.arg_names:
        if p in consts:
            v = consts[p]
            lines.append(f"cbool {p} {v}" if isinstance(v, bool) else f"cint {p} {v}")
            continue
        v = args[p]
        if isinstance(v, np.ndarray):
            arr = np.ascontiguousarray(v.copy())
            arrays[p] = arr
            lines.append(f"in {p} {NAMES[arr.dtype]} {shape_str(arr)}")
            lines.extend(bits(arr))
            call.append(O.Buf(arr, O.TL[arr.dtype]))
        elif isinstance(v, bool):
            lines.append(f"bool {p} {v}")
            call.append(v)
        elif isinstance(v, int):
            lines.append(f"int {p} {v}")
            call.append(v)
        else:
            lines.append(f"float {p} {float(v)!r}")
            call.append(float(v))
    fn[tuple(grid)](*call, **consts)
    for o, (rtol, atol) in outputs.items():
        arr = arrays[o]
        lines.append(f"out {o} {NAMES[arr.dtype]} {shape_str(arr)} {rtol} {atol}")
        lines.extend(bits(arr))
    with open(os.path.join(HERE, "oracle", f"{name}.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", name)


def z(dt, *shape):
    return np.zeros(shape, dt)


def main():
    os.makedirs(os.path.join(HERE, "oracle"), exist_ok=True)
    for seed in (0, 12345, -7, 2**40 + 5):
        run_case(f"rand_{seed & 0xffffffffffff}", "rand_kernel", (2, ),
                 dict(out_i=z(np.uint32, 256), out_r=z(np.float32, 256), out_n=z(np.float32, 256), seed=seed, n=200),
                 dict(BLOCK=128), dict(out_i=(0, 0), out_r=(0, 0), out_n=(1e-5, 1e-5)))
    run_case("rand4x", "rand4x_kernel", (1, ), dict(o0=z(np.uint32, 64), o1=z(np.uint32, 64), o2=z(np.uint32, 64),
                                                    o3=z(np.uint32, 64), seed=99), dict(BLOCK=64),
             dict(o0=(0, 0), o1=(0, 0), o2=(0, 0), o3=(0, 0)))
    for dt in (np.float32, np.int32, np.float16):
        x = (rng.integers(-20, 20, 32)).astype(dt)  # repeated values: ties for argmax/argmin
        run_case(f"sort_{np.dtype(dt).name}", "sort_kernel", (1, ),
                 dict(x=x, asc=z(dt, 32), desc=z(dt, 32), flipped=z(dt, 32), amax=z(np.int32, 1), amin=z(np.int32, 1),
                      vmax=z(np.float32 if dt != np.int32 else np.int32, 1)), dict(BLOCK=32),
                 dict(asc=(0, 0), desc=(0, 0), flipped=(0, 0), amax=(0, 0), amin=(0, 0), vmax=(0, 0)))
    x = rng.standard_normal((4, 16)).astype(np.float32)
    x[1, 3] = x[1, 7] = 9.0
    run_case("sort2d", "sort2d_kernel", (1, ), dict(x=x, out=z(np.float32, 4, 16), rmax=z(np.float32, 4),
                                                     ridx=z(np.int32, 4)), dict(R=4, C=16),
             dict(out=(0, 0), rmax=(0, 0), ridx=(0, 0)))
    x = rng.integers(-5, 6, 64).astype(np.int32)
    run_case("scan", "scan_kernel", (1, ), dict(x=x, cs=z(np.int32, 64), cs_rev=z(np.int32, 64), cp=z(np.int32, 64),
                                                custom=z(np.int32, 64), red=z(np.int32, 1), red_idx=z(np.int32, 1)),
             dict(BLOCK=64), dict(cs=(0, 0), cs_rev=(0, 0), cp=(0, 0), custom=(0, 0), red=(0, 0), red_idx=(0, 0)))
    a = rng.integers(-1000, 1000, 64).astype(np.int32)
    b = rng.integers(1, 17, 64).astype(np.int32) * rng.choice([-1, 1], 64).astype(np.int32)
    run_case("intdiv", "intdiv_kernel", (1, ), dict(a=a, b=b, q=z(np.int32, 64), r=z(np.int32, 64),
                                                    sh=z(np.int32, 64), ush=z(np.uint32, 64)), dict(BLOCK=64),
             dict(q=(0, 0), r=(0, 0), sh=(0, 0), ush=(0, 0)))
    a = (rng.standard_normal(64) * 5).astype(np.float32)
    b = (rng.standard_normal(64) * 2).astype(np.float32)
    run_case("float", "float_kernel", (1, ), dict(a=a, b=b, fm=z(np.float32, 64), fd=z(np.float32, 64),
                                                  mx=z(np.float32, 64), mn=z(np.float32, 64), cvt_i=z(np.int32, 64),
                                                  cvt_h=z(np.float16, 64)), dict(BLOCK=64),
             dict(fm=(0, 0), fd=(0, 0), mx=(0, 0), mn=(0, 0), cvt_i=(0, 0), cvt_h=(0, 0)))
    for n in (3, 0):
        x = rng.standard_normal(16).astype(np.float32)
        run_case(f"control_{n}", "control_kernel", (1, ), dict(x=x, out=z(np.float32, 16), out2=z(np.float32, 1), n=n),
                 dict(BLOCK=16), dict(out=(1e-6, 1e-6), out2=(1e-6, 1e-6)))
    vals = rng.standard_normal(16).astype(np.float32)
    run_case("atomic", "atomic_kernel", (1, ), dict(cnt=np.arange(4, dtype=np.int32), old=z(np.int32, 16),
                                                    fmax=np.array([-100.0, -0.5], np.float32), vals=vals),
             dict(BLOCK=16), dict(cnt=(0, 0), old=(0, 0), fmax=(0, 0)))
    x = rng.standard_normal(16).astype(np.float32)
    y = rng.standard_normal(16).astype(np.float32)
    run_case("shape", "shape_kernel", (1, ), dict(x=x, y=y, joined=z(np.float32, 32), lo=z(np.float32, 16),
                                                  hi=z(np.float32, 16), inter=z(np.float32, 32), perm=z(np.float32, 16),
                                                  catted=z(np.float32, 32)), dict(BLOCK=16),
             dict(joined=(0, 0), lo=(0, 0), hi=(0, 0), inter=(0, 0), perm=(0, 0), catted=(0, 0)))
    a = rng.standard_normal((16, 32)).astype(np.float16)
    b = rng.standard_normal((32, 16)).astype(np.float16)
    run_case("dot", "dot_kernel", (1, ), dict(a=a, b=b, c=z(np.float32, 16, 16)), dict(M=16, N=16, K=32),
             dict(c=(1e-3, 1e-3)))
    x = (rng.standard_normal(32) * 2).astype(np.float32)
    run_case("math", "math_kernel", (1, ), dict(x=x, e=z(np.float32, 32), l=z(np.float32, 32), s=z(np.float32, 32),
                                                r=z(np.float32, 32), sg=z(np.float32, 32), er=z(np.float32, 32),
                                                fl=z(np.float32, 32), ab=z(np.float32, 32)), dict(BLOCK=32),
             {k: (2e-6, 1e-6) for k in ["e", "l", "s", "r", "sg", "er", "fl", "ab"]})


if __name__ == "__main__":
    main()
