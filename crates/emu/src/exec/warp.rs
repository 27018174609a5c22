//! A warp: 32 lanes in lockstep. Registers are stored lane-minor (`reg * 32 + lane`)
//! so an instruction is a tight loop over lanes. Divergence uses a reconvergence
//! stack: a branch whose lanes disagree pushes both paths, each tagged with the
//! branch's immediate post-dominator, where they merge again.

use std::collections::VecDeque;

use super::race::RaceShadow;
use super::Launch;
use crate::error::{EmuError, ErrorKind};
use crate::ir::{AddrBase, BoolOp, Instr, Kind, Operand, Sreg, NO_PC};
use crate::timing::class::{Lat, Pipe};
use crate::timing::memsys::MemSystem;
use crate::timing::sm::{mma_type_scale, SmTiming};

pub const FULL: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub struct Entry {
    pub pc: u32,
    pub mask: u32,
    pub reconv: u32,
}

pub struct Frame {
    pub func: u32,
    pub regs: Vec<u64>,
    /// Scoreboard: the cycle from which each register's latest value can be read.
    pub ready: Vec<u64>,
    pub stack: Vec<Entry>,
    /// Lanes that made the call; return values are copied back for them.
    pub call_mask: u32,
    /// (callee offset, caller offset, bytes) in local memory, copied on return.
    pub ret_copy: Vec<(u32, u32, u32)>,
}

impl Frame {
    pub fn new(func: u32, nregs: u32, mask: u32) -> Frame {
        Frame {
            func,
            regs: vec![0; nregs as usize * 32],
            ready: vec![0; nregs as usize],
            stack: vec![Entry { pc: 0, mask, reconv: NO_PC }],
            call_mask: mask,
            ret_copy: Vec::new(),
        }
    }
}

/// One lane's `cp.async` copy, read at issue, written to shared memory at completion.
pub struct PendingCopy {
    pub lane: u32,
    pub dst: u32,
    pub len: u8,
    pub bytes: [u8; 16],
    pub line: u32,
}

pub struct Warp {
    pub id: u32,
    /// Lanes that exist (the last warp of a CTA may be partial).
    pub lanes: u32,
    pub exited: u32,
    pub frames: Vec<Frame>,
    /// Timing (see `crate::timing`): the earliest cycle the next instruction can issue,
    /// and the issue cycle of the one executing (what `%clock64` reads).
    pub clock: u64,
    pub now: u64,
    /// When it last issued, in the SM's issue order (ties go to the least recent).
    pub last_issue: u64,
    /// The scheduler (SM sub-partition) the warp issues on.
    pub sched: usize,
    /// Completion cycles of the open `cp.async` copies and of each committed group
    /// (parallel to `cp_groups`); the same for warpgroup MMAs.
    pub cp_open_done: u64,
    pub cp_done: VecDeque<u64>,
    pub wg_open_done: u64,
    pub wg_done: VecDeque<u64>,
    /// When every memory access the warp issued has been accepted.
    pub drained: u64,
    /// A wait (`*.wait_group`, fence, nanosleep) holds the warp until this cycle.
    pub stall_until: u64,
    pub done: bool,
    pub cp_open: Vec<PendingCopy>,
    pub cp_groups: VecDeque<Vec<PendingCopy>>,
    /// Issued, uncommitted warpgroup MMAs, and committed groups not waited for.
    pub wg_open: Vec<super::wgmma::PendingMma>,
    pub wg_groups: VecDeque<Vec<super::wgmma::PendingMma>>,
    /// A `wgmma.fence` has run; registers written since the last one (bitset).
    pub wg_fenced: bool,
    pub wg_dirty: Vec<u64>,
    /// The latest results of executed MMAs per D register (inputs of chained ones).
    pub wg_shadow: std::collections::HashMap<u32, [u64; 32]>,
    pub warp_instrs: u64,
    pub lane_instrs: u64,
    /// Per mbarrier (by init id): phases this warp has seen complete (by a successful wait).
    pub mbar_seen: rustc_hash::FxHashMap<u32, u64>,
    /// Completion cycles of the open and committed bulk groups (`cp.async.bulk` stores).
    pub bulk_open_done: u64,
    pub bulk_done: VecDeque<u64>,
    /// Bulk groups this warp committed, and how many of them a wait has retired (the
    /// sequence numbers [`super::mbarrier::StoreRead`] keys on).
    pub bulk_committed: u64,
    pub bulk_retired: u64,
    /// `setmaxnreg` instructions this warp ran (warpgroup uniformity is checked in order).
    pub maxnreg_count: u32,
}

