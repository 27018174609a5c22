//! The memory footprint of one warp-instruction, as the timing model sees it: shared
//! memory wavefronts (bank conflicts), global sectors and lines (coalescing), local
//! memory lines. Memory instructions record each lane's access while they execute.

/// Where a logged access went.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Where {
    Shared,
    Local,
    Global,
    Param,
}

/// The accesses of the instruction being executed (reused between instructions).
#[derive(Default)]
pub struct AccessLog {
    /// Set by the timing model around memory instructions only (wgmma operand reads
    /// and printf's, for example, are not logged).
    pub enabled: bool,
    pub store: bool,
    pub entries: Vec<(Where, u64, u32)>,
}

impl AccessLog {
    pub fn start(&mut self, store: bool) {
        self.enabled = true;
        self.store = store;
        self.entries.clear();
    }

    pub fn push(&mut self, w: Where, addr: u64, len: usize) {
        if self.enabled {
            self.entries.push((w, addr, len as u32));
        }
    }
}

/// What an instruction's accesses cost.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Footprint {
    /// Shared-memory wavefronts (one per cycle per SM; bank conflicts add more).
    pub shared_wavefronts: u32,
    /// Local-memory 128-byte lines (L1).
    pub local_lines: u32,
    /// Distinct global 128-byte lines and 32-byte sectors (sector keys: address / 32).
    pub global_lines: u32,
    pub global_sectors: Vec<u64>,
    pub param: bool,
}

/// Sector size of L2 and DRAM transfers.
pub const SECTOR: u64 = 32;
const LINE: u64 = 128;

impl AccessLog {
    pub fn footprint(&self, out: &mut Footprint) {
        out.shared_wavefronts = 0;
        out.local_lines = 0;
        out.global_lines = 0;
        out.global_sectors.clear();
        out.param = false;
        let mut shared_words: Vec<u32> = Vec::new();
        let mut shared_bytes = 0u64;
        let mut local_bytes = 0u64;
        for &(w, addr, len) in &self.entries {
            match w {
                Where::Shared => {
                    shared_bytes += len as u64;
                    let first = addr / 4;
                    let last = (addr + len.max(1) as u64 - 1) / 4;
                    for word in first..=last {
                        shared_words.push(word as u32);
                    }
                }
                Where::Local => local_bytes += len as u64,
                Where::Global => {
                    let first = addr / SECTOR;
                    let last = (addr + len.max(1) as u64 - 1) / SECTOR;
                    for s in first..=last {
                        out.global_sectors.push(s);
                    }
                }
                Where::Param => out.param = true,
            }
        }
        if !shared_words.is_empty() {
            out.shared_wavefronts = wavefronts(&mut shared_words, shared_bytes);
        }
        if local_bytes > 0 {
            // Local memory is interleaved by thread, so a warp's access is coalesced.
            out.local_lines = local_bytes.div_ceil(LINE) as u32;
        }
        if !out.global_sectors.is_empty() {
            out.global_sectors.sort_unstable();
            out.global_sectors.dedup();
            let mut lines = 0u32;
            let mut prev = u64::MAX;
            for &s in &out.global_sectors {
                let l = s * SECTOR / LINE;
                if l != prev {
                    lines += 1;
                    prev = l;
                }
            }
            out.global_lines = lines;
        }
    }
}

/// Shared-memory wavefronts of a warp's access to `words` (4-byte word indices): each
/// of the 32 banks serves one distinct word per wavefront (equal words are broadcast),
/// and a wavefront carries at most 128 bytes.
pub fn wavefronts(words: &mut Vec<u32>, bytes: u64) -> u32 {
    words.sort_unstable();
    words.dedup();
    let mut per_bank = [0u32; 32];
    for &w in words.iter() {
        per_bank[(w % 32) as usize] += 1;
    }
    let conflicts = per_bank.iter().copied().max().unwrap_or(0);
    conflicts.max(bytes.div_ceil(128) as u32).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(addrs: impl Iterator<Item = u64>, len: usize) -> u32 {
        let mut log = AccessLog::default();
        log.start(false);
        for a in addrs {
            log.push(Where::Shared, a, len);
        }
        let mut f = Footprint::default();
        log.footprint(&mut f);
        f.shared_wavefronts
    }

    #[test]
    fn bank_conflicts() {
        // Consecutive words: one wavefront; a stride of 2 words: two-way conflict.
        assert_eq!(shared((0..32).map(|l| 4 * l), 4), 1);
        assert_eq!(shared((0..32).map(|l| 8 * l), 4), 2);
        // All lanes on one word: a broadcast.
        assert_eq!(shared((0..32).map(|_| 64), 4), 1);
        // A column of a 32×32 f32 tile: 32-way conflict.
        assert_eq!(shared((0..32).map(|l| 128 * l), 4), 32);
        // 16-byte vectors, consecutive: 512 bytes, four wavefronts.
        assert_eq!(shared((0..32).map(|l| 16 * l), 16), 4);
    }

    #[test]
    fn coalescing() {
        let mut log = AccessLog::default();
        log.start(false);
        for l in 0..32u64 {
            log.push(Where::Global, 1 << 44 | (4 * l), 4);
        }
        let mut f = Footprint::default();
        log.footprint(&mut f);
        assert_eq!((f.global_lines, f.global_sectors.len()), (1, 4));
        log.start(false);
        for l in 0..32u64 {
            log.push(Where::Global, 1 << 44 | (4096 * l), 4);
        }
        log.footprint(&mut f);
        assert_eq!((f.global_lines, f.global_sectors.len()), (32, 32));
    }
}
