//! Linear layouts: the one definition every other part of the GPU backend derives from.
//!
//! Every tensor dimension is a power of two, so a coordinate is a bit vector: the
//! row-major flat index of the element. A *distributed* layout maps the bits of the
//! (register, lane, warp) index of a thread-held value to coordinate vectors; the
//! coordinate of a value is the XOR of the vectors of its set index bits. A zero vector
//! means "broadcast": flipping that bit gives the same element (a lane or warp holding a
//! copy). Register bases are never zero: a thread holds each element at most once.
//!
//! A *shared* layout maps the bits of an element offset in shared memory to coordinates
//! the same way; it is a bijection, so it can be inverted (coordinates → offset), and
//! XOR swizzling is linear, so a swizzled address is a thread part XOR a constant part.

use super::gf2::{combine, Echelon};
use smallvec::SmallVec;
use std::collections::HashMap;
use std::fmt;

pub type Shape = SmallVec<[u32; 4]>;

/// Bit position of each dim's coordinate in the row-major flat index.
pub fn dim_shifts(shape: &[u32]) -> SmallVec<[u32; 4]> {
    let mut shifts: SmallVec<[u32; 4]> = SmallVec::from_elem(0, shape.len());
    let mut s = 0;
    for d in (0..shape.len()).rev() {
        shifts[d] = s;
        s += shape[d].trailing_zeros();
    }
    shifts
}

/// Total number of coordinate bits of a shape.
pub fn shape_bits(shape: &[u32]) -> u32 {
    shape.iter().map(|d| d.trailing_zeros()).sum()
}

/// The flat index of a coordinate.
pub fn flatten(shape: &[u32], coords: &[u32]) -> u64 {
    let shifts = dim_shifts(shape);
    coords.iter().zip(&shifts).map(|(&c, &s)| (c as u64) << s).fold(0, |a, b| a | b)
}

/// The per-dim coordinates of a flat index.
pub fn unflatten(shape: &[u32], flat: u64) -> SmallVec<[u32; 4]> {
    let shifts = dim_shifts(shape);
    shape.iter().zip(&shifts).map(|(&n, &s)| ((flat >> s) & (n as u64 - 1)) as u32).collect()
}

/// A distributed layout of a tensor of `shape` over the registers, lanes and warps of a CTA.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LinearLayout {
    pub shape: Shape,
    /// One coordinate vector per register-index bit (never zero).
    pub reg: Vec<u64>,
    /// One per lane-index bit (five of them for 32 lanes).
    pub lane: Vec<u64>,
    /// One per warp-index bit.
    pub warp: Vec<u64>,
}

/// How a value moves from one distributed layout to another of the same shape.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ConversionKind {
    /// Same mapping: registers are reused as they are.
    Identity,
    /// Every thread already holds what it needs; registers are renamed.
    RegisterPermute,
    /// Values move between lanes of a warp only (shuffles could do it).
    WarpLocal,
    /// Values move between warps: through shared memory.
    CrossWarp,
}

impl LinearLayout {
    pub fn num_regs(&self) -> usize {
        1 << self.reg.len()
    }

    pub fn num_lanes(&self) -> usize {
        1 << self.lane.len()
    }

