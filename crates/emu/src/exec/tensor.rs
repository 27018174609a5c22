//! Tensor-core instructions: `ldmatrix`, `stmatrix` and `mma.sync`, with the
//! fragment layouts of the PTX ISA ("Matrix Fragments for mma.m16n8kK"):
//! `groupID = lane >> 2`, `threadID_in_group = lane % 4`.

use super::warp::{bad_operand, unsupported, Ex, R};
use crate::error::{EmuError, ErrorKind};
use crate::fp::{self, Small};
use crate::ir::{Instr, Kind, Operand, Space, Ty};

fn regs<'a>(op: &'a Operand, n: usize, what: &str) -> R<Vec<&'a Operand>> {
    match op {
        Operand::Vec(v) if v.len() == n => Ok(v.iter().collect()),
        o if n == 1 && !matches!(o, Operand::Vec(_)) => Ok(vec![o]),
        _ => Err(bad_operand(&format!("{what} must be a vector of {n} registers"))),
    }
}

pub fn exec(ex: &mut Ex, ins: &Instr, mask: u32) -> R<()> {
    let live = ex.w.lanes & !ex.w.exited;
    if mask != live {
        return Err(EmuError::new(
            ErrorKind::Runtime,
            format!("{:?} is warp-synchronous but only lanes {mask:#010x} of {live:#010x} execute it", ins.kind),
        ));
    }
    match ins.kind {
        Kind::Ldmatrix => ldmatrix(ex, ins, mask),
        Kind::Stmatrix => stmatrix(ex, ins, mask),
        _ => mma(ex, ins, mask),
    }
}

fn ldmatrix(ex: &mut Ex, ins: &Instr, mask: u32) -> R<()> {
    if ins.ty() != Ty::B16 || ins.m.shape != (8, 8, 0) {
        return Err(unsupported(ins, "ldmatrix supports .m8n8 .b16"));
    }
    let space = ins.m.space.unwrap_or(Space::Generic);
    let n = ins.m.count as usize;
    let dsts = regs(&ins.ops[0], n, "ldmatrix destination")?;
    // rows[i][r]: the eight b16 elements of row r of matrix i, addressed by lane 8*i + r.
    let mut rows = [[[0u16; 8]; 8]; 4];
    for (i, mat) in rows.iter_mut().enumerate().take(n) {
        for (r, row) in mat.iter_mut().enumerate() {
            let lane = (8 * i + r) as u32;
            let a = ex.addr(&ins.ops[1], lane)?;
            let mut b = [0u8; 16];
            ex.read_mem(space, a, &mut b, lane, ins.line).map_err(|e| e.at_thread(ex.m.ctaid, ex.thread_xyz(lane)))?;
            for (k, x) in row.iter_mut().enumerate() {
                *x = u16::from_le_bytes([b[2 * k], b[2 * k + 1]]);
            }
        }
    }
    for (i, d) in dsts.iter().enumerate() {
        let mut out = [0u64; 32];
        for (t, o) in out.iter_mut().enumerate() {
            let (row, c) = (t / 4, 2 * (t % 4));
            let (lo, hi) = if ins.m.trans {
                (rows[i][c][row], rows[i][c + 1][row])
            } else {
                (rows[i][row][c], rows[i][row][c + 1])
            };
            *o = lo as u64 | (hi as u64) << 16;
        }
        ex.dst(d, mask, &out, 0xffff_ffff)?;
    }
    Ok(())
}

fn stmatrix(ex: &mut Ex, ins: &Instr, _mask: u32) -> R<()> {
    if ins.ty() != Ty::B16 || ins.m.shape != (8, 8, 0) {
        return Err(unsupported(ins, "stmatrix supports .m8n8 .b16"));
    }
    let space = ins.m.space.unwrap_or(Space::Generic);
    let n = ins.m.count as usize;
    let srcs = regs(&ins.ops[1], n, "stmatrix source")?;
    for (i, s) in srcs.iter().enumerate() {
        let v = ex.src(s)?;
        let mut mat = [[0u16; 8]; 8];
        for (t, &x) in v.iter().enumerate() {
            let (row, c) = (t / 4, 2 * (t % 4));
            let (lo, hi) = (x as u16, (x >> 16) as u16);
            if ins.m.trans {
                mat[c][row] = lo;
                mat[c + 1][row] = hi;
            } else {
                mat[row][c] = lo;
                mat[row][c + 1] = hi;
            }
        }
        for (r, row) in mat.iter().enumerate() {
            let lane = (8 * i + r) as u32;
            let a = ex.addr(&ins.ops[0], lane)?;
            let mut b = [0u8; 16];
            for (k, x) in row.iter().enumerate() {
                b[2 * k..2 * k + 2].copy_from_slice(&x.to_le_bytes());
            }
            ex.write_mem(space, a, &b, lane, ins.line).map_err(|e| e.at_thread(ex.m.ctaid, ex.thread_xyz(lane)))?;
        }
    }
    Ok(())
}

