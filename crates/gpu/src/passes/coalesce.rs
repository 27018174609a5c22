//! Blocked layouts for memory accesses: coalesced and vectorised.
//!
//! A warp's lanes take consecutive vectors along the most contiguous dim (as axis
//! analysis proves it), each lane moving `vec` elements: as many as contiguity,
//! alignment, mask constancy and the 128-bit access limit allow, but no more than
//! leaves every thread some work. Remaining lanes and then warps go to the next dims.

use crate::analysis::AxisInfo;
use trident_ir::Layout;

fn pow2_floor(x: u64) -> u32 {
    if x == 0 {
        1
    } else {
        (1u64 << (63 - x.leading_zeros())).min(1 << 30) as u32
    }
}

/// A blocked layout on `shape` with `vec` elements per thread along `order[0]`, threads
/// and then warps filling dims in `order`; leftovers replicate along the last dim of `order`.
pub fn blocked_layout(shape: &[u32], vec: u32, order: &[u32], num_warps: u32) -> Layout {
    let rank = shape.len();
    let mut spt = vec![1u32; rank];
    let mut tpw = vec![1u32; rank];
    let mut wpc = vec![1u32; rank];
    if rank == 0 {
        return Layout::Blocked {
            size_per_thread: Default::default(),
            threads_per_warp: Default::default(),
            warps_per_cta: Default::default(),
            order: Default::default(),
        };
    }
    let fast = order[0] as usize;
    spt[fast] = vec.min(shape[fast]).max(1);
    let mut threads = 32u32;
    for &d in order {
        let d = d as usize;
        let room = (shape[d] / (spt[d] * tpw[d])).max(1);
        let t = threads.min(room);
        tpw[d] *= t;
        threads /= t;
    }
    // Lanes left over (tensor smaller than a warp) replicate along the slowest dim.
    let slow = order[rank - 1] as usize;
    tpw[slow] *= threads;
    let mut warps = num_warps;
    for &d in order {
        let d = d as usize;
        let room = (shape[d] / (spt[d] * tpw[d] * wpc[d])).max(1);
        let w = warps.min(room);
        wpc[d] *= w;
        warps /= w;
    }
    wpc[slow] *= warps;
    Layout::Blocked {
        size_per_thread: spt.into_iter().collect(),
        threads_per_warp: tpw.into_iter().collect(),
        warps_per_cta: wpc.into_iter().collect(),
        order: order.iter().copied().collect(),
    }
}

/// The default layout of a tensor nothing constrains: row-major, one element per thread.
pub fn default_blocked(shape: &[u32], num_warps: u32) -> Layout {
    let order: Vec<u32> = (0..shape.len() as u32).rev().collect();
    blocked_layout(shape, 1, &order, num_warps)
}

/// The coalesced layout for accessing a tensor of `shape` through pointers described by
/// `ptr` (and a mask described by `mask`), elements of `elem_bytes` bytes.
pub fn coalesced_layout(
    shape: &[u32],
    ptr: &AxisInfo,
    mask: Option<&AxisInfo>,
    elem_bytes: u32,
    num_warps: u32,
) -> Layout {
    let rank = shape.len();
    if rank == 0 {
        return default_blocked(shape, num_warps);
    }
    // Most contiguous dim first; ties keep the row-major preference (last dim first).
    let mut order: Vec<u32> = (0..rank as u32).rev().collect();
    order.sort_by_key(|&d| std::cmp::Reverse(ptr.contig.get(d as usize).copied().unwrap_or(1)));
    let fast = order[0] as usize;
    let contig = ptr.contig.get(fast).copied().unwrap_or(1);
    let align = (ptr.div.get(fast).copied().unwrap_or(1) / elem_bytes as u64).max(1);
    let mut vec = contig.min(align).min((16 / elem_bytes.max(1)) as u64);
    if let Some(m) = mask {
        vec = vec.min(m.constancy.get(fast).copied().unwrap_or(1));
    }
    // Leave every thread at least one element before widening vectors.
    let numel: u64 = shape.iter().map(|&d| d as u64).product();
    let threads = (32 * num_warps) as u64;
    vec = vec.min((numel / threads).max(1));
    blocked_layout(shape, pow2_floor(vec.max(1)), &order, num_warps)
}

