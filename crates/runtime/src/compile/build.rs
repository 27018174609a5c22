//! Compiling a specialization from source: the front end, the tile passes and, for GPU
//! targets, the GPU pipeline and `ptxas`.

use std::time::Instant;

use trident_front::{ArgInfo, ConstValue, ParamBinding};
use trident_gpu::{GpuError, GpuErrorKind, GpuOptions};
use trident_ir::print::{print_module, PrintOptions};
use trident_ir::SourceFile;

use super::{CompileError, CompileErrorKind, Request};
use crate::compiled::{tune_value, Assembled, CodeTarget, CompiledKernel, GpuCode, ParamSlot, ScalarDefault};
use crate::error::RunError;

/// A GPU pipeline failure, its kind carried over (the autotuner skips out-of-resources configs).
pub(crate) fn gpu_error(e: GpuError, files: &[SourceFile]) -> CompileError {
    let kind = match e.kind {
        GpuErrorKind::OutOfSharedMemory { needed, limit } => CompileErrorKind::OutOfSharedMemory { needed, limit },
        GpuErrorKind::Other => CompileErrorKind::Other,
    };
    CompileError { error: RunError::from_diags(&[*e.diagnostic], files), kind }
}

/// Compiles from source.
pub(super) fn build(req: &Request, infos: &[(String, ArgInfo)]) -> Result<CompiledKernel, CompileError> {
    let start = Instant::now();
    let files = req.prog.source_files();
    let mut compiled = trident_front::compile(&req.prog.file, &req.kernel.name, infos, &req.options)
        .map_err(|ds| RunError::from_diags(&ds, &files))?;
    let mut pm = trident_opt::tile_pipeline(crate::env::split_loops());
    if req.print_ir_after_all {
        pm.print_ir_after_all = true;
    }
    pm.run(&mut compiled.module).map_err(|ds| RunError::from_diags(&ds, &compiled.module.files))?;
    let params = compiled
        .param_names
        .iter()
        .zip(&compiled.params)
        .map(|(name, b)| ParamSlot {
            name: name.clone(),
            ir_index: match b {
                ParamBinding::Runtime { ir_index } => Some(*ir_index),
                _ => None,
            },
            parts: match b {
                ParamBinding::Descriptor { base, shape, strides } => {
                    std::iter::once(base).chain(shape).chain(strides).copied().collect()
                }
                _ => vec![],
            },
            default: req.kernel.param(name).and_then(|p| match &p.default {
                Some(ConstValue::Int(v)) => i64::try_from(*v).ok().map(ScalarDefault::Int),
                Some(ConstValue::Float(v)) => Some(ScalarDefault::Float(*v)),
                Some(ConstValue::Bool(v)) => Some(ScalarDefault::Bool(*v)),
                _ => None,
            }),
        })
        .collect();
    let constexprs = compiled
        .param_names
        .iter()
        .zip(&compiled.params)
        .filter_map(|(n, b)| match b {
            ParamBinding::Constexpr(c) => Some((n.clone(), tune_value(c))),
            _ => None,
        })
        .collect();
    let mut notes = vec![];
    let gpu = match req.target.gpu() {
        None => None,
        Some(target) => {
            let gopts = GpuOptions {
                target,
                num_warps: req.num_warps,
                num_stages: req.num_stages,
                profile: req.profile,
                sanitize: req.sanitize,
                pingpong: crate::env::pingpong(),
                setmaxnreg: crate::env::setmaxnreg(),
                ..GpuOptions::default()
            };
            let module = &compiled.module;
            let art = trident_gpu::GpuPipeline::new(&gopts)
                .print_ir_after_all(req.print_ir_after_all)
                .run(module, &compiled.kernel)
                .map_err(|e| gpu_error(e, &module.files))?;
            let ttgir = print_module(&art.gpu_ir, &PrintOptions::with_locs());
            let (ptx, profile) = (art.ptx, art.profile);
            let mut asm = Assembled::default();
            if matches!(req.target, CodeTarget::Cuda(_) | CodeTarget::SassEmu(_))
                && trident_gpu::tools::find(trident_gpu::tools::Tool::Ptxas).is_ok()
            {
                match trident_gpu::tools::ptxas(&ptx.ptx, target.arch()) {
                    Ok(out) => {
                        let usage = out.usage.iter().find(|u| u.function == ptx.entry);
                        asm.registers = usage.map(|u| u.registers);
                        asm.spills = usage.map(|u| u.spill_stores);
                        if matches!(req.target, CodeTarget::SassEmu(_)) {
                            match trident_gpu::tools::nvdisasm(&out.cubin, &["-json", "-c"]) {
                                Ok(json) => asm.sass_json = Some(json),
                                Err(e) => notes.push(format!("nvdisasm: {e}; it runs again at launch")),
                            }
                        }
                        asm.cubin = Some(out.cubin);
                    }
                    Err(e) => notes.push(format!("ptxas: {e}; the driver will compile the PTX")),
                }
            }
            Some(GpuCode::new(ptx, ttgir, req.num_warps, req.num_stages, asm, profile))
        }
    };
    Ok(CompiledKernel {
        kernel: compiled.kernel,
        module: compiled.module,
        params,
        constexprs,
        target: req.target,
        gpu,
        static_prints: compiled.static_prints,
        cache_id: None,
        build_time: start.elapsed(),
        notes,
    })
}
