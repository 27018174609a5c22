//! Shared-memory race detection. Between two barriers (an epoch), every shared byte
//! remembers which warp wrote it and which warps read it; a write after another
//! warp's read or write, or a read after another warp's write, in the same epoch is
//! a data race. Lanes of one warp never race with each other (they run in lockstep),
//! and atomics are not tracked.

#[derive(Copy, Clone, Default)]
struct Cell {
    epoch: u32,
    /// Writing warp + 1 (0: none this epoch; `ASYNC`: a bulk copy, landing `tag`).
    writer: u16,
    readers: u32,
    line: u32,
    tag: u32,
}

/// The writer of bytes a bulk copy landed (the async proxy).
const ASYNC: u16 = u16::MAX;

pub struct RaceShadow {
    cells: Vec<Cell>,
    epoch: u32,
}

/// A detected conflict: the other warp and the line of its access.
pub struct Conflict {
    pub other_warp: u32,
    pub other_line: u32,
    pub other_wrote: bool,
    /// The other access was a bulk copy's landing (`other_warp` is meaningless), with this tag.
    pub async_tag: Option<u32>,
}

impl RaceShadow {
    pub fn new(bytes: usize) -> RaceShadow {
        RaceShadow { cells: vec![Cell::default(); bytes], epoch: 1 }
    }

    pub fn new_epoch(&mut self) {
        self.epoch += 1;
    }

    /// The current epoch (barriers since the CTA started, plus one).
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Records that a bulk copy (landing `tag`, issued at `line`) wrote these bytes. It is
    /// not checked against earlier accesses: ordering a copy after the reads of the bytes it
    /// overwrites needs happens-before through arrive/wait, which is not tracked.
    pub fn async_write(&mut self, off: usize, len: usize, tag: u32, line: u32) {
        if let Some(cells) = self.cells.get_mut(off..off.saturating_add(len)) {
            for c in cells {
                *c = Cell { epoch: self.epoch, writer: ASYNC, readers: 0, line, tag };
            }
        }
    }

    /// Records an access of `len` bytes at `off` by `warp`; returns a conflict if any.
    /// `seen(tag)`: whether the warp observed the completion of bulk-copy landing `tag`.
    pub fn access(
        &mut self,
        off: usize,
        len: usize,
        warp: u32,
        write: bool,
        line: u32,
        seen: impl Fn(u32) -> bool,
    ) -> Option<Conflict> {
        let bit = 1u32 << (warp & 31);
        let me = warp as u16 + 1;
        for c in self.cells.get_mut(off..off.saturating_add(len))?.iter_mut() {
            if c.epoch != self.epoch {
                *c = Cell { epoch: self.epoch, writer: 0, readers: 0, line: 0, tag: 0 };
            }
            if c.writer == ASYNC {
                if !seen(c.tag) {
                    return Some(Conflict {
                        other_warp: 0,
                        other_line: c.line,
                        other_wrote: true,
                        async_tag: Some(c.tag),
                    });
                }
                if write {
                    // Synchronized with the copy: the warp's write takes over.
                    *c = Cell { epoch: self.epoch, writer: 0, readers: 0, line: 0, tag: 0 };
                }
            }
            if c.writer != 0 && c.writer != ASYNC && c.writer != me {
                return Some(Conflict {
                    other_warp: c.writer as u32 - 1,
                    other_line: c.line,
                    other_wrote: true,
                    async_tag: None,
                });
            }
            if write {
                let others = c.readers & !bit;
                if others != 0 {
                    return Some(Conflict {
                        other_warp: others.trailing_zeros(),
                        other_line: c.line,
                        other_wrote: false,
                        async_tag: None,
                    });
                }
                c.writer = me;
                c.line = line;
            } else {
                c.readers |= bit;
                if c.writer == 0 {
                    c.line = line;
                }
            }
        }
        None
    }
}