/// Per-CTA memory and outputs.
pub struct CtaMem {
    pub ctaid: [u32; 3],
    pub shared: Vec<u8>,
    pub local: Vec<u8>,
    pub local_size: u32,
    pub race: Option<RaceShadow>,
    pub printf: String,
    /// The SM the CTA runs on (`%smid`).
    pub sm: u32,
    /// Markers passed: (warp, id, clock), in execution order per warp.
    pub marks: Vec<(u32, u32, u64)>,
    /// Live mbarriers by shared offset, and the next init id (see `mbarrier`).
    pub mbars: rustc_hash::FxHashMap<u32, super::mbarrier::Mbar>,
    pub next_mbar_id: u32,
    /// Phases completed since the CTA last looked: (barrier offset, cycle).
    pub mbar_events: Vec<(u32, u64)>,
    /// Bulk loads in flight.
    pub bulk: Vec<super::mbarrier::BulkCopy>,
    /// Each landed bulk copy (race tag → barrier id and the phase it completed in).
    pub landings: Vec<(u32, u64)>,
    /// Shared bytes bulk stores may still be reading (with race checks on).
    pub store_reads: Vec<super::mbarrier::StoreRead>,
    /// `setmaxnreg` per warpgroup, in order: (count, inc, line, warp).
    pub maxnreg: rustc_hash::FxHashMap<u32, Vec<(u32, bool, u32, u32)>>,
}

/// What one step of a warp did.
pub enum Stop {
    /// It issued an instruction.
    Ran,
    /// Its next instruction cannot issue by the given limit (its clock now says when).
    Deferred,
    /// It reached `bar.sync`/`bar.arrive`/`bar.red`.
    Barrier {
        id: u32,
        count: Option<u32>,
        wait: bool,
        red: Option<BarRed>,
    },
    Done,
    /// `mbarrier.try_wait` found no lane's phase complete: it suspends until a phase of
    /// the barrier at this shared offset completes, then runs again.
    MbarWait(u32),
    /// `barrier.cluster.arrive` (false) or `.wait` (true).
    Cluster(bool),
}

/// An executing warp with everything an instruction may touch.
pub struct Ex<'a, 'b> {
    pub l: &'a Launch<'b>,
    pub m: &'a mut CtaMem,
    pub w: &'a mut Warp,
    /// The SM's resources and the memory system as of this epoch.
    pub sm: &'a mut SmTiming,
    pub mem: &'a MemSystem,
}

pub type R<T> = Result<T, EmuError>;

/// Operation of `bar.red`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RedOp {
    Popc,
    And,
    Or,
}

/// A warp's contribution to a `bar.red` and where its result goes.
#[derive(Clone, Debug)]
pub struct BarRed {
    pub op: RedOp,
    /// popc: lanes with a true predicate; and/or: the warp's combined predicate (0/1).
    pub partial: u32,
    pub dst: Operand,
    pub mask: u32,
}

pub fn unsupported(ins: &Instr, why: &str) -> EmuError {
    EmuError::new(ErrorKind::Unsupported, format!("unsupported instruction form ({why}) of {:?}", ins.kind))
}

impl Ex<'_, '_> {
    pub fn frame(&self) -> &Frame {
        // A running warp always has a frame (checked by `run`).
        &self.w.frames[self.w.frames.len() - 1]
    }

    pub fn frame_mut(&mut self) -> &mut Frame {
        let n = self.w.frames.len();
        &mut self.w.frames[n - 1]
    }

    /// Linear thread index of `lane`.
    pub fn tid(&self, lane: u32) -> u32 {
        self.w.id * 32 + lane
    }

    pub fn thread_xyz(&self, lane: u32) -> [u32; 3] {
        let t = self.tid(lane);
        let b = self.l.block;
        [t % b[0], (t / b[0]) % b[1], t / (b[0] * b[1])]
    }

