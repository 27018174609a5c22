//! `tl.load` and `tl.store`.

use super::super::call::{Args, Bound};
use super::super::emit::type_str;
use super::super::{FnLowering, Val, R};
use crate::value::ConstValue;
use ruff_text_size::TextRange;
use trident_core::DType;
use trident_ir::{CacheModifier, CastKind, Elem, EvictionPolicy, OpKind, Rounding, Value};

fn str_arg(v: &Val) -> Option<String> {
    match v {
        Val::C(ConstValue::Str(s)) => Some(s.clone()),
        Val::C(ConstValue::None) => Some(String::new()),
        _ => None,
    }
}

impl<'c, 'a> FnLowering<'c, 'a> {
    fn cache_modifier(&self, b: &Bound, i: usize, load: bool) -> R<CacheModifier> {
        let s = str_arg(&b.val(i)).ok_or_else(|| self.err(b.range(i), "cache_modifier must be a string"))?;
        Ok(match (s.as_str(), load) {
            ("", _) => CacheModifier::None,
            (".ca", true) => CacheModifier::Ca,
            (".cg", _) => CacheModifier::Cg,
            (".cs", _) => CacheModifier::Cs,
            (".cv", true) => CacheModifier::Cv,
            (".wb", false) => CacheModifier::Wb,
            (".wt", false) => CacheModifier::Wt,
            _ => {
                let valid = if load { "'.ca', '.cg', '.cs', '.cv'" } else { "'.wb', '.cg', '.cs', '.wt'" };
                return Err(
                    self.err(b.range(i), format!("cache modifier {s:?} not supported here; use one of {valid}"))
                );
            }
        })
    }

    fn eviction(&self, b: &Bound, i: usize) -> R<EvictionPolicy> {
        let s = str_arg(&b.val(i)).ok_or_else(|| self.err(b.range(i), "eviction_policy must be a string"))?;
        Ok(match s.as_str() {
            "" | "evict_normal" => EvictionPolicy::Normal,
            "evict_first" => EvictionPolicy::First,
            "evict_last" => EvictionPolicy::Last,
            _ => {
                return Err(self.err(
                    b.range(i),
                    format!("eviction policy {s:?} not supported; use 'evict_first' or 'evict_last'"),
                ))
            }
        })
    }

    /// The pointer operand of a memory op: a pointer or a block of pointers.
    pub(crate) fn ptr_arg(&mut self, v: &Val, r: ruff_text_size::TextRange, what: &str) -> R<Value> {
        match v {
            Val::T(x) if self.elem(*x).is_ptr() => Ok(*x),
            Val::T(x) => {
                Err(self
                    .err(r, format!("{what} needs a pointer (or block of pointers), got {}", type_str(self.ty(*x)))))
            }
            Val::BlockPtr(_) => Err(self.err(r, format!("{what} does not take a block pointer or tensor descriptor"))),
            other => Err(self.err(r, format!("{what} needs a pointer, got {}", other.kind_name()))),
        }
    }

    /// A mask operand: i1, broadcast to the pointer's shape.
    pub(crate) fn mask_arg(&mut self, v: &Val, ptr: Value, r: ruff_text_size::TextRange) -> R<Value> {
        let m = self.tensor_of(v, r)?;
        if self.elem(m) != Elem::Num(DType::I1) {
            return Err(self.err(r, format!("a mask must be boolean (int1), got {}", type_str(self.ty(m)))));
        }
        if !self.is_block(ptr) && self.is_block(m) {
            return Err(self.err(r, "the mask cannot be a block when the pointer is a scalar"));
        }
        let s = self.shape(ptr);
        self.broadcast_to(m, &s, r)
    }

    /// Reinterprets a pointer to `bool` as a pointer to `int8` (booleans are bytes in memory).
    fn bool_ptr_as_i8(&mut self, p: Value) -> Value {
        let ty = self.ty(p).with_elem(Elem::ptr(DType::I8));
        self.emit1(OpKind::Cast { kind: CastKind::Bitcast, rounding: Rounding::Rtne }, &[p], ty)
    }

