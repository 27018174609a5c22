//! Hopper's asynchronous copies as `ptxas` (13.0) assembles them for sm_90/sm_90a: mbarriers
//! (`SYNCS.*`), tensor copies through a tensor map (`UTMALDG`, `UTMASTG`), bulk copies
//! (`UBLKCP`) and bulk groups (`UTMACMDFLUSH`, `DEPBAR.LE SB0`).
//!
//! **Semantics are shared with the PTX emulator**: an mbarrier's state and its rules are
//! `trident_emu::mbarrier::Mbar` (kept per CTA beside shared memory, keyed by the barrier's
//! shared offset), a tensor copy's map checks and box are `trident_emu::TensorMap`'s
//! (`for_copy`, `box_runs`, `filled_box`, `shared_chunks`: out-of-bounds fill, swizzle). The
//! maps are in the PTX emulator's own 128-byte encoding, which the runtime passes to both
//! emulators.
//!
//! **When copies land.** A load reads global memory when it issues (as the PTX emulator's
//! does) and lands — its bytes written to shared memory, then completed as transaction bytes
//! on its mbarrier — once no warp of the CTA can run without it: every warp done, at the CTA
//! barrier, or parked at a failed wait (`Barriers::land`, in issue order). The PTX emulator
//! lands a copy at the cycle its timing model says the data arrives, hundreds of cycles after
//! issue, and so does the hardware; the SASS emulator runs one warp at a time, so landing at
//! issue would let a copy overwrite shared memory other warps have not finished reading
//! (Trident's descriptor copy reuses a layout conversion's scratch for the box right after
//! its reads, with no CTA barrier between: a race the hardware's latency hides). Reading a
//! destination before waiting for its phase gives the old bytes. Stores read shared memory
//! and write global memory at issue; a bulk group's commit and wait have nothing left to do.
//!
//! **Operand conventions**, from experiment (`ptxas` 13.0 on small PTX kernels varying the
//! rank 1–5, coordinates from parameters and per thread, barrier offsets, predicates,
//! `nvdisasm` 13.0; see the README), where `[URa]` names a run of uniform registers from
//! `URa`:
//!
//! | SASS | PTX | operands |
//! |---|---|---|
//! | `SYNCS.EXCH.64 URZ, [a], URv` | `mbarrier.init [a], n` | `URv:URv+1` = `(2^20 - n) << 1 \| (2^20 - n) << 43` (`ptxas` computes it so for any `n`) |
//! | `SYNCS.ARRIVE.TRANS64 Rd, [a], Rb` | `mbarrier.arrive.expect_tx` | `Rb` transaction bytes, one arrival; `Rd:Rd+1` the state (`RZ`: `_`) |
//! | `... .A1T0 Rd, [a], RZ` | `mbarrier.arrive` | one arrival |
//! | `... .ART0 Rd, [a], Rb` | `mbarrier.arrive [a], n` | `Rb` arrivals |
//! | `... .RED.A0TR RZ, [a], Rb` | `mbarrier.expect_tx` | `Rb` bytes expected, no arrival |
//! | `... .RED.A0TX RZ, [a], Rb` | `mbarrier.complete_tx` | `Rb` bytes completed |
//! | `... .OPTOUT.A1T0 Rd, [a], RZ` | `mbarrier.arrive_drop` | one arrival, leaving the expected count |
//! | `SYNCS.PHASECHK.TRANS64[.TRYWAIT] Pd, [a], Rp` | `mbarrier.test_wait` (`try_wait`) | bit 31 of `Rp`: the parity waited for (`try_wait.parity p` passes `p << 31`; a wait on a state passes the state's high register) |
//! | `SYNCS.CCTL.IV [a]` | `mbarrier.inval` | |
//! | `UTMALDG.nD [URa], [URb]` | `cp.async.bulk.tensor.nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes` | `URa` shared destination, `URa+1` mbarrier, `URa+2..URa+2+n` coordinates (dimension 0 first); `URb:URb+1` the map's generic address |
//! | `UTMASTG.nD [URa], [URb]` | `cp.async.bulk.tensor.nd.global.shared::cta.tile.bulk_group` | `URa` shared source, `URa+1..URa+1+n` coordinates; `URb:URb+1` the map |
//! | `UBLKCP.S.G [URa], [URb], URc` | `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes` | `URa` shared destination, `URa+1` mbarrier, `URb:URb+1` global source, `URc` = size / 16 (16 bits) |
//! | `UBLKCP.G.S [URa], [URb], URc` | `cp.async.bulk.global.shared::cta.bulk_group` | `URa:URa+1` global destination, `URb` shared source, `URc` as above |
//! | `UTMACMDFLUSH` | `cp.async.bulk.commit_group` | (counted on SB0: `wait_group N` is `DEPBAR.LE SB0, N`) |
//!
//! Shared addresses are the shared window's (`S2UR SR_CgaCtaId` shifted left by 24 plus the
//! offset; the CTA id in a cluster of one is 0). A map passed as a parameter is read through
//! its generic address: `cvta.param` is `c[0x0][0x198]` (sm_90) plus the parameter's offset,
//! so the launch puts there the generic address of the parameters in constant bank 0 when the
//! bank sits at the start of the PTX emulator's parameter window (`PARAM_WINDOW`), and a map
//! address in the window reads the bank. `UTMALDG`/`UTMASTG`/`UBLKCP` are uniform: they run once per warp
//! with the uniform registers (`ptxas` wraps a copy a thread predicate guards in an `ELECT`
//! loop, one copy per electing lane). `ptxas`'s `.MULTICAST` and `.IM2COL` forms, reductions
//! (`UTMAREDG`) and any other modifier are refused by name.