    pub fn sreg(&self, s: Sreg, lane: u32) -> u64 {
        let b = self.l.block;
        let g = self.l.grid;
        let t = self.thread_xyz(lane);
        match s {
            Sreg::Tid(d) => t[d as usize] as u64,
            Sreg::Ntid(d) => b[d as usize] as u64,
            Sreg::Ctaid(d) => self.m.ctaid[d as usize] as u64,
            Sreg::Nctaid(d) => g[d as usize] as u64,
            Sreg::LaneId => lane as u64,
            Sreg::WarpId => self.w.id as u64,
            Sreg::NWarpId => self.l.nwarps as u64,
            Sreg::SmId => self.m.sm as u64,
            Sreg::NSmId => self.l.costs.m.sms as u64,
            Sreg::GridId => 0,
            Sreg::Clock => self.w.now & 0xffff_ffff,
            Sreg::Clock64 => self.w.now,
            // Modelled nanoseconds since the launch started, at the machine's clock.
            Sreg::GlobalTimer => (self.w.now as f64 / self.l.costs.m.clock_ghz) as u64,
            Sreg::DynSmem => self.l.dyn_smem as u64,
            Sreg::TotalSmem => self.l.total_smem as u64,
            Sreg::LaneMaskEq => 1u64 << lane,
            Sreg::LaneMaskLt => (1u64 << lane) - 1,
            Sreg::LaneMaskLe => (2u64 << lane) - 1,
            Sreg::LaneMaskGt => (!((2u64 << lane) - 1)) & 0xffff_ffff,
            Sreg::LaneMaskGe => (!((1u64 << lane) - 1)) & 0xffff_ffff,
            // Every CTA is a cluster of one (launches have no cluster dimensions).
            Sreg::ClusterCtaid(_) | Sreg::ClusterCtaRank | Sreg::IsExplicitCluster => 0,
            Sreg::ClusterNctaid(_) | Sreg::ClusterNctaRank => 1,
            Sreg::ClusterId(d) => self.m.ctaid[d as usize] as u64,
            Sreg::NClusterId(d) => g[d as usize] as u64,
        }
    }

    /// All 32 lanes of a scalar source operand.
    pub fn src(&self, op: &Operand) -> R<[u64; 32]> {
        match op {
            Operand::Reg(r) => {
                let at = *r as usize * 32;
                let regs = &self.frame().regs;
                let s = regs.get(at..at + 32).ok_or_else(|| bad_operand("register out of range"))?;
                let mut out = [0u64; 32];
                out.copy_from_slice(s);
                Ok(out)
            }
            Operand::Imm(v) => Ok([*v; 32]),
            Operand::NotReg(r) => {
                let mut v = self.src(&Operand::Reg(*r))?;
                for x in v.iter_mut() {
                    *x = (*x == 0) as u64;
                }
                Ok(v)
            }
            Operand::Sreg(s) => {
                let mut out = [0u64; 32];
                for (lane, o) in out.iter_mut().enumerate() {
                    *o = self.sreg(*s, lane as u32);
                }
                Ok(out)
            }
            _ => Err(bad_operand("expected a register or immediate")),
        }
    }

    /// One lane of a source operand.
    pub fn src1(&self, op: &Operand, lane: u32) -> R<u64> {
        match op {
            Operand::Reg(r) => self
                .frame()
                .regs
                .get(*r as usize * 32 + lane as usize)
                .copied()
                .ok_or_else(|| bad_operand("register out of range")),
            Operand::Imm(v) => Ok(*v),
            Operand::NotReg(r) => Ok((self.src1(&Operand::Reg(*r), lane)? == 0) as u64),
            Operand::Sreg(s) => Ok(self.sreg(*s, lane)),
            _ => Err(bad_operand("expected a register or immediate")),
        }
    }

    /// Writes `vals` (masked to `width_mask`) to the active lanes of a destination.
    pub fn dst(&mut self, op: &Operand, mask: u32, vals: &[u64; 32], width_mask: u64) -> R<()> {
        match op {
            Operand::Reg(r) => {
                if self.w.wg_fenced {
                    self.wg_mark(*r);
                }
                let at = *r as usize * 32;
                let regs = &mut self.frame_mut().regs;
                let d = regs.get_mut(at..at + 32).ok_or_else(|| bad_operand("register out of range"))?;
                if mask == FULL {
                    for (d, v) in d.iter_mut().zip(vals) {
                        *d = v & width_mask;
                    }
                } else {
                    for lane in 0..32 {
                        if mask >> lane & 1 != 0 {
                            d[lane] = vals[lane] & width_mask;
                        }
                    }
                }
                Ok(())
            }
            Operand::Sink => Ok(()),
            _ => Err(bad_operand("destination must be a register")),
        }
    }

