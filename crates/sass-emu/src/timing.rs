//! Issue timing and hazards, per warp, from the control bits — what the hardware does with
//! them, so a schedule that reads a value before it is ready fails here instead of giving
//! wrong numbers on a GPU.
//!
//! * A warp issues an instruction when its clock reaches the cycle the previous
//!   instruction's stall count allowed; first it waits for the scoreboards in its wait mask
//!   (and `DEPBAR.LE SBn, k`: all but the `k` youngest on SB*n*) — the clock moves to when
//!   their results arrive.
//! * A fixed-latency result may be read `latency::needed` cycles after its producer issued
//!   (the SASS toolkit's table); earlier is a hazard.
//! * A variable-latency result (write scoreboard, or a variable-latency opcode) may be read
//!   only once its scoreboard was waited for, or a younger result of the same in-order queue
//!   was; a register still being read by an instruction holding a read scoreboard may not be
//!   overwritten before that scoreboard is waited for.
//! * All of this per lane: lanes of a warp that branched apart write the same register on
//!   their own paths (`ptxas` relies on it), so a pending result conflicts only with an
//!   instruction run by some of the same lanes. Uniform registers belong to the whole warp.
//!
//! The cycle estimate is the warp's clock: stalls, the waits for results in flight, and the
//! cycles register-bank conflicts add before an issue ([`WarpTiming::operand_reads`]: two
//! banks, the operand reuse cache; `trident_sass::banks` has the model and its sources). The
//! latencies of variable-latency results are the PTX emulator's machine model's
//! (`trident_emu::MachineModel`: A100 for sm_80, H100 for sm_90), which was calibrated
//! against H100 measurements (bench/EMU_MODEL.md); a global load is taken as an L2 hit. Not
//! yet calibrated on a GPU at the SASS level (no global bandwidth; no sharing between CTAs).
//! A CTA's warps share their sub-partition's issue slots, one instruction per cycle, and its
//! functional units ([`IssueSlots`]). Shared-memory accesses pass the SM's pipe as wavefronts,
//! one a cycle, shared by the CTA's warps (bank conflicts: [`WarpTiming::shared_pipe`]).
//! A warpgroup MMA (`HGMMA`) holds its sub-partition's tensor pipe for its multiply-adds
//! after it issues, streams its shared operands through the SM's shared-memory pipe, and its
//! accumulators are pending — a read is a hazard — until `WARPGROUP.DEPBAR` waits for its
//! group ([`WarpTiming::gmma_issue`]: the PTX emulator's `wgmma` model).

use std::sync::LazyLock;

use trident_emu::{EmuError, ErrorKind, MachineModel};
use trident_sass::banks::{conflict_cycles, Slots};
use trident_sass::latency::{self, Queue};
use trident_sass::operands::{Operands, Reg};
use trident_sass::pipes::{Pipe, PipeUse};
use trident_sass::verify::GSB;
use trident_sass::Control;

use crate::decode::Op;

static A100: LazyLock<MachineModel> = LazyLock::new(MachineModel::a100_sxm);
static H100: LazyLock<MachineModel> = LazyLock::new(MachineModel::h100_sxm);

/// Modelled cycles until a variable-latency result arrives on `sm` (80, 90).
fn arrival(sm: u32, op: &Op) -> u64 {
    let m = model(sm);
    (match op.root.as_str() {
        "LDG" | "LD" | "ATOMG" | "ATOM" | "RED" => m.lat_l2_hit,
        "LDL" => m.lat_local,
        "LDS" | "LDSM" => m.lat_shared,
        "ATOMS" => m.lat_shared_atomic,
        "SHFL" => m.lat_shfl,
        "LDC" | "S2R" | "S2UR" | "CS2R" => m.lat_param,
        "MUFU" => m.lat_sfu,
        "I2F" | "F2I" | "F2F" | "I2I" | "FRND" => m.lat_conv,
        "DADD" | "DMUL" | "DFMA" | "DSETP" => m.lat_fp64,
        "HMMA" => m.lat_mma,
        _ => m.lat_alu.max(m.lat_conv),
    }) as u64
}

/// Modelled cycles from a copy's issue until its data is in shared memory (`UTMALDG`,
/// `UBLKCP`): a global load's, as an L2 hit.
pub fn copy_latency(sm: u32) -> u64 {
    let m = model(sm);
    m.lat_l2_hit as u64
}

#[derive(Clone, Debug)]
struct InFlight {
    producer: usize,
    regs: Vec<Reg>,
    sb: Option<u8>,
    queue: Queue,
    seq: u64,
    arrives: u64,
    reading: bool,
    /// The lanes that issued it.
    lanes: u32,
    /// A warpgroup MMA's (`sb` is [`GSB`]): its group ([`WarpTiming::gmma_group`] at issue).
    group: u64,
}

/// Whether register `r`, pending for `lanes`, matters to an instruction run by `active`.
fn overlaps(r: &Reg, lanes: u32, active: u32) -> bool {
    matches!(r, Reg::Ur(_) | Reg::Up(_)) || lanes & active != 0
}

