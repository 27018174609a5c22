//! One CTA: its warps, shared memory and barriers. Warps run in time slices, round
//! robin, in a fixed order (so a CTA's run is deterministic); a warp that reaches
//! `bar.sync` waits until the barrier's expected thread count has arrived.

use super::race::RaceShadow;
use super::warp::{BarRed, CtaMem, Ex, Frame, RedOp, Stop, Warp, FULL};
use super::Launch;
use crate::clock::SCHEDULERS_PER_SM;
use crate::error::{EmuError, ErrorKind};
use crate::ir::Operand;

pub struct CtaResult {
    pub cycles: u64,
    pub lane_instrs: u64,
    pub warp_instrs: u64,
    pub printf: String,
}

/// Instructions a warp runs before the next warp gets a turn. Small enough that warps
/// spinning on a flag another warp sets still make progress.
const SLICE: u64 = 2048;

#[derive(Default, Clone)]
struct BarState {
    arrived_threads: u32,
    waiting: Vec<usize>,
    count: Option<u32>,
    /// `bar.red`: the operation, the running result, and each waiting warp's destination.
    red: Option<(RedOp, u32)>,
    red_dst: Vec<(usize, Operand, u32)>,
}

pub fn run_cta(l: &Launch, ctaid: [u32; 3], linear: u32) -> Result<CtaResult, EmuError> {
    let module = l.module;
    let func = &module.funcs[l.func as usize];
    let local_size = module.local_size;
    let mut mem = CtaMem {
        ctaid,
        linear,
        shared: vec![0; l.total_smem as usize],
        local: vec![0; local_size as usize * l.nthreads as usize],
        local_size,
        race: if l.check_races && l.total_smem > 0 { Some(RaceShadow::new(l.total_smem as usize)) } else { None },
        printf: String::new(),
    };
    let mut warps: Vec<Warp> = (0..l.nwarps)
        .map(|w| {
            let n = (l.nthreads - w * 32).min(32);
            let lanes = if n == 32 { FULL } else { (1u32 << n) - 1 };
            Warp {
                id: w,
                lanes,
                exited: !lanes,
                frames: vec![Frame::new(l.func, func.nregs, lanes)],
                clock: 0,
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
            }
        })
        .collect();
    let mut bars: Vec<BarState> = vec![BarState::default(); 16];
    let mut waiting = vec![false; warps.len()];
    let mut total_steps = 0u64;
    loop {
        let mut ran = false;
        for wi in 0..warps.len() {
            if warps[wi].done || waiting[wi] {
                continue;
            }
            ran = true;
            let before = warps[wi].warp_instrs;
            let stop = {
                let mut ex = Ex { l, m: &mut mem, w: &mut warps[wi] };
                ex.run(SLICE)?
            };
            total_steps += warps[wi].warp_instrs - before;
            if total_steps > l.max_steps {
                return Err(EmuError::new(
                    ErrorKind::Runtime,
                    format!("CTA ran more than {} warp instructions (an endless loop?)", l.max_steps),
                )
                .at_thread(ctaid, [0, 0, 0]));
            }
            if let Stop::Barrier { id, count, wait, red } = stop {
                let b = &mut bars[id as usize];
                if let Some(BarRed { op, partial, dst, mask }) = red {
                    let acc = match (b.red, op) {
                        (None, _) => partial,
                        (Some((o, _)), _) if o != op => {
                            return Err(EmuError::new(
                                ErrorKind::Runtime,
                                format!("barrier {id} used with different bar.red operations"),
                            )
                            .at_thread(ctaid, [warps[wi].id * 32, 0, 0]))
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
                    .at_thread(ctaid, [warps[wi].id * 32, 0, 0]));
                }
                b.count = b.count.or(count);
                b.arrived_threads += (warps[wi].lanes & !warps[wi].exited).count_ones().max(1);
                if wait {
                    b.waiting.push(wi);
                    waiting[wi] = true;
                }
            }
            release_barriers(&mut bars, &mut warps, &mut waiting, &mut mem);
        }
        if warps.iter().all(|w| w.done) {
            break;
        }
        if !ran {
            // Everyone left is waiting and nothing can release them.
            let stuck: Vec<String> = bars
                .iter()
                .enumerate()
                .filter(|(_, b)| !b.waiting.is_empty())
                .map(|(i, b)| {
                    let ws: Vec<String> = b.waiting.iter().map(|w| w.to_string()).collect();
                    format!(
                        "barrier {i}: warps [{}] wait, {} of {} threads arrived",
                        ws.join(","),
                        b.arrived_threads,
                        expected(b, &warps)
                    )
                })
                .collect();
            return Err(EmuError::new(
                ErrorKind::Deadlock,
                format!("deadlock: a barrier can never complete ({})", stuck.join("; ")),
            )
            .at_thread(ctaid, [0, 0, 0]));
        }
    }
    // A CTA's time: its slowest warp, or the issue bandwidth of the SM's schedulers.
    let longest = warps.iter().map(|w| w.clock).max().unwrap_or(0);
    let total: u64 = warps.iter().map(|w| w.clock).sum();
    Ok(CtaResult {
        cycles: longest.max(total.div_ceil(SCHEDULERS_PER_SM)),
        lane_instrs: warps.iter().map(|w| w.lane_instrs).sum(),
        warp_instrs: warps.iter().map(|w| w.warp_instrs).sum(),
        printf: mem.printf,
    })
}

/// Threads a barrier waits for: its count, or every thread that has not exited.
fn expected(b: &BarState, warps: &[Warp]) -> u32 {
    b.count.unwrap_or_else(|| warps.iter().filter(|w| !w.done).map(|w| (w.lanes & !w.exited).count_ones().max(1)).sum())
}

fn release_barriers(bars: &mut [BarState], warps: &mut [Warp], waiting: &mut [bool], mem: &mut CtaMem) {
    for b in bars.iter_mut() {
        if b.arrived_threads == 0 {
            continue;
        }
        if b.arrived_threads >= expected(b, warps) {
            // Released warps leave together, at the time the last one arrived.
            let t = b.waiting.iter().map(|&w| warps[w].clock).max().unwrap_or(0);
            for &w in &b.waiting {
                warps[w].clock = t;
                waiting[w] = false;
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
