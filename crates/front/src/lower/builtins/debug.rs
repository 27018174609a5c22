//! Compile-time checks and printing, runtime asserts and prints, compiler hints.

use super::super::call::{Arg, Args};
use super::super::emit::type_str;
use super::super::{FnLowering, Val, R};
use crate::value::ConstValue;
use ruff_text_size::TextRange;
use trident_core::DType;
use trident_ir::{Elem, OpKind};

impl<'c, 'a> FnLowering<'c, 'a> {
    pub(super) fn static_assert(&mut self, args: Args) -> R<Val> {
        if !args.kw.is_empty() || args.pos.is_empty() || args.pos.len() > 2 {
            return Err(self.err(args.r, "tl.static_assert takes one or two positional arguments"));
        }
        let cond = match &args.pos[0].v {
            Val::C(ConstValue::Bool(b)) => *b,
            Val::C(c) if c.as_int().is_some() => c.truthy().unwrap_or(false),
            other => {
                return Err(self.err(
                    args.pos[0].r,
                    format!(
                        "the condition of tl.static_assert must be known at compile time, got {}",
                        other.kind_name()
                    ),
                ))
            }
        };
        if !cond {
            let msg = match args.pos.get(1).map(|a| &a.v) {
                Some(Val::C(ConstValue::Str(s))) => s.clone(),
                Some(v) => v.as_const().map(|c| c.to_string()).unwrap_or_default(),
                None => String::new(),
            };
            let text = if msg.is_empty() {
                "static assertion failed".to_string()
            } else {
                format!("static assertion failed: {msg}")
            };
            return Err(self.err(args.r, text));
        }
        Ok(Val::none())
    }

    pub(super) fn static_print(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["*values", "*", "sep=", "end=", "file=", "flush="])?;
        let sep = match b.val(1) {
            Val::C(ConstValue::Str(s)) => s,
            _ => " ".into(),
        };
        let parts: Vec<String> = b
            .rest
            .iter()
            .map(|a| match &a.v {
                Val::T(x) => type_str(self.ty(*x)),
                v => v.as_const().map(|c| c.to_string()).unwrap_or_else(|| v.kind_name()),
            })
            .collect();
        self.ctx.prints.push(parts.join(&sep));
        Ok(Val::none())
    }

    pub(crate) fn device_print(&mut self, prefix: Val, vals: Vec<Arg>, hex: bool, r: TextRange) -> R<Val> {
        let Val::C(ConstValue::Str(mut prefix)) = prefix else {
            return Err(self.err(r, "the first argument of tl.device_print must be a constant string prefix"));
        };
        let mut ops = vec![];
        for a in &vals {
            ops.push(self.tensor_of(&a.v, a.r)?);
        }
        // Triton's normalisation: "prefix" -> " prefix: " when values follow.
        if !ops.is_empty() {
            if !prefix.ends_with(' ') {
                prefix.push(' ');
            }
            if !prefix.ends_with(": ") {
                prefix.pop();
                prefix.push_str(": ");
            }
        }
        if prefix.len() > 2 && !prefix.starts_with(' ') {
            prefix.insert(0, ' ');
        }
        self.emit(OpKind::Print { prefix, hex }, &ops, &[]);
        Ok(Val::none())
    }

    /// `tl.device_assert` / `assert`: kept only when compiling with debug on (as Triton).
    pub(crate) fn device_assert(&mut self, cond: Val, msg: Val, mask: Option<Val>, r: TextRange) -> R<()> {
        let msg = match msg {
            Val::C(ConstValue::Str(s)) => s,
            other => other.as_const().map(|c| c.to_string()).unwrap_or_default(),
        };
        if !self.ctx.debug {
            return Ok(());
        }
        let mut c = self.tensor_of(&cond, r)?;
        if self.elem(c) != Elem::Num(DType::I1) {
            c = self.cast(c, Elem::Num(DType::I1), None, r)?;
        }
        if let Some(m) = mask {
            let m = self.tensor_of(&m, r)?;
            let nm = self.not(&Val::T(m), r)?;
            let (Val::T(nm), cv) = (nm, Val::T(c)) else { unreachable!() };
            let v = self.logical(false, &cv, &Val::T(nm), r)?;
            if let Val::T(v) = v {
                c = v;
            }
        }
        self.emit(OpKind::Assert { msg }, &[c], &[]);
        Ok(())
    }

    pub(super) fn hint(&mut self, name: &str, args: Args) -> R<Val> {
        let b = self.bind(&args, &["input", "values"])?;
        let x = self.tensor_of(&b.val(0), b.range(0))?;
        let items = match b.val(1) {
            Val::Tuple(t) => t,
            v => vec![v],
        };
        let mut vals = vec![];
        for it in &items {
            let v = super::const_int(self, it, b.range(1), "hint value")?;
            if v <= 0 || v > u32::MAX as i128 {
                return Err(self.err(b.range(1), format!("hint values must be positive, got {v}")));
            }
            vals.push(v as u32);
        }
        let rank = self.shape(x).len();
        let expect = if name == "multiple_of" { rank.max(1) } else { rank };
        if vals.len() != expect {
            return Err(self.err(
                args.r,
                format!("{name}: {} values given for a tensor of rank {rank} (expected {expect})", vals.len()),
            ));
        }
        let kind = match name {
            "multiple_of" => OpKind::MultipleOf { values: vals },
            "max_contiguous" => OpKind::MaxContiguous { values: vals },
            _ => OpKind::MaxConstancy { values: vals },
        };
        let ty = self.ty(x).clone();
        Ok(Val::T(self.emit1(kind, &[x], ty)))
    }

    pub(super) fn assume(&mut self, args: Args) -> R<Val> {
        let b = self.bind(&args, &["cond"])?;
        if let Some(c) = b.val(0).as_const() {
            if c.truthy() == Some(true) {
                return Ok(Val::none());
            }
        }
        let c = self.tensor_of(&b.val(0), b.range(0))?;
        if self.elem(c) != Elem::Num(DType::I1) {
            return Err(
                self.err(b.range(0), format!("tl.assume needs a boolean condition, got {}", type_str(self.ty(c))))
            );
        }
        self.emit(OpKind::Assume, &[c], &[]);
        Ok(Val::none())
    }
}
