//! Block pointers (`tl.make_block_ptr`, `tl.advance`, `tl.load`/`tl.store` with
//! `boundary_check`) and tensor descriptors (`tl.make_tensor_descriptor`,
//! `desc.load`/`desc.store`).
//!
//! Neither exists in the tile IR: an access through one becomes what Triton's
//! interpreter makes of it, a block of element pointers
//! `base + Σ (offset_d + arange(block_d)) · stride_d` and, for the checked
//! dimensions, the mask `0 <= offset_d + i < shape_d`. Masked-off elements of a
//! load read as 0 (or NaN with `padding_option="nan"`); masked-off elements of
//! a store are not written.

use super::super::call::Args;
use super::super::emit::type_str;
use super::super::{BlockPtr, FnLowering, Val, R};
use super::const_shape;
use crate::value::{ConstValue, PyBinOp, PyCmp};
use ruff_text_size::TextRange;
use trident_core::DType;
use trident_ir::{Elem, OpKind, Type, Value, ValueDef};

fn items(v: &Val) -> Vec<Val> {
    match v {
        Val::Tuple(t) => t.clone(),
        other => vec![other.clone()],
    }
}

impl<'c, 'a> FnLowering<'c, 'a> {
    /// An integer scalar field of a block pointer, as an IR scalar of `d`.
    fn int_field(&mut self, v: &Val, d: DType, r: TextRange, what: &str) -> R<Val> {
        let x = self.tensor_of(v, r)?;
        if self.is_block(x) {
            return Err(self.err(r, format!("{what} must be scalars, got a block {}", type_str(self.ty(x)))));
        }
        match self.elem(x) {
            Elem::Num(e) if e.is_int() => {}
            e => {
                return Err(self.err(r, format!("{what} must be integers, got {}", crate::value::elem_name(e))));
            }
        }
        Ok(Val::T(self.cast(x, Elem::Num(d), None, r)?))
    }

    fn int_fields(&mut self, v: &Val, n: usize, d: DType, r: TextRange, what: &str) -> R<Vec<Val>> {
        let xs = items(v);
        if xs.len() != n {
            return Err(self.err(r, format!("expected {n} {what} (one per dimension of the block), got {}", xs.len())));
        }
        xs.iter().map(|x| self.int_field(x, d, r, what)).collect()
    }

    fn base_ptr(&mut self, v: &Val, r: TextRange, what: &str) -> R<Val> {
        match v {
            Val::T(x) if self.elem(*x).is_ptr() && !self.is_block(*x) => Ok(Val::T(*x)),
            Val::T(x) => {
                Err(self.err(r, format!("{what}: `base` must be a scalar pointer, got {}", type_str(self.ty(*x)))))
            }
            other => Err(self.err(r, format!("{what}: `base` must be a pointer, got {}", other.kind_name()))),
        }
    }

