//! From the IR's layout parameters ([`Layout`], Triton's vocabulary) to linear layouts.
//!
//! Each parameterised layout is turned into bases once, here; everything else
//! (codegen, conversions, drawing, tests) works on the [`LinearLayout`] only.

use super::linear::{dim_shifts, LinearLayout, SharedLinear};
use cranelift_entity::PrimaryMap;
use trident_ir::{Layout, LayoutId};

/// A function's layout table.
pub type Table = PrimaryMap<LayoutId, Layout>;

fn log2(x: u32) -> Result<u32, String> {
    if x == 0 || !x.is_power_of_two() {
        Err(format!("layout parameter {x} is not a power of two"))
    } else {
        Ok(x.trailing_zeros())
    }
}

fn check_shape(shape: &[u32]) -> Result<(), String> {
    for &d in shape {
        log2(d).map_err(|_| format!("tensor dimension {d} is not a power of two"))?;
    }
    if shape.iter().map(|&d| d.trailing_zeros()).sum::<u32>() > 40 {
        return Err("tensor too large for a layout".into());
    }
    Ok(())
}

/// Bases builder: one "coverage" counter per dim; a basis beyond the shape wraps to zero (broadcast).
struct Cover<'a> {
    shape: &'a [u32],
    shifts: smallvec::SmallVec<[u32; 4]>,
    cov: Vec<u64>,
}

