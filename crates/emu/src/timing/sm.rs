//! One SM's resources and the cost of each warp-instruction on them.
//!
//! Warps are simulated in (nearly) time order, so every resource is a counter: the cycle
//! from which it is free. Issue waits for the scheduler, the source registers
//! (scoreboard) and, for pipelined units, the unit; memory instructions queue in the
//! SM's memory pipeline and their results arrive when the slowest part of their path
//! (shared-memory wavefronts, L1 lines, the L2 port, L2 or DRAM) has delivered them.

use super::access::{AccessLog, Footprint, SECTOR};
use super::class::{InstrTiming, Lat, Pipe};
use super::memsys::{EpochLog, MemSystem};
use crate::machine::MachineModel;

/// Per-launch costs derived from the machine.
#[derive(Clone, Debug)]
pub struct Costs {
    pub m: MachineModel,
    /// Cycles a warp-instruction occupies its unit: Fp32, Int, Fp64, Sfu.
    occ: [u32; 4],
    /// Tensor-core multiply-adds per cycle per sub-partition (warpgroup / sync MMA).
    tensor_rate: u32,
    sync_rate: u32,
    /// Bytes per cycle of the L2 port of one SM.
    port_rate: u64,
}

/// How far ahead of issue a memory pipeline may be booked before the issuing warp
/// stalls (its queue depth, in cycles of work).
pub const MIO_QUEUE: u64 = 32;

impl Costs {
    pub fn new(m: &MachineModel) -> Costs {
        let occ = |lanes: u32| 32u32.div_ceil(lanes.max(1));
        let subs = m.schedulers() as u32;
        Costs {
            occ: [occ(m.fp32_lanes), occ(m.int_lanes), occ(m.fp64_lanes), occ(m.sfu_lanes)],
            tensor_rate: (m.tensor_fma_per_clk / subs).max(1),
            sync_rate: (m.mma_sync_fma_per_clk / subs).max(1),
            port_rate: m.l2_port_bytes_per_clk.max(1) as u64,
            m: m.clone(),
        }
    }

    fn unit(p: Pipe) -> Option<usize> {
        match p {
            Pipe::Fp32 => Some(0),
            Pipe::Int => Some(1),
            Pipe::Fp64 => Some(2),
            Pipe::Sfu => Some(3),
            Pipe::Tensor => Some(4),
            _ => None,
        }
    }

    fn latency(&self, l: Lat) -> u64 {
        let m = &self.m;
        (match l {
            Lat::Alu => m.lat_alu,
            Lat::Fp64 => m.lat_fp64,
            Lat::Sfu => m.lat_sfu,
            Lat::Conv => m.lat_conv,
            Lat::Param => m.lat_param,
            Lat::Shfl => m.lat_shfl,
            Lat::Mma => m.lat_mma,
            Lat::Memory | Lat::Atomic | Lat::Async | Lat::None => 1,
        }) as u64
    }

    /// Tensor-core cycles of one warp's share of an MMA of `fma` multiply-adds.
    fn tensor_cycles(&self, fma: u64, sync: bool, scale: (u64, u64)) -> u64 {
        let rate = if sync { self.sync_rate } else { self.tensor_rate } as u64;
        (fma * scale.0).div_ceil(rate * scale.1).max(1)
    }
}

/// Rate scaling of tensor-core work by input type, as (numerator, denominator) of time.
pub fn mma_type_scale(input: crate::ir::Ty) -> (u64, u64) {
    use crate::ir::Ty::*;
    match input {
        TF32 | F32 => (2, 1),
        S8 | U8 | E4M3 | E5M2 | E4M3x2 | E5M2x2 => (1, 2),
        F64 => (16, 1),
        _ => (1, 1),
    }
}

