//! Triton's typing rules and the elementwise semantics built on them: implicit
//! casts and broadcasting of operands, arithmetic, comparisons, bitwise ops,
//! casts and bitcasts.
//!
//! Python numbers (constexprs, literals) are *weak*: in `x_fp16 * 2.0` the
//! `2.0` takes the tensor's type, as long as its kind (bool < int < float) is
//! not above the tensor's. Everything else, 0-d scalars from arguments
//! included, is *strong* and promotes like C.

use super::emit::{shape_str, type_str};
use super::{FnLowering, Val, R};
use crate::value::{binop, compare, dtype_name, elem_name, ConstValue, PyBinOp, PyCmp};
use ruff_text_size::TextRange;
use trident_core::DType;
use trident_ir::{BinaryOp, CastKind, CmpPred, Const, Elem, OpKind, Rounding, Type, UnaryOp, Value};

/// Triton's largest block: `TRITON_MAX_TENSOR_NUMEL`.
pub(crate) const MAX_NUMEL: u64 = 1 << 20;

#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    Bool,
    Int,
    Float,
}

pub(crate) fn kind(d: DType) -> Kind {
    if d == DType::I1 {
        Kind::Bool
    } else if d.is_float() {
        Kind::Float
    } else {
        Kind::Int
    }
}

/// Signedness as Triton sees it: `int1` counts as unsigned.
fn is_signed(d: DType) -> bool {
    d.is_signed_int()
}

/// C's usual arithmetic conversions on integers (Triton's `integer_promote_impl`).
pub(crate) fn int_promote(a: DType, b: DType) -> DType {
    let (ra, rb) = (a.bits(), b.bits());
    match (is_signed(a), is_signed(b)) {
        (x, y) if x == y => {
            if ra > rb {
                a
            } else {
                b
            }
        }
        (false, true) => {
            if ra >= rb {
                a
            } else {
                b
            }
        }
        _ => {
            if rb >= ra {
                b
            } else {
                a
            }
        }
    }
}

/// The type both operands of an arithmetic op are converted to (Triton's `computation_type_impl`).
pub(crate) fn computation_type(
    mut a: DType,
    a_weak: bool,
    mut b: DType,
    b_weak: bool,
    div_or_mod: bool,
) -> Result<DType, String> {
    use DType::*;
    if a_weak != b_weak {
        let (s, t) = if a_weak { (a, b) } else { (b, a) };
        if kind(s) <= kind(t) {
            a = t;
            b = t;
        }
    }
    if a == F64 || b == F64 {
        return Ok(F64);
    }
    if div_or_mod && (a.is_float() || b.is_float()) {
        return Ok(F32);
    }
    if a == F32 || b == F32 {
        return Ok(F32);
    }
    if a == F16 || b == F16 {
        return Ok(F16);
    }
    if a == BF16 && b == BF16 {
        return Ok(BF16);
    }
    if a == BF16 || b == BF16 {
        return Ok(F32);
    }
    if a.is_fp8() && b.is_fp8() {
        return Ok(if a == b { a } else { F16 });
    }
    if a.is_float() || b.is_float() {
        return Err(format!("unexpected types {} and {}", dtype_name(a), dtype_name(b)));
    }
    if div_or_mod && is_signed(a) != is_signed(b) {
        return Err(format!(
            "Cannot use /, // or % with {} and {} because they have different signedness; cast them to the same signedness",
            dtype_name(a),
            dtype_name(b)
        ));
    }
    Ok(int_promote(a, b))
}

/// The type a Python number gets when it becomes a tensor (Triton's `to_tensor_type`).
pub(crate) fn const_type(c: &ConstValue) -> Result<DType, String> {
    Ok(match c {
        ConstValue::Bool(_) => DType::I1,
        ConstValue::Int(v) => {
            let v = *v;
            if (-(1i128 << 31)..(1i128 << 31)).contains(&v) {
                DType::I32
            } else if ((1i128 << 31)..(1i128 << 32)).contains(&v) {
                DType::U32
            } else if (-(1i128 << 63)..(1i128 << 63)).contains(&v) {
                DType::I64
            } else if ((1i128 << 63)..(1i128 << 64)).contains(&v) {
                DType::U64
            } else {
                return Err(format!("integer {v} does not fit in 64 bits"));
            }
        }
        ConstValue::Float(x) => {
            let a = x.abs();
            let min32 = f32::MIN_POSITIVE as f64;
            let max32 = f32::MAX as f64;
            if a.is_infinite() || a == 0.0 || x.is_nan() || (min32..=max32).contains(&a) {
                DType::F32
            } else {
                DType::F64
            }
        }
        other => return Err(format!("cannot convert {} `{other}` to a tensor", other.type_name())),
    })
}

