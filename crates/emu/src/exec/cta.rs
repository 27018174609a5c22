//! One resident CTA: its warps, shared memory and barriers. The SM it runs on (see
//! `grid`) decides which warp goes next; a warp that reaches `bar.sync` waits until
//! the barrier's expected thread count has arrived.

use super::race::RaceShadow;
use super::warp::{BarRed, CtaMem, Ex, Frame, RedOp, Stop, Warp, FULL};
use super::Launch;
use crate::error::{EmuError, ErrorKind};
use crate::ir::Operand;
use crate::timing::memsys::MemSystem;
use crate::timing::sm::SmTiming;

#[derive(Default, Clone)]
struct BarState {
    arrived_threads: u32,
    waiting: Vec<usize>,
    count: Option<u32>,
    /// `bar.red`: the operation, the running result, and each waiting warp's destination.
    red: Option<(RedOp, u32)>,
    red_dst: Vec<(usize, Operand, u32)>,
    /// The latest clock at which a thread arrived: a `bar.arrive` does not wait, so the
    /// phase completes no earlier than its last arrival, whoever waits.
    last_arrival: u64,
}

pub struct Cta {
    pub linear: u32,
    /// Cycle its first instruction could issue.
    pub start: u64,
    pub mem: CtaMem,
    pub warps: Vec<Warp>,
    bars: Vec<BarState>,
    pub waiting: Vec<bool>,
    /// Warps a barrier released since the SM last looked (they can issue again).
    pub released: Vec<usize>,
    /// Warps not finished yet.
    live: usize,
    steps: u64,
    /// Warps suspended in `mbarrier.try_wait`, with the barrier's shared offset.
    mbar_waiters: Vec<(usize, u32)>,
    /// `barrier.cluster`: threads arrived in the current phase, the phases completed, each
    /// warp's phase of its arrival not yet waited for, and the warps waiting.
    cl_arrived: u32,
    cl_phase: u64,
    cl_pending: Vec<Option<u64>>,
    cl_waiters: Vec<usize>,
}

impl Cta {
    /// A CTA on SM `sm` whose warps start at `start`; its warp `w` issues on scheduler
    /// `(first_sched + w) % schedulers`.
    pub fn new(l: &Launch, ctaid: [u32; 3], linear: u32, sm: u32, start: u64, first_sched: usize) -> Cta {
        let module = l.module;
        let func = &module.funcs[l.func as usize];
        let local_size = module.local_size;
        let scheds = l.costs.m.schedulers();
        let mem = CtaMem {
            ctaid,
            shared: vec![0; l.total_smem as usize],
            local: vec![0; local_size as usize * l.nthreads as usize],
            local_size,
            race: if l.check_races && l.total_smem > 0 { Some(RaceShadow::new(l.total_smem as usize)) } else { None },
            printf: String::new(),
            sm,
            marks: Vec::new(),
            mbars: Default::default(),
            next_mbar_id: 0,
            mbar_events: Vec::new(),
            bulk: Vec::new(),
            landings: Vec::new(),
            store_reads: Vec::new(),
            maxnreg: Default::default(),
        };
        let warps: Vec<Warp> = (0..l.nwarps)
            .map(|w| {
                let n = (l.nthreads - w * 32).min(32);
                let lanes = if n == 32 { FULL } else { (1u32 << n) - 1 };
                Warp {
                    id: w,
                    lanes,
                    exited: !lanes,
                    frames: vec![Frame::new(l.func, func.nregs, lanes)],
                    clock: start,
                    now: start,
                    last_issue: 0,
                    sched: (first_sched + w as usize) % scheds,
                    cp_open_done: 0,
                    cp_done: Default::default(),
                    wg_open_done: 0,
                    wg_done: Default::default(),
                    drained: 0,
                    stall_until: 0,
                    done: false,
                    cp_open: Vec::new(),
                    cp_groups: Default::default(),
                    wg_open: Vec::new(),
                    wg_groups: Default::default(),
                    wg_fenced: false,
                    wg_dirty: Vec::new(),
                    wg_shadow: Default::default(),
                    warp_instrs: 0,
                    lane_instrs: 0,
                    mbar_seen: Default::default(),
                    bulk_open_done: 0,
                    bulk_committed: 0,
                    bulk_retired: 0,
                    bulk_done: Default::default(),
                    maxnreg_count: 0,
                }
            })
            .collect();
        let n = warps.len();
        Cta {
            linear,
            start,
            mem,
            warps,
            bars: vec![BarState::default(); 16],
            waiting: vec![false; n],
            released: Vec::new(),
            live: n,
            steps: 0,
            mbar_waiters: Vec::new(),
            cl_arrived: 0,
            cl_phase: 0,
            cl_pending: vec![None; n],
            cl_waiters: Vec::new(),
        }
    }

