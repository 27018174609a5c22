//! Warpgroup MMA (`wgmma`, sm_90a): `wgmma.mma_async.m64nNk16` with f16/bf16 inputs and
//! f32 accumulators, A from registers or a shared-memory matrix descriptor, B from a
//! descriptor; `wgmma.fence`, `wgmma.commit_group`, `wgmma.wait_group`.
//!
//! A warpgroup is four consecutive warps; warp `w % 4` of it owns rows 16(w % 4).. of the
//! 64-row tile in D and (from registers) A, so each warp computes its own 16 rows from its
//! own registers and the shared tiles, with no exchange between warps.
//!
//! The instruction is asynchronous, and the emulator makes it as late as the ISA allows:
//! issuing records the operation (A registers and, unless an earlier pending operation
//! produces them, the D inputs) and overwrites D with a NaN pattern; `wgmma.wait_group`
//! runs the operations of the groups it waits for, in order, reading shared memory then.
//! A kernel that reads D before waiting, or changes a tile before the MMA that reads it
//! is waited for, gets wrong results here as on the hardware. Writing an operand register
//! (D or A) with another instruction after the last `wgmma.fence` and before a wgmma that
//! reads it is reported as an error (the ISA makes it undefined).
//!
//! Shared-memory operands follow the PTX ISA's matrix descriptor ("Matrix Descriptor
//! Format": start address, leading- and stride-dimension byte offsets, swizzle mode) and
//! canonical layouts ("Shared Memory Matrix Layout"), K-major (`imm-trans` 0) or
//! M/N-major (1), swizzle none/32/64/128 bytes (address bits [4, 7) XOR [7, 10), masked).

use super::warp::{bad_operand, unsupported, Ex, R};
use crate::error::{EmuError, ErrorKind};
use crate::fp::{self, Small};
use crate::ir::{Instr, Kind, Operand, Space, Ty};

/// Bit pattern written to D registers while their MMA is in flight (an f32 NaN).
const IN_FLIGHT: u64 = 0x7fba_dbad;

/// Where an operand of a pending MMA comes from.
#[derive(Clone, Debug)]
pub enum WgSrc {
    /// A matrix descriptor (the same in every lane).
    Desc(u64),
    /// A fragment registers' values at issue (lane-minor, 4 registers).
    Regs(Vec<[u64; 32]>),
}

/// One issued `wgmma.mma_async`.
#[derive(Clone, Debug)]
pub struct PendingMma {
    n: usize,
    bf16: bool,
    d_regs: Vec<u32>,
    /// D inputs at issue, unless an earlier pending MMA writes them (then this one takes
    /// that one's results when it runs, after it).
    d_in: Option<Vec<[u64; 32]>>,
    a: WgSrc,
    b: u64,
    trans_a: bool,
    trans_b: bool,
    scale_d: bool,
    scale_a: f64,
    scale_b: f64,
    mask: u32,
    line: u32,
}

fn reg_of(op: &Operand) -> R<u32> {
    match op {
        Operand::Reg(r) => Ok(*r),
        _ => Err(bad_operand("wgmma operands must be registers")),
    }
}

fn imm_of(op: &Operand, what: &str) -> R<i64> {
    match op {
        Operand::Imm(v) => Ok(*v as i64),
        _ => Err(bad_operand(&format!("wgmma {what} must be an immediate"))),
    }
}

