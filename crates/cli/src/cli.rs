//! Argument definitions and dispatch to subcommands.
//!
//! `run` and `bench` hand their words to the runtime's one parser of those command lines
//! (`trident_runtime::args::command`: its option table also writes their `--help`);
//! clap only splits off the subcommand. The other subcommands' options are clap's.

use crate::{bench_cmd, cache_cmd, compile_cmd, demo_cmd, layout_cmd, profile_cmd, run_cmd, sass_cmd};
use clap::{Parser, Subcommand};
use trident_runtime::args::{flags_help, LineKind};

#[derive(Parser, Debug)]
#[command(name = "trident", version, about = "Trident: a Triton-dialect GPU kernel compiler in Rust")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

fn run_help() -> String {
    format!(
        "Options of a kernel run:\n{}\nOptions of a PTX run: --grid (numbers only), --backend (auto, emu, cuda or sass-emu), --seed, --save I=PATH.npy (I: a parameter index), and\n{}",
        flags_help(&[LineKind::Kernel], &[]),
        flags_help(&[LineKind::Ptx], &[LineKind::Kernel])
    )
}

fn bench_help() -> String {
    format!(
        "Options, besides those of a kernel run (see `trident run --help`):\n{}",
        flags_help(&[LineKind::Bench], &[])
    )
}

fn profile_help() -> String {
    format!(
        "Options, besides those of a kernel run (see `trident run --help`; --backend is emu, sass-emu or cuda, auto picks the GPU when there is one, else the emulator):\n{}",
        flags_help(&[LineKind::Profile], &[])
    )
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Compile a kernel and print an IR stage.
    ///
    /// trident compile FILE.py::KERNEL [--const N=V]... [--emit ttir] [NAME=VALUE|NAME=TYPE]...
    ///
    /// Runtime parameters may be described by a value (as for `run`: `x=randn:f16:64`, `n=1000`)
    /// or by a type (`x=*f16` for a pointer to f16, `n=i32`, `eps=f32`, `d=desc[64x64]:*f16` for
    /// a host tensor descriptor); a type compiles the unspecialized version.
    Compile(compile_cmd::CompileArgs),
    /// Run a kernel.
    ///
    /// trident run FILE.py::KERNEL --grid X[,Y[,Z]]|EXPR [--backend auto|interp|emu|cuda|sass-emu] [--num-warps N]
    ///     [--num-stages N] [--seed N] [--save NAME=PATH.npy]... [--debug] [--print-ir-after-all] NAME=VALUE...
    ///
    /// trident run FILE.ptx[::ENTRY] --grid X[,Y[,Z]] --block T[,TY[,TZ]] [--shared BYTES]
    ///     [--backend auto|emu|cuda|sass-emu] [--seed N] [--save I=PATH.npy]... VALUE...
    /// trident run FILE.cubin[::KERNEL] (as a PTX run; on the SASS emulator)
    ///
    /// VALUE: @PATH.npy[:DTYPE] | zeros|ones|empty|rand|randn:DTYPE:SHAPE | 42 | 0.5 | True | None | f16 (a dtype) | 'text' (a string constexpr)
    ///     | desc[BLOCK[,nan]]:TENSOR (a host tensor descriptor over a file or generated tensor, e.g. desc[64x64]:randn:f16:256x128).
    /// `--backend auto` runs on the GPU when a CUDA driver and device are found, else on the interpreter.
    /// EXPR: a grid computed at launch from scalar arguments and constexprs, e.g.
    /// 'cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)' for an autotuned kernel (the config picks the blocks).
    /// PTX VALUEs are positional, one per .entry parameter (a tensor is a pointer, 0 a null pointer);
    /// a cubin's too (its parameters have sizes only: 8 bytes a tensor or a 64-bit number, 4 bytes a 32-bit one).
    #[command(after_help = run_help())]
    Run(run_cmd::RunArgs),
    /// Compile the bundled kernels, run each on the best backend found, check it, print a table.
    Demo(demo_cmd::DemoArgs),
    /// Time a kernel: same arguments as `run`, plus --warmup/--reps, --flops/--bytes expressions and --flush-l2.
    #[command(after_help = bench_help())]
    Bench(bench_cmd::BenchArgs),
    /// Profile regions inside a kernel (KPerfIR / Proton style): same arguments as `run`.
    ///
    /// trident profile FILE.py::KERNEL --grid ... NAME=VALUE... [--backend emu|sass-emu|cuda]
    ///     [--regions scopes,kernel,loops,dots,loads] [--granularity warp|warpgroup|cta]
    ///     [--buffer-records N] [--trace OUT.json] [--csv OUT.csv] [--save NAME=PATH.npy]
    ///
    /// Records read the clock into a ring per group in shared memory, flushed to a buffer
    /// at kernel exit; the host replays them (cancelling the probes' measured cost) and
    /// prints a table per region. Outputs are those of an unprofiled run.
    #[command(after_help = profile_help())]
    Profile(profile_cmd::ProfileArgs),
    /// Draw a GPU-IR layout: which thread/register (or shared offset) holds each element.
    Layout(layout_cmd::LayoutArgs),
    /// Inspect or empty the compile cache (`TRIDENT_CACHE_DIR`, default ~/.cache/trident): list, clear, stats.
    Cache(cache_cmd::CacheArgs),
    /// Cubins as the schedule prong sees them: dump (instructions with decoded control bits), roundtrip.
    Sass(sass_cmd::SassArgs),
}

pub fn dispatch(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Compile(a) => compile_cmd::compile(a),
        Command::Run(a) => run_cmd::run(a),
        Command::Demo(a) => demo_cmd::demo(a),
        Command::Bench(a) => bench_cmd::bench(a),
        Command::Profile(a) => profile_cmd::profile(a),
        Command::Layout(a) => layout_cmd::layout(a),
        Command::Cache(a) => cache_cmd::cache(a),
        Command::Sass(a) => sass_cmd::sass(a),
    }
}
