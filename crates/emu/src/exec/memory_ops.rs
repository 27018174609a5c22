//! Loads, stores, atomics and asynchronous copies, over every state space, with
//! bounds and alignment checks and shared-memory race tracking.

use super::int::sext;
use super::warp::{bad_operand, unsupported, Ex, PendingCopy, R};
use crate::error::{EmuError, ErrorKind};
use crate::fp::{self, Small};
use crate::ir::{AtomOp, Instr, Kind, Operand, Space, Ty};
use crate::memory::{check_align, classify_generic, Place, PARAM_WINDOW, WINDOW_SIZE};
use crate::timing::access::Where;

fn mem_err(f: impl Into<crate::memory::MemFault>) -> EmuError {
    let f = f.into();
    let mut e = EmuError::new(ErrorKind::Memory, f.message);
    e.access = f.access.map(Box::new);
    e
}

impl Ex<'_, '_> {
    /// Resolves an address in `space` to a concrete place (generic addresses by window).
    pub fn place(&self, space: Space, addr: u64) -> Place {
        match space {
            Space::Shared => Place::Shared(addr),
            Space::Local => Place::Local(addr),
            Space::Generic => classify_generic(addr),
            // A named parameter's offset, or an address taken with `mov`/`cvta.param`.
            Space::Param if (PARAM_WINDOW..PARAM_WINDOW + WINDOW_SIZE).contains(&addr) => {
                Place::Param(addr - PARAM_WINDOW)
            }
            Space::Param => Place::Param(addr),
            _ => Place::Global(addr),
        }
    }

    fn local_range(&self, lane: u32, off: u64, len: usize) -> R<usize> {
        let ls = self.m.local_size as u64;
        if off.saturating_add(len as u64) > ls {
            return Err(mem_err(format!(
                "local memory access of {len} bytes at offset {off} outside the thread's {ls} bytes"
            )));
        }
        Ok(self.tid(lane) as usize * ls as usize + off as usize)
    }

    /// Bounds-checks a shared access and records it for race detection. `new` holds the
    /// bytes a write stores: bytes it leaves unchanged are not counted as written, since
    /// warps holding replicated data (common in Triton's layouts) store equal values.
    fn shared_check(&mut self, off: u64, len: usize, new: Option<&[u8]>, line: u32) -> R<usize> {
        let write = new.is_some();
        let size = self.m.shared.len() as u64;
        if off.saturating_add(len as u64) > size {
            return Err(mem_err(format!(
                "shared memory access of {len} bytes at offset {off} outside the CTA's {size} bytes"
            )));
        }
        self.m.check_not_barrier(off, len)?;
        let warp = self.w.id;
        if let Some(r) = self.m.race.as_mut() {
            let (landings, seen_map) = (&self.m.landings, &self.w.mbar_seen);
            // A bulk copy's bytes are visible to a warp that waited for the phase it completed.
            let seen = |tag: u32| {
                landings.get(tag as usize).is_some_and(|&(id, phase)| seen_map.get(&id).is_some_and(|&s| s > phase))
            };
            if let Some(bytes) = new {
                let old = &self.m.shared[off as usize..off as usize + len];
                let changed = (0..len).filter(|&i| old[i] != bytes[i]);
                let (epoch, reads) = (r.epoch(), &self.m.store_reads);
                for i in changed {
                    let at = off + i as u64;
                    let Some(s) = reads.iter().find(|s| {
                        (s.off..s.off + s.len).contains(&at) && s.released.is_none_or(|e| e == epoch && s.warp != warp)
                    }) else {
                        continue;
                    };
                    let why = match s.released {
                        None => format!(
                            "before warp {} waited for it to read them (`cp.async.bulk.wait_group.read`)",
                            s.warp
                        ),
                        Some(_) => format!("after warp {} waited for it, with no barrier between", s.warp),
                    };
                    return Err(EmuError::new(
                        ErrorKind::Race,
                        format!(
                            "shared-memory data race at byte offset {at}: warp {warp} overwrites bytes the bulk store at line {} reads, {why}",
                            s.line
                        ),
                    ));
                }
            }
            let conflict = match new {
                None => r.access(off as usize, len, warp, false, line, seen),
                Some(bytes) => {
                    let old = &self.m.shared[off as usize..off as usize + len];
                    (0..len)
                        .filter(|&i| old[i] != bytes[i])
                        .find_map(|i| r.access(off as usize + i, 1, warp, true, line, seen))
                }
            };
            if let Some(c) = conflict.as_ref().filter(|c| c.async_tag.is_some()) {
                let phase = c.async_tag.and_then(|t| self.m.landings.get(t as usize)).map_or(u64::MAX, |l| l.1);
                let when = if phase == u64::MAX {
                    "while it is in flight".to_string()
                } else {
                    format!("without waiting for the mbarrier phase {phase} it completed")
                };
                return Err(EmuError::new(
                    ErrorKind::Race,
                    format!(
                        "shared-memory data race at byte offset {off}: warp {warp} {} bytes of the bulk copy at line {} {when}",
                        if write { "overwrites" } else { "reads" },
                        c.other_line
                    ),
                ));
            }
            if let Some(c) = conflict {
                return Err(EmuError::new(
                    ErrorKind::Race,
                    format!(
                        "shared-memory data race at byte offset {off}: warp {warp} {} it, warp {} {} it at line {} with no barrier between",
                        if write { "writes" } else { "reads" },
                        c.other_warp,
                        if c.other_wrote { "wrote" } else { "read" },
                        c.other_line
                    ),
                ));
            }
        }
        Ok(off as usize)
    }

