//! Block values: n-d arrays with typed storage.
//!
//! Elements are stored by *class*, not one enum per element, so hot loops run
//! over plain slices:
//!
//! * integers of every width, `i1` and pointers: `Vec<i64>`, kept *canonical*:
//!   the value sign- or zero-extended from its width according to its type
//!   (`u64` values above `i64::MAX` are stored wrapped, `i1` is 0 or 1,
//!   pointers are their 64-bit encoding, see `memory.rs`);
//! * `f16`, `bf16`, fp8 and `f32`: `Vec<f32>` holding values exactly
//!   representable in the element type (every op rounds its result to it);
//! * `f64`: `Vec<f64>`.
//!
//! A scalar is a tensor with an empty shape and one element.

use crate::error::Fault;
use smallvec::SmallVec;
use trident_core::DType;
use trident_ir::{Elem, Shape, Type};

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Data {
    I(Vec<i64>),
    F(Vec<f32>),
    D(Vec<f64>),
}

/// The storage class of an element type.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    I,
    F,
    D,
}

pub(crate) fn class_of(e: Elem) -> Class {
    match e {
        Elem::Num(DType::F64) => Class::D,
        Elem::Num(d) if d.is_float() => Class::F,
        _ => Class::I,
    }
}

impl Data {
    pub fn len(&self) -> usize {
        match self {
            Data::I(v) => v.len(),
            Data::F(v) => v.len(),
            Data::D(v) => v.len(),
        }
    }

    /// Elements at the given flat indices, in order.
    pub fn gather(&self, idx: &[usize]) -> Data {
        match self {
            Data::I(v) => Data::I(idx.iter().map(|&i| v[i]).collect()),
            Data::F(v) => Data::F(idx.iter().map(|&i| v[i]).collect()),
            Data::D(v) => Data::D(idx.iter().map(|&i| v[i]).collect()),
        }
    }

    /// Elements at the given flat indices, in order; zero where there is none.
    pub fn gather_or_zero(&self, idx: &[Option<usize>]) -> Data {
        match self {
            Data::I(v) => Data::I(idx.iter().map(|i| i.map_or(0, |i| v[i])).collect()),
            Data::F(v) => Data::F(idx.iter().map(|i| i.map_or(0.0, |i| v[i])).collect()),
            Data::D(v) => Data::D(idx.iter().map(|i| i.map_or(0.0, |i| v[i])).collect()),
        }
    }

    /// See [`strided_copy`].
    pub fn strided(&self, out_shape: &[u32], src_strides: &[usize]) -> Data {
        match self {
            Data::I(v) => Data::I(strided_copy(v, out_shape, src_strides)),
            Data::F(v) => Data::F(strided_copy(v, out_shape, src_strides)),
            Data::D(v) => Data::D(strided_copy(v, out_shape, src_strides)),
        }
    }

    /// An empty vector of the same class with room for `n` elements.
    pub fn empty_like(&self, n: usize) -> Data {
        match self {
            Data::I(_) => Data::I(Vec::with_capacity(n)),
            Data::F(_) => Data::F(Vec::with_capacity(n)),
            Data::D(_) => Data::D(Vec::with_capacity(n)),
        }
    }

    /// Appends `other[range]` (same class).
    pub fn extend_from(&mut self, other: &Data, range: std::ops::Range<usize>) {
        match (self, other) {
            (Data::I(a), Data::I(b)) => a.extend_from_slice(&b[range]),
            (Data::F(a), Data::F(b)) => a.extend_from_slice(&b[range]),
            (Data::D(a), Data::D(b)) => a.extend_from_slice(&b[range]),
            _ => unreachable!("extend_from across storage classes"),
        }
    }

    pub fn class(&self) -> Class {
        match self {
            Data::I(_) => Class::I,
            Data::F(_) => Class::F,
            Data::D(_) => Class::D,
        }
    }
}

/// A block value: element type, shape (empty for scalars) and storage.
#[derive(Clone, Debug)]
pub(crate) struct Tensor {
    pub elem: Elem,
    pub shape: Shape,
    pub data: Data,
}

impl Tensor {
    /// The executor checks that `data` is of the class of `elem` (see `exec.rs`).
    pub fn new(elem: Elem, shape: &[u32], data: Data) -> Tensor {
        Tensor { elem, shape: shape.iter().copied().collect(), data }
    }

    pub fn scalar_int(elem: Elem, v: i64) -> Tensor {
        Tensor { elem, shape: SmallVec::new(), data: Data::I(vec![v]) }
    }

