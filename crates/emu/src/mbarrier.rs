//! The state of one mbarrier object (PTX ISA "Parallel Synchronization and Communication
//! Instructions: mbarrier"), shared by the PTX emulator (`mbarrier.*`, bulk and tensor copies)
//! and the SASS emulator (`SYNCS.*`, `UTMALDG`, `UBLKCP`), so both apply the same rules with
//! the same messages.
//!
//! A barrier expects `expected` arrivals per phase; a phase completes when its pending
//! arrival count and its transaction count are both zero, and the next phase starts with
//! `expected` arrivals pending. The parity of the current phase is `phase & 1`: a wait for
//! parity `p` is satisfied once the current phase's parity differs from `p` (the phase of
//! parity `p` completed).
//!
//! Misuse the hardware leaves undefined is an error naming the barrier's shared offset: more
//! arrivals than are pending, a transaction count that goes negative or past 2^20 - 1.

use crate::error::{EmuError, ErrorKind};

/// Largest arrival count of `mbarrier.init` (2^20 - 1), and largest transaction count.
pub const MAX_COUNT: u64 = (1 << 20) - 1;

fn rt(msg: String) -> EmuError {
    EmuError::new(ErrorKind::Runtime, msg)
}

/// One live mbarrier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mbar {
    /// Unique per initialisation in the CTA (an offset can be reused after an invalidation).
    pub id: u32,
    /// Arrivals each phase expects (`mbarrier.init`'s count, less `arrive_drop`s).
    pub expected: u32,
    /// Arrivals the current phase still waits for.
    pub pending: u32,
    /// Transaction bytes the current phase still waits for (expect-tx adds, complete-tx
    /// subtracts).
    pub tx: i64,
    /// Phases completed since init: the current phase is `phase`, its parity `phase & 1`.
    pub phase: u64,
    /// Where it was initialised, for messages (a PTX line; the SASS emulator's instruction
    /// index).
    pub line: u32,
}

impl Mbar {
    /// A barrier initialised to expect `count` arrivals per phase; `count` must be in
    /// 1..=2^20 - 1 (PTX ISA `mbarrier.init`).
    pub fn new(id: u32, count: u64, line: u32) -> Result<Mbar, EmuError> {
        if count == 0 || count > MAX_COUNT {
            return Err(rt(format!("mbarrier.init count {count} outside [1, 2^20 - 1]")));
        }
        Ok(Mbar { id, expected: count as u32, pending: count as u32, tx: 0, phase: 0, line })
    }

    /// Applies `arrive` arrivals (of which, with `drop`, each also leaves the expected count:
    /// `arrive_drop`) and `tx` transaction bytes (positive: expect-tx, negative: complete-tx)
    /// to the barrier at shared offset `off` (for messages). Returns whether the current phase
    /// completed.
    pub fn update(&mut self, off: u32, arrive: u32, drop: bool, tx: i64) -> Result<bool, EmuError> {
        if arrive > self.pending {
            return Err(rt(format!(
                "mbarrier at shared offset {off}: {arrive} arrival(s) in phase {} with only {} of {} pending (more arrivals than its expected count)",
                self.phase, self.pending, self.expected
            )));
        }
        let t = self.tx + tx;
        if t < 0 {
            return Err(rt(format!(
                "mbarrier at shared offset {off}: transaction count would go negative in phase {} ({} bytes expected, {} completed)",
                self.phase,
                self.tx,
                -tx
            )));
        }
        if t > MAX_COUNT as i64 {
            return Err(rt(format!("mbarrier at shared offset {off}: transaction count {t} exceeds 2^20 - 1")));
        }
        self.tx = t;
        self.pending -= arrive;
        if drop {
            self.expected -= arrive.min(self.expected);
        }
        if self.pending == 0 && self.tx == 0 {
            self.phase += 1;
            self.pending = self.expected;
            return Ok(true);
        }
        Ok(false)
    }

    /// Whether the phase of parity `parity` (its low bit) has completed: the current phase's
    /// parity is the other one (`mbarrier.try_wait.parity`).
    pub fn parity_complete(&self, parity: u64) -> bool {
        self.phase & 1 != parity & 1
    }

    /// What a wait that cannot complete is waiting for, for deadlock messages.
    pub fn describe(&self) -> String {
        format!(
            "in phase {} (parity {}), {} of {} arrivals pending, {} transaction bytes pending",
            self.phase,
            self.phase & 1,
            self.pending,
            self.expected,
            self.tx
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_completes_when_arrivals_and_bytes_are_both_in() {
        let mut b = Mbar::new(0, 2, 1).unwrap();
        assert!(!b.update(8, 1, false, 64).unwrap(), "one arrival and 64 bytes expected");
        assert!(!b.update(8, 1, false, 0).unwrap(), "the bytes are still missing");
        assert!(b.update(8, 0, false, -64).unwrap());
        assert_eq!((b.phase, b.pending, b.tx), (1, 2, 0));
        assert!(b.parity_complete(0) && !b.parity_complete(1));
        assert!(b.update(8, 3, false, 0).unwrap_err().message.contains("more arrivals"));
        assert!(b.update(8, 0, false, -1).unwrap_err().message.contains("would go negative"));
        assert!(Mbar::new(0, 0, 1).is_err() && Mbar::new(0, 1 << 20, 1).is_err());
    }
}
