//! Atomic read-modify-write and compare-and-swap.

use super::super::call::Args;
use super::super::emit::type_str;
use super::super::{FnLowering, Val, R};
use crate::value::{dtype_name, ConstValue};
use ruff_text_size::TextRange;
use trident_core::DType;
use trident_ir::{BinaryOp, CastKind, Elem, MemScope, MemSem, OpKind, RmwOp, Rounding, Value};

impl<'c, 'a> FnLowering<'c, 'a> {
    fn sem_scope(&self, sem: &Val, scope: &Val, r: TextRange) -> R<(MemSem, MemScope)> {
        let s = match sem {
            Val::C(ConstValue::None) => MemSem::AcqRel,
            Val::C(ConstValue::Str(s)) => match s.as_str() {
                "acquire" => MemSem::Acquire,
                "release" => MemSem::Release,
                "acq_rel" => MemSem::AcqRel,
                "relaxed" => MemSem::Relaxed,
                _ => {
                    return Err(self.err(
                        r,
                        format!("memory semantic {s:?} not supported; use acquire, release, acq_rel or relaxed"),
                    ))
                }
            },
            _ => return Err(self.err(r, "sem must be a string")),
        };
        let sc = match scope {
            Val::C(ConstValue::None) => MemScope::Gpu,
            Val::C(ConstValue::Str(s)) => match s.as_str() {
                "gpu" => MemScope::Gpu,
                "cta" => MemScope::Cta,
                "sys" => MemScope::Sys,
                _ => return Err(self.err(r, format!("scope {s:?} not supported; use gpu, cta or sys"))),
            },
            _ => return Err(self.err(r, "scope must be a string")),
        };
        Ok((s, sc))
    }

    fn rmw(&mut self, op: RmwOp, sem: MemSem, scope: MemScope, ptr: Value, v: Value, mask: Option<Value>) -> Value {
        let ty = self.ty(v).clone();
        let mut ops = vec![ptr, v];
        ops.extend(mask);
        self.emit1(OpKind::AtomicRmw { op, sem, scope }, &ops, ty)
    }

    fn bitcast_ptr(&mut self, p: Value, to: DType) -> Value {
        let ty = self.ty(p).with_elem(Elem::ptr(to));
        self.emit1(OpKind::Cast { kind: CastKind::Bitcast, rounding: Rounding::Rtne }, &[p], ty)
    }

    pub(super) fn atomic_rmw(&mut self, name: &str, args: Args) -> R<Val> {
        let op = match name {
            "atomic_add" => RmwOp::Add,
            "atomic_max" => RmwOp::Max,
            "atomic_min" => RmwOp::Min,
            "atomic_and" => RmwOp::And,
            "atomic_or" => RmwOp::Or,
            "atomic_xor" => RmwOp::Xor,
            "atomic_xchg" => RmwOp::Xchg,
            _ => return Err(self.err(args.r, format!("`tl.{name}` is not supported by Trident"))),
        };
        let b = self.bind(&args, &["pointer", "val", "mask=", "sem=", "scope="])?;
        let ptr = self.ptr_arg(&b.val(0), b.range(0), &args.name)?;
        let (sem, scope) = self.sem_scope(&b.val(3), &b.val(4), args.r)?;
        let mask = b.opt(2).map(|a| a.v.clone());
        let (ptr, v, m) = self.ptr_val_mask(ptr, &b.val(1), mask.as_ref(), args.r)?;
        let elem = self.elem(ptr).pointee().unwrap_or(DType::F32);
        let short = &name[7..];
        if (elem == DType::F16 || elem == DType::BF16) && op != RmwOp::Add {
            return Err(self.err(args.r, format!("atomic_{short} does not support {}", dtype_name(elem))));
        }
        if elem == DType::I16 || elem == DType::U16 || elem.bits() < 16 {
            return Err(self.err(args.r, format!("atomic_{short} does not support {}", dtype_name(elem))));
        }
        let v = self.cast(v, Elem::Num(elem), None, b.range(1))?;
        if elem.is_float() && matches!(op, RmwOp::And | RmwOp::Or | RmwOp::Xor) {
            return Err(self.err(args.r, format!("atomic_{short} needs integers, got {}", dtype_name(elem))));
        }
        if elem.is_float() && matches!(op, RmwOp::Max | RmwOp::Min) {
            return self.float_atomic_minmax(op == RmwOp::Max, elem, sem, scope, ptr, v, m, args.r);
        }
        Ok(Val::T(self.rmw(op, sem, scope, ptr, v, m)))
    }