    /// The address an `[addr]` operand names, for one lane.
    pub fn addr(&self, op: &Operand, lane: u32) -> R<u64> {
        match op {
            Operand::Addr(AddrBase::Reg(r), off) => Ok(self.src1(&Operand::Reg(*r), lane)?.wrapping_add(*off as u64)),
            Operand::Addr(AddrBase::Abs(a), off) => Ok(a.wrapping_add(*off as u64)),
            // Some instructions accept a plain register or immediate as an address.
            Operand::Reg(_) | Operand::Imm(_) => self.src1(op, lane),
            _ => Err(bad_operand("expected an address")),
        }
    }

    /// Guard mask of an instruction within `mask`.
    pub fn guard(&self, ins: &Instr, mask: u32) -> R<u32> {
        let Some((p, neg)) = ins.guard else { return Ok(mask) };
        let at = p as usize * 32;
        let regs = &self.frame().regs;
        let s = regs.get(at..at + 32).ok_or_else(|| bad_operand("predicate out of range"))?;
        let mut g = 0u32;
        for (lane, v) in s.iter().enumerate() {
            if (*v != 0) != neg {
                g |= 1 << lane;
            }
        }
        Ok(g & mask)
    }

    /// Removes lanes from every reconvergence entry of every frame (thread exit).
    fn exit_lanes(&mut self, lanes: u32) {
        self.w.exited |= lanes;
        for f in self.w.frames.iter_mut() {
            for e in f.stack.iter_mut() {
                e.mask &= !lanes;
            }
        }
    }

