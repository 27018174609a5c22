//! The memory system shared by all SMs: L2 (which sectors it holds) and the L2 and
//! DRAM bandwidth servers.
//!
//! SMs run an epoch in parallel against a frozen view of this state; at the epoch's end
//! their logs of touched sectors are merged in SM order. So the model is deterministic
//! however the SMs are scheduled on host threads, and concurrent misses of several SMs on
//! one sector cost DRAM bandwidth once (as the L2 merges them), while each of those
//! requests still sees DRAM latency.
//!
//! L2 is approximated as LRU over 32-byte sectors: a sector is present if it was touched
//! (loaded or stored) less than `l2_bytes` of newly filled sectors ago. Stores allocate
//! without reading DRAM and are written back once per dirty sector. Bandwidth: every
//! epoch adds its unique DRAM bytes to the DRAM server and all L2 traffic to the L2
//! server; a request issued at `t` is served after `max(t, busy)`.
//!
//! A sector a load missed on is present from the epoch after, but its data is still on
//! its way from DRAM: the L2 merges later requests into that miss, so their data comes
//! no earlier than the first miss's ([`MemSystem::lookup`] returns when). Without that,
//! a request one cycle after an epoch boundary would see an L2 hit 380 cycles before
//! the miss it merges into is served, and timings would jump with where epochs fall.

use super::access::SECTOR;
use crate::memory::{GLOBAL_BASE, REGION_SHIFT};
use rustc_hash::FxHashMap;

const DIRTY: u32 = 1 << 31;
const STAMP: u32 = DIRTY - 1;
const SECTORS_PER_REGION_SHIFT: u32 = REGION_SHIFT - 5;

/// One SM's record of an epoch: the sectors it touched (and whether it stored to them),
/// in order, the sectors its loads missed on (with when their data arrives), and its L2
/// traffic.
#[derive(Default)]
pub struct EpochLog {
    pub touched: Vec<(u64, bool)>,
    pub missed: FxHashMap<u64, u64>,
    pub l2_bytes: u64,
}

impl EpochLog {
    pub fn clear(&mut self) {
        self.touched.clear();
        self.missed.clear();
        self.l2_bytes = 0;
    }

    /// A load of this SM missed on `key` this epoch; its data arrives at `arrive`.
    pub fn note_miss(&mut self, key: u64, arrive: u64) {
        let a = self.missed.entry(key).or_insert(arrive);
        *a = (*a).min(arrive);
    }
}

pub struct MemSystem {
    /// Per global region, per sector: the fill counter at its last touch (0: never),
    /// and the dirty bit.
    stamps: Vec<Vec<u32>>,
    fill: u32,
    capacity: u32,
    /// Sectors whose DRAM fill may still be in flight: when the first miss's data arrives.
    in_flight: FxHashMap<u64, u64>,
    /// Cycle until which the DRAM (L2) has work queued.
    pub dram_busy: f64,
    pub l2_busy: f64,
    dram_per_clk: f64,
    l2_per_clk: f64,
    /// Totals over the launch, for the report.
    pub dram_bytes: u64,
    pub l2_bytes: u64,
}

impl MemSystem {
    /// `region_lens`: byte length of each global region (index as in `GlobalMem`).
    pub fn new(region_lens: &[usize], l2_bytes: u64, dram_per_clk: f64, l2_per_clk: f64) -> MemSystem {
        MemSystem {
            stamps: region_lens.iter().map(|&n| vec![0u32; (n as u64).div_ceil(SECTOR) as usize]).collect(),
            fill: 0,
            in_flight: FxHashMap::default(),
            capacity: (l2_bytes / SECTOR).min(STAMP as u64 / 2) as u32,
            dram_busy: 0.0,
            l2_busy: 0.0,
            dram_per_clk: dram_per_clk.max(1e-9),
            l2_per_clk: l2_per_clk.max(1e-9),
            dram_bytes: 0,
            l2_bytes: 0,
        }
    }

    fn slot(&self, key: u64) -> Option<(usize, usize)> {
        let rel = key.checked_sub(GLOBAL_BASE / SECTOR)?;
        let region = (rel >> SECTORS_PER_REGION_SHIFT) as usize;
        let idx = (rel & ((1 << SECTORS_PER_REGION_SHIFT) - 1)) as usize;
        (self.stamps.get(region)?.len() > idx).then_some((region, idx))
    }

    fn present(&self, stamp: u32) -> bool {
        stamp & STAMP != 0 && (self.fill.wrapping_sub(stamp & STAMP) & STAMP) < self.capacity
    }

    /// Whether a sector was in L2 at the start of the epoch.
    pub fn holds(&self, key: u64) -> bool {
        self.slot(key).is_some_and(|(r, i)| self.present(self.stamps[r][i]))
    }

