//! `inline_asm` (Triton's `tl.inline_asm_elementwise`): the author's PTX, once per group of
//! `pack` elements of each thread, its `$N` placeholders replaced by registers — the
//! results' first, then the arguments'.
//!
//! A placeholder's register has the width of its constraint letter (`h` 16 bits, `r`/`f`
//! 32, `l`/`d` 64; Trident's registers are untyped `.bN`, which PTX lets typed instructions
//! use). The group's `pack` elements share it, element k in bits `k·w..(k+1)·w` (w the
//! element's width: 4 int8s in an `r`, 2 f16s in an `r`); one element narrower than its
//! register is extended (signed integers by sign, everything else with zeros) and read back
//! from the low bits. A group that would not fit its register is a compile error. Which
//! elements share a group does not matter — the op is elementwise — so a thread's last
//! group is filled up with copies of its last element and their results dropped. The text
//! goes between braces, so the `.reg` declarations it makes stay its own.

use super::emitter::{Emitter, Res};
use super::regs::{Reg, RegClass};
use trident_ir::{inline_asm_bits, inline_asm_registers, DType, Elem, Op, OpKind};

/// The register class of a constraint letter (without its `=`).
fn class_of_letter(c: &str) -> Option<RegClass> {
    match c.trim_start_matches('=') {
        "h" => Some(RegClass::B16),
        "r" | "f" => Some(RegClass::B32),
        "l" | "d" => Some(RegClass::B64),
        _ => None,
    }
}

/// `asm` with `$N` replaced by `regs[N]` (`$$` is a literal `$`).
fn substitute(asm: &str, regs: &[String]) -> Result<String, String> {
    let mut out = String::with_capacity(asm.len() + 16 * regs.len());
    let mut chars = asm.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'$') {
            chars.next();
            out.push('$');
            continue;
        }
        let mut digits = String::new();
        while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
            digits.push(d);
            chars.next();
        }
        let n: usize = digits.parse().map_err(|_| format!("`$` not followed by an operand number in {asm:?}"))?;
        let r = regs.get(n).ok_or_else(|| format!("`${n}` names no operand ({} operands)", regs.len()))?;
        out.push_str(r);
    }
    Ok(out)
}

