//! Trident's GPU backend: tile IR → GPU IR (layouts on every tensor) → PTX.
//!
//! * [`pipeline`]: the one entry point, [`compile`]: tile IR in, GPU IR, PTX and
//!   statistics out (typed [`GpuError`]s); the pass list is declared there and nowhere else.
//! * [`layout`]: linear layouts, the single definition of how a tensor is spread over
//!   registers, lanes and warps (or laid out in shared memory), and their drawings.
//! * [`analysis`]: axis analysis (contiguity, divisibility, constancy).
//! * [`machine`]: facts about the machine and layouts on it (architectures, register
//!   classes, mma and wgmma instruction facts, vector widths, scratch sizes), below both the
//!   passes and emission.
//! * [`passes`]: layout assignment, conversion removal, pipelining, shared-memory planning,
//!   barriers — as `trident-opt` passes, also by name ([`passes::registry`]). Passes decide
//!   and record their decisions in the GPU IR (the shared-memory plan is discardable
//!   attributes: `smem_offset`, `smem_size`, `smem_operand`, `smem_total`).
//! * [`ptx`]: PTX emission ([`emit_gpu_ir`]), which reads those decisions and runs no pass;
//!   the kernel ABI is documented there.
//! * [`tools`]: finding and running `ptxas`/`nvdisasm`.
//!
//! `passes` never reach into `ptx`, nor `ptx` into `passes`; `tests/module_rules.rs` checks it.

pub mod analysis;
pub mod layout;
pub mod machine;
pub mod options;
pub mod passes;
pub mod pipeline;
pub mod ptx;
pub mod tools;

pub use layout::{draw_ir_layout, draw_layout, draw_layouts, LinearLayout};
pub use machine::Target;
pub use options::{GpuOptions, ProbeMode, ProfileOptions};
pub use pipeline::{compile, GpuArtifacts, GpuError, GpuErrorKind, GpuPipeline, GpuStats};
pub use ptx::{emit_gpu_ir, AbiParam, AbiType, PtxKernel};

use trident_ir::{Diagnostic, Module};

/// Compiles kernel `kernel` of `m` (tile IR, after the tile passes) to PTX: [`compile`]
/// for callers that want only the PTX.
pub fn emit_ptx(m: &Module, kernel: &str, opts: &GpuOptions) -> Result<PtxKernel, Diagnostic> {
    compile(m, kernel, opts).map(|a| a.ptx).map_err(|e| *e.diagnostic)
}