    pub fn all_done(&self) -> bool {
        self.live == 0
    }

    /// Whether warp `w` can issue (not finished, not waiting at a barrier).
    pub fn runnable(&self, w: usize) -> bool {
        !self.warps[w].done && !self.waiting[w]
    }

    /// When the last warp finished.
    pub fn finish_time(&self) -> u64 {
        self.warps.iter().map(|w| w.clock).max().unwrap_or(self.start)
    }

    /// Runs warp `wi`: its first instruction if it can issue by cycle `first`, the
    /// following ones while they can issue by `rest` (or until it waits at a barrier or
    /// finishes).
    pub fn run_warp(
        &mut self,
        l: &Launch,
        sm: &mut SmTiming,
        mem: &MemSystem,
        wi: usize,
        first: u64,
        rest: u64,
    ) -> Result<(), EmuError> {
        let mut limit = first;
        loop {
            // Bulk copies whose data has arrived by now land before the warp goes on.
            if !self.mem.bulk.is_empty() {
                self.land_until(l, self.warps[wi].clock)?;
                if !self.runnable(wi) {
                    return Ok(());
                }
            }
            let before = self.warps[wi].warp_instrs;
            let stop = {
                let mut ex = Ex { l, m: &mut self.mem, w: &mut self.warps[wi], sm: &mut *sm, mem };
                ex.step(limit)?
            };
            self.steps += self.warps[wi].warp_instrs - before;
            if !self.mem.mbar_events.is_empty() {
                // An arrival completed a phase: its waiters rejoin the SM's queues now.
                self.mbar_release(l);
                if !self.released.is_empty() && matches!(stop, Stop::Ran) {
                    return Ok(());
                }
            }
            if self.steps > l.max_steps {
                return Err(EmuError::new(
                    ErrorKind::Runtime,
                    format!("CTA ran more than {} warp instructions (an endless loop?)", l.max_steps),
                )
                .at_thread(self.mem.ctaid, [0, 0, 0]));
            }
            match stop {
                Stop::Ran => {
                    limit = rest;
                    if self.warps[wi].clock > limit {
                        return Ok(());
                    }
                }
                Stop::Deferred => {
                    sm.stats.deferred += 1;
                    return Ok(());
                }
                Stop::Done => {
                    self.live -= 1;
                    self.cl_release(l);
                    return self.after_exit(l);
                }
                Stop::MbarWait(bar) => {
                    self.waiting[wi] = true;
                    self.mbar_waiters.push((wi, bar));
                    return self.after_block(l);
                }
                Stop::Cluster(wait) => {
                    self.cluster(wi, wait)?;
                    self.cl_release(l);
                    return self.after_block(l);
                }
                Stop::Barrier { id, count, wait, red } => {
                    self.arrive(wi, id, count, wait, red)?;
                    self.release_barriers(l.costs.m.lat_barrier as u64);
                    return self.after_block(l);
                }
            }
        }
    }

    fn arrive(
        &mut self,
        wi: usize,
        id: u32,
        count: Option<u32>,
        wait: bool,
        red: Option<BarRed>,
    ) -> Result<(), EmuError> {
        let ctaid = self.mem.ctaid;
        let b = &mut self.bars[id as usize];
        if let Some(BarRed { op, partial, dst, mask }) = red {
            let acc = match (b.red, op) {
                (None, _) => partial,
                (Some((o, _)), _) if o != op => {
                    return Err(EmuError::new(
                        ErrorKind::Runtime,
                        format!("barrier {id} used with different bar.red operations"),
                    )
                    .at_thread(ctaid, [self.warps[wi].id * 32, 0, 0]))
                }
                (Some((_, a)), RedOp::Popc) => a + partial,
                (Some((_, a)), RedOp::And) => a & partial,
                (Some((_, a)), RedOp::Or) => a | partial,
            };
            b.red = Some((op, acc));
            b.red_dst.push((wi, dst, mask));
        }
        if b.count.is_some() && count.is_some() && b.count != count {
            return Err(EmuError::new(
                ErrorKind::Runtime,
                format!("barrier {id} used with different thread counts ({:?} and {:?})", b.count, count),
            )
            .at_thread(ctaid, [self.warps[wi].id * 32, 0, 0]));
        }
        b.count = b.count.or(count);
        b.arrived_threads += (self.warps[wi].lanes & !self.warps[wi].exited).count_ones().max(1);
        b.last_arrival = b.last_arrival.max(self.warps[wi].clock);
        if wait {
            b.waiting.push(wi);
            self.waiting[wi] = true;
        }
        Ok(())
    }