use std::collections::HashMap;

use trident_emu::mbarrier::{Mbar, MAX_COUNT};
use trident_emu::memory::{classify_generic, Place};
use trident_emu::tensormap::{TensorMap, BYTES};
use trident_emu::{EmuError, ErrorKind};

use crate::decode::{Op, Opnd};
use crate::exec::{unsupported, Ctx, Flow, Warp, R};

fn rt(m: String) -> EmuError {
    EmuError::new(ErrorKind::Runtime, m)
}

fn mem(m: String) -> EmuError {
    EmuError::new(ErrorKind::Memory, m)
}

/// A copy into shared memory in flight: its data (read from global memory at issue), where it
/// lands, and the mbarrier it completes its bytes on.
#[derive(Debug)]
struct Landing {
    smem: u64,
    /// The swizzled 16-byte chunks' offsets (empty: contiguous at `smem`).
    chunks: Vec<u32>,
    data: Vec<u8>,
    bar: u32,
    bar_id: u32,
    /// The modelled cycle its data arrives.
    done: u64,
    /// The issuing instruction, for messages.
    pc: usize,
}

/// A CTA's live mbarriers, how far they have moved, and the copies in flight.
#[derive(Debug, Default)]
pub struct Barriers {
    /// By shared offset.
    pub live: HashMap<u32, Mbar>,
    next_id: u32,
    flight: Vec<Landing>,
    /// Changes to any barrier so far (inits, arrivals, transaction bytes, invalidations): a
    /// lane parked at a failed wait runs again once it moves.
    pub epoch: u64,
    /// When each barrier (by shared offset) last completed a phase: the clock of the arrival
    /// or the landing copy that completed it. A wait that sees the phase complete goes on no
    /// earlier (one barrier's clock, not the latest change of any: a producer far ahead on
    /// another barrier does not hold a consumer back).
    pub phase_clock: HashMap<u32, u64>,
}

impl Barriers {
    fn get(&mut self, off: u32) -> R<&mut Mbar> {
        self.live.get_mut(&off).ok_or_else(|| {
            rt(format!("mbarrier at shared offset {off:#x} is not initialized (mbarrier.init it first)"))
        })
    }

    fn update(&mut self, off: u32, arrive: u32, drop: bool, tx: i64, clock: u64) -> R<(u64, u32)> {
        let b = self.get(off)?;
        let before = b.phase;
        b.update(off, arrive, drop, tx)?;
        let (pending, after) = (b.pending, b.phase);
        if after != before {
            self.phase_clock.insert(off, clock);
        }
        self.moved(clock);
        Ok((before, pending))
    }

