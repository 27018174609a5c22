//! `trident profile`: a kernel run (the same words as `trident run`) with in-kernel region
//! profiling, on the emulator or a GPU. Prints the region table and the profile's issues
//! (dropped records included), and writes the trace, the CSV and `--save`d outputs.

use clap::Args;
use trident_runtime::args::RunCommand;
use trident_runtime::launch::{self, LaunchOptions};
use trident_runtime::profile::{table, trace};
use trident_runtime::KernelProgram;

#[derive(Args, Debug)]
pub struct ProfileArgs {
    /// FILE.py::KERNEL, options and arguments, in any order (see below).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub words: Vec<String>,
}

/// At most this many issues are listed under the table (then a count of the rest).
const ISSUES_SHOWN: usize = 20;

pub fn profile(a: ProfileArgs) -> Result<(), String> {
    let cmd = RunCommand::parse_profile(&a.words).map_err(|e| format!("error: {e}"))?;
    let flags = cmd.profile.clone().unwrap_or_default();
    let prog = KernelProgram::load(&cmd.file).map_err(|e| e.text)?;
    let kernel = prog.kernel(cmd.kernel.as_deref()).map_err(|e| e.text)?;
    let mut args = cmd.materialize().map_err(|e| format!("error: {e}"))?;
    let opts = LaunchOptions::from_command(&cmd);
    let out = launch::launch(&prog, kernel, &mut args, &opts).map_err(|e| e.text)?;
    print!("{}", out.printed);
    let p = out.profile.ok_or("internal: a profiled launch returned no profile")?;
    print!("{}", table::render_table(&p));
    let issues = table::render_issues(&p, ISSUES_SHOWN);
    if !issues.is_empty() {
        print!("{issues}");
    }
    if let Some(path) = &flags.trace {
        std::fs::write(path, trace::chrome_trace_json(&p))
            .map_err(|e| format!("error: --trace {}: {e}", path.display()))?;
    }
    if let Some(path) = &flags.csv {
        std::fs::write(path, table::render_csv(&p)).map_err(|e| format!("error: --csv {}: {e}", path.display()))?;
    }
    crate::run_cmd::save_outputs(&cmd, &args)?;
    eprintln!(
        "profiled {} on {:?}: compile {:.2} ms, run {:.2} ms",
        kernel.name,
        out.backend,
        out.compile_time.as_secs_f64() * 1e3,
        out.run_time.as_secs_f64() * 1e3
    );
    Ok(())
}
