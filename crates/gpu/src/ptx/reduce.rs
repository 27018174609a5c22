//! Reductions and scans: within a thread (registers), across a warp (`shfl.sync`),
//! across warps (shared memory). Which step handles which coordinate bit of the
//! reduced axis is read off the operand's linear layout: each bit comes from a
//! register, lane or warp basis.

use super::emitter::{Emitter, Res};
use super::regs::{Reg, RegClass};
use crate::layout::linear::{dim_shifts, flatten, unflatten};
use crate::layout::LinearLayout;
use crate::machine::reduce::{align8, axis_bits, scan_levels, Src};
use crate::machine::regs::scratch_elem_bytes;
use std::collections::BTreeMap;
use trident_ir::{Block, Op, OpKind};

impl Emitter<'_> {
    /// Emits a combine region with its block arguments bound to `acc` then `new`; returns the yielded registers.
    pub fn combine(&mut self, region: Block, acc: &[Reg], new: &[Reg]) -> Res<Vec<Reg>> {
        let f = self.f;
        let args = f.blocks[region].args.clone();
        for (i, &a) in args.iter().enumerate() {
            let r = if i < acc.len() { acc[i] } else { new[i - acc.len()] };
            self.set(a, vec![r]);
        }
        for &op in &f.blocks[region].ops.clone() {
            if f.ops[op].kind.is_terminator() {
                continue;
            }
            self.op(op)?;
        }
        let t = f.terminator(region).ok_or_else(|| self.err("combine region has no yield"))?;
        f.ops[t].operands.clone().iter().map(|&v| self.reg1(v)).collect()
    }

    /// `shfl.sync.{mode}` of any register class.
    pub fn shfl(&mut self, mode: &str, v: Reg, b: &str) -> Reg {
        let c = if mode == "up" { "0" } else { "0x1f" };
        match v.class {
            RegClass::B32 => {
                let r = self.new_reg(RegClass::B32);
                self.ins(format!("shfl.sync.{mode}.b32 {r}, {v}, {b}, {c}, -1"));
                r
            }
            RegClass::B16 => {
                let w = self.new_reg(RegClass::B32);
                self.ins(format!("cvt.u32.u16 {w}, {v}"));
                let s = self.shfl(mode, w, b);
                let r = self.new_reg(RegClass::B16);
                self.ins(format!("cvt.u16.u32 {r}, {s}"));
                r
            }
            RegClass::Pred => {
                let w = self.new_reg(RegClass::B32);
                self.ins(format!("selp.u32 {w}, 1, 0, {v}"));
                let s = self.shfl(mode, w, b);
                let r = self.new_reg(RegClass::Pred);
                self.ins(format!("setp.ne.u32 {r}, {s}, 0"));
                r
            }
            RegClass::B64 => {
                let lo = self.new_reg(RegClass::B32);
                let hi = self.new_reg(RegClass::B32);
                self.ins(format!("mov.b64 {{{lo}, {hi}}}, {v}"));
                let a = self.shfl(mode, lo, b);
                let c2 = self.shfl(mode, hi, b);
                let r = self.new_reg(RegClass::B64);
                self.ins(format!("mov.b64 {r}, {{{a}, {c2}}}"));
                r
            }
        }
    }

    /// `st.shared` of one register (predicates as 32-bit 0/1).
    pub fn st_shared(&mut self, pred: Option<Reg>, addr: &str, v: Reg) {
        let p = pred.map(|p| format!("@{p} ")).unwrap_or_default();
        match v.class {
            RegClass::Pred => {
                let w = self.new_reg(RegClass::B32);
                self.ins(format!("selp.u32 {w}, 1, 0, {v}"));
                self.ins(format!("{p}st.shared.b32 [{addr}], {w}"));
            }
            c => self.ins(format!("{p}st.shared.{} [{addr}], {v}", c.btype())),
        }
    }

    pub fn ld_shared(&mut self, class: RegClass, addr: &str) -> Reg {
        match class {
            RegClass::Pred => {
                let w = self.new_reg(RegClass::B32);
                self.ins(format!("ld.shared.b32 {w}, [{addr}]"));
                let r = self.new_reg(RegClass::Pred);
                self.ins(format!("setp.ne.u32 {r}, {w}, 0"));
                r
            }
            c => {
                let r = self.new_reg(c);
                self.ins(format!("ld.shared.{} {r}, [{addr}]", c.btype()));
                r
            }
        }
    }

    /// Loads one element of `bytes` bytes (its real size) from shared memory; a signed byte
    /// is sign-extended in its 16-bit register, as every 8-bit integer is held.
    pub fn ld_shared_elem(&mut self, class: RegClass, bytes: u32, addr: &str, signed: bool) -> Reg {
        if class == RegClass::B16 && bytes == 1 {
            let r = self.new_reg(class);
            let ty = if signed { "s8" } else { "u8" };
            self.ins(format!("ld.shared.{ty} {r}, [{addr}]"));
            return r;
        }
        self.ld_shared(class, addr)
    }

    #[allow(clippy::needless_range_loop)]
    pub(crate) fn emit_reduce(&mut self, op: Op) -> Res<()> {
        let f = self.f;
        let d = &f.ops[op];
        let OpKind::Reduce { axis } = d.kind else { unreachable!() };
        let axis = axis as usize;
        let region = d.regions[0];
        let l = self.ll(d.operands[0])?.ok_or_else(|| self.err("reduce of a scalar"))?;
        let n = d.operands.len();
        let vals: Vec<Vec<Reg>> = d.operands.iter().map(|&v| self.regs(v)).collect::<Res<_>>()?;
        let bits = axis_bits(&l, axis);
        if bits.mixed {
            return Err(self.err("internal: reduce operand layout mixes the reduced axis with other dims"));
        }
        let amask = l.dim_mask(axis);
        // 1. Within the thread: group registers by their coordinate off the axis.
        let mut groups: BTreeMap<u64, Vec<(u64, usize)>> = BTreeMap::new();
        for r in 0..l.num_regs() {
            let c = l.reg_part(r as u64);
            groups.entry(c & !amask).or_default().push((c & amask, r));
        }
        let mut accs: Vec<(u64, Vec<Reg>)> = vec![];
        for (key, mut members) in groups {
            members.sort();
            let mut acc: Vec<Reg> = (0..n).map(|o| vals[o][members[0].1]).collect();
            for &(_, r) in &members[1..] {
                let new: Vec<Reg> = (0..n).map(|o| vals[o][r]).collect();
                acc = self.combine(region, &acc, &new)?;
            }
            accs.push((key, acc));
        }
        // 2. Across lanes: butterfly over the lane bits along the axis.
        for &i in &bits.lanes {
            for (_, acc) in accs.iter_mut() {
                let others: Vec<Reg> = acc.iter().map(|&a| self.shfl("bfly", a, &(1u32 << i).to_string())).collect();
                *acc = self.combine(region, acc, &others)?;
            }
        }
        // 3. Across warps: partial results through shared memory.
        if !bits.warps.is_empty() {
            let base_off = self.smem_offset(op)?;
            let rshape: Vec<u32> = l.shape.iter().enumerate().filter(|&(i, _)| i != axis).map(|(_, &s)| s).collect();
            let r_numel: u64 = rshape.iter().map(|&s| s as u64).product();
            // Result flat index of this thread's group: thread part + register part.
            let remove_axis = |c: u64| -> u64 {
                let mut v = unflatten(&l.shape, c).to_vec();
                v.remove(axis);
                flatten(&rshape, &v)
            };
            let tl = LinearLayout {
                shape: rshape.iter().copied().collect(),
                reg: vec![],
                lane: l.lane.iter().map(|&b| remove_axis(b & !amask)).collect(),
                warp: l.warp.iter().map(|&b| remove_axis(b & !amask)).collect(),
            };
            let tl = std::rc::Rc::new(tl);
            let tflat = self.thread_flat(&tl);
            let wa = self.warp_axis_index(&bits.warps);
            let k = 1u64 << bits.warps.len();
            let owner = {
                let lanes = l.free_lane_mask() | bits.lanes.iter().map(|&i| 1u32 << i).sum::<u32>();
                self.owner_pred_masks(lanes, l.free_warp_mask())
            };
            let base = self.smem_base();
            let mut op_off = base_off as u64;
            let mut offsets = vec![];
            for o in 0..n {
                offsets.push(op_off);
                let eb = scratch_elem_bytes(vals[o][0].class).max(4) as u64;
                op_off += align8(k * r_numel * eb);
            }
            // Address of element (warp-axis index w, result flat rf) of operand o.
            let mut addrs = vec![];
            for (key, _) in &accs {
                let rc = remove_axis(*key);
                let idx = self.new_reg(RegClass::B32);
                self.ins(format!("xor.b32 {idx}, {tflat}, {rc}"));
                addrs.push(idx);
            }
            for (g, (_, acc)) in accs.iter().enumerate() {
                for o in 0..n {
                    let eb = scratch_elem_bytes(acc[o].class).max(4);
                    let a = self.new_reg(RegClass::B32);
                    // (wa * R + rf) * eb + base + off
                    self.ins(format!("mad.lo.u32 {a}, {wa}, {r_numel}, {}", addrs[g]));
                    self.ins(format!("mad.lo.u32 {a}, {a}, {eb}, {base}"));
                    let addr = format!("{a}+{}", offsets[o]);
                    self.st_shared(owner, &addr, acc[o]);
                }
            }
            self.cta_barrier();
            // With four or more partials, and lanes free to hold them (their low bits carry
            // no result coordinate), lane l reads partial l % k and a butterfly over those
            // lane bits combines them: one shared load and log2(k) shuffles where reading
            // every partial in every thread holds k registers at once (softmax's 8 warps:
            // 8 of its 53). Every lane ends with the same combination, in the same order.
            // Only where registers are dear — the thread holds 16 or more elements of the
            // operand —: the shuffles' latency is longer than a vector load's (a 512-wide
            // softmax on 4 warps, 4 elements a thread: 799 -> 902 estimated cycles by lanes).
            let lb = bits.warps.len();
            let by_lanes = k >= 4
                && l.num_regs() >= 16
                && lb <= l.lane.len()
                && (0..lb).all(|i| remove_axis(l.lane[i] & !amask) == 0);
            if by_lanes {
                let slot = self.new_reg(RegClass::B32);
                self.ins(format!("and.b32 {slot}, {}, {}", self.lane, k - 1));
                for (g, (_, acc)) in accs.iter_mut().enumerate() {
                    let mut vs = vec![];
                    for o in 0..n {
                        let class = acc[o].class;
                        let eb = scratch_elem_bytes(class).max(4);
                        let a = self.new_reg(RegClass::B32);
                        self.ins(format!("mad.lo.u32 {a}, {slot}, {r_numel}, {}", addrs[g]));
                        self.ins(format!("mad.lo.u32 {a}, {a}, {eb}, {base}"));
                        vs.push(self.ld_shared(class, &format!("{a}+{}", offsets[o])));
                    }
                    for i in 0..lb {
                        let others: Vec<Reg> =
                            vs.iter().map(|&v| self.shfl("bfly", v, &(1u32 << i).to_string())).collect();
                        vs = self.combine(region, &vs, &others)?;
                    }
                    *acc = vs;
                }
            } else {
                for (g, (_, acc)) in accs.iter_mut().enumerate() {
                    let mut parts: Vec<Vec<Reg>> = vec![];
                    for w in 0..k {
                        let mut vs = vec![];
                        for o in 0..n {
                            let class = acc[o].class;
                            let eb = scratch_elem_bytes(class).max(4) as u64;
                            let a = self.new_reg(RegClass::B32);
                            self.ins(format!("mad.lo.u32 {a}, {}, {eb}, {base}", addrs[g]));
                            let addr = format!("{a}+{}", offsets[o] + w * r_numel * eb);
                            vs.push(self.ld_shared(class, &addr));
                        }
                        parts.push(vs);
                    }
                    let mut a = parts[0].clone();
                    for p in &parts[1..] {
                        a = self.combine(region, &a, p)?;
                    }
                    *acc = a;
                }
            }
        }
        // 4. Result registers, in the result layout's order.
        let results = &d.results;
        match self.ll(results[0])? {
            None => {
                for o in 0..n {
                    self.set(results[o], vec![accs[0].1[o]]);
                }
            }
            Some(rl) => {
                let rshape = rl.shape.clone();
                let remove_axis = |c: u64| -> u64 {
                    let mut v = unflatten(&l.shape, c).to_vec();
                    v.remove(axis);
                    flatten(&rshape, &v)
                };
                let by_coord: std::collections::HashMap<u64, &Vec<Reg>> =
                    accs.iter().map(|(k, a)| (remove_axis(*k), a)).collect();
                for o in 0..n {
                    let mut regs = vec![];
                    for r in 0..rl.num_regs() as u64 {
                        let c = rl.reg_part(r);
                        let a = by_coord.get(&c).ok_or_else(|| {
                            self.err("internal: reduce result layout is not the slice of its operand's layout")
                        })?;
                        regs.push(a[o]);
                    }
                    self.set(results[o], regs);
                }
            }
        }
        Ok(())
    }

    /// Index of this thread's warp among the warps along an axis (bits `warp_bits` of the warp id, packed).
    fn warp_axis_index(&mut self, warp_bits: &[usize]) -> Reg {
        let r = self.new_reg(RegClass::B32);
        let w = self.warp;
        self.pro_ins(format!("mov.b32 {r}, 0"));
        for (j, &i) in warp_bits.iter().enumerate() {
            let t = self.new_reg(RegClass::B32);
            self.pro_ins(format!("bfe.u32 {t}, {w}, {i}, 1"));
            if j > 0 {
                self.pro_ins(format!("shl.b32 {t}, {t}, {j}"));
            }
            self.pro_ins(format!("or.b32 {r}, {r}, {t}"));
        }
        r
    }

    #[allow(clippy::needless_range_loop)]
    pub(crate) fn emit_scan(&mut self, op: Op) -> Res<()> {
        let f = self.f;
        let d = &f.ops[op];
        let OpKind::Scan { axis, reverse } = d.kind else { unreachable!() };
        let axis = axis as usize;
        let region = d.regions[0];
        let l = self.ll(d.operands[0])?.ok_or_else(|| self.err("scan of a scalar"))?;
        let n = d.operands.len();
        let mut vals: Vec<Vec<Reg>> = d.operands.iter().map(|&v| self.regs(v)).collect::<Res<_>>()?;
        let levels = scan_levels(&l, axis).map_err(|e| self.err(format!("internal: {e}")))?;
        let shift = dim_shifts(&l.shape)[axis];
        let lookup = l.reg_lookup();
        let mut smem_used = false;
        for (k, lv) in levels.iter().enumerate() {
            let bitk = 1u64 << (shift + k as u32);
            let lower_mask: u64 = ((1u64 << k) - 1) << shift;
            // The element an upper-half element needs: bit k in the lower half, lower bits at the block's end.
            let partner = |c: u64| -> u64 {
                if reverse {
                    (c | bitk) & !lower_mask
                } else {
                    (c & !bitk) | lower_mask
                }
            };
            let is_upper_const = |c: u64| (c & bitk != 0) != reverse;
            let all_lower_regs = lv.lower.iter().all(|s| matches!(s, Src::Reg(_)));
            if let (Src::Reg(_), true) = (lv.src, all_lower_regs) {
                let mut next = vals.clone();
                for r in 0..l.num_regs() {
                    let c = l.reg_part(r as u64);
                    if !is_upper_const(c) {
                        continue;
                    }
                    let pr =
                        *lookup.get(&partner(c)).ok_or_else(|| self.err("internal: scan partner register"))? as usize;
                    let acc: Vec<Reg> = (0..n).map(|o| vals[o][pr]).collect();
                    let new: Vec<Reg> = (0..n).map(|o| vals[o][r]).collect();
                    let out = self.combine(region, &acc, &new)?;
                    for o in 0..n {
                        next[o][r] = out[o];
                    }
                }
                vals = next;
                continue;
            }
            if !lv.smem {
                // Shuffle from the lane holding the partner.
                let lower_lanes: u32 =
                    lv.lower.iter().filter_map(|s| if let Src::Lane(j) = s { Some(1u32 << j) } else { None }).sum();
                let own_lane = if let Src::Lane(j) = lv.src { 1u32 << j } else { 0 };
                let src_lane = self.new_reg(RegClass::B32);
                let lane = self.lane;
                if reverse {
                    self.ins(format!("and.b32 {src_lane}, {lane}, {}", !lower_lanes));
                    self.ins(format!("or.b32 {src_lane}, {src_lane}, {own_lane}"));
                } else {
                    self.ins(format!("or.b32 {src_lane}, {lane}, {lower_lanes}"));
                    self.ins(format!("and.b32 {src_lane}, {src_lane}, {}", !own_lane));
                }
                let upper_pred = if let Src::Lane(j) = lv.src {
                    let t = self.new_reg(RegClass::B32);
                    self.ins(format!("and.b32 {t}, {lane}, {}", 1u32 << j));
                    let p = self.new_reg(RegClass::Pred);
                    self.ins(format!("setp.{}.u32 {p}, {t}, 0", if reverse { "eq" } else { "ne" }));
                    Some(p)
                } else {
                    None
                };
                let src_s = src_lane.to_string();
                let mut next = vals.clone();
                for r in 0..l.num_regs() {
                    let c = l.reg_part(r as u64);
                    // Register bits of the partner: lower register bits at the block end,
                    // and for a register level, bit k in the lower half.
                    let reg_lower: u64 = lower_mask & l.reg.iter().fold(0, |a, &b| a | b);
                    let pc = if reverse {
                        (c & !reg_lower) | (bitk & reg_mask(&l, bitk))
                    } else {
                        (c | reg_lower) & !(bitk & reg_mask(&l, bitk))
                    };
                    if matches!(lv.src, Src::Reg(_)) && !is_upper_const(c) {
                        continue;
                    }
                    let pr = *lookup.get(&pc).ok_or_else(|| self.err("internal: scan partner register"))? as usize;
                    let got: Vec<Reg> = (0..n).map(|o| self.shfl("idx", vals[o][pr], &src_s)).collect();
                    let new: Vec<Reg> = (0..n).map(|o| vals[o][r]).collect();
                    let out = self.combine(region, &got, &new)?;
                    for o in 0..n {
                        next[o][r] = match upper_pred {
                            Some(p) => self.select(p, out[o], vals[o][r])?,
                            None => out[o],
                        };
                    }
                }
                vals = next;
                continue;
            }
            // Shared-memory exchange: everyone writes its values at their flat index, then reads partners.
            // The first round needs no barrier of its own: `barrier` ops order it after
            // earlier users of the scratch (gpu-insert-barriers).
            let base_off = self.smem_offset(op)?;
            if smem_used {
                self.cta_barrier();
            }
            smem_used = true;
            let base = self.smem_base();
            let lr = std::rc::Rc::new(LinearLayout { reg: vec![], ..(*l).clone() });
            let tflat = self.thread_flat(&lr);
            let owner = self.owner_pred(&l);
            let mut offs = vec![];
            let mut off = base_off as u64;
            for o in 0..n {
                offs.push(off);
                off += align8(l.numel() * scratch_elem_bytes(vals[o][0].class).max(4) as u64);
            }
            for r in 0..l.num_regs() {
                let c = l.reg_part(r as u64);
                let idx = self.new_reg(RegClass::B32);
                self.ins(format!("xor.b32 {idx}, {tflat}, {c}"));
                for o in 0..n {
                    let eb = scratch_elem_bytes(vals[o][r].class).max(4);
                    let a = self.new_reg(RegClass::B32);
                    self.ins(format!("mad.lo.u32 {a}, {idx}, {eb}, {base}"));
                    self.st_shared(owner, &format!("{a}+{}", offs[o]), vals[o][r]);
                }
            }
            self.cta_barrier();
            let upper_pred = match lv.src {
                Src::Lane(j) | Src::Warp(j) => {
                    let src = if matches!(lv.src, Src::Lane(_)) { self.lane } else { self.warp };
                    let t = self.new_reg(RegClass::B32);
                    self.ins(format!("and.b32 {t}, {src}, {}", 1u32 << j));
                    let p = self.new_reg(RegClass::Pred);
                    self.ins(format!("setp.{}.u32 {p}, {t}, 0", if reverse { "eq" } else { "ne" }));
                    Some(p)
                }
                Src::Reg(_) => None,
            };
            let mut next = vals.clone();
            for r in 0..l.num_regs() {
                let c = l.reg_part(r as u64);
                if matches!(lv.src, Src::Reg(_)) && !is_upper_const(c) {
                    continue;
                }
                // Partner flat index at run time: (thread ^ c) with the axis bits rewritten.
                let idx = self.new_reg(RegClass::B32);
                self.ins(format!("xor.b32 {idx}, {tflat}, {c}"));
                if reverse {
                    self.ins(format!("or.b32 {idx}, {idx}, {bitk}"));
                    self.ins(format!("and.b32 {idx}, {idx}, {}", !(lower_mask as u32)));
                } else {
                    self.ins(format!("and.b32 {idx}, {idx}, {}", !(bitk as u32)));
                    self.ins(format!("or.b32 {idx}, {idx}, {lower_mask}"));
                }
                let mut got = vec![];
                for o in 0..n {
                    let class = vals[o][r].class;
                    let eb = scratch_elem_bytes(class).max(4);
                    let a = self.new_reg(RegClass::B32);
                    self.ins(format!("mad.lo.u32 {a}, {idx}, {eb}, {base}"));
                    got.push(self.ld_shared(class, &format!("{a}+{}", offs[o])));
                }
                let new: Vec<Reg> = (0..n).map(|o| vals[o][r]).collect();
                let out = self.combine(region, &got, &new)?;
                for o in 0..n {
                    next[o][r] = match upper_pred {
                        Some(p) => self.select(p, out[o], vals[o][r])?,
                        None => out[o],
                    };
                }
            }
            vals = next;
        }
        for (o, &res) in d.results.iter().enumerate() {
            self.set(res, vals[o].clone());
        }
        Ok(())
    }
}

/// `bit` if it is one of the layout's register bases (a register level), else 0.
fn reg_mask(l: &LinearLayout, bit: u64) -> u64 {
    if l.reg.contains(&bit) {
        u64::MAX
    } else {
        0
    }
}
