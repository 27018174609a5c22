//! `dot` on Hopper's warpgroup MMA (`wgmma.mma_async`, sm_90a): f16/bf16 operands, f32
//! accumulation, shape m64nNk16 per warpgroup.
//!
//! The accumulator layout (mma version 3) puts every warp along M: a warpgroup's four
//! warps hold 64 rows, which one instruction covers over the whole N (up to 256). In
//! registers that layout and its operand layouts are the version-2 ones (see
//! [`crate::layout::build::mma_v3`]), so the accumulator needs no conversion and A may
//! come from registers (attention's `p`) in the `mma.sync` fragment order.
//!
//! B, and A where it is in shared memory, are read by the tensor cores through *matrix
//! descriptors*: the start address, two strides (LBO, SBO) and a swizzle mode of a
//! canonical layout (PTX ISA, "Shared Memory Matrix Layout"). Trident's swizzled tiles
//! (16-byte groups, XOR by the row in a pattern of 8 rows of 32, 64 or 128 bytes, wide
//! rows split into column blocks; see [`crate::layout::build::shared`]) are those
//! canonical layouts; [`descriptor`] derives the fields from the tile's linear layout and
//! checks every element of every instruction's slice against the hardware's address
//! function before the path is taken (else the dot falls back to `ldmatrix` + `mma.sync`).
//!
//! A dot issues `wgmma.fence` (registers written before it are visible to the tensor
//! cores), all its instructions (K outermost, so consecutive ones use different
//! accumulators where there are several), one `commit_group`, and a wait before the result
//! is used: `wait_group N`, N the groups issued after it, where the user only computes on
//! registers (elementwise ops, in-register reductions) — groups complete oldest first, so
//! the later ones run on (FA3's order: block j's softmax under block j-1's `P·V`) — and
//! `wait_group 0` before anything else (stores, shared memory, control flow, yields). A dot whose accumulator is its loop's carried value, used by
//! nothing else, accumulates in the loop's own registers
//! (`Emitter::accumulates_in_place`): the `yield` does not wait, the next iteration's dot
//! chains on the MMA still in flight, and a barrier marked `wgmma_in_flight = N` by the
//! pipeliner waits with `wait_group N` (the previous iteration's MMA counts as pending at
//! the top of the body). Tiles written by ordinary stores or `cp.async` are made visible to
//! the tensor cores' (async) proxy with `fence.proxy.async.shared::cta` before the barrier
//! that publishes them.

use super::emitter::{Emitter, Res};
use super::regs::{Reg, RegClass};
use crate::layout::linear::flatten;
use crate::layout::{LinearLayout, SharedLinear};
use crate::machine::mma::MmaTile;
use std::fmt::Write;
use std::rc::Rc;
use trident_ir::{DType, Op, OpKind};

/// A dot operand left in a swizzled shared-memory tile (read by descriptors, or by
/// `ldmatrix` when the dot falls back to `mma.sync`).
#[derive(Clone, Debug)]
pub struct SmemOperand {
    /// Shared address of the tile (1024-byte aligned).
    pub addr: Reg,
    pub sl: SharedLinear,
    pub tile: MmaTile,
    pub bytes: u32,
    /// The operand's register layout.
    pub dst: Rc<LinearLayout>,
    pub signed: bool,
}

/// The fields of a wgmma matrix descriptor for one operand tile.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Desc {
    /// M (N) is the contiguous dim (`imm-trans` = 1); else K is.
    pub major_mn: bool,
    /// Swizzle mode field: 1 = 128-byte, 2 = 64-byte, 3 = 32-byte.
    pub mode: u64,
    /// Bytes of one swizzle row (128, 64, 32).
    pub swizzle: u64,
    pub lbo: u64,
    pub sbo: u64,
}

impl Desc {
    /// The descriptor without its start address (fields above bit 14).
    pub fn fields(&self) -> u64 {
        ((self.lbo >> 4) & 0x3fff) << 16 | ((self.sbo >> 4) & 0x3fff) << 32 | self.mode << 62
    }

