//! Moving an instruction inside its block, and repairing what the move invalidates — the
//! action of a schedule search (CuAsmRL's "move up/down"), on real cubins.
//!
//! **Which moves are legal** ([`legal_range`], the action mask) comes from the dependence
//! graph ([`crate::deps`]): an instruction may pass only instructions it has no edge with, it
//! stays inside its block, and a few never move (control flow, and `BSSY`, whose target is
//! encoded relative to its own address). Branch targets never move: a block keeps its start
//! and length, only its inside is permuted.
//!
//! **What a move repairs** ([`move_instr`]):
//! * reuse flags — an operand kept in the reuse cache is for the *next* instruction; the
//!   flags of the instructions whose successor changed are cleared (always safe; the cache is
//!   a bandwidth saving);
//! * stall counts — each instruction keeps its own, then wherever a fixed-latency result is
//!   now read too soon the stall before the reader grows; for producers whose latency the
//!   table only bounds (`tight: false`) the reader keeps at least its original distance;
//! * scoreboard waits — a reader (or overwriter) that now comes before the wait that covered
//!   it gets the wait bit itself;
//! * instruction offsets in `.nv.info.KERNEL` (`EXIT`s, `S2R SR_CTAID`s, ...) and in the
//!   kernel's relocations move with their instructions.
//!
//! Timing is repaired against [`crate::verify::timing`] until it reports nothing; a move
//! that cannot be repaired (a result covered only by queue order, a warpgroup MMA) is
//! refused and the cubin left as it was.

use crate::control::Control;
use crate::cubin::{Cubin, INSTR_BYTES};
use crate::deps::{blocks, dependences, Block, Why};
use crate::disasm::Text;
use crate::latency;
use crate::operands::operands;
use crate::verify::{timing, Rule};

/// Instructions that never move: control flow, and those holding a PC-relative target.
const PINNED: &[&str] = &["BRA", "BRX", "JMP", "JMX", "CALL", "RET", "EXIT", "KILL", "BSSY", "BSYNC", "BREAK", "BPT"];

fn root(op: &str) -> &str {
    op.split('.').next().unwrap_or(op)
}

/// Why instruction `i` may not move at all, if so.
pub fn pinned(text: &[Text], i: usize) -> Option<String> {
    let t = text.get(i)?;
    PINNED.contains(&root(&t.opcode)).then(|| format!("`{}` is control flow or holds a relative target", t.line()))
}

/// The range of positions `[lo, hi]` instruction `i` may move to (its own included): as far
/// up and down its block as no dependence stops it. An error says why it may not move.
pub fn legal_range(text: &[Text], i: usize) -> Result<(usize, usize), String> {
    if i >= text.len() {
        return Err(format!("no instruction {i} (the kernel has {})", text.len()));
    }
    if let Some(why) = pinned(text, i) {
        return Err(why);
    }
    let b = block_of(text, i);
    let edges = dependences(text, b);
    let tied = |a: usize, c: usize| edges.iter().any(|e| (e.from, e.to) == (a.min(c), a.max(c)));
    let mut lo = i;
    while lo > b.start && !tied(lo - 1, i) && pinned(text, lo - 1).is_none() {
        lo -= 1;
    }
    let mut hi = i;
    while hi + 1 < b.end && !tied(i, hi + 1) && pinned(text, hi + 1).is_none() {
        hi += 1;
    }
    Ok((lo, hi))
}

/// Why `i` may not move by `by` (the first instruction in the way and the dependence).
fn blocked(text: &[Text], i: usize, by: isize) -> String {
    let b = block_of(text, i);
    let j = i as isize + by;
    if j < b.start as isize || j >= b.end as isize {
        return format!(
            "{:#06x} `{}` would leave its block ({:#06x}..{:#06x})",
            16 * i,
            text[i].line(),
            16 * b.start,
            16 * (b.end - 1)
        );
    }
    let edges = dependences(text, b);
    let passed: Vec<usize> = if by < 0 { (j as usize..i).rev().collect() } else { (i + 1..=j as usize).collect() };
    for k in passed {
        if let Some(why) = pinned(text, k) {
            return format!("it would pass {:#06x}: {why}", 16 * k);
        }
        if let Some(e) = edges.iter().find(|e| (e.from, e.to) == (i.min(k), i.max(k))) {
            let what = match e.why {
                Why::Raw(r) => format!("reads {r} written by"),
                Why::War(r) => format!("overwrites {r} read by"),
                Why::Waw(r) => format!("writes {r} as does"),
                Why::Memory => "accesses memory in conflict with".into(),
                Why::Fence => "may not cross".into(),
            };
            let (x, y) = (e.from.max(e.to), e.from.min(e.to));
            return format!("{:#06x} `{}` {what} {:#06x} `{}`", 16 * x, text[x].line(), 16 * y, text[y].line());
        }
    }
    "the move is not allowed".into()
}

