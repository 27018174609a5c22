//! `parse_file`: kernels, parameters, decorators, module-level imports and constants.

mod common;
use common::*;
use trident_core::DType;
use trident_front::{parse_file, ArgInfo, ConstValue};

const SRC: &str = r#"
"""Host code, imports under if/try, constants, decorated kernels."""
import os
import triton
import triton.language as tl
from triton import language as tl2

try:
    from triton.language.extra.cuda import libdevice
except ImportError:
    from triton.language.extra import libdevice

if os.environ.get("FOO"):
    from triton.language.extra.cuda.libdevice import tanh
else:
    from triton.language.extra.libdevice import tanh

SCALE: tl.constexpr = tl.constexpr(2)
OFFSET = 3
HALF = 0.5
DEBUG = False
BLOCKS = [16, 32]
CONFIGS = [triton.Config({"BLOCK": b, "EVEN": e}, num_warps=w) for b in BLOCKS for e in (True, False) for w in [2, 4]]


class Helper:
    pass


def host_fn(x):
    return x


@triton.autotune(configs=CONFIGS, key=["n"], reset_to_zero=["out"], restore_value=["x"],
                 prune_configs_by={"early_config_prune": host_fn})
@triton.heuristics({"EVEN_N": lambda args: args["n"] % args["BLOCK"] == 0,
                    "NP2": lambda args: triton.next_power_of_2(args["n"]),
                    "BIG": lambda args: max(args["NP2"], 64) if args["x"].dtype == tl.float16 else 0})
@triton.jit(do_not_specialize=["n"], do_not_specialize_on_alignment=[1])
def kern(x, out, n, alpha: float, BLOCK: tl.constexpr, EVEN: tl.constexpr = False, EVEN_N: tl.constexpr = True,
         NP2: tl.constexpr = 1, BIG: tl.constexpr = 0, mode: tl.constexpr = "fast", dt: tl.constexpr = tl.float32):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK) * SCALE // SCALE
    v = tl.load(x + offs, mask=offs < n, other=0.0)
    v = tanh(v) + libdevice.tanh(v) + OFFSET * HALF
    if mode == "fast":
        v = v * alpha
    tl.store(out + offs, v.to(dt), mask=offs < n)


if __name__ == "__main__":
    import torch
    BLOCKS = None
    print(kern)
"#;

#[test]
fn kernels_params_and_decorators() {
    let f = parse_file("k.py", SRC).unwrap();
    let names: Vec<&str> = f.kernels().iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["kern"]);
    let k = f.kernel("kern").unwrap();
    assert_eq!(k.loc.line as usize, SRC.lines().position(|l| l.starts_with("def kern")).unwrap() + 1);
    let p: Vec<(&str, bool)> = k.params.iter().map(|p| (p.name.as_str(), p.is_constexpr)).collect();
    assert_eq!(
        p,
        [
            ("x", false),
            ("out", false),
            ("n", false),
            ("alpha", false),
            ("BLOCK", true),
            ("EVEN", true),
            ("EVEN_N", true),
            ("NP2", true),
            ("BIG", true),
            ("mode", true),
            ("dt", true)
        ]
    );
    assert_eq!(k.do_not_specialize, ["n"]);
    assert_eq!(k.do_not_specialize_on_alignment, ["out"]);
    assert!(k.param("n").unwrap().do_not_specialize);
    assert_eq!(k.param("alpha").unwrap().annotation.as_deref(), Some("float"));
    assert_eq!(k.param("EVEN").unwrap().default, Some(ConstValue::Bool(false)));
    assert_eq!(k.param("mode").unwrap().default, Some(ConstValue::Str("fast".into())));
    assert_eq!(k.param("dt").unwrap().default, Some(ConstValue::dtype(DType::F32)));
    assert!(!k.param("BLOCK").unwrap().has_default);

    let at = k.autotune.as_ref().unwrap();
    let configs = at.configs.as_ref().unwrap();
    assert_eq!(configs.len(), 8);
    assert_eq!(
        configs[0].kwargs,
        vec![("BLOCK".to_string(), ConstValue::int(16)), ("EVEN".to_string(), ConstValue::Bool(true))]
    );
    assert_eq!((configs[0].num_warps, configs[1].num_warps, configs[0].num_stages), (2, 4, 3));
    assert_eq!(configs[7].kwargs[0].1, ConstValue::int(32));
    assert_eq!(at.key, ["n"]);
    assert_eq!(at.reset_to_zero, ["out"]);
    assert_eq!(at.restore_value, ["x"]);
    assert!(at.prune_configs_by.as_deref().unwrap().contains("early_config_prune"));
    let h: Vec<&str> = k.heuristics.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(h, ["EVEN_N", "NP2", "BIG"]);
}