    /// Byte address (relative to a tile base aligned to the swizzle pattern) the tensor
    /// cores read element (`mn`, `k`) of an instruction's operand slice from, for a
    /// descriptor starting `start` bytes into the tile (PTX ISA canonical layouts, then
    /// the swizzle: address bits [4, 7) XOR bits [7, 10), masked to the swizzle width).
    pub fn address(&self, start: u64, mn: u64, k: u64, bytes: u64) -> u64 {
        let s = self.swizzle;
        let unswizzled = if self.major_mn {
            let w = s / bytes;
            start + (mn % w) * bytes + (mn / w) * self.lbo + (k % 8) * s + (k / 8) * self.sbo
        } else {
            start + (mn % 8) * s + (mn / 8) * self.sbo + k * bytes
        };
        unswizzled ^ (((unswizzled >> 7) & (s / 16 - 1)) << 4)
    }
}

/// Derives the descriptor of a tile laid out by `sl` (shape [M, K] for A, [K, N] for B)
/// whose contiguous dim is `tile.fast`, and checks it: every element of every slice that
/// instructions read (`mn_step` rows per instruction at multiples of `mn_step`, 16 of K at
/// multiples of 16) must be where the hardware looks for it. `None` when not.
pub fn descriptor(sl: &SharedLinear, tile: &MmaTile, op_idx: u8, bytes: u32, mn_step: u32) -> Option<Desc> {
    if sl.shape.len() != 2 || bytes != 2 || tile.vec * bytes != 16 {
        return None;
    }
    let swizzle = 16 * tile.max_phase as u64;
    let mode = match swizzle {
        128 => 1,
        64 => 2,
        32 => 3,
        _ => return None,
    };
    if tile.per_phase as u64 * swizzle != 128 {
        return None;
    }
    let (mn_dim, k_dim) = if op_idx == 0 { (0, 1) } else { (1, 0) };
    let (mn_len, k_len) = (sl.shape[mn_dim] as u64, sl.shape[k_dim] as u64);
    if mn_len % mn_step as u64 != 0 || k_len % 16 != 0 || !mn_step.is_multiple_of(8) {
        return None;
    }
    let offset = sl.offset_fn();
    let b = bytes as u64;
    let at = |mn: u64, k: u64| -> u64 {
        let mut c = [0u32; 2];
        c[mn_dim] = mn as u32;
        c[k_dim] = k as u32;
        offset(flatten(&sl.shape, &c)) * b
    };
    let major_mn = tile.fast == mn_dim;
    let (lbo, sbo) = if major_mn {
        let w = swizzle / b;
        (if mn_len > w { at(w, 0) } else { swizzle * k_len }, at(0, 8))
    } else {
        // LBO is unused by K-major swizzled layouts ("assumed 1").
        (16, if mn_len > 8 { at(8, 0) } else { 8 * swizzle })
    };
    if lbo >= 1 << 18 || sbo >= 1 << 18 {
        return None;
    }
    let desc = Desc { major_mn, mode, swizzle, lbo, sbo };
    for mn0 in (0..mn_len).step_by(mn_step as usize) {
        for k0 in (0..k_len).step_by(16) {
            let start = at(mn0, k0);
            for mn in 0..mn_step as u64 {
                for k in 0..16 {
                    if desc.address(start, mn, k, b) != at(mn0 + mn, k0 + k) {
                        return None;
                    }
                }
            }
        }
    }
    Some(desc)
}

/// An A operand of a wgmma: fragments in registers, or a tile in shared memory.
pub enum WgA {
    Regs(Vec<Reg>),
    Smem(SmemOperand),
}