/// One warp's issue clock and what is in flight.
#[derive(Clone, Debug, Default)]
pub struct WarpTiming {
    pub clock: u64,
    seq: u64,
    /// Fixed-latency results: register → (producer, issue cycle, lanes, [`Self::bank_cycles`]
    /// at its issue).
    fixed: Vec<(Reg, usize, u64, u32, u64)>,
    flight: Vec<InFlight>,
    /// Instructions issued.
    pub issued: u64,
    /// Cycles lost to register-bank conflicts so far ([`WarpTiming::operand_reads`]). The
    /// hazard checks leave them out of a fixed-latency distance, so they check exactly the
    /// stall (and wait) cycles the verifier's rules are about.
    pub bank_cycles: u64,
    /// The reuse cache: the registers the last issued instruction left in each slot.
    reuse: Slots,
    /// When the issue of the last instruction began (before its stall count).
    issued_at: u64,
    /// When the shared-memory pipe has passed the warp's last queued wavefront.
    mio_free: u64,
    /// The issue slots of the SM sub-partition the warp runs on, shared with the CTA's other
    /// warps there ([`IssueSlots`]), and that sub-partition.
    pub slots: Option<(std::rc::Rc<std::cell::RefCell<IssueSlots>>, usize)>,
    /// Warpgroup MMAs not yet waited for: (group, cycle it completes). A group is closed by
    /// the `HGMMA` that carries `gsb0` (what `wgmma.commit_group` becomes); the open one has
    /// the number `gmma_group`.
    gmma: Vec<(u64, u64)>,
    gmma_group: u64,
    /// When the tensor pipe is free, for a warp without [`IssueSlots`].
    tensor_free: u64,
    /// The last instruction to set each scoreboard (write or read): (instruction, issue
    /// cycle, [`Self::bank_cycles`] then). A wait fewer than
    /// `latency::SCOREBOARD_SET_CYCLES` after it is a hazard: the hardware does not see it.
    sb_set: [Option<(usize, u64, u64)>; 6],
}

/// Issue slots and functional units ("pipes", `trident_sass::pipes`) of an SM's four
/// sub-partitions. Each sub-partition issues at most one warp instruction per cycle, and an
/// instruction that needs a pipe issues only in a cycle in which one of its pipes is free
/// for as many cycles as it holds it (sm_80's FMA pipe takes an `FFMA` every 2 cycles, its
/// XU a `MUFU` every 8): a warp whose stall counts are shorter waits for the pipe, and the
/// warps of a sub-partition share its pipes. Warp `w` of a CTA runs on sub-partition `w % 4`
/// (as on Ampere and Hopper). Warps are emulated one after another between barriers, not
/// cycle by cycle, so a warp takes the first cycle at or after the one its own timing allows
/// in which the slot and a pipe are free: the later-run warps fill the others' stall
/// cycles, and a sub-partition with more work than cycles stretches the CTA's time. Only the
/// CTA's own warps share them (CTAs run on their own).
#[derive(Debug, Default)]
pub struct IssueSlots {
    /// One bit per cycle from cycle `64 * first`, per sub-partition: an instruction issued.
    taken: [Cycles; 4],
    /// The same per sub-partition and pipe ([`Pipe::index`]): the pipe busy.
    busy: [[Cycles; 7]; 4],
    /// The SM's shared-memory pipe: a wavefront passes in each set cycle.
    mio: Cycles,
    /// The first 64-cycle word kept: every warp's clock is past the ones before.
    first: u64,
    /// Cycles each resource was taken for, in all.
    pub demand: Demand,
}

/// Cycles a CTA takes each of an SM's resources for: what CTAs sharing an SM must share
/// (the grid's estimate, `crate::grid`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Demand {
    /// Issue slots taken, per sub-partition.
    pub issue: [u64; 4],
    /// Pipe cycles held, per sub-partition and [`Pipe::index`].
    pub pipes: [[u64; 7]; 4],
    /// Shared-memory wavefronts.
    pub mio: u64,
    /// Cycles of the SM's port to L2 that its global traffic takes (bytes at
    /// `l2_port_bytes_per_clk`).
    pub l2_port: u64,
}

impl Demand {
    /// Every resource's cycles, in one order.
    pub fn each(&self) -> impl Iterator<Item = u64> + '_ {
        self.issue.iter().chain(self.pipes.iter().flatten()).chain([&self.mio, &self.l2_port]).copied()
    }

    /// Adds `o`'s cycles to these.
    pub fn add(&mut self, o: &Demand) {
        for (a, b) in self.issue.iter_mut().zip(o.issue) {
            *a += b;
        }
        for (a, b) in self.pipes.iter_mut().flatten().zip(o.pipes.iter().flatten()) {
            *a += b;
        }
        self.mio += o.mio;
        self.l2_port += o.l2_port;
    }

    /// The busiest resource's cycles.
    pub fn busiest(&self) -> u64 {
        self.each().max().unwrap_or(0)
    }
}

/// A bit per cycle, from cycle `64 * IssueSlots::first`.
type Cycles = std::collections::VecDeque<u64>;

fn is_set(bits: &Cycles, first: u64, c: u64) -> bool {
    bits.get((c / 64 - first) as usize).is_some_and(|w| w >> (c % 64) & 1 == 1)
}

fn set(bits: &mut Cycles, first: u64, c: u64) {
    let w = (c / 64 - first) as usize;
    if w >= bits.len() {
        bits.resize(w + 1, 0);
    }
    bits[w] |= 1 << (c % 64);
}

impl IssueSlots {
    /// Takes the first cycle at or after `t` in which sub-partition `sp` issues nothing yet
    /// and, if the instruction needs a pipe (`pipe`), one of its pipes is free for the cycles
    /// it holds it (the first such pipe is taken).
    pub fn claim(&mut self, sp: usize, t: u64, pipe: Option<PipeUse>) -> u64 {
        let sp = sp % 4;
        let first = self.first;
        let mut c = t.max(64 * first);
        loop {
            let w = (c / 64 - first) as usize;
            // A word of taken slots is skipped whole.
            if self.taken[sp].get(w).is_some_and(|x| *x == u64::MAX) {
                c = (c / 64 + 1) * 64;
                continue;
            }
            if !is_set(&self.taken[sp], first, c) {
                let free = |p: &Pipe| {
                    (c..c + pipe.map_or(0, |u| u.cycles as u64)).all(|x| !is_set(&self.busy[sp][p.index()], first, x))
                };
                match pipe {
                    None => {
                        set(&mut self.taken[sp], first, c);
                        self.demand.issue[sp] += 1;
                        return c;
                    }
                    Some(u) => {
                        if let Some(p) = u.pipes.iter().find(|p| free(p)) {
                            set(&mut self.taken[sp], first, c);
                            for x in c..c + u.cycles as u64 {
                                set(&mut self.busy[sp][p.index()], first, x);
                            }
                            self.demand.issue[sp] += 1;
                            self.demand.pipes[sp][p.index()] += u.cycles as u64;
                            return c;
                        }
                    }
                }
            }
            c += 1;
        }
    }