#[test]
fn heuristics_evaluate_in_order() {
    let f = parse_file("k.py", SRC).unwrap();
    let k = f.kernel("kern").unwrap();
    let args = vec![
        ("x".to_string(), ArgInfo::Pointer { dtype: DType::F16, aligned16: true }),
        ("n".to_string(), ArgInfo::Int(100)),
        ("BLOCK".to_string(), ArgInfo::Constexpr(ConstValue::int(32))),
    ];
    let h = k.eval_heuristics(&args).unwrap();
    assert_eq!(
        h,
        vec![
            ("EVEN_N".to_string(), ConstValue::Bool(false)),
            ("NP2".to_string(), ConstValue::int(128)),
            ("BIG".to_string(), ConstValue::int(128)),
        ]
    );
    let args = vec![
        ("x".to_string(), ArgInfo::Pointer { dtype: DType::F32, aligned16: true }),
        ("n".to_string(), ArgInfo::Int(64)),
        ("BLOCK".to_string(), ArgInfo::Constexpr(ConstValue::int(32))),
    ];
    let h = k.eval_heuristics(&args).unwrap();
    assert_eq!(h[0].1, ConstValue::Bool(true));
    assert_eq!(h[2].1, ConstValue::int(0));
    // A heuristic reading a missing argument is an error that points at the lambda.
    let e = k.eval_heuristics(&[]).unwrap_err();
    assert!(e.message.contains("key"), "{}", e.message);
    assert_eq!(
        e.primary.as_ref().unwrap().loc.line as usize,
        SRC.lines().position(|l| l.contains("\"EVEN_N\": lambda")).unwrap() + 1
    );
}

#[test]
fn imports_and_constants_resolve_in_kernels() {
    let out = run(
        SRC,
        "kern",
        &[
            ("x", A::T(trident_core::HostTensor::from_f64(DType::F32, &[4], &[0.1, -0.2, 0.3, 2.0]))),
            ("out", A::T(poison(DType::F32, &[4]))),
            ("n", A::I(4)),
            ("alpha", A::F(2.0)),
            ("BLOCK", cint(4)),
        ],
        [1, 1, 1],
    );
    let want: Vec<f64> =
        [0.1f64, -0.2, 0.3, 2.0].iter().map(|&v: &f64| ((2.0 * (v as f32).tanh() + 1.5) * 2.0) as f64).collect();
    assert_close(&out["out"], &want, 1e-6, 1e-6);
}

#[test]
fn syntax_errors_are_diagnostics() {
    let e = parse_file("bad.py", "def f(:\n  pass\n").unwrap_err();
    assert!(e.message.starts_with("syntax error"), "{}", e.message);
    assert_eq!(e.primary.as_ref().unwrap().loc.line, 1);
}

#[test]
fn specialization_of_int_arguments() {
    let src = "import triton\nimport triton.language as tl\n@triton.jit\ndef k(x, a, b, c, d, e: \"i64\"):\n    tl.store(x, a + b + c + d + e)\n";
    let c = compile_ok(
        src,
        "k",
        &[
            ("x", A::T(poison(DType::I64, &[1]))),
            ("a", A::I(1)),
            ("b", A::I(32)),
            ("c", A::I(7)),
            ("d", A::I(1 << 40)),
            ("e", A::I(3)),
        ],
    );
    use trident_front::ParamBinding::*;
    assert_eq!(
        c.params,
        vec![
            Runtime { ir_index: 0 },
            Specialized(ConstValue::int(1)),
            Runtime { ir_index: 1 },
            Runtime { ir_index: 2 },
            Runtime { ir_index: 3 },
            Runtime { ir_index: 4 }
        ]
    );
    let f = c.module.func("k").unwrap();
    let tys: Vec<String> = f.params.iter().map(|p| f.ty(p.value).to_string()).collect();
    assert_eq!(tys, ["ptr<i64>", "i32", "i32", "i64", "i64"]);
    let div: Vec<Option<u32>> = f.params.iter().map(|p| p.attrs.divisibility).collect();
    assert_eq!(div, [Some(16), Some(16), None, Some(16), None]);
}

#[test]
fn defaults_of_runtime_parameters_are_runtime_values() {
    // `scale=0.5` is an fp32 argument (strong), so x_f16 * scale is fp32 as in Triton.
    let src = "import triton\nimport triton.language as tl\n@triton.jit\ndef k(x, scale=0.5, n=10, B: tl.constexpr = 4):\n    tl.static_print((tl.load(x) * scale).dtype, B)\n";
    let c = compile_ok(src, "k", &[("x", A::T(poison(DType::F16, &[1])))]);
    assert_eq!(c.static_prints, ["fp32 4"]);
    use trident_front::ParamBinding::*;
    assert_eq!(
        c.params,
        vec![Runtime { ir_index: 0 }, Runtime { ir_index: 1 }, Runtime { ir_index: 2 }, Constexpr(ConstValue::int(4))]
    );
    assert_eq!(c.runtime_defaults, vec![(1, ConstValue::Float(0.5)), (2, ConstValue::int(10))]);
}
