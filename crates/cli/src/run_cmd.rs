//! `trident run`: a kernel in a Python file, or PTX.

use clap::Args;
use trident_runtime::args::{PtxCommand, RunCommand, RunLine};
use trident_runtime::launch::{self, LaunchOptions};
use trident_runtime::ptx_run::run_ptx;
use trident_runtime::{npy, KernelProgram};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// FILE.py::KERNEL (or FILE.ptx::ENTRY), options and arguments, in any order (see below).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub words: Vec<String>,
}

pub fn run(a: RunArgs) -> Result<(), String> {
    match RunLine::parse(&a.words).map_err(|e| format!("error: {e}"))? {
        RunLine::Kernel(cmd) => run_kernel(&cmd),
        RunLine::Ptx(cmd) => run_ptx_file(&cmd),
    }
}

fn run_kernel(cmd: &RunCommand) -> Result<(), String> {
    let prog = KernelProgram::load(&cmd.file).map_err(|e| e.text)?;
    let kernel = prog.kernel(cmd.kernel.as_deref()).map_err(|e| e.text)?;
    let mut args = cmd.materialize().map_err(|e| format!("error: {e}"))?;
    let opts = LaunchOptions::from_command(cmd);
    let out = launch::launch(&prog, kernel, &mut args, &opts).map_err(|e| e.text)?;
    print!("{}", out.printed);
    save_outputs(cmd, &args)?;
    eprintln!(
        "ran {} on {:?}: compile {:.2} ms, run {:.2} ms",
        kernel.name,
        out.backend,
        out.compile_time.as_secs_f64() * 1e3,
        out.run_time.as_secs_f64() * 1e3
    );
    if let Some(e) = &out.estimate {
        eprintln!("  {e}");
    }
    Ok(())
}

/// Writes the tensors `--save` names (after a kernel run or profile).
/// All or nothing (`npy::write_all`): a failing one leaves every path as it was.
pub(crate) fn save_outputs(cmd: &RunCommand, args: &[trident_runtime::Arg]) -> Result<(), String> {
    let mut items = vec![];
    for s in &cmd.saves {
        let arg = args.iter().find(|x| x.name == s.name).expect("RunCommand checked --save names");
        let t = arg.value.as_tensor().ok_or_else(|| format!("error: --save {}: not a tensor argument", s.name))?;
        items.push((s.path.as_path(), t));
    }
    npy::write_all(&items).map_err(|(i, e)| format!("error: --save {}: {e} (nothing was saved)", cmd.saves[i].name))
}

fn run_ptx_file(cmd: &PtxCommand) -> Result<(), String> {
    let out = run_ptx(cmd).map_err(|e| e.text)?;
    print!("{}", out.printed);
    if let Some(cycles) = out.cycles {
        let on = if out.backend == trident_runtime::Backend::SassEmu {
            "the SASS emulator (estimated)"
        } else {
            "the emulator (modelled)"
        };
        eprintln!("ran {} on {on}: {cycles} cycles", out.entry);
    }
    let items: Vec<_> = cmd
        .saves
        .iter()
        .map(|s| {
            (
                s.path.as_path(),
                out.tensors[s.index].as_ref().expect("run_ptx checked that saved parameters are tensors"),
            )
        })
        .collect();
    npy::write_all(&items).map_err(|(i, e)| format!("error: --save {}: {e} (nothing was saved)", cmd.saves[i].index))
}
