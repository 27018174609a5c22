//! The grid on the machine: CTAs are dispatched in launch order to the SM slot that
//! frees first, and all SMs advance together in epochs (see `crate::timing`): within an
//! epoch each SM runs its resident CTAs' warps in time order, SMs in parallel; between
//! epochs the memory system merges what they did and freed slots get new CTAs.

use rayon::prelude::*;

use super::cta::Cta;
use super::Launch;
use crate::error::EmuError;
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

struct Sm {
    idx: u32,
    timing: SmTiming,
    slots: Vec<Option<Cta>>,
    /// When each slot last became free.
    free_at: Vec<u64>,
    done: Vec<CtaDone>,
    error: Option<(u32, EmuError)>,
}

impl Sm {
    /// Runs the resident warps, earliest first, until every one has reached `end`.
    fn run_epoch(&mut self, l: &Launch, mem: &MemSystem, end: u64) {
        loop {
            // The warp that can issue first (ties: the one that issued least recently, so
            // warps with equal clocks take turns), and the runner-up: the first may issue
            // while it stays ahead of the runner-up.
            let mut best: Option<(u64, u64, usize, usize)> = None;
            let mut second = (u64::MAX, u64::MAX, usize::MAX, usize::MAX);
            for (si, slot) in self.slots.iter().enumerate() {
                let Some(c) = slot else { continue };
                for (wi, w) in c.warps.iter().enumerate() {
                    if !c.runnable(wi) {
                        continue;
                    }
                    let key = (w.clock, w.last_issue, si, wi);
                    match best {
                        Some(b) if key > b => second = second.min(key),
                        _ => {
                            if let Some(b) = best {
                                second = second.min(b);
                            }
                            best = Some(key);
                        }
                    }
                }
            }
            let Some((clock, seq, si, wi)) = best else { return };
            if clock >= end {
                return;
            }
            // Its first instruction may issue at the runner-up's clock if it wins that tie;
            // once it has issued it is the most recent and loses ties.
            let rest = second.0.min(end).saturating_sub(1);
            let first = if (seq, si, wi) < (second.1, second.2, second.3) { second.0.min(end - 1) } else { rest };
            let Some(cta) = self.slots[si].as_mut() else { return };
            if let Err(e) = cta.run_warp(l, &mut self.timing, mem, wi, first, rest) {
                self.error = Some((cta.linear, e));
                return;
            }
            if cta.all_done() {
                let end = cta.finish_time();
                let Some(c) = self.slots[si].take() else { return };
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
        self.slots
            .iter()
            .flatten()
            .flat_map(|c| c.warps.iter().enumerate().filter(|(wi, _)| c.runnable(*wi)).map(|(_, w)| w.clock))
            .min()
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
    let mut sms: Vec<Sm> = (0..nsm)
        .map(|i| Sm {
            idx: i,
            timing: SmTiming::new(m),
            slots: (0..per_sm).map(|_| None).collect(),
            free_at: vec![0; per_sm as usize],
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
    let scheds = m.schedulers_per_sm.max(1) as usize;
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
                sm.slots[i] = Some(Cta::new(l, ctaid, next as u32, sm.idx, start, first_sched));
                next += 1;
            }
        }
        let Some(first) = sms.iter().filter_map(|s| s.next_event()).min() else {
            if next >= ncta {
                break;
            }
            return Err(EmuError::launch("internal: CTAs left to run but no SM can run them"));
        };
        // Skip time in which nothing can issue.
        t = t.max(first - first % EPOCH);
        let end = t + EPOCH;
        for sm in sms.iter_mut() {
            sm.timing.log.clear();
        }
        if parallel {
            sms.par_iter_mut().for_each(|sm| sm.run_epoch(l, &mem, end));
        } else {
            sms.iter_mut().for_each(|sm| sm.run_epoch(l, &mem, end));
        }
        if let Some(e) = sms.iter_mut().filter_map(|s| s.error.take()).min_by_key(|(linear, _)| *linear) {
            return Err(e.1);
        }
        mem.end_epoch(t, sms.iter().map(|s| &s.timing.log));
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
