//! Triton's typing rules, checked expression by expression against what real Triton
//! computed (tests/data/promotion.txt, made by tests/data/gen_promotion.py).

use trident_core::DType;
use trident_front::{compile, parse_file, ArgInfo, CompileOptions};

const TYPES: [&str; 13] = ["i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64"];
const SCALARS: [&str; 4] = ["s_i32", "s_i64", "s_f32", "s_i1"];

fn dtype(t: &str) -> DType {
    DType::parse(t).unwrap_or_else(|| panic!("dtype {t}"))
}

/// The same kernel template as gen_promotion.py.
fn kernel(expr: &str, stmt: &str) -> String {
    let params: Vec<String> =
        TYPES.iter().map(|t| format!("p_{t}")).chain(SCALARS.iter().map(|s| s.to_string())).collect();
    let mut s = String::from("import triton\nimport triton.language as tl\n\n\n");
    s += &format!("@triton.jit\ndef k({}):\n    o = tl.arange(0, 16)\n", params.join(", "));
    for t in TYPES {
        s += &format!("    B_{t} = tl.load(p_{t} + o)\n    S_{t} = tl.load(p_{t})\n");
    }
    if !stmt.is_empty() {
        s += &format!("    {stmt}\n");
    }
    s += &format!("    tl.static_print({expr})\n");
    s
}

#[test]
fn promotion_matches_triton() {
    let data = include_str!("data/promotion.txt");
    let mut args: Vec<(String, ArgInfo)> =
        TYPES.iter().map(|t| (format!("p_{t}"), ArgInfo::Pointer { dtype: dtype(t), aligned16: true })).collect();
    args.push(("s_i32".into(), ArgInfo::Int(5)));
    args.push(("s_i64".into(), ArgInfo::Int((1 << 40) + 3)));
    args.push(("s_f32".into(), ArgInfo::Float(1.5)));
    args.push(("s_i1".into(), ArgInfo::Bool(true)));
    let mut failures = vec![];
    let mut n = 0;
    for line in data.lines() {
        let mut parts = line.split('\t');
        let (Some(stmt), Some(expr), Some(want)) = (parts.next(), parts.next(), parts.next()) else { continue };
        n += 1;
        let src = kernel(expr, stmt);
        let file = parse_file("promotion.py", &src).expect("template parses");
        let got = match compile(&file, "k", &args, &CompileOptions::default()) {
            Ok(c) => c.static_prints.first().cloned().unwrap_or_default(),
            Err(_) => "ERROR".to_string(),
        };
        if got != want {
            failures.push(format!("{stmt} {expr}: Triton {want}, Trident {got}"));
        }
    }
    assert!(n > 3000, "promotion data missing ({n} lines)");
    assert!(failures.is_empty(), "{} of {n} differ:\n{}", failures.len(), failures.join("\n"));
}
