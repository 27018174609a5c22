//! `print` through `vprintf`, and `assert` through a message and `trap`.
//!
//! `print` writes one line per element, in the interpreter's format:
//! `pid (x, y, z) idx (i, j)<prefix><value>`. Each element is printed by its owner
//! thread only; lines from different threads come in whatever order the GPU runs them.

use super::emitter::{Emitter, Res};
use super::regs::{Reg, RegClass};
use crate::layout::linear::unflatten;
use trident_ir::{DType, Elem, Op, OpKind};

/// Triton's prefix rule: a leading space, and `": "` at the end when values follow.
fn normalize_prefix(prefix: &str, has_args: bool) -> String {
    let mut p = prefix.to_string();
    if has_args {
        if !p.ends_with(' ') {
            p.push(' ');
        }
        if !p.ends_with(": ") {
            p.pop();
            p.push_str(": ");
        }
    }
    if p.len() > 2 && !p.starts_with(' ') {
        p.insert(0, ' ');
    }
    p
}

/// Escapes `%` for printf.
fn esc(s: &str) -> String {
    s.replace('%', "%%")
}

impl Emitter<'_> {
    /// Interns a NUL-terminated global string; returns its symbol.
    pub fn global_string(&mut self, s: &str) -> String {
        let mut bytes = s.as_bytes().to_vec();
        bytes.push(0);
        if let Some((name, _)) = self.strings.iter().find(|(_, b)| *b == bytes) {
            return name.clone();
        }
        let name = format!("$str{}", self.strings.len());
        self.strings.push((name.clone(), bytes));
        name
    }

    /// Calls `vprintf(fmt, args)` with `args` packed as `vprintf` expects: each at the next
    /// offset aligned to its own size.
    fn vprintf(&mut self, fmt: &str, args: &[(Reg, &'static str)]) {
        self.uses_vprintf = true;
        let sym = self.global_string(fmt);
        let mut offsets = vec![];
        let mut at = 0u32;
        for (_, ty) in args {
            let size = if ty.ends_with("64") { 8 } else { 4 };
            at = at.div_ceil(size) * size;
            offsets.push(at);
            at += size;
        }
        let bytes = at.max(8).div_ceil(8) * 8;
        self.printf_buffer = self.printf_buffer.max(bytes);
        let g = self.new_reg(RegClass::B64);
        self.ins(format!("mov.u64 {g}, {sym}"));
        self.ins(format!("cvta.global.u64 {g}, {g}"));
        let buf = self.new_reg(RegClass::B64);
        self.ins(format!("mov.u64 {buf}, __printf_buf"));
        for ((r, ty), off) in args.iter().zip(offsets) {
            self.ins(format!("st.local.{ty} [{buf}+{off}], {r}"));
        }
        let gb = self.new_reg(RegClass::B64);
        self.ins(format!("cvta.local.u64 {gb}, {buf}"));
        let r = self.new_reg(RegClass::B32);
        self.raw(format!(
            "\t{{\n\t.param .b64 param0;\n\tst.param.b64 [param0], {g};\n\t.param .b64 param1;\n\tst.param.b64 [param1], {gb};\n\t.param .b32 retval0;\n\tcall (retval0), vprintf, (param0, param1);\n\tld.param.b32 {r}, [retval0];\n\t}}\n"
        ));
    }

    /// A value widened for printf: (register, store type, conversion spec).
    fn printf_arg(&mut self, e: Elem, r: Reg, hex: bool) -> Res<(Reg, &'static str, String)> {
        let d = match e {
            Elem::Ptr { .. } => return Ok((r, "b64", "0x%016llx".into())),
            Elem::Num(d) => d,
        };
        if hex {
            let w = (d.bits().max(4) / 4) as usize;
            let x = if d.bits() > 32 { r } else { self.widen_bits(r) };
            let ty = if d.bits() > 32 { "b64" } else { "b32" };
            let spec = if d.bits() > 32 { format!("0x%0{w}llx") } else { format!("0x%0{w}x") };
            return Ok((x, ty, spec));
        }
        if d.is_float() {
            let x = self.convert(d, DType::F64, trident_ir::Rounding::Rtne, r)?;
            return Ok((x, "f64", "%f".into()));
        }
        if d.bits() == 64 {
            return Ok((r, "b64", if d.is_signed_int() { "%lli" } else { "%llu" }.into()));
        }
        let x =
            self.convert(d, if d.is_signed_int() { DType::I32 } else { DType::U32 }, trident_ir::Rounding::Rtne, r)?;
        Ok((x, "b32", if d.is_signed_int() { "%i" } else { "%u" }.into()))
    }

    /// The raw bits of a register of at most 32 bits, zero-extended to 32.
    fn widen_bits(&mut self, r: Reg) -> Reg {
        match r.class {
            RegClass::B32 => r,
            RegClass::B16 => {
                let t = self.new_reg(RegClass::B32);
                self.ins(format!("cvt.u32.u16 {t}, {r}"));
                t
            }
            _ => {
                let t = self.new_reg(RegClass::B32);
                self.ins(format!("selp.u32 {t}, 1, 0, {r}"));
                t
            }
        }
    }

    fn pid_regs(&mut self) -> Vec<Reg> {
        ["x", "y", "z"]
            .iter()
            .map(|a| {
                let r = self.new_reg(RegClass::B32);
                self.ins(format!("mov.u32 {r}, %ctaid.{a}"));
                r
            })
            .collect()
    }

    pub(crate) fn emit_print(&mut self, op: Op) -> Res<()> {
        let f = self.f;
        let d = &f.ops[op];
        let OpKind::Print { prefix, hex } = &d.kind else { unreachable!() };
        let prefix = esc(&normalize_prefix(prefix, !d.operands.is_empty()));
        let pid = self.pid_regs();
        if d.operands.is_empty() {
            let p = self.thread0_pred();
            let skip = self.new_label("noprint");
            self.ins(format!("@!{p} bra {skip}"));
            let args: Vec<(Reg, &'static str)> = pid.iter().map(|&r| (r, "b32")).collect();
            self.vprintf(&format!("pid (%u, %u, %u){prefix}\n"), &args);
            self.label(&skip);
            return Ok(());
        }
        let multi = d.operands.len() > 1;
        for (k, &v) in d.operands.iter().enumerate() {
            let e = f.ty(v).elem();
            let regs = self.regs(v)?;
            let l = self.ll(v)?;
            let opnd = if multi { format!("(operand {k}) ") } else { String::new() };
            match l {
                None => {
                    let p = self.thread0_pred();
                    let (x, ty, spec) = self.printf_arg(e, regs[0], *hex)?;
                    let skip = self.new_label("noprint");
                    self.ins(format!("@!{p} bra {skip}"));
                    let mut args: Vec<(Reg, &'static str)> = pid.iter().map(|&r| (r, "b32")).collect();
                    args.push((x, ty));
                    self.vprintf(&format!("pid (%u, %u, %u) idx (){prefix}{opnd}{spec}\n"), &args);
                    self.label(&skip);
                }
                Some(l) => {
                    let owner = self.owner_pred(&l);
                    let widths: Vec<usize> =
                        l.shape.iter().map(|&s| if s > 0 { (s as f64).log10().ceil() as usize } else { 0 }).collect();
                    let coords: Vec<Reg> = (0..l.rank()).map(|dd| self.thread_coord(&l, dd)).collect();
                    for (r, &reg) in regs.iter().enumerate() {
                        let rc = unflatten(&l.shape, l.reg_part(r as u64));
                        let (x, ty, spec) = self.printf_arg(e, reg, *hex)?;
                        let mut args: Vec<(Reg, &'static str)> = pid.iter().map(|&r| (r, "b32")).collect();
                        let mut idx = vec![];
                        for (dd, &c) in coords.iter().enumerate() {
                            let t = self.new_reg(RegClass::B32);
                            self.ins(format!("xor.b32 {t}, {c}, {}", rc[dd]));
                            args.push((t, "b32"));
                            idx.push(format!("%{}u", widths[dd].max(1)));
                        }
                        args.push((x, ty));
                        let skip = self.new_label("noprint");
                        if let Some(p) = owner {
                            self.ins(format!("@!{p} bra {skip}"));
                        }
                        self.vprintf(
                            &format!("pid (%u, %u, %u) idx ({}){prefix}{opnd}{spec}\n", idx.join(", ")),
                            &args,
                        );
                        self.label(&skip);
                    }
                }
            }
        }
        Ok(())
    }

    pub(crate) fn emit_assert(&mut self, op: Op) -> Res<()> {
        let f = self.f;
        let d = &f.ops[op];
        let OpKind::Assert { msg } = &d.kind else { unreachable!() };
        let cond = self.regs(d.operands[0])?;
        let loc = d.loc;
        let file = self.files.get(loc.file as usize).map(|s| s.path.clone()).unwrap_or_else(|| "<unknown>".into());
        let text = esc(&format!("{file}:{}: {}: Assertion `{msg}` failed.\n", loc.line, f.name));
        self.uses_assertfail = true;
        // Any false element fails: combine them, then one thread-divergent branch.
        let mut all = cond[0];
        for &c in &cond[1..] {
            let p = self.new_reg(RegClass::Pred);
            self.ins(format!("and.pred {p}, {all}, {c}"));
            all = p;
        }
        let ok = self.new_label("assert_ok");
        self.ins(format!("@{all} bra {ok}"));
        self.vprintf(&text, &[]);
        self.ins("trap");
        self.label(&ok);
        Ok(())
    }
}