    /// Issues the warp's next instruction if it can issue by cycle `limit` (markers and
    /// reconvergence bookkeeping on the way cost nothing).
    pub fn step(&mut self, limit: u64) -> R<Stop> {
        let module = self.l.module;
        loop {
            let Some(frame) = self.w.frames.last_mut() else {
                self.finish()?;
                return Ok(Stop::Done);
            };
            let Some(top) = frame.stack.last_mut() else {
                self.return_from_frame()?;
                continue;
            };
            let func = &module.funcs[frame.func as usize];
            if top.mask == 0 || top.pc == top.reconv || top.pc as usize >= func.instrs.len() {
                if top.mask != 0 && top.pc != top.reconv {
                    // Ran off the end of the body: an implicit return.
                    let lanes = top.mask;
                    frame.stack.pop();
                    if self.w.frames.len() == 1 {
                        self.exit_lanes(lanes);
                    } else {
                        let f = self.frame_mut();
                        for e in f.stack.iter_mut() {
                            e.mask &= !lanes;
                        }
                    }
                } else {
                    frame.stack.pop();
                }
                continue;
            }
            let pc = top.pc;
            let full = top.mask;
            let ins = &func.instrs[pc as usize];
            if ins.kind == Kind::Mark {
                // Zero cost: no issue slot, no dependence; the warp's clock as it stands.
                if let Some(Operand::Imm(id)) = ins.ops.first() {
                    self.m.marks.push((self.w.id, *id as u32, self.w.clock));
                }
                top.pc = pc + 1;
                continue;
            }
            let it = &ins.timing;
            if it.slots == 0 {
                self.rename(ins, full)?;
                continue;
            }
            let t = self.sm.issue_time(self.w.sched, self.w.clock, &frame.ready, it);
            if t > limit {
                self.w.clock = t;
                return Ok(Stop::Deferred);
            }
            let mask = self.guard(ins, full).map_err(|e| self.locate(e, ins, full))?;
            if self.l.stats {
                let f = &self.w.frames[self.w.frames.len() - 1];
                self.sm.note_stall(self.w.sched, self.w.clock, &f.ready, it, t);
            }
            self.w.now = t;
            let mut ready = self.sm.issue(&self.l.costs, self.w.sched, t, it);
            self.w.last_issue = self.sm.issued;
            self.w.clock = t + it.slots.max(1) as u64;
            self.w.warp_instrs += 1;
            // Lanes predicated off still issue the instruction (like nvprof's thread_inst_executed).
            self.w.lane_instrs += full.count_ones() as u64;
            let memory = matches!(it.lat(), Lat::Memory | Lat::Atomic) && mask != 0;
            if memory {
                self.sm.acc.start(matches!(
                    ins.kind,
                    Kind::St
                        | Kind::Red
                        | Kind::Stmatrix
                        | Kind::BulkStore
                        | Kind::TensorStore
                        | Kind::TmapReplace
                        | Kind::TmapCopy
                ));
            }
            match ins.kind {
                Kind::Bra => {
                    let target = match ins.ops.first() {
                        Some(Operand::Target(t)) => *t,
                        _ => return Err(self.locate(bad_operand("branch without a label"), ins, full)),
                    };
                    let frame = self.frame_mut();
                    let Some(top) = frame.stack.last_mut() else { return Ok(Stop::Ran) };
                    if mask == full {
                        top.pc = target;
                    } else if mask == 0 {
                        top.pc = pc + 1;
                    } else {
                        let r = ins.reconv;
                        top.pc = r;
                        frame.stack.push(Entry { pc: pc + 1, mask: full & !mask, reconv: r });
                        frame.stack.push(Entry { pc: target, mask, reconv: r });
                    }
                }
                Kind::Exit | Kind::Ret => {
                    self.advance(pc);
                    if mask != 0 {
                        if ins.kind == Kind::Exit || self.w.frames.len() == 1 {
                            self.exit_lanes(mask);
                        } else {
                            let f = self.frame_mut();
                            for e in f.stack.iter_mut() {
                                e.mask &= !mask;
                            }
                        }
                    }
                }
                Kind::Trap if mask != 0 => {
                    return Err(self.locate(EmuError::new(ErrorKind::Runtime, "trap executed"), ins, mask));
                }
                Kind::Call => {
                    self.advance(pc);
                    if mask != 0 {
                        self.call(ins, mask).map_err(|e| self.locate(e, ins, mask))?;
                    }
                }
                Kind::Mbar if ins.m.mbar == Some(crate::ir::MbarOp::TryWait) && mask != 0 => {
                    match self.mbar_try_wait(ins, mask).map_err(|e| self.locate(e, ins, mask))? {
                        // Not advanced: it runs again when a phase of the barrier completes.
                        Some(bar) => return Ok(Stop::MbarWait(bar)),
                        None => self.advance(pc),
                    }
                }
                Kind::ClusterBar => {
                    self.advance(pc);
                    let live = self.w.lanes & !self.w.exited;
                    if mask != 0 && mask != live {
                        return Err(self.locate(
                            EmuError::new(
                                ErrorKind::Runtime,
                                "barrier.cluster reached by part of a warp (every thread of the cluster must arrive and wait)",
                            ),
                            ins,
                            mask,
                        ));
                    }
                    if mask != 0 {
                        return Ok(Stop::Cluster(!ins.m.arrive));
                    }
                }
                Kind::Bar => {
                    self.advance(pc);
                    let live = self.w.lanes & !self.w.exited;
                    if ins.m.aligned && mask != 0 && mask != live {
                        return Err(self.locate(
                            EmuError::new(
                                ErrorKind::Runtime,
                                format!(
                                    "aligned barrier reached by lanes {mask:#010x} of the warp while lanes {:#010x} are elsewhere: every thread of a warp must execute the same `bar`/`barrier.aligned` instruction (divergent barrier)",
                                    live & !mask
                                ),
                            ),
                            ins,
                            mask,
                        ));
                    }
                    if mask != 0 {
                        // bar.red: d, a{, b}, {!}c — the barrier operands sit between d and c.
                        let bops: &[Operand] = if ins.m.red {
                            ins.ops.get(1..ins.ops.len().saturating_sub(1)).unwrap_or(&[])
                        } else {
                            &ins.ops
                        };
                        let red = if ins.m.red {
                            Some(self.bar_red(ins, mask).map_err(|e| self.locate(e, ins, mask))?)
                        } else {
                            None
                        };
                        let id = match bops.first() {
                            Some(op) => self.src1(op, mask.trailing_zeros()).map_err(|e| self.locate(e, ins, mask))?,
                            None => 0,
                        };
                        let count = match bops.get(1) {
                            Some(op) => {
                                Some(self.src1(op, mask.trailing_zeros()).map_err(|e| self.locate(e, ins, mask))? as u32)
                            }
                            None => None,
                        };
                        if id >= 16 {
                            return Err(self.locate(
                                EmuError::new(ErrorKind::Runtime, format!("barrier id {id} out of range 0..16")),
                                ins,
                                mask,
                            ));
                        }
                        return Ok(Stop::Barrier { id: id as u32, count, wait: !ins.m.arrive, red });
                    }
                }
                _ => {
                    self.advance(pc);
                    if mask != 0 {
                        self.exec(ins, mask).map_err(|e| self.locate(e, ins, mask))?;
                    }
                }
            }
            if mask != 0 {
                ready = self.timing_after(ins, t, ready, memory);
                if ready > t + 1 || !it.dsts.is_empty() {
                    let f = self.frame_mut();
                    for &d in &it.dsts {
                        if let Some(r) = f.ready.get_mut(d as usize) {
                            *r = ready;
                        }
                    }
                }
            }
            if self.w.stall_until > self.w.clock {
                if self.l.stats {
                    let d = self.w.stall_until - self.w.clock;
                    let st = &mut self.sm.stats;
                    match ins.kind {
                        Kind::WgmmaWait => st.wait_wgmma += d,
                        Kind::CpAsyncWait | Kind::CpAsyncWaitAll => st.wait_cp_async += d,
                        // A full memory-pipeline queue holds the warp after issue.
                        _ if memory => st.stall_unit += d,
                        _ => st.wait_other += d,
                    }
                }
                self.w.clock = self.w.stall_until;
            }
            return Ok(Stop::Ran);
        }
    }