#[derive(Copy, Clone, PartialEq)]
enum In {
    F16,
    BF16,
    TF32,
    S8,
    U8,
}

impl In {
    fn of(t: Ty) -> Option<In> {
        Some(match t {
            Ty::F16 => In::F16,
            Ty::BF16 => In::BF16,
            Ty::TF32 => In::TF32,
            Ty::S8 => In::S8,
            Ty::U8 => In::U8,
            _ => return None,
        })
    }

    fn per_reg(self) -> usize {
        match self {
            In::F16 | In::BF16 => 2,
            In::TF32 => 1,
            In::S8 | In::U8 => 4,
        }
    }

    fn value(self, reg: u64, s: usize) -> f64 {
        match self {
            In::F16 => fp::small_to_f64(Small::F16, (reg >> (16 * s)) as u16),
            In::BF16 => fp::small_to_f64(Small::BF16, (reg >> (16 * s)) as u16),
            // The tensor core reads 19 bits of a tf32 operand (sign, 8 exponent, 10 mantissa).
            In::TF32 => f32::from_bits(reg as u32 & !0x1fff) as f64,
            In::S8 => (reg >> (8 * s)) as u8 as i8 as f64,
            In::U8 => (reg >> (8 * s)) as u8 as f64,
        }
    }
}

/// (row, col) in A (M×K) of sub-element `s` of register `j` held by `lane`.
fn a_pos(k: u16, it: In, lane: usize, j: usize, s: usize) -> (usize, usize) {
    let (g, t) = (lane >> 2, lane & 3);
    match (it, k) {
        (In::TF32, _) => (g + 8 * (j & 1), t + 4 * (j >> 1)),
        (In::F16 | In::BF16, 16) => (g + 8 * (j & 1), 2 * t + s + 8 * (j >> 1)),
        (In::F16 | In::BF16, _) => (g + 8 * j, 2 * t + s),
        (_, 32) => (g + 8 * (j & 1), 4 * t + s + 16 * (j >> 1)),
        _ => (g + 8 * j, 4 * t + s),
    }
}

/// (row, col) in B (K×N).
fn b_pos(it: In, lane: usize, j: usize, s: usize) -> (usize, usize) {
    let (g, t) = (lane >> 2, lane & 3);
    match it {
        In::TF32 => (t + 4 * j, g),
        In::F16 | In::BF16 => (2 * t + s + 8 * j, g),
        _ => (4 * t + s + 16 * j, g),
    }
}

