//! Comparisons and selects: `setp` (with `.and/.or/.xor` combining and the `p|q`
//! dual destination of packed halves), `set`, `selp`, `slct`.

use super::float::elem_of;
use super::int::as_i128;
use super::warp::{bad_operand, unsupported, Ex, R};
use crate::ir::{BoolOp, Cmp, Instr, Kind, Operand, Ty};

fn cmp_int(c: Cmp, a: i128, b: i128) -> Option<bool> {
    use Cmp::*;
    Some(match c {
        Eq => a == b,
        Ne => a != b,
        Lt | Lo => a < b,
        Le | Ls => a <= b,
        Gt | Hi => a > b,
        Ge | Hs => a >= b,
        _ => return None,
    })
}

pub fn cmp_float(c: Cmp, a: f64, b: f64) -> bool {
    use Cmp::*;
    let nan = a.is_nan() || b.is_nan();
    match c {
        Eq => !nan && a == b,
        Ne => !nan && a != b,
        Lt => !nan && a < b,
        Le => !nan && a <= b,
        Gt => !nan && a > b,
        Ge => !nan && a >= b,
        Equ => nan || a == b,
        Neu => nan || a != b,
        Ltu => nan || a < b,
        Leu => nan || a <= b,
        Gtu => nan || a > b,
        Geu => nan || a >= b,
        Num => !nan,
        Nan => nan,
        Lo => !nan && a < b,
        Ls => !nan && a <= b,
        Hi => !nan && a > b,
        Hs => !nan && a >= b,
    }
}

/// Compares element `k` of lane values `a`, `b` of type `t`.
fn compare(ins: &Instr, c: Cmp, t: Ty, a: u64, b: u64, k: u32) -> Result<bool, crate::error::EmuError> {
    if let Some((el, _)) = elem_of(t) {
        let sh = k * el.bits();
        let em = if el.bits() == 64 { u64::MAX } else { (1u64 << el.bits()) - 1 };
        let ftz = ins.m.ftz;
        Ok(cmp_float(c, el.decode((a >> sh) & em, ftz), el.decode((b >> sh) & em, ftz)))
    } else {
        let signed = t.is_signed() && !matches!(c, Cmp::Lo | Cmp::Ls | Cmp::Hi | Cmp::Hs);
        let (x, y) =
            if signed { (as_i128(a, t), as_i128(b, t)) } else { ((a & t.mask()) as i128, (b & t.mask()) as i128) };
        cmp_int(c, x, y).ok_or_else(|| unsupported(ins, "unordered comparison of integers"))
    }
}

fn combine(op: Option<BoolOp>, r: bool, c: bool) -> bool {
    match op {
        None => r,
        Some(BoolOp::And) => r && c,
        Some(BoolOp::Or) => r || c,
        Some(BoolOp::Xor) => r ^ c,
    }
}

pub fn exec(ex: &mut Ex, ins: &Instr, mask: u32) -> R<()> {
    let o = &ins.ops;
    match ins.kind {
        Kind::Setp | Kind::Set => {
            let c = ins.m.cmp.ok_or_else(|| unsupported(ins, "missing comparison"))?;
            let st = *ins.tys.last().unwrap_or(&Ty::B32);
            let a = ex.src(&o[1])?;
            let b = ex.src(&o[2])?;
            let pc = match (ins.m.boolop, o.get(3)) {
                (Some(_), Some(p)) => Some(ex.src(p)?),
                (Some(_), None) => return Err(bad_operand("combining setp needs a predicate")),
                _ => None,
            };
            let packed = matches!(st, Ty::F16x2 | Ty::BF16x2);
            let mut r0 = [0u64; 32];
            let mut r1 = [0u64; 32];
            if !st.is_float() && ins.m.boolop.is_none() {
                // Integers without combining: widen once per lane, compare with the hoisted operator.
                let signed = st.is_signed() && !matches!(c, Cmp::Lo | Cmp::Ls | Cmp::Hi | Cmp::Hs);
                let wide = |v: u64| if signed { as_i128(v, st) } else { (v & st.mask()) as i128 };
                for l in 0..32 {
                    r0[l] = cmp_int(c, wide(a[l]), wide(b[l]))
                        .ok_or_else(|| unsupported(ins, "unordered comparison of integers"))?
                        as u64;
                }
            } else {
                for l in 0..32 {
                    if mask >> l & 1 == 0 {
                        continue;
                    }
                    let cv = pc.map(|p| p[l] != 0).unwrap_or(false);
                    r0[l] = combine(ins.m.boolop, compare(ins, c, st, a[l], b[l], 0)?, cv) as u64;
                    if packed {
                        r1[l] = combine(ins.m.boolop, compare(ins, c, st, a[l], b[l], 1)?, cv) as u64;
                    }
                }
            }
            if ins.kind == Kind::Setp {
                match &o[0] {
                    Operand::Vec(pq) if pq.len() == 2 => {
                        // p|q: p gets the comparison (or, for packed halves, the low half), q its negation (or the high half).
                        let q: [u64; 32] = if packed { r1 } else { r0.map(|v| v ^ 1) };
                        ex.dst(&pq[0], mask, &r0, 1)?;
                        ex.dst(&pq[1], mask, &q, 1)
                    }
                    d if packed => Err(unsupported(ins, &format!("packed setp into {d:?}"))),
                    d => ex.dst(d, mask, &r0, 1),
                }
            } else {
                let dt = ins.ty();
                let one: u64 = match dt {
                    Ty::F32 => 1.0f32.to_bits() as u64,
                    _ => dt.mask(),
                };
                let vals = r0.map(|v| if v != 0 { one } else { 0 });
                ex.dst(&o[0], mask, &vals, dt.mask())
            }
        }
        Kind::Selp => {
            let a = ex.src(&o[1])?;
            let b = ex.src(&o[2])?;
            let p = ex.src(&o[3])?;
            let mut out = [0u64; 32];
            for l in 0..32 {
                out[l] = if p[l] != 0 { a[l] } else { b[l] };
            }
            ex.dst(&o[0], mask, &out, ins.ty().mask())
        }
        Kind::Slct => {
            let ct = ins.tys.get(1).copied().unwrap_or(Ty::S32);
            let a = ex.src(&o[1])?;
            let b = ex.src(&o[2])?;
            let c = ex.src(&o[3])?;
            let mut out = [0u64; 32];
            for l in 0..32 {
                let pos = if ct == Ty::F32 {
                    let v = f32::from_bits(c[l] as u32);
                    v >= 0.0 || (v == 0.0)
                } else {
                    as_i128(c[l], ct) >= 0
                };
                out[l] = if pos { a[l] } else { b[l] };
            }
            ex.dst(&o[0], mask, &out, ins.ty().mask())
        }
        _ => Err(unsupported(ins, "compare")),
    }
}