impl Emitter<'_> {
    pub(crate) fn emit_inline_asm(&mut self, op: Op) -> Res<()> {
        let f = self.f;
        let d = &f.ops[op];
        let OpKind::InlineAsm { asm, constraints, pack, .. } = &d.kind else {
            return Err(self.err("internal: not inline_asm"));
        };
        let pack = (*pack).max(1) as usize;
        let cs: Vec<&str> = constraints.split(',').map(str::trim).collect();
        let elems: Vec<Elem> = d.results.iter().chain(&d.operands).map(|&v| f.ty(v).elem()).collect();
        // Each operand's registers per group: (its index among results then arguments, how many
        // elements each register holds).
        let mut slots: Vec<(usize, usize)> = vec![];
        for (i, &e) in elems.iter().enumerate() {
            let nregs = inline_asm_registers(e, pack as u32) as usize;
            let per = pack.div_ceil(nregs);
            slots.extend((0..nregs).map(|_| (i, per)));
        }
        if cs.len() != slots.len() {
            return Err(self.err(format!("inline asm: {} constraints for {} registers", cs.len(), slots.len())));
        }
        let mut classes = vec![];
        for (c, &(i, per)) in cs.iter().zip(&slots) {
            let class = class_of_letter(c).ok_or_else(|| self.err(format!("inline asm constraint `{c}`")))?;
            let bits = inline_asm_bits(elems[i]) as usize;
            if bits * per > class.bits() as usize {
                return Err(self.err(format!(
                    "inline asm: {per} element(s) of {} bits do not fit the {}-bit register of constraint `{c}`",
                    bits,
                    class.bits()
                )));
            }
            classes.push(class);
        }
        let nres = d.results.len();
        let n = self.ll(d.results[0])?.map_or(1, |l| l.num_regs());
        let args: Vec<Vec<Reg>> = d.operands.iter().map(|&v| self.regs(v)).collect::<Res<_>>()?;
        if args.iter().any(|a| a.len() != n) {
            return Err(self.err("internal: inline asm operands and results differ in registers"));
        }
        let kind = |e: Elem| e.num().unwrap_or(DType::U64);
        let mut outs: Vec<Vec<Reg>> = vec![Vec::with_capacity(n); nres];
        for g in 0..n.div_ceil(pack) {
            let idx: Vec<usize> = (0..pack).map(|k| (g * pack + k).min(n - 1)).collect();
            // Each placeholder's register: a fresh one for a result, the packed elements of an
            // argument (`slot`: which of the operand's registers, `per` elements each).
            let mut names = vec![];
            let mut out_regs: Vec<(usize, usize, Reg)> = vec![];
            let mut nth = vec![0usize; elems.len()];
            for (s, &(i, per)) in slots.iter().enumerate() {
                let slot = nth[i];
                nth[i] += 1;
                let part: Vec<usize> = idx.iter().copied().skip(slot * per).take(per).collect();
                let r = if i < nres {
                    let r = self.new_reg(classes[s]);
                    out_regs.push((i, part.len(), r));
                    r
                } else {
                    let a = &args[i - nres];
                    let regs: Vec<Reg> = part.iter().map(|&k| a[k]).collect();
                    self.pack_elements(&regs, kind(elems[i]), classes[s])
                };
                names.push(r.to_string());
            }
            let text = substitute(asm, &names).map_err(|m| self.err(format!("inline asm: {m}")))?;
            self.raw(format!("\t// begin inline asm\n\t{{\n\t{}\n\t}}\n\t// end inline asm\n", text.trim()));
            for (i, count, r) in out_regs {
                for e in self.unpack_elements(r, kind(elems[i]), count) {
                    if outs[i].len() < n {
                        outs[i].push(e);
                    }
                }
            }
        }
        for (i, regs) in outs.into_iter().enumerate() {
            self.set(d.results[i], regs);
        }
        Ok(())
    }

    /// `elems` (registers of `t`) in one register of `class`, element k at bits `k·w`.
    fn pack_elements(&mut self, elems: &[Reg], t: DType, class: RegClass) -> Reg {
        let w = t.bits().max(8);
        if elems.len() == 1 && elems[0].class == class {
            return elems[0];
        }
        let wide = class.bits() == 64;
        let (bt, ut) = if wide { ("b64", "u64") } else { ("b32", "u32") };
        let acc = self.new_reg(if wide { RegClass::B64 } else { RegClass::B32 });
        self.ins(format!("mov.{bt} {acc}, 0"));
        let signed_alone = elems.len() == 1 && t.is_signed_int();
        for (k, &e) in elems.iter().enumerate() {
            // The element's bits, extended to the accumulator's width.
            let x = self.new_reg(acc.class);
            let from = match e.class {
                RegClass::B16 => "16",
                RegClass::B32 => "32",
                _ => "64",
            };
            if e.class == acc.class {
                self.ins(format!("mov.{bt} {x}, {e}"));
            } else if signed_alone {
                self.ins(format!("cvt.s{}.s{from} {x}, {e}", class.bits().max(32)));
            } else {
                self.ins(format!("cvt.{ut}.u{from} {x}, {e}"));
            }
            if !signed_alone && w < acc.class.bits() {
                let mask: u64 = (1u64 << w) - 1;
                self.ins(format!("and.{bt} {x}, {x}, {mask}"));
            }
            if k > 0 {
                self.ins(format!("shl.{bt} {x}, {x}, {}", w as usize * k));
            }
            self.ins(format!("or.{bt} {acc}, {acc}, {x}"));
        }
        match class {
            RegClass::B16 => {
                let h = self.new_reg(RegClass::B16);
                self.ins(format!("cvt.u16.u32 {h}, {acc}"));
                h
            }
            _ => acc,
        }
    }

    /// The `pack` elements of `t` in register `r` (element k at bits `k·w`), each in the
    /// register `t` lives in, normalised (signed integers sign-extended).
    fn unpack_elements(&mut self, r: Reg, t: DType, pack: usize) -> Vec<Reg> {
        let w = t.bits().max(8);
        let dst_class = super::regs::class_of_dtype(t);
        if pack == 1 && r.class == dst_class && w == r.class.bits() {
            return vec![r];
        }
        // Work in 32 or 64 bits.
        let wide = r.class == RegClass::B64;
        let (ut, st) = if wide { ("u64", "s64") } else { ("u32", "s32") };
        let src = if r.class == RegClass::B16 {
            let x = self.new_reg(RegClass::B32);
            self.ins(format!("cvt.u32.u16 {x}, {r}"));
            x
        } else {
            r
        };
        let mut out = vec![];
        for k in 0..pack {
            let x = self.new_reg(src.class);
            // Field k, sign- or zero-extended to the working width.
            let signed = t.is_signed_int();
            let kind = if signed { st } else { ut };
            self.ins(format!("bfe.{kind} {x}, {src}, {}, {w}", w as usize * k));
            let e = match (dst_class, src.class) {
                (a, b) if a == b => x,
                (RegClass::B16, _) => {
                    let h = self.new_reg(RegClass::B16);
                    let from = if wide { "64" } else { "32" };
                    let s = if signed { "s" } else { "u" };
                    self.ins(format!("cvt.{s}16.{s}{from} {h}, {x}"));
                    h
                }
                (RegClass::B32, RegClass::B64) => {
                    let y = self.new_reg(RegClass::B32);
                    self.ins(format!("cvt.u32.u64 {y}, {x}"));
                    y
                }
                (RegClass::B64, _) => {
                    let y = self.new_reg(RegClass::B64);
                    let s = if signed { "s" } else { "u" };
                    self.ins(format!("cvt.{s}64.{s}32 {y}, {x}"));
                    y
                }
                _ => x,
            };
            out.push(e);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::substitute;

    #[test]
    fn placeholders_are_replaced_by_number_and_dollar_dollar_is_a_dollar() {
        let regs: Vec<String> = (0..12).map(|i| format!("%r{i}")).collect();
        assert_eq!(substitute("add.s32 $0, $1, $11; // $$", &regs).unwrap(), "add.s32 %r0, %r1, %r11; // $");
        assert!(substitute("mov.b32 $0, $12;", &regs).unwrap_err().contains("`$12` names no operand"));
        assert!(substitute("mov.b32 $x, 1;", &regs).is_err());
    }
}
