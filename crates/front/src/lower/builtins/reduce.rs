//! Reductions and scans with combine regions.

use super::super::call::{Arg, Args};
use super::super::emit::type_str;
use super::super::{FnLowering, Val, R};
use ruff_text_size::TextRange;
use trident_core::DType;
use trident_ir::{OpKind, Type, Value};

impl<'c, 'a> FnLowering<'c, 'a> {
    /// The inputs of a reduce/scan: one tensor or a tuple of same-shape tensors.
    fn combine_inputs(&mut self, v: &Val, r: TextRange) -> R<(Vec<Value>, bool)> {
        let (items, is_tuple) = match v {
            Val::Tuple(t) => (t.clone(), true),
            other => (vec![other.clone()], false),
        };
        let mut out = vec![];
        for it in &items {
            let x = self.tensor_of(it, r)?;
            if !self.is_block(x) {
                return Err(self.err(r, format!("reductions need a block, not the scalar {}", type_str(self.ty(x)))));
            }
            out.push(x);
        }
        if out.is_empty() {
            return Err(self.err(r, "nothing to reduce"));
        }
        let s = self.shape(out[0]);
        if out.iter().any(|x| self.shape(*x) != s) {
            return Err(self.err(r, "all inputs of a reduction must have the same shape"));
        }
        Ok((out, is_tuple))
    }

    fn axis_arg(&self, v: &Val, rank: usize, r: TextRange) -> R<Option<u32>> {
        if v.is_none() {
            return Ok(None);
        }
        let a = super::const_int(self, v, r, "axis")?;
        let n = rank as i128;
        if !(-n <= a && a < n) {
            return Err(self.err(r, format!("invalid axis {a} for a tensor of rank {rank}")));
        }
        Ok(Some(if a < 0 { a + n } else { a } as u32))
    }

    /// Builds the combine region of a reduce/scan op: calls `combine` on (accumulated..., new...).
    fn combine_region(&mut self, op: trident_ir::Op, elems: &[Type], combine: &Val, r: TextRange) -> R<()> {
        let mut tys = elems.to_vec();
        tys.extend(elems.iter().cloned());
        let region = self.f.new_block(&tys);
        self.f.add_region(op, region);
        let outer = self.block;
        self.block = region;
        let res = (|| -> R<()> {
            let args = self.f.blocks[region].args.clone();
            let pos: Vec<Arg> = args.iter().map(|a| Arg { v: Val::T(*a), r }).collect();
            let out = match combine {
                Val::Jit(_) => {
                    self.ctx.combine_depth += 1;
                    let out = self.call(combine.clone(), Args { pos, kw: vec![], r, name: "combine_fn".into() });
                    self.ctx.combine_depth -= 1;
                    out?
                }
                other => {
                    return Err(
                        self.err(r, format!("combine_fn must be a @triton.jit function, not {}", other.kind_name()))
                    )
                }
            };
            let vals: Vec<Val> = match out {
                Val::Tuple(t) => t,
                v => vec![v],
            };
            if vals.len() != elems.len() {
                return Err(self.err(r, format!("combine_fn returned {} values, expected {}", vals.len(), elems.len())));
            }
            let mut ys = vec![];
            for (v, t) in vals.iter().zip(elems) {
                let x = match v {
                    Val::C(c) => self.const_value(c, t.elem().num().unwrap_or(DType::F32), r)?,
                    other => self.tensor_of(other, r)?,
                };
                if self.ty(x) != t {
                    return Err(self.err(
                        r,
                        format!("combine_fn returned {} where {} was expected", type_str(self.ty(x)), type_str(t)),
                    ));
                }
                ys.push(x);
            }
            self.emit(OpKind::Yield, &ys, &[]);
            Ok(())
        })();
        self.block = outer;
        res
    }

