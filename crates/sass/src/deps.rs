//! Basic blocks and the dependence graph inside each: what a schedule must keep in order.
//!
//! * **Blocks** start at the first instruction, at every branch target, and after every
//!   instruction that ends control flow (`BRA`, `EXIT`, `RET`, `CALL`, `JMP`, `BRX`).
//! * **Register dependences** (read after write, write after read, write after write) from
//!   [`crate::operands`], which takes unknown widths wide.
//! * **Memory order**: two accesses to a common space (global, shared, local; generic ones
//!   to both) stay in order when either writes.
//! * **Fences**: barriers, memory fences, scoreboard waits (`DEPBAR`), async-copy commits
//!   and waits, warpgroup synchronisation: nothing moves across them.
//!
//! What is *not* here yet (issue 10): timing edges from stall counts and scoreboards (the
//! latency table below is the evidence they will be built on).

use crate::disasm::Text;
use crate::operands::{operands, Operands, Reg};

/// A half-open range of instruction indices.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Block {
    pub start: usize,
    pub end: usize,
}

const ENDS_FLOW: &[&str] = &["BRA", "EXIT", "RET", "CALL", "JMP", "BRX", "JMX"];

fn root(opcode: &str) -> &str {
    opcode.split('.').next().unwrap_or(opcode)
}

fn ends_flow(t: &Text) -> bool {
    ENDS_FLOW.contains(&root(&t.opcode))
}

/// The basic blocks of a kernel's instructions (`text[i]` is the instruction at byte
/// `16 * i`; branch targets are byte offsets).
pub fn blocks(text: &[Text]) -> Vec<Block> {
    let mut leader = vec![false; text.len() + 1];
    leader[0] = true;
    leader[text.len()] = true;
    for (i, t) in text.iter().enumerate() {
        if ends_flow(t) {
            leader[i + 1] = true;
        }
        if matches!(root(&t.opcode), "BRA" | "JMP" | "CALL" | "BSSY") {
            for o in t.operands.split(',') {
                if let Some(h) = o.trim().strip_prefix("0x").and_then(|h| u64::from_str_radix(h, 16).ok()) {
                    let at = (h / 16) as usize;
                    if at < text.len() {
                        leader[at] = true;
                    }
                }
            }
        }
    }
    let starts: Vec<usize> = (0..=text.len()).filter(|&i| leader[i]).collect();
    starts.windows(2).map(|w| Block { start: w[0], end: w[1] }).collect()
}

/// Why `to` must stay after `from`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Why {
    /// `to` reads what `from` writes.
    Raw(Reg),
    /// `to` overwrites what `from` reads.
    War(Reg),
    /// Both write it.
    Waw(Reg),
    /// Memory accesses to a common space, one of them writing.
    Memory,
    /// One of them is a barrier or fence.
    Fence,
}

/// An edge of the dependence graph (indices into the kernel's instructions).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    pub why: Why,
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct Mem {
    global: bool,
    shared: bool,
    local: bool,
    writes: bool,
}

fn memory(op: &str) -> Option<Mem> {
    let r = root(op);
    let m = |global, shared, local, writes| Some(Mem { global, shared, local, writes });
    match r {
        "LDG" => m(true, false, false, false),
        "STG" | "RED" | "REDG" | "ATOMG" => m(true, false, false, true),
        "LDS" | "LDSM" => m(false, true, false, false),
        "STS" | "STSM" | "ATOMS" => m(false, true, false, true),
        // Reads global, writes shared.
        "LDGSTS" => m(true, true, false, true),
        "LDL" => m(false, false, true, false),
        "STL" => m(false, false, true, true),
        "LD" => m(true, true, true, false),
        "ST" | "ATOM" => m(true, true, true, true),
        _ => None,
    }
}

const FENCES: &[&str] = &[
    "BAR",
    "MEMBAR",
    "FENCE",
    "DEPBAR",
    "LDGDEPBAR",
    "ARRIVES",
    "SYNCS",
    "WARPSYNC",
    "BSYNC",
    "BSSY",
    "ERRBAR",
    "CCTL",
    "WARPGROUP",
    "HGMMA",
    "WGMMA",
    "UTMALDG",
    "UTMASTG",
    "UTMAREDG",
    "UTMAPF",
    "UTMACCTL",
    // `cp.async.bulk.commit_group`: the bulk group a later `DEPBAR.LE SB0` waits for.
    "UTMACMDFLUSH",
    "UBLKCP",
    // Leaves a convergence barrier (a thread's exit from a `BSSY`/`BSYNC` region).
    "BREAK",
    "NANOSLEEP",
    "YIELD",
    "BPT",
    // Warp-uniform reads of the active lanes (`VOTEU.ANY UR5, UPT, PT` before a warp's
    // aggregated atomic): kept where `ptxas` put them, as the verifier's order rule keeps them.
    "VOTEU",
    "ELECT",
];

/// Nothing moves across these, nor across a clock read (a profile's probe measures where it
/// stands).
fn is_fence(t: &Text) -> bool {
    FENCES.contains(&root(&t.opcode)) || t.operands.contains("SR_CLOCK") || t.operands.contains("SR_GLOBALTIMER")
}

/// The dependence edges inside `block` (each pair at most once, the first reason found:
/// RAW, then WAR, WAW, memory order, fence).
pub fn dependences(text: &[Text], block: Block) -> Vec<Edge> {
    let ops: Vec<Operands> = text[block.start..block.end].iter().map(operands).collect();
    let mut out = vec![];
    for a in 0..ops.len() {
        for b in a + 1..ops.len() {
            let (ta, tb) = (&text[block.start + a], &text[block.start + b]);
            let common = |x: &[Reg], y: &[Reg]| x.iter().find(|r| y.binary_search(r).is_ok()).copied();
            let why = if let Some(r) = common(&ops[a].defs, &ops[b].uses) {
                Some(Why::Raw(r))
            } else if let Some(r) = common(&ops[a].uses, &ops[b].defs) {
                Some(Why::War(r))
            } else if let Some(r) = common(&ops[a].defs, &ops[b].defs) {
                Some(Why::Waw(r))
            } else if is_fence(ta) || is_fence(tb) {
                Some(Why::Fence)
            } else {
                match (memory(&ta.opcode), memory(&tb.opcode)) {
                    (Some(x), Some(y))
                        if (x.writes || y.writes)
                            && (x.global && y.global || x.shared && y.shared || x.local && y.local) =>
                    {
                        Some(Why::Memory)
                    }
                    _ => None,
                }
            };
            if let Some(why) = why {
                out.push(Edge { from: block.start + a, to: block.start + b, why });
            }
        }
    }
    out
}
