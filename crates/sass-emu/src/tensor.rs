//! Tensor-core and asynchronous-copy instructions: `LDSM` (ldmatrix), `HMMA` (warp-level
//! MMA), `LDGSTS` (cp.async). Fragment layouts as the PTX ISA documents them for the
//! instructions these come from (`groupID = lane / 4`, `threadID_in_group = lane % 4`), and
//! the same arithmetic as the PTX emulator (products exact, one rounding at the end), so the
//! two agree bit for bit.

use half::{bf16, f16};

use crate::decode::{Op, Opnd};
use crate::exec::{unsupported, Ctx, Warp, R};

/// `LDSM`/`STSM.16.{M88,MT88}.{1,2,4}`: whether transposed, and how many 8×8 matrices; the
/// whole warp must run it (it is warp-synchronous).
fn matrix_shape(op: &Op, w: &Warp, mask: u32) -> R<(bool, usize)> {
    if !op.has("16") {
        return Err(unsupported(op, "this element size"));
    }
    let trans = op.has("MT88");
    if !trans && !op.has("M88") {
        return Err(unsupported(op, "this matrix shape"));
    }
    let n = if op.has("4") {
        4
    } else if op.has("2") {
        2
    } else {
        1
    };
    if mask != w.live {
        return Err(unsupported(op, "a matrix load or store by part of the warp (it is warp-synchronous)"));
    }
    Ok((trans, n))
}

fn reg(o: &Opnd, op: &Op) -> R<usize> {
    match o {
        Opnd::R { n, .. } if *n != 255 => Ok(*n as usize),
        _ => Err(unsupported(op, "this fragment register")),
    }
}