    pub fn num_warps(&self) -> usize {
        1 << self.warp.len()
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    pub fn numel(&self) -> u64 {
        self.shape.iter().map(|&d| d as u64).product()
    }

    /// Flat coordinate held in register `r` of lane `lane` of warp `warp`.
    pub fn apply(&self, r: u64, lane: u64, warp: u64) -> u64 {
        combine(&self.reg, r) ^ combine(&self.lane, lane) ^ combine(&self.warp, warp)
    }

    /// Per-dim coordinates of register `r` of a thread.
    pub fn coords(&self, r: u64, lane: u64, warp: u64) -> SmallVec<[u32; 4]> {
        unflatten(&self.shape, self.apply(r, lane, warp))
    }

    /// The register part of a coordinate (what the registers add to the thread's base).
    pub fn reg_part(&self, r: u64) -> u64 {
        combine(&self.reg, r)
    }

    /// Lane bits whose basis is zero: lanes differing only in these hold the same elements.
    pub fn free_lane_mask(&self) -> u32 {
        self.lane.iter().enumerate().filter(|(_, &b)| b == 0).map(|(i, _)| 1u32 << i).fold(0, |a, b| a | b)
    }

    pub fn free_warp_mask(&self) -> u32 {
        self.warp.iter().enumerate().filter(|(_, &b)| b == 0).map(|(i, _)| 1u32 << i).fold(0, |a, b| a | b)
    }

    /// Map from a register part (see [`Self::reg_part`]) to the register holding it.
    pub fn reg_lookup(&self) -> HashMap<u64, u32> {
        (0..self.num_regs() as u64).map(|r| (self.reg_part(r), r as u32)).collect()
    }

    /// This layout on `shape`, a reshape of its own (same element count): the row-major flat
    /// index of every element is unchanged, so are the bases.
    pub fn reshaped(&self, shape: &[u32]) -> LinearLayout {
        LinearLayout { shape: shape.iter().copied().collect(), ..self.clone() }
    }

    /// This layout with its dimensions permuted (`perm[i]`: the source dimension of result
    /// dimension `i`, as `trans` takes it): every basis's coordinates move with them.
    pub fn permuted(&self, perm: &[u32]) -> LinearLayout {
        let shape: Shape = perm.iter().map(|&p| self.shape[p as usize]).collect();
        let map = |b: &u64| -> u64 {
            let c = unflatten(&self.shape, *b);
            let pc: SmallVec<[u32; 4]> = perm.iter().map(|&p| c[p as usize]).collect();
            flatten(&shape, &pc)
        };
        LinearLayout {
            reg: self.reg.iter().map(map).collect(),
            lane: self.lane.iter().map(map).collect(),
            warp: self.warp.iter().map(map).collect(),
            shape,
        }
    }

    /// The layout of each half of a `split` (the last dimension, of size 2) that leaves every
    /// element where it is: when that dimension is one register bit of this layout, the halves
    /// are these bases without it (and without the last coordinate bit). None otherwise.
    pub fn split_halves(&self) -> Option<LinearLayout> {
        if self.shape.last() != Some(&2) {
            return None;
        }
        let k = self.reg.iter().position(|&b| b == 1)?;
        let others = self.reg.iter().enumerate().filter(|&(i, _)| i != k).map(|(_, b)| b);
        if others.chain(&self.lane).chain(&self.warp).any(|&b| b & 1 != 0) {
            return None;
        }
        let half = |v: &[u64]| -> Vec<u64> { v.iter().map(|&b| b >> 1).collect() };
        let reg: Vec<u64> = self.reg.iter().enumerate().filter(|&(i, _)| i != k).map(|(_, &b)| b >> 1).collect();
        Some(LinearLayout {
            shape: self.shape[..self.shape.len() - 1].iter().copied().collect(),
            reg,
            lane: half(&self.lane),
            warp: half(&self.warp),
        })
    }

    /// For each register of `half` (the layout of result `j` of a `split` of a tensor in this
    /// layout), the register of this layout holding its element — when every thread already
    /// holds its halves' elements (lanes and warps agree); None when the split moves data.
    pub fn split_registers(&self, half: &LinearLayout, j: u64) -> Option<Vec<u32>> {
        let same = |a: &[u64], b: &[u64]| a.len() == b.len() && a.iter().zip(b).all(|(&x, &y)| x == y << 1);
        if !same(&self.lane, &half.lane) || !same(&self.warp, &half.warp) {
            return None;
        }
        let lookup = self.reg_lookup();
        (0..half.num_regs() as u64).map(|r| lookup.get(&((half.reg_part(r) << 1) | j)).copied()).collect()
    }

    /// True when the layout covers every element of the shape exactly once per
    /// (non-broadcast) thread: all non-zero bases are linearly independent and span the shape.
    pub fn is_valid(&self) -> bool {
        let nonzero: Vec<u64> =
            self.reg.iter().chain(&self.lane).chain(&self.warp).copied().filter(|&b| b != 0).collect();
        let bits = shape_bits(&self.shape) as usize;
        let e = Echelon::new(&nonzero);
        self.reg.iter().all(|&b| b != 0)
            && e.rank() == nonzero.len()
            && e.rank() == bits
            && nonzero.iter().all(|&b| bits == 64 || b >> bits == 0)
    }

    /// A mask of the coordinate bits belonging to dim `d`.
    pub fn dim_mask(&self, d: usize) -> u64 {
        let shifts = dim_shifts(&self.shape);
        ((self.shape[d] as u64) - 1) << shifts[d]
    }

    /// Number of leading registers holding consecutive elements along dim `d`
    /// (register i at coordinate i along `d`): the widest vector a thread can move at once.
    pub fn contig_regs(&self, d: usize) -> u32 {
        let shift = dim_shifts(&self.shape)[d];
        let mut n = 0;
        while n < self.reg.len() && self.reg[n] == 1u64 << (shift + n as u32) {
            n += 1;
        }
        1 << n
    }

    /// How a conversion from `self` to `dst` (same shape) must move values.
    pub fn conversion_to(&self, dst: &LinearLayout) -> ConversionKind {
        if self == dst {
            return ConversionKind::Identity;
        }
        if self.warp == dst.warp {
            if self.lane == dst.lane {
                let lookup = self.reg_lookup();
                if (0..dst.num_regs() as u64).all(|r| lookup.contains_key(&dst.reg_part(r))) {
                    return ConversionKind::RegisterPermute;
                }
            }
            return ConversionKind::WarpLocal;
        }
        ConversionKind::CrossWarp
    }

    /// The layout with dim `d` removed (its bases must be zero along `d`, e.g. size 1).
    pub fn remove_dim(&self, d: usize) -> LinearLayout {
        let mut shape = self.shape.clone();
        shape.remove(d);
        // With dim d of size one the flat indices are unchanged; otherwise project.
        let shifts = dim_shifts(&self.shape);
        let bits = self.shape[d].trailing_zeros();
        let project = |b: u64| {
            let low = b & ((1u64 << shifts[d]) - 1);
            let high = b >> (shifts[d] + bits);
            low | (high << shifts[d])
        };
        let mut l = LinearLayout {
            shape,
            reg: self.reg.iter().map(|&b| project(b)).collect(),
            lane: self.lane.iter().map(|&b| project(b)).collect(),
            warp: self.warp.iter().map(|&b| project(b)).collect(),
        };
        l.drop_duplicate_regs();
        l
    }

    /// Removes register bases that are zero or depend on earlier ones (elements a thread would hold twice).
    pub fn drop_duplicate_regs(&mut self) {
        let mut e = Echelon::default();
        self.reg.retain(|&b| e.push(b));
    }

    /// The same layout on a shape with a size-1 dim inserted at `d` (coordinates unchanged).
    pub fn insert_unit_dim(&self, d: usize) -> LinearLayout {
        let mut shape = self.shape.clone();
        shape.insert(d, 1);
        LinearLayout { shape, ..self.clone() }
    }
}

/// A shared-memory layout: bits of an element offset → coordinates (a bijection).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SharedLinear {
    pub shape: Shape,
    /// One coordinate vector per offset bit.
    pub offset: Vec<u64>,
}

