//! `trident sass`: cubins as the schedule prong sees them; the work is
//! `trident_runtime::sass`'s.
//!
//! ```text
//! trident sass dump kernel.cubin [--kernel K]     # offset, control bits, instruction, attributes
//! trident sass roundtrip kernel.cubin -o out.cubin   # parse and write back, byte for byte
//! ```

use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct SassArgs {
    #[command(subcommand)]
    pub command: SassCommand,
}

#[derive(Subcommand, Debug)]
pub enum SassCommand {
    /// List each kernel's instructions with their decoded control bits (write/read
    /// scoreboards, wait mask, stall, yield, reuse) and the .nv.info attributes naming them.
    Dump {
        cubin: PathBuf,
        /// Only this kernel.
        #[arg(long)]
        kernel: Option<String>,
    },
    /// Parse the cubin and write it back; fails unless the result is the input byte for byte.
    Roundtrip {
        cubin: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
    },
}

pub fn sass(a: SassArgs) -> Result<(), String> {
    match a.command {
        SassCommand::Dump { cubin, kernel } => {
            print!("{}", trident_runtime::sass::dump(&cubin, kernel.as_deref()).map_err(|e| e.text)?);
        }
        SassCommand::Roundtrip { cubin, output } => {
            let n = trident_runtime::sass::roundtrip(&cubin, &output).map_err(|e| e.text)?;
            eprintln!("wrote {} ({n} bytes, identical to {})", output.display(), cubin.display());
        }
    }
    Ok(())
}
