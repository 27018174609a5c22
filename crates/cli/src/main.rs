//! The `trident` command line: argument handling and printing only. The work is
//! trident-runtime's (the CLI depends on it and on trident-testkit, nothing else):
//!
//! * `run`, `bench`: the words go to the runtime's one parser of those command lines
//!   (`args::command`, whose option table also writes their `--help`), then
//!   `launch` (kernels) or `ptx_run` (PTX files); `bench` adds `expr.rs`'s
//!   `--flops`/`--bytes` arithmetic over the arguments.
//! * `compile`: clap's options, then `stages::compile_stage`; the CLI prints the text or
//!   writes the cubin.
//! * `profile`: the same words as `run` plus the profiling options (the runtime's parser),
//!   `launch` with `LaunchOptions::profile`; prints the runtime's region table and issues,
//!   writes the trace and CSV texts it renders.
//! * `layout`: `layout::draw`. `cache`: `cache::Cache`'s admin calls. `demo`: the
//!   testkit's catalog run on the backend `launch::resolve_backend` picks.
//! * `sass`: the cubin toolkit's commands (`sass_cmd.rs`); `sass search` takes its own
//!   options out of the line and gives the rest to the `run` parser (`sass_search_cmd.rs`).

mod bench_cmd;
mod cache_cmd;
mod cli;
mod compile_cmd;
mod demo_cmd;
mod expr;
mod layout_cmd;
mod profile_cmd;
mod run_cmd;
mod sass_cmd;
mod sass_search_cmd;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::dispatch(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprint!("{msg}");
            if !msg.ends_with('\n') {
                eprintln!();
            }
            ExitCode::FAILURE
        }
    }
}
