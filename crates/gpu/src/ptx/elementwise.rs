//! Elementwise ops: one PTX sequence per register of the result.
//!
//! Arithmetic on f16/bf16/fp8 is done in f32 and rounded once back: f32 has more
//! than twice the precision of those types plus two bits, so for `+ - * /` the result
//! is the correctly rounded one (as native half-precision arithmetic would give).

use super::emitter::{Emitter, Res};
use super::regs::{class_of, class_of_dtype, float_ty, int_ty, Reg, RegClass};
use trident_ir::{BinaryOp, CastKind, CmpPred, DType, Elem, Op, OpKind, Rounding, UnaryOp};

fn num(e: Elem) -> DType {
    e.num().unwrap_or(DType::U64)
}

/// Types computed natively (others go through f32).
fn native_float(d: DType) -> bool {
    matches!(d, DType::F32 | DType::F64)
}

impl Emitter<'_> {
    pub(crate) fn emit_elementwise(&mut self, op: Op) -> Res<()> {
        let f = self.f;
        let d = &f.ops[op];
        let res = d.results[0];
        let n = self.ll(res)?.map_or(1, |l| l.num_regs());
        let args: Vec<Vec<Reg>> = d.operands.iter().map(|&v| self.regs(v)).collect::<Res<_>>()?;
        for (i, a) in args.iter().enumerate() {
            if a.len() != n {
                return Err(self.err(format!("internal: operand {i} has {} registers, the result {n}", a.len())));
            }
        }
        let in_elems: Vec<Elem> = d.operands.iter().map(|&v| f.ty(v).elem()).collect();
        let out = f.ty(res).elem();
        // Integer division and remainder by a constant: shifts or a multiply-high (ptxas
        // expands `div`/`rem` into a ~20-instruction generic division even for constants).
        let by_const = match d.kind {
            OpKind::Binary(b @ (BinaryOp::Div | BinaryOp::Rem)) if out.num().is_some_and(|t| t.is_int()) => {
                self.axis.get(d.operands[1]).and_then(|i| i.constant).map(|c| (b, c))
            }
            _ => None,
        };
        // A 32-bit integer negation on sm_90: written so that `ptxas` 13.0 cannot see it
        // (see `neg_i32_opaque`). `Some(k)`: the operand negated.
        let negation = match d.kind {
            _ if self.opts.target.capability() < 90 || !matches!(out.num(), Some(DType::I32 | DType::U32)) => None,
            OpKind::Unary(UnaryOp::Neg) => Some(0),
            OpKind::Binary(BinaryOp::Sub) if self.splat_const(d.operands[0]) == Some(trident_ir::Const::Int(0)) => {
                Some(1)
            }
            _ => None,
        };
        let mut regs = Vec::with_capacity(n);
        // Registers the axis analysis proves equal (runs of `constancy` equal elements, e.g.
        // a compare of a range against a multiple of the run length) are computed once.
        let same_as = self.constant_runs(res)?;
        // Identical operand registers give identical results (splats): compute once.
        let mut memo: std::collections::HashMap<Vec<Reg>, Reg> = std::collections::HashMap::new();
        for i in 0..n {
            if let Some(&j) = same_as.get(i).filter(|&&j| j != i) {
                regs.push(regs[j]);
                continue;
            }
            let a: Vec<Reg> = args.iter().map(|x| x[i]).collect();
            if let Some(&r) = memo.get(&a) {
                regs.push(r);
                continue;
            }
            let fast = match (by_const, negation) {
                (Some((b, c)), _) => self.div_rem_const(b, num(out), a[0], c),
                (None, Some(k)) => Some(self.neg_i32_opaque(a[k])),
                (None, None) => None,
            };
            let r = match fast {
                Some(r) => r,
                None => self.scalar(&d.kind, &in_elems, out, &a)?,
            };
            memo.insert(a, r);
            regs.push(r);
        }
        self.set(res, regs);
        Ok(())
    }

    /// One element of an elementwise op.
    pub fn scalar(&mut self, kind: &OpKind, ins: &[Elem], out: Elem, a: &[Reg]) -> Res<Reg> {
        match kind {
            OpKind::Binary(b) => self.binary(*b, num(out), a[0], a[1]),
            OpKind::Unary(u) => self.unary(*u, num(ins[0]), a[0]),
            OpKind::Cmp(p) => self.cmp(*p, num(ins[0]), a[0], a[1]),
            OpKind::Select => self.select(a[0], a[1], a[2]),
            OpKind::Fma => self.fma(num(out), a[0], a[1], a[2]),
            OpKind::Cast { kind, rounding } => self.cast(*kind, *rounding, ins[0], out, a[0]),
            OpKind::AddPtr => {
                let bytes = out.pointee().map_or(1, |p| p.size_bytes() as u64);
                self.add_ptr(a[0], a[1], num(ins[1]), bytes)
            }
            _ => Err(self.err("internal: not elementwise")),
        }
    }

    /// For each register of tensor `v`, the lowest register holding an element the axis
    /// analysis proves equal to it (itself when none): register bits that only move within
    /// an aligned run of `constancy` equal elements are cleared.
    pub(crate) fn constant_runs(&mut self, v: trident_ir::Value) -> Res<Vec<usize>> {
        let Some(l) = self.ll(v)? else { return Ok(vec![]) };
        let Some(info) = self.axis.get(v) else { return Ok((0..l.num_regs()).collect()) };
        let shifts = crate::layout::linear::dim_shifts(&l.shape);
        let mut cmask = 0u64;
        for (d, &c) in info.constancy.iter().enumerate().take(l.shape.len()) {
            let c = c.min(l.shape[d] as u64);
            if c > 1 && c.is_power_of_two() {
                cmask |= (c - 1) << shifts[d];
            }
        }
        let mut clear = 0usize;
        for (i, &b) in l.reg.iter().enumerate() {
            if b & !cmask == 0 {
                clear |= 1 << i;
            }
        }
        Ok((0..l.num_regs()).map(|r| r & !clear).collect())
    }

    /// `a / c` or `a % c` (C semantics: the quotient truncated toward zero, the remainder
    /// with the dividend's sign) for a constant `c`, on 32- and 64-bit integers; `None`
    /// where the generic instruction is kept.
    pub fn div_rem_const(&mut self, op: BinaryOp, d: DType, a: Reg, c: i64) -> Option<Reg> {
        let bits = d.bits();
        if !(bits == 32 || bits == 64) || c <= 0 || (bits == 32 && c > u32::MAX as i64) {
            return None;
        }
        let signed = d.is_signed_int();
        let (b, s, u) = if bits == 32 { ("b32", "s32", "u32") } else { ("b64", "s64", "u64") };
        let class = a.class;
        let div = op == BinaryOp::Div;
        if c == 1 {
            if div {
                return Some(a);
            }
            let r = self.new_reg(class);
            self.ins(format!("mov.{b} {r}, 0"));
            return Some(r);
        }
        if (c as u64).is_power_of_two() {
            let k = c.trailing_zeros();
            let r = self.new_reg(class);
            if !signed {
                if div {
                    self.ins(format!("shr.{u} {r}, {a}, {k}"));
                } else {
                    self.ins(format!("and.{b} {r}, {a}, {}", c - 1));
                }
                return Some(r);
            }
            // Negative dividends round toward zero: add c - 1 first (the sign bits shifted down).
            let t = self.new_reg(class);
            self.ins(format!("shr.{s} {t}, {a}, {}", bits - 1));
            self.ins(format!("shr.{u} {t}, {t}, {}", bits - k));
            self.ins(format!("add.{s} {t}, {t}, {a}"));
            if div {
                self.ins(format!("shr.{s} {r}, {t}, {k}"));
            } else {
                self.ins(format!("and.{b} {t}, {t}, {}", -c));
                self.ins(format!("sub.{s} {r}, {a}, {t}"));
            }
            return Some(r);
        }
        if bits != 32 {
            return None;
        }
        // 32-bit by any c < 2^32: q = floor(x * ceil(2^64 / c) / 2^64) is exact for x < 2^32
        // (the rounding error of the reciprocal, below c, adds less than 2^-32 to x / c).
        let magic = u64::MAX / c as u64 + 1;
        let x = if signed {
            let t = self.new_reg(RegClass::B32);
            self.ins(format!("abs.s32 {t}, {a}"));
            t
        } else {
            a
        };
        let wide = self.new_reg(RegClass::B64);
        self.ins(format!("cvt.u64.u32 {wide}, {x}"));
        let qw = self.new_reg(RegClass::B64);
        self.ins(format!("mul.hi.u64 {qw}, {wide}, {magic}"));
        let q = self.new_reg(RegClass::B32);
        self.ins(format!("cvt.u32.u64 {q}, {qw}"));
        let res = if div {
            q
        } else {
            let r = self.new_reg(RegClass::B32);
            self.ins(format!("mul.lo.u32 {r}, {q}, {c}"));
            self.ins(format!("sub.u32 {r}, {x}, {r}"));
            r
        };
        if !signed {
            return Some(res);
        }
        // The sign of the quotient is the dividend's (c > 0), as is the remainder's.
        let neg = self.new_reg(RegClass::Pred);
        self.ins(format!("setp.lt.s32 {neg}, {a}, 0"));
        let m = self.new_reg(RegClass::B32);
        self.ins(format!("neg.s32 {m}, {res}"));
        let r = self.new_reg(RegClass::B32);
        self.ins(format!("selp.b32 {r}, {m}, {res}, {neg}"));
        Some(r)
    }

    pub fn select(&mut self, c: Reg, a: Reg, b: Reg) -> Res<Reg> {
        let r = self.new_reg(a.class);
        if a.class == RegClass::Pred {
            self.ins(format!("@{c} mov.pred {r}, {a}"));
            self.ins(format!("@!{c} mov.pred {r}, {b}"));
        } else {
            self.ins(format!("selp.{} {r}, {a}, {b}, {c}", a.class.btype()));
        }
        Ok(r)
    }

    pub fn add_ptr(&mut self, p: Reg, off: Reg, off_ty: DType, bytes: u64) -> Res<Reg> {
        let r = self.new_reg(RegClass::B64);
        match off.class {
            RegClass::B64 => {
                if bytes == 1 {
                    self.ins(format!("add.s64 {r}, {p}, {off}"));
                } else {
                    self.ins(format!("mad.lo.s64 {r}, {off}, {bytes}, {p}"));
                }
            }
            RegClass::B32 | RegClass::B16 => {
                let o32 = if off.class == RegClass::B16 {
                    let t = self.new_reg(RegClass::B32);
                    let ty = if off_ty.is_signed_int() { "s32.s16" } else { "u32.u16" };
                    self.ins(format!("cvt.{ty} {t}, {off}"));
                    t
                } else {
                    off
                };
                let t = self.new_reg(RegClass::B64);
                let s = if off_ty.is_signed_int() { "s32" } else { "u32" };
                self.ins(format!("mul.wide.{s} {t}, {o32}, {bytes}"));
                self.ins(format!("add.s64 {r}, {p}, {t}"));
            }
            RegClass::Pred => {
                let t = self.new_reg(RegClass::B64);
                self.ins(format!("selp.b64 {t}, {bytes}, 0, {off}"));
                self.ins(format!("add.s64 {r}, {p}, {t}"));
            }
        }
        Ok(r)
    }

    /// `-x` of a 32-bit integer as `~x + 1`. `ptxas` 13.0 (the H100 driver's CUDA) drops a
    /// negation (`neg`, or `sub` from 0) when it fuses two signed min/max into `VIMNMX3` for
    /// sm_90/sm_90a — `min(min(a, -b), c)` becomes `min(min(a, b), c)`; found by the SASS
    /// emulator, `bench/SASS_EMU.md`. Spelled this way the negation survives (one more
    /// instruction), and 13.5 compiles both spellings right.
    fn neg_i32_opaque(&mut self, x: Reg) -> Reg {
        let t = self.new_reg(RegClass::B32);
        self.ins(format!("not.b32 {t}, {x}"));
        let r = self.new_reg(RegClass::B32);
        self.ins(format!("add.s32 {r}, {t}, 1"));
        r
    }

    /// Re-normalises an 8-bit integer held in a 16-bit register after arithmetic.
    fn normalise(&mut self, d: DType, r: Reg) {
        match d {
            DType::I8 => self.ins(format!("cvt.s16.s8 {r}, {r}")),
            DType::U8 => self.ins(format!("and.b16 {r}, {r}, 255")),
            _ => {}
        }
    }

    pub fn binary(&mut self, op: BinaryOp, d: DType, a: Reg, b: Reg) -> Res<Reg> {
        use BinaryOp::*;
        if d == DType::I1 {
            let r = self.new_reg(RegClass::Pred);
            let ins = match op {
                And | Mul | Min => "and",
                Or | Max => "or",
                Xor | Add | Sub => "xor",
                _ => return Err(self.err(format!("`{}` is not supported on i1", op.name()))),
            };
            self.ins(format!("{ins}.pred {r}, {a}, {b}"));
            return Ok(r);
        }
        if d.is_int() {
            let t = int_ty(d);
            let bits = class_of_dtype(d).btype();
            let r = self.new_reg(class_of_dtype(d));
            match op {
                Add | Sub => self.ins(format!("{}.{t} {r}, {a}, {b}", if op == Add { "add" } else { "sub" })),
                Mul => self.ins(format!("mul.lo.{t} {r}, {a}, {b}")),
                Div => self.ins(format!("div.{t} {r}, {a}, {b}")),
                Rem => self.ins(format!("rem.{t} {r}, {a}, {b}")),
                And | Or | Xor => self.ins(format!("{}.{bits} {r}, {a}, {b}", op.name())),
                Max | Min | MaxNan | MinNan => {
                    let m = if matches!(op, Max | MaxNan) { "max" } else { "min" };
                    self.ins(format!("{m}.{t} {r}, {a}, {b}"));
                }
                Shl | Shr => {
                    let amount = self.as_u32_reg(b);
                    let ins = if op == Shl {
                        format!("shl.{bits}")
                    } else if d.is_signed_int() {
                        format!("shr.{t}")
                    } else {
                        format!("shr.{}", t.replace('s', "u"))
                    };
                    self.ins(format!("{ins} {r}, {a}, {amount}"));
                }
                UMulHi => {
                    let u = t.replace('s', "u");
                    self.ins(format!("mul.hi.{u} {r}, {a}, {b}"));
                }
                _ => return Err(self.err(format!("`{}` is not supported on integers", op.name()))),
            }
            if matches!(op, Add | Sub | Mul | Div | Shl) {
                self.normalise(d, r);
            }
            return Ok(r);
        }
        if !native_float(d) {
            let x = self.widen_f32(d, a)?;
            let y = self.widen_f32(d, b)?;
            let z = self.binary(op, DType::F32, x, y)?;
            return self.narrow_f32(d, z, Rounding::Rtne);
        }
        let t = float_ty(d);
        let r = self.new_reg(class_of_dtype(d));
        match op {
            Add => self.ins(format!("add.{t} {r}, {a}, {b}")),
            Sub => self.ins(format!("sub.{t} {r}, {a}, {b}")),
            Mul => self.ins(format!("mul.{t} {r}, {a}, {b}")),
            Div => {
                if d == DType::F32 {
                    // As Triton: the full-range approximate division (max 2 ulp).
                    self.ins(format!("div.full.f32 {r}, {a}, {b}"));
                } else {
                    self.ins(format!("div.rn.{t} {r}, {a}, {b}"));
                }
            }
            Max | Min => {
                let m = if op == Max { "max" } else { "min" };
                self.ins(format!("{m}.{t} {r}, {a}, {b}"));
            }
            MaxNan | MinNan => {
                let m = if op == MaxNan { "max" } else { "min" };
                if d == DType::F32 {
                    self.ins(format!("{m}.NaN.f32 {r}, {a}, {b}"));
                } else {
                    // f64 has no .NaN form: pick a NaN operand explicitly.
                    let p = self.new_reg(RegClass::Pred);
                    let q = self.new_reg(RegClass::Pred);
                    self.ins(format!("{m}.f64 {r}, {a}, {b}"));
                    self.ins(format!("setp.nan.f64 {p}, {a}, {a}"));
                    self.ins(format!("setp.nan.f64 {q}, {b}, {b}"));
                    self.ins(format!("@{q} mov.b64 {r}, {b}"));
                    self.ins(format!("@{p} mov.b64 {r}, {a}"));
                }
            }
            Rem => return self.fmod(d, a, b),
            Pow => return self.pow(d, a, b),
            Atan2 => return self.atan2(d, a, b),
            Hypot => return self.hypot(d, a, b),
            CopySign => {
                let (c, sign) = if d == DType::F32 { ("b32", "0x80000000") } else { ("b64", "0x8000000000000000") };
                let t1 = self.new_reg(r.class);
                let t2 = self.new_reg(r.class);
                let notsign = if d == DType::F32 { "0x7FFFFFFF" } else { "0x7FFFFFFFFFFFFFFF" };
                self.ins(format!("and.{c} {t1}, {a}, {notsign}"));
                self.ins(format!("and.{c} {t2}, {b}, {sign}"));
                self.ins(format!("or.{c} {r}, {t1}, {t2}"));
            }
            And | Or | Xor | Shl | Shr | UMulHi => {
                return Err(self.err(format!("`{}` is not supported on floats", op.name())))
            }
        }
        Ok(r)
    }

    /// Any integer register as a u32 (shift amounts).
    pub fn as_u32_reg(&mut self, r: Reg) -> Reg {
        match r.class {
            RegClass::B32 => r,
            RegClass::B16 => {
                let t = self.new_reg(RegClass::B32);
                self.ins(format!("cvt.u32.u16 {t}, {r}"));
                t
            }
            RegClass::B64 => {
                let t = self.new_reg(RegClass::B32);
                // Amounts past the width shift everything out either way; clamp so truncation cannot wrap.
                let c = self.new_reg(RegClass::B64);
                self.ins(format!("min.u64 {c}, {r}, 64"));
                self.ins(format!("cvt.u32.u64 {t}, {c}"));
                t
            }
            RegClass::Pred => {
                let t = self.new_reg(RegClass::B32);
                self.ins(format!("selp.u32 {t}, 1, 0, {r}"));
                t
            }
        }
    }

    pub fn cmp(&mut self, p: CmpPred, d: DType, a: Reg, b: Reg) -> Res<Reg> {
        let r = self.new_reg(RegClass::Pred);
        if d == DType::I1 {
            let x = self.as_u32_reg(a);
            let y = self.as_u32_reg(b);
            return self.cmp(p, DType::U32, x, y);
        }
        if d.is_int() {
            let t = int_ty(d);
            self.ins(format!("setp.{}.{t} {r}, {a}, {b}", p.name()));
            return Ok(r);
        }
        if !native_float(d) {
            let x = self.widen_f32(d, a)?;
            let y = self.widen_f32(d, b)?;
            return self.cmp(p, DType::F32, x, y);
        }
        let name = if p == CmpPred::Ne { "neu" } else { p.name() };
        self.ins(format!("setp.{name}.{} {r}, {a}, {b}", float_ty(d)));
        Ok(r)
    }

    pub fn fma(&mut self, d: DType, a: Reg, b: Reg, c: Reg) -> Res<Reg> {
        let r = self.new_reg(class_of_dtype(d));
        if d.is_int() {
            if d == DType::I1 {
                return Err(self.err("fma is not supported on i1"));
            }
            self.ins(format!("mad.lo.{} {r}, {a}, {b}, {c}", int_ty(d)));
            self.normalise(d, r);
            return Ok(r);
        }
        match d {
            DType::F32 | DType::F64 | DType::F16 | DType::BF16 => {
                self.ins(format!("fma.rn.{} {r}, {a}, {b}, {c}", float_ty(d)));
                Ok(r)
            }
            _ => {
                let x = self.widen_f32(d, a)?;
                let y = self.widen_f32(d, b)?;
                let z = self.widen_f32(d, c)?;
                let w = self.fma(DType::F32, x, y, z)?;
                self.narrow_f32(d, w, Rounding::Rtne)
            }
        }
    }

    /// A float of type `d` widened to f32 (exact).
    pub fn widen_f32(&mut self, d: DType, a: Reg) -> Res<Reg> {
        let r = self.new_reg(RegClass::B32);
        match d {
            DType::F32 => return Ok(a),
            DType::F16 => self.ins(format!("cvt.f32.f16 {r}, {a}")),
            DType::BF16 => {
                // bf16 is the high half of an f32.
                self.ins(format!("mov.b32 {r}, {{0, {a}}}"));
            }
            DType::F64 => self.ins(format!("cvt.rn.f32.f64 {r}, {a}")),
            DType::F8E4M3 | DType::F8E5M2 => return self.fp8_to_f32(d, a),
            _ => return Err(self.err(format!("internal: {d} is not a float"))),
        }
        Ok(r)
    }

    /// An f32 rounded to float type `d`.
    pub fn narrow_f32(&mut self, d: DType, a: Reg, rnd: Rounding) -> Res<Reg> {
        let rz = rnd == Rounding::Rtz;
        let m = if rz { "rz" } else { "rn" };
        match d {
            DType::F32 => Ok(a),
            DType::F16 | DType::BF16 => {
                let r = self.new_reg(RegClass::B16);
                self.ins(format!("cvt.{m}.{}.f32 {r}, {a}", float_ty(d)));
                Ok(r)
            }
            DType::F64 => {
                let r = self.new_reg(RegClass::B64);
                self.ins(format!("cvt.f64.f32 {r}, {a}"));
                Ok(r)
            }
            DType::F8E4M3 | DType::F8E5M2 => self.f32_to_fp8(d, a, rz),
            _ => Err(self.err(format!("internal: {d} is not a float"))),
        }
    }

    pub fn cast(&mut self, kind: CastKind, rnd: Rounding, from: Elem, to: Elem, a: Reg) -> Res<Reg> {
        match kind {
            CastKind::Bitcast | CastKind::PtrToInt | CastKind::IntToPtr => {
                let (fc, tc) = (class_of(from), class_of(to));
                // An 8-bit integer lives in a 16-bit register, sign- or zero-extended by its
                // type (`normalise`): reinterpreting the byte as the other signedness (or an
                // fp8 byte as an integer) must extend it again, or an `i8` shift right would
                // see a zero-extended byte and shift in zeros.
                if let Some(d @ (DType::I8 | DType::U8)) = to.num().filter(|_| from != to && fc == tc) {
                    let r = self.new_reg(tc);
                    self.ins(format!("mov.b16 {r}, {a}"));
                    self.normalise(d, r);
                    return Ok(r);
                }
                if fc == tc {
                    return Ok(a);
                }
                let r = self.new_reg(tc);
                match (fc, tc) {
                    (RegClass::B64, RegClass::B32) => self.ins(format!("cvt.u32.u64 {r}, {a}")),
                    (RegClass::B32, RegClass::B64) => {
                        let s = if from.num().is_some_and(|d| d.is_signed_int()) { "s64.s32" } else { "u64.u32" };
                        self.ins(format!("cvt.{s} {r}, {a}"))
                    }
                    _ => return Err(self.err(format!("cannot reinterpret {from} as {to}"))),
                }
                Ok(r)
            }
            CastKind::Convert => {
                let (Some(s), Some(t)) = (from.num(), to.num()) else {
                    return Err(self.err("convert needs numbers"));
                };
                self.convert(s, t, rnd, a)
            }
        }
    }

    /// Value conversion between number types.
    pub fn convert(&mut self, s: DType, t: DType, rnd: Rounding, a: Reg) -> Res<Reg> {
        if s == t {
            return Ok(a);
        }
        let tc = class_of_dtype(t);
        // → i1: nonzero.
        if t == DType::I1 {
            let r = self.new_reg(RegClass::Pred);
            if s.is_float() {
                let x = self.widen_f32_any(s, a)?;
                let (xf, ty) = x;
                self.ins(format!(
                    "setp.neu.{ty} {r}, {xf}, 0{}",
                    if ty == "f64" { "d0000000000000000" } else { "f00000000" }
                ));
            } else {
                self.ins(format!("setp.ne.{} {r}, {a}, 0", int_ty(s)));
            }
            return Ok(r);
        }
        // i1 →: 0 or 1.
        if s == DType::I1 {
            let one = super::shape::const_bits(trident_ir::Const::Int(1), Elem::Num(t));
            let r = self.new_reg(tc);
            self.ins(format!("selp.{} {r}, {one}, 0, {a}", tc.btype()));
            return Ok(r);
        }
        if s.is_int() && t.is_int() {
            let r = self.new_reg(tc);
            let tb = t.bits();
            let sb = s.bits();
            let (sr, tr) = (class_of_dtype(s).bits(), tc.bits());
            if sr == tr {
                // Same register: 16-bit registers hold 8-bit values extended by their own
                // signedness, which is what a widening conversion to 16 bits gives; a
                // conversion to 8 bits re-extends the low byte.
                if tb == 8 {
                    self.mov(r, a);
                    self.normalise(t, r);
                    return Ok(r);
                }
                return Ok(a);
            }
            // Different register widths: cvt sign/zero-extends by the source type, truncates to the target.
            let st = if sb == 8 {
                if s.is_signed_int() {
                    "s16"
                } else {
                    "u16"
                }
            } else {
                int_ty(s)
            };
            if tb == 8 {
                let wide = int_ty(t);
                self.ins(format!("cvt.{wide}.{st} {r}, {a}"));
                self.normalise(t, r);
            } else {
                self.ins(format!("cvt.{}.{st} {r}, {a}", int_ty(t)));
            }
            return Ok(r);
        }
        if s.is_int() && t.is_float() {
            let st = if s.bits() == 8 {
                if s.is_signed_int() {
                    "s16"
                } else {
                    "u16"
                }
            } else {
                int_ty(s)
            };
            let m = if rnd == Rounding::Rtz { "rz" } else { "rn" };
            return match t {
                DType::F32 | DType::F64 | DType::F16 => {
                    let r = self.new_reg(tc);
                    self.ins(format!("cvt.{m}.{}.{st} {r}, {a}", float_ty(t)));
                    Ok(r)
                }
                _ => {
                    let x = self.new_reg(RegClass::B32);
                    self.ins(format!("cvt.{m}.f32.{st} {x}, {a}"));
                    self.narrow_f32(t, x, rnd)
                }
            };
        }
        if s.is_float() && t.is_int() {
            let tt = if t.bits() == 8 {
                if t.is_signed_int() {
                    "s16"
                } else {
                    "u16"
                }
            } else {
                int_ty(t)
            };
            let r = self.new_reg(tc);
            match s {
                DType::F32 | DType::F64 | DType::F16 => self.ins(format!("cvt.rzi.{tt}.{} {r}, {a}", float_ty(s))),
                _ => {
                    let x = self.widen_f32(s, a)?;
                    self.ins(format!("cvt.rzi.{tt}.f32 {r}, {x}"));
                }
            }
            if t.bits() == 8 {
                // Saturate to the 8-bit range (cvt saturated to 16 bits).
                let (lo, hi) = if t.is_signed_int() { (-128i32, 127) } else { (0, 255) };
                let ty = int_ty(t);
                self.ins(format!("max.{ty} {r}, {r}, {}", lo as i16));
                self.ins(format!("min.{ty} {r}, {r}, {hi}"));
            }
            return Ok(r);
        }
        // float → float
        match (s, t) {
            (DType::F64, DType::F16) => {
                let r = self.new_reg(RegClass::B16);
                let m = if rnd == Rounding::Rtz { "rz" } else { "rn" };
                self.ins(format!("cvt.{m}.f16.f64 {r}, {a}"));
                Ok(r)
            }
            (DType::F64, DType::F32) => {
                let r = self.new_reg(RegClass::B32);
                let m = if rnd == Rounding::Rtz { "rz" } else { "rn" };
                self.ins(format!("cvt.{m}.f32.f64 {r}, {a}"));
                Ok(r)
            }
            (_, DType::F64) => {
                let x = self.widen_f32(s, a)?;
                let r = self.new_reg(RegClass::B64);
                self.ins(format!("cvt.f64.f32 {r}, {x}"));
                Ok(r)
            }
            (DType::F16, DType::F8E5M2) if self.opts.target.capability() < 89 => self.f16_to_e5m2(a, rnd),
            _ => {
                let x = self.widen_f32(s, a)?;
                self.narrow_f32(t, x, rnd)
            }
        }
    }

    /// A float as f32 (or f64 left as is), with its PTX type name.
    fn widen_f32_any(&mut self, s: DType, a: Reg) -> Res<(Reg, &'static str)> {
        if s == DType::F64 {
            Ok((a, "f64"))
        } else {
            Ok((self.widen_f32(s, a)?, "f32"))
        }
    }

    pub fn unary(&mut self, op: UnaryOp, d: DType, a: Reg) -> Res<Reg> {
        use UnaryOp::*;
        if d.is_int() {
            let c = class_of_dtype(d);
            let r = self.new_reg(if matches!(op, IsNan | IsInf | IsFinite | Signbit) { RegClass::Pred } else { c });
            if d == DType::I1 {
                match op {
                    Not => self.ins(format!("not.pred {r}, {a}")),
                    Abs => self.mov(r, a),
                    _ => return Err(self.err(format!("`{}` is not supported on i1", op.name()))),
                }
                return Ok(r);
            }
            let t = int_ty(d);
            match op {
                Neg => self.ins(format!("neg.{} {r}, {a}", t.replace('u', "s"))),
                Not => self.ins(format!("not.{} {r}, {a}", c.btype())),
                Abs => {
                    if d.is_signed_int() {
                        self.ins(format!("abs.{t} {r}, {a}"))
                    } else {
                        self.mov(r, a)
                    }
                }
                Popc | Clz => {
                    // popc/clz take .b32/.b64 and give a u32.
                    let (x, w) = match c {
                        RegClass::B16 => {
                            let x = self.new_reg(RegClass::B32);
                            self.ins(format!("cvt.u32.u16 {x}, {a}"));
                            (x, "b32")
                        }
                        RegClass::B64 => (a, "b64"),
                        _ => (a, "b32"),
                    };
                    let n = self.new_reg(RegClass::B32);
                    self.ins(format!("{}.{w} {n}, {x}", op.name()));
                    if op == Clz && c == RegClass::B16 {
                        let bits = 32 - d.bits();
                        self.ins(format!("sub.u32 {n}, {n}, {bits}"));
                    }
                    if op == Popc && d.bits() == 8 {
                        // Signed values are sign-extended in the register: count the low byte only.
                        let y = self.new_reg(RegClass::B32);
                        self.ins(format!("and.b32 {y}, {x}, 255"));
                        self.ins(format!("popc.b32 {n}, {y}"));
                    }
                    match c {
                        RegClass::B16 => self.ins(format!("cvt.u16.u32 {r}, {n}")),
                        RegClass::B64 => self.ins(format!("cvt.u64.u32 {r}, {n}")),
                        _ => self.mov(r, n),
                    }
                }
                _ => return Err(self.err(format!("`{}` is not supported on integers", op.name()))),
            }
            if op == Neg {
                self.normalise(d, r);
            }
            return Ok(r);
        }
        self.float_unary(op, d, a)
    }
}
