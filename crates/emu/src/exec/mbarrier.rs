//! Hopper's asynchronous machinery (PTX ISA "Parallel Synchronization and Communication
//! Instructions: mbarrier", "Data Movement: cp.async.bulk"): mbarrier objects in shared
//! memory, bulk copies that complete on them, bulk groups, `setmaxnreg`, `elect.sync`
//! and `mapa` for a cluster of one CTA.
//!
//! An mbarrier's state ([`crate::mbarrier::Mbar`], shared with the SASS emulator) is kept
//! beside shared memory (keyed by its offset), not in its 8 bytes: the object is opaque in
//! PTX, and ordinary accesses to those bytes while it is live are reported as misuse. A
//! phase completes when its pending arrival count and its transaction count are both zero;
//! the parity of the current phase is `phase & 1`.
//!
//! A bulk load reads global memory when it issues and lands in shared memory at the cycle
//! the timing model says its data arrives (as `cp.async` does at its wait), then performs
//! complete-tx of its size on its mbarrier. The CTA lands copies whose time has come
//! before each warp step, and all in-flight copies in time order when no warp can run
//! (see `cta`). Bytes a copy wrote count, for race detection, as written by the async
//! proxy: a warp may read them only after it observed (by a successful wait) the phase
//! the copy completed.

use super::warp::{bad_operand, CtaMem, Ex, R};
use crate::error::{EmuError, ErrorKind};
use crate::ir::{Instr, Kind, MbarOp, Operand, Space};
pub use crate::mbarrier::Mbar;
use crate::mbarrier::MAX_COUNT;
use crate::memory::{check_align, Place};

/// Shared bytes a bulk store (`cp.async.bulk` or `.tensor`, shared → global) reads. The
/// emulator copies them when the store issues, but the hardware may read them any time until
/// the issuing warp's `cp.async.bulk.wait_group.read` retires the store's group — so a write
/// to them before that is a race, and so is another warp's write after it with no barrier
/// between (nothing orders it after the wait). `released`: the race epoch the wait ran in.
pub struct StoreRead {
    pub off: u64,
    pub len: u64,
    pub warp: u32,
    /// The bulk group the store belongs to (the warp's commit sequence number).
    pub group: u64,
    pub line: u32,
    pub released: Option<u32>,
}

/// Records that a bulk store issued at `line` by the running warp reads `[off, off + len)`
/// of shared memory (race checks only).
pub(crate) fn store_reads(ex: &mut Ex, off: u64, len: u64, line: u32) {
    if ex.m.race.is_some() {
        let (warp, group) = (ex.w.id, ex.w.bulk_committed);
        ex.m.store_reads.push(StoreRead { off, len, warp, group, line, released: None });
    }
}

/// A bulk load in flight.
pub struct BulkCopy {
    pub dst: u32,
    pub data: Vec<u8>,
    pub bar: u32,
    pub bar_id: u32,
    /// Cycle the data lands (`u64::MAX` until the timing model has booked it).
    pub done: u64,
    pub line: u32,
    pub warp: u32,
    pub lane: u32,
    /// Race-detection tag of its bytes (an index into `CtaMem::landings`).
    pub tag: Option<u32>,
    /// Shared offset of each 16-byte piece of `data` (a swizzled tensor copy); empty: `data`
    /// lands contiguously at `dst`.
    pub chunks: Vec<u32>,
}

fn rt(msg: impl Into<String>) -> EmuError {
    EmuError::new(ErrorKind::Runtime, msg)
}

/// The state token `mbarrier.arrive` returns: the phase in the high half (tests compare
/// it with the barrier's phase), the pending count after the arrival in the low 20 bits
/// (`mbarrier.pending_count` reads it back).
fn token(phase: u64, pending: u32) -> u64 {
    (phase << 32) | pending as u64
}

impl CtaMem {
    /// The live barrier at shared offset `off`, or the misuse error.
    pub fn mbar(&mut self, off: u32) -> R<&mut Mbar> {
        let size = self.shared.len();
        self.mbars.get_mut(&off).ok_or_else(|| {
            rt(format!(
                "mbarrier at shared offset {off} is not initialized (mbarrier.init it first{})",
                if off as usize + 8 > size { "; the offset is outside shared memory" } else { "" }
            ))
        })
    }

