//! The host side of `trident run`.
//!
//! * [`args`]: the command line — `NAME=VALUE` kernel arguments (files,
//!   generated tensors, scalars), `--grid`, `--save`, the run options — parsed
//!   into [`args::ArgValue`]s with errors that name the argument.
//! * [`npy`]: numpy `.npy` files for every Trident dtype (bf16/fp8 stored as f32).
//! * [`rng`]: the deterministic generator behind `rand` and `randn` tensors.
//! * [`cache`]: the on-disk compile cache (one entry per specialization,
//!   verified on read, LRU-evicted) with an in-process memo.
//! * [`autotune`]: benchmarks `@triton.autotune` configs and remembers the
//!   winner per key on disk.
//!
//! * [`launch`]: one launch API across backends: bind arguments, choose the
//!   config, compile through the cache, run.
//! * [`compile`]: one specialization through the compile cache (keys, entries, decoding).
//! * [`tuning`]: `@triton.autotune` in the launch path (pinning, timers, input protection).
//! * [`session`]: what launches share: the cache, loaded kernels, autotuners.
//! * [`grid_expr`]: grids computed from arguments and constexprs (`cdiv(M, BLOCK_M)`).
//! * [`gpu`]: running PTX on the emulator and on CUDA.

#![warn(missing_docs)]

pub mod args;
pub mod autotune;
pub mod cache;
pub mod compile;
pub mod gpu;
pub mod grid_expr;
pub mod launch;
pub mod npy;
pub mod rng;
pub mod session;
pub mod tuning;

pub use args::{Arg, ArgError, ArgSpec, ArgValue, Backend, Grid, RunCommand, SaveSpec, TensorKind, ValueSpec};