    /// Holds pipe `p` of sub-partition `sp` for `cycles` cycles from the first cycle at or
    /// after `t` from which it is free that long, and returns that cycle. No issue slot is
    /// taken: this is work the pipe does after the instruction issued (a warpgroup MMA's
    /// tensor-core time), queued behind what the pipe already holds.
    pub fn reserve(&mut self, sp: usize, t: u64, p: Pipe, cycles: u64) -> u64 {
        let bits = &mut self.busy[sp % 4][p.index()];
        let first = self.first;
        let mut c = t.max(64 * first);
        while let Some(x) = (c..c + cycles).rev().find(|&x| is_set(bits, first, x)) {
            c = x + 1;
        }
        for x in c..c + cycles {
            set(bits, first, x);
        }
        self.demand.pipes[sp % 4][p.index()] += cycles;
        c
    }

    /// Passes `waves` wavefronts through the SM's shared-memory pipe, one a cycle, each in
    /// the first free cycle at or after `t` (other warps' wavefronts interleave): returns the
    /// cycles of the first and the last. Cycles before the kept words count as taken (they
    /// are past for every warp).
    pub fn claim_waves(&mut self, t: u64, waves: u64) -> (u64, u64) {
        let first = self.first;
        let mut c = t.max(64 * first);
        let mut got = None;
        for _ in 0..waves.max(1) {
            loop {
                let w = (c / 64 - first) as usize;
                if self.mio.get(w).is_some_and(|x| *x == u64::MAX) {
                    c = (c / 64 + 1) * 64;
                    continue;
                }
                if !is_set(&self.mio, first, c) {
                    break;
                }
                c += 1;
            }
            set(&mut self.mio, first, c);
            got = Some(got.map_or((c, c), |(a, _)| (a, c)));
            c += 1;
        }
        self.demand.mio += waves.max(1);
        got.expect("at least one wavefront")
    }

    /// Forgets the cycles before `t`, which no warp can issue in any more (the lowest clock
    /// of the CTA's running warps), so a long kernel's table stays short.
    pub fn forget_before(&mut self, t: u64) {
        let drop = (t / 64).saturating_sub(self.first);
        for bits in self.taken.iter_mut().chain(self.busy.iter_mut().flatten()).chain(std::iter::once(&mut self.mio)) {
            bits.drain(..(drop as usize).min(bits.len()));
        }
        self.first += drop;
    }
}

fn hazard(msg: String) -> EmuError {
    EmuError::new(ErrorKind::Hazard, msg)
}

impl WarpTiming {
    /// Reads the operands of the instruction about to issue (after its waits) (`slots`: its source slots, when
    /// its form is modelled; `c`: its control bits) through the register banks and the reuse
    /// cache (`trident_sass::banks`), and delays the issue by the bank-conflict cycles, which
    /// it returns. Then the cache holds what this instruction flagged `.reuse`, unless its
    /// yield bit is clear (a warp that may yield keeps nothing cached).
    pub fn operand_reads(&mut self, slots: Option<&Slots>, c: Control) -> u64 {
        let cached = std::mem::take(&mut self.reuse);
        let Some(slots) = slots else { return 0 };
        let served = std::array::from_fn(|i| slots[i].is_some() && slots[i] == cached[i]);
        let extra = conflict_cycles(slots, served) as u64;
        self.clock += extra;
        self.bank_cycles += extra;
        if c.yield_bit {
            for (i, r) in slots.iter().enumerate() {
                if c.reuse >> i & 1 == 1 {
                    self.reuse[i] = *r;
                }
            }
        }
        extra
    }

    /// Moves the clock to the first cycle from now in which the warp's sub-partition can
    /// issue the instruction (needing `pipe`).
    fn take_issue_slot(&mut self, pipe: Option<PipeUse>) {
        if let Some((slots, sp)) = &self.slots {
            self.clock = slots.borrow_mut().claim(*sp, self.clock, pipe);
        }
    }

    fn drain(&mut self, sb: u8, keep: usize) {
        let mut on: Vec<u64> = self.flight.iter().filter(|f| f.sb == Some(sb)).map(|f| f.seq).collect();
        on.sort_unstable();
        let cut = on.len().saturating_sub(keep);
        let Some(&last_done) = on.get(cut.wrapping_sub(1)) else { return };
        if cut == 0 {
            return;
        }
        let mut arrived = self.clock;
        let mut done_queues = vec![];
        let mut written = vec![];
        self.flight.retain(|f| {
            if f.sb == Some(sb) && f.seq <= last_done {
                arrived = arrived.max(f.arrives);
                if !f.reading {
                    written.push(f.producer);
                    if f.queue != Queue::None {
                        done_queues.push((f.queue, f.seq));
                    }
                }
                false
            } else {
                true
            }
        });
        // A result written back means its instruction has long read its operands.
        self.flight.retain(|f| !(f.reading && written.contains(&f.producer)));
        for (q, seq) in done_queues {
            self.flight.retain(|f| f.reading || f.queue != q || f.seq > seq);
        }
        self.clock = arrived;
    }

