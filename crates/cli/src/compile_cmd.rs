//! `trident compile`.

use clap::{Args, ValueEnum};
use trident_core::DType;
use trident_front::ArgInfo;
use trident_runtime::args::{parse_and_materialize, parse_grid};
use trident_runtime::launch::{self, KernelProgram, LaunchOptions};

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// Tile IR after the tile passes.
    Ttir,
    /// GPU IR: tile IR with a layout on every tensor, after the GPU passes.
    Ttgir,
    /// PTX text.
    Ptx,
    /// A cubin from `ptxas` (written to --output, default KERNEL.cubin); prints `ptxas -v` usage.
    Cubin,
    /// SASS from `nvdisasm` of the cubin.
    Sass,
}

#[derive(Args, Debug)]
pub struct CompileArgs {
    /// FILE.py::KERNEL (or FILE.py when it holds one kernel).
    pub kernel: String,
    /// A constexpr value, NAME=VALUE (same as giving NAME=VALUE).
    #[arg(long = "const", value_name = "NAME=VALUE")]
    pub consts: Vec<String>,
    /// What to print.
    #[arg(long, value_enum, default_value = "ttir")]
    pub emit: Emit,
    #[arg(long)]
    pub num_warps: Option<u32>,
    #[arg(long)]
    pub num_stages: Option<u32>,
    /// Print the IR after every pass to stderr.
    #[arg(long)]
    pub print_ir_after_all: bool,
    /// Keep `tl.device_assert`s.
    #[arg(long)]
    pub debug: bool,
    /// Print source locations in the IR.
    #[arg(long)]
    pub locs: bool,
    /// GPU architecture for ttgir/ptx/cubin/sass (sm_80 or sm_90).
    #[arg(long = "target", default_value = "sm_80")]
    pub arch: String,
    /// Where --emit cubin writes the cubin.
    #[arg(long, short)]
    pub output: Option<String>,
    /// NAME=VALUE or NAME=TYPE for parameters (TYPE: *f16, i32, i64, f32, i1, ...).
    pub args: Vec<String>,
}

/// `*f16` → pointer, `i32`/`f32`/`bool` → an unspecialized scalar of that type.
fn type_spec(v: &str) -> Option<ArgInfo> {
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

pub fn compile(a: CompileArgs) -> Result<(), String> {
    let (file, kname) = match a.kernel.split_once("::") {
        Some((f, k)) if !k.is_empty() => (f.to_string(), Some(k.to_string())),
        Some((f, _)) => (f.to_string(), None),
        None => (a.kernel.clone(), None),
    };
    let prog = KernelProgram::load(std::path::Path::new(&file)).map_err(|e| e.text)?;
    let kernel = prog.kernel(kname.as_deref()).map_err(|e| e.text)?;
    let mut values = vec![];
    let mut infos: Vec<(String, ArgInfo)> = vec![];
    for text in a.consts.iter().chain(&a.args) {
        let (name, v) = text.split_once('=').ok_or_else(|| format!("error: `{text}`: expected NAME=VALUE"))?;
        if let Some(info) = type_spec(v) {
            if kernel.param(name).is_some_and(|p| !p.is_constexpr) {
                infos.push((name.to_string(), info));
                continue;
            }
        }
        values.push(parse_and_materialize(text, 0).map_err(|e| format!("error: {e}"))?);
    }
    let mut opts = LaunchOptions::new(parse_grid("1").expect("valid grid"));
    opts.num_warps = a.num_warps;
    opts.num_stages = a.num_stages;
    opts.debug = a.debug;
    opts.print_ir_after_all = a.print_ir_after_all;
    let ck = launch::compile_tile_with(&prog, kernel, &values, infos, &opts).map_err(|e| e.text)?;
    let po = trident_ir::print::PrintOptions { locs: a.locs };
    let print_ir = |m: &trident_ir::Module| {
        let text = trident_ir::print::print_module(m, &po);
        print!("{text}");
        if !text.ends_with('\n') {
            println!();
        }
    };
    if a.emit == Emit::Ttir {
        print_ir(&ck.compiled.module);
        return Ok(());
    }
    let target = trident_gpu::Target::parse(&a.arch)
        .ok_or_else(|| format!("error: unknown target `{}` (sm_80 or sm_90)", a.arch))?;
    let gopts = trident_gpu::GpuOptions {
        target,
        num_warps: ck.num_warps,
        num_stages: ck.num_stages,
        ..trident_gpu::GpuOptions::default()
    };
    let files = &ck.compiled.module.files;
    let kname = &ck.compiled.kernel;
    let pipeline = trident_gpu::GpuPipeline::new(&gopts).print_ir_after_all(a.print_ir_after_all);
    let (gpu_ir, _) = pipeline.lower(&ck.compiled.module, kname).map_err(|e| e.diagnostic.render(files))?;
    if a.emit == Emit::Ttgir {
        print_ir(&gpu_ir);
        return Ok(());
    }
    let ptx = pipeline.emit(&gpu_ir, kname).map_err(|e| e.diagnostic.render(files))?;
    if a.emit == Emit::Ptx {
        print!("{}", ptx.ptx);
        return Ok(());
    }
    let tool_hint = "(run scripts/install-tools, or set TRIDENT_PTXAS / TRIDENT_NVDISASM)";
    let out = trident_gpu::tools::ptxas(&ptx.ptx, target.arch()).map_err(|e| format!("error: {e} {tool_hint}"))?;
    match a.emit {
        Emit::Cubin => {
            let path = a.output.clone().unwrap_or_else(|| format!("{kname}.cubin"));
            std::fs::write(&path, &out.cubin).map_err(|e| format!("error: cannot write {path}: {e}"))?;
            for u in &out.usage {
                println!("{u:?}");
            }
            for w in &out.warnings {
                println!("{w}");
            }
            println!(
                "wrote {path} ({} bytes, {} shared bytes, {} threads)",
                out.cubin.len(),
                ptx.shared_bytes,
                ptx.num_threads
            );
        }
        _ => {
            let sass =
                trident_gpu::tools::nvdisasm(&out.cubin, &["-c"]).map_err(|e| format!("error: {e} {tool_hint}"))?;
            print!("{sass}");
        }
    }
    Ok(())
}
