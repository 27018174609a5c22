//! Trident's prelude: the parts of `triton.language` that Triton writes in Triton itself (random
//! numbers, sort, softmax, the reductions' combine functions), as Python source Trident compiles
//! like user code (`prelude.py`).
//!
//! Only the source lives here. The parsed prelude is `scan::prelude()`: parsing needs the
//! scanner, which sits above this module, and both the scanner's callers and the lowering sit
//! above the scanner; keeping the text down here lets `kernel` name the prelude's source file
//! (for rendering diagnostics) without parsing it or reaching into the lowering.

use trident_ir::SourceFile;

/// The prelude's file name in diagnostics and `Module::files`.
pub(crate) const PATH: &str = "<trident-prelude>";
pub(crate) const SOURCE: &str = include_str!("prelude.py");

/// The prelude as a source file (diagnostics raised inside it point there).
pub(crate) fn source_file() -> SourceFile {
    SourceFile { path: PATH.to_string(), text: SOURCE.to_string() }
}

/// `tl` functions implemented in the prelude (Triton source compiled by Trident).
pub(crate) const TL_FUNCS: &[&str] = &[
    "cdiv",
    "sigmoid",
    "softmax",
    "sum",
    "max",
    "min",
    "argmax",
    "argmin",
    "xor_sum",
    "reduce_or",
    "cumsum",
    "cumprod",
    "sort",
    "topk",
    "flip",
    "interleave",
    "swizzle2d",
    "rand",
    "randn",
    "randint",
    "randint4x",
    "rand4x",
    "randn4x",
    "philox",
    "philox_impl",
    "uint_to_uniform_float",
    "pair_uniform_to_normal",
    "zeros_like",
    "ravel",
    "squeeze",
    "unsqueeze",
    "histogram",
];