    /// Issues instruction `at` for the lanes `active` (its decoded form, registers, source
    /// slots for the bank model, the pipe it needs, control bits, and the producers' opcodes
    /// looked up through `name_of`); an error names a hazard.
    #[allow(clippy::too_many_arguments)]
    pub fn issue(
        &mut self,
        sm: u32,
        at: usize,
        active: u32,
        op: &Op,
        regs: &Operands,
        slots: Option<&Slots>,
        pipe: Option<PipeUse>,
        c: Control,
        name_of: &dyn Fn(usize) -> String,
    ) -> Result<(), EmuError> {
        for k in 0..6 {
            if c.wait >> k & 1 == 1 {
                if let Some((p, t, b)) = self.sb_set[k as usize] {
                    let got = (self.clock - t).saturating_sub(self.bank_cycles - b);
                    let need = latency::SCOREBOARD_SET_CYCLES as u64;
                    if got < need {
                        return Err(hazard(format!(
                            "hazard: {:#06x} `{}` waits on SB{k} {got} cycles after {:#06x} `{}` set it (the \
                             scoreboard counts it after {need}: the wait goes ahead)",
                            16 * at,
                            op.text,
                            16 * p,
                            name_of(p)
                        )));
                    }
                }
                self.drain(k, 0);
            }
        }
        if op.root == "DEPBAR" {
            if let Some(crate::decode::Opnd::Other(sb)) = op.ops.first() {
                let k: Option<u8> = sb.strip_prefix("SB").and_then(|d| d.parse().ok());
                let n = match op.ops.get(1) {
                    Some(crate::decode::Opnd::Imm(n)) => *n as usize,
                    _ => 0,
                };
                if let Some(k) = k {
                    self.drain(k, n);
                }
            }
        }
        if is_gmma_wait(op) {
            self.wait_gmma(op);
        }
        // Operands are read once the waits are over: a bank conflict delays the issue, and
        // so does another warp of the sub-partition issuing in that cycle, and a busy pipe.
        self.operand_reads(slots, c);
        self.take_issue_slot(pipe);
        let gmma = (op.root == "HGMMA").then(|| self.gmma_issue(sm, op));
        let opcode = op_text(op);
        // sm_90a's `IMAD.WIDE` reads its 64-bit addend's high register late (the SASS
        // toolkit's evidence).
        let late = latency::wide_addend_high_late(sm, &opcode);
        let late_reg = match op.ops.last() {
            Some(crate::decode::Opnd::R { n, .. }) if late > 0 && *n != 255 => Some(Reg::R(*n as u16 + 1)),
            _ => None,
        };
        for r in regs.uses.iter().filter(|r| !regs.kept.contains(r)) {
            if let Some(&(_, p, t, _, b)) = self.fixed.iter().find(|(x, _, _, m, _)| x == r && overlaps(r, *m, active))
            {
                let pred = matches!(r, Reg::P(_) | Reg::Up(_));
                if let Some(need) = latency::needed(sm, &name_of(p), &opcode, pred) {
                    let need = if late_reg == Some(*r) { need.saturating_sub(late) } else { need };
                    let got = (self.clock - t).saturating_sub(self.bank_cycles - b);
                    if got < need as u64 {
                        return Err(hazard(format!(
                            "hazard: {:#06x} `{}` reads {r} {got} cycles after {:#06x} `{}` issued (needs {need})",
                            16 * at,
                            op.text,
                            16 * p,
                            name_of(p)
                        )));
                    }
                }
            }
            // The next warpgroup MMA on the same accumulators reads them in the tensor core.
            let chained = |f: &&InFlight| f.sb == Some(GSB) && gmma.is_some();
            if let Some(f) = self
                .flight
                .iter()
                .find(|f| !f.reading && f.regs.contains(r) && overlaps(r, f.lanes, active) && !chained(f))
            {
                return Err(hazard(format!(
                    "hazard: {:#06x} `{}` reads {r} before {:#06x} `{}`'s result was waited for{}",
                    16 * at,
                    op.text,
                    16 * f.producer,
                    name_of(f.producer),
                    f.sb.map_or(String::new(), |k| format!(" ({})", sb_name(k)))
                )));
            }
        }
        for r in &regs.defs {
            // A shared-memory load passes the memory pipe after an earlier store read its
            // registers: no wait for the store's read scoreboard is needed.
            // Nor does a result of the same in-order queue: it is written back after the
            // pending one (an `I2F` then an `FRND` into the same register).
            let queue = latency::queue(&opcode);
            let ordered = |f: &&InFlight| {
                (f.reading && latency::mio_ordered(&name_of(f.producer), &opcode))
                    || (!f.reading && f.queue != Queue::None && f.queue == queue)
                    || (!f.reading && f.sb == Some(GSB) && gmma.is_some())
            };
            if let Some(f) =
                self.flight.iter().find(|f| f.regs.contains(r) && overlaps(r, f.lanes, active) && !ordered(f))
            {
                let what = if f.reading { "still reads it" } else { "still writes it" };
                return Err(hazard(format!(
                    "hazard: {:#06x} `{}` overwrites {r} while {:#06x} `{}` {what}{}",
                    16 * at,
                    op.text,
                    16 * f.producer,
                    name_of(f.producer),
                    f.sb.map_or(String::new(), |k| format!(" (no wait for {})", sb_name(k)))
                )));
            }
        }
        // A result rewritten by these lanes is theirs now; other lanes' pending one stays.
        self.fixed.retain_mut(|(r, _, _, m, _)| {
            if regs.defs.contains(r) && !matches!(r, Reg::Ur(_) | Reg::Up(_)) {
                *m &= !active;
                *m != 0
            } else {
                !regs.defs.contains(r)
            }
        });
        let variable = c.write_sb.is_some() || latency::variable(&opcode);
        self.seq += 1;
        if let Some((group, done)) = gmma {
            // Pending until its group is waited for (`WARPGROUP.DEPBAR`); the next MMA on
            // the same accumulators still needs the fixed distance below.
            self.flight.push(InFlight {
                producer: at,
                regs: regs.defs.clone(),
                sb: Some(GSB),
                queue: Queue::None,
                seq: self.seq,
                arrives: done,
                reading: false,
                lanes: active,
                group,
            });
        }
        if !regs.defs.is_empty() {
            if variable {
                self.flight.push(InFlight {
                    producer: at,
                    regs: regs.defs.clone(),
                    sb: c.write_sb,
                    queue: latency::queue(&opcode),
                    seq: self.seq,
                    arrives: self.clock + arrival(sm, op),
                    reading: false,
                    lanes: active,
                    group: 0,
                });
            } else {
                for r in &regs.defs {
                    self.fixed.push((*r, at, self.clock, active, self.bank_cycles));
                }
            }
        }
        if let Some(k) = c.read_sb {
            let regs: Vec<Reg> =
                regs.uses.iter().filter(|r| !regs.kept.contains(r) && matches!(r, Reg::R(_))).copied().collect();
            self.flight.push(InFlight {
                producer: at,
                regs,
                sb: Some(k),
                queue: Queue::None,
                seq: self.seq,
                arrives: self.clock + 20,
                reading: true,
                lanes: active,
                group: 0,
            });
        }
        if !latency::scoreboard_set_at_issue(&opcode) {
            for k in c.write_sb.into_iter().chain(c.read_sb).filter(|&k| k < 6) {
                self.sb_set[k as usize] = Some((at, self.clock, self.bank_cycles));
            }
        }
        // Forget what is long ready, so the lists stay short.
        let now = self.clock;
        self.fixed.retain(|(_, _, t, _, _)| now - t < 64);
        self.issued_at = now;
        self.clock += c.stall.max(1) as u64;
        self.issued += 1;
        Ok(())
    }