/// Diagnostics (`TRIDENT_EMU_STATS`): cycles warps waited, by cause, and busy cycles of
/// the SM's units, summed over the launch.
#[derive(Clone, Debug, Default)]
pub struct SmStats {
    /// Waiting before issue for the scheduler, source registers, or the unit/queue.
    pub stall_sched: u64,
    pub stall_regs: u64,
    pub stall_unit: u64,
    /// Waiting at `wgmma.wait_group`, `cp.async.wait_group`, fences and sleeps.
    pub wait_wgmma: u64,
    pub wait_cp_async: u64,
    pub wait_other: u64,
    pub tensor_busy: u64,
    pub mio_busy: u64,
    pub port_busy: u64,
    pub l1_busy: u64,
    pub issue_slots: u64,
    /// Times a warp was picked to run, and times it then could not issue.
    pub turns: u64,
    pub deferred: u64,
}

impl SmStats {
    pub fn add(&mut self, o: &SmStats) {
        self.stall_sched += o.stall_sched;
        self.stall_regs += o.stall_regs;
        self.stall_unit += o.stall_unit;
        self.wait_wgmma += o.wait_wgmma;
        self.wait_cp_async += o.wait_cp_async;
        self.wait_other += o.wait_other;
        self.tensor_busy += o.tensor_busy;
        self.mio_busy += o.mio_busy;
        self.port_busy += o.port_busy;
        self.l1_busy += o.l1_busy;
        self.issue_slots += o.issue_slots;
        self.turns += o.turns;
        self.deferred += o.deferred;
    }
}

/// When an instruction's results are available.
pub struct Done {
    /// Destination registers become readable.
    pub ready: u64,
    /// The memory system has acknowledged its global writes (fences wait for this).
    pub drained: u64,
    /// The SM's memory pipeline accepted it: the warp cannot issue again before (the
    /// pipeline's queue holds [`MIO_QUEUE`] cycles of work).
    pub accepted: u64,
}

/// The resources of one SM.
pub struct SmTiming {
    pub sched_free: Vec<u64>,
    /// Per scheduler: Fp32, Int, Fp64, Sfu, Tensor.
    pub unit_free: Vec<[u64; 5]>,
    /// Shared-memory wavefronts, shuffles (one per cycle).
    pub mio_free: u64,
    /// L1 tag stage: global/local lines.
    pub l1_free: u64,
    /// L2 port, in bytes (byte `b` leaves at cycle `b / port_rate`).
    pub port_free: u64,
    /// Global-memory touches of this epoch.
    pub log: EpochLog,
    /// The accesses of the memory instruction executing.
    pub acc: AccessLog,
    fp: Footprint,
    pub stats: SmStats,
    /// Warp-instructions issued so far (orders warps for round-robin ties).
    pub issued: u64,
}

impl SmTiming {
    pub fn new(m: &MachineModel) -> SmTiming {
        let s = m.schedulers();
        SmTiming {
            sched_free: vec![0; s],
            unit_free: vec![[0; 5]; s],
            mio_free: 0,
            l1_free: 0,
            port_free: 0,
            log: EpochLog::default(),
            acc: AccessLog::default(),
            fp: Footprint::default(),
            stats: SmStats::default(),
            issued: 0,
        }
    }

    /// The earliest cycle ≥ `clock` at which the instruction can issue.
    pub fn issue_time(&self, sched: usize, clock: u64, ready: &[u64], it: &InstrTiming) -> u64 {
        let mut t = clock.max(self.sched_free[sched]);
        for &r in it.srcs.iter().chain(&it.dsts) {
            if let Some(&x) = ready.get(r as usize) {
                t = t.max(x);
            }
        }
        self.unit_gate(sched, t, it)
    }

    /// Diagnostics: splits a wait from `clock` to issue at `t` by cause.
    pub fn note_stall(&mut self, sched: usize, clock: u64, ready: &[u64], it: &InstrTiming, t: u64) {
        let s = clock.max(self.sched_free[sched].min(t));
        let mut d = s;
        for &r in it.srcs.iter().chain(&it.dsts) {
            if let Some(&x) = ready.get(r as usize) {
                d = d.max(x.min(t));
            }
        }
        self.stats.stall_sched += s - clock;
        self.stats.stall_regs += d - s;
        self.stats.stall_unit += t - d;
    }