impl SharedLinear {
    /// Coordinate stored at element offset `off`.
    pub fn coord_at(&self, off: u64) -> u64 {
        combine(&self.offset, off)
    }

    /// Element offset of flat coordinate `c` (linear: offset(a ^ b) = offset(a) ^ offset(b)).
    pub fn offset_of(&self, c: u64) -> u64 {
        Echelon::new(&self.offset).solve(c).unwrap_or(0)
    }

    /// A function computing offsets of many coordinates with one elimination.
    pub fn offset_fn(&self) -> impl Fn(u64) -> u64 + '_ {
        let e = Echelon::new(&self.offset);
        move |c| e.solve(c).unwrap_or(0)
    }

    pub fn is_valid(&self) -> bool {
        let bits = shape_bits(&self.shape) as usize;
        self.offset.len() == bits && Echelon::new(&self.offset).rank() == bits
    }
}

impl fmt::Display for LinearLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |f: &mut fmt::Formatter<'_>, name: &str, v: &[u64]| -> fmt::Result {
            write!(f, "{name}: [")?;
            for (i, &b) in v.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                let c = unflatten(&self.shape, b);
                write!(f, "{:?}", c.as_slice())?;
            }
            f.write_str("]")
        };
        write!(f, "shape {:?}; ", self.shape.as_slice())?;
        show(f, "reg", &self.reg)?;
        f.write_str("; ")?;
        show(f, "lane", &self.lane)?;
        f.write_str("; ")?;
        show(f, "warp", &self.warp)
    }
}
