//! Tensor-core instruction shapes: the `mma.sync` kind for a pair of operand types, and
//! how an mma operand tile sits in shared memory for `ldmatrix` (and wgmma descriptors).

use crate::layout::LinearLayout;
use trident_ir::{DType, InputPrecision, Layout};

/// The tensor-core instruction for a pair of operand types.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MmaKind {
    /// K of one instruction.
    pub k: u32,
    /// Elements per 32-bit operand register.
    pub k_width: u32,
    /// `.atype.btype` of the instruction.
    pub ab: &'static str,
    /// Accumulator type (`f32` or `s32`).
    pub acc: &'static str,
    /// Operands are f32 rounded to tf32.
    pub tf32: bool,
}

/// How an mma operand tile sits in shared memory for `ldmatrix`: which dim is stored
/// contiguously, whether `ldmatrix.trans` is needed, and the XOR swizzle.
///
/// Dims are counted within the matrix, the operand's last two dims (0: rows of the
/// stored matrix's first dim, 1: the last dim): a batched (rank-3) operand is one such
/// swizzled matrix per batch index, stacked (see [`MmaTile::order`]), and `ldmatrix`
/// reads each 8x8 matrix from one batch index, so the same parameters serve every rank.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MmaTile {
    /// The dim stored contiguously, within the last two.
    pub fast: usize,
    pub trans: bool,
    pub k_width: u32,
    pub vec: u32,
    pub per_phase: u32,
    pub max_phase: u32,
}

impl MmaTile {
    /// The tile for converting from `src` (the layout the data arrives in, which decides
    /// the contiguous dim) to operand layout `dst`; `None` when `ldmatrix` cannot read it.
    pub fn choose(src: &LinearLayout, dst: &LinearLayout, op_idx: u8, k_width: u32, bytes: u32) -> Option<MmaTile> {
        let rank = dst.rank();
        if !(2..=3).contains(&rank) || src.rank() != rank {
            return None;
        }
        let kdim = if op_idx == 0 { 1 } else { 0 };
        let other = 1 - kdim;
        let base = rank - 2;
        let fast = if src.contig_regs(base + other) > src.contig_regs(base + kdim) { other } else { kdim };
        MmaTile::with_fast(dst, op_idx, k_width, bytes, fast)
    }

    /// The tile whose rows run along dimension `fast` of the matrix (0 or 1, within the
    /// operand's last two dims; what a copy that writes memory order, like TMA's, needs:
    /// the contiguous dimension), if `ldmatrix` can read the operand layout `dst` from it.
    pub fn with_fast(dst: &LinearLayout, op_idx: u8, k_width: u32, bytes: u32, fast: usize) -> Option<MmaTile> {
        let rank = dst.rank();
        if !(2..=3).contains(&rank) || fast > 1 || !matches!(bytes, 1 | 2 | 4) || bytes * k_width != 4 {
            return None;
        }
        let kdim = if op_idx == 0 { 1 } else { 0 };
        let slow = 1 - fast;
        let base = rank - 2;
        let unit = 1u64 << crate::layout::linear::dim_shifts(&dst.shape)[base + fast];
        let kw = k_width as usize;
        let trans = fast != kdim;
        let ok = if trans {
            bytes == 2
                && dst.lane.len() == 5
                && dst.lane[2] == unit
                && dst.lane[3] == 2 * unit
                && dst.lane[4] == 4 * unit
        } else {
            let lg = kw.trailing_zeros() as usize;
            dst.reg.len() > lg
                && (0..lg).all(|b| dst.reg[b] == unit << b)
                && dst.lane.len() == 5
                && dst.lane[0] == unit * kw as u64
                && dst.lane[1] == unit * 2 * kw as u64
        };
        let row_bytes = dst.shape[base + fast] * bytes;
        if !ok || row_bytes < 16 || dst.shape[base + slow] < 8 {
            return None;
        }
        Some(MmaTile {
            fast,
            trans,
            k_width,
            vec: 16 / bytes,
            per_phase: (128 / row_bytes).max(1),
            max_phase: (row_bytes / 16).clamp(1, 8),
        })
    }

    /// The shared layout's `order` on `rank` dims: the matrix (last two dims), then the
    /// leading dims, innermost first (a batch dim, then a pipeline ring's stage dim).
    pub fn order(&self, rank: usize) -> Vec<u32> {
        let mut o = if self.fast == 1 {
            vec![rank as u32 - 1, rank as u32 - 2]
        } else {
            vec![rank as u32 - 2, rank as u32 - 1]
        };
        o.extend((0..rank as u32 - 2).rev());
        o
    }

    pub fn layout(&self, rank: usize) -> Layout {
        Layout::Shared {
            vec: self.vec,
            per_phase: self.per_phase,
            max_phase: self.max_phase,
            order: self.order(rank).into_iter().collect(),
        }
    }

    pub fn shared(&self, shape: &[u32]) -> Result<crate::layout::SharedLinear, String> {
        crate::layout::build::shared(shape, self.vec, self.per_phase, self.max_phase, &self.order(shape.len()))
    }

    /// Recovers the tile parameters of an operand read from a shared layout.
    pub fn from_shared(l: &Layout, k_width: u32, op_idx: u8) -> Option<MmaTile> {
        let Layout::Shared { vec, per_phase, max_phase, order } = l else { return None };
        // The first dim of `order`, counted within the last two.
        let fast = (*order.first()? as usize + 2).checked_sub(order.len()).filter(|&d| d <= 1)?;
        let kdim = if op_idx == 0 { 1 } else { 0 };
        Some(MmaTile { fast, trans: fast != kdim, k_width, vec: *vec, per_phase: *per_phase, max_phase: *max_phase })
    }
}

/// The `mma.sync` shape for operands `a`, `b` with `precision`, on compute capability `cc`.
pub fn mma_kind(a: DType, b: DType, precision: InputPrecision, cc: u32) -> Option<MmaKind> {
    use DType::*;
    let k = |k, kw, ab, acc, tf32| Some(MmaKind { k, k_width: kw, ab, acc, tf32 });
    match (a, b) {
        (F16, F16) => k(16, 2, "f16.f16", "f32", false),
        (BF16, BF16) => k(16, 2, "bf16.bf16", "f32", false),
        (F32, F32) if precision != InputPrecision::Ieee => k(8, 1, "tf32.tf32", "f32", true),
        (I8, I8) => k(32, 4, "s8.s8", "s32", false),
        (U8, U8) => k(32, 4, "u8.u8", "s32", false),
        (I8, U8) => k(32, 4, "s8.u8", "s32", false),
        (U8, I8) => k(32, 4, "u8.s8", "s32", false),
        (F8E4M3, F8E4M3) if cc >= 89 => k(32, 4, "e4m3.e4m3", "f32", false),
        (F8E5M2, F8E5M2) if cc >= 89 => k(32, 4, "e5m2.e5m2", "f32", false),
        (F8E4M3, F8E5M2) if cc >= 89 => k(32, 4, "e4m3.e5m2", "f32", false),
        (F8E5M2, F8E4M3) if cc >= 89 => k(32, 4, "e5m2.e4m3", "f32", false),
        _ => None,
    }
}