    /// Float atomic max/min as Triton does it: signed integer max (min) where the value is
    /// non-negative, unsigned integer min (max) of the bits where it is negative.
    #[allow(clippy::too_many_arguments)]
    fn float_atomic_minmax(
        &mut self,
        is_max: bool,
        elem: DType,
        sem: MemSem,
        scope: MemScope,
        ptr: Value,
        v: Value,
        m: Option<Value>,
        r: TextRange,
    ) -> R<Val> {
        let (it, ut) = match elem {
            DType::F32 => (DType::I32, DType::U32),
            DType::F64 => (DType::I64, DType::U64),
            _ => {
                return Err(self.err(
                    r,
                    format!("atomic_{} not supported for {}", if is_max { "max" } else { "min" }, dtype_name(elem)),
                ))
            }
        };
        let iv = self.bitcast(v, Elem::Num(it), r)?;
        let uv = self.bitcast(v, Elem::Num(ut), r)?;
        let ip = self.bitcast_ptr(ptr, it);
        let up = self.bitcast_ptr(ptr, ut);
        // Sign bit: shift the unsigned bits right by width-1.
        let sh = self.const_value(&ConstValue::Int(elem.bits() as i128 - 1), ut, r)?;
        let sh = self.splat(sh, &self.shape(uv));
        let ty = self.ty(uv).clone();
        let sb = self.emit1(OpKind::Binary(BinaryOp::Shr), &[uv, sh], ty);
        let neg = self.cast(sb, Elem::Num(DType::I1), None, r)?;
        let bty = self.ty(neg).clone();
        let pos = self.emit1(OpKind::Unary(trident_ir::UnaryOp::Not), &[neg], bty.clone());
        let (mp, mn) = match m {
            Some(m) => (
                self.emit1(OpKind::Binary(BinaryOp::And), &[m, pos], bty.clone()),
                self.emit1(OpKind::Binary(BinaryOp::And), &[m, neg], bty.clone()),
            ),
            None => (pos, neg),
        };
        let (pos_op, neg_op) = if is_max { (RmwOp::Max, RmwOp::Min) } else { (RmwOp::Min, RmwOp::Max) };
        let pr = self.rmw(pos_op, sem, scope, ip, iv, Some(mp));
        let nr = self.rmw(neg_op, sem, scope, up, uv, Some(mn));
        let nr_i = self.bitcast(nr, Elem::Num(it), r)?;
        let ity = self.ty(pr).clone();
        let sel = self.emit1(OpKind::Select, &[pos, pr, nr_i], ity);
        Ok(Val::T(self.bitcast(sel, Elem::Num(elem), r)?))
    }

    pub(super) fn atomic_cas(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["pointer", "cmp", "val", "sem=", "scope="])?;
        let ptr = self.ptr_arg(&b.val(0), b.range(0), "tl.atomic_cas")?;
        let (sem, scope) = self.sem_scope(&b.val(3), &b.val(4), args.r)?;
        let elem = self.elem(ptr).pointee().unwrap_or(DType::F32);
        if ![16, 32, 64].contains(&elem.bits()) {
            return Err(self
                .err(args.r, format!("atomic_cas only supports 16, 32 or 64-bit elements, not {}", dtype_name(elem))));
        }
        let (ptr, c, _) = self.ptr_val_mask(ptr, &b.val(1), None, b.range(1))?;
        let (ptr, v, _) = self.ptr_val_mask(ptr, &b.val(2), None, b.range(2))?;
        let c = self.cast(c, Elem::Num(elem), None, b.range(1))?;
        let v = self.cast(v, Elem::Num(elem), None, b.range(2))?;
        let s = self.shape(ptr);
        let c = self.broadcast_to(c, &s, b.range(1))?;
        let v = self.broadcast_to(v, &s, b.range(2))?;
        let ty = self.ty(v).clone();
        if self.ty(c) != &ty {
            return Err(self
                .err(args.r, format!("atomic_cas operands disagree: {} and {}", type_str(self.ty(c)), type_str(&ty))));
        }
        Ok(Val::T(self.emit1(OpKind::AtomicCas { sem, scope }, &[ptr, c, v], ty)))
    }
}
