//! The action mask, computed once per schedule in one linear pass and updated in constant
//! time after a move.
//!
//! `rewrite::legal_range(text, i)` answers "how far may `i` move" by building the
//! dependence graph of `i`'s whole block (every pair of its instructions) and walking out
//! from `i`. The search's actions move an instruction by one slot only, and for that
//! `legal_range` looks at exactly one pair: `i` may move up iff `i` is not pinned, `i - 1`
//! is in the same block, is not pinned, and has no dependence edge with `i` (down likewise
//! with `i + 1`). Whether two instructions have an edge depends on their two texts alone
//! (`deps::dependences` decides each pair by itself: registers, memory spaces, fences), so
//! the mask is one bit per adjacent pair — "these two may swap" — and a move of `i` to
//! `i ± 1` only changes the bits of the three pairs around the swapped two.
//!
//! The edge itself is still the toolkit's: `dependences` is asked about the two-instruction
//! range `[j, j + 2)`, so this module repeats none of its rules. Blocks are computed once per
//! full pass; legal moves never change them (control flow and branch targets are pinned,
//! and a block keeps its start and length). The tests compare this mask with `legal_range`
//! on every state of random walks on real kernels.

use std::sync::Arc;

use trident_sass::deps::{blocks, dependences, Block};
use trident_sass::disasm::Text;
use trident_sass::rewrite::pinned;

use crate::env::{is_memory, Action};

/// The legal one-slot moves of a schedule: for each adjacent pair of instructions, whether
/// they may swap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mask {
    /// `swap[j]`: instructions `j` and `j + 1` are in the same block, neither is pinned, and
    /// no dependence ties them. Shared between states until a move changes it.
    swap: Arc<Vec<bool>>,
    /// `same_block[j]`: `j + 1` is not a block leader (fixed for the kernel).
    same_block: Arc<Vec<bool>>,
}

/// Whether `j` and `j + 1` may swap (`same`: they share a block).
fn may_swap(text: &[Text], j: usize, same: bool) -> bool {
    same && pinned(text, j).is_none()
        && pinned(text, j + 1).is_none()
        && dependences(text, Block { start: j, end: j + 2 }).is_empty()
}

impl Mask {
    /// The mask of `text`: one pass over its adjacent pairs.
    pub fn new(text: &[Text]) -> Mask {
        let n = text.len();
        let mut same_block = vec![false; n.saturating_sub(1)];
        for b in blocks(text) {
            for s in same_block.iter_mut().take(b.end.saturating_sub(1)).skip(b.start) {
                *s = true;
            }
        }
        let swap = (0..n.saturating_sub(1)).map(|j| may_swap(text, j, same_block[j])).collect();
        Mask { swap: Arc::new(swap), same_block: Arc::new(same_block) }
    }

    /// The mask after the instructions at `lo` and `lo + 1` swapped (`text`: the new order).
    /// Only the pairs `(lo - 1, lo)`, `(lo, lo + 1)`, `(lo + 1, lo + 2)` have a new member.
    pub fn after_swap(&self, text: &[Text], lo: usize) -> Mask {
        let mut swap = (*self.swap).clone();
        if swap.len() != text.len().saturating_sub(1) {
            // Not this kernel's text: start over rather than answer wrongly.
            return Mask::new(text);
        }
        for j in lo.saturating_sub(1)..=lo + 1 {
            if j < swap.len() {
                swap[j] = may_swap(text, j, self.same_block[j]);
            }
        }
        Mask { swap: Arc::new(swap), same_block: self.same_block.clone() }
    }

    /// Whether the instruction at `i` may move one slot up (`up`) or down.
    pub fn allows(&self, i: usize, up: bool) -> bool {
        if up {
            i > 0 && self.swap.get(i - 1).copied().unwrap_or(false)
        } else {
            self.swap.get(i).copied().unwrap_or(false)
        }
    }

    /// The legal actions: each memory instruction of `text`, one slot up or down where its
    /// neighbour may swap with it (in position order, up before down — `legal_range`'s order).
    pub fn actions(&self, text: &[Text]) -> Vec<Action> {
        let mut out = vec![];
        for (i, t) in text.iter().enumerate() {
            if !is_memory(t) {
                continue;
            }
            for up in [true, false] {
                if self.allows(i, up) {
                    out.push(Action::Move { at: i, up });
                }
            }
        }
        out
    }
}