    /// Changes a barrier's counts at cycle `now` (arrivals `arrive`, of which `drop` also
    /// leave the expected count; transaction bytes `tx`), completing its phase if both
    /// counts reached zero. Returns the phase and pending count after it, for the token.
    pub fn mbar_update(&mut self, off: u32, arrive: u32, drop: bool, tx: i64, now: u64) -> R<(u64, u32)> {
        let b = self.mbar(off)?;
        let before = b.phase;
        if b.update(off, arrive, drop, tx)? {
            self.mbar_events.push((off, now));
        }
        let b = self.mbar(off)?;
        Ok((before, b.pending))
    }

    /// Lands bulk copy `c`: its bytes in shared memory, its bytes as complete-tx.
    pub fn land(&mut self, c: BulkCopy) -> R<()> {
        let live = self.mbars.get(&c.bar).map(|b| b.id);
        if live != Some(c.bar_id) {
            return Err(rt(format!(
                "bulk copy completed on the mbarrier at shared offset {}, which was invalidated or re-initialized while the copy was in flight",
                c.bar
            )));
        }
        let n = c.data.len();
        if c.chunks.is_empty() {
            self.check_not_barrier(c.dst as u64, n)?;
        }
        for &a in &c.chunks {
            self.check_not_barrier(a as u64, 16)?;
        }
        let phase = self.mbars.get(&c.bar).map_or(0, |b| b.phase);
        if let (Some(r), Some(tag)) = (self.race.as_mut(), c.tag) {
            // Now known: the phase this copy completes in (a barrier may have started a new
            // race epoch since the copy issued, so the bytes are marked again).
            if let Some(l) = self.landings.get_mut(tag as usize) {
                l.1 = phase;
            }
            if c.chunks.is_empty() {
                r.async_write(c.dst as usize, n, tag, c.line);
            }
            for &a in &c.chunks {
                r.async_write(a as usize, 16, tag, c.line);
            }
        }
        if c.chunks.is_empty() {
            self.shared[c.dst as usize..c.dst as usize + n].copy_from_slice(&c.data);
        }
        for (piece, &a) in c.data.chunks_exact(16).zip(&c.chunks) {
            self.shared[a as usize..a as usize + 16].copy_from_slice(piece);
        }
        self.mbar_update(c.bar, 0, false, -(n as i64), c.done).map(|_| ())
    }

    /// Ordinary accesses may not touch a live mbarrier's 8 bytes.
    pub fn check_not_barrier(&self, off: u64, len: usize) -> R<()> {
        if self.mbars.is_empty() {
            return Ok(());
        }
        for (&b, m) in &self.mbars {
            if off < b as u64 + 8 && b as u64 <= off.saturating_add(len as u64).saturating_sub(1) && len > 0 {
                return Err(EmuError::new(
                    ErrorKind::Memory,
                    format!(
                        "shared memory at offset {off} ({len} bytes) overlaps the mbarrier at offset {b} (initialized at line {}), which is still live: mbarrier.inval it before reusing its memory",
                        m.line
                    ),
                ));
            }
        }
        Ok(())
    }
}

impl Ex<'_, '_> {
    /// The shared offset of an mbarrier operand for one lane, checked (8-byte aligned,
    /// inside shared memory).
    pub(super) fn mbar_addr(&self, ins: &Instr, op: &Operand, lane: u32) -> R<u32> {
        let a = self.addr(op, lane)?;
        let off = match self.place(ins.m.space.unwrap_or(Space::Generic), a) {
            Place::Shared(o) => o,
            _ => return Err(bad_operand("an mbarrier must be in shared memory")),
        };
        check_align(off, 8).map_err(|m| EmuError::new(ErrorKind::Memory, m))?;
        if off + 8 > self.m.shared.len() as u64 {
            return Err(EmuError::new(
                ErrorKind::Memory,
                format!("mbarrier at shared offset {off} outside the CTA's {} bytes", self.m.shared.len()),
            ));
        }
        Ok(off as u32)
    }

    /// `mbarrier.try_wait`: true when every active lane found its phase incomplete, so
    /// the warp suspends (the caller re-executes it once a phase of `bar` completes). When
    /// some lanes' phases completed it returns at once, false to the others, as a try_wait
    /// whose time limit expired (programs loop on it).
    pub fn mbar_try_wait(&mut self, ins: &Instr, mask: u32) -> R<Option<u32>> {
        let (done, bar) = self.mbar_test(ins, mask)?;
        if done == 0 {
            return Ok(Some(bar));
        }
        Ok(None)
    }