fn block_of(text: &[Text], i: usize) -> Block {
    blocks(text).into_iter().find(|b| b.start <= i && i < b.end).unwrap_or(Block { start: i, end: i + 1 })
}

/// What a move did.
#[derive(Clone, Debug)]
pub struct Moved {
    pub from: usize,
    pub to: usize,
    /// The kernel's instruction texts in their new order.
    pub text: Vec<Text>,
    /// One line per repair made (`0x0120: stall 1 → 3`, ...).
    pub repairs: Vec<String>,
}

/// Cycles over which the repair keeps a reader's original distance from a producer whose
/// table latency is only a bound.
const KEEP_CAP: u32 = 30;

/// Moves instruction `i` of kernel `kernel` (an index into `cubin.kernels`) by `by`
/// positions (negative: earlier), given `nvdisasm`'s text of the kernel; repairs control
/// bits, attribute offsets and relocations. On an error nothing is changed.
pub fn move_instr(cubin: &mut Cubin, kernel: usize, text: &[Text], i: usize, by: isize) -> Result<Moved, String> {
    let n = cubin.kernels.get(kernel).ok_or_else(|| format!("no kernel {kernel}"))?.instrs.len();
    if text.len() != n {
        return Err(format!("{} texts for {n} instructions", text.len()));
    }
    if by == 0 {
        return Err("a move by 0 does nothing".into());
    }
    let (lo, hi) = legal_range(text, i)?;
    let j = i as isize + by;
    if j < lo as isize || j > hi as isize {
        return Err(blocked(text, i, by));
    }
    let j = j as usize;
    // order[new] = old.
    let mut order: Vec<usize> = (0..n).collect();
    let x = order.remove(i);
    order.insert(j, x);
    let mut place = vec![0usize; n];
    for (new, &old) in order.iter().enumerate() {
        place[old] = new;
    }
    let sm = cubin.sm();
    let backup = cubin.clone();
    let result = (|| {
        let old_instrs = cubin.kernels[kernel].instrs.clone();
        let keep = distances_to_keep(sm, &old_instrs, text, block_of(text, i));
        let k = &mut cubin.kernels[kernel];
        k.instrs = order
            .iter()
            .enumerate()
            .map(|(new, &old)| {
                let mut w = old_instrs[old];
                w.offset = (new * INSTR_BYTES) as u32;
                w
            })
            .collect();
        let new_text: Vec<Text> = order.iter().map(|&o| text[o].clone()).collect();
        let mut repairs = vec![];
        // Reuse flags of the instructions whose successor changed.
        let mut touched = vec![place[i]];
        if i > 0 {
            touched.push(place[i - 1]);
        }
        if j > 0 {
            touched.push(j - 1);
        }
        for &t in &touched {
            let mut c = k.instrs[t].control();
            if c.reuse != 0 {
                repairs.push(format!("{:#06x}: reuse flags {:#x} cleared", 16 * t, c.reuse));
                c.reuse = 0;
                k.instrs[t].set_control(c);
            }
        }
        let keep: Vec<(usize, usize, u32)> = keep.into_iter().map(|(p, c, d)| (place[p], place[c], d)).collect();
        repair_timing(sm, &mut k.instrs, &new_text, &keep, &mut repairs)?;
        remap_offsets(cubin, kernel, &place)?;
        Ok(Moved { from: i, to: j, text: new_text, repairs })
    })();
    if result.is_err() {
        *cubin = backup;
    }
    result
}

/// Reads of fixed-latency results in `block` whose producer's latency is only bounded:
/// (producer, reader, original stall cycles between them, capped).
fn distances_to_keep(sm: u32, instrs: &[crate::Instr], text: &[Text], block: Block) -> Vec<(usize, usize, u32)> {
    let mut out = vec![];
    for e in dependences(text, block) {
        let Why::Raw(r) = e.why else { continue };
        if operands(&text[e.to]).kept.contains(&r) || instrs[e.from].control().write_sb.is_some() {
            continue;
        }
        let tight = latency::entry(sm, &text[e.from].opcode).is_some_and(|x| x.tight);
        if tight || latency::variable(&text[e.from].opcode) {
            continue;
        }
        let d: u32 = (e.from..e.to).map(|x| instrs[x].control().stall as u32).sum();
        out.push((e.from, e.to, d.min(KEEP_CAP)));
    }
    out
}