    /// The earliest cycle its next instruction can issue as far as the warp itself
    /// knows (its clock and the instruction's source registers), and the unit it needs;
    /// its clock and no unit if the next step is not a plain instruction.
    pub fn next_ready(w: &Warp, module: &crate::parse::Module) -> (u64, Pipe) {
        let Some(f) = w.frames.last() else { return (w.clock, Pipe::None) };
        let Some(top) = f.stack.last() else { return (w.clock, Pipe::None) };
        let Some(func) = module.funcs.get(f.func as usize) else { return (w.clock, Pipe::None) };
        // Markers are transparent: look past them, as if they were not there.
        let mut pc = top.pc;
        while pc != top.reconv && func.instrs.get(pc as usize).is_some_and(|i| i.kind == Kind::Mark) {
            pc += 1;
        }
        let Some(ins) = func.instrs.get(pc as usize) else { return (w.clock, Pipe::None) };
        if top.mask == 0 || pc == top.reconv || ins.timing.slots == 0 {
            return (w.clock, Pipe::None);
        }
        let mut t = w.clock;
        for &r in ins.timing.srcs.iter().chain(&ins.timing.dsts) {
            if let Some(&x) = f.ready.get(r as usize) {
                t = t.max(x);
            }
        }
        (t, ins.timing.pipe())
    }

    /// Runs a register rename (a move ptxas removes): no issue slot, and the
    /// destinations are ready when the sources are.
    fn rename(&mut self, ins: &Instr, full: u32) -> R<()> {
        let mask = self.guard(ins, full).map_err(|e| self.locate(e, ins, full))?;
        self.w.warp_instrs += 1;
        self.w.lane_instrs += full.count_ones() as u64;
        let pc = self.frame().stack.last().map_or(0, |e| e.pc);
        self.advance(pc);
        if mask == 0 {
            return Ok(());
        }
        self.exec(ins, mask).map_err(|e| self.locate(e, ins, mask))?;
        let f = self.frame_mut();
        let ready = ins.timing.srcs.iter().filter_map(|&r| f.ready.get(r as usize)).copied().max().unwrap_or(0);
        for &d in &ins.timing.dsts {
            if let Some(r) = f.ready.get_mut(d as usize) {
                *r = ready;
            }
        }
        Ok(())
    }