    pub(super) fn load(&mut self, args: Args) -> R<Val> {
        let b = self.bind(
            &args,
            &[
                "pointer",
                "mask=",
                "other=",
                "boundary_check=",
                "padding_option=",
                "cache_modifier=",
                "eviction_policy=",
                "volatile=",
            ],
        )?;
        let cache = self.cache_modifier(&b, 5, true)?;
        let evict = self.eviction(&b, 6)?;
        let volatile = b.val(7).as_const().and_then(|c| c.truthy()).unwrap_or(false);
        if let Val::BlockPtr(bp) = b.val(0) {
            if let Some(a) = b.opt(1).or(b.opt(2)) {
                return Err(
                    self.err(a.r, "`mask` and `other` cannot be used with a block pointer (use boundary_check)")
                );
            }
            let (ptr, mask, other) =
                self.block_ptr_access(&bp, b.opt(3).map(|a| &a.v), b.opt(4).map(|a| &a.v), args.r)?;
            let other = other.map(|v| (v, args.r));
            return self.load_core(ptr, mask.map(|m| (m, args.r)), other, (cache, evict, volatile), args.r);
        }
        let ptr = self.ptr_arg(&b.val(0), b.range(0), "tl.load")?;
        if b.opt(3).is_some_and(|a| !matches!(&a.v, Val::Tuple(t) if t.is_empty()))
            || b.opt(4).is_some_and(|a| str_arg(&a.v).is_some_and(|s| !s.is_empty()))
        {
            return Err(self.err(args.r, "boundary_check/padding_option apply to block pointers (tl.make_block_ptr)"));
        }
        let mask = b.opt(1).cloned();
        let other = b.opt(2).cloned();
        if mask.is_none() && other.is_some() {
            return Err(self.err(b.range(2), "`other` cannot be given without `mask`"));
        }
        let mask = match &mask {
            Some(m) => Some((self.tensor_of(&m.v, m.r)?, m.r)),
            None => None,
        };
        let other = other.map(|o| (o.v, o.r));
        self.load_core(ptr, mask, other, (cache, evict, volatile), args.r)
    }

    /// A plain masked load (block pointers and descriptors end up here too).
    pub(crate) fn emit_load_values(
        &mut self,
        ptr: Value,
        mask: Option<Value>,
        other: Option<Val>,
        r: TextRange,
    ) -> R<Val> {
        let other = if mask.is_some() { other.map(|o| (o, r)) } else { None };
        self.load_core(ptr, mask.map(|m| (m, r)), other, (CacheModifier::None, EvictionPolicy::Normal, false), r)
    }

    fn load_core(
        &mut self,
        mut ptr: Value,
        mask: Option<(Value, TextRange)>,
        other: Option<(Val, TextRange)>,
        (cache, evict, volatile): (CacheModifier, EvictionPolicy, bool),
        r: TextRange,
    ) -> R<Val> {
        let mut ops = vec![];
        let mut mask_v = None;
        let mut mask_r = r;
        if let Some((mv, mr)) = mask {
            mask_r = mr;
            if self.is_block(mv) && !self.is_block(ptr) {
                return Err(self.err(mr, "the mask cannot be a block when the pointer is a scalar"));
            }
            if self.is_block(ptr) {
                let (p, mm) = self.broadcast_pair(ptr, mv, mr)?;
                ptr = p;
                mask_v = Some(mm);
            } else {
                mask_v = Some(mv);
            }
        }
        let mut other_v = None;
        let mut other_r = r;
        if let Some((o, or)) = &other {
            other_r = *or;
            let ov = self.tensor_of(o, *or)?;
            if self.is_block(ov) && !self.is_block(ptr) {
                return Err(self.err(*or, "`other` cannot be a block when the pointer is a scalar"));
            }
            if self.is_block(ptr) {
                let (p, oo) = self.broadcast_pair(ptr, ov, *or)?;
                ptr = p;
                other_v = Some(oo);
            } else {
                other_v = Some(ov);
            }
        }
        // The pointer may have grown by broadcasting; bring the mask along.
        let shape = self.shape(ptr);
        if let Some(m) = mask_v {
            if self.elem(m) != Elem::Num(DType::I1) {
                return Err(self.err(mask_r, format!("a mask must be boolean (int1), got {}", type_str(self.ty(m)))));
            }
            mask_v = Some(self.broadcast_to(m, &shape, mask_r)?);
        }
        let pointee = self.elem(ptr).pointee().unwrap_or(DType::F32);
        let is_bool = pointee == DType::I1;
        let elem = if is_bool { DType::I8 } else { pointee };
        if is_bool {
            ptr = self.bool_ptr_as_i8(ptr);
        }
        ops.push(ptr);
        if let Some(m) = mask_v {
            ops.push(m);
            if let Some(o) = other_v {
                let o = self.cast(o, Elem::Num(elem), None, other_r)?;
                let o = self.broadcast_to(o, &shape, other_r)?;
                ops.push(o);
            }
        }
        let ty = self.ty(ptr).with_elem(elem);
        let mut v = self.emit1(OpKind::Load { cache, evict, volatile }, &ops, ty);
        if is_bool {
            v = self.cast(v, Elem::Num(DType::I1), None, r)?;
        }
        Ok(Val::T(v))
    }

