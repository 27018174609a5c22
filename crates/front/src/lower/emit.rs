//! Emitting ops into the current block, and type queries on IR values.

use super::FnLowering;
use crate::value::dtype_name;
use trident_core::DType;
use trident_ir::{Const, Elem, Op, OpKind, Type, Value};

/// Triton's way of writing a type in messages: `fp16`, `fp32[64, 64]`, `pointer<fp16>[128]`.
pub(crate) fn type_str(t: &Type) -> String {
    let e = match t.elem() {
        Elem::Num(d) => dtype_name(d).to_string(),
        Elem::Ptr { pointee, .. } => format!("pointer<{}>", dtype_name(pointee)),
    };
    match t {
        Type::Scalar(_) => e,
        Type::Tensor { shape, .. } => {
            let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            format!("{e}[{}]", dims.join(", "))
        }
    }
}

pub(crate) fn shape_str(s: &[u32]) -> String {
    let dims: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", dims.join(", "))
}

impl FnLowering<'_, '_> {
    /// The location new ops get.
    pub(crate) fn cur_loc(&self) -> trident_ir::Loc {
        match &self.pin {
            Some((l, _, _)) => *l,
            None => self.loc,
        }
    }

    /// Appends an op to the current block.
    pub(crate) fn emit(&mut self, kind: OpKind, operands: &[Value], results: &[Type]) -> Op {
        let loc = self.cur_loc();
        let op = self.f.new_op(kind, operands, results, loc);
        self.f.append_op(self.block, op);
        op
    }

    /// Appends an op with one result; returns the result.
    pub(crate) fn emit1(&mut self, kind: OpKind, operands: &[Value], result: Type) -> Value {
        let op = self.emit(kind, operands, &[result]);
        self.f.ops[op].results[0]
    }

    pub(crate) fn ty(&self, v: Value) -> &Type {
        self.f.ty(v)
    }

    pub(crate) fn elem(&self, v: Value) -> Elem {
        self.f.ty(v).elem()
    }

    pub(crate) fn shape(&self, v: Value) -> Vec<u32> {
        self.f.ty(v).shape().to_vec()
    }

    pub(crate) fn is_block(&self, v: Value) -> bool {
        self.f.ty(v).is_tensor()
    }

    /// A constant of `ty` (a scalar, or a splat when `ty` is a tensor).
    pub(crate) fn constant(&mut self, c: Const, ty: Type) -> Value {
        self.emit1(OpKind::Constant(c), &[], ty)
    }

    pub(crate) fn const_i1(&mut self, b: bool) -> Value {
        self.constant(Const::Bool(b), Type::scalar(DType::I1))
    }

    /// A zero of `ty` (false for i1, null for pointers is not representable: pointers use int 0 cast).
    pub(crate) fn zero_of(&mut self, ty: &Type) -> Value {
        match ty.elem() {
            Elem::Num(DType::I1) => self.constant(Const::Bool(false), ty.clone()),
            Elem::Num(d) if d.is_float() => self.constant(Const::Float(0.0), ty.clone()),
            Elem::Num(_) => self.constant(Const::Int(0), ty.clone()),
            Elem::Ptr { .. } => {
                let i = self.constant(Const::Int(0), ty.with_elem(DType::I64));
                self.emit1(
                    OpKind::Cast { kind: trident_ir::CastKind::IntToPtr, rounding: trident_ir::Rounding::Rtne },
                    &[i],
                    ty.clone(),
                )
            }
        }
    }
}
