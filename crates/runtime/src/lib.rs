//! The host side of Trident: everything between a command line (or a library call) and a
//! kernel launch, across the interpreter, the PTX emulator and CUDA.
//!
//! From the bottom up:
//!
//! * [`error`]: [`RunError`], the error every operation returns (imports nothing above it).
//! * [`program`]: [`KernelProgram`], a loaded kernel file.
//! * [`env`](mod@env): every environment variable the runtime reads, documented and read in one place.
//! * [`args`]: `NAME=VALUE` kernel arguments; [`args::command`]: the `trident run`/`bench`
//!   command lines (one table of options, one parser).
//! * [`npy`], [`rng`], [`grid_expr`], [`scalar`]: `.npy` files, the `rand`/`randn`
//!   streams, grids computed from arguments, scalars as parameter bits.
//! * [`cache`]: the on-disk compile cache (one entry per specialization, verified on
//!   read, LRU-evicted) with an in-process memo; [`cache::key`] says what goes into a key.
//! * [`compiled`]: what a compilation produces ([`compiled::CompiledKernel`], GPU code).
//! * [`compile`]: one specialization through the compile cache: the one compile function.
//! * [`autotune`]: the autotuner, and `@triton.autotune` in the launch path.
//! * [`session`]: what launches share: the cache, loaded kernels, autotuners.
//! * `run` (crate-internal), [`gpu`]: running a compiled kernel on a backend (the GPU backends in [`gpu`]).
//! * [`launch`]: the launch flow — bind, choose the config, compile (once), run.
//! * [`stages`]: `trident compile` — a kernel compiled down to tile IR, GPU IR, PTX, cubin or SASS.
//! * [`ptx_run`]: `trident run FILE.ptx` — PTX given by the user, run on the emulator or CUDA.
//! * [`profile`]: in-kernel profiling — the profile buffer, the measured probe cost
//!   ([`profile::calibrate`]), decoding a launch's buffer (`trident profile`).
//! * [`layout`]: `trident layout` — drawings of GPU-IR layouts.
//! * [`sass`]: `trident sass` — cubins as the schedule prong sees them (trident-sass).

#![warn(missing_docs)]

pub mod args;
pub mod autotune;
pub mod cache;
pub mod compile;
pub mod compiled;
pub mod env;
pub mod error;
pub mod gpu;
pub mod grid_expr;
pub mod launch;
pub mod layout;
pub mod npy;
pub mod plot;
pub mod profile;
pub mod program;
pub mod ptx_run;
pub mod rng;
pub(crate) mod run;
pub mod sanitize;
pub mod sass;
pub mod sass_run;
pub mod sass_search;
pub mod scalar;
mod schedule;
pub mod session;
pub mod stages;
mod tma;

pub use args::{Arg, ArgError, ArgSpec, ArgValue, Backend, Grid, RunCommand, SaveSpec, TensorKind, ValueSpec};
pub use error::{ErrorKind, RunError};
pub use program::KernelProgram;
/// Vocabulary shared with the crates below, re-exported so that users of the runtime
/// (the CLI, the testkit) name host tensors and dtypes without depending on trident-core.
pub use trident_core::{DType, HostTensor};
