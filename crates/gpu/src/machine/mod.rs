//! Facts about the machine and about layouts on it: pure functions that the passes use to
//! decide (layouts, pipelining, shared-memory planning) and PTX emission uses to follow
//! those decisions. Nothing here edits IR or writes PTX.
//!
//! * [`arch`]: the architectures ([`Target`]) and what each has (shared memory, wgmma).
//! * [`regs`]: register classes; element sizes in registers, memory and scratch.
//! * [`mma`]: `mma.sync` instruction kinds per operand types; the shared-memory tile
//!   `ldmatrix` (and wgmma) reads an mma operand from.
//! * [`wgmma`]: which dot operands warpgroup MMA reads straight from shared memory.
//! * [`vector`]: widths of vector accesses (global memory, shared tiles).
//! * [`reduce`]: where a reduced or scanned axis lives (registers, lanes, warps) and the
//!   scratch a reduction or scan needs.
//! * [`scratch`]: the shared memory each op needs (scratch while it runs, buffers).
//! * [`probe`]: profiling probes' groups, leaders and shared-memory rings.
//! * [`tma`]: the shared-memory layouts a tensor-memory-accelerator copy writes.
//!
//! Dependencies: `machine` uses `layout` and `analysis` only; `passes` and `ptx` use
//! `machine`, never each other (`tests/module_rules.rs` checks it).

pub mod arch;
pub mod mma;
pub mod probe;
pub mod reduce;
pub mod regs;
pub mod scratch;
pub mod tma;
pub mod vector;
pub mod wgmma;

pub use arch::Target;