fn int_range(d: DType) -> (i128, i128) {
    if d == DType::I1 {
        return (0, 1);
    }
    let bits = d.bits();
    if d.is_signed_int() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

/// Options of [`FnLowering::binary_operands`], as Triton's `binary_op_type_checking_impl` takes them.
#[derive(Copy, Clone, Default)]
pub(crate) struct BinOpts {
    pub allow_lhs_ptr: bool,
    pub allow_rhs_ptr: bool,
    pub no_arith: bool,
    pub div_or_mod: bool,
}

impl FnLowering<'_, '_> {
    /// A scalar constant of type `d` holding the Python number `c` (errors when it cannot).
    pub(crate) fn const_value(&mut self, c: &ConstValue, d: DType, r: TextRange) -> R<Value> {
        let ty = Type::scalar(d);
        let v = match c {
            ConstValue::Bool(b) if d == DType::I1 => Const::Bool(*b),
            ConstValue::Float(x) if d.is_float() => Const::Float(*x),
            _ if d.is_float() => match c.as_f64() {
                Some(x) => Const::Float(x),
                None => return Err(self.err(r, format!("cannot make a {} from {}", dtype_name(d), c.type_name()))),
            },
            _ => {
                let i = match c {
                    ConstValue::Float(x) if *x == 0.0 => 0,
                    ConstValue::Float(_) => {
                        return Err(self.err(r, format!("cannot represent float {c} as {}", dtype_name(d))));
                    }
                    _ => c.as_int().ok_or_else(|| {
                        self.err(r, format!("cannot make a {} from {}", dtype_name(d), c.type_name()))
                    })?,
                };
                let (lo, hi) = int_range(d);
                if i < lo || i > hi {
                    if i < 0 && d.is_unsigned_int() {
                        return Err(self.err(
                            r,
                            format!("cannot combine an unsigned {} tensor with the negative scalar {i}; cast one of them explicitly", dtype_name(d)),
                        ));
                    }
                    return Err(self.err(r, format!("scalar {i} is out of range for type {}", dtype_name(d))));
                }
                if d == DType::I1 {
                    Const::Bool(i != 0)
                } else {
                    // Unsigned 64-bit values above i64::MAX are stored wrapped.
                    Const::Int(i as i64)
                }
            }
        };
        Ok(self.constant(v, ty))
    }

    /// Turns a value into an IR value: tensors as they are, Python numbers with their default type.
    pub(crate) fn tensor_of(&mut self, v: &Val, r: TextRange) -> R<Value> {
        match v {
            Val::T(x) => Ok(*x),
            Val::C(c) if c.is_number() => {
                let d = const_type(c).map_err(|m| self.err(r, m))?;
                self.const_value(c, d, r)
            }
            other => Err(self.err(r, format!("expected a tensor or a number, got {}", other.kind_name()))),
        }
    }

    /// The element type of a value taking part in arithmetic (a Python number's default type).
    fn operand_elem(&self, v: &Val, r: TextRange) -> R<(Elem, bool)> {
        match v {
            Val::T(x) => Ok((self.elem(*x), false)),
            Val::C(c) if c.is_number() => Ok((Elem::Num(const_type(c).map_err(|m| self.err(r, m))?), true)),
            other => Err(self.err(r, format!("expected a tensor or a number, got {}", other.kind_name()))),
        }
    }

    pub(crate) fn splat(&mut self, v: Value, shape: &[u32]) -> Value {
        if shape.is_empty() {
            return v;
        }
        let ty = Type::tensor(shape, self.elem(v));
        self.emit1(OpKind::Splat, &[v], ty)
    }

    /// Broadcasts `v` to `shape` (a scalar splats; a block must have the same rank).
    pub(crate) fn broadcast_to(&mut self, v: Value, shape: &[u32], r: TextRange) -> R<Value> {
        if !self.is_block(v) {
            return Ok(self.splat(v, shape));
        }
        let src = self.shape(v);
        if src.len() != shape.len() {
            return Err(
                self.err(r, format!("cannot broadcast, rank mismatch: {} and {}", shape_str(&src), shape_str(shape)))
            );
        }
        if src == shape {
            return Ok(v);
        }
        for (i, (&s, &d)) in src.iter().zip(shape).enumerate() {
            if s != d && s != 1 {
                return Err(self.err(
                    r,
                    format!(
                        "cannot broadcast shape {} to {}: dimension {i} has size {s}, expected {d} or 1",
                        shape_str(&src),
                        shape_str(shape)
                    ),
                ));
            }
        }
        self.check_numel(shape, r)?;
        let ty = Type::tensor(shape, self.elem(v));
        Ok(self.emit1(OpKind::Broadcast, &[v], ty))
    }

    /// Refuses a block shape of more than Triton's 2^20 elements (`r[:, None] + c[None, :]`
    /// can make one from two small ones): checked wherever shapes grow, before anything is
    /// allocated for it.
    pub(crate) fn check_numel(&self, shape: &[u32], r: TextRange) -> R<()> {
        let numel = shape.iter().fold(1u64, |n, &d| n.saturating_mul(d as u64));
        // Inside Trident's own implementation of a builtin (a prelude function) the
        // intermediates are ours: the limit is on what the kernel writes.
        if numel > MAX_NUMEL && self.pin.is_none() {
            return Err(self.err(
                r,
                format!(
                    "a block of shape {} has {numel} elements, more than Triton's limit of {MAX_NUMEL}",
                    shape_str(shape)
                ),
            ));
        }
        Ok(())
    }

    /// Makes two values the same shape: scalars splat, lower ranks get leading 1s, 1s broadcast.
    pub(crate) fn broadcast_pair(&mut self, a: Value, b: Value, r: TextRange) -> R<(Value, Value)> {
        let (ab, bb) = (self.is_block(a), self.is_block(b));
        match (ab, bb) {
            (false, false) => Ok((a, b)),
            (true, false) => {
                let s = self.shape(a);
                Ok((a, self.splat(b, &s)))
            }
            (false, true) => {
                let s = self.shape(b);
                Ok((self.splat(a, &s), b))
            }
            (true, true) => {
                let (mut a, mut b) = (a, b);
                let (mut sa, mut sb) = (self.shape(a), self.shape(b));
                while sa.len() < sb.len() {
                    a = self.expand_dims(a, 0);
                    sa = self.shape(a);
                }
                while sb.len() < sa.len() {
                    b = self.expand_dims(b, 0);
                    sb = self.shape(b);
                }
                let mut out = vec![];
                for (i, (&x, &y)) in sa.iter().zip(&sb).enumerate() {
                    if x == 1 {
                        out.push(y);
                    } else if y == 1 || y == x {
                        out.push(x);
                    } else {
                        return Err(self.err(
                            r,
                            format!(
                                "incompatible shapes {} and {}: dimension {i} is {x} on the left and {y} on the right",
                                shape_str(&self.shape(a)),
                                shape_str(&self.shape(b))
                            ),
                        ));
                    }
                }
                self.check_numel(&out, r)?;
                if sa != out {
                    a = self.emit1(OpKind::Broadcast, &[a], Type::tensor(&out, self.elem(a)));
                }
                if sb != out {
                    b = self.emit1(OpKind::Broadcast, &[b], Type::tensor(&out, self.elem(b)));
                }
                Ok((a, b))
            }
        }
    }

    /// Inserts a size-1 dimension (a scalar becomes a 1-element block).
    pub(crate) fn expand_dims(&mut self, v: Value, axis: u32) -> Value {
        if !self.is_block(v) {
            return self.splat(v, &[1]);
        }
        let mut s = self.shape(v);
        s.insert(axis as usize, 1);
        let ty = Type::tensor(&s, self.elem(v));
        self.emit1(OpKind::ExpandDims { axis }, &[v], ty)
    }

    /// Value conversion to `to` (Triton's `cast`), keeping the shape.
    pub(crate) fn cast(&mut self, v: Value, to: Elem, rounding: Option<Rounding>, r: TextRange) -> R<Value> {
        let from = self.elem(v);
        if from == to {
            if rounding.is_some() {
                return Err(self.err(r, "fp_downcast_rounding is only allowed on a narrowing float conversion"));
            }
            return Ok(v);
        }
        let ty = self.ty(v).with_elem(to);
        let mk = |kind| OpKind::Cast { kind, rounding: rounding.unwrap_or(Rounding::Rtne) };
        match (from, to) {
            (Elem::Num(a), Elem::Num(b)) => {
                let narrowing = a.is_float() && b.is_float() && b.bits() < a.bits();
                if rounding.is_some() && !narrowing {
                    return Err(self.err(
                        r,
                        format!(
                            "fp_downcast_rounding is only allowed on a narrowing float conversion, not {} to {}",
                            dtype_name(a),
                            dtype_name(b)
                        ),
                    ));
                }
                Ok(self.emit1(mk(CastKind::Convert), &[v], ty))
            }
            (Elem::Ptr { .. }, Elem::Num(b)) if b == DType::I64 || b == DType::U64 => {
                Ok(self.emit1(mk(CastKind::PtrToInt), &[v], ty))
            }
            (Elem::Ptr { .. }, Elem::Num(DType::I1)) => {
                let i = self.emit1(mk(CastKind::PtrToInt), &[v], self.ty(v).with_elem(DType::I64));
                Ok(self.emit1(mk(CastKind::Convert), &[i], ty))
            }
            (Elem::Num(a), Elem::Ptr { .. }) if a.is_int() => Ok(self.emit1(mk(CastKind::IntToPtr), &[v], ty)),
            (Elem::Ptr { .. }, Elem::Ptr { .. }) => Ok(self.emit1(mk(CastKind::Bitcast), &[v], ty)),
            _ => Err(self.err(r, format!("cannot cast {} to {}", type_str(self.ty(v)), elem_name(to)))),
        }
    }

    /// Reinterprets the bits (Triton's `bitcast`).
    pub(crate) fn bitcast(&mut self, v: Value, to: Elem, r: TextRange) -> R<Value> {
        let from = self.elem(v);
        if from == to {
            return Ok(v);
        }
        if from.is_ptr() || to.is_ptr() {
            return self.cast(v, to, None, r);
        }
        let (Elem::Num(a), Elem::Num(b)) = (from, to) else { unreachable!() };
        if a.bits() != b.bits() {
            return Err(self.err(
                r,
                format!(
                    "cannot bitcast {} ({} bits) to {} ({} bits)",
                    dtype_name(a),
                    a.bits(),
                    dtype_name(b),
                    b.bits()
                ),
            ));
        }
        let ty = self.ty(v).with_elem(to);
        Ok(self.emit1(OpKind::Cast { kind: CastKind::Bitcast, rounding: Rounding::Rtne }, &[v], ty))
    }

    /// Casts `v` (a tensor, or a Python number made a scalar constant) to `d`.
    fn as_computation_type(&mut self, v: &Val, d: DType, r: TextRange) -> R<Value> {
        match v {
            Val::C(c) => self.const_value(c, d, r),
            Val::T(x) => self.cast(*x, Elem::Num(d), None, r),
            other => Err(self.err(r, format!("expected a tensor or a number, got {}", other.kind_name()))),
        }
    }

    /// Implicit casts and broadcasting of the operands of a binary op.
    pub(crate) fn binary_operands(
        &mut self,
        a: &Val,
        b: &Val,
        o: BinOpts,
        r: TextRange,
        sym: &str,
    ) -> R<(Value, Value)> {
        let (ta, wa) = self.operand_elem(a, r)?;
        let (tb, wb) = self.operand_elem(b, r)?;
        let incompatible = |me: &Self| {
            me.err(r, format!("invalid operands of type {} and {} for `{sym}`", me.val_type_str(a), me.val_type_str(b)))
        };
        for (x, y, allow) in [(ta, tb, o.allow_lhs_ptr), (tb, ta, o.allow_rhs_ptr)] {
            if x.is_ptr() && (!allow || (y.is_ptr() && x != y) || y.is_float()) {
                return Err(incompatible(self));
            }
        }
        let (x, y) = if !o.no_arith && !ta.is_ptr() && !tb.is_ptr() {
            let (Elem::Num(da), Elem::Num(db)) = (ta, tb) else { unreachable!() };
            let t = computation_type(da, wa, db, wb, o.div_or_mod).map_err(|m| self.err(r, m))?;
            (self.as_computation_type(a, t, r)?, self.as_computation_type(b, t, r)?)
        } else {
            (self.tensor_of(a, r)?, self.tensor_of(b, r)?)
        };
        self.broadcast_pair(x, y, r)
    }

    /// A value's type for messages.
    pub(crate) fn val_type_str(&self, v: &Val) -> String {
        match v {
            Val::T(x) => type_str(self.ty(*x)),
            Val::C(c) => format!("{} ({c})", c.type_name()),
            other => other.kind_name(),
        }
    }

    /// Bitwise ops: both operands integers, promoted to a common integer type.
    fn bitwise_operands(&mut self, a: &Val, b: &Val, r: TextRange, sym: &str) -> R<(Value, Value)> {
        let (x, y) = self.binary_operands(a, b, BinOpts::default(), r, sym)?;
        let (ex, ey) = (self.elem(x), self.elem(y));
        let (Elem::Num(dx), Elem::Num(dy)) = (ex, ey) else { unreachable!() };
        if !dx.is_int() || !dy.is_int() {
            return Err(self.err(
                r,
                format!(
                    "invalid operands of type {} and {} for `{sym}`: integers required",
                    self.val_type_str(a),
                    self.val_type_str(b)
                ),
            ));
        }
        let t = int_promote(dx, dy);
        let x = self.cast(x, Elem::Num(t), None, r)?;
        let y = self.cast(y, Elem::Num(t), None, r)?;
        Ok((x, y))
    }

    fn bin(&mut self, op: BinaryOp, x: Value, y: Value) -> Value {
        let ty = self.ty(x).clone();
        self.emit1(OpKind::Binary(op), &[x, y], ty)
    }

    /// `a op b` for the arithmetic and bitwise operators.
    pub(crate) fn arith(&mut self, op: PyBinOp, a: &Val, b: &Val, r: TextRange) -> R<Val> {
        if let (Val::C(x), Val::C(y)) = (a, b) {
            return binop(op, x, y).map(Val::C).map_err(|m| self.err(r, m));
        }
        if let (Val::Tuple(_), _) | (_, Val::Tuple(_)) = (a, b) {
            return self.tuple_arith(op, a, b, r);
        }
        let sym = op.symbol();
        use PyBinOp::*;
        let v = match op {
            Add => {
                let (x, y) = self.binary_operands(
                    a,
                    b,
                    BinOpts { allow_lhs_ptr: true, allow_rhs_ptr: true, ..Default::default() },
                    r,
                    sym,
                )?;
                let (ex, ey) = (self.elem(x), self.elem(y));
                if ex.is_ptr() && ey.is_ptr() {
                    return Err(self.err(r, "cannot add pointers together"));
                }
                if ex.is_ptr() || ey.is_ptr() {
                    let (p, off) = if ex.is_ptr() { (x, y) } else { (y, x) };
                    self.add_ptr(p, off, r)?
                } else {
                    self.bin(BinaryOp::Add, x, y)
                }
            }
            Sub => {
                let (x, y) =
                    self.binary_operands(a, b, BinOpts { allow_lhs_ptr: true, ..Default::default() }, r, sym)?;
                if self.elem(x).is_ptr() {
                    let n = self.negate(y);
                    self.add_ptr(x, n, r)?
                } else {
                    self.bin(BinaryOp::Sub, x, y)
                }
            }
            Mul => {
                let (x, y) = self.binary_operands(a, b, BinOpts::default(), r, sym)?;
                self.bin(BinaryOp::Mul, x, y)
            }
            Div => {
                let (x, y) = self.binary_operands(a, b, BinOpts { div_or_mod: true, ..Default::default() }, r, sym)?;
                let (Elem::Num(dx), Elem::Num(dy)) = (self.elem(x), self.elem(y)) else { unreachable!() };
                let (x, y) = match (dx.is_float(), dy.is_float()) {
                    (true, false) => (x, self.cast(y, Elem::Num(dx), None, r)?),
                    (false, true) => (self.cast(x, Elem::Num(dy), None, r)?, y),
                    (false, false) => {
                        (self.cast(x, Elem::Num(DType::F32), None, r)?, self.cast(y, Elem::Num(DType::F32), None, r)?)
                    }
                    (true, true) => {
                        if dx.mantissa_bits() > dy.mantissa_bits() {
                            (x, self.cast(y, Elem::Num(dx), None, r)?)
                        } else {
                            (self.cast(x, Elem::Num(dy), None, r)?, y)
                        }
                    }
                };
                self.bin(BinaryOp::Div, x, y)
            }
            FloorDiv => {
                let (x, y) = self.binary_operands(a, b, BinOpts { div_or_mod: true, ..Default::default() }, r, sym)?;
                if !self.elem(x).is_int() {
                    return Err(self.err(
                        r,
                        format!(
                            "`//` needs integer operands; got {} (use tl.floor(a / b) for floats)",
                            type_str(self.ty(x))
                        ),
                    ));
                }
                self.bin(BinaryOp::Div, x, y)
            }
            Mod => {
                let (x, y) = self.binary_operands(a, b, BinOpts { div_or_mod: true, ..Default::default() }, r, sym)?;
                self.bin(BinaryOp::Rem, x, y)
            }
            BitAnd | BitOr | BitXor => {
                let (x, y) = self.bitwise_operands(a, b, r, sym)?;
                let o = match op {
                    BitAnd => BinaryOp::And,
                    BitOr => BinaryOp::Or,
                    _ => BinaryOp::Xor,
                };
                self.bin(o, x, y)
            }
            LShift => {
                let (x, y) = self.bitwise_operands(a, b, r, sym)?;
                self.bin(BinaryOp::Shl, x, y)
            }
            RShift => {
                // Triton picks arithmetic or logical shift from the left operand's own signedness,
                // before promotion; the IR takes it from the operand type, so reinterpret if they differ.
                let lhs_signed = match a {
                    Val::T(x) => self.elem(*x).num().is_some_and(|d| d.is_signed_int()),
                    _ => self.operand_elem(a, r)?.0.num().is_some_and(|d| d.is_signed_int()),
                };
                let (x, y) = self.bitwise_operands(a, b, r, sym)?;
                let d = self.elem(x).num().unwrap_or(DType::I32);
                if d.is_signed_int() != lhs_signed && d != DType::I1 {
                    let alt = Elem::Num(d.with_signedness(lhs_signed));
                    let xs = self.bitcast(x, alt, r)?;
                    let ys = self.bitcast(y, alt, r)?;
                    let s = self.bin(BinaryOp::Shr, xs, ys);
                    self.bitcast(s, Elem::Num(d), r)?
                } else {
                    self.bin(BinaryOp::Shr, x, y)
                }
            }
            Pow => {
                return Err(self.err(r, "`**` is not supported on tensors; use libdevice.pow or multiply explicitly"));
            }
        };
        Ok(Val::T(v))
    }

    fn tuple_arith(&mut self, op: PyBinOp, a: &Val, b: &Val, r: TextRange) -> R<Val> {
        match (op, a, b) {
            (PyBinOp::Add, Val::Tuple(x), Val::Tuple(y)) => Ok(Val::Tuple(x.iter().chain(y).cloned().collect())),
            (PyBinOp::Mul, Val::Tuple(x), Val::C(n)) | (PyBinOp::Mul, Val::C(n), Val::Tuple(x))
                if n.as_int().is_some() =>
            {
                let n = n.as_int().unwrap_or(0).clamp(0, 1 << 16) as usize;
                Ok(Val::Tuple(x.iter().cloned().cycle().take(x.len() * n).collect()))
            }
            _ => Err(self.err(
                r,
                format!("unsupported operand types for {}: {} and {}", op.symbol(), a.kind_name(), b.kind_name()),
            )),
        }
    }

    /// `ptr + offset` in elements; unsigned offsets narrower than 64 bits are zero-extended first.
    pub(crate) fn add_ptr(&mut self, p: Value, off: Value, r: TextRange) -> R<Value> {
        let off = match self.elem(off) {
            Elem::Num(d) if d.is_int() => {
                if (d.is_unsigned_int() || d == DType::I1) && d.bits() < 64 {
                    self.cast(off, Elem::Num(DType::I64), None, r)?
                } else {
                    off
                }
            }
            e => return Err(self.err(r, format!("pointer offsets must be integers, not {}", elem_name(e)))),
        };
        let (p, off) = self.broadcast_pair(p, off, r)?;
        let ty = self.ty(p).clone();
        Ok(self.emit1(OpKind::AddPtr, &[p, off], ty))
    }

    /// `-x` on an IR value (`0 - x` for integers, as Triton).
    pub(crate) fn negate(&mut self, x: Value) -> Value {
        if self.elem(x).is_float() {
            let ty = self.ty(x).clone();
            return self.emit1(OpKind::Unary(UnaryOp::Neg), &[x], ty);
        }
        let ty = self.ty(x).clone();
        let z = self.zero_of(&ty);
        self.bin(BinaryOp::Sub, z, x)
    }

    pub(crate) fn neg(&mut self, a: &Val, r: TextRange) -> R<Val> {
        match a {
            Val::C(c) => binop(PyBinOp::Sub, &ConstValue::Int(0), c).map(Val::C).map_err(|m| self.err(r, m)),
            Val::T(x) => {
                if self.elem(*x).is_ptr() {
                    return Err(self.err(r, format!("wrong type argument to unary minus ({})", type_str(self.ty(*x)))));
                }
                Ok(Val::T(self.negate(*x)))
            }
            other => Err(self.err(r, format!("bad operand for unary -: {}", other.kind_name()))),
        }
    }

    pub(crate) fn invert(&mut self, a: &Val, r: TextRange) -> R<Val> {
        match a {
            Val::C(ConstValue::Bool(b)) => Ok(Val::int(!(*b as i128))),
            Val::C(ConstValue::Int(i)) => Ok(Val::int(!*i)),
            Val::T(x) => {
                if !self.elem(*x).is_int() {
                    return Err(self.err(r, format!("wrong type argument to unary invert ({})", type_str(self.ty(*x)))));
                }
                let ty = self.ty(*x).clone();
                Ok(Val::T(self.emit1(OpKind::Unary(UnaryOp::Not), &[*x], ty)))
            }
            other => Err(self.err(r, format!("bad operand for unary ~: {}", other.kind_name()))),
        }
    }

    /// An IR value as i1, the way Triton's logical ops do it (a bitcast: only 1-bit types pass).
    fn as_bool_bits(&mut self, x: Value, r: TextRange) -> R<Value> {
        if self.elem(x) == Elem::Num(DType::I1) {
            return Ok(x);
        }
        self.bitcast(x, Elem::Num(DType::I1), r).map_err(|_| {
            self.err(
                r,
                format!("logical operators need boolean operands; got {} (compare with 0 first)", type_str(self.ty(x))),
            )
        })
    }

    pub(crate) fn not(&mut self, a: &Val, r: TextRange) -> R<Val> {
        match a {
            Val::T(x) => {
                let b = self.as_bool_bits(*x, r)?;
                let ty = self.ty(b).clone();
                Ok(Val::T(self.emit1(OpKind::Unary(UnaryOp::Not), &[b], ty)))
            }
            other => match other.as_const() {
                Some(c) => Ok(Val::C(ConstValue::Bool(!c.truthy().unwrap_or(true)))),
                None => Ok(Val::C(ConstValue::Bool(false))),
            },
        }
    }

    /// `a and b` / `a or b` on tensors (both sides evaluated; constants were short-circuited before).
    pub(crate) fn logical(&mut self, is_and: bool, a: &Val, b: &Val, r: TextRange) -> R<Val> {
        let x = self.tensor_of(a, r)?;
        let y = self.tensor_of(b, r)?;
        let x = self.as_bool_bits(x, r)?;
        let y = self.as_bool_bits(y, r)?;
        let (x, y) = self.broadcast_pair(x, y, r)?;
        Ok(Val::T(self.bin(if is_and { BinaryOp::And } else { BinaryOp::Or }, x, y)))
    }

    /// Comparisons; Python semantics on two constants.
    pub(crate) fn compare(&mut self, op: PyCmp, a: &Val, b: &Val, r: TextRange) -> R<Val> {
        if let (Some(x), Some(y)) = (a.as_const(), b.as_const()) {
            return compare(op, &x, &y).map(|v| Val::C(ConstValue::Bool(v))).map_err(|m| self.err(r, m));
        }
        let (x, y) = self.binary_operands(a, b, BinOpts::default(), r, op.symbol())?;
        let pred = match op {
            PyCmp::Eq => CmpPred::Eq,
            PyCmp::Ne => CmpPred::Ne,
            PyCmp::Lt => CmpPred::Lt,
            PyCmp::Le => CmpPred::Le,
            PyCmp::Gt => CmpPred::Gt,
            PyCmp::Ge => CmpPred::Ge,
        };
        let ty = self.ty(x).with_elem(DType::I1);
        Ok(Val::T(self.emit1(OpKind::Cmp(pred), &[x, y], ty)))
    }

    /// `tl.minimum` / `tl.maximum`.
    pub(crate) fn min_max(&mut self, is_max: bool, a: &Val, b: &Val, propagate_nan: bool, r: TextRange) -> R<Val> {
        let (x, y) = self.binary_operands(a, b, BinOpts::default(), r, if is_max { "maximum" } else { "minimum" })?;
        let op = match (is_max, self.elem(x).is_float() && propagate_nan) {
            (true, false) => BinaryOp::Max,
            (true, true) => BinaryOp::MaxNan,
            (false, false) => BinaryOp::Min,
            (false, true) => BinaryOp::MinNan,
        };
        Ok(Val::T(self.bin(op, x, y)))
    }

    /// `tl.where(cond, x, y)`.
    pub(crate) fn select(&mut self, c: &Val, a: &Val, b: &Val, r: TextRange) -> R<Val> {
        let c = self.tensor_of(c, r)?;
        let c = self.cast(c, Elem::Num(DType::I1), None, r)?;
        let (x, y) = self.binary_operands(
            a,
            b,
            BinOpts { allow_lhs_ptr: true, allow_rhs_ptr: true, ..Default::default() },
            r,
            "where",
        )?;
        let (c, x, y) = if self.is_block(c) {
            let (c, x) = self.broadcast_pair(c, x, r)?;
            let (x, y) = self.broadcast_pair(x, y, r)?;
            let (c, x) = self.broadcast_pair(c, x, r)?;
            (c, x, y)
        } else {
            (c, x, y)
        };
        let ty = self.ty(x).clone();
        Ok(Val::T(self.emit1(OpKind::Select, &[c, x, y], ty)))
    }

    /// A Python-number or tensor condition as an i1 scalar (for `if`/`while`).
    pub(crate) fn cond_i1(&mut self, v: Value, r: TextRange) -> R<Value> {
        if self.is_block(v) {
            let n: u32 = self.shape(v).iter().product();
            if n != 1 {
                return Err(self.err(
                    r,
                    format!("the truth value of a block of {n} elements is ambiguous; reduce it first (e.g. tl.max(x, axis=0) > 0)"),
                ));
            }
            let flat = self.emit1(OpKind::Reshape { can_reorder: false }, &[v], Type::tensor(&[1], self.elem(v)));
            let s = self.reduce_single(flat)?;
            return self.cond_i1(s, r);
        }
        self.cast(v, Elem::Num(DType::I1), None, r)
    }
}
