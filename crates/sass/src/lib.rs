//! The schedule prong's toolkit (after CuAsmRL, CGO'25): read a cubin, see its SASS
//! instructions with their control bits, and write it back — the ground a schedule search
//! stands on. This first layer: the ELF container ([`elf`], written back byte for byte),
//! `.nv.info` attributes ([`nvinfo`], the instruction offsets a move must carry along),
//! instructions and their control bits ([`cubin`], [`control`]), and `nvdisasm`'s text of
//! each instruction ([`disasm`]). Dependence analysis, moves and the verifier come next
//! (issue 10); the crate README says where it stands.
//!
//! Depends on no other Trident crate (serde_json reads `nvdisasm -json`); the tools are
//! found by the caller.

pub mod banks;
pub mod control;
pub mod cubin;
pub mod deps;
pub mod disasm;
pub mod elf;
pub mod latency;
pub mod nvinfo;
pub mod operands;
pub mod pipes;
pub mod rewrite;
pub mod verify;

pub use control::Control;
pub use cubin::{Cubin, Instr, Kernel};
pub use elf::{Elf, ElfError};
