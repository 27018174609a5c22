//! Autotuning: the autotuner ([`Autotuner`], in `tuner.rs`), which picks the fastest
//! of a kernel's `@triton.autotune` configs for each value of its tuning key and
//! remembers the choice, and its use in the launch path (`select.rs`: which config
//! a launch compiles with; `launch_bench.rs`: measuring a config by launching it).
//!
//! Files: `tuner.rs` (the [`Autotuner`] and its results), `bench.rs` (the [`Bench`]
//! a caller implements, [`BenchPolicy`], [`Timing`]), `config.rs` ([`TuneConfig`]),
//! `prune.rs` (`prune_configs_by` hooks), `store.rs` (choices on disk),
//! `select.rs` (the launch's config: pinned, first, or tuned; [`TuningReport`]),
//! `launch_bench.rs` (the launch path's [`Bench`]).
//!
//! [`Autotuner::tune`] takes the key's values and a [`Bench`] (the caller's
//! compile-run-time of one config, plus the `reset_to_zero`/`restore_value`
//! input protection) and:
//!
//! 1. returns the choice made earlier in this process for the same key, or
//!    the one on disk ([`TuneStore`], in the compile cache's `autotune/`
//!    directory unless `TRIDENT_AUTOTUNE_CACHE=0`), without benchmarking;
//! 2. otherwise applies the [`Prune`] hooks and the heuristics hook; a single
//!    candidate left is chosen as is;
//! 3. otherwise measures each candidate under the [`BenchPolicy`] (warm-up,
//!    repetitions, median), skipping — and recording why — those that fail
//!    to compile, exceed resources or fail to run, and keeps the fastest
//!    median (the first written wins ties);
//! 4. saves the choice, shows progress on stderr (an `indicatif` bar, hidden
//!    when stderr is not a terminal or the tuner is quiet) and, when
//!    `TRIDENT_PRINT_AUTOTUNING=1`, prints
//!    `Triton autotuning for function K finished after 1.23s; best config selected: BLOCK: 64, num_warps: 4, num_stages: 3`.
//!
//! The key's values are text, given by the caller as `(name, value)` pairs in
//! the key's order. As in Triton, callers should add the dtypes of all tensor
//! arguments to the key (a config tuned for f16 says little about f32).

pub mod bench;
pub mod config;
pub(crate) mod launch_bench;
pub mod prune;
pub(crate) mod select;
pub mod store;
pub mod tuner;

pub use bench::{Bench, BenchPolicy, Timing, TrialError};
pub use config::{TuneConfig, TuneValue};
pub use prune::{EarlyPrune, PerfModel, Prune, TopK};
pub use select::{Decision, TuningReport};
pub use store::{persistence_enabled, TuneStore};
pub use tuner::{Autotuner, Choice, ChoiceSource, Heuristics, TrialOutcome, TrialResult, TuneError, TuneSpec};