/// The byte address of element (`mn`, `k`) (`mn` a row of A or a column of B) of a
/// wgmma operand described by `desc`, `bytes` per element.
pub fn operand_address(desc: u64, major_mn: bool, mn: u64, k: u64, bytes: u64) -> R<u64> {
    let start = (desc & 0x3fff) << 4;
    let lbo = ((desc >> 16) & 0x3fff) << 4;
    let sbo = ((desc >> 32) & 0x3fff) << 4;
    let base_offset = (desc >> 49) & 7;
    let swizzle: u64 = match desc >> 62 {
        0 => 0,
        1 => 128,
        2 => 64,
        _ => 32,
    };
    if base_offset != 0 {
        return Err(EmuError::new(ErrorKind::Unsupported, "wgmma descriptors with a non-zero matrix base offset"));
    }
    // Elements per 16 bytes (the unit of the canonical layouts).
    let t = 16 / bytes;
    let off = match (swizzle, major_mn) {
        // ((T,1,m),(8,k)) : ((1,T,SBO),(1T,LBO))
        (0, true) => (mn % t) * bytes + (mn / t) * sbo + (k % 8) * 16 + (k / 8) * lbo,
        // ((8,m),(T,2k)) : ((1T,SBO),(1,LBO))
        (0, false) => (mn % 8) * 16 + (mn / 8) * sbo + (k / t) * lbo + (k % t) * bytes,
        // ((T,S/16,m),(8,k)) : ((1,T,LBO),(S/16·T,SBO))
        (s, true) => (mn % (s / bytes)) * bytes + (mn / (s / bytes)) * lbo + (k % 8) * s + (k / 8) * sbo,
        // ((8,m),(T,2k)) : ((S/16·T,SBO),(1,T))
        (s, false) => (mn % 8) * s + (mn / 8) * sbo + k * bytes,
    };
    let a = start + off;
    Ok(if swizzle == 0 { a } else { a ^ (((a >> 7) & (swizzle / 16 - 1)) << 4) })
}

impl Ex<'_, '_> {
    /// Marks a register written by an ordinary instruction (for the `wgmma.fence` check).
    pub fn wg_mark(&mut self, r: u32) {
        let (w, b) = (r as usize / 64, r as usize % 64);
        if w >= self.w.wg_dirty.len() {
            self.w.wg_dirty.resize(w + 1, 0);
        }
        self.w.wg_dirty[w] |= 1 << b;
    }

    fn wg_is_dirty(&self, r: u32) -> bool {
        self.w.wg_dirty.get(r as usize / 64).is_some_and(|&w| w >> (r % 64) & 1 != 0)
    }

    /// Writes register `r` of the lanes in `mask` without marking it (wgmma's own writes).
    fn wg_write(&mut self, r: u32, mask: u32, vals: &[u64; 32]) -> R<()> {
        let at = r as usize * 32;
        let regs = &mut self.frame_mut().regs;
        let d = regs.get_mut(at..at + 32).ok_or_else(|| bad_operand("register out of range"))?;
        for lane in 0..32 {
            if mask >> lane & 1 != 0 {
                d[lane] = vals[lane] & 0xffff_ffff;
            }
        }
        Ok(())
    }

    /// A value that must be the same in every executing lane (descriptors, predicates).
    fn uniform(&self, op: &Operand, mask: u32, what: &str) -> R<u64> {
        let v = self.src(op)?;
        let first = mask.trailing_zeros() as usize;
        if (0..32).any(|l| mask >> l & 1 != 0 && v[l] != v[first]) {
            return Err(EmuError::new(ErrorKind::Runtime, format!("wgmma {what} differs between lanes")));
        }
        Ok(v[first])
    }

    /// Runs the pending MMAs of every committed group but the newest `keep`.
    pub fn complete_wgmma(&mut self, keep: usize) -> R<()> {
        while self.w.wg_groups.len() > keep {
            let Some(mut g) = self.w.wg_groups.pop_front() else { break };
            // The warp waits until the group's MMAs have completed.
            let done = self.w.wg_done.pop_front().unwrap_or(0);
            self.w.stall_until = self.w.stall_until.max(done);
            // Run in issue order; the ones not run yet still count as pending.
            while !g.is_empty() {
                let p = g.remove(0);
                let later: Vec<u32> = g
                    .iter()
                    .chain(self.w.wg_groups.iter().flatten())
                    .chain(&self.w.wg_open)
                    .flat_map(|q| q.d_regs.iter().copied())
                    .collect();
                let line = p.line;
                self.run_mma(&p, &later).map_err(|e| {
                    if e.line.is_none() {
                        e.at_line(line, self.l.module.line_text(line))
                    } else {
                        e
                    }
                })?;
            }
        }
        Ok(())
    }