    /// Reads `out.len()` bytes at `addr` in `space` for `lane`, aligned to their size.
    pub fn read_mem(&mut self, space: Space, addr: u64, out: &mut [u8], lane: u32, line: u32) -> R<()> {
        self.read_mem_aligned(space, addr, out, lane, line, out.len() as u64)
    }

    /// [`Ex::read_mem`] with the alignment the access needs (`align` bytes): a bulk copy's
    /// source needs only 16 (PTX ISA `cp.async.bulk`), whatever its size.
    pub fn read_mem_aligned(
        &mut self,
        space: Space,
        addr: u64,
        out: &mut [u8],
        lane: u32,
        line: u32,
        align: u64,
    ) -> R<()> {
        check_align(addr, align).map_err(mem_err)?;
        let place = self.place(space, addr);
        self.log_access(place, out.len());
        match place {
            Place::Shared(off) => {
                let at = self.shared_check(off, out.len(), None, line)?;
                out.copy_from_slice(&self.m.shared[at..at + out.len()]);
            }
            Place::Local(off) => {
                let at = self.local_range(lane, off, out.len())?;
                out.copy_from_slice(&self.m.local[at..at + out.len()]);
            }
            Place::Param(off) => {
                let p = &self.l.params;
                let end = (off as usize).saturating_add(out.len());
                if end > p.len() {
                    return Err(mem_err(format!(
                        "parameter read at offset {off} past the {} parameter bytes",
                        p.len()
                    )));
                }
                out.copy_from_slice(&p[off as usize..end]);
            }
            Place::Global(a) => self.l.global.read(a, out).map_err(mem_err)?,
        }
        Ok(())
    }

    pub fn write_mem(&mut self, space: Space, addr: u64, src: &[u8], lane: u32, line: u32) -> R<()> {
        check_align(addr, src.len() as u64).map_err(mem_err)?;
        let place = self.place(space, addr);
        self.log_access(place, src.len());
        match place {
            Place::Shared(off) => {
                let at = self.shared_check(off, src.len(), Some(src), line)?;
                self.m.shared[at..at + src.len()].copy_from_slice(src);
            }
            Place::Local(off) => {
                let at = self.local_range(lane, off, src.len())?;
                self.m.local[at..at + src.len()].copy_from_slice(src);
            }
            Place::Param(_) => return Err(mem_err("store to kernel parameters".to_string())),
            Place::Global(a) => self.l.global.write(a, src).map_err(mem_err)?,
        }
        Ok(())
    }

    /// Records an access of the instruction being executed for the timing model.
    pub fn log_access(&mut self, place: Place, len: usize) {
        if self.sm.acc.enabled {
            let (w, a) = match place {
                Place::Shared(o) => (Where::Shared, o),
                Place::Local(o) => (Where::Local, o),
                Place::Param(o) => (Where::Param, o),
                Place::Global(a) => (Where::Global, a),
            };
            self.sm.acc.push(w, a, len);
        }
    }

