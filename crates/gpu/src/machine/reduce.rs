//! Reductions and scans on a layout: which register, lane or warp bits hold the reduced
//! (or scanned) axis, hence which steps stay in a thread, which are warp shuffles and
//! which go through shared memory, and how much scratch those need.

use crate::layout::linear::dim_shifts;
use crate::layout::LinearLayout;

/// Where the bits of the reduced axis live in a layout.
#[derive(Clone, Debug)]
pub struct AxisBits {
    /// Lane bits whose basis is along the axis.
    pub lanes: Vec<usize>,
    /// Warp bits whose basis is along the axis.
    pub warps: Vec<usize>,
    /// Some basis mixes the axis with other dims (unsupported).
    pub mixed: bool,
}

/// Which lane and warp bits of `l` lie along `axis`.
pub fn axis_bits(l: &LinearLayout, axis: usize) -> AxisBits {
    let m = l.dim_mask(axis);
    let pure = |b: u64| b & m == 0 || b & !m == 0;
    let mixed = !l.reg.iter().chain(&l.lane).chain(&l.warp).all(|&b| pure(b));
    AxisBits {
        lanes: (0..l.lane.len()).filter(|&i| l.lane[i] & m != 0).collect(),
        warps: (0..l.warp.len()).filter(|&i| l.warp[i] & m != 0).collect(),
        mixed,
    }
}

/// Bytes of shared memory a reduction needs (0 when it stays within warps).
pub fn reduce_scratch_bytes(l: &LinearLayout, axis: usize, elem_bytes: &[u32]) -> u32 {
    let b = axis_bits(l, axis);
    if b.warps.is_empty() {
        return 0;
    }
    let k = 1u64 << b.warps.len();
    let r = l.numel() / l.shape[axis] as u64;
    elem_bytes.iter().map(|&e| align8(k * r * e.max(4) as u64) as u32).sum()
}

/// Bytes of shared memory a scan needs (0 when every step is within a warp).
pub fn scan_scratch_bytes(l: &LinearLayout, axis: usize, elem_bytes: &[u32]) -> u32 {
    match scan_levels(l, axis) {
        Ok(levels) if levels.iter().any(|lv| lv.smem) => {
            elem_bytes.iter().map(|&e| align8(l.numel() * e.max(4) as u64) as u32).sum()
        }
        _ => 0,
    }
}

/// `x` rounded up to a multiple of 8 (scratch areas of several operands are 8-aligned).
pub fn align8(x: u64) -> u64 {
    x.div_ceil(8) * 8
}

/// Which index bit of a layout holds one bit of a scanned axis.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Src {
    Reg(usize),
    Lane(usize),
    Warp(usize),
}

/// One step of a scan: the axis bit it combines across.
#[derive(Clone, Debug)]
pub struct Level {
    pub src: Src,
    /// Sources of the lower axis bits.
    pub lower: Vec<Src>,
    /// Needs a shared-memory exchange (a lower bit or this one is a warp bit, or a
    /// register bit sits above a lane bit in a way a shuffle cannot fetch).
    pub smem: bool,
}

/// The steps of a scan along `axis`, lowest axis bit first; an error when some bit of the
/// axis is not held by a single register, lane or warp bit.
pub fn scan_levels(l: &LinearLayout, axis: usize) -> Result<Vec<Level>, String> {
    let shift = dim_shifts(&l.shape)[axis];
    let n = l.shape[axis].trailing_zeros();
    let mut srcs = vec![];
    for k in 0..n {
        let bit = 1u64 << (shift + k);
        let s = if let Some(i) = l.reg.iter().position(|&b| b == bit) {
            Src::Reg(i)
        } else if let Some(i) = l.lane.iter().position(|&b| b == bit) {
            Src::Lane(i)
        } else if let Some(i) = l.warp.iter().position(|&b| b == bit) {
            Src::Warp(i)
        } else {
            return Err(format!("scan axis bit {k} is not held by a single register, lane or warp bit"));
        };
        srcs.push(s);
    }
    Ok((0..srcs.len())
        .map(|k| {
            let lower = srcs[..k].to_vec();
            let any_warp = lower.iter().chain(std::iter::once(&srcs[k])).any(|s| matches!(s, Src::Warp(_)));
            Level { src: srcs[k], lower, smem: any_warp }
        })
        .collect())
}