    /// Pipelined units accept a warp-instruction once the previous one has moved on
    /// (the memory pipeline queues instead: see `memory`).
    fn unit_gate(&self, sched: usize, t: u64, it: &InstrTiming) -> u64 {
        match Costs::unit(it.pipe()) {
            Some(u) => t.max(self.unit_free[sched][u]),
            None => t,
        }
    }

    /// Books the issue slots and unit of an instruction issued at `t`, and returns when
    /// its destination registers are ready (memory and tensor instructions: see
    /// [`SmTiming::memory`], [`SmTiming::mma`]).
    pub fn issue(&mut self, c: &Costs, sched: usize, t: u64, it: &InstrTiming) -> u64 {
        let slots = it.slots.max(1) as u64;
        self.sched_free[sched] = t + slots;
        self.stats.issue_slots += slots;
        self.issued += 1;
        if let Some(u) = Costs::unit(it.pipe()) {
            // A sequence (integer division, 64-bit arithmetic) keeps its unit busy for
            // each of its instructions; an SFU sequence (division, `.rn` reciprocal and
            // square root, ex2 with scaling) has one MUFU and FP32 instructions around it.
            let ops = if it.pipe() == Pipe::Sfu { 1 } else { slots };
            if u < 4 {
                self.unit_free[sched][u] = t + c.occ[u] as u64 * ops;
            }
        }
        t + slots - 1 + c.latency(it.lat()) + it.extra_lat as u64
    }

    /// A warp-synchronous MMA of `fma` multiply-adds issued at `t`; returns when D is ready.
    pub fn mma(&mut self, c: &Costs, sched: usize, t: u64, fma: u64, scale: (u64, u64)) -> u64 {
        let start = t.max(self.unit_free[sched][4]);
        let busy = c.tensor_cycles(fma, true, scale);
        self.unit_free[sched][4] = start + busy;
        self.stats.tensor_busy += busy;
        start + busy + c.m.lat_mma as u64
    }

    /// One warp's part of a warpgroup MMA (`fma` multiply-adds, reading `smem_bytes` of
    /// operands from shared memory) issued at `t`; returns when it completes.
    pub fn wgmma(&mut self, c: &Costs, sched: usize, t: u64, fma: u64, scale: (u64, u64), smem_bytes: u64) -> u64 {
        let start = t.max(self.unit_free[sched][4]);
        let busy = c.tensor_cycles(fma, false, scale);
        self.unit_free[sched][4] = start + busy;
        self.stats.tensor_busy += busy;
        // Operands stream from shared memory while the tensor core works. The reads are
        // booked from issue: booking them at a start far ahead would block the memory
        // pipeline for every other warp until then.
        let waves = smem_bytes.div_ceil(c.m.shared_bytes_per_clk.max(1) as u64);
        let mstart = t.max(self.mio_free);
        self.mio_free = mstart + waves;
        self.stats.mio_busy += waves;
        (start + busy).max(mstart + waves) + c.m.lat_wgmma as u64
    }

