//! Register-file banks and the operand reuse cache: which general register each source
//! *slot* of an instruction reads (the slots the control bits' four reuse flags name), which
//! bank it sits in, and how many cycles a set of bank reads costs beyond the issue itself.
//! The SASS emulator's cycle estimate charges these cycles, and the schedule search's reuse
//! edits are legal only where this module says the next instruction reads the same register
//! in the same slot.
//!
//! **Slots.** Reuse flag *i* belongs to the *i*-th source operand, counted after the
//! destinations: `FFMA R9, R6.reuse, -R11.reuse, R8` has flags `0b0011`, `SHF.R.U32.HI R0,
//! RZ, 0x3, R6.reuse` `0b0100`, `ISETP.GE.AND P1, PT, R0, R3.reuse, PT` (two predicate
//! destinations) `0b0010`. Established on `ptxas` 13.0's code for Triton's softmax, layer norm,
//! matmul and attention (sm_80 and sm_90a): every `.reuse` operand `nvdisasm` prints sits at
//! the slot whose flag is set (the search crate's `tests/control.rs` checks it). Only the
//! single-register ALU forms below are modelled; anything else (64-bit pairs, tensor-core
//! fragments, memory instructions) has no slots here, so it pays no conflict and takes no
//! reuse edit.
//!
//! **Banks** (the model, not a measurement): two banks, bank = register number mod 2, and a
//! bank delivers two 32-bit operands per issue — after Jia et al., "Dissecting the NVIDIA
//! Volta GPU Architecture via Microbenchmarking" (2018) and their Turing paper (2019): two
//! 64-bit-wide banks from Volta on, where only an instruction whose three source registers
//! all sit in one bank conflicts. Taken unchanged for sm_80 and sm_90: no public
//! microbenchmark of Ampere's or Hopper's register banks was found, and nothing here was
//! calibrated on a GPU. A register read twice by one instruction is read once; `RZ` is not
//! read; an operand served by the reuse cache is not read from its bank.
//!
//! **The reuse cache** (the model): an operand flagged `.reuse` stays in its slot's cache
//! for the next instruction the warp issues; that instruction's read of the same register
//! in the same slot costs no bank read. Maxwell's reverse engineering (maxas) describes the
//! cache this way; later generations keep the flags (`ptxas` sets hundreds in the corpus).
//! An instruction whose encoded yield bit is clear keeps nothing: DeepGEMM's FFMA
//! interleaving (2025) clears reuse flags where it flips that bit, because a warp that
//! yields cannot expect its cached operands back, and `ptxas` sets the bit on every
//! instruction with reuse flags in the corpus (the control text's `:Y`).

use crate::disasm::Text;

/// The general register (`Rn`, not `RZ`) each source slot reads, for the four slots the
/// reuse flags name; `None` where the slot holds something else (an immediate, a constant,
/// `RZ`, a predicate) or does not exist.
pub type Slots = [Option<u16>; 4];

/// Banks of the general register file in the model.
pub const BANKS: u16 = 2;

/// Operands one bank delivers per issue.
pub const READS_PER_BANK: u32 = 2;

/// ALU instructions whose sources are single 32-bit registers, immediates or constants,
/// with the destinations first, and whose slots the corpus established (`ptxas` set flags on
/// them at the operands `nvdisasm` printed `.reuse` on). Not every form numbers its sources
/// in order: `FADD Rd, Ra, Rb` encodes `Rb` in the third slot (an edit that set `FADD`'s
/// second flag made a word `nvdisasm` rejects: "undefined value 0xd1 for table
/// TABLES_opex_3"), so a form stays out until its slots are seen.
const MODELLED: &[&str] = &["FFMA", "FMUL", "FSETP", "IADD3", "IMAD", "LOP3", "SHF", "ISETP", "LEA", "VIADD"];

