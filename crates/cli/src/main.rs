//! The `trident` command line.

mod bench_cmd;
mod cache_cmd;
mod cli;
mod compile_cmd;
mod demo_cmd;
mod expr;
mod layout_cmd;
mod run_cmd;

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