impl Ctx<'_> {
    /// `LDSM.16.M88.{1,2,4}` / `.MT88` (transposed): lanes 8i..8i+7 give the row addresses
    /// of matrix i; register d+i of lane t gets row t/4, columns 2(t%4) and 2(t%4)+1.
    pub fn ldsm(&mut self, w: &mut Warp, op: &Op, mask: u32) -> R<()> {
        let (trans, n) = matrix_shape(op, w, mask)?;
        let d = reg(&op.ops[0], op)?;
        let mut rows = [[[0u16; 8]; 8]; 4];
        for (i, mat) in rows.iter_mut().enumerate().take(n) {
            for (r, row) in mat.iter_mut().enumerate() {
                let lane = 8 * i + r;
                let a = self.address_of(w, lane, &op.ops[1], op)?;
                let bytes = self.shared_read(a, 16, op)?;
                self.shared_access.push((a, 16));
                for (k, x) in row.iter_mut().enumerate() {
                    *x = u16::from_le_bytes([bytes[2 * k], bytes[2 * k + 1]]);
                }
            }
        }
        for (i, mat) in rows.iter().enumerate().take(n) {
            for t in 0..32 {
                let (row, c) = (t / 4, 2 * (t % 4));
                let (lo, hi) = if trans { (mat[c][row], mat[c + 1][row]) } else { (mat[row][c], mat[row][c + 1]) };
                w.r[d + i][t] = lo as u32 | (hi as u32) << 16;
            }
        }
        Ok(())
    }

    /// `STSM.16.{M88,MT88}.{1,2,4} [addr], Rs`: the inverse of [`Ctx::ldsm`] (sm_90's
    /// `stmatrix`): each thread's registers hold its fragment of up to four 8×8 matrices of
    /// 16-bit values; lane `8i + r` gives the address of row `r` of matrix `i`.
    pub fn stsm(&mut self, w: &mut Warp, op: &Op, mask: u32) -> R<()> {
        let (trans, n) = matrix_shape(op, w, mask)?;
        let s = reg(&op.ops[1], op)?;
        let mut rows = [[[0u16; 8]; 8]; 4];
        for (i, mat) in rows.iter_mut().enumerate().take(n) {
            for t in 0..32 {
                let v = w.r[s + i][t];
                let (lo, hi) = (v as u16, (v >> 16) as u16);
                let (row, c) = (t / 4, 2 * (t % 4));
                if trans {
                    mat[c][row] = lo;
                    mat[c + 1][row] = hi;
                } else {
                    mat[row][c] = lo;
                    mat[row][c + 1] = hi;
                }
            }
        }
        for (i, mat) in rows.iter().enumerate().take(n) {
            for (r, row) in mat.iter().enumerate() {
                let a = self.address_of(w, 8 * i + r, &op.ops[0], op)?;
                let bytes: Vec<u8> = row.iter().flat_map(|x| x.to_le_bytes()).collect();
                self.shared_write(a, &bytes, op)?;
                self.shared_access.push((a, 16));
            }
        }
        Ok(())
    }

    /// `LDGSTS[.E][.BYPASS][.LTC128B].{32,64,128} [shared], [global], P` (or, as nvdisasm 12
    /// prints it, `[global], P, [shared]`): copies from global
    /// to shared memory where `P` holds, fills zeros where it does not (Triton's masked
    /// `cp.async` with a source size of 0). Done at once: the copy is complete before any
    /// `DEPBAR` could wait for it.
    pub fn ldgsts(&mut self, w: &mut Warp, op: &Op, mask: u32) -> R<()> {
        let n = if op.has("128") {
            16
        } else if op.has("64") {
            8
        } else {
            4
        };
        let mems: Vec<&Opnd> = op.ops.iter().filter(|o| matches!(o, Opnd::Mem { .. })).collect();
        let [a, b] = mems[..] else { return Err(unsupported(op, "this LDGSTS form")) };
        // nvdisasm 13 prints the shared address first (`[R5], desc[UR16][R16.64], P4`), 12.x
        // last (`desc[UR16][R16.64], P4, [R5]`: Triton's bundled tools): the global address
        // is the 64-bit one.
        let wide = |o: &Opnd| matches!(o, Opnd::Mem { wide: true, .. });
        let (dst, src) = if wide(a) && !wide(b) { (b, a) } else { (a, b) };
        let pred = op.ops.iter().find(|o| matches!(o, Opnd::P { .. }));
        for l in (0..32).filter(|l| mask >> l & 1 == 1) {
            let copy = match pred {
                Some(p) => self.p(w, l, p, op)?,
                None => true,
            };
            let s = self.address_of(w, l, dst, op)?;
            let mut buf = [0u8; 16];
            if copy {
                let g = self.address_of(w, l, src, op)?;
                trident_emu::memory::check_align(g, n as u64).map_err(|m| self.memory_error(op, m))?;
                self.mem.read(g, &mut buf[..n]).map_err(|f| self.memory_error(op, f.message))?;
                self.traffic.touch(g, n as u64);
            }
            self.shared_write(s, &buf[..n], op)?;
        }
        Ok(())
    }

    /// `HMMA.{16816,1688}.{F32,F16}[.BF16]`: D = A·B + C on the warp's fragments.
    pub fn hmma(&mut self, w: &mut Warp, op: &Op, mask: u32) -> R<()> {
        if mask != w.live {
            return Err(unsupported(op, "HMMA with part of the warp (it is warp-synchronous)"));
        }
        let k = if op.has("16816") {
            16
        } else if op.has("1688") {
            8
        } else {
            return Err(unsupported(op, "this HMMA shape"));
        };
        if op.has("TF32") {
            return Err(unsupported(op, "tf32 HMMA"));
        }
        let bf = op.has("BF16");
        let f16acc = op.has("F16");
        let [d, a, b, c] = [&op.ops[0], &op.ops[1], &op.ops[2], &op.ops[3]];
        let (d, a, b) = (reg(d, op)?, reg(a, op)?, reg(b, op)?);
        let c = match c {
            Opnd::R { n: 255, .. } => None,
            other => Some(reg(other, op)?),
        };
        let half = |x: u32, s: usize| {
            let h = (x >> (16 * s)) as u16;
            if bf {
                bf16::from_bits(h).to_f64()
            } else {
                f16::from_bits(h).to_f64()
            }
        };
        let mut am = [[0f64; 16]; 16];
        let mut bm = [[0f64; 8]; 16];
        let a_regs = k / 4;
        let b_regs = k / 8;
        for lane in 0..32 {
            let (g, t) = (lane / 4, lane % 4);
            for j in 0..a_regs {
                for s in 0..2 {
                    let (row, col) =
                        if k == 16 { (g + 8 * (j & 1), 2 * t + s + 8 * (j >> 1)) } else { (g + 8 * j, 2 * t + s) };
                    am[row][col] = half(w.r[a + j][lane], s);
                }
            }
            for j in 0..b_regs {
                for s in 0..2 {
                    bm[2 * t + s + 8 * j][g] = half(w.r[b + j][lane], s);
                }
            }
        }
        let acc_pos = |lane: usize, j: usize, s: usize| {
            let (g, t) = (lane / 4, lane % 4);
            if f16acc {
                (g + 8 * j, 2 * t + s)
            } else {
                (g + 8 * (j >> 1), 2 * t + (j & 1))
            }
        };
        let mut cm = [[0f64; 8]; 16];
        if let Some(c) = c {
            for lane in 0..32 {
                if f16acc {
                    for j in 0..2 {
                        for s in 0..2 {
                            let (row, col) = acc_pos(lane, j, s);
                            cm[row][col] = f16::from_bits((w.r[c + j][lane] >> (16 * s)) as u16).to_f64();
                        }
                    }
                } else {
                    for j in 0..4 {
                        let (row, col) = acc_pos(lane, j, 0);
                        cm[row][col] = f32::from_bits(w.r[c + j][lane]) as f64;
                    }
                }
            }
        }
        let mut dm = [[0u32; 8]; 16];
        for i in 0..16 {
            for jn in 0..8 {
                let mut s = 0f64;
                for kx in 0..k {
                    s += am[i][kx] * bm[kx][jn];
                }
                s += cm[i][jn];
                dm[i][jn] = if f16acc { f16::from_f64(s).to_bits() as u32 } else { canon32(s as f32) };
            }
        }
        for lane in 0..32 {
            if f16acc {
                for j in 0..2 {
                    let (r0, c0) = acc_pos(lane, j, 0);
                    let (r1, c1) = acc_pos(lane, j, 1);
                    w.r[d + j][lane] = dm[r0][c0] | dm[r1][c1] << 16;
                }
            } else {
                for j in 0..4 {
                    let (row, col) = acc_pos(lane, j, 0);
                    w.r[d + j][lane] = dm[row][col];
                }
            }
        }
        Ok(())
    }
}