    /// Runs one MMA; `later` are the D registers of MMAs still pending after it.
    fn run_mma(&mut self, p: &PendingMma, later: &[u32]) -> R<()> {
        let rank = (self.w.id % 4) as u64;
        let small = if p.bf16 { Small::BF16 } else { Small::F16 };
        let mut a = [[0f64; 16]; 16];
        match &p.a {
            WgSrc::Regs(regs) => {
                // The mma.m16n8k16 A fragment: a[2j+s] at row g + 8(j&1), column 2t + s + 8(j>>1).
                for (j, v) in regs.iter().enumerate() {
                    for lane in 0..32 {
                        let (g, t) = (lane >> 2, lane & 3);
                        for s in 0..2 {
                            let (row, col) = (g + 8 * (j & 1), 2 * t + s + 8 * (j >> 1));
                            a[row][col] = fp::small_to_f64(small, (v[lane] >> (16 * s)) as u16);
                        }
                    }
                }
            }
            WgSrc::Desc(d) => {
                for (row, ar) in a.iter_mut().enumerate() {
                    for (k, x) in ar.iter_mut().enumerate() {
                        let at = operand_address(*d, p.trans_a, 16 * rank + row as u64, k as u64, 2)?;
                        *x = fp::small_to_f64(small, self.wg_read16(at)?);
                    }
                }
            }
        }
        let mut b = vec![[0f64; 16]; p.n];
        for (col, br) in b.iter_mut().enumerate() {
            for (k, x) in br.iter_mut().enumerate() {
                let at = operand_address(p.b, p.trans_b, col as u64, k as u64, 2)?;
                *x = fp::small_to_f64(small, self.wg_read16(at)?);
            }
        }
        // Registers a later pending MMA writes keep their in-flight pattern; the results
        // also go to the shadow its D inputs come from.
        // D[i] of a lane: row g + 8((i%4) >> 1), column 8(i/4) + 2t + (i & 1).
        for (i, &r) in p.d_regs.iter().enumerate() {
            let cur = match &p.d_in {
                Some(v) => v[i],
                None => *self
                    .w
                    .wg_shadow
                    .get(&r)
                    .ok_or_else(|| EmuError::new(ErrorKind::Runtime, "internal: wgmma chain without results"))?,
            };
            let mut out = [0u64; 32];
            for lane in 0..32 {
                if p.mask >> lane & 1 == 0 {
                    continue;
                }
                let (g, t) = (lane >> 2, lane & 3);
                let (row, col) = (g + 8 * ((i % 4) >> 1), 8 * (i / 4) + 2 * t + (i & 1));
                // Products are exact in f64; the sum is rounded once to f32.
                let mut s = if p.scale_d { f32::from_bits(cur[lane] as u32) as f64 } else { 0.0 };
                for k in 0..16 {
                    s += p.scale_a * a[row][k] * p.scale_b * b[col][k];
                }
                out[lane] = fp::canon32(s as f32) as u64;
            }
            if !later.contains(&r) {
                self.wg_write(r, p.mask, &out)?;
            }
            self.w.wg_shadow.insert(r, out);
        }
        Ok(())
    }

    fn wg_read16(&mut self, at: u64) -> R<u16> {
        let mut b = [0u8; 2];
        let line = 0;
        self.read_mem(Space::Shared, at, &mut b, 0, line)?;
        Ok(u16::from_le_bytes(b))
    }
}

pub fn exec(ex: &mut Ex, ins: &Instr, mask: u32) -> R<()> {
    let live = ex.w.lanes & !ex.w.exited;
    if mask != live {
        return Err(EmuError::new(
            ErrorKind::Runtime,
            format!("{:?} is warpgroup-synchronous but only lanes {mask:#010x} of {live:#010x} execute it", ins.kind),
        ));
    }
    match ins.kind {
        Kind::WgmmaFence => {
            ex.w.wg_fenced = true;
            ex.w.wg_dirty.clear();
            Ok(())
        }
        Kind::WgmmaCommit => {
            let g = std::mem::take(&mut ex.w.wg_open);
            ex.w.wg_groups.push_back(g);
            let done = std::mem::take(&mut ex.w.wg_open_done);
            ex.w.wg_done.push_back(done);
            Ok(())
        }
        Kind::WgmmaWait => {
            let n = imm_of(&ins.ops[0], "group count")?;
            ex.complete_wgmma(n.max(0) as usize)
        }
        _ => issue(ex, ins, mask),
    }
}