impl<'a> Cover<'a> {
    fn new(shape: &'a [u32]) -> Cover<'a> {
        Cover { shape, shifts: dim_shifts(shape), cov: vec![1; shape.len()] }
    }

    /// The next basis along `d` (doubling the coverage).
    fn next(&mut self, d: usize) -> u64 {
        let c = self.cov[d];
        self.cov[d] *= 2;
        self.at(d, c)
    }

    /// A basis vector for coordinate `c` along `d` (zero past the shape).
    fn at(&self, d: usize, c: u64) -> u64 {
        if c >= self.shape[d] as u64 {
            0
        } else {
            c << self.shifts[d]
        }
    }

    /// Register bases repeating the covered tile until it spans the shape, dims in `order`.
    fn extend(&mut self, order: &[usize], reg: &mut Vec<u64>) {
        for &d in order {
            while self.cov[d] < self.shape[d] as u64 {
                reg.push(self.next(d));
            }
        }
    }
}

fn finish(shape: &[u32], reg: Vec<u64>, lane: Vec<u64>, warp: Vec<u64>) -> LinearLayout {
    let mut l = LinearLayout { shape: shape.iter().copied().collect(), reg, lane, warp };
    l.drop_duplicate_regs();
    l
}

/// A blocked layout on `shape`.
pub fn blocked(
    shape: &[u32],
    size_per_thread: &[u32],
    threads_per_warp: &[u32],
    warps_per_cta: &[u32],
    order: &[u32],
) -> Result<LinearLayout, String> {
    let rank = shape.len();
    check_shape(shape)?;
    if [size_per_thread.len(), threads_per_warp.len(), warps_per_cta.len(), order.len()].iter().any(|&n| n != rank) {
        return Err(format!("blocked layout parameters must have rank {rank}"));
    }
    let mut sorted: Vec<u32> = order.to_vec();
    sorted.sort_unstable();
    if sorted.iter().enumerate().any(|(i, &d)| d as usize != i) {
        return Err(format!("blocked layout order {order:?} is not a permutation"));
    }
    if threads_per_warp.iter().product::<u32>() != 32 {
        return Err(format!("threads_per_warp {threads_per_warp:?} must multiply to 32"));
    }
    let order: Vec<usize> = order.iter().map(|&d| d as usize).collect();
    let mut c = Cover::new(shape);
    let (mut reg, mut lane, mut warp) = (vec![], vec![], vec![]);
    for (sizes, out) in [(size_per_thread, &mut reg), (threads_per_warp, &mut lane), (warps_per_cta, &mut warp)] {
        for &d in &order {
            for _ in 0..log2(sizes[d])? {
                out.push(c.next(d));
            }
        }
    }
    c.extend(&order, &mut reg);
    Ok(finish(shape, reg, lane, warp))
}

/// The accumulator layout of `mma.sync.m16n8kK` (version 2) on a 2-D or batched 3-D shape.
///
/// Per warp and instruction (PTX ISA, "Matrix Fragments for mma.m16n8k16", C/D):
/// lane = 4*groupID + threadID_in_group holds rows groupID and groupID+8,
/// columns 2*threadID_in_group + {0, 1}; c0,c1 are the upper row, c2,c3 the lower.
/// Warps tile N first, then M, then the batch; repeats are in registers, N first.
pub fn mma_v2(shape: &[u32], warps_per_cta: &[u32]) -> Result<LinearLayout, String> {
    let rank = shape.len();
    check_shape(shape)?;
    if !(2..=3).contains(&rank) || warps_per_cta.len() != rank {
        return Err(format!("mma layout needs a rank-2 or rank-3 shape and warps, got {shape:?} / {warps_per_cta:?}"));
    }
    let (m, n) = (rank - 2, rank - 1);
    let mut c = Cover::new(shape);
    let reg = vec![c.next(n), c.at(m, 8)];
    let lane = vec![c.next(n), c.next(n), c.next(m), c.next(m), c.next(m)];
    c.cov[m] = 16;
    c.cov[n] = 8;
    let mut warp = vec![];
    let mut warp_order = vec![n, m];
    if rank == 3 {
        warp_order.push(0);
    }
    for &d in &warp_order {
        for _ in 0..log2(warps_per_cta[d])? {
            warp.push(c.next(d));
        }
    }
    let mut reg = reg;
    c.extend(&warp_order, &mut reg);
    Ok(finish(shape, reg, lane, warp))
}

/// The accumulator layout of `wgmma.mma_async.m64nNk16` (version 3) on a 2-D shape, all
/// warps along M (`warps_per_cta = [num_warps, 1]`, `num_warps` a multiple of 4).
///
/// Per warpgroup and instruction (PTX ISA, "Matrix Fragments for wgmma.m64nNk16", D):
/// warp w of the warpgroup holds rows 16w..16w+15; within them, each 8-column slice is an
/// `mma.m16n8` accumulator (lane = 4*groupID + threadID_in_group: rows groupID and
/// groupID+8, columns 2*threadID_in_group + {0, 1}), register d[4j + q] for slice j.
/// Warpgroups tile M after their four warps. That is exactly the version-2 layout with
/// the same warps, register order included, so the operands of a version-3 `dot` in
/// registers are version-2 operands, and `mma.sync` remains a valid fallback on them.
pub fn mma_v3(shape: &[u32], warps_per_cta: &[u32]) -> Result<LinearLayout, String> {
    if shape.len() != 2 || warps_per_cta.len() != 2 {
        return Err(format!("wgmma layout needs a rank-2 shape and warps, got {shape:?} / {warps_per_cta:?}"));
    }
    let (wm, wn) = (warps_per_cta[0], warps_per_cta[1]);
    // (Smaller shapes, such as slices of the accumulator, broadcast over the extra warps.)
    if wn != 1 || wm % 4 != 0 {
        return Err(format!("wgmma layout needs warps [4k, 1], got {warps_per_cta:?}"));
    }
    mma_v2(shape, warps_per_cta)
}

/// Operand `op_idx` (0: A = M×K, 1: B = K×N) of an `mma.sync` whose accumulator has
/// `parent_warps`; `k_width` elements are packed per 32-bit register (2 for f16/bf16,
/// 1 for tf32, 4 for int8).
///
/// Per instruction (PTX ISA fragments of m16n8k16 / m16n8k8 / m16n8k32): A rows are
/// groupID (+8), its K columns are `k_width`-element runs at threadID_in_group*k_width
/// (+4*k_width); B columns are groupID and its K rows follow the same runs. Warps along
/// the other operand's dim hold copies. Repeats are in registers, K first.
pub fn mma_v2_operand(shape: &[u32], op_idx: u8, parent_warps: &[u32], k_width: u32) -> Result<LinearLayout, String> {
    let rank = shape.len();
    check_shape(shape)?;
    if !(2..=3).contains(&rank) || parent_warps.len() != rank {
        return Err(format!("dot operand needs a rank-2 or rank-3 shape, got {shape:?}"));
    }
    let kw = log2(k_width)?;
    if kw > 2 {
        return Err(format!("dot operand k_width {k_width} must be 1, 2 or 4"));
    }
    let (k, other) = if op_idx == 0 { (rank - 1, rank - 2) } else { (rank - 2, rank - 1) };
    let mut c = Cover::new(shape);
    let mut reg: Vec<u64> = (0..kw).map(|_| c.next(k)).collect();
    if op_idx == 0 {
        reg.push(c.at(other, 8));
    }
    let lane = vec![c.next(k), c.next(k), c.next(other), c.next(other), c.next(other)];
    reg.push(c.next(k));
    // Parent warp order: N, then M, then batch.
    let (m, n) = (rank - 2, rank - 1);
    c.cov[m] = if op_idx == 0 { 16 } else { c.cov[m] };
    c.cov[n] = if op_idx == 1 { 8 } else { c.cov[n] };
    let mut warp = vec![];
    let mut warp_order = vec![n, m];
    if rank == 3 {
        warp_order.push(0);
    }
    for &d in &warp_order {
        for _ in 0..log2(parent_warps[d])? {
            // Warps spread along the dim this operand does not have hold the same fragment.
            let along_other_operand = (op_idx == 0 && d == n) || (op_idx == 1 && d == m);
            warp.push(if along_other_operand { 0 } else { c.next(d) });
        }
    }
    let mut ext = vec![k, other];
    if rank == 3 {
        ext.push(0);
    }
    c.extend(&ext, &mut reg);
    Ok(finish(shape, reg, lane, warp))
}

/// Operand of an FMA dot whose result has the distributed layout `parent` (M×N):
/// a thread holds, for each of its output rows (A) or columns (B), the whole K extent.
pub fn fma_operand(parent: &LinearLayout, shape: &[u32], op_idx: u8) -> Result<LinearLayout, String> {
    let rank = shape.len();
    check_shape(shape)?;
    let prank = parent.shape.len();
    if prank != rank || rank < 2 {
        return Err("dot operand rank differs from its parent's".into());
    }
    let (k, keep) = if op_idx == 0 { (rank - 1, rank - 2) } else { (rank - 2, rank - 1) };
    let pshifts = dim_shifts(&parent.shape);
    let shifts = dim_shifts(shape);
    // Keep the parent's coordinates along every dim except the one the operand replaces by K.
    let dims: Vec<usize> = (0..rank).filter(|&d| d == keep || d < rank - 2).collect();
    let project = |b: u64| -> u64 {
        let mut out = 0;
        for &d in &dims {
            let c = (b >> pshifts[d]) & (parent.shape[d] as u64 - 1);
            if c < shape[d] as u64 {
                out |= c << shifts[d];
            }
        }
        out
    };
    let mut reg: Vec<u64> = parent.reg.iter().map(|&b| project(b)).collect();
    let mut c = Cover::new(shape);
    while c.cov[k] < shape[k] as u64 {
        reg.push(c.next(k));
    }
    let lane = parent.lane.iter().map(|&b| project(b)).collect();
    let warp = parent.warp.iter().map(|&b| project(b)).collect();
    Ok(finish(shape, reg, lane, warp))
}

/// The distributed layout `id` of `table` on `shape`.
pub fn distributed(table: &Table, id: LayoutId, shape: &[u32]) -> Result<LinearLayout, String> {
    let l = table.get(id).ok_or_else(|| format!("unknown layout {id}"))?;
    match l {
        Layout::Blocked { size_per_thread, threads_per_warp, warps_per_cta, order } => {
            blocked(shape, size_per_thread, threads_per_warp, warps_per_cta, order)
        }
        Layout::Slice { dim, parent } => {
            let dim = *dim as usize;
            if dim > shape.len() {
                return Err(format!("slice dim {dim} out of range for shape {shape:?}"));
            }
            let mut pshape: Vec<u32> = shape.to_vec();
            pshape.insert(dim, 1);
            Ok(distributed(table, *parent, &pshape)?.remove_dim(dim))
        }
        Layout::Mma { version: 2, warps_per_cta, .. } => mma_v2(shape, warps_per_cta),
        Layout::Mma { version: 3, warps_per_cta, .. } => mma_v3(shape, warps_per_cta),
        Layout::Mma { version, .. } => Err(format!("mma layout version {version} is not supported")),
        Layout::DotOperand { op_idx, parent, k_width } => {
            if *op_idx > 1 {
                return Err(format!("dot operand index {op_idx} must be 0 or 1"));
            }
            match table.get(*parent) {
                Some(Layout::Mma { version: 2, warps_per_cta, .. }) => {
                    mma_v2_operand(shape, *op_idx, warps_per_cta, *k_width)
                }
                Some(Layout::Mma { version: 3, warps_per_cta, .. }) => {
                    // In registers, wgmma operands are mma.sync operands (see `mma_v3`).
                    if warps_per_cta.len() != 2 || warps_per_cta[1] != 1 || warps_per_cta[0] % 4 != 0 {
                        return Err(format!("wgmma operand needs warps [4k, 1], got {warps_per_cta:?}"));
                    }
                    mma_v2_operand(shape, *op_idx, warps_per_cta, *k_width)
                }
                Some(Layout::Blocked { .. }) => {
                    // The parent tiles M×N; the operand keeps the parent's M (A) or N (B)
                    // distribution, so take the parent on a shape whose other dim is 1.
                    let rank = shape.len();
                    let k = if *op_idx == 0 { rank - 1 } else { rank - 2 };
                    let mut pshape: Vec<u32> = shape.to_vec();
                    pshape[k] = 1;
                    let parent = distributed(table, *parent, &pshape)?;
                    fma_operand(&parent, shape, *op_idx)
                }
                _ => Err(format!("dot operand parent {parent} must be an mma or blocked layout")),
            }
        }
        Layout::Shared { .. } => Err(format!("layout {id} is a shared-memory layout, not a distributed one")),
        Layout::Linear { shape: ls, reg, lane, warp } => {
            // Its own shape, or that shape with unit dimensions inserted or removed (the
            // parent of a slice): the row-major flat index, hence every basis, is the same.
            let big = |s: &[u32]| -> Vec<u32> { s.iter().copied().filter(|&d| d != 1).collect() };
            if big(ls) != big(shape) {
                return Err(format!("linear layout {id} is for shape {ls:?}, not {shape:?}"));
            }
            check_shape(shape)?;
            Ok(LinearLayout {
                shape: shape.iter().copied().collect(),
                reg: reg.clone(),
                lane: lane.clone(),
                warp: warp.clone(),
            })
        }
    }
}

/// The IR layout that is `l` (its bases on its shape, which a linear layout keeps).
pub fn to_ir(l: &LinearLayout) -> Layout {
    Layout::Linear {
        shape: l.shape.iter().copied().collect(),
        reg: l.reg.clone(),
        lane: l.lane.clone(),
        warp: l.warp.clone(),
    }
}

/// A shared-memory layout on `shape`: offset bits → coordinates, with the XOR swizzle of
/// `vec`-element groups of the fastest dim by the row index (`per_phase` rows per phase,
/// `max_phase` phases).
///
/// A fastest dim longer than the swizzle pattern (`vec * max_phase` elements, 128 bytes for
/// the usual 16-byte groups and 8 phases; swizzled layouts only) is split into column blocks of that width, each
/// stored as one contiguous `rows × width` block (the blocks follow the second dim, before
/// any further dims). That is the shared-memory matrix layout of Hopper's `wgmma` (its
/// swizzle modes repeat every 8 rows of 32, 64 or 128 bytes); `ldmatrix` and vector
/// accesses read it as well as plain rows.
pub fn shared(shape: &[u32], vec: u32, per_phase: u32, max_phase: u32, order: &[u32]) -> Result<SharedLinear, String> {
    check_shape(shape)?;
    let rank = shape.len();
    if order.len() != rank {
        return Err(format!("shared layout order {order:?} must have rank {rank}"));
    }
    log2(vec)?;
    log2(per_phase)?;
    log2(max_phase)?;
    let shifts = dim_shifts(shape);
    let order: Vec<usize> = order.iter().map(|&d| d as usize).collect();
    let mut offset = vec![];
    // Bits of the fastest dim inside one swizzle row; the rest are column blocks.
    let span_bits = if rank >= 2 && max_phase > 1 {
        (vec * max_phase).trailing_zeros().min(shape[order[0]].trailing_zeros())
    } else {
        32
    };
    let mut blocks = vec![];
    for (i, &d) in order.iter().enumerate() {
        for j in 0..shape[d].trailing_zeros() {
            let mut b = 1u64 << (shifts[d] + j);
            if i == 0 && j >= span_bits {
                blocks.push(b);
                continue;
            }
            if i == 1 {
                let fast = order[0];
                let row = 1u64 << j;
                let phase = (row / per_phase as u64) % max_phase as u64;
                let col = (phase * vec as u64) & (shape[fast] as u64 - 1);
                b |= col << shifts[fast];
            }
            offset.push(b);
        }
        if i == 1 || (i == 0 && rank == 1) {
            offset.append(&mut blocks);
        }
    }
    let s = SharedLinear { shape: shape.iter().copied().collect(), offset };
    debug_assert!(s.is_valid());
    Ok(s)
}

/// The shared layout `id` of `table` on `shape`.
pub fn shared_of(table: &Table, id: LayoutId, shape: &[u32]) -> Result<SharedLinear, String> {
    match table.get(id) {
        Some(Layout::Shared { vec, per_phase, max_phase, order }) => shared(shape, *vec, *per_phase, *max_phase, order),
        Some(_) => Err(format!("layout {id} is not a shared-memory layout")),
        None => Err(format!("unknown layout {id}")),
    }
}