    /// `tl.make_block_ptr(base, shape, strides, offsets, block_shape, order)`.
    pub(super) fn make_block_ptr(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["base", "shape", "strides", "offsets", "block_shape", "order"])?;
        let base = self.base_ptr(&b.val(0), b.range(0), "tl.make_block_ptr")?;
        let block = const_shape(self, &b.val(4), b.range(4))?;
        let n = block.len();
        let shape = self.int_fields(&b.val(1), n, DType::I64, b.range(1), "shape values")?;
        let strides = self.int_fields(&b.val(2), n, DType::I64, b.range(2), "strides")?;
        let offsets = self.int_fields(&b.val(3), n, DType::I32, b.range(3), "offsets")?;
        let order = self.order_arg(&b.val(5), n, b.range(5))?;
        Ok(Val::BlockPtr(Box::new(BlockPtr { base, shape, strides, offsets, block, order, descriptor: None })))
    }

    fn order_arg(&mut self, v: &Val, n: usize, r: TextRange) -> R<Vec<u32>> {
        let xs = items(v);
        let mut order = vec![];
        for x in &xs {
            match x.as_const().and_then(|c| c.as_int()) {
                Some(i) if (0..n as i128).contains(&i) => order.push(i as u32),
                _ => return Err(self.err(r, format!("`order` must be a permutation of 0..{n} (compile-time ints)"))),
            }
        }
        let mut sorted = order.clone();
        sorted.sort();
        if sorted != (0..n as u32).collect::<Vec<_>>() {
            return Err(self.err(r, format!("`order` must be a permutation of 0..{n}, got {order:?}")));
        }
        Ok(order)
    }

    /// `tl.advance(block_ptr, offsets)`: a block pointer moved by `offsets` elements per dimension.
    pub(super) fn advance(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["base", "offsets"])?;
        let bp = match b.val(0) {
            Val::BlockPtr(bp) if bp.descriptor.is_none() => bp,
            other => {
                return Err(self.err(b.range(0), format!("tl.advance needs a block pointer, got {}", other.kind_name())))
            }
        };
        let deltas = self.int_fields(&b.val(1), bp.block.len(), DType::I32, b.range(1), "offsets")?;
        let mut offsets = vec![];
        for (o, d) in bp.offsets.iter().zip(&deltas) {
            offsets.push(self.arith(PyBinOp::Add, o, d, args.r)?);
        }
        Ok(Val::BlockPtr(Box::new(BlockPtr { offsets, ..(*bp).clone() })))
    }

    /// `tl.make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero")`.
    pub(super) fn make_tensor_descriptor(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["base", "shape", "strides", "block_shape", "padding_option="])?;
        let base = self.base_ptr(&b.val(0), b.range(0), "tl.make_tensor_descriptor")?;
        let block = const_shape(self, &b.val(3), b.range(3))?;
        let n = block.len();
        self.check_descriptor_static(&base, &block, &b.val(2), b.range(3), b.range(2))?;
        let shape = self.int_fields(&b.val(1), n, DType::I64, b.range(1), "shape values")?;
        let strides = self.int_fields(&b.val(2), n, DType::I64, b.range(2), "strides")?;
        let nan = self.padding_arg(&b.val(4), b.range(4), &base, true)?.unwrap_or(false);
        let order = (0..n as u32).rev().collect();
        Ok(Val::BlockPtr(Box::new(BlockPtr {
            base,
            shape,
            strides,
            offsets: vec![],
            block,
            order,
            descriptor: Some(nan),
        })))
    }

    /// Triton's static checks of a tensor descriptor (TMA's rules): the block's last dimension
    /// spans at least 16 bytes, a constant last stride is 1, constant other strides are multiples
    /// of 16 bytes.
    fn check_descriptor_static(
        &self,
        base: &Val,
        block: &[u32],
        strides: &Val,
        block_r: TextRange,
        strides_r: TextRange,
    ) -> R<()> {
        let Val::T(p) = base else { return Ok(()) };
        let Some(elem_size) = self.elem(*p).pointee().map(|d| (d.bits() as u64).div_ceil(8)) else { return Ok(()) };
        let last = block.last().copied().unwrap_or(1) as u64;
        if last * elem_size < 16 {
            return Err(self.err(
                block_r,
                format!(
                    "Descriptor block shape must have at least 16 bytes in the last dimension, but got {last} * {elem_size} = {} bytes",
                    last * elem_size
                ),
            ));
        }
        let strides = items(strides);
        let konst = |v: &Val| match v {
            Val::C(c) => c.as_int(),
            _ => None,
        };
        if let Some(s) = strides.last().and_then(konst).filter(|&s| s != 1) {
            return Err(self.err(strides_r, format!("Tensor descriptor last dim must be 1 but got {s}")));
        }
        for s in strides.iter().rev().skip(1).filter_map(konst) {
            if (s * elem_size as i128) % 16 != 0 {
                return Err(self.err(
                    strides_r,
                    format!(
                        "Tensor descriptor strides must be 16-byte aligned, but got a stride of {s} * {elem_size} = {} bytes",
                        s * elem_size as i128
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `padding_option`: `Some(true)` for "nan", `Some(false)` for "zero", `None` when not given.
    fn padding_arg(&mut self, v: &Val, r: TextRange, base: &Val, default_zero: bool) -> R<Option<bool>> {
        let s = match v {
            Val::C(ConstValue::Str(s)) => s.clone(),
            Val::C(ConstValue::None) => String::new(),
            other => return Err(self.err(r, format!("padding_option must be a string, not {}", other.kind_name()))),
        };
        let nan = match s.as_str() {
            "" => return Ok(default_zero.then_some(false)),
            "zero" => false,
            "nan" => true,
            _ => return Err(self.err(r, format!("padding option {s:?} not supported; use \"zero\" or \"nan\""))),
        };
        if nan {
            let Val::T(p) = base else { return Ok(Some(nan)) };
            if !self.elem(*p).pointee().is_some_and(|d| d.is_float()) {
                return Err(self.err(r, "padding_option=\"nan\" needs a floating-point tensor"));
            }
        }
        Ok(Some(nan))
    }

    /// Which dimensions `boundary_check` names (an int or a tuple of ints).
    fn boundary_dims(&self, v: Option<&Val>, rank: usize, r: TextRange) -> R<Vec<bool>> {
        let mut check = vec![false; rank];
        let Some(v) = v else { return Ok(check) };
        for x in items(v) {
            match x.as_const().and_then(|c| c.as_int()) {
                Some(d) if (0..rank as i128).contains(&d) => check[d as usize] = true,
                _ => {
                    return Err(self.err(
                        r,
                        format!("boundary_check must list dimensions of the block (0..{rank}), as compile-time ints"),
                    ))
                }
            }
        }
        Ok(check)
    }

    /// The element pointers of the window at `offsets` and the mask of its in-bounds
    /// elements along the `check`ed dimensions (`None` when nothing is checked).
    fn window(&mut self, bp: &BlockPtr, offsets: &[Val], check: &[bool], r: TextRange) -> R<(Value, Option<Value>)> {
        let n = bp.block.len();
        let mut ptr = bp.base.clone();
        let mut mask: Option<Val> = None;
        for d in 0..n {
            let len = bp.block[d];
            let ar = self.emit1(OpKind::Arange { start: 0, end: len as i32 }, &[], Type::tensor(&[len], DType::I32));
            let idx = self.arith(PyBinOp::Add, &offsets[d], &Val::T(ar), r)?;
            let Val::T(idx) = idx else { return Err(self.err(r, "internal error: block pointer index")) };
            let mut idx = self.cast(idx, Elem::Num(DType::I64), None, r)?;
            // Unit dimensions around `d` by expand_dims (not a reshape): the GPU backend keeps
            // such an index in a slice of its user's layout, and the axis analysis follows it,
            // so the window's accesses stay contiguous and vectorizable.
            for _ in 0..d {
                idx = self.expand_dims(idx, 0);
            }
            for k in d + 1..n {
                idx = self.expand_dims(idx, k as u32);
            }
            let idx = Val::T(idx);
            let step = self.arith(PyBinOp::Mul, &idx, &bp.strides[d], r)?;
            ptr = self.arith(PyBinOp::Add, &ptr, &step, r)?;
            if check[d] {
                let lo = self.compare(PyCmp::Ge, &idx, &Val::int(0), r)?;
                let hi = self.compare(PyCmp::Lt, &idx, &bp.shape[d], r)?;
                let m = self.arith(PyBinOp::BitAnd, &lo, &hi, r)?;
                mask = Some(match mask {
                    None => m,
                    Some(prev) => self.arith(PyBinOp::BitAnd, &prev, &m, r)?,
                });
            }
        }
        let ptr = self.tensor_of(&ptr, r)?;
        let ptr = self.broadcast_to(ptr, &bp.block, r)?;
        let mask = match mask {
            Some(m) => {
                let m = self.tensor_of(&m, r)?;
                Some(self.broadcast_to(m, &bp.block, r)?)
            }
            None => None,
        };
        Ok((ptr, mask))
    }

    /// What `tl.load`/`tl.store` of a block pointer access: pointers, mask, and the padding
    /// value of masked-off loads. `boundary_check`/`padding_option` are the call's arguments.
    pub(crate) fn block_ptr_access(
        &mut self,
        bp: &BlockPtr,
        boundary_check: Option<&Val>,
        padding: Option<&Val>,
        r: TextRange,
    ) -> R<(Value, Option<Value>, Option<Val>)> {
        if bp.descriptor.is_some() {
            return Err(
                self.err(r, "a tensor descriptor is accessed with `desc.load(offsets)` / `desc.store(offsets, value)`")
            );
        }
        let check = self.boundary_dims(boundary_check, bp.block.len(), r)?;
        let nan = match padding {
            Some(p) => self.padding_arg(p, r, &bp.base, false)?,
            None => None,
        };
        let offsets = bp.offsets.clone();
        let (ptr, mask) = self.window(bp, &offsets, &check, r)?;
        let other = match (&mask, nan) {
            (Some(_), Some(true)) => Some(Val::C(ConstValue::Float(f64::NAN))),
            _ => None,
        };
        Ok((ptr, mask, other))
    }

    fn descriptor_args(&mut self, args: &Args, what: &str, with_value: bool) -> R<(BlockPtr, Vec<Val>, Option<Val>)> {
        let spec: &[&str] = if with_value { &["desc", "offsets", "value"] } else { &["desc", "offsets"] };
        let b = self.bind(args, spec)?;
        let bp = match b.val(0) {
            Val::BlockPtr(bp) if bp.descriptor.is_some() => bp,
            other => {
                return Err(self.err(b.range(0), format!("{what} needs a tensor descriptor, got {}", other.kind_name())))
            }
        };
        let offsets = self.int_fields(&b.val(1), bp.block.len(), DType::I32, b.range(1), "offsets")?;
        Ok((*bp, offsets, with_value.then(|| b.val(2))))
    }

    /// `desc.load(offsets)` / `tl.load_tensor_descriptor(desc, offsets)`.
    pub(super) fn descriptor_load(&mut self, args: Args) -> R<Val> {
        let (bp, offsets, _) = self.descriptor_args(&args, "tensor descriptor load", false)?;
        let check = vec![true; bp.block.len()];
        let (ptr, mask) = self.window(&bp, &offsets, &check, args.r)?;
        let other = if bp.descriptor == Some(true) { ConstValue::Float(f64::NAN) } else { ConstValue::Int(0) };
        let window = self.descriptor_window(&bp, &offsets, args.r)?;
        let v = self.emit_load_values(ptr, mask, Some(Val::C(other)), args.r)?;
        self.mark_descriptor_load(&v, window);
        Ok(v)
    }

    /// The window of a descriptor access as IR scalars (base, shape, strides, offsets), made
    /// before the load that will carry them.
    fn descriptor_window(&mut self, bp: &BlockPtr, offsets: &[Val], r: TextRange) -> R<Option<Vec<Value>>> {
        let Val::T(base) = &bp.base else { return Ok(None) };
        let mut window = vec![*base];
        for (vals, dt) in [(&bp.shape[..], DType::I64), (&bp.strides[..], DType::I64), (offsets, DType::I32)] {
            for x in vals {
                let t = self.tensor_of(x, r)?;
                window.push(self.cast(t, Elem::Num(dt), None, r)?);
            }
        }
        Ok(Some(window))
    }

    /// Turns the `load ptr, mask, other` a descriptor load just emitted into a `desc_load`
    /// carrying the window (base, shape, strides, offsets as scalars), which a backend with
    /// a tensor-memory accelerator copies as one box (`OpKind::DescLoad`). Boolean tensors
    /// (loaded as i8 and cast) stay plain loads.
    fn mark_descriptor_load(&mut self, v: &Val, window: Option<Vec<Value>>) {
        let (Val::T(v), Some(window)) = (v, window) else { return };
        let ValueDef::Result(op, 0) = self.f.values[*v].def else { return };
        if !matches!(self.f.ops[op].kind, OpKind::Load { .. }) || self.f.ops[op].operands.len() != 3 {
            return;
        }
        let rank = (window.len() - 1) / 3;
        let od = &mut self.f.ops[op];
        od.kind = OpKind::DescLoad { rank: rank as u32 };
        od.operands.extend(window);
    }

    /// `desc.store(offsets, value)` / `tl.store_tensor_descriptor(desc, offsets, value)`.
    pub(super) fn descriptor_store(&mut self, args: Args) -> R<Val> {
        let (bp, offsets, value) = self.descriptor_args(&args, "tensor descriptor store", true)?;
        let check = vec![true; bp.block.len()];
        let (ptr, mask) = self.window(&bp, &offsets, &check, args.r)?;
        let window = self.descriptor_window(&bp, &offsets, args.r)?;
        let value = value.unwrap_or(Val::none());
        let v = self.emit_store_values(ptr, &value, mask.map(Val::T).as_ref(), args.r)?;
        self.mark_descriptor_store(window);
        Ok(v)
    }

    /// Turns the masked `store` a descriptor store just emitted (the current block's last op)
    /// into a `desc_store` carrying the window, as `mark_descriptor_load` does for loads.
    /// Boolean tensors (stored as i8) stay plain stores.
    fn mark_descriptor_store(&mut self, window: Option<Vec<Value>>) {
        let Some(window) = window else { return };
        let Some(&op) = self.f.blocks[self.block].ops.last() else { return };
        let od = &self.f.ops[op];
        if !matches!(od.kind, OpKind::Store { .. }) || od.operands.len() != 3 {
            return;
        }
        let ptr = od.operands[0];
        if self.elem(ptr).pointee() != self.elem(window[0]).pointee() {
            return;
        }
        let rank = (window.len() - 1) / 3;
        let od = &mut self.f.ops[op];
        od.kind = OpKind::DescStore { rank: rank as u32 };
        od.operands.extend(window);
    }

    /// Attributes of a block pointer or descriptor: `dtype` (a block pointer's is a pointer
    /// type, so that `p.dtype.element_ty` is the element type as in Triton), `block_shape`,
    /// a descriptor's `shape`/`strides`, and the methods `advance`, `load`, `store`.
    pub(crate) fn block_ptr_attr(&mut self, bp: BlockPtr, a: &str, r: TextRange) -> R<Val> {
        let pointee = match &bp.base {
            Val::T(p) => self.elem(*p).pointee().unwrap_or(DType::F32),
            _ => DType::F32,
        };
        let is_desc = bp.descriptor.is_some();
        match a {
            "dtype" | "type" if is_desc => Ok(Val::C(ConstValue::dtype(pointee))),
            "dtype" | "type" => Ok(Val::C(ConstValue::DType(Elem::ptr(pointee)))),
            "block_shape" => Ok(Val::Tuple(bp.block.iter().map(|&d| Val::int(d as i128)).collect())),
            // Sizes are int32 to the kernel, as in Triton (the descriptor holds them as int64).
            "shape" if is_desc => {
                let mut out = vec![];
                for v in &bp.shape {
                    out.push(match v {
                        Val::T(t) => Val::T(self.cast(*t, Elem::Num(DType::I32), None, r)?),
                        other => other.clone(),
                    });
                }
                Ok(Val::Tuple(out))
            }
            "strides" if is_desc => Ok(Val::Tuple(bp.strides.clone())),
            "advance" if !is_desc => Ok(Val::Method(Box::new(Val::BlockPtr(Box::new(bp))), a.to_string())),
            "load" | "store" if is_desc => Ok(Val::Method(Box::new(Val::BlockPtr(Box::new(bp))), a.to_string())),
            _ => {
                let what = if is_desc { "tensor descriptors" } else { "block pointers" };
                Err(self.err(r, format!("{what} have no attribute `{a}` in Trident")))
            }
        }
    }
}
