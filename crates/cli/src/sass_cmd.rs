//! `trident sass`: cubins as the schedule prong sees them; the work is
//! `trident_runtime::sass`'s.
//!
//! ```text
//! trident sass dump kernel.cubin [--kernel K] [--deps]  # offset, control bits, instruction, attributes
//! trident sass roundtrip kernel.cubin -o out.cubin          # parse and write back, byte for byte
//! trident sass verify new.cubin [--against old.cubin]       # timing rules; a legal reordering of old
//! trident sass move k.cubin --kernel K --index I --by -2 -o out.cubin
//! trident sass shuffle k.cubin --moves 50 --seed 7 -o out.cubin  # random legal moves, verified
//! trident sass search k.py::K ARGS... --grid G --algo anneal --budget 2m -o best.cubin  # sass_search_cmd.rs
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
        /// Also list, per instruction, the earlier instructions of its block it depends on.
        #[arg(long)]
        deps: bool,
    },
    /// Check the timing rules (stalls cover fixed latencies, scoreboards are waited for
    /// before a result is read or a register still being read is overwritten); with
    /// --against, also that each kernel is a legal reordering of the original's.
    Verify {
        cubin: PathBuf,
        #[arg(long)]
        against: Option<PathBuf>,
    },
    /// Move one instruction inside its block, repair control bits and offsets, verify, write.
    Move {
        cubin: PathBuf,
        #[arg(long)]
        kernel: String,
        /// The instruction's index (its offset / 16).
        #[arg(long)]
        index: usize,
        /// Positions to move: negative is earlier.
        #[arg(long, allow_negative_numbers = true)]
        by: isize,
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Parse the cubin and write it back; fails unless the result is the input byte for byte.
    Roundtrip {
        cubin: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Make random legal moves (repaired, then verified against the input) and write the
    /// result: the schedule prong's GPU check runs kernels shuffled this way.
    Shuffle {
        cubin: PathBuf,
        #[arg(long, default_value_t = 50)]
        moves: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Search a kernel's schedule (moves of its memory instructions) for fewer estimated
    /// cycles on the SASS emulator, or for less measured time on a CUDA device
    /// (--backend cuda); every kept schedule is verified and checked for equal outputs on
    /// fresh random inputs on the SASS emulator (and, with --backend cuda, on the GPU).
    ///
    /// trident sass search FILE.py::KERNEL ARGS... --grid G [--backend sass-emu|cuda] [--target sm_80|sm_90a]
    ///     [--algo greedy|greedy-first|anneal|beam[:W]|ppo] [--budget 60s|2m|N] [--seed S]
    ///     [--repeats N] [-o OUT.cubin] [--moves OUT.json] [--curve OUT.csv] [--plot OUT.png]
    ///     [--plot-size WxH]
    ///
    /// ARGS, --grid, --num-warps and --num-stages are `trident run`'s (rand/randn inputs use
    /// seed 0: --seed is the search's).
    /// --budget: wall time (90s, 2m) or a number of scored schedules; default 60s, greedy,
    /// sm_80 (with --backend cuda: device 0's target).
    /// --backend cuda: each candidate timed with CUDA events, 256 MiB overwritten before each
    /// launch (L2 flushed), the median of --repeats launches (default 30) after 5 warm-up; a
    /// gain counts only beyond the noise measured on the original (five measurements) and
    /// after a second measurement next to the best.
    /// --plot: the learning curve as a PNG (--plot-size, default 800x480).
    Search {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        words: Vec<String>,
    },
}

pub fn sass(a: SassArgs) -> Result<(), String> {
    match a.command {
        SassCommand::Dump { cubin, kernel, deps } => {
            print!("{}", trident_runtime::sass::dump(&cubin, kernel.as_deref(), deps).map_err(|e| e.text)?);
        }
        SassCommand::Verify { cubin, against } => {
            println!("{}", trident_runtime::sass::verify(&cubin, against.as_deref()).map_err(|e| e.text)?);
        }
        SassCommand::Shuffle { cubin, moves, seed, output } => {
            let bytes = std::fs::read(&cubin).map_err(|e| format!("error: cannot read {}: {e}", cubin.display()))?;
            let s = trident_runtime::sass::shuffle(&bytes, seed, moves).map_err(|e| e.text)?;
            std::fs::write(&output, &s.bytes).map_err(|e| format!("error: cannot write {}: {e}", output.display()))?;
            println!(
                "{} legal moves ({} refused); wrote {}, verified against {}",
                s.moves,
                s.refused,
                output.display(),
                cubin.display()
            );
        }
        SassCommand::Move { cubin, kernel, index, by, output } => {
            print!("{}", trident_runtime::sass::move_instr(&cubin, &kernel, index, by, &output).map_err(|e| e.text)?);
        }
        SassCommand::Search { words } => crate::sass_search_cmd::search(&words)?,
        SassCommand::Roundtrip { cubin, output } => {
            let n = trident_runtime::sass::roundtrip(&cubin, &output).map_err(|e| e.text)?;
            eprintln!("wrote {} ({n} bytes, identical to {})", output.display(), cubin.display());
        }
    }
    Ok(())
}