    /// Applies finished `cp.async` groups: all but the newest `keep` committed groups
    /// (and, with `open`, the not yet committed copies too). The warp waits until they
    /// have landed.
    pub fn complete_copies(&mut self, keep: usize, open: bool) -> R<()> {
        while self.w.cp_groups.len() > keep {
            let Some(g) = self.w.cp_groups.pop_front() else { break };
            let done = self.w.cp_done.pop_front().unwrap_or(0);
            self.w.stall_until = self.w.stall_until.max(done);
            self.apply_copies(g)?;
        }
        if open {
            let g = std::mem::take(&mut self.w.cp_open);
            let done = std::mem::take(&mut self.w.cp_open_done);
            self.w.stall_until = self.w.stall_until.max(done);
            self.apply_copies(g)?;
        }
        Ok(())
    }

    fn apply_copies(&mut self, g: Vec<PendingCopy>) -> R<()> {
        for c in g {
            let n = c.len as usize;
            let at = self.shared_check(c.dst as u64, n, Some(&c.bytes[..n]), c.line).map_err(|e| {
                e.at_line(c.line, self.l.module.line_text(c.line)).at_thread(self.m.ctaid, self.thread_xyz(c.lane))
            })?;
            self.m.shared[at..at + n].copy_from_slice(&c.bytes[..n]);
        }
        Ok(())
    }

    fn fail_at(&self, e: EmuError, lane: u32) -> EmuError {
        e.at_thread(self.m.ctaid, self.thread_xyz(lane))
    }
}

fn regs_of(op: &Operand, n: usize) -> R<Vec<Operand>> {
    match op {
        Operand::Vec(v) if v.len() == n => Ok(v.clone()),
        o if n == 1 => Ok(vec![o.clone()]),
        _ => Err(bad_operand("vector operand has the wrong number of elements")),
    }
}

