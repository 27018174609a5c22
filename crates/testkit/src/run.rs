//! Running a catalog case on a backend and checking it: shared by `trident demo`
//! and the test suites.

use crate::case::Case;
use crate::compare::{check_args, Report};
use std::time::Duration;
use trident_runtime::launch::{self, LaunchOptions};
use trident_runtime::Backend;
use trident_runtime::KernelProgram;

/// A case that ran and matched its reference.
#[derive(Debug)]
pub struct CaseRun {
    /// The backend that ran it.
    pub backend: Backend,
    /// Errors against the reference.
    pub report: Report,
    /// Source → optimised IR (and code generation on GPU backends).
    pub compile_time: Duration,
    /// The launch itself.
    pub run_time: Duration,
}

/// Compiles `case`, runs it on `backend` with inputs drawn from `seed`, and checks the outputs.
/// The error is a human-readable message (compile/launch diagnostics or the mismatch).
pub fn run_case(case: &Case, backend: Backend, seed: u64) -> Result<CaseRun, String> {
    let prog = KernelProgram::from_source(case.file, case.source).map_err(|e| e.text)?;
    let kernel = prog.kernel(Some(case.kernel)).map_err(|e| e.text)?;
    let before = case.materialize(seed).map_err(|e| e.to_string())?;
    let mut args = before.clone();
    let mut opts = LaunchOptions::new(case.grid);
    opts.backend = backend;
    opts.num_warps = case.num_warps;
    let out = launch::launch(&prog, kernel, &mut args, &opts).map_err(|e| e.text)?;
    let report = check_args(case, &before, &args).map_err(|m| m.to_string())?;
    Ok(CaseRun { backend: out.backend, report, compile_time: out.compile_time, run_time: out.run_time })
}
