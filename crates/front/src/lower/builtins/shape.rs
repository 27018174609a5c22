//! Shape manipulation: reshape, permute, broadcast, expand_dims, join/split, cat.

use super::super::call::Args;
use super::super::emit::{shape_str, type_str};
use super::super::{FnLowering, Val, R};
use super::{const_int, const_shape};
use trident_ir::{DType, Elem, OpKind, Type, Value};

/// Shape arguments given as `f(x, 2, 3)` or `f(x, (2, 3))`.
fn dims_arg(rest: &[super::super::call::Arg]) -> Val {
    if rest.len() == 1 {
        if let Val::Tuple(_) = rest[0].v {
            return rest[0].v.clone();
        }
    }
    Val::Tuple(rest.iter().map(|a| a.v.clone()).collect())
}

fn wrap_axis(l: &FnLowering, axis: i128, ndim: usize, r: ruff_text_size::TextRange) -> R<u32> {
    let n = ndim as i128;
    if !(-n <= axis && axis < n) {
        return Err(l.err(r, format!("invalid axis {axis}: expected {} <= axis < {n}", -n)));
    }
    Ok(if axis < 0 { axis + n } else { axis } as u32)
}

impl<'c, 'a> FnLowering<'c, 'a> {
    fn block_arg(&mut self, v: &Val, r: ruff_text_size::TextRange, what: &str) -> R<Value> {
        let x = self.tensor_of(v, r)?;
        if !self.is_block(x) {
            return Err(self.err(r, format!("{what} needs a block, not the scalar {}", type_str(self.ty(x)))));
        }
        Ok(x)
    }

    pub(crate) fn reshape_to(
        &mut self,
        x: Value,
        shape: &[u32],
        can_reorder: bool,
        r: ruff_text_size::TextRange,
    ) -> R<Value> {
        let from = self.shape(x);
        let n_from: u64 = from.iter().map(|&d| d as u64).product();
        let n_to: u64 = shape.iter().map(|&d| d as u64).product();
        if n_from != n_to {
            return Err(self.err(
                r,
                format!(
                    "cannot reshape {} ({n_from} elements) to {} ({n_to} elements)",
                    type_str(self.ty(x)),
                    shape_str(shape)
                ),
            ));
        }
        if shape.is_empty() {
            return self.unsplat(x);
        }
        if !self.is_block(x) {
            return Ok(self.splat(x, shape));
        }
        if from == shape {
            return Ok(x);
        }
        let ty = Type::tensor(shape, self.elem(x));
        Ok(self.emit1(OpKind::Reshape { can_reorder }, &[x], ty))
    }

    /// The element of a 1-element block, as a scalar.
    pub(crate) fn unsplat(&mut self, x: Value) -> R<Value> {
        if !self.is_block(x) {
            return Ok(x);
        }
        let flat = if self.shape(x).len() == 1 {
            x
        } else {
            self.emit1(OpKind::Reshape { can_reorder: false }, &[x], Type::tensor(&[1], self.elem(x)))
        };
        self.reduce_single(flat)
    }

    pub(super) fn reshape(&mut self, args: Args, view: bool) -> R<Val> {
        let b = self.bind(&args, &["input", "*shape", "can_reorder="])?;
        let x = self.tensor_of(&b.val(0), b.range(0))?;
        let shape = const_shape(self, &dims_arg(&b.rest), args.r)?;
        let can_reorder = view || b.val(2).as_const().and_then(|c| c.truthy()).unwrap_or(false);
        Ok(Val::T(self.reshape_to(x, &shape, can_reorder, args.r)?))
    }

    pub(crate) fn permute_value(&mut self, x: Value, perm: &[u32], r: ruff_text_size::TextRange) -> R<Value> {
        let s = self.shape(x);
        let mut sorted = perm.to_vec();
        sorted.sort();
        if perm.len() != s.len() || sorted.iter().enumerate().any(|(i, &p)| p != i as u32) {
            return Err(self.err(
                r,
                format!(
                    "permute dims {perm:?} are not a permutation of 0..{} for a tensor of shape {}",
                    s.len(),
                    shape_str(&s)
                ),
            ));
        }
        if perm.iter().enumerate().all(|(i, &p)| p == i as u32) {
            return Ok(x);
        }
        let shape: Vec<u32> = perm.iter().map(|&p| s[p as usize]).collect();
        let ty = Type::tensor(&shape, self.elem(x));
        Ok(self.emit1(OpKind::Trans { perm: perm.to_vec() }, &[x], ty))
    }

