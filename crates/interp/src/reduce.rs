//! `reduce` and `scan` along one axis, driven by a combine function on vectors.
//!
//! The operands are first rearranged axis-major (`[n][rest]`, where `rest` is
//! every other position), so that one call of the combine function handles a
//! whole step for all positions at once: the executor evaluates the combine
//! region on vectors, not element by element.
//!
//! **Reduction order** is a pairwise tree: while more than one row is left,
//! row `i` is combined with row `i + ceil(n/2)` (accumulator first). For a
//! power-of-two axis this is the butterfly order of the GPU's shuffle
//! reductions, and float sums have the O(log n) error growth of pairwise
//! summation rather than the O(n) of a sequential loop.
//!
//! **Scan order** is sequential along the axis (from the end when `reverse`):
//! row `j` becomes `combine(row j-1, row j)`.

use crate::error::{Fault, Stop};
use crate::float::{fmax, fmax_nan, fmin, fmin_nan, round_f32};
use crate::value::wrap;
use crate::value::{Data, Tensor};
use trident_core::DType;
use trident_ir::BinaryOp;
use trident_ir::{Elem, Type};

/// Combines accumulated values with new values, operand-wise (`acc[i]`, `new[i]` have equal lengths).
pub(crate) type Combine<'a> = dyn FnMut(Vec<Tensor>, Vec<Tensor>) -> Result<Vec<Tensor>, Stop> + 'a;

struct Layout {
    n: usize,
    outer: usize,
    inner: usize,
}

fn layout(shape: &[u32], axis: u32) -> Result<Layout, Fault> {
    let axis = axis as usize;
    if axis >= shape.len() {
        return Err(Fault::internal(format!("axis {axis} of a value of shape {shape:?}")));
    }
    let prod = |s: &[u32]| s.iter().map(|&d| d as usize).product::<usize>();
    Ok(Layout { n: shape[axis] as usize, outer: prod(&shape[..axis]), inner: prod(&shape[axis + 1..]) })
}

/// `[outer, n, inner]` → `[n, outer, inner]` (no copy when `outer == 1`).
fn to_axis_major(d: &Data, l: &Layout) -> Data {
    if l.outer == 1 {
        return d.clone();
    }
    d.strided(&[l.n as u32, l.outer as u32, l.inner as u32], &[l.inner, l.n * l.inner, 1])
}

fn from_axis_major(d: &Data, l: &Layout) -> Data {
    if l.outer == 1 {
        return d.clone();
    }
    d.strided(&[l.outer as u32, l.n as u32, l.inner as u32], &[l.inner, l.outer * l.inner, 1])
}

fn rows(d: &Data, r0: usize, r1: usize, width: usize) -> Data {
    let mut out = d.empty_like((r1 - r0) * width);
    out.extend_from(d, r0 * width..r1 * width);
    out
}

fn vector(elem: Elem, d: Data) -> Tensor {
    let n = d.len() as u32;
    Tensor::new(elem, &[n], d)
}

fn check_same_shapes(xs: &[&Tensor]) -> Result<(), Fault> {
    if xs.is_empty() || xs.iter().any(|x| x.shape != xs[0].shape) {
        return Err(Fault::internal("reduce/scan operands must be non-empty and of one shape".into()));
    }
    Ok(())
}

/// One tree level in place for the common single-op combines: rows `0..n-h` become
/// `op(row i, row i+h)`, with the same rounding and wrapping as the elementwise op.
fn level_in_place(d: &mut Data, n: usize, h: usize, width: usize, op: BinaryOp, dt: DType) -> bool {
    fn apply<T: Copy>(v: &mut [T], n: usize, h: usize, width: usize, f: impl Fn(T, T) -> T) {
        let (lo, hi) = v.split_at_mut(h * width);
        let m = (n - h) * width;
        for (a, &b) in lo[..m].iter_mut().zip(&hi[..m]) {
            *a = f(*a, b);
        }
    }
    use BinaryOp::*;
    match d {
        Data::F(v) => match op {
            Add => apply(v, n, h, width, |a, b| round_f32(dt, a + b)),
            Mul => apply(v, n, h, width, |a, b| round_f32(dt, a * b)),
            Max => apply(v, n, h, width, fmax),
            Min => apply(v, n, h, width, fmin),
            MaxNan => apply(v, n, h, width, fmax_nan),
            MinNan => apply(v, n, h, width, fmin_nan),
            _ => return false,
        },
        Data::D(v) => match op {
            Add => apply(v, n, h, width, |a, b| a + b),
            Mul => apply(v, n, h, width, |a, b| a * b),
            Max => apply(v, n, h, width, fmax),
            Min => apply(v, n, h, width, fmin),
            MaxNan => apply(v, n, h, width, fmax_nan),
            MinNan => apply(v, n, h, width, fmin_nan),
            _ => return false,
        },
        Data::I(v) => {
            let uns = !dt.is_signed_int();
            match op {
                Add => apply(v, n, h, width, |a, b| wrap(a.wrapping_add(b), dt)),
                Mul => apply(v, n, h, width, |a, b| wrap(a.wrapping_mul(b), dt)),
                Max | MaxNan if uns => apply(v, n, h, width, |a, b| (a as u64).max(b as u64) as i64),
                Min | MinNan if uns => apply(v, n, h, width, |a, b| (a as u64).min(b as u64) as i64),
                Max | MaxNan => apply(v, n, h, width, i64::max),
                Min | MinNan => apply(v, n, h, width, i64::min),
                And => apply(v, n, h, width, |a, b| a & b),
                Or => apply(v, n, h, width, |a, b| a | b),
                Xor => apply(v, n, h, width, |a, b| a ^ b),
                _ => return false,
            }
        }
    }
    true
}