fn mma(ex: &mut Ex, ins: &Instr, mask: u32) -> R<()> {
    let (mm, nn, kk) = ins.m.shape;
    let [dt, at, bt, ct] = ins.tys[..] else { return Err(unsupported(ins, "mma needs .dtype.atype.btype.ctype")) };
    let (Some(ai), Some(bi)) = (In::of(at), In::of(bt)) else { return Err(unsupported(ins, "mma input type")) };
    let int = matches!(ai, In::S8 | In::U8);
    let ok_shape = (mm, nn) == (16, 8)
        && match ai {
            In::F16 | In::BF16 => kk == 16 || kk == 8,
            In::TF32 => kk == 8,
            _ => kk == 32 || kk == 16,
        };
    let ok_types = ai == bi || (int && matches!(bi, In::S8 | In::U8));
    let ok_acc = if int {
        dt == Ty::S32 && ct == Ty::S32
    } else {
        (dt == Ty::F32 || (dt == Ty::F16 && ai == In::F16)) && (ct == Ty::F32 || (ct == Ty::F16 && ai == In::F16))
    };
    if !(ok_shape && ok_types && ok_acc) {
        return Err(unsupported(ins, "mma shape/type combination"));
    }
    let k = kk as usize;
    let a_regs = 16 * k / 32 / ai.per_reg();
    let b_regs = k * 8 / 32 / bi.per_reg();
    let acc_regs = |t: Ty| if t == Ty::F16 { 2 } else { 4 };
    let d_ops = regs(&ins.ops[0], acc_regs(dt), "mma D")?;
    let a_ops = regs(&ins.ops[1], a_regs, "mma A")?;
    let b_ops = regs(&ins.ops[2], b_regs, "mma B")?;
    let c_ops = regs(&ins.ops[3], acc_regs(ct), "mma C")?;
    let mut a = vec![[0f64; 32]; 16];
    let mut b = vec![[0f64; 8]; 32];
    for (j, op) in a_ops.iter().enumerate() {
        let v = ex.src(op)?;
        for (lane, &r) in v.iter().enumerate() {
            for s in 0..ai.per_reg() {
                let (row, col) = a_pos(kk, ai, lane, j, s);
                a[row][col] = ai.value(r, s);
            }
        }
    }
    for (j, op) in b_ops.iter().enumerate() {
        let v = ex.src(op)?;
        for (lane, &r) in v.iter().enumerate() {
            for s in 0..bi.per_reg() {
                let (row, col) = b_pos(bi, lane, j, s);
                b[row][col] = bi.value(r, s);
            }
        }
    }
    // Accumulator positions: 4×32-bit registers (row g + 8*(j>>1), col 2t + (j&1)),
    // or 2×f16x2 registers (row g + 8*j, cols 2t, 2t+1).
    let acc_pos = |t: Ty, lane: usize, j: usize, s: usize| {
        let (g, tg) = (lane >> 2, lane & 3);
        if t == Ty::F16 {
            (g + 8 * j, 2 * tg + s)
        } else {
            (g + 8 * (j >> 1), 2 * tg + (j & 1))
        }
    };
    let mut c = [[0f64; 8]; 16];
    let mut ci = [[0i64; 8]; 16];
    for (j, op) in c_ops.iter().enumerate() {
        let v = ex.src(op)?;
        for (lane, &r) in v.iter().enumerate() {
            if ct == Ty::F16 {
                for s in 0..2 {
                    let (row, col) = acc_pos(ct, lane, j, s);
                    c[row][col] = fp::small_to_f64(Small::F16, (r >> (16 * s)) as u16);
                }
            } else {
                let (row, col) = acc_pos(ct, lane, j, 0);
                c[row][col] = f32::from_bits(r as u32) as f64;
                ci[row][col] = r as u32 as i32 as i64;
            }
        }
    }
    // D = A·B + C. Products are exact in f64; the sum is rounded once to the accumulator type.
    let mut d = [[0u64; 8]; 16];
    for i in 0..16 {
        for jn in 0..8 {
            if int {
                let mut s: i64 = ci[i][jn];
                for kx in 0..k {
                    s += (a[i][kx] * b[kx][jn]) as i64;
                }
                let s = if ins.m.satfinite { s.clamp(i32::MIN as i64, i32::MAX as i64) } else { s as i32 as i64 };
                d[i][jn] = s as u32 as u64;
            } else {
                let mut s = 0f64;
                for kx in 0..k {
                    s += a[i][kx] * b[kx][jn];
                }
                s += c[i][jn];
                d[i][jn] = if dt == Ty::F16 {
                    fp::to_small(Small::F16, s, 0.0, crate::ir::Rnd::Rn, false) as u64
                } else {
                    fp::canon32(s as f32) as u64
                };
            }
        }
    }
    for (j, op) in d_ops.iter().enumerate() {
        let mut out = [0u64; 32];
        for (lane, o) in out.iter_mut().enumerate() {
            if dt == Ty::F16 {
                let (r0, c0) = acc_pos(dt, lane, j, 0);
                let (r1, c1) = acc_pos(dt, lane, j, 1);
                *o = d[r0][c0] | d[r1][c1] << 16;
            } else {
                let (row, col) = acc_pos(dt, lane, j, 0);
                *o = d[row][col];
            }
        }
        ex.dst(op, mask, &out, 0xffff_ffff)?;
    }
    Ok(())
}