    /// Tests each active lane's phase; writes the predicate; returns the lanes whose phase
    /// completed (nothing written if none) and the first lane's barrier.
    fn mbar_test(&mut self, ins: &Instr, mask: u32) -> R<(u32, u32)> {
        let mut vals = [0u64; 32];
        let mut done = 0u32;
        let mut first = u32::MAX;
        for lane in 0..32 {
            if mask >> lane & 1 == 0 {
                continue;
            }
            let off = self.mbar_addr(ins, &ins.ops[1], lane)?;
            if first == u32::MAX {
                first = off;
            }
            let want = self.src1(&ins.ops[2], lane)?;
            let b = self.m.mbar(off)?;
            let (complete, seen) = if ins.m.parity {
                // The phase of this parity is the current one or the one just completed.
                (b.parity_complete(want), b.phase)
            } else {
                let k = want >> 32;
                if k > b.phase {
                    return Err(rt(format!(
                        "mbarrier at shared offset {off}: waiting with the state of phase {k}, but the barrier is in phase {} (a state token from another barrier?)",
                        b.phase
                    )));
                }
                (b.phase > k, k + 1)
            };
            if complete {
                done |= 1 << lane;
                vals[lane as usize] = 1;
                let id = b.id;
                let s = self.w.mbar_seen.entry(id).or_insert(0);
                *s = (*s).max(seen);
            }
        }
        if done != 0 || ins.m.mbar == Some(MbarOp::TestWait) {
            self.dst(&ins.ops[0], mask, &vals, 1)?;
        }
        Ok((done, first))
    }
}

