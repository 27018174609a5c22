//! `trident run`.

use clap::Args;
use trident_runtime::launch::{self, KernelProgram, LaunchOptions};
use trident_runtime::{npy, RunCommand};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Print the IR after every pass to stderr.
    #[arg(long)]
    pub print_ir_after_all: bool,
    /// Keep and check `tl.device_assert`s.
    #[arg(long)]
    pub debug: bool,
    /// FILE.py::KERNEL, options and NAME=VALUE arguments (see `trident run --help`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub words: Vec<String>,
}

pub fn run(a: RunArgs) -> Result<(), String> {
    let is_ptx = a
        .words
        .iter()
        .find(|w| !w.starts_with('-') && !w.contains('='))
        .is_some_and(|t| t.split("::").next().is_some_and(|f| f.ends_with(".ptx")));
    if is_ptx {
        return crate::ptx_run::run(&a.words);
    }
    let cmd = RunCommand::parse(&a.words).map_err(|e| format!("error: {e}"))?;
    let prog = KernelProgram::load(&cmd.file).map_err(|e| e.text)?;
    let kernel = prog.kernel(cmd.kernel.as_deref()).map_err(|e| e.text)?;
    let mut args = cmd.materialize().map_err(|e| format!("error: {e}"))?;
    let mut opts = LaunchOptions::new(cmd.grid);
    opts.grid_expr = cmd.grid_expr.clone();
    opts.backend = cmd.backend;
    opts.num_warps = cmd.num_warps;
    opts.num_stages = cmd.num_stages;
    opts.debug = a.debug;
    opts.print_ir_after_all = a.print_ir_after_all;
    let out = launch::launch(&prog, kernel, &mut args, &opts).map_err(|e| e.text)?;
    print!("{}", out.printed);
    for s in &cmd.saves {
        let arg = args.iter().find(|x| x.name == s.name).expect("RunCommand checked --save names");
        let t = arg.value.as_tensor().ok_or_else(|| format!("error: --save {}: not a tensor argument", s.name))?;
        npy::write(&s.path, t).map_err(|e| format!("error: --save {}: {e}", s.name))?;
    }
    eprintln!(
        "ran {} on {:?}: compile {:.2} ms, run {:.2} ms",
        kernel.name,
        out.backend,
        out.compile_time.as_secs_f64() * 1e3,
        out.run_time.as_secs_f64() * 1e3
    );
    Ok(())
}