impl Emitter<'_> {
    /// The descriptor base of a tile: `(addr + extra) >> 4` as a 64-bit register (the
    /// start-address field; constant fields and offsets are added per instruction).
    fn desc_base(&mut self, addr: Reg, extra: Option<Reg>) -> Reg {
        let a = match extra {
            Some(x) => {
                let t = self.new_reg(RegClass::B32);
                self.ins(format!("add.u32 {t}, {addr}, {x}"));
                t
            }
            None => addr,
        };
        let s = self.new_reg(RegClass::B32);
        self.ins(format!("shr.u32 {s}, {a}, 4"));
        let d = self.new_reg(RegClass::B64);
        self.ins(format!("cvt.u64.u32 {d}, {s}"));
        d
    }

    /// A predicate that is always true (wgmma's `scale-d`: accumulate into D), in the prologue.
    fn true_pred(&mut self) -> Reg {
        if let Some(p) = self.true_pred {
            return p;
        }
        let p = self.new_reg(RegClass::Pred);
        let mut code = String::new();
        let _ = writeln!(code, "\tsetp.eq.u32 {p}, 0, 0;");
        self.push_prologue(&code);
        self.true_pred = Some(p);
        p
    }

    /// Whether wgmma dot `op` may accumulate into its accumulator's registers: the
    /// accumulator is a value carried by the `for` directly around the dot, read by this dot
    /// only, and the dot's result only goes back to it through the loop's `yield`. The
    /// registers are then the loop's, and the MMA may still run when the next iteration
    /// starts (its dot chains on it in the tensor cores; see `Emitter::needs_wgmma_wait`).
    pub(crate) fn accumulates_in_place(&mut self, op: Op) -> bool {
        let f = self.f;
        // Only a warpgroup-MMA accumulator (version 3, rank 2): others are `mma.sync`'s.
        let wg_layout = matches!(
            f.ty(f.ops[op].results[0]).layout().and_then(|id| f.layouts.get(id)),
            Some(trident_ir::Layout::Mma { version: 3, warps_per_cta, .. }) if warps_per_cta.len() == 2
        );
        if !self.opts.target.has_wgmma() || !wg_layout {
            return false;
        }
        let d = &f.ops[op];
        let (c, res) = (d.operands[2], d.results[0]);
        let trident_ir::ValueDef::Arg(body, i) = f.values[c].def else { return false };
        let Some(loop_op) = f.parent_op(op) else { return false };
        if i == 0 || d.parent != Some(body) || !matches!(f.ops[loop_op].kind, OpKind::For) {
            return false;
        }
        let Some(y) = f.terminator(body) else { return false };
        let yields = &f.ops[y].operands;
        let at = yields.iter().position(|&v| v == res);
        if at != Some(i as usize - 1) || yields.iter().filter(|&&v| v == res).count() != 1 {
            return false;
        }
        self.users_of(c) == [op] && self.users_of(res) == [y]
    }

    /// `dot` with `wgmma.mma_async`; `None` when the operands do not allow it (B not in a
    /// shared tile the descriptors can describe), so the caller falls back to `mma.sync`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn wgmma_dot(
        &mut self,
        at: DType,
        la: &Rc<LinearLayout>,
        a: &WgA,
        b: &SmemOperand,
        lc: &Rc<LinearLayout>,
        acc: &[Reg],
        in_place: bool,
    ) -> Res<Option<Vec<Reg>>> {
        if lc.rank() != 2 || acc.len() != lc.num_regs() {
            return Ok(None);
        }
        let (m, n) = (lc.shape[0], lc.shape[1]);
        let kdim = la.shape[1];
        let nw = self.opts.num_warps;
        let rows = 16 * nw;
        if !nw.is_multiple_of(4) || m % rows != 0 || !kdim.is_multiple_of(16) {
            return Ok(None);
        }
        let n_instr = n.min(256);
        let Some(bd) = descriptor(&b.sl, &b.tile, 1, b.bytes, n_instr) else { return Ok(None) };
        let ad = match a {
            WgA::Smem(s) => match descriptor(&s.sl, &s.tile, 0, s.bytes, 64) {
                Some(d) => Some(d),
                None => return Ok(None),
            },
            WgA::Regs(_) => None,
        };
        let ab = match at {
            DType::F16 => "f16.f16",
            DType::BF16 => "bf16.bf16",
            _ => return Ok(None),
        };
        // Descriptor bases. Warpgroup g reads A rows 64g.. (a thread-dependent offset).
        let b_base = self.desc_base(b.addr, None);
        let a_base = match (a, ad) {
            (WgA::Smem(s), Some(_)) => {
                let offset = s.sl.offset_fn();
                let wg_bits = nw.trailing_zeros().saturating_sub(2);
                let mut warp = vec![0u64; nw.trailing_zeros() as usize];
                for (i, w) in warp.iter_mut().enumerate().skip(2).take(wg_bits as usize) {
                    let row = 64u32 << (i - 2);
                    *w = offset(flatten(&s.sl.shape, &[row, 0])) * s.bytes as u64;
                }
                let wl = LinearLayout { shape: s.sl.shape.clone(), reg: vec![], lane: vec![0; 5], warp };
                let extra = if wg_bits > 0 { Some(self.thread_flat(&Rc::new(wl))) } else { None };
                Some(self.desc_base(s.addr, extra))
            }
            _ => None,
        };
        // wgmma reads and writes D in place: the accumulator's own registers where they are
        // the loop's carried ones and nothing else reads them (`accumulates_in_place`; an
        // earlier iteration's MMA may still be writing them: no instruction may touch
        // them), else a copy in fresh registers.
        let cur: Vec<Reg> = if in_place {
            acc.to_vec()
        } else {
            acc.iter()
                .map(|&r| {
                    let t = self.new_reg(RegClass::B32);
                    self.ins(format!("mov.b32 {t}, {r}"));
                    t
                })
                .collect()
        };
        let c_look = lc.reg_lookup();
        let a_look = la.reg_lookup();
        let scale_d = self.true_pred();
        // A fragments from registers, packed before the fence (which orders every write of
        // a register wgmma reads before it).
        let mut a_words: std::collections::HashMap<(u32, u32), String> = std::collections::HashMap::new();
        if let WgA::Regs(regs) = a {
            for k0 in (0..kdim).step_by(16) {
                for r in 0..m / rows {
                    let off = flatten(&la.shape, &[r * rows, k0]);
                    let mut elems = vec![];
                    for i in 0..8u64 {
                        let c = la.reg_part(i) ^ off;
                        let idx = *a_look.get(&c).ok_or_else(|| self.err("internal: A fragment not in registers"))?;
                        elems.push(regs[idx as usize]);
                    }
                    let words: Vec<String> = elems
                        .chunks(2)
                        .map(|p| {
                            let w = self.new_reg(RegClass::B32);
                            self.ins(format!("mov.b32 {w}, {{{}, {}}}", p[0], p[1]));
                            w.to_string()
                        })
                        .collect();
                    a_words.insert((r, k0), format!("{{{}}}", words.join(", ")));
                }
            }
        }
        self.ins("wgmma.fence.sync.aligned");
        let b_at = |k: u32, nn: u32| -> u64 {
            let offset = b.sl.offset_fn();
            offset(flatten(&b.sl.shape, &[k, nn])) * b.bytes as u64
        };
        let mut k0 = 0;
        while k0 < kdim {
            for r in 0..m / rows {
                let m0 = r * rows;
                // A: registers (the mma.sync A fragment of this warp's 16 rows) or a descriptor.
                let a_opnd = match (a, &ad, a_base) {
                    (WgA::Regs(_), _, _) => a_words[&(r, k0)].clone(),
                    (WgA::Smem(s), Some(d), Some(base)) => {
                        let offset = s.sl.offset_fn();
                        let start = offset(flatten(&s.sl.shape, &[m0, k0])) * s.bytes as u64;
                        let da = self.new_reg(RegClass::B64);
                        self.ins(format!("add.u64 {da}, {base}, {:#x}", d.fields() + (start >> 4)));
                        da.to_string()
                    }
                    _ => return Err(self.err("internal: wgmma A operand")),
                };
                for j in 0..n / n_instr {
                    let n0 = j * n_instr;
                    let start = b_at(k0, n0);
                    let db = self.new_reg(RegClass::B64);
                    self.ins(format!("add.u64 {db}, {b_base}, {:#x}", bd.fields() + (start >> 4)));
                    // D: d[4i + q] is row 8(q >> 1), column 8i + (q & 1) of the tile (per thread).
                    let mut ds = vec![];
                    for i in 0..n_instr / 2 {
                        let (q, s) = (i % 4, i / 4);
                        let c = flatten(&lc.shape, &[m0 + 8 * (q >> 1), n0 + 8 * s + (q & 1)]);
                        let idx = *c_look.get(&c).ok_or_else(|| self.err("internal: wgmma accumulator layout"))?;
                        ds.push(cur[idx as usize].to_string());
                    }
                    let ta = match (a, &ad) {
                        (WgA::Smem(_), Some(d)) => format!("{}, ", d.major_mn as u32),
                        _ => String::new(),
                    };
                    self.ins(format!(
                        "wgmma.mma_async.sync.aligned.m64n{n_instr}k16.f32.{ab} {{{}}}, {a_opnd}, {db}, {scale_d}, 1, 1, {ta}{}",
                        ds.join(", "),
                        bd.major_mn as u32
                    ));
                    // A ping-pong turn waited for before this MMA: after its first
                    // instruction, which reads the operands the work before it computed, so
                    // ptxas cannot hoist the barrier above that work (see `emit_pingpong`).
                    if let Some(turn) = self.turn_in_mma.take() {
                        self.ins(turn);
                    }
                }
            }
            k0 += 16;
        }
        // The wait comes before the first use of the result (see `Emitter::op`).
        self.ins("wgmma.commit_group.sync.aligned");
        Ok(Some(cur))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tile(fast: usize, row_bytes: u32) -> MmaTile {
        MmaTile {
            fast,
            trans: false,
            k_width: 2,
            vec: 8,
            per_phase: (128 / row_bytes).max(1),
            max_phase: (row_bytes / 16).clamp(1, 8),
        }
    }

    /// The descriptors of the tiles the pipelined matmul and attention loops use, checked
    /// element by element against the canonical layouts by `descriptor` itself.
    #[test]
    fn descriptors_of_swizzled_tiles() {
        // (shape, fast dim, op, mn_step, expected (major_mn, mode, lbo, sbo))
        type Case = ([u32; 2], usize, u8, u32, (bool, u64, u64, u64));
        let cases: &[Case] = &[
            // A 128x32 K-major: 64-byte rows.
            ([128, 32], 1, 0, 64, (false, 2, 16, 512)),
            // A 128x64 K-major: 128-byte rows.
            ([128, 64], 1, 0, 64, (false, 1, 16, 1024)),
            // A 64x128 K-major: two 64-element column blocks.
            ([64, 128], 1, 0, 64, (false, 1, 16, 1024)),
            // B 32x128 N-major: two 64-element blocks of 32 rows (LBO 4096).
            ([32, 128], 1, 1, 128, (true, 1, 4096, 1024)),
            // B 64x64 K-major (attention's K^T): 128-byte rows of K.
            ([64, 64], 0, 1, 64, (false, 1, 16, 1024)),
            // B 64x64 N-major (attention's V).
            ([64, 64], 1, 1, 64, (true, 1, 8192, 1024)),
            // B 16x32 N-major: 64-byte swizzle.
            ([16, 32], 1, 1, 32, (true, 2, 1024, 512)),
            // B 32x16 K-major... N = 16 rows of 64 bytes.
            ([32, 16], 0, 1, 16, (false, 2, 16, 512)),
        ];
        for &(shape, fast, op, step, want) in cases {
            let row_bytes = shape[fast].min(64) * 2;
            let t = tile(fast, row_bytes);
            let order = t.order(2);
            let sl = crate::layout::build::shared(&shape, 8, t.per_phase, t.max_phase, &order).unwrap();
            let d =
                descriptor(&sl, &t, op, 2, step).unwrap_or_else(|| panic!("no descriptor for {shape:?} fast {fast}"));
            assert_eq!((d.major_mn, d.mode, d.lbo, d.sbo), want, "{shape:?} fast {fast}");
        }
    }

    /// A plain row-major tile is not a canonical wgmma layout: no descriptor.
    #[test]
    fn unswizzled_tiles_have_no_descriptor() {
        let t = MmaTile { fast: 1, trans: false, k_width: 2, vec: 8, per_phase: 1, max_phase: 1 };
        let sl = crate::layout::build::shared(&[64, 64], 8, 1, 1, &[1, 0]).unwrap();
        assert!(descriptor(&sl, &t, 0, 2, 64).is_none());
    }
}
