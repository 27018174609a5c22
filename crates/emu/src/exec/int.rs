//! Integer and bit instructions, `mov` (including vector pack/unpack) and `cvta`.

use super::warp::{bad_operand, unsupported, Ex, R};
use crate::ir::{Instr, Kind, MulMode, Operand, Space, Ty};
use crate::memory::{LOCAL_WINDOW, SHARED_WINDOW};

/// Sign-extends the low `bits` of `v`.
pub fn sext(v: u64, bits: u32) -> i64 {
    if bits >= 64 {
        v as i64
    } else {
        let s = 64 - bits;
        ((v << s) as i64) >> s
    }
}

/// Value of `v` as type `t`, widened to i128 (sign- or zero-extended).
pub fn as_i128(v: u64, t: Ty) -> i128 {
    if t.is_signed() {
        sext(v, t.bits()) as i128
    } else {
        (v & t.mask()) as i128
    }
}

fn lop3(a: u64, b: u64, c: u64, lut: u64) -> u64 {
    let mut r = 0;
    for i in 0..8u64 {
        if lut >> i & 1 != 0 {
            let ta = if i & 4 != 0 { a } else { !a };
            let tb = if i & 2 != 0 { b } else { !b };
            let tc = if i & 1 != 0 { c } else { !c };
            r |= ta & tb & tc;
        }
    }
    r
}

fn prmt(a: u64, b: u64, c: u64, mode: u8) -> u64 {
    let bytes = ((b & 0xffff_ffff) << 32) | (a & 0xffff_ffff);
    let byte = |i: u64| (bytes >> (8 * (i & 7))) & 0xff;
    let sel = |n: u64| -> u64 {
        let s = byte(n & 7);
        if n & 8 != 0 {
            if s & 0x80 != 0 {
                0xff
            } else {
                0
            }
        } else {
            s
        }
    };
    let c0 = c & 3;
    let idx: [u64; 4] = match mode {
        0 => return (0..4).fold(0, |acc, k| acc | (sel((c >> (4 * k)) & 0xf) << (8 * k))),
        1 => [c0, (c0 + 1) & 7, (c0 + 2) & 7, (c0 + 3) & 7], // f4e
        2 => [c0, (c0 + 7) & 7, (c0 + 6) & 7, (c0 + 5) & 7], // b4e
        3 => [c0; 4],                                        // rc8
        4 => match c0 {
            0 => [0, 1, 2, 3],
            1 => [1, 1, 2, 3],
            2 => [2, 2, 2, 3],
            _ => [3, 3, 3, 3],
        }, // ecl
        5 => match c0 {
            0 => [0, 0, 0, 0],
            1 => [0, 1, 1, 1],
            2 => [0, 1, 2, 2],
            _ => [0, 1, 2, 3],
        }, // ecr
        _ => {
            let h = (c & 1) * 2;
            [h, h + 1, h, h + 1]
        } // rc16
    };
    (0..4).fold(0, |acc, k| acc | (byte(idx[k]) << (8 * k)))
}

