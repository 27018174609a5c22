//! `trident compile`: the runtime compiles (`trident_runtime::stages`); this prints the
//! stage or writes the cubin.

use clap::{Args, ValueEnum};
use trident_runtime::stages::{compile_stage, Stage, StageOptions, StageOutput};
use trident_runtime::KernelProgram;

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

impl From<Emit> for Stage {
    fn from(e: Emit) -> Stage {
        match e {
            Emit::Ttir => Stage::Ttir,
            Emit::Ttgir => Stage::Ttgir,
            Emit::Ptx => Stage::Ptx,
            Emit::Cubin => Stage::Cubin,
            Emit::Sass => Stage::Sass,
        }
    }
}

pub fn compile(a: CompileArgs) -> Result<(), String> {
    let (file, kname) = match a.kernel.split_once("::") {
        Some((f, k)) if !k.is_empty() => (f.to_string(), Some(k.to_string())),
        Some((f, _)) => (f.to_string(), None),
        None => (a.kernel.clone(), None),
    };
    let prog = KernelProgram::load(std::path::Path::new(&file)).map_err(|e| e.text)?;
    let kernel = prog.kernel(kname.as_deref()).map_err(|e| e.text)?;
    let words: Vec<String> = a.consts.iter().chain(&a.args).cloned().collect();
    let opts = StageOptions {
        arch: a.arch.clone(),
        num_warps: a.num_warps,
        num_stages: a.num_stages,
        debug: a.debug,
        print_ir_after_all: a.print_ir_after_all,
        locs: a.locs,
        ..StageOptions::new(a.emit.into())
    };
    match compile_stage(&prog, kernel, &words, &opts).map_err(|e| e.text)? {
        StageOutput::Text(text) => print!("{text}"),
        StageOutput::Cubin(c) => {
            let path = a.output.clone().unwrap_or_else(|| format!("{}.cubin", c.kernel));
            std::fs::write(&path, &c.bytes).map_err(|e| format!("error: cannot write {path}: {e}"))?;
            for u in &c.usage {
                println!("{u:?}");
            }
            for w in &c.warnings {
                println!("{w}");
            }
            println!(
                "wrote {path} ({} bytes, {} shared bytes, {} threads)",
                c.bytes.len(),
                c.shared_bytes,
                c.num_threads
            );
        }
    }
    Ok(())
}
