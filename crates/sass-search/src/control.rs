//! Control-bit edits: the actions beyond CuAsmRL's moves (issue 12: "control-bit edits that
//! are known to pay on Hopper"). Two kinds, each legal only where this module's mask says so,
//! and each then checked by the verifier in [`crate::Env::apply`] like a move:
//!
//! * **set a reuse flag** — on source slot *i* of an instruction when the next instruction
//!   (same block) reads the same general register in slot *i* (`trident_sass::banks`: the
//!   slots and the forms the corpus established; only a (form, slot) pair `ptxas` was seen to
//!   flag, `banks::reuse_seen`), the instruction does not write it, is not guarded, and its
//!   encoded yield bit is set (a cleared one keeps nothing cached, as
//!   DeepGEMM's FFMA interleaving has it). The verifier does not look at reuse flags, so this
//!   rule is the only thing between a wrong flag and the hardware; it is the condition under
//!   which `ptxas` itself sets them. Clearing a flag is always safe but never lowers the SASS
//!   emulator's estimate, so it is not an action.
//! * **lower a stall by one** — where no fixed-latency result crossing the stall would then
//!   be read too soon (below). Raising one never lowers the estimate: not an action.
//!
//! Yield toggles are not actions: in the SASS emulator's model (one warp's clock at a time,
//! no sharing of an SM's issue slots) yielding gains nothing and only empties the reuse cache,
//! so no toggle could ever be kept; what DeepGEMM gains from it (other warps' MMAs overlapping
//! the promotion FFMAs) needs a model of warps competing for issue.
//!
//! **The stall mask** is a conservative, local version of the verifier's fixed-latency rule
//! (`verify::timing`), so it never offers an edit the verifier would reject (the tests walk
//! randomly and check that). Lowering instruction `j`'s stall shortens by one cycle the
//! distance from every instruction at or before `j` to every instruction after it. It is
//! offered only when: `j`'s stall is at least 2 (the yield bit is left as it is: `ptxas` clears
//! it on many short stalls too, `S03`–`S07`, so a lowered stall keeps a combination `nvdisasm`
//! reads — the tests disassemble every offered edit at once, on several states); `j` is no
//! control flow, barrier, fence,
//! scoreboard producer (its stall may cover when a scoreboard is set, which nothing models),
//! warpgroup MMA or variable-latency instruction; `j + 1` is in `j`'s block; `j` is more than
//! [`WINDOW`] stall cycles into its block (results from other blocks are not followed), or in
//! the entry block when no branch returns to it; and for every fixed-latency result of an
//! instruction `p` of the block at or before `j`, within [`WINDOW`] cycles: each reader after
//! `j` in the block still gets at least `latency::needed` cycles, its overwriter
//! at least the producer's table latency and one more (a late write landing after a newer
//! one), an unknown or `tight: false` table entry forbids the edit (the repairs trust loose
//! entries no further than `ptxas`'s own distance either), and a result not consumed in the
//! block before [`WINDOW`] cycles forbids it too (its reader may be in the next block), unless
//! the block ends the kernel (an unconditional `EXIT`).
//! Every reader counts, not only the first: an `ISETP`'s predicate read by a `SEL` 5 cycles on
//! (4 needed) and by a guarded store 13 cycles on (13 needed) forbids lowering a stall between
//! the two.

use std::sync::Arc;

use trident_sass::banks::{reuse_seen, slot_operand, source_slots};
use trident_sass::deps::blocks;
use trident_sass::disasm::Text;
use trident_sass::latency;
use trident_sass::operands::{operands, Operands, Reg};
use trident_sass::rewrite::pinned;
use trident_sass::Instr;

use crate::env::Action;

/// One control-bit edit of one instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Edit {
    /// Set the reuse flag of source slot `0..4`.
    SetReuse(u8),
    /// Lower the stall count by one cycle.
    LowerStall,
}

impl Edit {
    /// `reuse+ slot 1`, `stall-1`: for the moves JSON and the terminal.
    pub fn name(self) -> String {
        match self {
            Edit::SetReuse(s) => format!("reuse+ slot {s}"),
            Edit::LowerStall => "stall-1".into(),
        }
    }
}

/// Which actions a search may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// Move a memory instruction one slot up or down (CuAsmRL's action space).
    Moves,
    /// Control-bit edits only ([`Edit`]).
    Control,
    /// Both.
    All,
}