    fn moved(&mut self, _clock: u64) {
        self.epoch += 1;
    }

    /// A copy may not write a live barrier's 8 bytes.
    fn check_clear(&self, off: u64, len: u64) -> R<()> {
        for (&b, m) in &self.live {
            if len > 0 && off < b as u64 + 8 && (b as u64) < off + len {
                return Err(mem(format!(
                    "a copy writes shared memory at offset {off:#x} ({len} bytes) over the live mbarrier at offset {b:#x} (initialized by instruction {})",
                    m.line
                )));
            }
        }
        Ok(())
    }

    /// Lands every copy in flight, in issue order: its bytes into `shared`, its byte count
    /// completed on its mbarrier. Returns whether there was any. The launch calls it when no
    /// warp of the CTA can run without them (see the module docs).
    pub fn land(&mut self, shared: &mut [u8]) -> R<bool> {
        let copies = std::mem::take(&mut self.flight);
        let any = !copies.is_empty();
        for c in copies {
            if self.live.get(&c.bar).map(|b| b.id) != Some(c.bar_id) {
                return Err(rt(format!(
                    "the copy issued by instruction {} ({:#06x}) completed on the mbarrier at shared offset {:#x}, which was invalidated or re-initialized while the copy was in flight",
                    c.pc,
                    16 * c.pc,
                    c.bar
                )));
            }
            if c.chunks.is_empty() {
                self.check_clear(c.smem, c.data.len() as u64)?;
                shared[c.smem as usize..c.smem as usize + c.data.len()].copy_from_slice(&c.data);
            }
            for (piece, &at) in c.data.chunks_exact(16).zip(&c.chunks) {
                self.check_clear(at as u64, 16)?;
                shared[at as usize..at as usize + 16].copy_from_slice(piece);
            }
            self.update(c.bar, 0, false, -(c.data.len() as i64), c.done)?;
        }
        Ok(any)
    }

    /// What the barrier at `off` waits for, for a deadlock's message.
    pub fn describe(&self, off: u32) -> String {
        match self.live.get(&off) {
            Some(b) => format!("the mbarrier at shared offset {off:#x} {}", b.describe()),
            None => format!("the mbarrier at shared offset {off:#x} (invalidated)"),
        }
    }
}

/// `[URa]` or `[URa+off]`: the uniform register and the offset.
fn ureg_of(o: &Opnd) -> Option<(u8, i64)> {
    match o {
        Opnd::Mem { reg: None | Some(255), ureg: Some(u), off, .. } => Some((*u, *off)),
        _ => None,
    }
}

/// The dimension of `UTMALDG.2D` and the like.
fn rank_of(op: &Op) -> Option<u32> {
    op.mods.iter().find_map(|m| m.strip_suffix('D').and_then(|d| d.parse().ok())).filter(|d| (1..=5).contains(d))
}