pub fn exec(ex: &mut Ex, ins: &Instr, mask: u32) -> R<()> {
    let o = &ins.ops;
    let now = ex.w.now;
    match ins.kind {
        Kind::Mbar => {
            let op = ins.m.mbar.ok_or_else(|| bad_operand("mbarrier without an operation"))?;
            match op {
                MbarOp::Init => {
                    for lane in 0..32 {
                        if mask >> lane & 1 == 0 {
                            continue;
                        }
                        let off = ex.mbar_addr(ins, &o[0], lane)?;
                        let count = ex.src1(&o[1], lane)?;
                        if let Some(b) = ex.m.mbars.get(&off) {
                            return Err(rt(format!(
                                "mbarrier at shared offset {off} initialized again while live (initialized at line {}; mbarrier.inval it first)",
                                b.line
                            )));
                        }
                        let b = Mbar::new(ex.m.next_mbar_id, count, ins.line)?;
                        ex.m.next_mbar_id += 1;
                        ex.m.mbars.insert(off, b);
                    }
                    Ok(())
                }
                MbarOp::Inval => {
                    for lane in 0..32 {
                        if mask >> lane & 1 == 0 {
                            continue;
                        }
                        let off = ex.mbar_addr(ins, &o[0], lane)?;
                        ex.m.mbar(off)?;
                        ex.m.mbars.remove(&off);
                    }
                    Ok(())
                }
                MbarOp::Arrive | MbarOp::ArriveDrop => {
                    let mut out = [0u64; 32];
                    for lane in 0..32 {
                        if mask >> lane & 1 == 0 {
                            continue;
                        }
                        let off = ex.mbar_addr(ins, &o[1], lane)?;
                        // `.expect_tx`'s third operand is a byte count, otherwise an arrival count.
                        let (count, tx) = match o.get(2) {
                            Some(x) if ins.m.expect_tx => (1, ex.src1(x, lane)?),
                            Some(x) => (ex.src1(x, lane)?, 0),
                            None => (1, 0),
                        };
                        if count == 0 || count > MAX_COUNT {
                            return Err(rt(format!("mbarrier arrive count {count} outside [1, 2^20 - 1]")));
                        }
                        if tx > MAX_COUNT {
                            return Err(rt(format!("transaction count {tx} exceeds 2^20 - 1")));
                        }
                        // expect-tx happens before the arrival (it must not let the phase complete).
                        if tx > 0 {
                            ex.m.mbar_update(off, 0, false, tx as i64, now)?;
                        }
                        let (phase, pending) = ex.m.mbar_update(off, count as u32, op == MbarOp::ArriveDrop, 0, now)?;
                        out[lane as usize] = token(phase, pending);
                    }
                    ex.dst(&o[0], mask, &out, u64::MAX)
                }
                MbarOp::ExpectTx | MbarOp::CompleteTx => {
                    for lane in 0..32 {
                        if mask >> lane & 1 == 0 {
                            continue;
                        }
                        let off = ex.mbar_addr(ins, &o[0], lane)?;
                        let n = ex.src1(&o[1], lane)?;
                        if n > MAX_COUNT {
                            return Err(rt(format!("transaction count {n} exceeds 2^20 - 1")));
                        }
                        let d = if op == MbarOp::ExpectTx { n as i64 } else { -(n as i64) };
                        ex.m.mbar_update(off, 0, false, d, now)?;
                    }
                    Ok(())
                }
                MbarOp::TestWait | MbarOp::TryWait => ex.mbar_test(ins, mask).map(|_| ()),
                MbarOp::PendingCount => {
                    let s = ex.src(&o[1])?;
                    let vals = s.map(|v| v & MAX_COUNT);
                    ex.dst(&o[0], mask, &vals, u32::MAX as u64)
                }
            }
        }
        Kind::BulkLoad => {
            for lane in 0..32 {
                if mask >> lane & 1 == 0 {
                    continue;
                }
                let dst = ex.addr(&o[0], lane)?;
                let src = ex.addr(&o[1], lane)?;
                let size = ex.src1(&o[2], lane)?;
                let bar = ex.mbar_addr(ins, &o[3], lane)?;
                let dst = bulk_range(ex, dst, size, "destination")?;
                if !src.is_multiple_of(16) {
                    return Err(EmuError::new(
                        ErrorKind::Memory,
                        format!("bulk copy source {src:#x} is not 16-byte aligned"),
                    ));
                }
                ex.m.check_not_barrier(dst as u64, size as usize)?;
                let bar_id = ex.m.mbar(bar)?.id;
                let mut data = vec![0u8; size as usize];
                ex.l.global.read(src, &mut data).map_err(|f| {
                    let mut e = EmuError::new(ErrorKind::Memory, f.message);
                    e.access = f.access.map(Box::new);
                    e
                })?;
                log_chunks(ex, Place::Global(src), size);
                log_chunks(ex, Place::Shared(dst as u64), size);
                // From issue until the phase it completes is observed, the destination
                // belongs to the copy: warps reading (or writing) it race with the copy.
                let tag = match ex.m.race.as_mut() {
                    Some(r) => {
                        let tag = ex.m.landings.len() as u32;
                        ex.m.landings.push((bar_id, u64::MAX));
                        r.async_write(dst as usize, size as usize, tag, ins.line);
                        Some(tag)
                    }
                    None => None,
                };
                let (line, warp) = (ins.line, ex.w.id);
                ex.m.bulk.push(BulkCopy {
                    dst,
                    data,
                    bar,
                    bar_id,
                    done: u64::MAX,
                    line,
                    warp,
                    lane,
                    tag,
                    chunks: Vec::new(),
                });
            }
            Ok(())
        }
        Kind::BulkStore => {
            for lane in 0..32 {
                if mask >> lane & 1 == 0 {
                    continue;
                }
                let dst = ex.addr(&o[0], lane)?;
                let src = ex.addr(&o[1], lane)?;
                let size = ex.src1(&o[2], lane)?;
                let src = bulk_range(ex, src, size, "source")?;
                if !dst.is_multiple_of(16) {
                    return Err(EmuError::new(
                        ErrorKind::Memory,
                        format!("bulk copy destination {dst:#x} is not 16-byte aligned"),
                    ));
                }
                // The async proxy reads shared memory as the issuing warp would.
                let mut data = vec![0u8; size as usize];
                ex.read_mem_aligned(Space::Shared, src as u64, &mut data, lane, ins.line, 16)?;
                store_reads(ex, src as u64, size, ins.line);
                ex.l.global.write(dst, &data).map_err(|f| {
                    let mut e = EmuError::new(ErrorKind::Memory, f.message);
                    e.access = f.access.map(Box::new);
                    e
                })?;
                log_chunks(ex, Place::Global(dst), size);
            }
            Ok(())
        }
        Kind::BulkCommit => {
            let d = std::mem::take(&mut ex.w.bulk_open_done);
            ex.w.bulk_done.push_back(d);
            ex.w.bulk_committed += 1;
            Ok(())
        }
        Kind::BulkWait => {
            // The data was read and written at issue: waiting takes time, and releases the
            // sources of the stores it retires (`StoreRead`).
            let n = ex.src1(&o[0], 0)? as usize;
            while ex.w.bulk_done.len() > n {
                let d = ex.w.bulk_done.pop_front().unwrap_or(0);
                ex.w.stall_until = ex.w.stall_until.max(d);
                ex.w.bulk_retired += 1;
            }
            if let Some(epoch) = ex.m.race.as_ref().map(|r| r.epoch()) {
                let (warp, retired) = (ex.w.id, ex.w.bulk_retired);
                ex.m.store_reads.retain(|s| s.released.is_none_or(|e| e == epoch));
                for s in ex.m.store_reads.iter_mut().filter(|s| s.warp == warp && s.group < retired) {
                    s.released.get_or_insert(epoch);
                }
            }
            Ok(())
        }
        Kind::SetMaxNReg => {
            let n = ex.src1(&o[0], 0)?;
            if !(24..=256).contains(&n) || !n.is_multiple_of(8) {
                return Err(rt(format!("setmaxnreg {n}: the register count must be a multiple of 8 in [24, 256]")));
            }
            let live = ex.w.lanes & !ex.w.exited;
            if mask != live {
                return Err(rt(
                    "setmaxnreg.sync.aligned executed by part of a warp (every thread of the warpgroup must)",
                ));
            }
            let wg = ex.w.id / 4;
            let k = ex.w.maxnreg_count as usize;
            ex.w.maxnreg_count += 1;
            let log = ex.m.maxnreg.entry(wg).or_default();
            let mine = (n as u32, ins.m.inc, ins.line, ex.w.id);
            match log.get(k) {
                Some(&(v, inc, line, w)) if (v, inc) != (mine.0, mine.1) => Err(rt(format!(
                    "setmaxnreg is not uniform across warpgroup {wg}: warp {w} ran setmaxnreg.{} {v} at line {line}, warp {} runs setmaxnreg.{} {n}",
                    if inc { "inc" } else { "dec" },
                    ex.w.id,
                    if ins.m.inc { "inc" } else { "dec" }
                ))),
                Some(_) => Ok(()),
                None => {
                    log.push(mine);
                    Ok(())
                }
            }
        }
        Kind::Elect => {
            let members = ex.src1(&o[1], 0)? as u32;
            let elected = mask & members;
            let leader = if elected == 0 { 0 } else { elected.trailing_zeros() };
            let (d, p) = match &o[0] {
                Operand::Vec(v) if v.len() == 2 => (v[0].clone(), v[1].clone()),
                _ => return Err(bad_operand("elect.sync needs d|p")),
            };
            ex.dst(&d, mask, &[leader as u64; 32], u32::MAX as u64)?;
            let mut pv = [0u64; 32];
            if elected != 0 {
                pv[leader as usize] = 1;
            }
            ex.dst(&p, mask, &pv, 1)
        }
        Kind::Mapa => {
            let a = ex.src(&o[1])?;
            let r = ex.src(&o[2])?;
            for lane in 0..32 {
                if mask >> lane & 1 != 0 && r[lane] != 0 {
                    return Err(rt(format!(
                        "mapa to CTA rank {} of a cluster of one CTA (the emulator launches clusters of one)",
                        r[lane]
                    )));
                }
            }
            let wm = ins.ty().mask();
            ex.dst(&o[0], mask, &a, wm)
        }
        _ => Err(bad_operand("not an asynchronous-machinery instruction")),
    }
}

