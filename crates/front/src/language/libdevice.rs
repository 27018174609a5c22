//! The `libdevice` functions (CUDA's math library, as `triton.language.extra[.cuda|.hip].libdevice`
//! exposes it) that Trident implements. How each one lowers is `lower/builtins/libdevice.rs`;
//! this is the list of names, consulted by the scanner (`tl.math.NAME` that only libdevice has is
//! the libdevice function) as well as by the lowering, so it lives below both.

/// Names accepted as `libdevice.NAME` (for lookups and suggestions).
pub(crate) const FUNCS: &[&str] = &[
    "exp",
    "exp2",
    "exp10",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sqrt",
    "sqrt_rn",
    "rsqrt",
    "rsqrt_rn",
    "cbrt",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "erf",
    "erfc",
    "floor",
    "ceil",
    "trunc",
    "rint",
    "nearbyint",
    "round",
    "abs",
    "fast_expf",
    "fast_exp10f",
    "fast_logf",
    "fast_log2f",
    "fast_log10f",
    "fast_sinf",
    "fast_cosf",
    "fast_tanf",
    "isnan",
    "isinf",
    "signbit",
    "finitef",
    "isfinited",
    "pow",
    "fast_powf",
    "atan2",
    "hypot",
    "copysign",
    "fmod",
    "fast_dividef",
    "div_rn",
    "add_rn",
    "sub_rn",
    "mul_rn",
    "fmin",
    "fmax",
    "fma",
    "fma_rn",
    "rcp_rn",
    "saturatef",
    "popc",
    "clz",
    "mulhi",
    "umulhi",
    "float_as_int",
    "float_as_uint",
    "int_as_float",
    "uint_as_float",
    "double_as_longlong",
    "longlong_as_double",
    "double2float_rn",
    "double2float_rz",
    "int2float_rn",
    "uint2float_rn",
    "ll2float_rn",
    "ull2float_rn",
    "int2double_rn",
    "uint2double_rn",
    "ll2double_rn",
    "ull2double_rn",
    "float2int_rn",
    "float2int_rz",
    "float2int_rd",
    "float2int_ru",
    "float2uint_rz",
    "float2ll_rz",
    "double2int_rz",
    "double2ll_rz",
];

/// Whether `name` is a libdevice function Trident implements: one of [`FUNCS`], or any of the
/// float-to-integer conversions `{float,double}2{int,uint,ll,ull}_{rn,rz,rd,ru}` (only some of
/// them are listed in [`FUNCS`], which feeds "did you mean" hints).
pub(crate) fn is_known(name: &str) -> bool {
    FUNCS.contains(&name) || is_float_to_int(name)
}

/// `float2int_rn`, `double2ull_rz`, ...
fn is_float_to_int(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("float2").or_else(|| name.strip_prefix("double2")) else { return false };
    let Some((to, mode)) = rest.split_once('_') else { return false };
    matches!(to, "int" | "uint" | "ll" | "ull") && matches!(mode, "rz" | "rn" | "rd" | "ru")
}