pub fn exec(ex: &mut Ex, ins: &Instr, mask: u32) -> R<()> {
    let o = &ins.ops;
    let space = ins.m.space.unwrap_or(Space::Generic);
    let line = ins.line;
    match ins.kind {
        Kind::Ld | Kind::St => {
            let t = ins.ty();
            let n = ins.m.vec.max(1) as usize;
            let es = t.bytes() as usize;
            let total = es * n;
            if total > 64 || es > 8 {
                return Err(unsupported(ins, "access wider than 64 bytes"));
            }
            let (addr_op, data_op) = if ins.kind == Kind::Ld { (&o[1], &o[0]) } else { (&o[0], &o[1]) };
            let elems = regs_of(data_op, n)?;
            let em = if es >= 8 { u64::MAX } else { (1u64 << (8 * es)) - 1 };
            let mut buf = [0u8; 64];
            if ins.kind == Kind::Ld {
                let mut vals = vec![[0u64; 32]; n];
                for lane in 0..32 {
                    if mask >> lane & 1 == 0 {
                        continue;
                    }
                    let a = ex.addr(addr_op, lane)?;
                    ex.read_mem(space, a, &mut buf[..total], lane, line).map_err(|e| ex.fail_at(e, lane))?;
                    for (k, v) in vals.iter_mut().enumerate() {
                        let mut w = [0u8; 8];
                        w[..es].copy_from_slice(&buf[k * es..(k + 1) * es]);
                        let x = u64::from_le_bytes(w);
                        // Narrow signed loads sign-extend into the (wider) register.
                        v[lane as usize] = if t.is_signed() { sext(x, 8 * es as u32) as u64 } else { x };
                    }
                }
                let wm = if t.is_signed() { u64::MAX } else { em };
                for (k, e) in elems.iter().enumerate() {
                    ex.dst(e, mask, &vals[k], wm)?;
                }
            } else {
                let vals: Vec<[u64; 32]> = elems.iter().map(|e| ex.src(e)).collect::<R<_>>()?;
                for lane in 0..32 {
                    if mask >> lane & 1 == 0 {
                        continue;
                    }
                    let a = ex.addr(addr_op, lane)?;
                    for (k, v) in vals.iter().enumerate() {
                        buf[k * es..(k + 1) * es].copy_from_slice(&v[lane as usize].to_le_bytes()[..es]);
                    }
                    ex.write_mem(space, a, &buf[..total], lane, line).map_err(|e| ex.fail_at(e, lane))?;
                }
            }
            Ok(())
        }
        Kind::Atom | Kind::Red => atomic(ex, ins, mask, space),
        Kind::CpAsync => {
            let cp = ex.src1(&o[2], 0)? as usize;
            if !matches!(cp, 4 | 8 | 16) {
                return Err(unsupported(ins, "cp.async size must be 4, 8 or 16"));
            }
            let has_src_size = o.len() >= 5 || (o.len() == 4 && !ins.m.cache_hint);
            for lane in 0..32u32 {
                if mask >> lane & 1 == 0 {
                    continue;
                }
                let dst = ex.addr(&o[0], lane)?;
                let src = ex.addr(&o[1], lane)?;
                let src_size = if ins.m.ignore_src {
                    if ex.src1(&o[3], lane)? != 0 {
                        0
                    } else {
                        cp
                    }
                } else if has_src_size {
                    (ex.src1(&o[3], lane)? as usize).min(cp)
                } else {
                    cp
                };
                let mut c = PendingCopy { lane, dst: 0, len: cp as u8, bytes: [0; 16], line };
                let dst_off = match ex.place(Space::Shared, dst) {
                    Place::Shared(off) => off,
                    _ => return Err(bad_operand("cp.async destination")),
                };
                check_align(dst, cp as u64).map_err(|m| ex.fail_at(mem_err(m), lane))?;
                if dst_off.saturating_add(cp as u64) > ex.m.shared.len() as u64 {
                    return Err(ex.fail_at(
                        mem_err(format!(
                            "cp.async destination offset {dst_off} + {cp} outside the CTA's {} bytes of shared memory",
                            ex.m.shared.len()
                        )),
                        lane,
                    ));
                }
                c.dst = dst_off as u32;
                // The copy's shared-memory write and (unless zero-filled) its global read.
                ex.log_access(Place::Shared(dst_off), cp);
                if src_size > 0 {
                    ex.log_access(Place::Global(src), cp);
                    check_align(src, cp as u64).map_err(|m| ex.fail_at(mem_err(m), lane))?;
                    ex.l.global.read(src, &mut c.bytes[..src_size]).map_err(|m| ex.fail_at(mem_err(m), lane))?;
                }
                ex.w.cp_open.push(c);
            }
            Ok(())
        }
        Kind::CpAsyncCommit => {
            let g = std::mem::take(&mut ex.w.cp_open);
            ex.w.cp_groups.push_back(g);
            let done = std::mem::take(&mut ex.w.cp_open_done);
            ex.w.cp_done.push_back(done);
            Ok(())
        }
        Kind::CpAsyncWait => {
            let n = ex.src1(&o[0], 0)? as usize;
            ex.complete_copies(n, false)
        }
        Kind::CpAsyncWaitAll => ex.complete_copies(0, true),
        _ => Err(unsupported(ins, "memory op")),
    }
}

fn f16_add(old: u64, b: u64, f: Small) -> u64 {
    let s = fp::small_to_f64(f, old as u16) + fp::small_to_f64(f, b as u16);
    fp::to_small(f, s, 0.0, crate::ir::Rnd::Rn, false) as u64
}

