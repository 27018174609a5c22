//! `trident sass search`: the setup of a schedule search — a kernel from a Python file
//! compiled for the given arguments and target, its cubin, and the SASS emulator's launch
//! exactly as `--backend sass-emu` would make it — handed to trident-sass-search, which
//! does the search (re-exported as [`search`] for the CLI).

use trident_gpu::tools::{find, Tool};
use trident_gpu::Target;

pub use trident_sass_search as search;

use crate::args::{Backend, RunCommand};
use crate::compiled::CodeTarget;
use crate::error::RunError;
use crate::launch::{bind, prepare_bound, LaunchOptions};
use crate::program::KernelProgram;

const TOOL_HINT: &str = "(run scripts/install-tools, or set TRIDENT_PTXAS / TRIDENT_NVDISASM)";

/// What [`setup`] made: the search's problem, and the launch's shape for the summary.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The cubin, the kernel's name and its launch on the SASS emulator.
    pub problem: search::Problem,
    /// The target compiled for (`sm_80`, `sm_90a`).
    pub arch: String,
    /// Programs along each axis.
    pub grid: [u32; 3],
    /// Threads per CTA.
    pub threads: u32,
}

/// Compiles `cmd`'s kernel (`trident run`'s command line: file, kernel, arguments, grid,
/// warps, stages) for `arch` and sets up its launch on the SASS emulator. The config is the
/// first autotune config (nothing is timed); the arguments are materialized with the
/// command's seed.
pub fn setup(cmd: &RunCommand, arch: &str) -> Result<Setup, RunError> {
    match cmd.backend {
        Backend::SassEmu | Backend::Auto => {}
        Backend::Cuda => {
            return Err(RunError::argument(
                "--backend cuda: searching on measured GPU time is not implemented yet (--backend sass-emu)",
            ))
        }
        other => {
            return Err(RunError::argument(format!(
                "--backend {other:?}: a schedule search runs on the SASS emulator (--backend sass-emu)"
            )))
        }
    }
    let target = Target::parse(arch)
        .ok_or_else(|| RunError::argument(format!("--target {arch}: not a target (sm_80, sm_90 or sm_90a)")))?;
    let prog = KernelProgram::load(&cmd.file)?;
    let kernel = prog.kernel(cmd.kernel.as_deref())?;
    let args = cmd.materialize().map_err(|e| RunError::argument(e.to_string()))?;
    let opts = LaunchOptions { backend: Backend::SassEmu, ..LaunchOptions::from_command(cmd) };
    let bound = bind(kernel, &args)?;
    let prepared = prepare_bound(&prog, kernel, &args, &bound, &opts, CodeTarget::Emu(target), false)?;
    let code = prepared
        .gpu
        .as_ref()
        .ok_or_else(|| RunError::msg(format!("internal: kernel `{}` has no GPU code", prepared.kernel)))?;
    let values = crate::run::runtime_values(&prepared, &args)?;
    let grid = crate::run::grid_of(&prepared, &args, &opts)?;
    let cubin = crate::sass_run::cubin_of(code).map_err(|e| RunError::other(format!("{} {TOOL_HINT}", e.text)))?;
    let problem = problem(code, cubin, &values, grid);
    Ok(Setup { problem, arch: target.arch().to_string(), grid, threads: code.ptx.num_threads })
}

/// The search's problem: `cubin` (of `code`) launched on the SASS emulator with `values`.
pub(crate) fn problem(
    code: &crate::compiled::GpuCode,
    cubin: Vec<u8>,
    values: &[crate::args::ArgValue],
    grid: [u32; 3],
) -> search::Problem {
    search::Problem {
        cubin,
        kernel: code.ptx.entry.clone(),
        args: crate::gpu::emulator_args(&code.ptx, values),
        config: crate::sass_run::launch_config(&code.ptx, grid),
    }
}

/// `nvdisasm`, found as the GPU crate finds it, as the search's disassembler.
pub fn disassembler() -> Result<search::Disassembler, RunError> {
    let tool = find(Tool::Nvdisasm).map_err(|e| RunError::other(format!("error: {e} {TOOL_HINT}")))?;
    Ok(search::nvdisasm(tool))
}
