//! Argument definitions and dispatch to subcommands.

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "trident", version, about = "Trident: a Triton-dialect GPU kernel compiler in Rust")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Placeholder while the subcommands are wired up.
    Version,
}

pub fn dispatch(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Version => {
            println!("trident {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
    }
}