    /// The timing of what an instruction did once it ran (its accesses, its tensor-core
    /// work); returns when its destination registers are ready.
    fn timing_after(&mut self, ins: &Instr, t: u64, ready: u64, memory: bool) -> u64 {
        let costs = &self.l.costs;
        let sched = self.w.sched;
        if memory {
            let atomic = ins.timing.lat() == Lat::Atomic;
            let d = self.sm.memory(costs, t, self.mem, atomic);
            self.w.drained = self.w.drained.max(d.drained);
            self.w.stall_until = self.w.stall_until.max(d.accepted);
            if ins.kind == Kind::CpAsync {
                self.w.cp_open_done = self.w.cp_open_done.max(d.ready);
            }
            if matches!(ins.kind, Kind::BulkLoad | Kind::TensorLoad) {
                for c in self.m.bulk.iter_mut().filter(|c| c.done == u64::MAX) {
                    c.done = d.ready;
                }
            }
            if matches!(ins.kind, Kind::BulkStore | Kind::TensorStore) {
                self.w.bulk_open_done = self.w.bulk_open_done.max(d.drained);
            }
            return d.ready;
        }
        match ins.kind {
            Kind::Mma => {
                let (m, n, k) = ins.m.shape;
                let input = ins.tys.get(1).copied().unwrap_or(crate::ir::Ty::F16);
                self.sm.mma(costs, sched, t, m as u64 * n as u64 * k as u64, mma_type_scale(input))
            }
            Kind::Wgmma => {
                // One warp's quarter of the warpgroup's m64nNk16: 16 rows of D.
                let (_, n, k) = ins.m.shape;
                let input = ins.tys.get(1).copied().unwrap_or(crate::ir::Ty::F16);
                let bytes = input.bytes().max(1) as u64;
                let a_smem = !matches!(ins.ops.get(1), Some(Operand::Vec(_)));
                // Operands read from shared memory, shared by the warpgroup's four warps.
                let smem = (n as u64 * k as u64 + if a_smem { 64 * k as u64 } else { 0 }) * bytes / 4;
                let done = self.sm.wgmma(costs, sched, t, 16 * n as u64 * k as u64, mma_type_scale(input), smem);
                self.w.wg_open_done = self.w.wg_open_done.max(done);
                ready
            }
            Kind::Nanosleep => {
                let ns = ins.ops.first().and_then(|o| self.src1(o, 0).ok()).unwrap_or(0).min(1_000_000);
                self.w.stall_until = t + (ns as f64 * costs.m.clock_ghz) as u64;
                ready
            }
            Kind::Fence => {
                self.w.stall_until = self.w.drained;
                ready
            }
            _ => ready,
        }
    }

    fn bar_red(&self, ins: &Instr, mask: u32) -> R<BarRed> {
        let (Some(dst), Some(p)) = (ins.ops.first(), ins.ops.last()) else {
            return Err(bad_operand("bar.red needs a destination and a predicate"));
        };
        if ins.ops.len() < 3 {
            return Err(bad_operand("bar.red needs a destination, a barrier and a predicate"));
        }
        let v = self.src(p)?;
        let set = (0..32).filter(|&l| mask >> l & 1 != 0 && v[l] != 0).count() as u32;
        let op = match ins.m.boolop {
            Some(BoolOp::And) => RedOp::And,
            Some(BoolOp::Or) => RedOp::Or,
            _ => RedOp::Popc,
        };
        let partial = match op {
            RedOp::Popc => set,
            RedOp::And => (set == mask.count_ones()) as u32,
            RedOp::Or => (set > 0) as u32,
        };
        Ok(BarRed { op, partial, dst: dst.clone(), mask })
    }

    fn advance(&mut self, pc: u32) {
        if let Some(top) = self.frame_mut().stack.last_mut() {
            top.pc = pc + 1;
        }
    }

    /// Adds the PTX line, CTA and thread to an error from an instruction.
    pub fn locate(&self, mut e: EmuError, ins: &Instr, mask: u32) -> EmuError {
        if e.line.is_none() {
            e = e.at_line(ins.line, self.l.module.line_text(ins.line));
        }
        if e.cta.is_none() {
            let lane = if mask == 0 { 0 } else { mask.trailing_zeros() };
            e = e.at_thread(self.m.ctaid, self.thread_xyz(lane));
        }
        e
    }

    /// The warp finished: outstanding asynchronous copies land.
    fn finish(&mut self) -> R<()> {
        self.w.done = true;
        let w = &mut *self.w;
        let pending = w.cp_done.iter().chain(&w.wg_done).copied().max().unwrap_or(0);
        w.clock = w.clock.max(pending).max(w.cp_open_done).max(w.wg_open_done).max(w.drained);
        self.complete_wgmma(0)?;
        self.complete_copies(usize::MAX, true)
    }

    fn return_from_frame(&mut self) -> R<()> {
        let Some(f) = self.w.frames.pop() else { return Ok(()) };
        if self.w.frames.is_empty() {
            return Ok(());
        }
        let live = f.call_mask & !self.w.exited;
        let ls = self.m.local_size as usize;
        for lane in 0..32 {
            if live >> lane & 1 == 0 {
                continue;
            }
            let base = self.tid(lane) as usize * ls;
            for &(from, to, n) in &f.ret_copy {
                let (from, to, n) = (base + from as usize, base + to as usize, n as usize);
                if from + n <= self.m.local.len() && to + n <= self.m.local.len() {
                    self.m.local.copy_within(from..from + n, to);
                }
            }
        }
        Ok(())
    }