    /// Warps that exited can complete a barrier others wait at (it waits for every
    /// thread that has not exited).
    fn after_exit(&mut self, l: &Launch) -> Result<(), EmuError> {
        self.release_barriers(l.costs.m.lat_barrier as u64);
        self.after_block(l)
    }

    /// After a warp stopped at a barrier or exited: phases its operation completed
    /// release their waiters; if no warp can run, bulk copies in flight land (earliest
    /// first) until one can; if none is left, the CTA is deadlocked.
    fn after_block(&mut self, l: &Launch) -> Result<(), EmuError> {
        self.mbar_release(l);
        while !self.all_done() && (0..self.warps.len()).all(|w| !self.runnable(w)) {
            let Some(next) = self.mem.bulk.iter().map(|c| c.done).min() else {
                return Err(self.deadlock());
            };
            self.land_until(l, next)?;
        }
        Ok(())
    }

    /// Lands the bulk copies due by cycle `t`, in time order (then issue order), and
    /// releases the warps whose phases completed.
    fn land_until(&mut self, l: &Launch, t: u64) -> Result<(), EmuError> {
        while let Some(i) =
            (0..self.mem.bulk.len()).filter(|&i| self.mem.bulk[i].done <= t).min_by_key(|&i| self.mem.bulk[i].done)
        {
            let c = self.mem.bulk.remove(i);
            let (line, warp, lane) = (c.line, c.warp, c.lane);
            self.mem.land(c).map_err(|e| {
                let b = l.block;
                let tid = warp * 32 + lane;
                e.at_line(line, l.module.line_text(line))
                    .at_thread(self.mem.ctaid, [tid % b[0], (tid / b[0]) % b[1], tid / (b[0] * b[1])])
            })?;
        }
        self.mbar_release(l);
        Ok(())
    }

    /// Wakes the warps suspended on barriers whose phase completed (they run their
    /// `try_wait` again, `lat_barrier` cycles after the completion).
    fn mbar_release(&mut self, l: &Launch) {
        if self.mem.mbar_events.is_empty() {
            return;
        }
        let lat = l.costs.m.lat_barrier as u64;
        for (bar, t) in std::mem::take(&mut self.mem.mbar_events) {
            let warps = &mut self.warps;
            let (waiting, released) = (&mut self.waiting, &mut self.released);
            self.mbar_waiters.retain(|&(w, b)| {
                if b != bar {
                    return true;
                }
                warps[w].clock = warps[w].clock.max(t + lat);
                waiting[w] = false;
                released.push(w);
                false
            });
        }
    }

    /// `barrier.cluster.arrive` / `.wait` for a cluster of one CTA: every thread that has
    /// not exited arrives, then waits for the phase it arrived in.
    fn cluster(&mut self, wi: usize, wait: bool) -> Result<(), EmuError> {
        let err = |m: &str| {
            EmuError::new(ErrorKind::Runtime, m.to_string()).at_thread(self.mem.ctaid, [self.warps[wi].id * 32, 0, 0])
        };
        if !wait {
            if self.cl_pending[wi].is_some() {
                return Err(err("barrier.cluster.arrive again before barrier.cluster.wait"));
            }
            self.cl_pending[wi] = Some(self.cl_phase);
            self.cl_arrived += (self.warps[wi].lanes & !self.warps[wi].exited).count_ones();
            return Ok(());
        }
        match self.cl_pending[wi] {
            None => Err(err("barrier.cluster.wait without a preceding barrier.cluster.arrive")),
            Some(p) if p < self.cl_phase => {
                self.cl_pending[wi] = None;
                Ok(())
            }
            Some(_) => {
                self.waiting[wi] = true;
                self.cl_waiters.push(wi);
                Ok(())
            }
        }
    }