/// The (form, slot) pairs on which `ptxas` was seen to set a reuse flag in the corpus, where
/// `nvdisasm` printed `.reuse` on the operand this module names: the only flags a search may
/// set. A flag on a slot never seen could name another operand than intended and still encode
/// — the hardware would then serve a stale value, which no emulator run would show.
const SEEN: &[(&str, &[usize])] = &[
    ("FFMA", &[0, 1, 2]),
    ("FMUL", &[0, 1]),
    ("FSETP", &[0]),
    ("IADD3", &[0]),
    ("IMAD", &[0]),
    ("ISETP", &[0, 1]),
    ("LEA", &[0]),
    ("LOP3", &[0, 2]),
    ("SHF", &[0, 2]),
    ("VIADD", &[0]),
];

/// Whether `ptxas` was seen to flag source slot `slot` of `t`'s form (see [`SEEN`]).
pub fn reuse_seen(t: &Text, slot: usize) -> bool {
    let r = root(&t.opcode);
    source_slots(t).is_some() && SEEN.iter().any(|(op, slots)| *op == r && slots.contains(&slot))
}

fn root(op: &str) -> &str {
    op.split('.').next().unwrap_or(op)
}

/// The bank of general register `r`.
pub fn bank(r: u16) -> u16 {
    r % BANKS
}

/// `-|R4.H1|.reuse` → `R4`'s number; `RZ`, predicates, immediates, constants → `None`.
fn register(operand: &str) -> Option<u16> {
    let o = operand.trim().trim_end_matches(".reuse");
    let o = o.trim_start_matches(['-', '!', '~', '|']).trim_end_matches('|');
    let o = o.split('.').next().unwrap_or(o);
    let d = o.strip_prefix('R')?;
    if d.is_empty() || !d.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    d.parse().ok()
}

fn predicate(operand: &str) -> bool {
    let o = operand.trim().trim_start_matches('!');
    o == "PT" || o.strip_prefix('P').is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()))
}

/// How many leading operands of `t` are destinations, for the modelled forms; `None` for a
/// form whose slots are not established.
fn destinations(t: &Text, ops: &[&str]) -> Option<usize> {
    let opcode = t.opcode.as_str();
    let r = root(opcode);
    if !MODELLED.contains(&r) || ops.is_empty() {
        return None;
    }
    // 64-bit pairs (`IMAD.WIDE`'s and `IMAD.HI`'s addend) read two registers through one slot.
    if r == "IMAD" && opcode.split('.').any(|m| m == "WIDE" || m == "HI") {
        return None;
    }
    match r {
        // A predicate result and its companion (`P1, PT`).
        "FSETP" | "ISETP" => Some(2),
        // `LOP3.LUT P0, RZ, ...` writes a predicate and a register: not the corpus' form.
        "LOP3" if predicate(ops[0]) => None,
        // Carry-outs follow the result (`IADD3 R4, P0, P1, R2, ...`, `LEA R80, P0, ...`).
        "IADD3" | "LEA" => Some(1 + ops[1..].iter().take_while(|o| predicate(o)).count()),
        _ => Some(1),
    }
}

/// The registers `t`'s source slots read, or `None` when its form is not modelled.
pub fn source_slots(t: &Text) -> Option<Slots> {
    let ops: Vec<&str> = if t.operands.is_empty() { vec![] } else { t.operands.split(',').collect() };
    let d = destinations(t, &ops)?;
    let mut s = [None; 4];
    for (slot, o) in ops.iter().skip(d).take(4).enumerate() {
        s[slot] = register(o);
    }
    Some(s)
}

/// The operand index (in `t.operands`, comma-separated) of source slot `slot`, for the
/// modelled forms: where a reuse edit puts or takes `.reuse` in the text.
pub fn slot_operand(t: &Text, slot: usize) -> Option<usize> {
    let ops: Vec<&str> = if t.operands.is_empty() { vec![] } else { t.operands.split(',').collect() };
    let i = destinations(t, &ops)? + slot;
    (slot < 4 && i < ops.len()).then_some(i)
}