    /// A tensor of type `ty` with every element equal to `v` (given in the class of `ty`).
    pub fn splat_of(ty: &Type, one: &Data) -> Tensor {
        let n = ty.numel() as usize;
        let data = match one {
            Data::I(v) => Data::I(vec![v[0]; n]),
            Data::F(v) => Data::F(vec![v[0]; n]),
            Data::D(v) => Data::D(vec![v[0]; n]),
        };
        Tensor::new(ty.elem(), ty.shape(), data)
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn dtype(&self) -> Result<DType, Fault> {
        self.elem.num().ok_or_else(|| Fault::internal(format!("expected a number, got {}", self.elem)))
    }

    pub fn ints(&self) -> Result<&[i64], Fault> {
        match &self.data {
            Data::I(v) => Ok(v),
            _ => Err(Fault::internal(format!("expected integers or pointers, got {}", self.elem))),
        }
    }

    /// The scalar value as a canonical integer (the first element of a tensor).
    pub fn int0(&self) -> Result<i64, Fault> {
        self.ints()?.first().copied().ok_or_else(|| Fault::internal("empty value".into()))
    }

    /// Whether element `i` is true (nonzero); `i1` masks and conditions.
    pub fn truth(&self, i: usize) -> bool {
        match &self.data {
            Data::I(v) => v[if v.len() == 1 { 0 } else { i }] != 0,
            Data::F(v) => v[if v.len() == 1 { 0 } else { i }] != 0.0,
            Data::D(v) => v[if v.len() == 1 { 0 } else { i }] != 0.0,
        }
    }
}

/// Row-major strides of a shape, in elements.
pub(crate) fn strides(shape: &[u32]) -> SmallVec<[usize; 4]> {
    let mut s: SmallVec<[usize; 4]> = SmallVec::from_elem(1, shape.len());
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1] as usize;
    }
    s
}

/// The multi-index of flat index `i` in `shape`.
pub(crate) fn unravel(mut i: usize, shape: &[u32]) -> Vec<u32> {
    let mut idx = vec![0u32; shape.len()];
    for d in (0..shape.len()).rev() {
        let n = shape[d].max(1) as usize;
        idx[d] = (i % n) as u32;
        i /= n;
    }
    idx
}

/// The elements of `src` for every element of `out_shape` (row-major) when the source
/// element of multi-index `j` sits at `sum(j[d] * src_strides[d])`. Broadcasting uses
/// stride 0, transposition permuted strides.
pub(crate) fn strided_copy<T: Copy>(src: &[T], out_shape: &[u32], src_strides: &[usize]) -> Vec<T> {
    let n: usize = out_shape.iter().map(|&d| d as usize).product();
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let rank = out_shape.len();
    if rank == 0 {
        out.push(src[0]);
        return out;
    }
    let last = out_shape[rank - 1] as usize;
    let last_stride = src_strides[rank - 1];
    let mut counter = vec![0u32; rank];
    let mut base = 0usize;
    loop {
        match last_stride {
            0 => out.extend(std::iter::repeat_n(src[base], last)),
            1 => out.extend_from_slice(&src[base..base + last]),
            s => out.extend((0..last).map(|k| src[base + k * s])),
        }
        // Advance the outer dimensions (all but the last).
        let mut d = rank - 1;
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            counter[d] += 1;
            base += src_strides[d];
            if counter[d] < out_shape[d] {
                break;
            }
            base -= src_strides[d] * counter[d] as usize;
            counter[d] = 0;
        }
    }
}

/// Canonical form of an integer of type `dt`: the low `bits(dt)` bits, sign- or
/// zero-extended by the type's signedness (`i1` is 0 or 1).
#[inline(always)]
pub(crate) fn wrap(v: i64, dt: DType) -> i64 {
    match dt {
        DType::I1 => v & 1,
        DType::I8 => v as i8 as i64,
        DType::I16 => v as i16 as i64,
        DType::I32 => v as i32 as i64,
        DType::U8 => v as u8 as i64,
        DType::U16 => v as u16 as i64,
        DType::U32 => v as u32 as i64,
        _ => v,
    }
}

/// Wraps every element in place (no-op for 64-bit types).
pub(crate) fn wrap_all(v: &mut [i64], dt: DType) {
    if matches!(dt, DType::I64 | DType::U64) {
        return;
    }
    for x in v {
        *x = wrap(*x, dt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_copy_broadcast_and_transpose() {
        let src: Vec<usize> = (0..8).collect();
        // [2,3] from a [2,1] source: stride 0 on dim 1.
        assert_eq!(strided_copy(&src, &[2, 3], &[1, 0]), vec![0, 0, 0, 1, 1, 1]);
        // [2,3] from a [1,3] source: stride 0 on dim 0.
        assert_eq!(strided_copy(&src, &[2, 3], &[0, 1]), vec![0, 1, 2, 0, 1, 2]);
        // transpose of a 2x3 row-major source.
        assert_eq!(strided_copy(&src, &[3, 2], &[1, 3]), vec![0, 3, 1, 4, 2, 5]);
        assert_eq!(strided_copy(&src, &[2, 2, 2], &[4, 2, 1]), src);
    }

    #[test]
    fn wrap_by_type() {
        assert_eq!(wrap(0x1ff, DType::I8), -1);
        assert_eq!(wrap(0x1ff, DType::U8), 255);
        assert_eq!(wrap(3, DType::I1), 1);
        assert_eq!(wrap(-1, DType::U32), u32::MAX as i64);
        assert_eq!(unravel(7, &[2, 4]), vec![1, 3]);
    }
}
