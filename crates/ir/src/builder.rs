//! A cursor for building ops into a block, used by the front end and by passes.

use crate::func::{Block, Function, Op, Value};
use crate::loc::Loc;
use crate::ops::{BinaryOp, Const, OpKind};
use crate::types::Type;

/// Inserts new ops at the end of `block` (or before `before`), all with location `loc`.
pub struct Builder<'f> {
    pub func: &'f mut Function,
    pub block: Block,
    /// When set, ops go before this op instead of at the end of the block.
    pub before: Option<Op>,
    pub loc: Loc,
}

impl<'f> Builder<'f> {
    /// A builder appending to the end of `block`.
    pub fn at_end(func: &'f mut Function, block: Block) -> Builder<'f> {
        Builder { func, block, before: None, loc: Loc::UNKNOWN }
    }

    /// A builder inserting before `op`.
    pub fn before(func: &'f mut Function, op: Op) -> Builder<'f> {
        let block = func.ops[op].parent.expect("builder before a detached op");
        Builder { func, block, before: Some(op), loc: Loc::UNKNOWN }
    }

    /// Creates and inserts an op; returns it.
    pub fn op(&mut self, kind: OpKind, operands: &[Value], result_types: &[Type]) -> Op {
        let op = self.func.new_op(kind, operands, result_types, self.loc);
        match self.before {
            Some(b) => self.func.insert_op_before(b, op),
            None => self.func.append_op(self.block, op),
        }
        op
    }

    /// Creates and inserts an op with exactly one result; returns the result.
    pub fn op1(&mut self, kind: OpKind, operands: &[Value], result_type: Type) -> Value {
        let op = self.op(kind, operands, &[result_type]);
        self.func.ops[op].results[0]
    }

    pub fn constant(&mut self, c: Const, ty: Type) -> Value {
        self.op1(OpKind::Constant(c), &[], ty)
    }

    /// A binary op whose result has the type of `a`.
    pub fn binary(&mut self, op: BinaryOp, a: Value, b: Value) -> Value {
        let ty = self.func.ty(a).clone();
        self.op1(OpKind::Binary(op), &[a, b], ty)
    }

    pub fn ty(&self, v: Value) -> &Type {
        self.func.ty(v)
    }
}