/// Extra issue cycles for reading `slots`, where `served[i]` says slot *i* came from the
/// reuse cache: a bank asked for more than [`READS_PER_BANK`] distinct registers takes a
/// cycle more per further pair. With two banks and at most three register sources, that is
/// one cycle when all three are distinct, uncached and in one bank; zero otherwise.
pub fn conflict_cycles(slots: &Slots, served: [bool; 4]) -> u32 {
    let mut read: Vec<u16> = vec![];
    for (r, hit) in slots.iter().zip(served) {
        if let Some(r) = r {
            if !hit && !read.contains(r) {
                read.push(*r);
            }
        }
    }
    (0..BANKS)
        .map(|b| {
            let n = read.iter().filter(|&&r| bank(r) == b).count() as u32;
            n.div_ceil(READS_PER_BANK).saturating_sub(1)
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(op: &str, ops: &str) -> Text {
        Text { predicate: String::new(), opcode: op.into(), operands: ops.into() }
    }

    #[test]
    fn slots_follow_the_destinations() {
        assert_eq!(source_slots(&t("FFMA", "R9,R6.reuse,-R11.reuse,R8")), Some([Some(6), Some(11), Some(8), None]));
        assert_eq!(source_slots(&t("SHF.R.U32.HI", "R0,RZ,0x3,R6.reuse")), Some([None, None, Some(6), None]));
        assert_eq!(source_slots(&t("ISETP.GE.AND", "P1,PT,R0,R3.reuse,PT")), Some([Some(0), Some(3), None, None]));
        assert_eq!(
            source_slots(&t("FSETP.GT.AND", "P1,PT,|R10|.reuse,8.5e+37,PT")),
            Some([Some(10), None, None, None])
        );
        assert_eq!(source_slots(&t("LEA", "R80,P0,R6.reuse,c[0x0][0x168],0x1")), Some([Some(6), None, None, None]));
        assert_eq!(
            source_slots(&t("IADD3.X", "R7,R88.reuse,c[0x0][0x174],R3,P1,P0")),
            Some([Some(88), None, Some(3), None])
        );
        assert_eq!(source_slots(&t("FADD", "R88,R37,-R53.reuse")), None, "its second source is the third slot");
        assert_eq!(source_slots(&t("IMAD.WIDE", "R68,R61,R66,c[0x0][0x168]")), None, "a pair through one slot");
        assert_eq!(source_slots(&t("LDG.E", "R2,[R2.64]")), None);
        assert_eq!(source_slots(&t("LOP3.LUT", "P0,RZ,R2,0x30,RZ,0xc0,!PT")), None);
        assert_eq!(slot_operand(&t("ISETP.GE.AND", "P1,PT,R0,R3,PT"), 1), Some(3));
        assert!(reuse_seen(&t("FFMA", "R1,R2,R3,R4"), 2) && !reuse_seen(&t("LEA", "R1,P0,R2,R3,0x2"), 1));
        assert!(!reuse_seen(&t("IMAD.WIDE", "R4,R2,R3,R4"), 0), "not a modelled form");
        assert_eq!(slot_operand(&t("FMUL", "R1,R2,R3"), 2), None);
    }

    #[test]
    fn three_distinct_uncached_reads_in_one_bank_cost_a_cycle() {
        let s = [Some(2), Some(4), Some(6), None];
        assert_eq!(conflict_cycles(&s, [false; 4]), 1);
        assert_eq!(conflict_cycles(&s, [true, false, false, false]), 0, "the reuse cache serves one");
        assert_eq!(conflict_cycles(&[Some(2), Some(5), Some(6), None], [false; 4]), 0, "two banks");
        assert_eq!(conflict_cycles(&[Some(2), Some(2), Some(6), None], [false; 4]), 0, "one register read once");
        assert_eq!(conflict_cycles(&[Some(2), None, Some(6), None], [false; 4]), 0);
        assert_eq!(conflict_cycles(&[None; 4], [false; 4]), 0);
    }
}