impl Family {
    /// `moves`, `control` or `all`.
    pub fn parse(s: &str) -> Result<Family, String> {
        match s {
            "moves" => Ok(Family::Moves),
            "control" => Ok(Family::Control),
            "all" => Ok(Family::All),
            _ => Err(format!("unknown action family `{s}` (moves, control, all)")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Family::Moves => "moves",
            Family::Control => "control",
            Family::All => "all",
        }
    }

    pub fn moves(self) -> bool {
        self != Family::Control
    }

    pub fn edits(self) -> bool {
        self != Family::Moves
    }
}

/// Stall cycles beyond which no fixed-latency result needs watching: more than any
/// requirement of the latency table (the largest is `HMMA`'s 24), well inside the verifier's
/// 64-cycle horizon.
pub const WINDOW: u32 = 32;

/// Opcodes whose stall is never lowered beyond control flow ([`pinned`]): barriers, fences,
/// scoreboard waits, warpgroup MMAs and their fences, asynchronous-copy machinery.
const KEEP_STALL: &[&str] = &[
    "BAR",
    "DEPBAR",
    "MEMBAR",
    "FENCE",
    "ERRBAR",
    "CCTL",
    "WARPSYNC",
    "WARPGROUP",
    "HGMMA",
    "SYNCS",
    "NANOSLEEP",
    "UTMALDG",
    "UTMASTG",
    "UBLKCP",
    "UTMACMDFLUSH",
    "ELECT",
    "R2UR",
];

fn root(op: &str) -> &str {
    op.split('.').next().unwrap_or(op)
}

/// What the edit mask needs of one schedule, computed once.
struct View<'a> {
    sm: u32,
    instrs: &'a [Instr],
    text: &'a [Text],
    ops: Vec<Operands>,
    /// `block[i]`: the start and end of `i`'s block.
    block: Vec<(usize, usize)>,
    /// `pre[i]`: stall cycles of the instructions before `i` (so `pre[k] - pre[p]` is the
    /// distance from `p`'s issue to `k`'s on a straight line).
    pre: Vec<u32>,
    /// Whether some branch jumps back to instruction 0 (then the entry block has a past).
    entry_reentered: bool,
}

impl<'a> View<'a> {
    fn new(sm: u32, instrs: &'a [Instr], text: &'a [Text]) -> View<'a> {
        let n = instrs.len().min(text.len());
        let mut block = vec![(0, n); n];
        for b in blocks(&text[..n]) {
            for x in block.iter_mut().take(b.end.min(n)).skip(b.start) {
                *x = (b.start, b.end.min(n));
            }
        }
        let mut pre = vec![0u32; n + 1];
        for i in 0..n {
            pre[i + 1] = pre[i] + instrs[i].control().stall as u32;
        }
        let entry_reentered = text[..n].iter().any(|t| {
            matches!(root(&t.opcode), "BRA" | "JMP" | "CALL") && t.operands.split(',').any(|o| o.trim() == "0x0")
        });
        View {
            sm,
            instrs: &instrs[..n],
            text: &text[..n],
            ops: text[..n].iter().map(operands).collect(),
            block,
            pre,
            entry_reentered,
        }
    }

    fn reuse_ok(&self, j: usize, slot: u8) -> bool {
        let (n, s) = (self.text.len(), slot as usize);
        if j + 1 >= n || self.block[j].1 != self.block[j + 1].1 || s >= 4 {
            return false;
        }
        let c = self.instrs[j].control();
        if c.reuse >> s & 1 == 1 || !c.yield_bit {
            return false;
        }
        let t = &self.text[j];
        if !(t.predicate.is_empty() || t.predicate == "@PT") {
            return false;
        }
        let (Some(a), Some(b)) = (source_slots(t), source_slots(&self.text[j + 1])) else { return false };
        match a[s] {
            Some(r) => {
                b[s] == Some(r)
                    && !self.ops[j].defs.contains(&Reg::R(r))
                    && slot_operand(t, s).is_some()
                    && reuse_seen(t, s)
            }
            None => false,
        }
    }

    /// Whether the block ending before `end` ends with an unconditional `EXIT` (no block
    /// after it reads anything).
    fn ends_kernel(&self, end: usize) -> bool {
        let Some(t) = end.checked_sub(1).and_then(|i| self.text.get(i)) else { return false };
        root(&t.opcode) == "EXIT" && (t.predicate.is_empty() || t.predicate == "@PT")
    }

    fn stall_ok(&self, j: usize) -> bool {
        let n = self.text.len();
        let c = self.instrs[j].control();
        let t = &self.text[j];
        if c.stall < 2 || j + 1 >= n || self.block[j + 1] != self.block[j] {
            return false;
        }
        if pinned(self.text, j).is_some() || KEEP_STALL.contains(&root(&t.opcode)) {
            return false;
        }
        if c.write_sb.is_some() || c.read_sb.is_some() || latency::variable(&t.opcode) {
            return false;
        }
        let (b0, b1) = self.block[j];
        let dist = |p: usize, k: usize| self.pre[k] - self.pre[p];
        // Results from another block may still be pending this early in the block.
        if (b0 != 0 || self.entry_reentered) && dist(b0, j + 1) <= WINDOW {
            return false;
        }
        for p in (b0..=j).rev() {
            if dist(p, j + 1) > WINDOW {
                break;
            }
            let tp = &self.text[p];
            let cp = self.instrs[p].control();
            if self.ops[p].defs.is_empty() || cp.write_sb.is_some() || latency::variable(&tp.opcode) {
                continue;
            }
            let entry = latency::entry(self.sm, &tp.opcode);
            for r in &self.ops[p].defs {
                // Overwritten before the edited stall: this result no longer crosses it.
                if (p + 1..=j).any(|k| self.ops[k].defs.contains(r) && !self.ops[k].kept.contains(r)) {
                    continue;
                }
                // Every read of it after `j` (not just the first: a predicated store may need
                // 13 cycles where an ALU reader before it needed 4), until an unconditional
                // overwrite ends it or it is older than any requirement.
                let mut ended = false;
                for k in j + 1..b1 {
                    if dist(p, k) > WINDOW + 1 {
                        ended = true;
                        break;
                    }
                    let o = &self.ops[k];
                    let reads = o.uses.contains(r) && !o.kept.contains(r);
                    let kept = o.kept.contains(r);
                    let writes = o.defs.contains(r) || kept;
                    if !reads && !writes {
                        continue;
                    }
                    let Some(e) = entry.filter(|e| e.tight) else { return false };
                    let got = dist(p, k) - 1;
                    let predicate = matches!(r, Reg::P(_) | Reg::Up(_));
                    if reads {
                        match latency::needed(self.sm, &tp.opcode, &self.text[k].opcode, predicate) {
                            Some(need) if got >= need => {}
                            _ => return false,
                        }
                    }
                    if writes && got < e.cycles as u32 + 1 {
                        return false;
                    }
                    // A predicated write keeps the old value in some lanes: keep following it.
                    if writes && !kept {
                        ended = true;
                        break;
                    }
                }
                if !ended && !self.ends_kernel(b1) && dist(p, b1) <= WINDOW + 1 {
                    return false; // it may be read in a block after this one
                }
            }
        }
        true
    }
}

