//! The grid on the machine: CTAs are dispatched in launch order to the SM slot that
//! frees first, and all SMs advance together in epochs (see `crate::timing`): within an
//! epoch each SM runs its resident CTAs' warps in time order, SMs in parallel; between
//! epochs the memory system merges what they did and freed slots get new CTAs.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rayon::prelude::*;

use super::cta::Cta;
use super::warp::Ex;
use super::Launch;
use crate::error::EmuError;
use crate::timing::class::Pipe;
use crate::timing::memsys::MemSystem;
use crate::timing::sm::SmTiming;
use crate::timing::EPOCH;

/// A finished CTA.
pub struct CtaDone {
    pub linear: u32,
    pub ctaid: [u32; 3],
    pub start: u64,
    pub end: u64,
    pub lane_instrs: u64,
    pub warp_instrs: u64,
    pub printf: String,
    pub marks: Vec<(u32, u32, u64)>,
}

/// A warp that can issue, packed for cheap comparison: its clock (high 64 bits), then
/// when it last issued (so warps with equal clocks take turns), then its slot and index.
type Key = u128;
const NO_KEY: Key = u128::MAX;
const LOW: u128 = (1 << 64) - 1;

fn key(clock: u64, last_issue: u64, slot: usize, warp: usize) -> Key {
    (clock as u128) << 64
        | ((last_issue & ((1 << 48) - 1)) as u128) << 16
        | ((slot & 0xff) << 8 | (warp & 0xff)) as u128
}

fn clock_of(k: Key) -> u64 {
    (k >> 64) as u64
}

struct Sm {
    idx: u32,
    timing: SmTiming,
    slots: Vec<Option<Cta>>,
    /// When each slot last became free.
    free_at: Vec<u64>,
    /// Runnable warps (not waiting at a barrier, not done) queued by scheduler and by
    /// the unit their next instruction needs, and each queue's best warp with its
    /// clock raised to when its scheduler and unit are free. So the warp picked can
    /// issue, and a warp held up by a busy unit does not hold up the others.
    ready: Vec<BinaryHeap<Reverse<Key>>>,
    tops: Vec<Key>,
    /// Bit q: queue q is not empty.
    busy: u64,
    done: Vec<CtaDone>,
    error: Option<(u32, EmuError)>,
}

/// Queues per scheduler, one per unit class (see `queue_of`).
const QUEUES: usize = 7;

fn queue_of(p: Pipe) -> usize {
    match p {
        Pipe::None => 0,
        Pipe::Fp32 => 1,
        Pipe::Int => 2,
        Pipe::Fp64 => 3,
        Pipe::Sfu => 4,
        Pipe::Tensor => 5,
        Pipe::Mio => 6,
    }
}

impl Sm {
    /// Queues a runnable warp at the cycle its next instruction's sources are ready.
    fn push(&mut self, l: &Launch, slot: usize, wi: usize) {
        if let Some(c) = &self.slots[slot] {
            let w = &c.warps[wi];
            let (t, pipe) = Ex::next_ready(w, l.module);
            let q = w.sched * QUEUES + queue_of(pipe);
            self.ready[q].push(Reverse(key(t, w.last_issue, slot, wi)));
            self.retop(q);
        }
    }

    fn retop(&mut self, q: usize) {
        let s = q / QUEUES;
        let free = match q % QUEUES {
            u @ 1..=5 => self.timing.sched_free[s].max(self.timing.unit_free[s][u - 1]),
            _ => self.timing.sched_free[s],
        };
        match self.ready[q].peek() {
            Some(r) => {
                self.busy |= 1 << q;
                self.tops[q] = if clock_of(r.0) < free { (free as u128) << 64 | (r.0 & LOW) } else { r.0 };
            }
            None => {
                self.busy &= !(1 << q);
                self.tops[q] = NO_KEY;
            }
        }
    }

    /// After a warp of scheduler `s` ran: its scheduler and units moved on.
    fn retop_sched(&mut self, s: usize) {
        let mut qs = self.busy >> (s * QUEUES) & ((1 << QUEUES) - 1);
        while qs != 0 {
            let q = qs.trailing_zeros() as usize;
            qs &= qs - 1;
            self.retop(s * QUEUES + q);
        }
    }

