//! Trident's GPU backend: tile IR → GPU IR (layouts on every tensor) → PTX.
//!
//! * [`layout`]: linear layouts, the single definition of how a tensor is spread over
//!   registers, lanes and warps (or laid out in shared memory), and their drawings.
//! * [`analysis`]: axis analysis (contiguity, divisibility, constancy).
//! * [`passes`]: layout assignment, conversion removal, shared-memory planning,
//!   barriers — as `trident-opt` passes ([`gpu_pipeline`]).
//! * [`ptx`]: PTX emission ([`emit_ptx`]); the kernel ABI is documented there.
//! * [`tools`]: finding and running `ptxas`/`nvdisasm`.

pub mod analysis;
pub mod layout;
pub mod options;
pub mod passes;
pub mod ptx;
pub mod tools;

pub use layout::{draw_ir_layout, draw_layout, draw_layouts, LinearLayout};
pub use options::{GpuOptions, Target};
pub use passes::gpu_pipeline;
pub use ptx::{emit_gpu_ir, AbiParam, AbiType, PtxKernel};

use trident_ir::{Diagnostic, Module};

/// Lowers kernel `kernel` of `m` (tile IR) to GPU IR: a module holding that kernel with
/// layouts on every tensor, conversions and barriers, verified.
pub fn lower_to_gpu_ir(m: &Module, kernel: &str, opts: &GpuOptions) -> Result<Module, Diagnostic> {
    let f = m.func(kernel).ok_or_else(|| Diagnostic::error(format!("no kernel named `{kernel}` in the module")))?;
    if !f.kernel {
        return Err(Diagnostic::error(format!("`{kernel}` is not a kernel")));
    }
    let has_calls = f.all_ops().iter().any(|&op| matches!(f.ops[op].kind, trident_ir::OpKind::Call { .. }));
    let mut gm = if has_calls {
        // Helpers must be inlined: the GPU backend compiles one function.
        let mut all = m.clone();
        let mut pm = trident_opt::PassManager::new();
        pm.add(Box::new(trident_opt::Inline));
        pm.run(&mut all).map_err(|mut errs| errs.swap_remove(0))?;
        let f = all.func(kernel).cloned().ok_or_else(|| Diagnostic::error(format!("kernel `{kernel}` vanished")))?;
        Module { funcs: vec![f], files: all.files }
    } else {
        Module { funcs: vec![f.clone()], files: m.files.clone() }
    };
    let mut pm = gpu_pipeline(opts);
    pm.run(&mut gm).map_err(|mut errs| errs.swap_remove(0))?;
    Ok(gm)
}

/// Compiles kernel `kernel` of `m` (tile IR, helpers inlined) to PTX.
pub fn emit_ptx(m: &Module, kernel: &str, opts: &GpuOptions) -> Result<PtxKernel, Diagnostic> {
    let gm = lower_to_gpu_ir(m, kernel, opts)?;
    emit_gpu_ir(&gm, kernel, opts)
}
