//! Widths of vector accesses: how many consecutive elements one instruction may move,
//! given the layout (which registers hold consecutive elements) and, for global memory,
//! what axis analysis proves about the addresses.

use crate::analysis::AxisAnalysis;
use crate::layout::LinearLayout;
use trident_ir::Value;

/// Widest vector (in elements) for accessing `ptr` in layout `l` whose elements are `bytes`
/// wide: consecutive registers along a dim, contiguous and aligned addresses (axis analysis),
/// a mask constant over the vector, at most 16 bytes, aligned in every thread.
pub fn vector_width_of(axis: &AxisAnalysis, ptr: Value, mask: Option<Value>, l: &LinearLayout, bytes: u32) -> usize {
    let Some(info) = axis.get(ptr) else { return 1 };
    let rank = l.rank();
    if rank == 0 || info.contig.len() != rank {
        return 1;
    }
    // The dim the thread's registers run along.
    let Some(d) = (0..rank).find(|&d| l.contig_regs(d) > 1) else { return 1 };
    let mut v = l.contig_regs(d) as u64;
    v = v.min(info.contig[d]).min((info.div[d] / bytes as u64).max(1)).min((16 / bytes) as u64);
    if let Some(m) = mask.and_then(|m| axis.get(m)) {
        if m.constancy.len() == rank {
            v = v.min(m.constancy[d]);
        }
    }
    let mut v = v.max(1) as usize;
    while v > 1 {
        let shift = crate::layout::linear::dim_shifts(&l.shape)[d];
        let low = ((v as u64) - 1) << shift;
        let k = v.trailing_zeros() as usize;
        if l.reg[k..].iter().chain(&l.lane).chain(&l.warp).all(|&b| b & low == 0) {
            break;
        }
        v /= 2;
    }
    v
}

/// The widest run (at most `max`) of consecutive registers along `fast` that every thread
/// holds aligned: no lane, warp or later register basis touches the run's low bits.
pub fn aligned_run(l: &LinearLayout, fast: usize, max: usize) -> usize {
    let mut v = max.max(1);
    let shift = crate::layout::linear::dim_shifts(&l.shape)[fast];
    while v > 1 {
        let low = ((v as u64) - 1) << shift;
        let k = v.trailing_zeros() as usize;
        if k <= l.reg.len() && l.reg[k..].iter().chain(&l.lane).chain(&l.warp).all(|&b| b & low == 0) {
            break;
        }
        v /= 2;
    }
    v
}