    fn place(&mut self, l: &Launch, slot: usize, cta: Cta) {
        let n = cta.warps.len();
        self.slots[slot] = Some(cta);
        for wi in 0..n {
            self.push(l, slot, wi);
        }
    }

    /// Runs the resident warps, earliest first, until every one has reached `end`.
    fn run_epoch(&mut self, l: &Launch, mem: &MemSystem, end: u64) {
        loop {
            // The warp that can issue first, and the runner-up (the best of the other
            // schedulers, or the next of its own).
            let (mut best, mut bs) = (NO_KEY, 0);
            let mut second = NO_KEY;
            let mut qs = self.busy;
            while qs != 0 {
                let q = qs.trailing_zeros() as usize;
                qs &= qs - 1;
                let k = self.tops[q];
                if k < best {
                    second = second.min(best);
                    (best, bs) = (k, q);
                } else {
                    second = second.min(k);
                }
            }
            let clock = clock_of(best);
            if best == NO_KEY || clock >= end {
                return;
            }
            self.ready[bs].pop();
            self.timing.stats.turns += 1;
            self.retop(bs);
            second = second.min(self.tops[bs]);
            let sched = bs / QUEUES;
            // It may issue while it stays ahead of the runner-up: its first instruction
            // also at the runner-up's clock if it wins that tie; once it has issued it is
            // the most recent and loses ties.
            let rest = clock_of(second).min(end).saturating_sub(1);
            let first = if best & LOW < second & LOW { clock_of(second).min(end - 1) } else { rest };
            let (si, wi) = ((best as usize >> 8) & 0xff, best as usize & 0xff);
            let Some(cta) = self.slots[si].as_mut() else { continue };
            if let Err(e) = cta.run_warp(l, &mut self.timing, mem, wi, first.max(clock), rest) {
                self.error = Some((cta.linear, e));
                return;
            }
            let again = cta.runnable(wi);
            let released: Vec<usize> =
                if cta.released.is_empty() { Vec::new() } else { std::mem::take(&mut cta.released) };
            let all_done = cta.all_done();
            // Its issues moved its scheduler and units on.
            self.retop_sched(sched);
            if again {
                self.push(l, si, wi);
            }
            for r in released {
                if r != wi && self.slots[si].as_ref().is_some_and(|c| c.runnable(r)) {
                    self.push(l, si, r);
                }
            }
            if all_done {
                let Some(c) = self.slots[si].take() else { return };
                let end = c.finish_time();
                self.free_at[si] = end;
                self.done.push(CtaDone {
                    linear: c.linear,
                    ctaid: c.mem.ctaid,
                    start: c.start,
                    end,
                    lane_instrs: c.warps.iter().map(|w| w.lane_instrs).sum(),
                    warp_instrs: c.warps.iter().map(|w| w.warp_instrs).sum(),
                    printf: c.mem.printf,
                    marks: c.mem.marks,
                });
            }
        }
    }

    /// The earliest clock of a runnable warp.
    fn next_event(&self) -> Option<u64> {
        self.tops.iter().copied().min().filter(|&k| k != NO_KEY).map(clock_of)
    }
}

/// What the grid did.
pub struct GridRun {
    /// Finished CTAs in linear order.
    pub ctas: Vec<CtaDone>,
    pub ctas_per_sm: u32,
    pub dram_bytes: u64,
    pub l2_bytes: u64,
}

