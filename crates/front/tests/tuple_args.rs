//! Triton's tuple arguments as the front end binds them: a tuple given element by element
//! (`ptrs[0]`, `ptrs[1][0]`, what the runtime makes of a tuple for a parameter that is not a
//! `tl.constexpr`) is one runtime slot per element, named after it, and the parameter is the
//! tuple of their values inside the kernel; incomplete or conflicting element sets are errors
//! at the parameter.

use trident_core::DType;
use trident_front::{compile, parse_file, ArgInfo, CompileOptions, ConstValue, ParamBinding};

const SRC: &str = r#"
import triton
import triton.language as tl


@triton.jit
def k(t, out, SHAPE: tl.constexpr):
    tl.static_assert(len(t) == 2)
    x, inner = t
    tl.static_assert(len(inner) == 2)
    tl.store(out + tl.arange(0, 16), tl.load(x + tl.arange(0, 16)) * inner[1] + inner[0])
"#;

fn ptr(d: DType) -> ArgInfo {
    ArgInfo::Pointer { dtype: d, aligned16: true }
}

fn args(extra: &[(&str, ArgInfo)]) -> Vec<(String, ArgInfo)> {
    let mut v: Vec<(String, ArgInfo)> =
        vec![("out".into(), ptr(DType::F32)), ("SHAPE".into(), ArgInfo::Constexpr(ConstValue::int(16)))];
    v.extend(extra.iter().map(|(n, a)| (n.to_string(), a.clone())));
    v
}

fn err(extra: &[(&str, ArgInfo)]) -> String {
    let file = parse_file("t.py", SRC).expect("parses");
    match compile(&file, "k", &args(extra), &CompileOptions::default()) {
        Ok(_) => panic!("compiled"),
        Err(ds) => ds.iter().map(|d| d.render(&file.source_files())).collect(),
    }
}

#[test]
fn a_tuple_given_element_by_element_binds_one_runtime_slot_per_element() {
    let file = parse_file("t.py", SRC).expect("parses");
    let given = args(&[("t[0]", ptr(DType::F32)), ("t[1][0]", ArgInfo::Float(0.5)), ("t[1][1]", ArgInfo::Int(3))]);
    let c = compile(&file, "k", &given, &CompileOptions::default())
        .unwrap_or_else(|ds| panic!("{}", ds.iter().map(|d| d.render(&file.source_files())).collect::<String>()));
    assert_eq!(c.param_names, ["t[0]", "t[1][0]", "t[1][1]", "out", "SHAPE"]);
    assert!(matches!(c.params[0], ParamBinding::Runtime { .. }));
    assert!(matches!(c.params[1], ParamBinding::Runtime { .. }));
    assert!(matches!(c.params[2], ParamBinding::Runtime { .. }));
    assert_eq!(c.params[4], ParamBinding::Constexpr(ConstValue::int(16)));
    // IR parameters have identifier names.
    let text = c.module.to_string();
    assert!(text.contains("%t_0") && text.contains("%t_1_0") && text.contains("%t_1_1"), "{text}");
    // An element equal to 1 is specialized as a plain int argument is.
    let one = args(&[("t[0]", ptr(DType::F32)), ("t[1][0]", ArgInfo::Float(0.5)), ("t[1][1]", ArgInfo::Int(1))]);
    let c = compile(&file, "k", &one, &CompileOptions::default()).expect("compiles");
    assert_eq!(c.params[2], ParamBinding::Specialized(ConstValue::int(1)));
}

#[test]
fn incomplete_or_conflicting_elements_are_errors_at_the_parameter() {
    let gap = err(&[("t[0]", ptr(DType::F32)), ("t[1][1]", ArgInfo::Int(3))]);
    assert!(gap.contains("tuple `t`'s elements do not form a tuple (at `t[1][1]`)"), "{gap}");
    let both = err(&[("t", ArgInfo::Int(3)), ("t[0]", ptr(DType::F32))]);
    assert!(both.contains("`t` is given both whole and element by element"), "{both}");
    let bad = err(&[("t[x]", ptr(DType::F32))]);
    assert!(bad.contains("`t[x]` does not name an element of tuple `t`"), "{bad}");
    let cx = err(&[("t", ptr(DType::F32)), ("SHAPE[0]", ptr(DType::F32))]);
    assert!(cx.contains("`SHAPE` is a tl.constexpr parameter: its tuple must hold compile-time values"), "{cx}");
    let unknown = err(&[("t", ptr(DType::F32)), ("u[0]", ptr(DType::F32))]);
    assert!(unknown.contains("has no parameter named `u[0]`"), "{unknown}");
}