    /// Issues an instruction without the hazard checks and waits (the emulator's fast mode):
    /// its operand reads, then its stall count. Warpgroup MMAs and their waits are timed as
    /// in [`WarpTiming::issue`].
    pub fn issue_unchecked(&mut self, sm: u32, op: &Op, slots: Option<&Slots>, pipe: Option<PipeUse>, c: Control) {
        if is_gmma_wait(op) {
            self.wait_gmma(op);
        }
        self.operand_reads(slots, c);
        self.take_issue_slot(pipe);
        if op.root == "HGMMA" {
            self.gmma_issue(sm, op);
        }
        self.issued_at = self.clock;
        self.clock += c.stall.max(1) as u64;
    }

    /// A warpgroup MMA issued now: this warp's part (16 of the 64 rows) holds its
    /// sub-partition's tensor pipe for its multiply-adds at the tensor cores' rate, its
    /// operands stream from shared memory through the SM's pipe (B, and A unless it comes
    /// from registers, a quarter per warp: the warpgroup reads them once), and its result is
    /// written `lat_wgmma` cycles after both are done — the PTX emulator's model of `wgmma`
    /// (`trident_emu::timing::sm`), with its machine's rates. The warp does not wait: it
    /// waits at `WARPGROUP.DEPBAR`. Returns the MMA's group and when it completes.
    fn gmma_issue(&mut self, sm: u32, op: &Op) -> (u64, u64) {
        let m = model(sm);
        let (n, k, bytes) = gmma_shape(op);
        // Every input type's MMA takes 16·N·K·bytes/2 f16 multiply-adds' time (the rate
        // doubles as the input halves).
        let per_sp = (m.tensor_fma_per_clk / 4).max(1) as u64;
        let busy = (16 * n * k * bytes / 2).div_ceil(per_sp);
        let a_shared = matches!(op.ops.get(1), Some(crate::decode::Opnd::Other(t)) if t.starts_with("gdesc"));
        let shared_bytes = (n * k + if a_shared { 64 * k } else { 0 }) * bytes / 4;
        let waves = shared_bytes.div_ceil(m.shared_bytes_per_clk.max(1) as u64);
        let t = self.clock;
        let (start, last_wave) = match &self.slots {
            Some((slots, sp)) => {
                let mut s = slots.borrow_mut();
                (s.reserve(*sp, t, Pipe::Tensor, busy), s.claim_waves(t, waves).1)
            }
            None => {
                let start = t.max(self.tensor_free);
                self.tensor_free = start + busy;
                let first = t.max(self.mio_free);
                self.mio_free = first + waves;
                (start, first + waves.max(1) - 1)
            }
        };
        let done = (start + busy).max(last_wave + 1) + m.lat_wgmma as u64;
        let group = self.gmma_group;
        self.gmma.push((group, done));
        if op.ops.iter().any(|o| matches!(o, crate::decode::Opnd::Other(t) if t == "gsb0")) {
            self.gmma_group += 1;
        }
        (group, done)
    }

    /// `WARPGROUP.DEPBAR.LE gsb0, k`: the warp waits until every group of warpgroup MMAs
    /// closed before it but the `k` youngest has completed; their results are then ready.
    fn wait_gmma(&mut self, op: &Op) {
        let keep = op
            .ops
            .iter()
            .find_map(|o| match o {
                crate::decode::Opnd::Imm(n) => Some(*n as usize),
                _ => None,
            })
            .unwrap_or(0);
        let mut closed: Vec<u64> = self.gmma.iter().map(|g| g.0).filter(|&g| g < self.gmma_group).collect();
        closed.sort_unstable();
        closed.dedup();
        let cut = closed.len().saturating_sub(keep);
        if cut == 0 {
            return;
        }
        let last = closed[cut - 1];
        let done = self.gmma.iter().filter(|g| g.0 <= last).map(|g| g.1).max().unwrap_or(0);
        self.gmma.retain(|g| g.0 > last);
        self.flight.retain(|f| !(f.sb == Some(GSB) && f.group <= last));
        self.clock = self.clock.max(done);
    }

