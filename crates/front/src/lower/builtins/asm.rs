//! `tl.inline_asm_elementwise`: PTX the kernel's author wrote, applied elementwise to
//! tensors broadcast to one shape. The GPU and the PTX emulator run it; the interpreter
//! refuses it (so does Triton's).

use super::super::call::{dtype_of, Args};
use super::super::{FnLowering, Val, R};
use super::const_int;
use crate::value::ConstValue;
use trident_ir::{DType, Elem, OpKind, Type, Value};

/// Constraint letters Trident lowers: 16-, 32- and 64-bit integer registers, f32 and f64.
const LETTERS: &[&str] = &["h", "r", "l", "f", "d"];

impl<'c, 'a> FnLowering<'c, 'a> {
    pub(super) fn inline_asm(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["asm", "constraints", "args", "dtype", "is_pure", "pack"])?;
        let text = |i: usize, what: &str| match b.val(i) {
            Val::C(ConstValue::Str(s)) => Ok(s),
            other => Err(self.err(b.range(i), format!("{what} must be a string, not {}", other.kind_name()))),
        };
        let (asm, constraints) = (text(0, "the assembly")?, text(1, "the constraints")?);
        let is_pure = match b.val(4) {
            Val::C(ConstValue::Bool(v)) => v,
            other => {
                return Err(self.err(b.range(4), format!("is_pure must be True or False, not {}", other.kind_name())))
            }
        };
        let pack = const_int(self, &b.val(5), b.range(5), "pack")?;
        if !(1..=16).contains(&pack) {
            return Err(self.err(b.range(5), format!("pack must be 1 to 16, not {pack}")));
        }
        let items = match b.val(2) {
            Val::Tuple(v) => v,
            other => vec![other],
        };
        let (dtypes, one_result) = match b.val(3) {
            Val::Tuple(v) => (v, false),
            other => (vec![other], true),
        };
        let mut outs = vec![];
        for d in &dtypes {
            match dtype_of(d) {
                Some(Elem::Num(t)) if t != DType::I1 => outs.push(t),
                _ => {
                    return Err(self.err(
                        b.range(3),
                        format!("dtype must be a number dtype (or a tuple of them), not {}", d.kind_name()),
                    ))
                }
            }
        }
        // The arguments, broadcast to one shape.
        let mut vals: Vec<Value> = vec![];
        for v in &items {
            let x = self.tensor_of(v, b.range(2))?;
            if self.elem(x) == Elem::Num(DType::I1) {
                return Err(
                    self.err(b.range(2), "inline asm arguments cannot be booleans: cast them to an integer first")
                );
            }
            vals.push(x);
        }
        let Some(first) = vals.iter().copied().find(|&v| self.is_block(v)) else {
            return Err(self.err(b.range(2), "inline_asm_elementwise needs at least one tensor argument"));
        };
        let mut shape_of = first;
        for &v in &vals {
            shape_of = self.broadcast_pair(shape_of, v, b.range(2))?.0;
        }
        let shape = self.shape(shape_of);
        let vals: Vec<Value> = vals.into_iter().map(|v| self.broadcast_to(v, &shape, b.range(2))).collect::<R<_>>()?;
        // The constraints: one per register, the results' first (`=x`), then the arguments'
        // (a group of `pack` narrow elements shares 32-bit registers; wider ones take one each).
        let cs: Vec<&str> = constraints.split(',').map(str::trim).collect();
        let regs = |e: Elem| trident_ir::inline_asm_registers(e, pack as u32) as usize;
        let n_out: usize = outs.iter().map(|&t| regs(Elem::Num(t))).sum();
        let n_in: usize = vals.iter().map(|&v| regs(self.elem(v))).sum();
        let outputs_first =
            cs.iter().take(n_out).all(|c| c.starts_with('=')) && cs.iter().skip(n_out).all(|c| !c.starts_with('='));
        if cs.len() != n_out + n_in || !outputs_first {
            return Err(self.err(
                b.range(1),
                format!(
                    "constraints \"{constraints}\" must list {n_out} output register(s) (\"=r\", …) then {n_in} input \
                     register(s) (with pack={pack}: 4 int8s or 2 16-bit values share a register, wider elements take one each)"
                ),
            ));
        }
        if let Some(c) = cs.iter().find(|c| !LETTERS.contains(&c.trim_start_matches('='))) {
            return Err(self.err(
                b.range(1),
                format!("constraint \"{c}\" is not one Trident lowers (h, r, l, f, d, outputs with `=`)"),
            ));
        }
        let tys: Vec<Type> = outs.iter().map(|&t| Type::tensor(&shape, Elem::Num(t))).collect();
        let op = self.emit(
            OpKind::InlineAsm { asm, constraints: cs.join(","), pure: is_pure, pack: pack as u32 },
            &vals,
            &tys,
        );
        let results: Vec<Val> = self.f.ops[op].results.iter().map(|&r| Val::T(r)).collect();
        Ok(if one_result { results.into_iter().next().expect("one result") } else { Val::Tuple(results) })
    }
}