    pub(super) fn permute(&mut self, args: Args, is_trans: bool) -> R<Val> {
        let b = self.bind(&args, &["input", "*dims"])?;
        let x = self.block_arg(&b.val(0), b.range(0), &args.name)?;
        let n = self.shape(x).len();
        let perm: Vec<u32> = if b.rest.is_empty() && is_trans {
            if n < 2 {
                return Err(self.err(args.r, "tl.trans needs a tensor of rank 2 or more"));
            }
            let mut p: Vec<u32> = (0..n as u32 - 2).collect();
            p.extend([n as u32 - 1, n as u32 - 2]);
            p
        } else {
            let dims = match dims_arg(&b.rest) {
                Val::Tuple(t) => t,
                v => vec![v],
            };
            let mut p = vec![];
            for d in &dims {
                p.push(wrap_axis(self, const_int(self, d, args.r, "permutation entry")?, n, args.r)?);
            }
            p
        };
        Ok(Val::T(self.permute_value(x, &perm, args.r)?))
    }

    /// `tl.gather(src, index, axis)`: `out[.., i, ..] = src[.., index[.., i, ..], ..]` along
    /// `axis`, the other dims of `src` and `index` the same sizes (as Triton requires).
    pub(super) fn gather(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["src", "index", "axis"])?;
        let src = self.block_arg(&b.val(0), b.range(0), &args.name)?;
        let index = self.block_arg(&b.val(1), b.range(1), &args.name)?;
        let (ss, is) = (self.shape(src), self.shape(index));
        if ss.len() != is.len() {
            return Err(self.err(
                args.r,
                format!(
                    "gather: source and index tensors must have the same rank, not {} and {}",
                    shape_str(&ss),
                    shape_str(&is)
                ),
            ));
        }
        let axis = wrap_axis(self, const_int(self, &b.val(2), b.range(2), "axis")?, ss.len(), b.range(2))?;
        if !self.elem(index).num().is_some_and(|d| d.is_int()) {
            return Err(self.err(b.range(1), "gather: the index must be an integer tensor"));
        }
        if ss.iter().zip(&is).enumerate().any(|(d, (a, b))| d != axis as usize && a != b) {
            return Err(self.err(
                args.r,
                format!(
                    "gather: source {} and index {} must have the same sizes outside axis {axis}",
                    shape_str(&ss),
                    shape_str(&is)
                ),
            ));
        }
        // Booleans travel as bytes (the GPU moves them through shared memory).
        let elem = self.elem(src);
        let boolean = elem == Elem::Num(DType::I1);
        let src = if boolean { self.cast(src, Elem::Num(DType::I8), None, args.r)? } else { src };
        let ty = Type::tensor(&is, self.elem(src));
        let out = self.emit1(OpKind::Gather { axis }, &[src, index], ty);
        Ok(Val::T(if boolean { self.cast(out, elem, None, args.r)? } else { out }))
    }

    pub(super) fn broadcast_to_builtin(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["input", "*shape"])?;
        let x = self.tensor_of(&b.val(0), b.range(0))?;
        let shape = const_shape(self, &dims_arg(&b.rest), args.r)?;
        Ok(Val::T(self.broadcast_to(x, &shape, args.r)?))
    }

    pub(super) fn expand_dims_builtin(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["input", "axis"])?;
        let x = self.tensor_of(&b.val(0), b.range(0))?;
        let axes = match b.val(1) {
            Val::Tuple(t) => t,
            v => vec![v],
        };
        let new_ndim = self.shape(x).len() + axes.len();
        let mut norm = vec![];
        for a in &axes {
            norm.push(wrap_axis(self, const_int(self, a, b.range(1), "axis")?, new_ndim, b.range(1))?);
        }
        let mut sorted = norm.clone();
        sorted.sort();
        sorted.dedup();
        if sorted.len() != norm.len() {
            return Err(self.err(b.range(1), format!("expand_dims: duplicate axes, normalized axes = {norm:?}")));
        }
        let mut v = x;
        for a in sorted {
            v = self.expand_dims(v, a);
        }
        Ok(Val::T(v))
    }

    pub(crate) fn join_values(&mut self, a: Value, b: Value, r: ruff_text_size::TextRange) -> R<Value> {
        if self.ty(a).elem() != self.ty(b).elem() {
            return Err(self.err(
                r,
                format!(
                    "tl.join needs operands of the same type, got {} and {}",
                    type_str(self.ty(a)),
                    type_str(self.ty(b))
                ),
            ));
        }
        let (a, b) = self.broadcast_pair(a, b, r)?;
        let scalar = !self.is_block(a);
        let (a, b) = if scalar { (self.expand_dims(a, 0), self.expand_dims(b, 0)) } else { (a, b) };
        let mut s = self.shape(a);
        s.push(2);
        self.check_numel(&s, r)?;
        let ty = Type::tensor(&s, self.elem(a));
        let j = self.emit1(OpKind::Join, &[a, b], ty);
        if scalar {
            return self.reshape_to(j, &[2], false, r);
        }
        Ok(j)
    }

    pub(super) fn join(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["a", "b"])?;
        let x = self.tensor_of(&b.val(0), b.range(0))?;
        let y = self.tensor_of(&b.val(1), b.range(1))?;
        Ok(Val::T(self.join_values(x, y, args.r)?))
    }

    pub(super) fn split(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["a"])?;
        let x = self.block_arg(&b.val(0), b.range(0), "tl.split")?;
        let s = self.shape(x);
        if s.last() != Some(&2) {
            return Err(self.err(args.r, format!("tl.split needs a last dimension of 2, got shape {}", shape_str(&s))));
        }
        let rank1 = s.len() == 1;
        let x = if rank1 { self.expand_dims(x, 0) } else { x };
        let mut out_shape = self.shape(x);
        out_shape.pop();
        let ty = Type::tensor(&out_shape, self.elem(x));
        let op = self.emit(OpKind::Split, &[x], &[ty.clone(), ty]);
        let (mut lo, mut hi) = (self.f.ops[op].results[0], self.f.ops[op].results[1]);
        if rank1 {
            lo = self.unsplat(lo)?;
            hi = self.unsplat(hi)?;
        }
        Ok(Val::Tuple(vec![Val::T(lo), Val::T(hi)]))
    }

    pub(super) fn cat(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["input", "other", "can_reorder=", "dim="])?;
        let x = self.block_arg(&b.val(0), b.range(0), "tl.cat")?;
        let y = self.block_arg(&b.val(1), b.range(1), "tl.cat")?;
        let (sx, sy) = (self.shape(x), self.shape(y));
        if sx != sy || self.elem(x) != self.elem(y) {
            return Err(self.err(
                args.r,
                format!(
                    "tl.cat requires tensors of the same type and shape, got {} and {}",
                    type_str(self.ty(x)),
                    type_str(self.ty(y))
                ),
            ));
        }
        let rank = sx.len();
        let dim = match b.get(3) {
            Some(a) if !a.v.is_none() => wrap_axis(self, const_int(self, &a.v, a.r, "dim")?, rank, a.r)?,
            _ => 0,
        };
        let mut shape = sx.clone();
        shape[dim as usize] *= 2;
        self.check_numel(&shape, args.r)?;
        if dim == 0 {
            let ty = Type::tensor(&shape, self.elem(x));
            return Ok(Val::T(self.emit1(OpKind::Cat, &[x, y], ty)));
        }
        // Join adds a minor dimension of 2; move it in front of `dim` and merge.
        let j = self.join_values(x, y, args.r)?;
        let mut order: Vec<u32> = (0..rank as u32).collect();
        order.insert(dim as usize, rank as u32);
        let p = self.permute_value(j, &order, args.r)?;
        Ok(Val::T(self.reshape_to(p, &shape, false, args.r)?))
    }
}