    /// The last issued instruction (`at`, on `sm`) passed the shared-memory pipe as `waves`
    /// wavefronts (one per cycle; a bank conflict makes more than one): after the warp's
    /// earlier ones, in the SM's pipe shared with the CTA's other warps ([`IssueSlots::claim_waves`];
    /// a warp without slots has a pipe of its own), the warp held while more than
    /// [`MIO_QUEUE`] cycles of its work are queued ahead (the PTX emulator's queue), and a
    /// load's result (`load`) arriving after its last wavefront. One conflict-free access on
    /// an idle pipe changes nothing.
    pub fn shared_pipe(&mut self, sm: u32, at: usize, waves: u64, load: bool) {
        let ready_at = self.issued_at.max(self.mio_free);
        let (start, last) = match &self.slots {
            Some((slots, _)) => slots.borrow_mut().claim_waves(ready_at, waves),
            None => (ready_at, ready_at + waves.max(1) - 1),
        };
        self.mio_free = last + 1;
        let accepted = start.saturating_sub(MIO_QUEUE);
        if accepted > self.clock {
            self.clock = accepted;
        }
        if load {
            let m = model(sm);
            let ready = last + m.lat_shared as u64;
            if let Some(f) = self.flight.iter_mut().rev().find(|f| f.producer == at && !f.reading) {
                f.arrives = f.arrives.max(ready);
            }
        }
    }
}

/// The machine the estimate imitates on `sm`: A100 for sm_80, H100 for sm_90.
pub fn model(sm: u32) -> &'static MachineModel {
    if sm >= 90 {
        &H100
    } else {
        &A100
    }
}

/// `SB3`, or `gsb0` for the warpgroup MMAs' ([`GSB`]).
fn sb_name(k: u8) -> String {
    if k == GSB {
        "gsb0".into()
    } else {
        format!("SB{k}")
    }
}

/// `WARPGROUP.DEPBAR.LE gsb0, k`.
fn is_gmma_wait(op: &Op) -> bool {
    op.root == "WARPGROUP" && op.has("DEPBAR")
}

/// A warpgroup MMA's N, K and input bytes (`HGMMA.64x128x16.F32.BF16`: 128, 16, 2); K from
/// the input type where the shape does not say.
fn gmma_shape(op: &Op) -> (u64, u64, u64) {
    let bytes = if op.has("TF32") {
        4
    } else if op.mods.iter().any(|m| matches!(m.as_str(), "E4M3" | "E5M2" | "S8" | "U8")) {
        1
    } else {
        2
    };
    let shape = op.mods.iter().find_map(|m| {
        let mut it = m.split('x');
        let (_, n, k) = (it.next()?.parse::<u64>().ok()?, it.next()?.parse::<u64>().ok()?, it.next()?.parse().ok()?);
        Some((n, k))
    });
    let (n, k) = shape.unwrap_or((256, 32 / bytes));
    (n, k, bytes)
}

/// Cycles of shared-memory work a warp's pipe queues before its next one waits (the PTX
/// emulator's `MIO_QUEUE`).
const MIO_QUEUE: u64 = trident_emu::timing::sm::MIO_QUEUE;