pub fn exec(ex: &mut Ex, ins: &Instr, mask: u32) -> R<()> {
    use Kind::*;
    let t = ins.ty();
    let bits = t.bits();
    let signed = t.is_signed();
    let wm = t.mask();
    let o = &ins.ops;
    if bits > 64 {
        return Err(unsupported(ins, "128-bit integer arithmetic"));
    }
    let a = ex.src(&o[1])?;
    let mut out = [0u64; 32];
    let mut out_mask = wm;
    macro_rules! each {
        (|$x:ident, $l:ident| $body:expr) => {
            for $l in 0..32 {
                let $x = a[$l];
                out[$l] = $body;
            }
        };
    }
    match ins.kind {
        Not => each!(|x, _l| !x),
        Cnot => each!(|x, _l| ((x & wm) == 0) as u64),
        Popc => {
            out_mask = u32::MAX as u64;
            each!(|x, _l| (x & wm).count_ones() as u64)
        }
        Clz => {
            out_mask = u32::MAX as u64;
            each!(|x, _l| ((x & wm).leading_zeros() - (64 - bits)) as u64)
        }
        Brev => each!(|x, _l| (x & wm).reverse_bits() >> (64 - bits)),
        Bfind => {
            out_mask = u32::MAX as u64;
            let shiftamt = ins.m.count == 1;
            each!(|x, _l| {
                let v = if signed && sext(x, bits) < 0 { !x & wm } else { x & wm };
                if v == 0 {
                    u32::MAX as u64
                } else {
                    let msb = 63 - v.leading_zeros() as u64;
                    if shiftamt {
                        bits as u64 - 1 - msb
                    } else {
                        msb
                    }
                }
            })
        }
        Abs => each!(|x, _l| sext(x, bits).wrapping_abs() as u64),
        Neg => each!(|x, _l| (x as i64).wrapping_neg() as u64),
        _ => {
            let b = ex.src(&o[2])?;
            match ins.kind {
                Add | Sub => {
                    let sub = ins.kind == Sub;
                    if ins.m.sat {
                        if t != Ty::S32 {
                            return Err(unsupported(ins, "saturation needs .s32"));
                        }
                        each!(|x, l| {
                            let (p, q) = (sext(x, 32) as i32, sext(b[l], 32) as i32);
                            (if sub { p.saturating_sub(q) } else { p.saturating_add(q) }) as u32 as u64
                        })
                    } else if sub {
                        each!(|x, l| x.wrapping_sub(b[l]))
                    } else {
                        each!(|x, l| x.wrapping_add(b[l]))
                    }
                }
                Mul | Mad | Mul24 | Mad24 => {
                    let c = if matches!(ins.kind, Mad | Mad24) { Some(ex.src(&o[3])?) } else { None };
                    let is24 = matches!(ins.kind, Mul24 | Mad24);
                    if ins.m.mul == MulMode::Wide {
                        out_mask = if bits >= 32 { u64::MAX } else { (1u64 << (2 * bits)) - 1 };
                    }
                    for l in 0..32 {
                        let (x, y) = if is24 {
                            let m24 = |v: u64| if signed { sext(v, 24) as i128 } else { (v & 0xff_ffff) as i128 };
                            (m24(a[l]), m24(b[l]))
                        } else {
                            (as_i128(a[l], t), as_i128(b[l], t))
                        };
                        let p = x.wrapping_mul(y);
                        let r = match ins.m.mul {
                            MulMode::Lo => p as u64,
                            MulMode::Wide => p as u64,
                            MulMode::Hi if is24 => (p >> 16) as u64,
                            MulMode::Hi => (p >> bits) as u64,
                        };
                        out[l] = match &c {
                            Some(c) if ins.m.sat && ins.m.mul == MulMode::Hi && t == Ty::S32 => {
                                (sext(r, 32) + sext(c[l], 32)).clamp(i32::MIN as i64, i32::MAX as i64) as u32 as u64
                            }
                            Some(c) => r.wrapping_add(c[l]),
                            None => r,
                        };
                    }
                }
                Div | Rem => {
                    let div = ins.kind == Div;
                    each!(|x, l| {
                        let y = b[l];
                        if signed {
                            let (p, q) = (sext(x, bits), sext(y, bits));
                            if q == 0 {
                                // Division and remainder by zero give all ones (H100).
                                u64::MAX
                            } else if div {
                                p.wrapping_div(q) as u64
                            } else {
                                p.wrapping_rem(q) as u64
                            }
                        } else {
                            let (p, q) = (x & wm, y & wm);
                            if q == 0 {
                                u64::MAX
                            } else if div {
                                p / q
                            } else {
                                p % q
                            }
                        }
                    })
                }
                Min | Max => {
                    let max = ins.kind == Max;
                    each!(|x, l| {
                        let (p, q) = (as_i128(x, t), as_i128(b[l], t));
                        let r = if max { p.max(q) } else { p.min(q) };
                        if ins.m.relu && r < 0 {
                            0
                        } else {
                            r as u64
                        }
                    })
                }
                Sad => {
                    let c = ex.src(&o[3])?;
                    each!(|x, l| ((as_i128(x, t) - as_i128(b[l], t)).unsigned_abs() as u64).wrapping_add(c[l]))
                }
                And => each!(|x, l| x & b[l]),
                Or => each!(|x, l| x | b[l]),
                Xor => each!(|x, l| x ^ b[l]),
                Shl => each!(|x, l| {
                    let s = b[l] & 0xffff_ffff;
                    if s >= bits as u64 {
                        0
                    } else {
                        x << s
                    }
                }),
                Shr => each!(|x, l| {
                    let s = b[l] & 0xffff_ffff;
                    if signed {
                        (sext(x, bits) >> s.min(63)) as u64
                    } else if s >= bits as u64 {
                        0
                    } else {
                        (x & wm) >> s
                    }
                }),
                Shf => {
                    let c = ex.src(&o[3])?;
                    each!(|x, l| {
                        let n = if ins.m.clamp { (c[l] & 0xffff_ffff).min(32) } else { c[l] & 31 };
                        let wide = ((b[l] & 0xffff_ffff) << 32) | (x & 0xffff_ffff);
                        if ins.m.left {
                            (wide << n) >> 32
                        } else {
                            wide >> n
                        }
                    })
                }
                Lop3 => {
                    let c = ex.src(&o[3])?;
                    let lut = ex.src(&o[4])?;
                    each!(|x, l| lop3(x, b[l], c[l], lut[l] & 0xff))
                }
                Prmt => {
                    let c = ex.src(&o[3])?;
                    let mode = ins.m.count;
                    each!(|x, l| prmt(x, b[l], c[l], mode))
                }
                Bfe => {
                    let c = ex.src(&o[3])?;
                    let msb = bits as u64 - 1;
                    each!(|x, l| {
                        let pos = b[l] & 0xff;
                        let len = c[l] & 0xff;
                        let sbit = if signed && len > 0 { (x >> (pos + len - 1).min(msb)) & 1 } else { 0 };
                        let mut d = 0u64;
                        for i in 0..=msb {
                            let bit = if i < len && pos + i <= msb { (x >> (pos + i)) & 1 } else { sbit };
                            d |= bit << i;
                        }
                        d
                    })
                }
                Bfi => {
                    let pos = ex.src(&o[3])?;
                    let len = ex.src(&o[4])?;
                    let msb = bits as u64 - 1;
                    each!(|x, l| {
                        let (p, n) = (pos[l] & 0xff, len[l] & 0xff);
                        let mut f = b[l];
                        let mut i = 0;
                        while i < n && p + i <= msb {
                            f = (f & !(1 << (p + i))) | (((x >> i) & 1) << (p + i));
                            i += 1;
                        }
                        f
                    })
                }
                _ => return Err(unsupported(ins, "integer op")),
            }
        }
    }
    ex.dst(&o[0], mask, &out, out_mask)
}

