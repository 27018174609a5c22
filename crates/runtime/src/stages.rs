//! `trident compile`: a kernel compiled for some arguments down to a chosen stage —
//! tile IR, GPU IR, PTX, a cubin (`ptxas`) or SASS (`nvdisasm`) — and handed back as
//! text or bytes for the caller to print or write.
//!
//! The tile IR comes through the launch path ([`crate::launch`]: bind, first config,
//! compile through the cache, with the tile-IR target); the GPU stages lower it with the
//! warps and stages the request asks for (`--num-warps`, `--num-stages`, else the config's,
//! else 4 and 3), never with values taken from a cached entry.

use std::sync::Arc;

use trident_core::DType;
use trident_front::{ArgInfo, KernelInfo};
use trident_gpu::{GpuOptions, GpuPipeline, Target};
use trident_ir::print::{print_module, PrintOptions};
use trident_ir::Module;

pub use trident_gpu::tools::ResourceUsage;

use crate::args::{parse_and_materialize, parse_grid, Arg};
use crate::compiled::CodeTarget;
use crate::error::RunError;
use crate::launch::{bind, prepare_bound, LaunchOptions};
use crate::program::KernelProgram;
use crate::session::Session;

/// What to compile down to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Tile IR after the tile passes.
    Ttir,
    /// GPU IR: tile IR with a layout on every tensor, after the GPU passes.
    Ttgir,
    /// PTX text.
    Ptx,
    /// A cubin from `ptxas`, with its `-v` report.
    Cubin,
    /// SASS: the cubin's instructions as `nvdisasm` reads them, with their decoded control
    /// bits (`trident sass dump`'s listing).
    Sass,
}

/// How to compile.
#[derive(Clone, Debug)]
pub struct StageOptions {
    /// The stage to stop at.
    pub stage: Stage,
    /// GPU architecture for the GPU stages (`sm_80`, `sm_90`, `sm_90a`).
    pub arch: String,
    /// Warps per program: `None` for the first autotune config's, else 4.
    pub num_warps: Option<u32>,
    /// Pipelining depth: `None` for the first autotune config's, else 3.
    pub num_stages: Option<u32>,
    /// Keep `tl.device_assert`s.
    pub debug: bool,
    /// Print the IR after every pass to stderr.
    pub print_ir_after_all: bool,
    /// Print source locations in IR.
    pub locs: bool,
    /// Where the tile IR is cached; `None`: [`Session::global`].
    pub session: Option<Arc<Session>>,
}

impl StageOptions {
    /// Tile IR for sm_80 defaults: no overrides, no debug, no dumps, no locations.
    pub fn new(stage: Stage) -> StageOptions {
        StageOptions {
            stage,
            arch: "sm_80".into(),
            num_warps: None,
            num_stages: None,
            debug: false,
            print_ir_after_all: false,
            locs: false,
            session: None,
        }
    }
}

/// A cubin and what `ptxas` said about it.
#[derive(Clone, Debug)]
pub struct Cubin {
    /// The kernel's name.
    pub kernel: String,
    /// The cubin.
    pub bytes: Vec<u8>,
    /// `ptxas -v`'s report, one entry per function.
    pub usage: Vec<ResourceUsage>,
    /// `ptxas` warnings (Trident's PTX should produce none).
    pub warnings: Vec<String>,
    /// Dynamic shared memory the kernel is launched with.
    pub shared_bytes: u32,
    /// Threads per CTA.
    pub num_threads: u32,
}

/// A compiled stage.
#[derive(Clone, Debug)]
pub enum StageOutput {
    /// IR (ending in a newline), PTX or SASS text.
    Text(String),
    /// A cubin.
    Cubin(Cubin),
}

const TOOL_HINT: &str = "(run scripts/install-tools, or set TRIDENT_PTXAS / TRIDENT_NVDISASM)";

/// `*f16` → pointer, `i32`/`f32`/`bool` → an unspecialized scalar of that type,
/// `desc[64x64]:*f16` (`desc[64x64,nan]:*f16`) → a host tensor descriptor whose sizes are not
/// specialized.
fn type_spec(v: &str) -> Option<ArgInfo> {
    if let Some(rest) = v.strip_prefix("desc[") {
        let (inside, ty) = rest.split_once("]:")?;
        let (block, nan) = match inside.split_once(',') {
            Some((b, "nan")) => (b, true),
            Some((b, "zero")) => (b, false),
            Some(_) => return None,
            None => (inside, false),
        };
        let block: Vec<u32> =
            crate::args::parse_shape(block).ok()?.into_iter().map(|d| u32::try_from(d).ok()).collect::<Option<_>>()?;
        let dtype = DType::parse(ty.strip_prefix('*')?)?;
        let shape_div16 = vec![false; block.len()];
        return Some(ArgInfo::TensorDesc { dtype, aligned16: true, block, nan, shape_div16 });
    }
    if let Some(p) = v.strip_prefix('*') {
        return DType::parse(p).map(|dtype| ArgInfo::Pointer { dtype, aligned16: true });
    }
    // A value no specialization applies to (not 1, not a multiple of 16) stands for "any value of this type".
    Some(match DType::parse(v)? {
        DType::I1 => ArgInfo::Bool(false),
        DType::I32 => ArgInfo::Int(3),
        DType::I64 => ArgInfo::Int((1 << 40) + 3),
        DType::U64 => ArgInfo::UInt((1 << 63) + 3),
        DType::F32 => ArgInfo::Float(0.5),
        _ => return None,
    })
}