/// `IMAD.WIDE.U32`: the opcode as `nvdisasm` prints it.
pub fn op_text(op: &Op) -> String {
    let mut s = op.root.clone();
    for m in &op.mods {
        s.push('.');
        s.push_str(m);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One issue per cycle and sub-partition: a taken cycle moves the next claimant to the
    /// first free one (across the 64-cycle words), other sub-partitions are independent, and
    /// forgetting the past changes no answer about the future.
    #[test]
    fn issue_slots_take_the_first_free_cycle() {
        let mut s = IssueSlots::default();
        assert_eq!(s.claim(0, 5, None), 5);
        assert_eq!(s.claim(0, 5, None), 6);
        assert_eq!(s.claim(4, 5, None), 7, "warp 4 shares warp 0's sub-partition");
        assert_eq!(s.claim(1, 5, None), 5);
        assert_eq!(s.claim(0, 3, None), 3);
        for c in 60..64 {
            assert_eq!(s.claim(2, c, None), c);
        }
        assert_eq!(s.claim(2, 60, None), 64, "past the word's end");
        s.forget_before(130);
        assert_eq!(s.claim(2, 64, None), 128, "cycles before the kept words are past");
        assert_eq!(s.claim(2, 128, None), 129);
        assert_eq!(s.claim(3, 200, None), 200);
        // A full word of taken slots is passed over.
        for c in 256..320 {
            assert_eq!(s.claim(3, c, None), c);
        }
        assert_eq!(s.claim(3, 256, None), 320);
    }

    /// Wavefronts of several warps share the SM's shared-memory pipe, one a cycle, in the
    /// first free cycles.
    #[test]
    fn wavefronts_share_the_shared_memory_pipe() {
        let mut s = IssueSlots::default();
        assert_eq!(s.claim_waves(10, 4), (10, 13));
        assert_eq!(s.claim_waves(11, 2), (14, 15), "behind the first warp's four");
        assert_eq!(s.claim_waves(5, 3), (5, 7), "earlier free cycles are taken first");
        assert_eq!(s.claim_waves(8, 3), (8, 16), "around the taken ones");
        s.forget_before(64);
        assert_eq!(s.claim_waves(60, 1), (64, 64), "the forgotten past is not free");
        assert_eq!(s.claim_waves(64, 70), (65, 134), "across words");
    }

    /// An instruction waits for a free pipe as well as a free slot: sm_80's FMA pipe takes an
    /// `FFMA` every 2 cycles (another pipe's instruction issues in between), sm_90's two FMA
    /// pipes one a cycle, but `IMAD` only the first of them; `MUFU` holds the XU 8 cycles.
    #[test]
    fn instructions_wait_for_their_pipe() {
        use trident_sass::pipes::pipe;
        let mut s = IssueSlots::default();
        let ffma = pipe(80, "FFMA");
        assert_eq!(s.claim(0, 0, ffma), 0);
        assert_eq!(s.claim(0, 1, ffma), 2, "the FMA pipe is busy in cycle 1");
        assert_eq!(s.claim(0, 1, pipe(80, "LOP3.LUT")), 1, "the ALU is not");
        assert_eq!(s.claim(4, 2, ffma), 4, "warp 4 shares sub-partition 0's pipes");
        assert_eq!(s.claim(1, 2, ffma), 2, "sub-partition 1 has its own");
        let mut s = IssueSlots::default();
        let (ffma, imad) = (pipe(90, "FFMA"), pipe(90, "IMAD"));
        assert_eq!((s.claim(0, 0, ffma), s.claim(0, 0, ffma), s.claim(0, 0, ffma)), (0, 1, 2));
        assert_eq!(s.claim(0, 3, imad), 4, "IMAD takes the first FMA pipe only (busy in cycle 3)");
        let mut s = IssueSlots::default();
        let mufu = pipe(90, "MUFU.EX2");
        assert_eq!((s.claim(2, 0, mufu), s.claim(2, 0, mufu), s.claim(2, 0, None)), (0, 8, 1));
        s.forget_before(64);
        assert_eq!(s.claim(2, 64, mufu), 64);
        assert_eq!(s.claim(2, 65, mufu), 72);
    }
    use trident_sass::banks::source_slots;
    use trident_sass::disasm::Text;
    use trident_sass::operands::operands;

    /// Runs `prog` (opcode, operands, stall, reuse flags, yield bit) on one warp with hazard
    /// checks; returns the clock after the last issue and the bank-conflict cycles.
    fn run(prog: &[(&str, &str, u8, u8, bool)]) -> (u64, u64) {
        let mut w = WarpTiming::default();
        let texts: Vec<Text> = prog
            .iter()
            .map(|(op, ops, ..)| Text { predicate: String::new(), opcode: (*op).into(), operands: (*ops).into() })
            .collect();
        for (i, (t, &(_, _, stall, reuse, yield_bit))) in texts.iter().zip(prog).enumerate() {
            let c = Control { stall, yield_bit, write_sb: None, read_sb: None, wait: 0, reuse };
            let slots = source_slots(t);
            let name_of = |p: usize| texts[p].opcode.clone();
            w.issue(80, i, u32::MAX, &crate::decode::decode(t), &operands(t), slots.as_ref(), None, c, &name_of)
                .unwrap();
        }
        (w.clock, w.bank_cycles)
    }

    #[test]
    fn three_sources_in_one_bank_cost_a_cycle_and_a_reuse_flag_removes_it() {
        // R2, R4, R6: all even, one bank, three distinct reads: one cycle more per FFMA.
        let conflict = [("FFMA", "R10,R2,R4,R6", 2, 0, true), ("FFMA", "R11,R2,R4,R8", 2, 0, true)];
        assert_eq!(run(&conflict), (6, 2));
        // Spread over both banks: no conflict.
        assert_eq!(run(&[("FFMA", "R10,R2,R5,R6", 2, 0, true), ("FFMA", "R11,R2,R5,R8", 2, 0, true)]), (4, 0));
        // The first keeps R2 (slot 0) for the second, which reads only R4 and R8 from the
        // bank: the second's conflict is gone, the first still pays its own.
        let reused = [("FFMA", "R10,R2.reuse,R4,R6", 2, 0b0001, true), ("FFMA", "R11,R2,R4,R8", 2, 0, true)];
        assert_eq!(run(&reused), (5, 1));
        // The same register in another slot is not served.
        let other_slot = [("FFMA", "R10,R2.reuse,R4,R6", 2, 0b0001, true), ("FFMA", "R11,R4,R2,R8", 2, 0, true)];
        assert_eq!(run(&other_slot), (6, 2));
        // A cleared yield bit (the warp may yield) keeps nothing in the cache.
        let yielded = [("FFMA", "R10,R2.reuse,R4,R6", 2, 0b0001, false), ("FFMA", "R11,R2,R4,R8", 2, 0, true)];
        assert_eq!(run(&yielded), (6, 2));
        // The cache serves the next instruction only.
        let later = [
            ("FFMA", "R10,R2.reuse,R4,R6", 2, 0b0001, true),
            ("FADD", "R12,R3,R5", 2, 0, true),
            ("FFMA", "R11,R2,R4,R8", 2, 0, true),
        ];
        assert_eq!(run(&later), (8, 2));
        // Forms the model does not know pay nothing.
        assert_eq!(run(&[("IMAD.WIDE", "R10,R2,R4,R6", 2, 0, true)]), (2, 0));
    }

    /// Runs `prog` (opcode, operands) on one sm_90a warp with hazard checks, each instruction
    /// with a stall of 4 (chained `HGMMA`s need it); returns the clock after the last issue, or the first error.
    fn run_sm90(prog: &[(&str, &str)]) -> Result<u64, EmuError> {
        let texts: Vec<Text> = prog
            .iter()
            .map(|(op, ops)| Text { predicate: String::new(), opcode: (*op).into(), operands: (*ops).into() })
            .collect();
        let name_of = |p: usize| texts[p].opcode.clone();
        let c = Control { stall: 4, yield_bit: true, write_sb: None, read_sb: None, wait: 0, reuse: 0 };
        let mut w = WarpTiming::default();
        for (i, t) in texts.iter().enumerate() {
            w.issue(90, i, u32::MAX, &crate::decode::decode(t), &operands(t), None, None, c, &name_of)?;
        }
        Ok(w.clock)
    }

    /// A wait on a scoreboard 1 cycle after its setter issued does not see it (the hardware
    /// goes ahead: an H200 ran `S2R` → `IMAD` so and got wrong indices): a hazard; 2 cycles on
    /// it waits for the result.
    #[test]
    fn a_wait_one_cycle_after_the_scoreboard_was_set_is_a_hazard() {
        let run = |stall: u8| {
            let texts = [
                Text { predicate: String::new(), opcode: "S2R".into(), operands: "R9, SR_CTAID.X".into() },
                Text { predicate: String::new(), opcode: "IMAD".into(), operands: "R9, R9, 0x80, R0".into() },
            ];
            let name_of = |p: usize| texts[p].opcode.clone();
            let set = Control { stall, yield_bit: true, write_sb: Some(3), read_sb: None, wait: 0, reuse: 0 };
            let wait = Control { stall: 4, yield_bit: true, write_sb: None, read_sb: None, wait: 1 << 3, reuse: 0 };
            let mut w = WarpTiming::default();
            for (i, (t, c)) in texts.iter().zip([set, wait]).enumerate() {
                w.issue(90, i, u32::MAX, &crate::decode::decode(t), &operands(t), None, None, c, &name_of)?;
            }
            Ok::<u64, EmuError>(w.clock)
        };
        let e = run(1).unwrap_err();
        assert!(e.to_string().contains("waits on SB3 1 cycles after 0x0000 `S2R` set it"), "{e}");
        assert!(run(2).unwrap() > 2 + 4, "the wait for the S2R's result takes time");
    }

    /// A warpgroup MMA holds the tensor pipe for N/2 cycles (`64x128x16`: 64; H100's 2048
    /// f16 multiply-adds a cycle per SM), the next on the same accumulators chains without a
    /// wait but queues behind it, and the results are ready `lat_wgmma` (48) cycles after the
    /// pipe is done: read before `WARPGROUP.DEPBAR` waits for their group, a hazard.
    #[test]
    fn warpgroup_mmas_hold_the_tensor_pipe_until_waited_for() {
        let first = ("HGMMA.64x128x16.F32", "R24, gdesc[UR4], R24");
        let second = ("HGMMA.64x128x16.F32", "R24, gdesc[UR8], R24, gsb0");
        let wait = |k| ("WARPGROUP.DEPBAR.LE", if k == 0 { "gsb0, 0x0" } else { "gsb0, 0x1" });
        let read = ("FADD", "R0, R24, R25");
        // Issued at 0 and 4; the second starts on the pipe at 64, completes at 128 + 48; the
        // wait issues then, the read 4 cycles on, and its own stall ends at 184.
        assert_eq!(run_sm90(&[first, second, wait(0), read]).unwrap(), 176 + 8);
        let e = run_sm90(&[first, second, read]).unwrap_err();
        assert!(
            e.to_string().contains("R24 before 0x0000 `HGMMA.64x128x16.F32`'s result was waited for (gsb0)"),
            "{e}"
        );
        // Half the width: half the tensor time (start 32, done 64 + 48).
        let narrow = |g: &'static str| ("HGMMA.64x64x16.F32", g);
        let prog = [narrow("R24, gdesc[UR4], R24"), narrow("R24, gdesc[UR8], R24, gsb0"), wait(0), read];
        assert_eq!(run_sm90(&prog).unwrap(), 112 + 8);
        // Two groups, the wait keeps the younger in flight: only the first's time is waited
        // for, and the second's accumulators may not be read yet.
        let g1 = ("HGMMA.64x128x16.F32", "R24, gdesc[UR4], R24, gsb0");
        let g2 = ("HGMMA.64x128x16.F32", "R88, gdesc[UR8], R88, gsb0");
        assert_eq!(run_sm90(&[g1, g2, wait(1), read]).unwrap(), 64 + 48 + 8);
        let e = run_sm90(&[g1, g2, wait(1), ("FADD", "R0, R88, R89")]).unwrap_err();
        assert!(e.to_string().contains("R88 before 0x0010 `HGMMA.64x128x16.F32`'s result was waited for"), "{e}");
    }

    #[test]
    fn bank_cycles_do_not_hide_a_too_short_stall() {
        // FFMA → reader 3 stall cycles later (the table needs 4): a hazard, even though the
        // reader's own bank conflict puts it 4 cycles after the producer.
        let texts = [
            Text { predicate: String::new(), opcode: "FFMA".into(), operands: "R2,R3,R4,R7".into() },
            Text { predicate: String::new(), opcode: "FFMA".into(), operands: "R10,R2,R4,R6".into() },
        ];
        let mut w = WarpTiming::default();
        let name_of = |p: usize| texts[p].opcode.clone();
        let c = |stall| Control { stall, yield_bit: true, write_sb: None, read_sb: None, wait: 0, reuse: 0 };
        let issue = |w: &mut WarpTiming, i: usize, stall| {
            let t = &texts[i];
            let slots = source_slots(t);
            w.issue(80, i, u32::MAX, &crate::decode::decode(t), &operands(t), slots.as_ref(), None, c(stall), &name_of)
        };
        issue(&mut w, 0, 3).unwrap();
        let e = issue(&mut w, 1, 1).unwrap_err();
        assert!(e.to_string().contains("3 cycles after"), "{e}");
        assert_eq!(w.bank_cycles, 1);
    }
}