/// The legal control-bit edits of a schedule (kernel `instrs` with `text`, on `sm`), in
/// position order: each reuse flag that may be set, each stall that may be lowered.
pub fn edits(sm: u32, instrs: &[Instr], text: &[Text]) -> Vec<Action> {
    let v = View::new(sm, instrs, text);
    let mut out = vec![];
    for j in 0..v.text.len() {
        for slot in 0..4u8 {
            if v.reuse_ok(j, slot) {
                out.push(Action::Edit { at: j, edit: Edit::SetReuse(slot) });
            }
        }
        if v.stall_ok(j) {
            out.push(Action::Edit { at: j, edit: Edit::LowerStall });
        }
    }
    out
}

/// Whether `edit` of instruction `at` is legal (the same rules as [`edits`], for one).
pub fn legal(sm: u32, instrs: &[Instr], text: &[Text], at: usize, edit: Edit) -> bool {
    let v = View::new(sm, instrs, text);
    at < v.text.len()
        && match edit {
            Edit::SetReuse(s) => v.reuse_ok(at, s),
            Edit::LowerStall => v.stall_ok(at),
        }
}

/// Makes `edit` on instruction `at`: its control bits in `instrs`, and for a reuse flag the
/// `.reuse` that `nvdisasm` will print on the operand in `text`. The caller checked it is legal.
pub fn make(instrs: &mut [Instr], text: &mut [Text], at: usize, edit: Edit) {
    let Some(ins) = instrs.get_mut(at) else { return };
    let mut c = ins.control();
    match edit {
        Edit::SetReuse(s) => {
            c.reuse |= 1 << s;
            if let Some(t) = text.get_mut(at) {
                if let Some(i) = slot_operand(t, s as usize) {
                    let mut ops: Vec<String> = t.operands.split(',').map(str::to_string).collect();
                    if !ops[i].ends_with(".reuse") {
                        ops[i].push_str(".reuse");
                    }
                    t.operands = ops.join(",");
                }
            }
        }
        Edit::LowerStall => c.stall = c.stall.saturating_sub(1).max(1),
    }
    ins.set_control(c);
}