/// Adds `extra` stall cycles on the instructions in `[from, to)`, latest first (4 bits each).
fn add_stall(instrs: &mut [crate::Instr], from: usize, to: usize, mut extra: u32, repairs: &mut Vec<String>) -> bool {
    for x in (from..to).rev() {
        if extra == 0 {
            break;
        }
        let mut c: Control = instrs[x].control();
        let add = extra.min(15 - c.stall as u32);
        if add > 0 {
            repairs.push(format!("{:#06x}: stall {} → {}", 16 * x, c.stall, c.stall as u32 + add));
            c.stall += add as u8;
            if c.stall >= 12 {
                // `ptxas` never sets the yield bit with a stall of 12 or more, and `nvdisasm`
                // rejects the combination on some opcodes (its `opex` tables): clear it.
                c.yield_bit = false;
            }
            instrs[x].set_control(c);
            extra -= add;
        }
    }
    extra == 0
}

fn repair_timing(
    sm: u32,
    instrs: &mut [crate::Instr],
    text: &[Text],
    keep: &[(usize, usize, u32)],
    repairs: &mut Vec<String>,
) -> Result<(), String> {
    for &(p, c, d) in keep {
        if p < c {
            let now: u32 = (p..c).map(|x| instrs[x].control().stall as u32).sum();
            if now < d && !add_stall(instrs, p, c, d - now, repairs) {
                return Err(format!("cannot keep {:#06x} far enough from {:#06x}", 16 * c, 16 * p));
            }
        }
    }
    for _ in 0..64 {
        let v = timing(sm, instrs, text);
        if v.is_empty() {
            return Ok(());
        }
        for v in &v {
            let at = v.at;
            let wait = |instrs: &mut [crate::Instr], k: u8, repairs: &mut Vec<String>| {
                let mut c = instrs[at].control();
                if c.wait >> k & 1 == 0 {
                    c.wait |= 1 << k;
                    instrs[at].set_control(c);
                    repairs.push(format!("{:#06x}: waits for SB{k}", 16 * at));
                }
            };
            match v.rule {
                Rule::TooSoon { need, got, .. } | Rule::WaitTooSoon { need, got, .. } => {
                    let from = v.from.unwrap_or(at).min(at);
                    if !add_stall(instrs, from, at, need - got, repairs) {
                        return Err(format!("{:#06x}: no room for {need} cycles after {:#06x}", 16 * at, 16 * from));
                    }
                }
                Rule::ReadInFlight { sb: Some(k), .. }
                | Rule::WrittenInFlight { sb: Some(k), .. }
                | Rule::WrittenWhileRead { sb: k, .. }
                    if k < 6 =>
                {
                    wait(instrs, k, repairs)
                }
                _ => return Err(format!("cannot repair: {}", v.describe(text))),
            }
        }
    }
    Err("the timing repair did not settle".into())
}

/// Moves the instruction offsets the kernel's attributes and relocations name.
fn remap_offsets(cubin: &mut Cubin, kernel: usize, place: &[usize]) -> Result<(), String> {
    let map = |o: u64| -> Result<u64, String> {
        let i = (o / INSTR_BYTES as u64) as usize;
        let rest = o % INSTR_BYTES as u64;
        place
            .get(i)
            .map(|&p| (p * INSTR_BYTES) as u64 + rest)
            .ok_or_else(|| format!("offset {o:#x} outside the kernel"))
    };
    let k = &cubin.kernels[kernel];
    if let Some(s) = k.info_section {
        let attrs: Vec<_> = k.attrs.iter().filter(|a| a.lists_instr_offsets()).cloned().collect();
        let data = &mut cubin.elf.sections[s].data;
        for a in attrs {
            for at in a.data.clone().step_by(4) {
                let o = u32::from_le_bytes(data[at..at + 4].try_into().expect("4 bytes"));
                let m = map(o as u64)? as u32;
                data[at..at + 4].copy_from_slice(&m.to_le_bytes());
            }
        }
    }
    let text_section = k.text_section as u32;
    const SHT_RELA: u32 = 4;
    const SHT_REL: u32 = 9;
    for s in cubin
        .elf
        .sections
        .iter_mut()
        .filter(|s| (s.sh_type == SHT_RELA || s.sh_type == SHT_REL) && s.info == text_section)
    {
        let size = if s.sh_type == SHT_RELA { 24 } else { 16 };
        for e in s.data.chunks_exact_mut(size) {
            let o = u64::from_le_bytes(e[..8].try_into().expect("8 bytes"));
            e[..8].copy_from_slice(&map(o)?.to_le_bytes());
        }
    }
    Ok(())
}
