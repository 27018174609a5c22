//! Shape manipulation: splat, broadcast, expand_dims, reshape, trans, join, split, cat.
//!
//! All of them move elements without changing them; shapes are row-major.

use crate::error::Fault;
use crate::value::{strides, unravel, Data, Tensor};
use trident_ir::Type;

pub(crate) fn splat(a: &Tensor, ty: &Type) -> Result<Tensor, Fault> {
    if a.len() != 1 {
        return Err(Fault::internal(format!("splat of a value with {} elements", a.len())));
    }
    Ok(Tensor::splat_of(ty, &a.data))
}

/// Expands size-1 dims of `a` to the result shape (same rank; a scalar or a
/// lower-rank operand is aligned to the trailing dims, as numpy does).
pub(crate) fn broadcast(a: &Tensor, ty: &Type) -> Result<Tensor, Fault> {
    let out = ty.shape();
    if a.len() == 1 {
        return Ok(Tensor::splat_of(ty, &a.data));
    }
    if a.shape.len() > out.len() {
        return Err(Fault::internal(format!("broadcast of {:?} to {out:?}", a.shape.as_slice())));
    }
    let lead = out.len() - a.shape.len();
    let src = strides(&a.shape);
    let mut st = vec![0usize; out.len()];
    for (d, &n) in a.shape.iter().enumerate() {
        if n == out[lead + d] {
            st[lead + d] = src[d];
        } else if n != 1 {
            return Err(Fault::internal(format!("broadcast of {:?} to {out:?}", a.shape.as_slice())));
        }
    }
    if a.shape.as_slice() == out {
        return Ok(Tensor::new(ty.elem(), out, a.data.clone()));
    }
    Ok(Tensor::new(ty.elem(), out, a.data.strided(out, &st)))
}

/// Same elements, new shape (expand_dims, reshape).
pub(crate) fn reshape(a: &Tensor, ty: &Type) -> Result<Tensor, Fault> {
    if a.len() as u64 != ty.numel() {
        return Err(Fault::internal(format!("reshape of {} elements to {ty}", a.len())));
    }
    Ok(Tensor::new(ty.elem(), ty.shape(), a.data.clone()))
}

/// Result dim `i` is operand dim `perm[i]`.
pub(crate) fn trans(a: &Tensor, perm: &[u32], ty: &Type) -> Result<Tensor, Fault> {
    let rank = a.shape.len();
    let mut seen = vec![false; rank];
    if perm.len() != rank || perm.iter().any(|&p| p as usize >= rank || std::mem::replace(&mut seen[p as usize], true))
    {
        return Err(Fault::internal(format!("bad permutation {perm:?} for rank {rank}")));
    }
    let src = strides(&a.shape);
    let out: Vec<u32> = perm.iter().map(|&p| a.shape[p as usize]).collect();
    let st: Vec<usize> = perm.iter().map(|&p| src[p as usize]).collect();
    Ok(Tensor::new(ty.elem(), &out, a.data.strided(&out, &st)))
}

/// `out[.., i, ..] = src[.., index[.., i, ..], ..]` along `axis`; 0 where the index is outside
/// the source's axis.
pub(crate) fn gather(src: &Tensor, index: &Tensor, axis: u32, ty: &Type) -> Result<Tensor, Fault> {
    let ax = axis as usize;
    let rank = src.shape.len();
    if index.shape.len() != rank || ax >= rank {
        return Err(Fault::internal(format!("gather of {:?} by {:?} on axis {ax}", src.shape, index.shape)));
    }
    let st = strides(&src.shape);
    let n = src.shape[ax] as i64;
    let ix = index.ints()?;
    let picks: Vec<Option<usize>> = (0..index.len())
        .map(|i| {
            let c = unravel(i, &index.shape);
            let k = ix[i];
            (0..n).contains(&k).then(|| {
                c.iter().enumerate().map(|(d, &x)| if d == ax { k as usize } else { x as usize } * st[d]).sum()
            })
        })
        .collect();
    Ok(Tensor::new(ty.elem(), ty.shape(), src.data.gather_or_zero(&picks)))
}

/// `[a, b]` → shape + [2], interleaving.
pub(crate) fn join(a: &Tensor, b: &Tensor, ty: &Type) -> Result<Tensor, Fault> {
    if a.len() != b.len() || a.data.class() != b.data.class() {
        return Err(Fault::internal("join of values of different types".into()));
    }
    let mut d = a.data.empty_like(2 * a.len());
    for i in 0..a.len() {
        d.extend_from(&a.data, i..i + 1);
        d.extend_from(&b.data, i..i + 1);
    }
    Ok(Tensor::new(ty.elem(), ty.shape(), d))
}

/// Last dim 2 → two values without it.
pub(crate) fn split(a: &Tensor, ty: &Type) -> Result<(Tensor, Tensor), Fault> {
    if a.shape.last() != Some(&2) {
        return Err(Fault::internal(format!("split of shape {:?} (last dim must be 2)", a.shape.as_slice())));
    }
    let n = a.len() / 2;
    let even: Vec<usize> = (0..n).map(|i| 2 * i).collect();
    let odd: Vec<usize> = (0..n).map(|i| 2 * i + 1).collect();
    Ok((
        Tensor::new(ty.elem(), ty.shape(), a.data.gather(&even)),
        Tensor::new(ty.elem(), ty.shape(), a.data.gather(&odd)),
    ))
}

/// Concatenation along dim 0 (row-major: the elements of `a`, then those of `b`).
pub(crate) fn cat(a: &Tensor, b: &Tensor, ty: &Type) -> Result<Tensor, Fault> {
    if a.data.class() != b.data.class() || (a.len() + b.len()) as u64 != ty.numel() {
        return Err(Fault::internal(format!("cat of {} and {} elements into {ty}", a.len(), b.len())));
    }
    let mut d: Data = a.data.empty_like(a.len() + b.len());
    d.extend_from(&a.data, 0..a.len());
    d.extend_from(&b.data, 0..b.len());
    Ok(Tensor::new(ty.elem(), ty.shape(), d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use trident_ir::{DType, Elem};

    /// `out[i][j] = src[index[i][j]][j]` (axis 0) and `src[i][index[i][j]]` (axis 1), with 0
    /// for an index outside the axis.
    #[test]
    fn gather_picks_along_the_axis_and_zeroes_outside_it() {
        let f32s = Elem::Num(DType::F32);
        let src = Tensor::new(f32s, &[2, 3], Data::F(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
        let idx = Tensor::new(Elem::Num(DType::I32), &[3, 3], Data::I(vec![1, 0, 1, 0, 0, 0, 2, -1, 1]));
        let out = gather(&src, &idx, 0, &Type::tensor(&[3, 3], f32s)).unwrap();
        assert_eq!(out.data, Data::F(vec![4.0, 2.0, 6.0, 1.0, 2.0, 3.0, 0.0, 0.0, 6.0]));
        let idx = Tensor::new(Elem::Num(DType::I64), &[2, 2], Data::I(vec![2, 0, 1, 3]));
        let out = gather(&src, &idx, 1, &Type::tensor(&[2, 2], f32s)).unwrap();
        assert_eq!(out.data, Data::F(vec![3.0, 1.0, 5.0, 0.0]));
    }
}