/// Runs CTAs `0..ncta` (linear order) of the launch.
pub fn run(l: &Launch, ncta: u64, region_lens: &[usize], parallel: bool) -> Result<GridRun, EmuError> {
    let m = &l.costs.m;
    let per_sm = m.ctas_per_sm(l.nthreads, l.total_smem, l.regs_per_thread);
    let nsm = m.sms.max(1);
    // Queue bits of all schedulers (at most 8) fit one u64.
    let scheds = m.schedulers();
    let mut sms: Vec<Sm> = (0..nsm)
        .map(|i| Sm {
            idx: i,
            timing: SmTiming::new(m),
            slots: (0..per_sm).map(|_| None).collect(),
            free_at: vec![0; per_sm as usize],
            ready: (0..scheds * QUEUES).map(|_| BinaryHeap::new()).collect(),
            tops: vec![NO_KEY; scheds * QUEUES],
            busy: 0,
            done: Vec::new(),
            error: None,
        })
        .collect();
    let mut mem = MemSystem::new(region_lens, m.l2_bytes, m.per_clk(m.dram_bytes_per_s), m.per_clk(m.l2_bytes_per_s));
    let mut next: u64 = 0;
    let mut t: u64 = 0;
    let mut finished: Vec<CtaDone> = Vec::with_capacity(ncta.min(1 << 20) as usize);
    let gx = l.grid[0] as u64;
    let gy = l.grid[1] as u64;
    loop {
        // Dispatch: free slots in the order they freed (ties: slot, then SM, so the first
        // wave goes round-robin over the SMs), CTAs in launch order.
        if next < ncta {
            let mut free: Vec<(u64, usize, usize)> = Vec::new();
            for (s, sm) in sms.iter().enumerate() {
                for (i, slot) in sm.slots.iter().enumerate() {
                    if slot.is_none() {
                        free.push((sm.free_at[i], i, s));
                    }
                }
            }
            free.sort_unstable();
            for (at, i, s) in free {
                if next >= ncta {
                    break;
                }
                let ctaid = [(next % gx) as u32, ((next / gx) % gy) as u32, (next / (gx * gy)) as u32];
                let start = at + m.cta_launch_cycles as u64;
                // Warps of the CTA in slot i fill the schedulers after those of slot i - 1.
                let first_sched = (i * l.nwarps as usize) % scheds;
                let sm = &mut sms[s];
                let cta = Cta::new(l, ctaid, next as u32, sm.idx, start, first_sched);
                sm.place(l, i, cta);
                next += 1;
            }
        }
        let Some(first) = sms.iter().filter_map(|s| s.next_event()).min() else {
            if next >= ncta {
                break;
            }
            return Err(EmuError::launch("internal: CTAs left to run but no SM can run them"));
        };
        if l.deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return Err(EmuError::launch(format!(
                "stopped at the time limit: {} of {ncta} CTAs had finished (nothing was written back)",
                finished.len() + sms.iter().map(|s| s.done.len()).sum::<usize>()
            )));
        }
        // Skip time in which nothing can issue.
        t = t.max(first - first % EPOCH);
        let end = t + EPOCH;
        for sm in sms.iter_mut() {
            sm.timing.log.clear();
        }
        if parallel {
            // One task per SM with work in this epoch, so idle SMs do not unbalance the
            // host threads.
            let mut active: Vec<&mut Sm> =
                sms.iter_mut().filter(|sm| sm.next_event().is_some_and(|c| c < end)).collect();
            active.par_iter_mut().with_max_len(1).for_each(|sm| sm.run_epoch(l, &mem, end));
        } else {
            sms.iter_mut().for_each(|sm| sm.run_epoch(l, &mem, end));
        }
        if let Some(e) = sms.iter_mut().filter_map(|s| s.error.take()).min_by_key(|(linear, _)| *linear) {
            return Err(e.1);
        }
        mem.end_epoch(t, end, sms.iter().map(|s| &s.timing.log));
        for sm in sms.iter_mut() {
            finished.append(&mut sm.done);
        }
        t = end;
    }
    if l.stats {
        let mut tot = crate::timing::sm::SmStats::default();
        for sm in &sms {
            tot.add(&sm.timing.stats);
        }
        eprintln!("emulator timing, summed over {} SMs (cycles; the launch ended at {t}): {tot:?}", sms.len());
    }
    finished.sort_unstable_by_key(|c| c.linear);
    Ok(GridRun { ctas: finished, ctas_per_sm: per_sm, dram_bytes: mem.dram_bytes, l2_bytes: mem.l2_bytes })
}