    /// `reduce` over `axis` (None: all elements) with `combine`; returns one value per input.
    pub(crate) fn reduce_values(
        &mut self,
        inputs: Vec<Value>,
        axis: Option<u32>,
        combine: &Val,
        keep_dims: bool,
        r: TextRange,
    ) -> R<Vec<Value>> {
        let rank = self.shape(inputs[0]).len();
        let (inputs, ax) = match axis {
            Some(a) => (inputs, a),
            None => {
                let n: u32 = self.shape(inputs[0]).iter().product();
                let mut flat = vec![];
                for x in inputs {
                    flat.push(self.reshape_to(x, &[n], true, r)?);
                }
                (flat, 0)
            }
        };
        let mut shape = self.shape(inputs[0]);
        shape.remove(ax as usize);
        let res_tys: Vec<Type> = inputs.iter().map(|x| Type::scalar(self.elem(*x)).with_shape(&shape)).collect();
        let elems: Vec<Type> = inputs.iter().map(|x| Type::scalar(self.elem(*x))).collect();
        let loc = self.cur_loc();
        let op = self.f.new_op(OpKind::Reduce { axis: ax }, &inputs, &res_tys, loc);
        self.combine_region(op, &elems, combine, r)?;
        self.f.append_op(self.block, op);
        let mut out = self.f.ops[op].results.to_vec();
        if keep_dims {
            for v in out.iter_mut() {
                match axis {
                    Some(a) => *v = self.expand_dims(*v, a),
                    None => {
                        for _ in 0..rank {
                            *v = self.expand_dims(*v, 0);
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    pub(super) fn reduce_builtin(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["input", "axis", "combine_fn", "keep_dims="])?;
        let (inputs, is_tuple) = self.combine_inputs(&b.val(0), b.range(0))?;
        let rank = self.shape(inputs[0]).len();
        let axis = self.axis_arg(&b.val(1), rank, b.range(1))?;
        let keep = b.val(3).as_const().and_then(|c| c.truthy()).unwrap_or(false);
        let out = self.reduce_values(inputs, axis, &b.val(2), keep, args.r)?;
        Ok(if is_tuple { Val::Tuple(out.into_iter().map(Val::T).collect()) } else { Val::T(out[0]) })
    }

    pub(super) fn scan_builtin(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["input", "axis", "combine_fn", "reverse="])?;
        let (inputs, is_tuple) = self.combine_inputs(&b.val(0), b.range(0))?;
        let rank = self.shape(inputs[0]).len();
        let Some(axis) = self.axis_arg(&b.val(1), rank, b.range(1))? else {
            return Err(self.err(b.range(1), "associative_scan needs an axis"));
        };
        let reverse = b.val(3).as_const().and_then(|c| c.truthy()).unwrap_or(false);
        let tys: Vec<Type> = inputs.iter().map(|x| self.ty(*x).clone()).collect();
        let elems: Vec<Type> = inputs.iter().map(|x| Type::scalar(self.elem(*x))).collect();
        let loc = self.cur_loc();
        let op = self.f.new_op(OpKind::Scan { axis, reverse }, &inputs, &tys, loc);
        self.combine_region(op, &elems, &b.val(2), args.r)?;
        self.f.append_op(self.block, op);
        let out = self.f.ops[op].results.to_vec();
        Ok(if is_tuple { Val::Tuple(out.into_iter().map(Val::T).collect()) } else { Val::T(out[0]) })
    }

    /// Reduction carrying element indices along `axis` (for argmax/argmin).
    pub(super) fn reduce_with_indices(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["input", "axis", "combine_fn", "keep_dims="])?;
        let x = self.tensor_of(&b.val(0), b.range(0))?;
        if !self.is_block(x) {
            return Err(self.err(b.range(0), "reductions need a block"));
        }
        let shape = self.shape(x);
        let Some(axis) = self.axis_arg(&b.val(1), shape.len(), b.range(1))? else {
            return Err(self.err(b.range(1), "reducing with indices needs an axis"));
        };
        let n = shape[axis as usize];
        let mut idx = self.emit1(OpKind::Arange { start: 0, end: n as i32 }, &[], Type::tensor(&[n], DType::I32));
        if shape.len() > 1 {
            for d in 0..shape.len() as u32 {
                if d != axis {
                    idx = self.expand_dims(idx, d);
                }
            }
            idx = self.broadcast_to(idx, &shape, args.r)?;
        }
        let keep = b.val(3).as_const().and_then(|c| c.truthy()).unwrap_or(false);
        let out = self.reduce_values(vec![x, idx], Some(axis), &b.val(2), keep, args.r)?;
        Ok(Val::Tuple(out.into_iter().map(Val::T).collect()))
    }

    /// The only element of a 1-element, 1-D block (a reduce whose combine keeps the first value).
    pub(crate) fn reduce_single(&mut self, x: Value) -> R<Value> {
        let e = Type::scalar(self.elem(x));
        let loc = self.cur_loc();
        let op = self.f.new_op(OpKind::Reduce { axis: 0 }, &[x], std::slice::from_ref(&e), loc);
        let region = self.f.new_block(&[e.clone(), e]);
        self.f.add_region(op, region);
        let a0 = self.f.blocks[region].args[0];
        let y = self.f.new_op(OpKind::Yield, &[a0], &[], loc);
        self.f.append_op(region, y);
        self.f.append_op(self.block, op);
        Ok(self.f.ops[op].results[0])
    }
}