fn atomic(ex: &mut Ex, ins: &Instr, mask: u32, space: Space) -> R<()> {
    let o = &ins.ops;
    let t = ins.ty();
    let op = ins.m.atom.ok_or_else(|| unsupported(ins, "atomic without an operation"))?;
    if ins.m.vec > 1 {
        return Err(unsupported(ins, "vector atomics"));
    }
    let is_atom = ins.kind == Kind::Atom;
    let (addr_op, b_op) = if is_atom { (&o[1], &o[2]) } else { (&o[0], &o[1]) };
    let c_op = if is_atom && op == AtomOp::Cas { o.get(3) } else { None };
    let size = t.bytes() as usize;
    let wm = t.mask();
    let f = move |old: u64, b: u64, c: u64| -> Option<u64> {
        let signed = t.is_signed();
        Some(
            match op {
                AtomOp::Add => match t {
                    Ty::F32 => {
                        let r = fp::ftz32(fp::ftz32(f32::from_bits(old as u32)) + fp::ftz32(f32::from_bits(b as u32)));
                        fp::canon32(r) as u64
                    }
                    Ty::F64 => (f64::from_bits(old) + f64::from_bits(b)).to_bits(),
                    Ty::F16 => f16_add(old, b, Small::F16),
                    Ty::BF16 => f16_add(old, b, Small::BF16),
                    Ty::F16x2 | Ty::BF16x2 => {
                        let f = if t == Ty::F16x2 { Small::F16 } else { Small::BF16 };
                        f16_add(old & 0xffff, b & 0xffff, f) | (f16_add(old >> 16, b >> 16, f) << 16)
                    }
                    _ => old.wrapping_add(b),
                },
                AtomOp::Min | AtomOp::Max if t.is_float() => return None,
                AtomOp::Min | AtomOp::Max => {
                    let bits = t.bits();
                    let (x, y) = if signed {
                        (sext(old, bits) as i128, sext(b, bits) as i128)
                    } else {
                        ((old & wm) as i128, (b & wm) as i128)
                    };
                    let r = if op == AtomOp::Max { x.max(y) } else { x.min(y) };
                    r as u64
                }
                AtomOp::Exch => b,
                AtomOp::Cas => {
                    if old & wm == b & wm {
                        c
                    } else {
                        old
                    }
                }
                AtomOp::And => old & b,
                AtomOp::Or => old | b,
                AtomOp::Xor => old ^ b,
                AtomOp::Inc => {
                    if (old & wm) >= (b & wm) {
                        0
                    } else {
                        old + 1
                    }
                }
                AtomOp::Dec => {
                    if old & wm == 0 || (old & wm) > (b & wm) {
                        b
                    } else {
                        old - 1
                    }
                }
            } & wm,
        )
    };
    if f(0, 0, 0).is_none() || ![2, 4, 8].contains(&size) {
        return Err(unsupported(ins, "atomic type/operation"));
    }
    let bv = ex.src(b_op)?;
    let cv = match c_op {
        Some(c) => ex.src(c)?,
        None => [0u64; 32],
    };
    let mut out = [0u64; 32];
    for lane in 0..32u32 {
        if mask >> lane & 1 == 0 {
            continue;
        }
        let l = lane as usize;
        let a = ex.addr(addr_op, lane)?;
        check_align(a, size as u64).map_err(|m| ex.fail_at(mem_err(m), lane))?;
        let place = ex.place(space, a);
        ex.log_access(place, size);
        let old = match place {
            Place::Param(_) => return Err(unsupported(ins, "atomics on parameters")),
            Place::Global(ga) => {
                ex.l.global
                    .rmw(ga, size, |old| f(old, bv[l], cv[l]).unwrap_or(old))
                    .map_err(|m| ex.fail_at(mem_err(m), lane))?
            }
            Place::Shared(off) => {
                ex.m.check_not_barrier(off, size).map_err(|e| ex.fail_at(e, lane))?;
                let sz = ex.m.shared.len() as u64;
                if off.saturating_add(size as u64) > sz {
                    return Err(ex.fail_at(
                        mem_err(format!("shared atomic at offset {off} outside the CTA's {sz} bytes")),
                        lane,
                    ));
                }
                let at = off as usize;
                let mut w = [0u8; 8];
                w[..size].copy_from_slice(&ex.m.shared[at..at + size]);
                let old = u64::from_le_bytes(w);
                let new = f(old, bv[l], cv[l]).unwrap_or(old);
                ex.m.shared[at..at + size].copy_from_slice(&new.to_le_bytes()[..size]);
                old
            }
            Place::Local(off) => {
                let ls = ex.m.local_size as u64;
                if off.saturating_add(size as u64) > ls {
                    return Err(ex.fail_at(mem_err(format!("local atomic at offset {off} out of bounds")), lane));
                }
                let at = ex.tid(lane) as usize * ls as usize + off as usize;
                let mut w = [0u8; 8];
                w[..size].copy_from_slice(&ex.m.local[at..at + size]);
                let old = u64::from_le_bytes(w);
                let new = f(old, bv[l], cv[l]).unwrap_or(old);
                ex.m.local[at..at + size].copy_from_slice(&new.to_le_bytes()[..size]);
                old
            }
        };
        out[l] = old;
    }
    if is_atom {
        ex.dst(&o[0], mask, &out, wm)?;
    }
    Ok(())
}