/// Warps of an mma accumulator tile: double the dim with more instruction tiles left
/// per warp (M first on ties) until all warps are placed.
pub fn mma_warps(m: u32, n: u32, num_warps: u32) -> [u32; 2] {
    let (mut wm, mut wn) = (1u32, 1u32);
    while wm * wn < num_warps {
        let tiles_m = (m / 16 / wm).max(1);
        let tiles_n = (n / 8 / wn).max(1);
        if tiles_m >= tiles_n && tiles_m > 1 {
            wm *= 2;
        } else if tiles_n > 1 {
            wn *= 2;
        } else {
            wm *= 2;
        }
    }
    [wm, wn]
}

/// Warps of a batched (rank-3) mma accumulator `[b, m, n]`: the batch first, up to `b`
/// warps (a warp per batch index shares no operand with another, so no operand is
/// replicated across warps), the rest split between M and N as for a matrix
/// ([`mma_warps`]), or all along M for chained dots (the accumulator of one is then the
/// A operand of the next without moving data). Triton puts every warp on the batch,
/// leaving warps idle (holding copies) when `b < num_warps`.
pub fn batched_mma_warps(b: u32, m: u32, n: u32, num_warps: u32, chained: bool) -> [u32; 3] {
    let wb = b.min(num_warps).max(1);
    let rest = num_warps / wb;
    let [wm, wn] = if chained && m / 16 >= rest { [rest, 1] } else { mma_warps(m, n, rest) };
    [wb, wm, wn]
}

#[cfg(test)]
mod tests {
    use super::*;
    use smallvec::smallvec;

    fn dims(l: &Layout) -> (Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>) {
        match l {
            Layout::Blocked { size_per_thread, threads_per_warp, warps_per_cta, order } => {
                (size_per_thread.to_vec(), threads_per_warp.to_vec(), warps_per_cta.to_vec(), order.to_vec())
            }
            _ => panic!("not blocked"),
        }
    }

    #[test]
    fn batched_mma_warps_take_the_batch_first() {
        assert_eq!(batched_mma_warps(8, 64, 64, 4, false), [4, 1, 1]);
        assert_eq!(batched_mma_warps(4, 64, 64, 4, false), [4, 1, 1]);
        assert_eq!(batched_mma_warps(2, 64, 32, 8, false), [2, 2, 2]);
        assert_eq!(batched_mma_warps(1, 64, 64, 4, false), [1, 2, 2]);
        assert_eq!(batched_mma_warps(2, 64, 64, 8, true), [2, 4, 1]);
        // Chained, but too few rows for every warp along M: as unchained.
        assert_eq!(batched_mma_warps(1, 16, 64, 4, true), [1, 1, 4]);
    }

    #[test]
    fn vector_add_gets_128_bit_accesses() {
        let info = AxisInfo { contig: smallvec![1024], div: smallvec![16], constancy: smallvec![1], constant: None };
        let l = coalesced_layout(&[1024], &info, None, 4, 4);
        assert_eq!(dims(&l), (vec![4], vec![32], vec![4], vec![0]));
        // A mask with runs of 16 keeps the vector; one of 1 forbids it.
        let m = AxisInfo { constancy: smallvec![1], ..info.clone() };
        assert_eq!(dims(&coalesced_layout(&[1024], &info, Some(&m), 4, 4)).0, vec![1]);
    }

    #[test]
    fn row_tiles_put_lanes_along_rows_and_warps_down_columns() {
        let info =
            AxisInfo { contig: smallvec![1, 32], div: smallvec![16, 16], constancy: smallvec![1, 1], constant: None };
        let l = coalesced_layout(&[64, 32], &info, None, 2, 4);
        assert_eq!(dims(&l), (vec![1, 8], vec![8, 4], vec![4, 1], vec![1, 0]));
        // Column-contiguous (transposed) accesses order dim 0 first.
        let t = AxisInfo { contig: smallvec![64, 1], ..info };
        assert_eq!(dims(&coalesced_layout(&[64, 32], &t, None, 2, 4)).3, vec![0, 1]);
    }

    #[test]
    fn small_tensors_replicate() {
        let l = default_blocked(&[16], 4);
        assert_eq!(dims(&l), (vec![1], vec![32], vec![4], vec![0]));
        assert_eq!(mma_warps(128, 128, 4), [2, 2]);
        assert_eq!(mma_warps(64, 64, 4), [2, 2]);
        assert_eq!(mma_warps(16, 64, 4), [1, 4]);
    }
}
