//! A catalog of kernel test cases with f64 references.
//!
//! For every kernel in the repository's `kernels/` directory, [`cases`] lists
//! launches at several sizes (including ragged ones: not multiples of the block,
//! not powers of two), each a [`Case`]: the kernel file and name, every argument
//! as a `NAME=VALUE` string in the syntax of `trident run`, the grid, which
//! arguments are outputs and how to compare them, and a reference function that
//! computes the expected outputs in f64 from the inputs with plain loops.
//!
//! A driver (the demo command, the interpreter's tests, differential tests
//! between backends) does, for each case:
//!
//! ```no_run
//! # fn launch(_: &trident_testkit::Case, _: &[trident_runtime::Arg]) -> Vec<(String, trident_core::HostTensor)> { vec![] }
//! for case in trident_testkit::cases() {
//!     let inputs = case.materialize(0).expect("catalog arguments parse");
//!     let outputs = launch(&case, &inputs); // run it on some backend
//!     match trident_testkit::check(&case, &inputs, &outputs) {
//!         Ok(report) => println!("{}: ok, max rel err {:.1e}", case.name, report.max_rel()),
//!         Err(mismatch) => println!("{mismatch}"),
//!     }
//! }
//! ```
//!
//! Outputs given as `empty` are poisoned (NaN / 0xAB bytes) before the launch, and
//! the references copy an output's initial value wherever the kernel must not
//! write, so stray or missing stores show up as mismatches.
//!
//! The references were checked against Triton's own interpreter with
//! `kernels/check_with_oracle.py` (opt-in; needs `../shared/tools`), which
//! drives the `testkit-oracle` binary of this crate.

#![warn(missing_docs)]

pub mod case;
mod catalog;
pub mod compare;
pub mod philox;
pub mod run;

use trident_core::HostTensor;

pub use case::{Case, Check, Inputs, OutputCheck, RefError, Reference, Tolerance};
pub use compare::{check, check_args, Mismatch, MismatchReason, OutputReport, Report, ValueMismatch};
pub use run::{run_case, CaseRun};

/// Named tensors: what references return and kernel runs produce.
pub type TensorList = Vec<(String, HostTensor)>;

/// Every case of every bundled kernel, in a stable order.
pub fn cases() -> Vec<Case> {
    catalog::all()
}

/// The cases whose name contains `pattern` (e.g. `"softmax/"`, `"f16"`).
pub fn cases_matching(pattern: &str) -> Vec<Case> {
    cases().into_iter().filter(|c| c.name.contains(pattern)).collect()
}