/// A reduction whose combine is one binary op: the same tree, in place, without
/// evaluating a combine function per level.
pub(crate) fn reduce_fast(x: &Tensor, axis: u32, out: &Type, op: BinaryOp) -> Result<Option<Tensor>, Fault> {
    let Some(dt) = x.elem.num() else { return Ok(None) };
    let l = layout(&x.shape, axis)?;
    if l.n == 0 {
        return Err(Fault::internal("reduction over an empty axis".into()));
    }
    let width = l.outer * l.inner;
    let mut d = to_axis_major(&x.data, &l);
    let mut n = l.n;
    while n > 1 {
        let h = n.div_ceil(2);
        if !level_in_place(&mut d, n, h, width, op, dt) {
            return Ok(None);
        }
        n = h;
    }
    let mut res = d.empty_like(width);
    res.extend_from(&d, 0..width);
    Ok(Some(Tensor::new(out.elem(), out.shape(), res)))
}

pub(crate) fn reduce(xs: &[&Tensor], axis: u32, out_types: &[Type], comb: &mut Combine) -> Result<Vec<Tensor>, Stop> {
    check_same_shapes(xs)?;
    let l = layout(&xs[0].shape, axis)?;
    if l.n == 0 {
        return Err(Fault::internal("reduction over an empty axis".into()).into());
    }
    if out_types.len() != xs.len() {
        return Err(Fault::internal("reduce result count differs from operand count".into()).into());
    }
    let width = l.outer * l.inner;
    let mut w: Vec<Data> = xs.iter().map(|x| to_axis_major(&x.data, &l)).collect();
    let mut n = l.n;
    while n > 1 {
        let h = n.div_ceil(2);
        let acc = xs.iter().zip(&w).map(|(x, d)| vector(x.elem, rows(d, 0, n - h, width))).collect();
        let new = xs.iter().zip(&w).map(|(x, d)| vector(x.elem, rows(d, h, n, width))).collect();
        let res = comb(acc, new)?;
        if res.len() != xs.len() {
            return Err(Fault::internal("combine region yields the wrong number of values".into()).into());
        }
        for (d, r) in w.iter_mut().zip(res) {
            if r.len() != (n - h) * width || r.data.class() != d.class() {
                return Err(Fault::internal("combine region yields values of the wrong type".into()).into());
            }
            let mut next = r.data;
            next.extend_from(d, (n - h) * width..h * width);
            *d = next;
        }
        n = h;
    }
    Ok(out_types.iter().zip(w).map(|(t, d)| Tensor::new(t.elem(), t.shape(), d)).collect())
}

pub(crate) fn scan(xs: &[&Tensor], axis: u32, reverse: bool, comb: &mut Combine) -> Result<Vec<Tensor>, Stop> {
    check_same_shapes(xs)?;
    let l = layout(&xs[0].shape, axis)?;
    let width = l.outer * l.inner;
    let w: Vec<Data> = xs.iter().map(|x| to_axis_major(&x.data, &l)).collect();
    // Rows in visiting order; each new row is combine(previous result row, this row).
    let order: Vec<usize> = if reverse { (0..l.n).rev().collect() } else { (0..l.n).collect() };
    let mut out: Vec<Vec<Data>> = vec![Vec::with_capacity(l.n); xs.len()];
    let mut prev: Option<Vec<Tensor>> = None;
    for &j in &order {
        let cur: Vec<Tensor> = xs.iter().zip(&w).map(|(x, d)| vector(x.elem, rows(d, j, j + 1, width))).collect();
        let next = match prev.take() {
            None => cur,
            Some(p) => {
                let r = comb(p, cur)?;
                if r.len() != xs.len() || r.iter().zip(&w).any(|(t, d)| t.len() != width || t.data.class() != d.class())
                {
                    return Err(Fault::internal("combine region yields values of the wrong type".into()).into());
                }
                r
            }
        };
        for (o, t) in out.iter_mut().zip(&next) {
            o.push(t.data.clone());
        }
        prev = Some(next);
    }
    let mut res = Vec::with_capacity(xs.len());
    for (x, mut parts) in xs.iter().zip(out) {
        if reverse {
            parts.reverse();
        }
        let mut d = x.data.empty_like(x.len());
        for p in &parts {
            d.extend_from(p, 0..p.len());
        }
        res.push(Tensor::new(x.elem, &x.shape, from_axis_major(&d, &l)));
    }
    Ok(res)
}