    /// The memory part of a load/store/atomic/`cp.async`/`ldmatrix` issued at `t` whose
    /// lanes' accesses are in `self.acc`. `atomic`: read-modify-write at L2 (global) or
    /// in the shared-memory unit.
    pub fn memory(&mut self, c: &Costs, t: u64, mem: &MemSystem, atomic: bool) -> Done {
        self.acc.enabled = false;
        self.acc.footprint(&mut self.fp);
        let log = &self.acc;
        let m = &c.m;
        let mut ready = t + 1;
        let mut drained = t + 1;
        let mut accepted = t + 1;
        if self.fp.shared_wavefronts > 0 {
            let mut waves = self.fp.shared_wavefronts as u64;
            if atomic {
                // Lanes updating one word serialize.
                waves = waves.max(same_word_lanes(log));
            }
            let start = t.max(self.mio_free);
            self.mio_free = start + waves;
            self.stats.mio_busy += waves;
            accepted = accepted.max(start.saturating_sub(MIO_QUEUE));
            let lat = if atomic { m.lat_shared_atomic } else { m.lat_shared } as u64;
            ready = ready.max(start + waves - 1 + lat);
        }
        if self.fp.local_lines > 0 {
            let lines = self.fp.local_lines as u64;
            let start = t.max(self.l1_free);
            self.l1_free = start + lines.div_ceil(m.l1_lines_per_clk.max(1) as u64);
            accepted = accepted.max(start.saturating_sub(MIO_QUEUE));
            ready = ready.max(start + lines - 1 + m.lat_local as u64);
        }
        if !self.fp.global_sectors.is_empty() {
            let start = t.max(self.l1_free);
            self.l1_free = start + (self.fp.global_lines as u64).div_ceil(m.l1_lines_per_clk.max(1) as u64);
            accepted = accepted.max(start.saturating_sub(MIO_QUEUE));
            let bytes = self.fp.global_sectors.len() as u64 * SECTOR;
            let pstart = (start * c.port_rate).max(self.port_free);
            self.port_free = pstart + bytes;
            let port_end = self.port_free.div_ceil(c.port_rate);
            self.stats.port_busy += bytes / c.port_rate;
            self.stats.l1_busy += (self.fp.global_lines as u64).div_ceil(m.l1_lines_per_clk.max(1) as u64);
            // Loads (and atomics) need the data: a sector not in L2 comes from DRAM, one
            // whose fill is still in flight (an earlier miss of this SM in this epoch, or
            // of any SM before) comes with that fill. Stores are acknowledged by the L2,
            // which allocates the sector without waiting for DRAM.
            let reads = !log.store || atomic;
            let mut miss = false;
            let mut merged = 0u64;
            for &s in &self.fp.global_sectors {
                let known =
                    if reads { self.log.missed.get(&s).copied().or_else(|| mem.lookup(s)) } else { mem.lookup(s) };
                match known {
                    None => miss = true,
                    Some(a) => merged = merged.max(a),
                }
                self.log.touched.push((s, log.store && !atomic));
            }
            self.log.l2_bytes += bytes * if atomic { 2 } else { 1 };
            let served = if miss && reads {
                (start as f64).max(mem.dram_busy).ceil() as u64 + m.lat_dram as u64
            } else {
                let hit = (start as f64).max(mem.l2_busy).ceil() as u64 + m.lat_l2_hit as u64;
                if reads {
                    hit.max(merged)
                } else {
                    hit
                }
            };
            let arrive = served.max(port_end);
            if miss && reads {
                for &s in &self.fp.global_sectors {
                    if !self.log.missed.contains_key(&s) && mem.lookup(s).is_none() {
                        self.log.note_miss(s, arrive);
                    }
                }
            }
            if log.store || atomic {
                drained = drained.max(arrive);
            }
            if reads {
                ready = ready.max(arrive);
            }
        }
        if self.fp.param {
            ready = ready.max(t + m.lat_param as u64);
        }
        Done { ready, drained, accepted }
    }
}

/// The most lanes of an atomic that hit one word.
fn same_word_lanes(log: &AccessLog) -> u64 {
    let mut words: Vec<u64> = log.entries.iter().map(|e| e.1 / 4).collect();
    words.sort_unstable();
    let mut best = 0u64;
    let mut run = 0u64;
    for i in 0..words.len() {
        run = if i > 0 && words[i] == words[i - 1] { run + 1 } else { 1 };
        best = best.max(run);
    }
    best
}
