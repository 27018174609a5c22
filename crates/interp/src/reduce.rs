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
use crate::value::{Data, Tensor};
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