    fn call(&mut self, ins: &Instr, mask: u32) -> R<()> {
        let (Some(Operand::ParamList(rets)), Some(Operand::Target(fi)), Some(Operand::ParamList(args))) =
            (ins.ops.first(), ins.ops.get(1), ins.ops.get(2))
        else {
            return Err(bad_operand("malformed call"));
        };
        let module = self.l.module;
        let callee = module.funcs.get(*fi as usize).ok_or_else(|| bad_operand("bad call target"))?;
        if callee.external {
            return super::printf::builtin(self, &callee.name, rets, args, mask);
        }
        if self.w.frames.len() >= 64 {
            return Err(EmuError::new(ErrorKind::Runtime, "call depth exceeds 64 (recursion is not supported)"));
        }
        if args.len() != callee.params.len() || rets.len() > callee.rets.len() {
            return Err(EmuError::new(
                ErrorKind::Runtime,
                format!("call of `{}` with wrong number of arguments or results", callee.name),
            ));
        }
        let ls = self.m.local_size as usize;
        for lane in 0..32 {
            if mask >> lane & 1 == 0 {
                continue;
            }
            let base = self.tid(lane) as usize * ls;
            for (a, p) in args.iter().zip(&callee.params) {
                let n = p.size as usize;
                let (from, to) = (base + a.offset as usize, base + p.offset as usize);
                if from + n <= self.m.local.len() && to + n <= self.m.local.len() {
                    self.m.local.copy_within(from..from + n, to);
                }
            }
        }
        let mut f = Frame::new(*fi, callee.nregs, mask);
        f.ret_copy = rets.iter().zip(&callee.rets).map(|(r, d)| (d.offset, r.offset, d.size)).collect();
        self.w.frames.push(f);
        Ok(())
    }

    /// Dispatches an ordinary (non-control) instruction to its class.
    fn exec(&mut self, ins: &Instr, mask: u32) -> R<()> {
        use Kind::*;
        match ins.kind {
            Add | Sub | Mul | Mad | Min | Max | Abs | Neg | Div | Rem if ins.ty().is_float() => {
                super::float::exec(self, ins, mask)
            }
            Fma | Rcp | Sqrt | Rsqrt | Ex2 | Lg2 | Sin | Cos | Tanh | Copysign | Testp => {
                super::float::exec(self, ins, mask)
            }
            Add | Sub | Mul | Mad | Mul24 | Mad24 | Div | Rem | Abs | Neg | Min | Max | Sad | Popc | Clz | Brev
            | Bfind | Bfe | Bfi | And | Or | Xor | Not | Cnot | Shl | Shr | Shf | Lop3 | Prmt => {
                super::int::exec(self, ins, mask)
            }
            Setp | Set | Selp | Slct => super::compare::exec(self, ins, mask),
            Cvt => super::convert::exec(self, ins, mask),
            Mov | Cvta => super::int::mov(self, ins, mask),
            Ld | St | Atom | Red | CpAsync | CpAsyncCommit | CpAsyncWait | CpAsyncWaitAll => {
                super::memory_ops::exec(self, ins, mask)
            }
            Ldmatrix | Stmatrix | Mma => super::tensor::exec(self, ins, mask),
            Wgmma | WgmmaFence | WgmmaCommit | WgmmaWait => super::wgmma::exec(self, ins, mask),
            Shfl | Vote | Match | Activemask | Redux => super::collective::exec(self, ins, mask),
            Fence | Prefetch | BarWarp | Nanosleep | Trap | Mark | ClusterBar => Ok(()),
            Mbar | BulkLoad | BulkStore | BulkCommit | BulkWait | SetMaxNReg | Elect | Mapa => {
                super::mbarrier::exec(self, ins, mask)
            }
            TensorLoad | TensorStore | TensorPrefetch | TmapReplace | TmapCopy => super::tma::exec(self, ins, mask),
            Bar => Ok(()),
            Bra | Call | Ret | Exit => Ok(()),
        }
    }
}

pub fn bad_operand(msg: &str) -> EmuError {
    EmuError::new(ErrorKind::Runtime, format!("bad operand: {msg}"))
}