/// A state's edit mask, computed when first asked for.
pub(crate) type Lazy = std::sync::OnceLock<Arc<Vec<Action>>>;

#[cfg(test)]
mod tests {
    use super::*;
    use trident_sass::verify::timing;
    use trident_sass::Control;

    fn prog(lines: &[(&str, &str, &str, u8)]) -> (Vec<Instr>, Vec<Text>) {
        let instrs = lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let c = Control { stall: l.3, yield_bit: true, write_sb: None, read_sb: None, wait: 0, reuse: 0 };
                Instr { offset: 16 * i as u32, lo: 0, hi: c.encode(0) }
            })
            .collect();
        let text =
            lines.iter().map(|l| Text { predicate: l.0.into(), opcode: l.1.into(), operands: l.2.into() }).collect();
        (instrs, text)
    }

    fn stall_edits(sm: u32, instrs: &[Instr], text: &[Text]) -> Vec<usize> {
        edits(sm, instrs, text)
            .into_iter()
            .filter_map(|a| match a {
                Action::Edit { at, edit: Edit::LowerStall } => Some(at),
                _ => None,
            })
            .collect()
    }

    /// An `ISETP`'s predicate read by a `SEL` with a cycle to spare and by a guarded store
    /// exactly 13 cycles on: no stall between the producer and the store may go, although the
    /// first reader after it would allow it; with two cycles more before the store, one may.
    #[test]
    fn every_reader_of_a_crossing_result_counts() {
        let tight = [
            ("", "ISETP.GE.AND", "P0,PT,R1,R2,PT", 2),
            ("", "IADD3", "R6,R7,R8,RZ", 3),
            ("", "SEL", "R3,R4,R5,P0", 4),
            ("", "FADD", "R9,R10,R11", 4),
            ("@P0", "STG.E", "[R12.64],R3", 1),
            ("", "EXIT", "", 5),
        ];
        let (instrs, text) = prog(&tight);
        assert!(timing(80, &instrs, &text).is_empty());
        assert_eq!(stall_edits(80, &instrs, &text), Vec::<usize>::new());
        // The verifier agrees that lowering the IADD3's stall breaks the store's predicate.
        let (mut ins, mut t) = (instrs.clone(), text.clone());
        make(&mut ins, &mut t, 1, Edit::LowerStall);
        assert!(!timing(80, &ins, &t).is_empty());

        let mut loose = tight;
        loose[3].3 = 6;
        let (instrs, text) = prog(&loose);
        assert!(timing(80, &instrs, &text).is_empty());
        let offered = stall_edits(80, &instrs, &text);
        assert!(offered.contains(&1), "{offered:?}");
        for at in offered {
            let (mut ins, mut t) = (instrs.clone(), text.clone());
            make(&mut ins, &mut t, at, Edit::LowerStall);
            assert!(timing(80, &ins, &t).is_empty(), "offered {at}");
        }
    }

    #[test]
    fn a_reuse_flag_needs_the_same_register_in_the_same_slot_next() {
        let (instrs, text) = prog(&[
            ("", "FFMA", "R1,R2,R4,R6", 2),
            ("", "FFMA", "R3,R2,R4,R8", 2),
            ("", "FFMA", "R5,R4,R2,R8", 2),
            ("", "FFMA", "R4,R4,R2,R8", 2),
            ("", "FFMA", "R7,R4,R2,R9", 2),
            ("", "EXIT", "", 5),
        ]);
        let reuse: Vec<(usize, u8)> = edits(80, &instrs, &text)
            .into_iter()
            .filter_map(|a| match a {
                Action::Edit { at, edit: Edit::SetReuse(s) } => Some((at, s)),
                _ => None,
            })
            .collect();
        // 0 → 1: R2 and R4 in slots 0 and 1. 1 → 2: R8 in slot 2 (R2 and R4 swapped slots). 2 → 3: all three.
        // 3 → 4: R4 is written by 3 (its cached value would be stale), only R2 in slot 1.
        assert_eq!(reuse, vec![(0, 0), (0, 1), (1, 2), (2, 0), (2, 1), (2, 2), (3, 1)]);
        let (mut ins, mut t) = (instrs.clone(), text.clone());
        make(&mut ins, &mut t, 2, Edit::SetReuse(1));
        assert_eq!(t[2].operands, "R5,R4,R2.reuse,R8");
        assert_eq!(ins[2].control().reuse, 0b10);
        assert!(!legal(80, &ins, &t, 2, Edit::SetReuse(1)), "already set");
    }
}