impl Ctx<'_> {
    /// Uniform register `n + k` (a run of them), `URZ` reading 0.
    fn ur_at(&self, w: &Warp, n: u8, k: u32, op: &Op) -> R<u32> {
        if n == 63 {
            return Ok(0);
        }
        let i = n as u32 + k;
        if i >= 63 {
            return Err(unsupported(op, &format!("a uniform register run past UR62 (UR{n} + {k})")));
        }
        Ok(w.ur[i as usize])
    }

    fn ur64_at(&self, w: &Warp, n: u8, op: &Op) -> R<u64> {
        Ok(self.ur_at(w, n, 0, op)? as u64 | (self.ur_at(w, n, 1, op)? as u64) << 32)
    }

    /// An mbarrier's shared offset, checked: 8-byte aligned, inside the CTA's shared memory.
    fn bar_offset(&self, a: u64) -> R<u32> {
        if !a.is_multiple_of(8) {
            return Err(mem(format!("mbarrier address {a:#x} is not 8-byte aligned")));
        }
        if a < self.k.shared_reserved() as u64 || a + 8 > self.shared.len() as u64 {
            return Err(mem(format!("mbarrier at shared offset {a:#x} outside the CTA's {} bytes", self.shared.len())));
        }
        Ok(a as u32)
    }

    /// A shared range a copy reads or writes: inside the CTA's shared memory, past the
    /// reserved KiB.
    fn shared_range(&self, off: u64, len: u64, what: &str) -> R<()> {
        if off < self.k.shared_reserved() as u64 || off + len > self.shared.len() as u64 {
            return Err(mem(format!(
                "{what} at shared offset {off:#x} + {len} bytes outside the CTA's {} bytes",
                self.shared.len()
            )));
        }
        Ok(())
    }

    /// The 128 bytes of the tensor map at generic address `a`: a kernel parameter (in the
    /// parameter window, which holds constant bank 0 from its start) or global memory;
    /// 64-byte aligned.
    fn map_bytes(&self, a: u64) -> R<[u8; BYTES]> {
        if !a.is_multiple_of(64) {
            return Err(mem(format!(
                "tensor map address {a:#x} is not 64-byte aligned (a tensor map is a 128-byte object aligned to 64 bytes)"
            )));
        }
        let mut b = [0u8; BYTES];
        match classify_generic(a) {
            Place::Param(at) => {
                let at = at as usize;
                let src = self.cbank.get(at..at + BYTES).ok_or_else(|| {
                    mem(format!("tensor map at constant bank 0 offset {at:#x} runs past the kernel's parameters"))
                })?;
                b.copy_from_slice(src);
            }
            Place::Global(g) => self.mem.read(g, &mut b).map_err(|f| mem(f.message))?,
            _ => {
                return Err(mem(format!(
                    "tensor map at generic address {a:#x}: copies read tensor maps from parameter or global memory"
                )))
            }
        }
        Ok(b)
    }

    /// Puts a copy into shared memory in flight (it lands later: `Barriers::land`).
    fn in_flight(&mut self, smem: u64, chunks: Vec<u32>, data: Vec<u8>, bar: u32) -> R<()> {
        let bar_id = self.bars.get(bar)?.id;
        let done = self.clock + crate::timing::copy_latency(self.k.sm);
        self.bars.flight.push(Landing { smem, chunks, data, bar, bar_id, done, pc: self.pc });
        Ok(())
    }

    fn shared_get(&self, off: u64, chunks: &[u32], len: usize) -> Vec<u8> {
        if chunks.is_empty() {
            return self.shared[off as usize..off as usize + len].to_vec();
        }
        chunks.iter().flat_map(|&c| self.shared[c as usize..c as usize + 16].iter().copied()).collect()
    }

    /// `SYNCS.*`: mbarrier initialisation, arrivals, transaction counts, phase checks,
    /// invalidation. A phase check no active lane passes parks the lanes (`Flow::Park`) until
    /// a barrier moves; the launch calls it a deadlock when nothing can move one.
    pub fn syncs(&mut self, w: &mut Warp, op: &Op, mask: u32) -> R<Flow> {
        let o = &op.ops;
        let lanes: Vec<usize> = (0..32).filter(|l| mask >> l & 1 == 1).collect();
        let Some(&l0) = lanes.first() else { return Ok(Flow::Next) };
        let addr_at = |x: usize| o.get(x).ok_or_else(|| unsupported(op, "a SYNCS without its address"));
        // An address with no general register is the warp's: the uniform forms run once.
        let per_lane = |x: &Opnd| matches!(x, Opnd::Mem { reg: Some(r), .. } if *r != 255);
        let known = |allowed: &[&str]| op.mods.iter().all(|m| allowed.contains(&m.as_str()));
        let what = op.mods.first().map(String::as_str).unwrap_or("");
        match what {
            "EXCH" => {
                if !known(&["EXCH", "64"]) || !op.has("64") {
                    return Err(unsupported(op, "this SYNCS.EXCH form"));
                }
                if !matches!(o.first(), Some(Opnd::Ur { n: 63, .. } | Opnd::R { n: 255, .. })) {
                    return Err(unsupported(op, "a SYNCS.EXCH.64 whose old value is kept (only URZ/RZ)"));
                }
                let a = addr_at(1)?;
                let run: Vec<usize> = if per_lane(a) { lanes.clone() } else { vec![l0] };
                for l in run {
                    let off = self.bar_offset(self.address_of(w, l, a, op)?)?;
                    let v =
                        self.u64(w, l, o.get(2).ok_or_else(|| unsupported(op, "SYNCS.EXCH without a value"))?, op)?;
                    // `mbarrier.init [a], n` stores (2^20 - n) at bits 1..21 and 43..63.
                    let (lo, hi) = ((v >> 1) & MAX_COUNT, (v >> 43) & MAX_COUNT);
                    if lo != hi || lo == 0 || v != (lo << 1 | hi << 43) {
                        return Err(unsupported(
                            op,
                            &format!("a SYNCS.EXCH.64 value {v:#x} that is not an mbarrier.init's ((2^20 - n) << 1 | (2^20 - n) << 43)"),
                        ));
                    }
                    if let Some(b) = self.bars.live.get(&off) {
                        return Err(rt(format!(
                            "mbarrier at shared offset {off:#x} initialized again while live (initialized by instruction {}; mbarrier.inval it first)",
                            b.line
                        )));
                    }
                    let id = self.bars.next_id;
                    self.bars.next_id += 1;
                    let b = Mbar::new(id, (1 << 20) - lo, self.pc as u32)?;
                    self.bars.live.insert(off, b);
                    self.bars.moved(self.clock);
                }
                Ok(Flow::Next)
            }
            "ARRIVE" => {
                if !known(&["ARRIVE", "TRANS64", "RED", "A1T0", "ART0", "A0TR", "A0TX", "OPTOUT"]) {
                    return Err(unsupported(op, "this SYNCS.ARRIVE form"));
                }
                let form = ["A1T0", "ART0", "A0TR", "A0TX"].into_iter().find(|m| op.has(m)).unwrap_or("A1TR");
                let red = op.has("RED");
                let drop = op.has("OPTOUT");
                if red != matches!(form, "A0TR" | "A0TX") || drop && form != "A1T0" {
                    return Err(unsupported(op, "this SYNCS.ARRIVE form"));
                }
                let a = addr_at(1)?;
                let src = o.get(2).ok_or_else(|| unsupported(op, "SYNCS.ARRIVE without its count operand"))?;
                let dst = match o.first() {
                    Some(Opnd::R { n, .. }) => *n,
                    _ => return Err(unsupported(op, "this SYNCS.ARRIVE destination")),
                };
                for &l in &lanes {
                    let off = self.bar_offset(self.address_of(w, l, a, op)?)?;
                    let n = self.u(w, l, src, op)? as u64;
                    let (arrive, tx) = match form {
                        "A1TR" => (1, n as i64),
                        "A1T0" => (1, 0),
                        "ART0" => (n, 0),
                        "A0TR" => (0, n as i64),
                        _ => (0, -(n as i64)),
                    };
                    if form == "ART0" && (n == 0 || n > MAX_COUNT) {
                        return Err(rt(format!("mbarrier arrive count {n} outside [1, 2^20 - 1]")));
                    }
                    if tx.unsigned_abs() > MAX_COUNT {
                        return Err(rt(format!("transaction count {} exceeds 2^20 - 1", tx.unsigned_abs())));
                    }
                    // Expect-tx happens before the arrival (it must not let the phase complete).
                    let mut state = (0, 0);
                    if tx > 0 {
                        state = self.bars.update(off, 0, false, tx, self.clock)?;
                    }
                    if arrive > 0 || tx < 0 {
                        state = self.bars.update(off, arrive as u32, drop, tx.min(0), self.clock)?;
                    }
                    let (phase, pending) = state;
                    // The state: bit 63 the parity of the phase arrived at (what PHASECHK reads),
                    // the pending count after the arrival in the low bits (the emulator's own).
                    if dst != 255 {
                        w.r[dst as usize][l] = pending;
                        if dst < 254 {
                            w.r[dst as usize + 1][l] = ((phase & 1) as u32) << 31;
                        }
                    }
                }
                Ok(Flow::Next)
            }
            "PHASECHK" => {
                if !known(&["PHASECHK", "TRANS64", "TRYWAIT"]) {
                    return Err(unsupported(op, "this SYNCS.PHASECHK form"));
                }
                let pd = match o.first() {
                    Some(Opnd::P { n, .. }) => *n,
                    _ => return Err(unsupported(op, "this SYNCS.PHASECHK destination")),
                };
                let a = addr_at(1)?;
                let src = o.get(2).ok_or_else(|| unsupported(op, "SYNCS.PHASECHK without its phase operand"))?;
                let mut done = 0u32;
                let mut first = None;
                for &l in &lanes {
                    let off = self.bar_offset(self.address_of(w, l, a, op)?)?;
                    first.get_or_insert(off);
                    let parity = (self.u(w, l, src, op)? >> 31) as u64;
                    if self.bars.get(off)?.parity_complete(parity) {
                        done |= 1 << l;
                        // Seen complete no earlier than it completed.
                        let at = self.bars.phase_clock.get(&off).copied().unwrap_or(0);
                        self.waited_until = self.waited_until.max(at);
                    }
                }
                for &l in &lanes {
                    if pd != 7 {
                        if done >> l & 1 == 1 {
                            w.p[pd as usize] |= 1 << l;
                        } else {
                            w.p[pd as usize] &= !(1 << l);
                        }
                    }
                }
                // No lane passed: the lanes park (a `test_wait` too, which programs poll in a
                // loop), so the other warps run; a program that goes on after a failed wait is
                // let go when nothing else can run (see `lib`).
                if done == 0 {
                    return Ok(Flow::Park(mask, first.unwrap_or(0)));
                }
                Ok(Flow::Next)
            }
            "CCTL" if known(&["CCTL", "IV"]) && op.has("IV") => {
                let a = addr_at(0)?;
                let run: Vec<usize> = if per_lane(a) { lanes.clone() } else { vec![l0] };
                for l in run {
                    let off = self.bar_offset(self.address_of(w, l, a, op)?)?;
                    self.bars.get(off)?;
                    self.bars.live.remove(&off);
                    self.bars.moved(self.clock);
                }
                Ok(Flow::Next)
            }
            _ => Err(unsupported(op, "this SYNCS form")),
        }
    }

    /// `UTMALDG.nD` / `UTMASTG.nD`: a tile of the tensor a map describes, into shared memory
    /// (completing its bytes on the mbarrier) or out of it. Once per warp.
    pub fn utma(&mut self, w: &mut Warp, op: &Op, mask: u32) -> R<()> {
        if mask == 0 {
            return Ok(());
        }
        for bad in ["MULTICAST", "IM2COL"] {
            if op.has(bad) {
                return Err(unsupported(op, &format!("the .{bad} form of `{}`", op.root)));
            }
        }
        let dim = rank_of(op).ok_or_else(|| unsupported(op, "a tensor copy without its dimension"))?;
        if op.mods.len() != 1 {
            return Err(unsupported(op, &format!("this `{}` form", op.root)));
        }
        let load = op.root == "UTMALDG";
        let o = &op.ops;
        let (Some((a, 0)), Some((b, 0))) = (o.first().and_then(ureg_of), o.get(1).and_then(ureg_of)) else {
            return Err(unsupported(op, "these tensor-copy operands"));
        };
        // A third operand is a cache policy (`desc[URn]`): a hint.
        if o.len() > 3 || o.get(2).is_some_and(|x| !matches!(x, Opnd::Other(s) if s.starts_with("desc["))) {
            return Err(unsupported(op, "these tensor-copy operands"));
        }
        let smem = self.ur_at(w, a, 0, op)? as u64;
        let first_coord = if load { 2 } else { 1 };
        let mut coords = [0i64; 5];
        for (i, c) in coords.iter_mut().enumerate().take(dim as usize) {
            *c = self.ur_at(w, a, first_coord + i as u32, op)? as i32 as i64;
        }
        let map_at = self.ur64_at(w, b, op)?;
        let m = TensorMap::for_copy(&self.map_bytes(map_at)?, map_at, dim)?;
        let bytes = m.box_bytes();
        let what = if load { "destination" } else { "source" };
        let chunks = m.shared_chunks(smem, self.shared.len() as u64, what)?;
        self.shared_range(smem, bytes, &format!("tensor copy {what}"))?;
        if load {
            let bar = self.bar_offset(self.ur_at(w, a, 1, op)? as u64)?;
            let mut data = m.filled_box();
            for r in m.box_runs(&coords)? {
                let (at, len) = (r.at as usize, r.len as usize);
                self.mem.read(r.addr, &mut data[at..at + len]).map_err(|f| self.memory_error(op, f.message))?;
                self.traffic.touch(r.addr, len as u64);
            }
            self.in_flight(smem, chunks, data, bar)?;
        } else {
            let data = self.shared_get(smem, &chunks, bytes as usize);
            for r in m.box_runs(&coords)? {
                let (at, len) = (r.at as usize, r.len as usize);
                self.mem.write(r.addr, &data[at..at + len]).map_err(|f| self.memory_error(op, f.message))?;
                self.traffic.touch(r.addr, len as u64);
            }
        }
        Ok(())
    }

    /// `UBLKCP.S.G` (global to shared, completing on an mbarrier) and `UBLKCP.G.S` (shared to
    /// global): a bulk copy of a multiple of 16 bytes. Once per warp.
    pub fn ublkcp(&mut self, w: &mut Warp, op: &Op, mask: u32) -> R<()> {
        if mask == 0 {
            return Ok(());
        }
        let to_shared = match op.mods.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
            ["S", "G"] => true,
            ["G", "S"] => false,
            _ => return Err(unsupported(op, "this UBLKCP form")),
        };
        let o = &op.ops;
        let (Some((a, 0)), Some((b, 0)), Some(Opnd::Ur { n: c, .. })) =
            (o.first().and_then(ureg_of), o.get(1).and_then(ureg_of), o.get(2))
        else {
            return Err(unsupported(op, "these UBLKCP operands"));
        };
        if o.len() != 3 {
            return Err(unsupported(op, "these UBLKCP operands"));
        }
        // The size in 16-byte units, in the low 16 bits (`ptxas`: `USHF.R.U32.HI` by 4, then
        // `UPRMT ..., 0x5410, URZ`).
        let units = self.ur_at(w, *c, 0, op)?;
        if units >> 16 != 0 {
            return Err(unsupported(op, &format!("a bulk-copy size operand {units:#x} with bits above 16")));
        }
        let size = 16 * units as u64;
        if size == 0 {
            return Err(rt("bulk copy size 0 is not a positive multiple of 16".into()));
        }
        let (global, smem) = if to_shared {
            (self.ur64_at(w, b, op)?, self.ur_at(w, a, 0, op)? as u64)
        } else {
            (self.ur64_at(w, a, op)?, self.ur_at(w, b, 0, op)? as u64)
        };
        if !smem.is_multiple_of(16) || !global.is_multiple_of(16) {
            return Err(mem(format!(
                "bulk copy between shared offset {smem:#x} and global address {global:#x}: both must be 16-byte aligned"
            )));
        }
        self.shared_range(smem, size, if to_shared { "bulk copy destination" } else { "bulk copy source" })?;
        if to_shared {
            let bar = self.bar_offset(self.ur_at(w, a, 1, op)? as u64)?;
            let mut data = vec![0u8; size as usize];
            self.mem.read(global, &mut data).map_err(|f| self.memory_error(op, f.message))?;
            self.traffic.touch(global, size);
            self.in_flight(smem, Vec::new(), data, bar)?;
        } else {
            let data = self.shared_get(smem, &[], size as usize);
            self.mem.write(global, &data).map_err(|f| self.memory_error(op, f.message))?;
            self.traffic.touch(global, size);
        }
        Ok(())
    }
}