    /// `None` when a sector was not in L2 at the start of the epoch (a miss), else the
    /// cycle from which its data can be delivered (0 unless a miss of an earlier epoch
    /// is still bringing it from DRAM).
    pub fn lookup(&self, key: u64) -> Option<u64> {
        self.holds(key).then(|| self.in_flight.get(&key).copied().unwrap_or(0))
    }

    /// Merges the SMs' logs (in SM order) and advances the bandwidth servers for an
    /// epoch that started at `start` (and ends at `end`).
    pub fn end_epoch<'a>(&mut self, start: u64, end: u64, logs: impl Iterator<Item = &'a EpochLog>) {
        let mut dram = 0u64;
        let mut l2 = 0u64;
        // Fills that have landed by the next epoch can delay nothing any more.
        self.in_flight.retain(|_, a| *a > end);
        for log in logs {
            l2 += log.l2_bytes;
            for (&key, &a) in &log.missed {
                if a > end {
                    let e = self.in_flight.entry(key).or_insert(a);
                    *e = (*e).min(a);
                }
            }
            for &(key, store) in &log.touched {
                let Some((r, i)) = self.slot(key) else { continue };
                let s = self.stamps[r][i];
                let present = self.present(s);
                if !present {
                    self.fill = self.fill.wrapping_add(1) & STAMP;
                    if self.fill == 0 {
                        self.fill = 1;
                    }
                    if !store {
                        dram += SECTOR;
                    }
                }
                let was_dirty = present && s & DIRTY != 0;
                if store && !was_dirty {
                    dram += SECTOR;
                }
                self.stamps[r][i] = self.fill | if store || was_dirty { DIRTY } else { 0 };
            }
        }
        let start = start as f64;
        if dram > 0 {
            self.dram_busy = self.dram_busy.max(start) + dram as f64 / self.dram_per_clk;
        }
        if l2 > 0 {
            self.l2_busy = self.l2_busy.max(start) + l2 as f64 / self.l2_per_clk;
        }
        self.dram_bytes += dram;
        self.l2_bytes += l2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(off: u64) -> u64 {
        (GLOBAL_BASE + off) / SECTOR
    }

    #[test]
    fn first_touch_misses_then_hits_until_evicted() {
        let mut m = MemSystem::new(&[1 << 20], 4 * SECTOR, 1.0, 4.0);
        assert!(!m.holds(key(0)));
        let mut log = EpochLog::default();
        log.touched.push((key(0), false));
        // The same sector from a second SM in the same epoch costs DRAM once.
        let mut log2 = EpochLog::default();
        log2.touched.push((key(0), false));
        m.end_epoch(0, 10, [&log, &log2].into_iter());
        assert!(m.holds(key(0)));
        assert_eq!(m.dram_bytes, 32);
        assert_eq!(m.dram_busy, 32.0);
        // Four more sectors push it out of a four-sector L2.
        let mut log = EpochLog::default();
        for s in 1..5 {
            log.touched.push((key(s * SECTOR), false));
        }
        m.end_epoch(100, 110, std::iter::once(&log));
        assert!(!m.holds(key(0)));
        assert!(m.holds(key(4 * SECTOR)));
        assert_eq!(m.dram_busy, 100.0 + 128.0);
    }

    #[test]
    fn stores_write_back_once() {
        let mut m = MemSystem::new(&[1 << 20], 1 << 20, 1.0, 1.0);
        let mut log = EpochLog::default();
        log.touched.push((key(64), true));
        log.touched.push((key(64), true));
        log.touched.push((key(64), false));
        m.end_epoch(0, 10, std::iter::once(&log));
        assert_eq!(m.dram_bytes, 32);
        assert!(!m.holds(key(1 << 30)), "outside every region");
    }

    #[test]
    fn later_requests_merge_into_a_miss_in_flight() {
        let mut m = MemSystem::new(&[1 << 20], 1 << 20, 1.0, 1.0);
        let mut log = EpochLog::default();
        log.touched.push((key(0), false));
        log.touched.push((key(32), false));
        log.note_miss(key(0), 900);
        log.note_miss(key(0), 700);
        log.note_miss(key(32), 200);
        m.end_epoch(0, 256, std::iter::once(&log));
        // Present now, but the data comes with the earliest miss; a fill that has landed
        // by the epoch's end delays nothing.
        assert_eq!(m.lookup(key(0)), Some(700));
        assert_eq!(m.lookup(key(32)), Some(0));
        assert_eq!(m.lookup(key(64)), None);
        m.end_epoch(256, 512, std::iter::empty());
        assert_eq!(m.lookup(key(0)), Some(700));
        m.end_epoch(512, 768, std::iter::empty());
        assert_eq!(m.lookup(key(0)), Some(0), "landed: forgotten");
    }
}
