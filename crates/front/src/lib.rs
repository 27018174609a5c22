//! Trident's front end: Triton-dialect Python source → tile IR.
//!
//! ```text
//! let file = trident_front::parse_file("k.py", &text)?;          // parse once
//! for k in file.kernels() { ... }                                 // @triton.jit functions, params, autotune configs
//! let out = trident_front::compile(&file, "add_kernel", &args, &CompileOptions::default())?;
//! // out.module: trident_ir::Module (the kernel plus its specialized helpers), out.params: how each
//! // Python parameter is bound (runtime IR parameter, constexpr, or specialized constant).
//! ```
//!
//! The semantics follow Triton 3.x (type promotion, specialization, constexpr
//! evaluation, control flow); see the crate README for the decisions and the
//! experiments behind them.
//!
//! # Layers
//!
//! The modules, lowest layer first. A module may use the modules of its own layer and of the
//! layers below it, never one above (`tests/layering.rs` reads the sources and checks this list):
//!
//! 1. `source`, `value`, `checks` — source positions and diagnostics at syntax nodes;
//!    compile-time values and Python's operators on them; the checks CPython makes after
//!    parsing (nesting limits, duplicate parameters) and the large stack parsing and
//!    lowering run on.
//! 2. `language` — the `triton.language` API Trident knows, as data: module paths, the functions
//!    of `tl`, `tl.math` and `libdevice`, dtype spellings, the prelude's source text.
//! 3. `kernel`, `globals`, `hosteval` — the model of a parsed file: kernel descriptions, what
//!    module-level names are bound to, and the evaluator of host-side Python. They use one
//!    another (a binding can hold a host value; the evaluator calls into imported files).
//! 4. `scan`, `live` — the two ways to fill that model: `parse_file` walks a file's
//!    module-level statements (and holds the parsed prelude); `live::parse_live` takes a live
//!    Python function whose globals Python has already resolved (`live::LiveFunction`, the JSON
//!    that `trident._live.describe` writes).
//! 5. `lower` — compiles one kernel to tile IR.
//!
//! The crate root sits on top (`compile` is the only way into `lower`). Its own data types
//! (`ArgInfo`, `CompileOptions`, `ParamBinding`, `Compiled`) are the API's vocabulary, usable
//! from any layer; everything else a module names by the module that defines it.

mod checks;
mod globals;
mod hosteval;
mod kernel;
mod language;
pub mod live;
mod lower;
mod scan;
mod source;
mod value;

pub use kernel::{Autotune, Config, Heuristic, KernelFile, KernelInfo, ParamInfo};
pub use live::{parse_live, LiveFunction, LiveValue};
pub use lower::tuple_root;
pub use scan::parse_file;
pub use value::ConstValue;

use trident_core::DType;
use trident_ir::{Diagnostic, InputPrecision, Module};

/// How one Python parameter is passed at this launch.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgInfo {
    /// A tensor: a pointer to its first element. `aligned16`: the address is a multiple of 16 bytes.
    Pointer {
        dtype: DType,
        aligned16: bool,
    },
    /// A Python `int`: typed i32 if it fits, else i64.
    Int(i64),
    /// A Python `int` above `i64::MAX` (typed u64, as Triton does); smaller values behave as [`ArgInfo::Int`].
    UInt(u64),
    /// A Python `float`: an fp32 scalar, as in compiled Triton.
    Float(f64),
    Bool(bool),
    /// A compile-time value (for `tl.constexpr` parameters, or a dtype/None passed to any parameter).
    Constexpr(ConstValue),
    /// A host-side tensor descriptor (Triton's `TensorDescriptor`): a tensor of `dtype` (its
    /// first element's address a multiple of 16 bytes when `aligned16`), read and written in
    /// `block`-shaped boxes, out-of-bounds elements reading 0 (NaN with `nan`). Its shape and
    /// strides are passed at run time (hidden parameters, see [`ParamBinding::Descriptor`]);
    /// its last stride is 1 and the others multiples of 16 bytes, as Triton's host class
    /// requires. `shape_div16[d]`: dimension `d`'s size is a multiple of 16 (a specialization
    /// Trident makes and Triton does not: bounds masks then hold over whole vectors, so the
    /// accesses of a descriptor without TMA can be vectorized).
    TensorDesc {
        dtype: DType,
        aligned16: bool,
        block: Vec<u32>,
        nan: bool,
        shape_div16: Vec<bool>,
    },
}