/// `mov` (scalar, special registers, symbols, vector pack/unpack) and `cvta`.
pub fn mov(ex: &mut Ex, ins: &Instr, mask: u32) -> R<()> {
    let t = ins.ty();
    let o = &ins.ops;
    if ins.kind == Kind::Cvta {
        let a = ex.src(&o[1])?;
        let (base, size) = match ins.m.space {
            Some(Space::Shared) => (SHARED_WINDOW, 1u64 << 32),
            Some(Space::Local) => (LOCAL_WINDOW, 1u64 << 32),
            Some(Space::Global) | Some(Space::Const) | Some(Space::Param) => (0, u64::MAX),
            _ => return Err(unsupported(ins, "cvta needs a state space")),
        };
        let mut out = [0u64; 32];
        for l in 0..32 {
            out[l] = if ins.m.to {
                if size == u64::MAX {
                    a[l]
                } else {
                    a[l].wrapping_sub(base) & (size - 1)
                }
            } else {
                a[l].wrapping_add(base)
            };
        }
        return ex.dst(&o[0], mask, &out, t.mask());
    }
    match (&o[0], &o[1]) {
        (Operand::Vec(parts), src) => {
            // Unpack: the first element receives the lowest bits.
            let v = ex.src(src)?;
            let w = t.bits() / parts.len().max(1) as u32;
            let em = if w >= 64 { u64::MAX } else { (1u64 << w) - 1 };
            for (k, p) in parts.iter().enumerate() {
                let mut out = [0u64; 32];
                for l in 0..32 {
                    out[l] = (v[l] >> (w * k as u32)) & em;
                }
                ex.dst(p, mask, &out, em)?;
            }
            Ok(())
        }
        (d, Operand::Vec(parts)) => {
            let w = t.bits() / parts.len().max(1) as u32;
            let em = if w >= 64 { u64::MAX } else { (1u64 << w) - 1 };
            let mut out = [0u64; 32];
            for (k, p) in parts.iter().enumerate() {
                let v = ex.src(p)?;
                for l in 0..32 {
                    out[l] |= (v[l] & em) << (w * k as u32);
                }
            }
            ex.dst(d, mask, &out, t.mask())
        }
        (d, s @ (Operand::Reg(_) | Operand::Imm(_) | Operand::Sreg(_) | Operand::NotReg(_))) => {
            let v = ex.src(s)?;
            ex.dst(d, mask, &v, t.mask())
        }
        _ => Err(bad_operand("mov operands")),
    }
}