    /// Broadcasts value and mask to the pointer's shape (the pointer itself may not grow).
    pub(crate) fn ptr_val_mask(
        &mut self,
        ptr: Value,
        val: &Val,
        mask: Option<&Val>,
        r: ruff_text_size::TextRange,
    ) -> R<(Value, Value, Option<Value>)> {
        let v = self.tensor_of(val, r)?;
        if !self.is_block(ptr) {
            if self.is_block(v) {
                return Err(self.err(r, "the value cannot be a block when the pointer is a scalar"));
            }
            let m = match mask {
                Some(m) => Some(self.mask_arg(m, ptr, r)?),
                None => None,
            };
            return Ok((ptr, v, m));
        }
        let ps = self.shape(ptr);
        let (p2, v2) = self.broadcast_pair(ptr, v, r)?;
        if self.shape(p2) != ps {
            return Err(self.err(
                r,
                format!(
                    "the value has shape {} which is larger than the pointer block {}",
                    type_str(self.ty(v)),
                    type_str(self.ty(ptr))
                ),
            ));
        }
        let m = match mask {
            Some(m) => Some(self.mask_arg(m, ptr, r)?),
            None => None,
        };
        Ok((p2, v2, m))
    }

    pub(super) fn store(&mut self, args: Args) -> R<Val> {
        let b =
            self.bind(&args, &["pointer", "value", "mask=", "boundary_check=", "cache_modifier=", "eviction_policy="])?;
        let cache = self.cache_modifier(&b, 4, false)?;
        let evict = self.eviction(&b, 5)?;
        if let Val::BlockPtr(bp) = b.val(0) {
            if let Some(a) = b.opt(2) {
                return Err(self.err(a.r, "`mask` cannot be used with a block pointer (use boundary_check)"));
            }
            let (ptr, mask, _) = self.block_ptr_access(&bp, b.opt(3).map(|a| &a.v), None, args.r)?;
            return self.store_core(ptr, &b.val(1), mask.map(Val::T).as_ref(), (cache, evict), b.range(1), args.r);
        }
        let ptr = self.ptr_arg(&b.val(0), b.range(0), "tl.store")?;
        if b.opt(3).is_some_and(|a| !matches!(&a.v, Val::Tuple(t) if t.is_empty())) {
            return Err(self.err(args.r, "boundary_check applies to block pointers (tl.make_block_ptr)"));
        }
        let mask = b.opt(2).map(|a| a.v.clone());
        self.store_core(ptr, &b.val(1), mask.as_ref(), (cache, evict), b.range(1), args.r)
    }

    /// A plain masked store (block pointers and descriptors end up here too).
    pub(crate) fn emit_store_values(&mut self, ptr: Value, value: &Val, mask: Option<&Val>, r: TextRange) -> R<Val> {
        self.store_core(ptr, value, mask, (CacheModifier::None, EvictionPolicy::Normal), r, r)
    }

    fn store_core(
        &mut self,
        ptr: Value,
        value: &Val,
        mask: Option<&Val>,
        (cache, evict): (CacheModifier, EvictionPolicy),
        value_r: TextRange,
        r: TextRange,
    ) -> R<Val> {
        let (mut ptr, v, m) = self.ptr_val_mask(ptr, value, mask, r)?;
        let pointee = self.elem(ptr).pointee().unwrap_or(DType::F32);
        let mut v = self.cast(v, Elem::Num(pointee), None, value_r)?;
        if pointee == DType::I1 {
            ptr = self.bool_ptr_as_i8(ptr);
            v = self.cast(v, Elem::Num(DType::I8), None, value_r)?;
        }
        let mut ops = vec![ptr, v];
        ops.extend(m);
        self.emit(OpKind::Store { cache, evict }, &ops, &[]);
        Ok(Val::none())
    }
}
