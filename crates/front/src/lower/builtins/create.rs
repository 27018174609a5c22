//! Values from nowhere: program ids, ranges, filled blocks, casts.

use super::super::call::{dtype_of, Args};
use super::super::{DiagExt, FnLowering, Val, R};
use super::{const_int, const_shape};
use crate::value::ConstValue;
use trident_core::DType;
use trident_ir::{Elem, OpKind, Rounding, Type};

impl<'c, 'a> FnLowering<'c, 'a> {
    pub(super) fn program_id(&mut self, is_pid: bool, args: Args) -> R<Val> {
        let b = self.bind(&args, &["axis"])?;
        let axis = const_int(self, &b.val(0), b.range(0), "axis")?;
        if !(0..=2).contains(&axis) {
            return Err(self.err(
                b.range(0),
                format!(
                    "{}: {} axis must be 0, 1, or 2 but got {axis}",
                    args.name,
                    if is_pid { "program_id" } else { "num_programs" }
                ),
            ));
        }
        let kind =
            if is_pid { OpKind::ProgramId { axis: axis as u8 } } else { OpKind::NumPrograms { axis: axis as u8 } };
        Ok(Val::T(self.emit1(kind, &[], Type::scalar(DType::I32))))
    }

    pub(super) fn arange(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["start", "end"])?;
        let start = const_int(self, &b.val(0), b.range(0), "arange's start")?;
        let end = const_int(self, &b.val(1), b.range(1), "arange's end")?;
        if start >> 32 != 0 || end >> 32 != 0 || end > i32::MAX as i128 {
            return Err(self.err(args.r, format!("arange({start}, {end}): bounds must fit in int32")));
        }
        if end <= start {
            return Err(self.err(args.r, format!("arange({start}, {end}): end must be greater than start")));
        }
        let n = end - start;
        if n & (n - 1) != 0 {
            let p = 1i128 << (128 - (n - 1).leading_zeros());
            return Err(self
                .err(args.r, format!("arange({start}, {end}): the range ({n} elements) must be a power of 2"))
                .with_note(format!("use arange(0, {p}) and mask the elements past {n}")));
        }
        if n > 1 << 20 {
            return Err(self.err(args.r, format!("arange of {n} elements exceeds Triton's limit of 1048576")));
        }
        let ty = Type::tensor(&[n as u32], DType::I32);
        Ok(Val::T(self.emit1(OpKind::Arange { start: start as i32, end: end as i32 }, &[], ty)))
    }

    /// A scalar of `d` from a number or a 0-d / 1-element tensor (Triton's `make_scalar`).
    fn make_scalar(&mut self, v: &Val, d: DType, r: ruff_text_size::TextRange) -> R<trident_ir::Value> {
        match v {
            Val::T(x) => {
                let n: u32 = self.shape(*x).iter().product();
                if n != 1 {
                    return Err(self.err(r, "the fill value must be a scalar"));
                }
                let x = if self.is_block(*x) {
                    let flat =
                        self.emit1(OpKind::Reshape { can_reorder: false }, &[*x], Type::tensor(&[1], self.elem(*x)));
                    self.reduce_single(flat)?
                } else {
                    *x
                };
                self.cast(x, Elem::Num(d), None, r)
            }
            Val::C(c) if c.is_number() => self.const_value(c, d, r),
            other => Err(self.err(r, format!("the fill value must be a number, not {}", other.kind_name()))),
        }
    }

    pub(crate) fn full_of(&mut self, shape: &[u32], v: &Val, d: DType, r: ruff_text_size::TextRange) -> R<Val> {
        let s = self.make_scalar(v, d, r)?;
        Ok(Val::T(self.splat(s, shape)))
    }

    fn dtype_arg(&self, v: &Val, r: ruff_text_size::TextRange) -> R<DType> {
        match dtype_of(v) {
            Some(Elem::Num(d)) => Ok(d),
            Some(e) => Err(self.err(r, format!("expected a number dtype, got {}", crate::value::elem_name(e)))),
            None => Err(self.err(r, format!("expected a dtype such as tl.float32, got {}", v.kind_name()))),
        }
    }

    pub(super) fn full(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["shape", "value", "dtype"])?;
        let shape = const_shape(self, &b.val(0), b.range(0))?;
        let d = self.dtype_arg(&b.val(2), b.range(2))?;
        self.full_of(&shape, &b.val(1), d, b.range(1))
    }

    pub(super) fn zeros(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["shape", "dtype"])?;
        let shape = const_shape(self, &b.val(0), b.range(0))?;
        let d = self.dtype_arg(&b.val(1), b.range(1))?;
        self.full_of(&shape, &Val::int(0), d, args.r)
    }

    pub(super) fn cast_builtin(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["input", "dtype", "fp_downcast_rounding=", "bitcast="])?;
        let x = self.tensor_of(&b.val(0), b.range(0))?;
        let Some(to) = dtype_of(&b.val(1)) else {
            return Err(
                self.err(b.range(1), format!("expected a dtype such as tl.float16, got {}", b.val(1).kind_name()))
            );
        };
        let rounding = match b.val(2) {
            Val::C(ConstValue::None) => None,
            Val::C(ConstValue::Str(s)) if s == "rtne" => Some(Rounding::Rtne),
            Val::C(ConstValue::Str(s)) if s == "rtz" => Some(Rounding::Rtz),
            other => {
                return Err(self.err(
                    b.range(2),
                    format!("invalid rounding mode {}: supported are 'rtne' and 'rtz'", other.kind_name()),
                ))
            }
        };
        let bitcast = b.val(3).as_const().and_then(|c| c.truthy()).unwrap_or(false);
        if bitcast {
            return Ok(Val::T(self.bitcast(x, to, args.r)?));
        }
        Ok(Val::T(self.cast(x, to, rounding, args.r)?))
    }
}