    /// Completes the cluster barrier's phase once every live thread arrived.
    fn cl_release(&mut self, l: &Launch) {
        let live: u32 = self.warps.iter().filter(|w| !w.done).map(|w| (w.lanes & !w.exited).count_ones()).sum();
        if self.cl_arrived == 0 || self.cl_arrived < live {
            return;
        }
        self.cl_arrived = 0;
        self.cl_phase += 1;
        // Like bar.sync, a completed cluster barrier orders every thread's shared accesses.
        if let Some(r) = self.mem.race.as_mut() {
            r.new_epoch();
        }
        let arrived_at = self
            .cl_pending
            .iter()
            .enumerate()
            .filter(|(_, p)| p.is_some())
            .map(|(w, _)| self.warps[w].clock)
            .max()
            .unwrap_or(0);
        let t = arrived_at + l.costs.m.lat_barrier as u64;
        for w in std::mem::take(&mut self.cl_waiters) {
            self.warps[w].clock = self.warps[w].clock.max(t);
            self.waiting[w] = false;
            self.cl_pending[w] = None;
            self.released.push(w);
        }
    }

    fn deadlock(&self) -> EmuError {
        let stuck: Vec<String> = self
            .bars
            .iter()
            .enumerate()
            .filter(|(_, b)| !b.waiting.is_empty())
            .map(|(i, b)| {
                let ws: Vec<String> = b.waiting.iter().map(|w| w.to_string()).collect();
                format!(
                    "barrier {i}: warps [{}] wait, {} of {} threads arrived",
                    ws.join(","),
                    b.arrived_threads,
                    expected(b, &self.warps)
                )
            })
            .collect();
        let mut stuck = stuck;
        for (w, bar) in &self.mbar_waiters {
            let state = match self.mem.mbars.get(bar) {
                Some(b) => format!("{}, initialized at line {}", b.describe(), b.line),
                None => "invalidated".to_string(),
            };
            stuck.push(format!("warp {w} waits on the mbarrier at shared offset {bar} {state}"));
        }
        if !self.cl_waiters.is_empty() {
            stuck.push(format!("warps {:?} wait at barrier.cluster", self.cl_waiters));
        }
        EmuError::new(ErrorKind::Deadlock, format!("deadlock: a barrier can never complete ({})", stuck.join("; ")))
            .at_thread(self.mem.ctaid, [0, 0, 0])
    }

    /// Releases every barrier whose threads have all arrived: its warps leave together,
    /// `latency` cycles after the last one arrived.
    fn release_barriers(&mut self, latency: u64) {
        let (warps, waiting, mem, released) = (&mut self.warps, &mut self.waiting, &mut self.mem, &mut self.released);
        for b in self.bars.iter_mut() {
            if b.arrived_threads == 0 || b.arrived_threads < expected(b, warps) {
                continue;
            }
            let t = b.waiting.iter().map(|&w| warps[w].clock).max().unwrap_or(0).max(b.last_arrival) + latency;
            for &w in &b.waiting {
                warps[w].clock = t;
                waiting[w] = false;
                released.push(w);
            }
            if let Some((_, value)) = b.red {
                for (w, dst, mask) in &b.red_dst {
                    if let (Operand::Reg(r), Some(f)) = (dst, warps[*w].frames.last_mut()) {
                        for lane in 0..32 {
                            if mask >> lane & 1 != 0 {
                                if let Some(slot) = f.regs.get_mut(*r as usize * 32 + lane) {
                                    *slot = value as u64;
                                }
                            }
                        }
                        if let Some(slot) = f.ready.get_mut(*r as usize) {
                            *slot = t;
                        }
                    }
                }
            }
            *b = BarState::default();
            if let Some(r) = mem.race.as_mut() {
                r.new_epoch();
            }
        }
    }
}

/// Threads a barrier waits for: its count, or every thread that has not exited.
fn expected(b: &BarState, warps: &[Warp]) -> u32 {
    b.count.unwrap_or_else(|| warps.iter().filter(|w| !w.done).map(|w| (w.lanes & !w.exited).count_ones().max(1)).sum())
}
