//! The catalog: test cases for every kernel in `kernels/`, with their references.
//!
//! Each submodule covers one kernel file: a `cases()` function that builds the
//! cases at several sizes (including ragged ones: sizes that are not multiples
//! of the block, and not powers of two) and the reference functions, written as
//! plain loops over flat element offsets with f64 accumulation.

use trident_runtime::args::Grid;

use crate::case::{Case, Check, OutputCheck, Reference};

mod batched_matmul;
mod cumsum;
mod dropout;
mod flash_attention;
mod flash_attention_desc;
mod layernorm;
mod matmul;
mod matmul_descriptor;
mod matmul_host_desc;
mod matmul_persistent;
mod rmsnorm;
mod softmax;
mod splitk_matmul;
mod vector_add;

/// A kernel file: its path relative to the repository root and its text.
#[derive(Copy, Clone)]
pub(crate) struct KernelFile {
    pub path: &'static str,
    pub source: &'static str,
}

/// Embeds `kernels/NAME` (the path is relative to this directory).
macro_rules! kernel_file {
    ($name:literal) => {
        $crate::catalog::KernelFile {
            path: concat!("kernels/", $name),
            source: include_str!(concat!("../../../../kernels/", $name)),
        }
    };
}
pub(crate) use kernel_file;

/// Every case of every kernel.
pub fn all() -> Vec<Case> {
    let mut v = Vec::new();
    v.extend(vector_add::cases());
    v.extend(softmax::cases());
    v.extend(matmul::cases());
    v.extend(layernorm::cases());
    v.extend(rmsnorm::cases());
    v.extend(flash_attention::cases());
    v.extend(flash_attention_desc::cases());
    v.extend(dropout::cases());
    v.extend(splitk_matmul::cases());
    v.extend(cumsum::cases());
    v.extend(matmul_descriptor::cases());
    v.extend(matmul_host_desc::cases());
    v.extend(matmul_host_desc::persistent_cases());
    v.extend(matmul_persistent::cases());
    v.extend(batched_matmul::cases());
    v
}

/// The reference of a matmul kernel: `c` (as f64, so that elements no kernel writes keep
/// their value) with its `m` x `n` elements set to A (`m` x `k`) times B — given `k` x `n`, or
/// `n` x `k` when `b_nk` (read through its transpose) — flat row-major offsets, f64 sums.
pub(crate) fn matmul_reference(
    a: &trident_core::HostTensor,
    b: &trident_core::HostTensor,
    c: &trident_core::HostTensor,
    (m, n, k): (usize, usize, usize),
    b_nk: bool,
) -> Result<trident_core::HostTensor, crate::case::RefError> {
    use crate::case::Elements;
    let mut want = crate::case::f64_copy(c);
    for row in 0..m {
        for col in 0..n {
            let mut acc = 0.0;
            for kk in 0..k {
                acc += a.at(row * k + kk)? * b.at(if b_nk { col * k + kk } else { kk * n + col })?;
            }
            crate::case::put(&mut want, row * n + col, acc)?;
        }
    }
    Ok(want)
}

pub(crate) fn cdiv(a: usize, b: usize) -> usize {
    a.div_ceil(b)
}

/// A 1-, 2- or 3-d grid from sizes computed with `usize` arithmetic.
pub(crate) fn grid(x: usize, y: usize, z: usize) -> Grid {
    let d = |v: usize| u32::try_from(v).expect("catalog grids are small");
    Grid { x: d(x), y: d(y), z: d(z) }
}

pub(crate) fn output(name: &str, check: Check) -> OutputCheck {
    OutputCheck { name: name.to_string(), check }
}

/// Assembles a case.
pub(crate) fn case(
    file: KernelFile,
    kernel: &'static str,
    name: String,
    args: Vec<String>,
    grid: Grid,
    outputs: Vec<OutputCheck>,
    reference: Reference,
) -> Case {
    Case { name, file: file.path, source: file.source, kernel, args, grid, num_warps: None, outputs, reference }
}