fn print_ir(m: &Module, locs: bool) -> String {
    let mut text = print_module(m, &PrintOptions { locs });
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// Compiles `kernel` down to `opts.stage` for `words`: each `NAME=VALUE` (as for `trident
/// run`) or, for a runtime parameter, `NAME=TYPE` (`x=*f16`, `n=i32`, `eps=f32`), which
/// compiles the version not specialized on the value.
pub fn compile_stage(
    prog: &KernelProgram,
    kernel: &KernelInfo,
    words: &[String],
    opts: &StageOptions,
) -> Result<StageOutput, RunError> {
    let mut values: Vec<Arg> = vec![];
    let mut typed: Vec<(String, ArgInfo)> = vec![];
    for text in words {
        let (name, v) = text.split_once('=').ok_or_else(|| RunError::msg(format!("`{text}`: expected NAME=VALUE")))?;
        if let Some(info) = type_spec(v) {
            if kernel.param(name).is_some_and(|p| !p.is_constexpr) {
                typed.push((name.to_string(), info));
                continue;
            }
        }
        values.push(parse_and_materialize(text, 0)?);
    }
    compile_stage_args(prog, kernel, &values, typed, opts)
}

/// [`compile_stage`] for argument values (as a launch has them) and, for runtime
/// parameters given by type only, `typed` (the front end's view of them): the Python
/// package's ahead-of-time compile (`kernel.warmup(...)`).
pub fn compile_stage_args(
    prog: &KernelProgram,
    kernel: &KernelInfo,
    values: &[Arg],
    typed: Vec<(String, ArgInfo)>,
    opts: &StageOptions,
) -> Result<StageOutput, RunError> {
    let mut lopts = LaunchOptions::new(parse_grid("1")?);
    lopts.num_warps = opts.num_warps;
    lopts.num_stages = opts.num_stages;
    lopts.debug = opts.debug;
    lopts.print_ir_after_all = opts.print_ir_after_all;
    lopts.session = opts.session.clone();
    let mut bound = bind(kernel, values)?;
    bound.extend(typed);
    // No backend to time configs on: the first config (after pinned values).
    let prepared = prepare_bound(prog, kernel, values, &bound, &lopts, CodeTarget::Tile, false)?;
    if opts.stage == Stage::Ttir {
        return Ok(StageOutput::Text(print_ir(&prepared.module, opts.locs)));
    }

    let target = Target::parse(&opts.arch)
        .ok_or_else(|| RunError::msg(format!("unknown target `{}` (sm_80 or sm_90)", opts.arch)))?;
    // The request's warps and stages: the tile-IR entry does not depend on them.
    let gopts = GpuOptions {
        target,
        num_warps: prepared.num_warps,
        num_stages: prepared.num_stages,
        pingpong: crate::env::pingpong(),
        setmaxnreg: crate::env::setmaxnreg(),
        ..GpuOptions::default()
    };
    let files = &prepared.module.files;
    let kname = &prepared.kernel;
    let pipeline = GpuPipeline::new(&gopts).print_ir_after_all(opts.print_ir_after_all);
    let gpu_error = |e: trident_gpu::GpuError| crate::compile::gpu_error(e, files).error;
    let (gpu_ir, _) = pipeline.lower(&prepared.module, kname).map_err(gpu_error)?;
    if opts.stage == Stage::Ttgir {
        return Ok(StageOutput::Text(print_ir(&gpu_ir, opts.locs)));
    }
    let ptx = pipeline.emit(&gpu_ir, kname).map_err(gpu_error)?;
    if opts.stage == Stage::Ptx {
        return Ok(StageOutput::Text(ptx.ptx));
    }
    let tool_error = |e: trident_gpu::tools::ToolError| RunError::other(format!("error: {e} {TOOL_HINT}"));
    let out = trident_gpu::tools::ptxas(&ptx.ptx, target.arch()).map_err(tool_error)?;
    if opts.stage == Stage::Sass {
        // The annotated listing: decoded control bits, attributes (trident sass dump's).
        return Ok(StageOutput::Text(crate::sass::listing(&out.cubin, None, false)?));
    }
    Ok(StageOutput::Cubin(Cubin {
        kernel: kname.clone(),
        bytes: out.cubin,
        usage: out.usage,
        warnings: out.warnings,
        shared_bytes: ptx.shared_bytes,
        num_threads: ptx.num_threads,
    }))
}