/// Checks a bulk copy's shared range (16-byte aligned, a positive multiple of 16 bytes,
/// inside shared memory) and returns its offset.
fn bulk_range(ex: &Ex, addr: u64, size: u64, what: &str) -> R<u32> {
    if size == 0 || !size.is_multiple_of(16) {
        return Err(rt(format!("bulk copy size {size} is not a positive multiple of 16")));
    }
    let off = match ex.place(Space::Shared, addr) {
        Place::Shared(o) => o,
        _ => return Err(bad_operand("bulk copy shared address")),
    };
    if !off.is_multiple_of(16) {
        return Err(EmuError::new(
            ErrorKind::Memory,
            format!("bulk copy {what} at shared offset {off} is not 16-byte aligned"),
        ));
    }
    if off.saturating_add(size) > ex.m.shared.len() as u64 {
        return Err(EmuError::new(
            ErrorKind::Memory,
            format!(
                "bulk copy {what} at shared offset {off} + {size} bytes outside the CTA's {} bytes",
                ex.m.shared.len()
            ),
        ));
    }
    Ok(off as u32)
}

/// Logs a bulk transfer for the timing model in 128-byte pieces (the footprint counts
/// sectors and lines from them).
pub(super) fn log_chunks(ex: &mut Ex, place: Place, size: u64) {
    let mut at = 0;
    while at < size {
        let n = (size - at).min(128) as usize;
        let p = match place {
            Place::Global(a) => Place::Global(a + at),
            Place::Shared(a) => Place::Shared(a + at),
            p => p,
        };
        ex.log_access(p, n);
        at += 128;
    }
}
