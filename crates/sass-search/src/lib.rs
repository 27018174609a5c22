//! # trident-sass-search: schedule search over a cubin (issue 12, first layer)
//!
//! After CuAsmRL (CGO'25): a kernel's schedule is the state, moving one memory instruction
//! one slot up or down is an action (only where the SASS toolkit's dependence mask,
//! `rewrite::legal_range`, allows it) — and so, beyond CuAsmRL, is a control-bit edit (a reuse
//! flag, a stall; [`control`]) — and the reward is the SASS emulator's estimated
//! cycles for a given launch — or, through the [`Reward`] trait, a measured time that the
//! caller brings (the CUDA-event timer of `trident_runtime::sass_search`), whose noise the
//! search estimates and respects ([`reward`]).
//!
//! * [`env`]: [`Env`] — the original cubin and its text, the legal [`Action`]s of a
//!   [`State`], [`Env::apply`] (`rewrite::move_instr` with its repairs, then the verifier:
//!   timing, and a legal reordering of the original), [`Env::evaluate`] (a launch on the
//!   reward, cached by the kernel's instruction words).
//! * [`reward`]: [`Reward`] — the SASS emulator's estimate ([`Emulated`], exact) or a timer's
//!   samples ([`Measurement`]: median and spread); [`Noise`]: the threshold a measured gain
//!   must exceed.
//! * [`control`]: the control-bit edits (a reuse flag set, a stall lowered) and their mask;
//!   [`Family`]: moves, edits or both ([`Env::family`]).
//! * [`check`]: [`Env::check`] — never a wrong kernel: a schedule is kept only when its
//!   written cubin, read back, passes the verifier and gives the original's outputs bit for
//!   bit on fresh random inputs.
//! * [`search`](mod@search): greedy hill climbing, simulated annealing and beam search under a budget
//!   of evaluations or wall time, seeded; each returns the best schedule, its moves and a
//!   learning curve.
//!
//! Depends on trident-sass (cubins, mask, moves, verifier), trident-sass-emu (the reward),
//! trident-emu (kernel arguments) and trident-core; never on the compiler or the runtime:
//! the caller brings the cubin, the launch and the disassembler.

pub mod check;
pub mod control;
pub mod env;
pub mod mask;
pub mod ppo;
pub mod reward;
mod rng;
pub mod search;

pub use control::{Edit, Family};
pub use env::{
    is_memory, nvdisasm, Action, Disassembler, Env, Move, Problem, State, Stats, DEFAULT_FAMILY, MEMORY_OPCODES,
};
pub use mask::Mask;
pub use reward::{Candidate, Emulated, Measurement, Noise, Reward};
pub use search::{search, Algo, Budget, CurvePoint, Options, Outcome, Progress, Remeasured};

/// A search that cannot start or finish: what is wrong, ready for a terminal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchError(pub String);

impl std::fmt::Display for SearchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SearchError {}