/// Knobs of a compilation that are not launch arguments.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// Keep `tl.device_assert` / `assert` (Triton drops them unless `debug=True`).
    pub debug: bool,
    /// `input_precision` of `tl.dot` on fp32 inputs when the kernel does not say (Triton: tf32 on NVIDIA).
    pub default_dot_precision: InputPrecision,
    /// Turn Proton's in-kernel scopes (`pl.enter_scope`/`pl.exit_scope`/`with pl.scope`) into
    /// `record` ops. Off (the default), scopes are still checked but compile to nothing.
    pub profile_scopes: bool,
}

impl Default for CompileOptions {
    /// Triton's defaults: no debug checks, tf32 for fp32 dots. Reads no environment
    /// variable; [`CompileOptions::from_env`] applies the ones Triton honours.
    fn default() -> CompileOptions {
        CompileOptions { debug: false, default_dot_precision: InputPrecision::Tf32, profile_scopes: false }
    }
}

impl CompileOptions {
    /// Triton's defaults as Triton's environment changes them: `TRITON_F32_DEFAULT`
    /// (`tf32`, `tf32x3` or `ieee`; anything else keeps tf32) sets the default dot precision.
    pub fn from_env() -> CompileOptions {
        let value = std::env::var("TRITON_F32_DEFAULT").ok();
        CompileOptions { default_dot_precision: f32_default(value.as_deref()), ..CompileOptions::default() }
    }
}

/// The dot precision a value of `TRITON_F32_DEFAULT` names.
fn f32_default(value: Option<&str>) -> InputPrecision {
    match value.map(str::trim) {
        Some("ieee") => InputPrecision::Ieee,
        Some("tf32x3") => InputPrecision::Tf32x3,
        _ => InputPrecision::Tf32,
    }
}

#[cfg(test)]
mod compile_options_tests {
    use super::*;

    #[test]
    fn the_default_is_tritons_and_triton_f32_default_names_the_dot_precision() {
        let d = CompileOptions::default();
        assert!(!d.debug);
        assert_eq!(d.default_dot_precision, InputPrecision::Tf32);
        assert_eq!(f32_default(Some("ieee")), InputPrecision::Ieee);
        assert_eq!(f32_default(Some(" tf32x3 ")), InputPrecision::Tf32x3);
        assert_eq!(f32_default(Some("tf32")), InputPrecision::Tf32);
        assert_eq!(f32_default(Some("bogus")), InputPrecision::Tf32);
        assert_eq!(f32_default(None), InputPrecision::Tf32);
    }
}

/// How a Python parameter of the kernel is bound.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamBinding {
    /// Passed at run time as IR parameter `ir_index` of the kernel function.
    Runtime { ir_index: usize },
    /// A `tl.constexpr` (or a dtype/None argument): folded into the code.
    Constexpr(ConstValue),
    /// A runtime argument Triton specializes on (an int equal to 1): folded into the code.
    Specialized(ConstValue),
    /// A host tensor descriptor ([`ArgInfo::TensorDesc`]), passed as several IR parameters:
    /// the base pointer, each dimension's size (i64), and each stride but the last (i64, in
    /// elements; the last is 1).
    Descriptor { base: usize, shape: Vec<usize>, strides: Vec<usize> },
}

/// The result of [`compile`].
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The kernel (first function) and the `@triton.jit` helpers it calls, specialized.
    /// `module.files[0]` is the kernel's source file.
    pub module: Module,
    /// Name of the kernel function in `module`.
    pub kernel: String,
    /// Names of the Python parameters, in order.
    pub param_names: Vec<String>,
    /// How each Python parameter is bound, in the same order.
    pub params: Vec<ParamBinding>,
    /// What `tl.static_print` printed during compilation, one entry per call.
    pub static_prints: Vec<String>,
    /// Runtime parameters the launch left out, filled from their defaults: (IR parameter index, value
    /// to pass). The caller passes these values itself.
    pub runtime_defaults: Vec<(usize, ConstValue)>,
}

/// Compiles `kernel` of `file` for one launch's arguments.
///
/// `args` gives every parameter by name; parameters left out take their
/// default values. Errors carry source locations; render them with
/// `Diagnostic::render(&compiled_or_file_sources)`.
pub fn compile(
    file: &KernelFile,
    kernel: &str,
    args: &[(String, ArgInfo)],
    opts: &CompileOptions,
) -> Result<Compiled, Vec<Diagnostic>> {
    // The lowering recurses over the syntax tree and into helpers: a stack made for it.
    checks::on_big_stack(|| lower::compile(file, kernel, args, opts)).map_err(|d| vec![*d])
}