impl Ctx<'_> {
    /// `HGMMA.64xNx16.F32[.BF16] Rd, gdesc[URa][.tnspA][.tnspB], Rc|RZ [, gsb0]` (A and B from
    /// shared memory: descriptors in URa:URa+1 and URa+2:URa+3) or `HGMMA... Rd, Ra, gdesc[URa],
    /// Rc` (A from registers; B's descriptor still in URa+2:URa+3, as the code that advances it
    /// shows): the warpgroup MMA, warp `w % 4` computing rows 16(w % 4).. of
    /// the 64-row tile. Run at issue: a program that waits (`WARPGROUP.DEPBAR`) before reading
    /// D sees what the hardware gives it. The PTX emulator's layouts and arithmetic (D, then
    /// each product in f64, one rounding), so the two agree bit for bit.
    pub fn hgmma(&mut self, w: &mut Warp, op: &Op, mask: u32) -> R<()> {
        if mask != w.live {
            return Err(unsupported(op, "HGMMA with part of the warp (it is warpgroup-synchronous)"));
        }
        let shape = op.mods.iter().find_map(|m| {
            let mut it = m.split('x');
            let (a, b, c) = (it.next()?, it.next()?, it.next()?);
            Some((a.parse::<usize>().ok()?, b.parse::<usize>().ok()?, c.parse::<usize>().ok()?))
        });
        let Some((64, n, 16)) = shape else { return Err(unsupported(op, "this HGMMA shape")) };
        if !op.has("F32") || op.mods.iter().any(|m| matches!(m.as_str(), "E4M3" | "E5M2" | "S8" | "U8" | "TF32")) {
            return Err(unsupported(op, "this HGMMA type (f16/bf16 inputs, f32 accumulators only)"));
        }
        let bf = op.has("BF16");
        let o = &op.ops;
        let d = reg(&o[0], op)?;
        let desc_of = |x: &Opnd| -> Option<(usize, bool, bool)> {
            let Opnd::Other(t) = x else { return None };
            let rest = t.strip_prefix("gdesc[UR")?;
            let (n, flags) = rest.split_once(']')?;
            Some((n.parse().ok()?, flags.contains("tnspA"), flags.contains("tnspB")))
        };
        let ur64 = |w: &Warp, i: usize| w.ur[i] as u64 | (w.ur[i + 1] as u64) << 32;
        let (a_regs, a_desc, b_desc, tr_a, tr_b, c_at) = match (&o[1], desc_of(&o[1])) {
            (_, Some((u, ta, tb))) => (None, Some(ur64(w, u)), ur64(w, u + 2), ta, tb, 2),
            (Opnd::R { n: ra, .. }, None) => {
                let (u, ta, tb) = desc_of(&o[2]).ok_or_else(|| unsupported(op, "this HGMMA B operand"))?;
                // The descriptor group is the same: B's is two registers up.
                (Some(*ra as usize), None, ur64(w, u + 2), ta, tb, 3)
            }
            _ => return Err(unsupported(op, "this HGMMA A operand")),
        };
        let scale_d = !matches!(o.get(c_at), Some(Opnd::R { n: 255, .. }));
        let rank = (w.first_thread / 32 % 4) as u64;
        let half = |h: u16| if bf { bf16::from_bits(h).to_f64() } else { f16::from_bits(h).to_f64() };
        let mut a = [[0f64; 16]; 16];
        match (a_regs, a_desc) {
            (Some(ra), _) => {
                for j in 0..4 {
                    for lane in 0..32 {
                        let (g, t) = (lane / 4, lane % 4);
                        for s in 0..2 {
                            let (row, col) = (g + 8 * (j & 1), 2 * t + s + 8 * (j >> 1));
                            a[row][col] = half((w.r[ra + j][lane] >> (16 * s)) as u16);
                        }
                    }
                }
            }
            (None, Some(desc)) => {
                for (row, ar) in a.iter_mut().enumerate() {
                    for (k, x) in ar.iter_mut().enumerate() {
                        let at = trident_emu::wgmma_operand_address(desc, tr_a, 16 * rank + row as u64, k as u64, 2)?;
                        let b = self.shared_read(at, 2, op)?;
                        *x = half(u16::from_le_bytes([b[0], b[1]]));
                    }
                }
            }
            _ => return Err(unsupported(op, "this HGMMA A operand")),
        }
        let mut b = vec![[0f64; 16]; n];
        for (col, br) in b.iter_mut().enumerate() {
            for (k, x) in br.iter_mut().enumerate() {
                let at = trident_emu::wgmma_operand_address(b_desc, tr_b, col as u64, k as u64, 2)?;
                let v = self.shared_read(at, 2, op)?;
                *x = half(u16::from_le_bytes([v[0], v[1]]));
            }
        }
        for i in 0..n / 2 {
            for lane in 0..32 {
                let (g, t) = (lane / 4, lane % 4);
                let (row, col) = (g + 8 * ((i % 4) >> 1), 8 * (i / 4) + 2 * t + (i & 1));
                let mut s = if scale_d { f32::from_bits(w.r[d + i][lane]) as f64 } else { 0.0 };
                for k in 0..16 {
                    s += a[row][k] * b[col][k];
                }
                w.r[d + i][lane] = canon32(s as f32);
            }
        }
        Ok(())
    }
}

/// The canonical NaN for a NaN result (as the PTX emulator writes it).
fn canon32(x: f32) -> u32 {
    if x.is_nan() {
        0x7fff_ffff
    } else {
        x.to_bits()
    }
}