fn issue(ex: &mut Ex, ins: &Instr, mask: u32) -> R<()> {
    let (mm, nn, kk) = ins.m.shape;
    let [dt, at, bt] = ins.tys[..] else { return Err(unsupported(ins, "wgmma needs .dtype.atype.btype")) };
    let n = nn as usize;
    if mm != 64 || kk != 16 || n == 0 || !n.is_multiple_of(8) || n > 256 {
        return Err(unsupported(ins, "wgmma shape (m64nNk16, N a multiple of 8 up to 256)"));
    }
    if dt != Ty::F32 || at != bt || !matches!(at, Ty::F16 | Ty::BF16) {
        return Err(unsupported(ins, "wgmma types (f32 accumulators of f16 or bf16)"));
    }
    let Operand::Vec(dv) = &ins.ops[0] else { return Err(bad_operand("wgmma D must be a vector")) };
    if dv.len() != n / 2 {
        return Err(bad_operand(&format!("wgmma m64n{n}k16 with f32 D needs {} registers", n / 2)));
    }
    let d_regs: Vec<u32> = dv.iter().map(reg_of).collect::<R<_>>()?;
    let a_regs = matches!(ins.ops[1], Operand::Vec(_));
    // Operands after B: scale-d, imm-scale-a, imm-scale-b, [imm-trans-a,] imm-trans-b.
    let want = if a_regs { 7 } else { 8 };
    if ins.ops.len() != want {
        return Err(bad_operand(&format!(
            "wgmma with A in {} needs {want} operands",
            if a_regs { "registers" } else { "shared memory" }
        )));
    }
    if !ex.w.wg_fenced {
        return Err(EmuError::new(ErrorKind::Runtime, "wgmma.mma_async before any wgmma.fence"));
    }
    let pending_targets: Vec<u32> =
        ex.w.wg_groups.iter().flatten().chain(&ex.w.wg_open).flat_map(|p| p.d_regs.iter().copied()).collect();
    let mut check = d_regs.clone();
    let a = if a_regs {
        let Operand::Vec(av) = &ins.ops[1] else { unreachable!() };
        if av.len() != 4 {
            return Err(bad_operand("wgmma A in registers is 4 registers"));
        }
        let regs: Vec<u32> = av.iter().map(reg_of).collect::<R<_>>()?;
        check.extend(&regs);
        WgSrc::Regs(regs.iter().map(|&r| ex.src(&Operand::Reg(r))).collect::<R<_>>()?)
    } else {
        WgSrc::Desc(ex.uniform(&ins.ops[1], mask, "A descriptor")?)
    };
    for &r in &check {
        if ex.wg_is_dirty(r) {
            return Err(EmuError::new(
                ErrorKind::Runtime,
                "wgmma operand register written after the last wgmma.fence (a wgmma.fence must separate them)",
            ));
        }
    }
    let b = ex.uniform(&ins.ops[2], mask, "B descriptor")?;
    let scale_d = ex.uniform(&ins.ops[3], mask, "scale-d")? != 0;
    let scale_a = imm_of(&ins.ops[4], "imm-scale-a")?;
    let scale_b = imm_of(&ins.ops[5], "imm-scale-b")?;
    let (trans_a, trans_b) = if a_regs {
        (0, imm_of(&ins.ops[6], "imm-trans-b")?)
    } else {
        (imm_of(&ins.ops[6], "imm-trans-a")?, imm_of(&ins.ops[7], "imm-trans-b")?)
    };
    let unit = |v: i64| v == 1 || v == -1;
    if !unit(scale_a) || !unit(scale_b) || !(0..=1).contains(&trans_a) || !(0..=1).contains(&trans_b) {
        return Err(bad_operand("wgmma immediates: scales ±1, transposes 0 or 1"));
    }
    let chained = d_regs.iter().any(|r| pending_targets.contains(r));
    let d_in = if chained { None } else { Some(d_regs.iter().map(|&r| ex.src(&Operand::Reg(r))).collect::<R<_>>()?) };
    for &r in &d_regs {
        ex.wg_write_pub(r, mask)?;
    }
    ex.w.wg_open.push(PendingMma {
        n,
        bf16: at == Ty::BF16,
        d_regs,
        d_in,
        a,
        b,
        trans_a: trans_a == 1,
        trans_b: trans_b == 1,
        scale_d,
        scale_a: scale_a as f64,
        scale_b: scale_b as f64,
        mask,
        line: ins.line,
    });
    Ok(())
}

impl Ex<'_, '_> {
    /// Marks D register `r` in flight (the NaN pattern) without marking it written.
    fn wg_write_pub(&mut self, r: u32, mask: u32) -> R<()> {
        self.wg_write(r, mask, &[IN_FLIGHT; 32])
    }
}
