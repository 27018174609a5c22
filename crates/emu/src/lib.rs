//! # trident-emu: a PTX emulator
//!
//! Runs PTX kernels (as emitted by Triton/LLVM NVPTX for sm_80/sm_90, or by
//! Trident's own code generator) on the CPU with the semantics of the PTX ISA, so
//! GPU code generation can be tested without a GPU.
//!
//! * Warps of 32 lanes execute in lockstep with active masks; divergent branches
//!   reconverge at the immediate post-dominator of the branch.
//! * CTAs have shared memory and barriers (`bar.sync`/`barrier.sync`, with thread
//!   counts); a barrier that can never complete is reported as a deadlock.
//! * Global memory is the launch's buffers, each bounds-checked at its own fake
//!   device address; out-of-bounds or misaligned accesses stop the launch with the
//!   PTX line, CTA and thread, and leave the caller's buffers untouched.
//! * Shared-memory data races between barriers are reported (optional).
//! * Tensor-core instructions (`ldmatrix`, `stmatrix`, `mma.sync`) follow the
//!   fragment layouts documented in the PTX ISA.
//! * `%clock`/`%clock64` read a modelled, deterministic per-warp clock, and every
//!   launch reports a modelled duration in cycles on a [`MachineModel`] ([`timing`]);
//!   `//@trident.mark N` comments record the clock at zero cost ([`Marker`]).
//! * Hopper tensor-map (TMA) copies run on the emulator's own, documented tensor-map
//!   encoding: the host builds maps with [`TensorMap`] (module [`tensormap`]) and passes them
//!   as [`KernelArg::Bytes`]; kernels build them with `tensormap.replace`.
//!
//! ```no_run
//! use trident_emu::{launch, KernelArg, LaunchConfig, Module};
//! use trident_core::{DType, HostTensor};
//! # fn main() -> Result<(), trident_emu::EmuError> {
//! let module = Module::parse(&std::fs::read_to_string("vadd.ptx").unwrap())?;
//! let x = HostTensor::from_f64(DType::F32, &[4], &[1.0, 2.0, 3.0, 4.0]);
//! let mut args = vec![KernelArg::Buffer(x.clone()), KernelArg::Buffer(x), KernelArg::Scalar(4)];
//! let cfg = LaunchConfig { grid: [1, 1, 1], block: [128, 1, 1], ..LaunchConfig::default() };
//! let report = launch(&module, "vadd", &cfg, &mut args)?;
//! println!("{} modelled cycles", report.cycles);
//! # Ok(()) }
//! ```

// Lane loops index several per-lane arrays at once; indices read better than zips there.
#![allow(clippy::needless_range_loop)]

mod cfg;
mod error;
mod exec;
/// Rounding helpers the SASS emulator shares (the same rounding, bit for bit).
pub mod fp;
mod ir;
mod machine;
/// The mbarrier object's state machine, shared with the SASS emulator.
pub mod mbarrier;
pub mod memory;
mod parse;
pub mod tensormap;
pub mod timing;

pub use error::{Access, EmuError, ErrorKind};
/// Where element (mn, k) of a warpgroup-MMA operand lives in shared memory, from its matrix
/// descriptor (PTX ISA "Matrix Descriptor Format"): shared with the SASS emulator's `HGMMA`.
pub use exec::wgmma::operand_address as wgmma_operand_address;
pub use exec::{launch, launch_on, KernelArg, LaunchConfig, LaunchReport, Marker};
pub use ir::{Rnd, Ty};
pub use machine::MachineModel;
pub use memory::buffer_base;
pub use parse::{Module, ParamType};
pub use tensormap::TensorMap;
