//! Layouts of the GPU IR: how a tensor's elements are distributed over the
//! registers, lanes and warps of a CTA (or laid out in shared memory).
//!
//! In tile IR every tensor type has `layout: None`. GPU lowering assigns a
//! layout to every tensor value; the layout is part of the type, so passes that
//! compare types (CSE, the verifier) see two layouts of the same values as
//! different values. Layouts are interned per function in
//! [`crate::Function::layouts`] and referred to by [`LayoutId`].

use cranelift_entity::entity_impl;
use smallvec::SmallVec;

/// Index of an interned layout in its function's layout table.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LayoutId(u32);
entity_impl!(LayoutId, "#L");

pub type Dims = SmallVec<[u32; 4]>;

/// A layout's parameters, in Triton's vocabulary. Each distributed layout is a map
/// from (register, lane, warp) to tensor coordinates; the GPU crate derives that map.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Each thread holds `size_per_thread` contiguous elements, threads of a warp and
    /// warps of a CTA tile the tensor; `order` lists dims fastest-varying first.
    Blocked { size_per_thread: Dims, threads_per_warp: Dims, warps_per_cta: Dims, order: Dims },
    /// The layout of `parent` with dimension `dim` removed (results of reductions).
    Slice { dim: u32, parent: LayoutId },
    /// Accumulator layout of tensor-core instructions (`version` 2: `mma.sync`, 3: `wgmma`).
    Mma { version: u8, warps_per_cta: Dims, instr_shape: Dims },
    /// Operand `op_idx` (0 = A, 1 = B) of a `dot` whose result has layout `parent`.
    DotOperand { op_idx: u8, parent: LayoutId, k_width: u32 },
    /// Shared memory, with XOR swizzling of `vec`-element groups (`per_phase` rows share a phase).
    Shared { vec: u32, per_phase: u32, max_phase: u32, order: Dims },
    /// Any distributed layout of a tensor of `shape`, given by its linear map: one element
    /// per bit of the register, lane and warp index, each the row-major flat index of the
    /// element that bit selects (0: a copy); an element's index is the XOR of its bits'. What
    /// a reshape, permute or split of another layout's registers gives without moving data
    /// (an mma accumulator reshaped, for one).
    Linear { shape: Dims, reg: Vec<u64>, lane: Vec<u64>, warp: Vec<u64> },
}
