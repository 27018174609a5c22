//! The verifier: does a kernel's SASS respect its timing rules, and is a rewritten kernel a
//! legal reordering of the original? Separate code from the dependence graph that decides
//! which moves a search may try ([`crate::deps`]): a bug in one is caught by the other. Both
//! read operands through [`crate::operands`] and latencies from [`crate::latency`].
//!
//! **Timing** ([`timing`]): a forward data-flow over the kernel's control-flow graph (branch
//! targets, fall-through, calls and returns), so results in flight across a branch or a loop
//! back edge are followed. The state at each point:
//! * fixed-latency results in flight and the stall cycles since each issued: a read needs at
//!   least [`crate::latency::needed`] cycles (fewest over the paths that reach it);
//! * variable-latency results not yet known complete: a result is complete once its write
//!   scoreboard has been waited for (a wait-mask bit, or `DEPBAR.LE SBn, k` for all but the
//!   `k` youngest on it — scoreboards count), or once a younger result of the same in-order
//!   queue is ([`crate::latency::Queue`]); reading or overwriting one that may be in flight
//!   is a violation; a warpgroup MMA's accumulators are complete at `WARPGROUP.DEPBAR`;
//! * registers still being read by an instruction that holds a read scoreboard (stores,
//!   async copies): overwriting one before the scoreboard is waited for is a violation.
//!
//! **Reordering** ([`reordering`]): the same blocks ending in the same instructions, the same
//! instructions in each block (words compared without their control bits), and every pair
//! that conflicts in the original — a register written by one and read or written by the
//! other, two memory accesses one of which writes, anything against a barrier, fence or
//! scoreboard wait — in the same order. A swap of dependent instructions can be timing-clean
//! and still wrong; this catches it.

use std::collections::{BTreeMap, HashMap};

use crate::cubin::Instr;
use crate::disasm::Text;
use crate::latency::{self, Queue};
use crate::operands::{operands, Operands, Reg};

/// What a violation breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rule {
    /// A fixed-latency result read `got` cycles after its producer issued; it needs `need`.
    TooSoon { reg: Reg, need: u32, got: u32 },
    /// A variable-latency result read before its scoreboard was waited for (`Some(6)`: the
    /// warpgroup's `WARPGROUP.DEPBAR`; `None`: it has none, and no younger result of its
    /// in-order queue was waited for).
    ReadInFlight { reg: Reg, sb: Option<u8> },
    /// A register written while a variable-latency result is still on its way into it.
    WrittenInFlight { reg: Reg, sb: Option<u8> },
    /// A register overwritten while an earlier instruction still reads it (its read
    /// scoreboard not waited for).
    WrittenWhileRead { reg: Reg, sb: u8 },
    /// A wait on scoreboard `sb` `got` cycles after the instruction that set it issued; the
    /// scoreboard counts it only `need` cycles on ([`latency::SCOREBOARD_SET_CYCLES`]).
    WaitTooSoon { sb: u8, need: u32, got: u32 },
    /// `--against`: the kernels differ in length, blocks, or a block's instructions.
    Shape(String),
    /// `--against`: two conflicting instructions of the original are in the other order.
    Reordered,
}

/// One violation: the instruction where it shows (index into the kernel's instructions)
/// and the one it is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub at: usize,
    pub from: Option<usize>,
    pub rule: Rule,
}

impl Violation {
    /// `0x01a0 `FADD R4, R2, R3`: reads R2 2 cycles after `0x0190 FMUL ...` (needs 4)`.
    pub fn describe(&self, text: &[Text]) -> String {
        let line = |i: usize| text.get(i).map(|t| t.line()).unwrap_or_else(|| "?".into());
        let at = format!("{:#06x} `{}`", 16 * self.at, line(self.at));
        let from = self.from.map(|f| format!("{:#06x} `{}`", 16 * f, line(f))).unwrap_or_default();
        let sb = |s: Option<u8>| match s {
            Some(GSB) => "WARPGROUP.DEPBAR".to_string(),
            Some(k) => format!("SB{k}"),
            None => "a younger result of its queue (it has no scoreboard)".to_string(),
        };
        match &self.rule {
            Rule::TooSoon { reg, need, got } => {
                format!("{at}: reads {reg} {got} cycles after {from} issued (needs {need})")
            }
            Rule::ReadInFlight { reg, sb: s } => {
                format!("{at}: reads {reg} before waiting for {} ({from})", sb(*s))
            }
            Rule::WrittenInFlight { reg, sb: s } => {
                format!("{at}: writes {reg} while {from}'s result may still land in it (no wait for {})", sb(*s))
            }
            Rule::WrittenWhileRead { reg, sb: k } => {
                format!("{at}: overwrites {reg} while {from} may still read it (no wait for SB{k})")
            }
            Rule::WaitTooSoon { sb: k, need, got } => {
                format!("{at}: waits on SB{k} {got} cycles after {from} set it (the wait sees it after {need})")
            }
            Rule::Shape(why) => format!("{at}: {why}"),
            Rule::Reordered => format!("{at} now comes before {from}, which it depends on"),
        }
    }
}

/// The scoreboard index standing for a warpgroup MMA's completion (`gsb0`): past the six
/// hardware scoreboards (the SASS emulator's timing numbers it the same).
pub const GSB: u8 = 6;
/// Fixed-latency results are forgotten after this many cycles (longer than any latency).
const FORGET: u32 = 64;
/// Ages (instructions issued since) saturate here, so loops reach a fixed point.
const AGE_CAP: u32 = 512;

#[derive(Clone, Debug, PartialEq, Eq)]
struct InFlight {
    producer: usize,
    regs: Vec<Reg>,
    /// Scoreboard, `GSB` for the warpgroup, `None` where only queue order covers it.
    sb: Option<u8>,
    queue: Queue,
    /// Instructions issued since, fewest and most over the paths here.
    young: u32,
    old: u32,
    /// A read scoreboard's registers (being read), not a result.
    reading: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct State {
    /// Fixed-latency results: register → (producer, fewest cycles since it issued).
    fixed: BTreeMap<Reg, (usize, u32)>,
    /// Sorted by producer, then kind.
    flight: Vec<InFlight>,
    /// Scoreboards set fewer than [`latency::SCOREBOARD_SET_CYCLES`] ago: scoreboard →
    /// (setter, fewest cycles since it issued).
    armed: BTreeMap<u8, (usize, u32)>,
}

impl State {
    fn join(&mut self, other: &State) -> bool {
        let before = self.clone();
        for (r, &(p, c)) in &other.fixed {
            let e = self.fixed.entry(*r).or_insert((p, c));
            if c < e.1 {
                *e = (p, c);
            }
        }
        for (k, &(p, c)) in &other.armed {
            let e = self.armed.entry(*k).or_insert((p, c));
            if c < e.1 {
                *e = (p, c);
            }
        }
        for f in &other.flight {
            match self.flight.iter_mut().find(|x| x.producer == f.producer && x.reading == f.reading) {
                Some(x) => {
                    x.young = x.young.min(f.young);
                    x.old = x.old.max(f.old);
                }
                None => self.flight.push(f.clone()),
            }
        }
        self.flight.sort_by_key(|x| (x.producer, x.reading));
        *self != before
    }

    /// Everything on scoreboard `sb` is complete; so is whatever its results' queues
    /// issued before them.
    fn drain(&mut self, sb: u8, keep_youngest: usize) {
        let on: Vec<(u32, u32)> = self.flight.iter().filter(|x| x.sb == Some(sb)).map(|x| (x.young, x.old)).collect();
        let mut done = vec![];
        let mut landed = vec![];
        self.flight.retain(|x| {
            if x.sb != Some(sb) {
                return true;
            }
            // Done when at least `keep_youngest` others on it are younger on every path.
            let younger = on.iter().filter(|(_, old)| *old < x.young).count();
            if younger >= keep_youngest {
                if !x.reading {
                    done.push((x.queue, x.old));
                    landed.push(x.producer);
                }
                false
            } else {
                true
            }
        });
        for (q, old) in done {
            if q != Queue::None {
                self.flight.retain(|x| {
                    let earlier = !x.reading && x.queue == q && x.young > old;
                    if earlier {
                        landed.push(x.producer);
                    }
                    !earlier
                });
            }
        }
        // An instruction whose result has landed has read its operands: its read scoreboard's
        // registers are free too (`LDG.E.U16 R6, [R6.64]` holding R6 on a read scoreboard as
        // well: a wait for its result frees R6 for writing).
        self.flight.retain(|x| !(x.reading && landed.contains(&x.producer)));
    }
}

/// The kernel's control flow: for each block (leader index), its successors.
struct Cfg {
    starts: Vec<usize>,
    succ: Vec<Vec<usize>>,
}

fn root(op: &str) -> &str {
    op.split('.').next().unwrap_or(op)
}

fn target(t: &Text) -> Option<usize> {
    t.operands.split(',').rev().find_map(|o| {
        let h = o.trim().strip_prefix("0x")?;
        u64::from_str_radix(h, 16).ok().map(|v| (v / 16) as usize)
    })
}

fn unconditional(t: &Text) -> bool {
    (t.predicate.is_empty() || t.predicate == "@PT")
        && !t.operands.split(',').any(|o| {
            let o = o.trim().trim_start_matches('!');
            o.starts_with("UP") && o != "UPT"
                || o.starts_with('P') && o != "PT" && o[1..].starts_with(|c: char| c.is_ascii_digit())
        })
}

fn cfg(text: &[Text]) -> Cfg {
    let n = text.len();
    let mut leader = vec![false; n + 1];
    leader[0] = true;
    for (i, t) in text.iter().enumerate() {
        let r = root(&t.opcode);
        if matches!(r, "BRA" | "EXIT" | "RET" | "CALL" | "JMP" | "BRX" | "JMX" | "KILL") {
            leader[i + 1] = true;
        }
        if matches!(r, "BRA" | "CALL" | "JMP") {
            if let Some(x) = target(t).filter(|&x| x < n) {
                leader[x] = true;
            }
        }
    }
    let starts: Vec<usize> = (0..n).filter(|&i| leader[i]).collect();
    let block_of = |i: usize| starts.partition_point(|&s| s <= i) - 1;
    let mut succ = vec![vec![]; starts.len()];
    let return_sites: Vec<usize> =
        (0..n).filter(|&i| root(&text[i].opcode) == "CALL" && i + 1 < n).map(|i| block_of(i + 1)).collect();
    for (b, slot) in succ.iter_mut().enumerate() {
        let end = starts.get(b + 1).copied().unwrap_or(n);
        let last = end - 1;
        let t = &text[last];
        let fall = (end < n).then(|| block_of(end));
        let r = root(&t.opcode);
        let mut out = vec![];
        match r {
            "BRA" | "JMP" => {
                if let Some(x) = target(t).filter(|&x| x < n) {
                    out.push(block_of(x));
                }
                if !unconditional(t) {
                    out.extend(fall);
                }
            }
            "CALL" => match target(t).filter(|&x| x < n) {
                Some(x) => out.push(block_of(x)),
                None => out.extend(fall),
            },
            "RET" => {
                out.extend(return_sites.iter().copied());
                if !unconditional(t) {
                    out.extend(fall);
                }
            }
            "EXIT" | "KILL" | "BRX" | "JMX" => {
                if !unconditional(t) {
                    out.extend(fall);
                }
            }
            _ => out.extend(fall),
        }
        out.sort();
        out.dedup();
        *slot = out;
    }
    Cfg { starts, succ }
}

/// The high register of an instruction's 64-bit addend (its last operand, `R4` → `R5`).
fn wide_addend_high(t: &Text) -> Option<Reg> {
    let last = t.operands.rsplit(',').next()?.trim();
    let n: u16 = last.trim_end_matches(".reuse").strip_prefix('R')?.parse().ok()?;
    Some(Reg::R(n + 1))
}

/// `DEPBAR.LE SB0, 0x1` → (0, 1).
fn depbar(t: &Text) -> Option<(u8, usize)> {
    if root(&t.opcode) != "DEPBAR" {
        return None;
    }
    let mut ops = t.operands.split(',').map(str::trim);
    let sb = ops.next()?.strip_prefix("SB")?.parse().ok()?;
    let k = ops.next().and_then(|o| o.strip_prefix("0x")).and_then(|h| usize::from_str_radix(h, 16).ok()).unwrap_or(0);
    Some((sb, k))
}

struct Walker<'a> {
    sm: u32,
    instrs: &'a [Instr],
    text: &'a [Text],
    ops: Vec<Operands>,
}

impl Walker<'_> {
    /// Runs instruction `i` on `s`; violations go to `out` when given.
    fn step(&self, i: usize, s: &mut State, mut out: Option<&mut Vec<Violation>>) {
        let c = self.instrs[i].control();
        let t = &self.text[i];
        let o = &self.ops[i];
        let mut report = |v: Violation| {
            if let Some(out) = out.as_deref_mut() {
                out.push(v);
            }
        };
        // Waits happen before issue — on scoreboards whose setters are far enough behind.
        let mut too_soon = |k: u8, s: &State| {
            if let Some(&(p, got)) = s.armed.get(&k) {
                let need = latency::SCOREBOARD_SET_CYCLES;
                report(Violation { at: i, from: Some(p), rule: Rule::WaitTooSoon { sb: k, need, got } });
            }
        };
        for k in 0..6 {
            if c.wait >> k & 1 == 1 {
                too_soon(k, s);
                s.drain(k, 0);
            }
        }
        // `DEPBAR` is not bound by it: `ptxas` puts `DEPBAR.LE SB0, 0x0` 1 cycle after the
        // `UTMACMDFLUSH` or `SYNCS.EXCH.64` that sets SB0 (Triton's TMA kernels, sm_90a).
        if let Some((k, n)) = depbar(t) {
            s.drain(k, n);
        }
        if t.opcode.starts_with("WARPGROUP.DEPBAR") {
            s.drain(GSB, 0);
        }
        let mma = |op: &str| op.starts_with("HGMMA");
        // sm_90a's `IMAD.WIDE` reads its 64-bit addend's high register late.
        let late = latency::wide_addend_high_late(self.sm, &t.opcode);
        let late_reg = (late > 0).then(|| wide_addend_high(t)).flatten();
        // Reads.
        for r in o.uses.iter().filter(|r| !o.kept.contains(r)) {
            if let Some(&(p, got)) = s.fixed.get(r) {
                let predicate = matches!(r, Reg::P(_) | Reg::Up(_));
                if let Some(need) = latency::needed(self.sm, &self.text[p].opcode, &t.opcode, predicate) {
                    let need = if late_reg == Some(*r) { need.saturating_sub(late) } else { need };
                    if got < need {
                        report(Violation { at: i, from: Some(p), rule: Rule::TooSoon { reg: *r, need, got } });
                    }
                }
            }
            for f in s.flight.iter().filter(|f| !f.reading && f.regs.contains(r)) {
                if f.sb == Some(GSB) && mma(&t.opcode) {
                    continue; // the next MMA on the same accumulators
                }
                report(Violation { at: i, from: Some(f.producer), rule: Rule::ReadInFlight { reg: *r, sb: f.sb } });
            }
        }
        // Writes.
        for r in &o.defs {
            for f in s.flight.iter().filter(|f| f.regs.contains(r)) {
                if f.sb == Some(GSB) && mma(&t.opcode) && !f.reading {
                    continue;
                }
                if f.reading && latency::mio_ordered(&self.text[f.producer].opcode, &t.opcode) {
                    continue; // the memory pipe reads the earlier operands before this lands
                }
                let rule = match (f.reading, f.sb) {
                    (true, Some(k)) => Rule::WrittenWhileRead { reg: *r, sb: k },
                    (_, sb) => Rule::WrittenInFlight { reg: *r, sb },
                };
                report(Violation { at: i, from: Some(f.producer), rule });
            }
        }
        // What this instruction leaves in flight.
        for f in &mut s.flight {
            f.young = (f.young + 1).min(AGE_CAP);
            f.old = (f.old + 1).min(AGE_CAP);
            f.regs.retain(|r| !o.defs.contains(r) || f.reading);
        }
        s.flight.retain(|f| !f.regs.is_empty() || f.reading);
        for r in &o.defs {
            s.fixed.remove(r);
        }
        let gsb = mma(&t.opcode) && t.operands.contains("gsb0");
        let variable = c.write_sb.is_some() || latency::variable(&t.opcode);
        if !o.defs.is_empty() {
            if variable || gsb {
                let sb = if gsb { Some(GSB) } else { c.write_sb };
                s.flight.push(InFlight {
                    producer: i,
                    regs: o.defs.clone(),
                    sb,
                    queue: latency::queue(&t.opcode),
                    young: 0,
                    old: 0,
                    reading: false,
                });
            }
            if !variable {
                for r in &o.defs {
                    s.fixed.insert(*r, (i, 0));
                }
            }
        }
        if let Some(k) = c.read_sb {
            // Only general registers are read late; predicates and uniform registers are read
            // at issue (`ptxas` overwrites them right after a store without a wait).
            let regs: Vec<Reg> =
                o.uses.iter().filter(|r| !o.kept.contains(r) && matches!(r, Reg::R(_))).copied().collect();
            s.flight.push(InFlight {
                producer: i,
                regs,
                sb: Some(k),
                queue: Queue::None,
                young: 0,
                old: 0,
                reading: true,
            });
        }
        s.flight.sort_by_key(|x| (x.producer, x.reading));
        if !latency::scoreboard_set_at_issue(&t.opcode) {
            for k in c.write_sb.into_iter().chain(c.read_sb) {
                s.armed.insert(k, (i, 0));
            }
        }
        // Time passes (a CTA barrier takes a few cycles more than its stall count).
        let barrier = root(&t.opcode) == "BAR" && t.opcode.contains("SYNC");
        let stall = c.stall as u32 + if barrier { latency::BARRIER_MIN_CYCLES } else { 0 };
        s.fixed.retain(|_, (_, cyc)| {
            *cyc += stall;
            *cyc < FORGET
        });
        s.armed.retain(|_, (_, cyc)| {
            *cyc += stall;
            *cyc < latency::SCOREBOARD_SET_CYCLES
        });
    }
}

/// Checks the timing rules of one kernel's instructions (`text[i]` is `nvdisasm`'s text of
/// `instrs[i]`) for `sm` (80, 90). Returns the violations, in instruction order.
pub fn timing(sm: u32, instrs: &[Instr], text: &[Text]) -> Vec<Violation> {
    let n = instrs.len().min(text.len());
    let w = Walker { sm, instrs: &instrs[..n], text: &text[..n], ops: text[..n].iter().map(operands).collect() };
    if n == 0 {
        return vec![];
    }
    let g = cfg(w.text);
    let nb = g.starts.len();
    let end = |b: usize| g.starts.get(b + 1).copied().unwrap_or(n);
    let mut input: Vec<Option<State>> = vec![None; nb];
    input[0] = Some(State::default());
    // Blocks in layout order first (mostly the flow's order), so loops settle in few rounds.
    let mut work = std::collections::BTreeSet::from([0usize]);
    while let Some(b) = work.pop_first() {
        let mut s = input[b].clone().unwrap_or_default();
        for i in g.starts[b]..end(b) {
            w.step(i, &mut s, None);
        }
        for &x in &g.succ[b] {
            let changed = match &mut input[x] {
                Some(st) => st.join(&s),
                slot @ None => {
                    *slot = Some(s.clone());
                    true
                }
            };
            if changed {
                work.insert(x);
            }
        }
    }
    let mut out = vec![];
    for (b, state) in input.iter().enumerate() {
        // Blocks nothing reaches (dead code after an EXIT) are checked from an empty state.
        let mut s = state.clone().unwrap_or_default();
        for i in g.starts[b]..end(b) {
            w.step(i, &mut s, Some(&mut out));
        }
    }
    out.sort_by_key(|v| (v.at, v.from));
    out.dedup();
    out
}

/// The control bits' place in the high half: equal words but for these are the same
/// instruction.
const CONTROL_MASK: u64 = 0x1f_ffff << (105 - 64);

/// The memory spaces an instruction reads and writes, as bit sets (1: global, 2: shared,
/// 4: local); generic accesses touch all three. Constant memory is never written by a
/// kernel, so `LDC` conflicts with nothing.
fn memory(op: &str) -> (u8, u8) {
    const G: u8 = 1;
    const S: u8 = 2;
    const L: u8 = 4;
    match root(op) {
        "LDG" => (G, 0),
        "STG" | "RED" | "REDG" | "ATOMG" => (G, G),
        "LDS" | "LDSM" => (S, 0),
        "STS" | "STSM" | "ATOMS" => (S, S),
        "LDGSTS" => (G, S),
        "LDL" => (L, 0),
        "STL" => (L, L),
        "LD" | "SULD" | "TEX" | "TLD" => (G | S | L, 0),
        "ST" | "ATOM" | "SUST" | "SURED" | "SUATOM" => (G | S | L, G | S | L),
        _ => (0, 0),
    }
}

fn ordering(t: &Text) -> bool {
    let clock = t.operands.contains("SR_CLOCK") || t.operands.contains("SR_GLOBALTIMER");
    clock
        || matches!(
            root(&t.opcode),
            "BAR"
                | "MEMBAR"
                | "FENCE"
                | "DEPBAR"
                | "LDGDEPBAR"
                | "ARRIVES"
                | "SYNCS"
                | "WARPSYNC"
                | "BSSY"
                | "BSYNC"
                | "ERRBAR"
                | "CCTL"
                | "WARPGROUP"
                | "HGMMA"
                | "UTMALDG"
                | "UTMASTG"
                | "UTMAPF"
                | "UTMAREDG"
                | "UTMACCTL"
                | "UTMACMDFLUSH"
                | "UBLKCP"
                | "NANOSLEEP"
                | "YIELD"
                | "BPT"
                | "VOTEU"
                | "ELECT"
        )
}

fn conflict(a: (&Text, &Operands), b: (&Text, &Operands)) -> bool {
    let (ta, oa) = a;
    let (tb, ob) = b;
    let meets = |x: &[Reg], y: &[Reg]| x.iter().any(|r| y.contains(r));
    if meets(&oa.defs, &ob.uses) || meets(&oa.uses, &ob.defs) || meets(&oa.defs, &ob.defs) {
        return true;
    }
    if ordering(ta) || ordering(tb) {
        return true;
    }
    let ((ra, wa), (rb, wb)) = (memory(&ta.opcode), memory(&tb.opcode));
    wa & (rb | wb) != 0 || wb & ra != 0
}

/// Checks that `new` is a legal reordering of `old` (the same kernel's instructions and
/// texts before and after a rewrite): shape, instructions per block, and the order of every
/// conflicting pair.
pub fn reordering(old: (&[Instr], &[Text]), new: (&[Instr], &[Text])) -> Vec<Violation> {
    let (oi, ot) = old;
    let (ni, nt) = new;
    let shape = |at: usize, why: String| vec![Violation { at, from: None, rule: Rule::Shape(why) }];
    if oi.len() != ni.len() || ot.len() != oi.len() || nt.len() != ni.len() {
        return shape(0, format!("{} instructions, the original has {}", ni.len(), oi.len()));
    }
    let (go, gn) = (cfg(ot), cfg(nt));
    if go.starts != gn.starts {
        let at = go.starts.iter().zip(&gn.starts).find(|(a, b)| a != b).map_or(0, |(a, _)| *a);
        return shape(at, "the blocks differ from the original's".into());
    }
    let word = |x: &Instr| (x.lo, x.hi & !CONTROL_MASK);
    let ops: Vec<Operands> = ot.iter().map(operands).collect();
    let mut out = vec![];
    for (b, &s) in go.starts.iter().enumerate() {
        let e = go.starts.get(b + 1).copied().unwrap_or(oi.len());
        // Control flow, and what holds a target relative to its own address, stays put.
        if let Some(x) = (s..e).find(|&x| {
            matches!(
                root(&ot[x].opcode),
                "BRA" | "BRX" | "JMP" | "JMX" | "CALL" | "RET" | "EXIT" | "KILL" | "BSSY" | "BSYNC" | "BREAK"
            ) && word(&oi[x]) != word(&ni[x])
        }) {
            out.extend(shape(x, "a control-flow instruction moved".into()));
            continue;
        }
        // Where each original instruction went: the k-th copy of a word to the k-th copy.
        let mut slots: HashMap<(u64, u64), Vec<usize>> = HashMap::new();
        for j in (s..e).rev() {
            slots.entry(word(&ni[j])).or_default().push(j);
        }
        let mut place = vec![0usize; e - s];
        let mut lost = false;
        for j in s..e {
            match slots.get_mut(&word(&oi[j])).and_then(|v| v.pop()) {
                Some(p) => place[j - s] = p,
                None => {
                    out.extend(shape(j, "the original's instruction is not in its block any more".into()));
                    lost = true;
                    break;
                }
            }
        }
        if lost {
            continue;
        }
        for a in s..e {
            for c in a + 1..e {
                if place[a - s] > place[c - s] && conflict((&ot[a], &ops[a]), (&ot[c], &ops[c])) {
                    out.push(Violation { at: place[c - s], from: Some(place[a - s]), rule: Rule::Reordered });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::Control;

    fn ins(stall: u8, write_sb: Option<u8>, wait: u8) -> Instr {
        let c = Control { stall, yield_bit: false, write_sb, read_sb: None, wait, reuse: 0 };
        Instr { offset: 0, lo: 0, hi: c.encode(0) }
    }

    fn t(op: &str, ops: &str) -> Text {
        Text { predicate: String::new(), opcode: op.into(), operands: ops.into() }
    }

    #[test]
    fn stalls_must_cover_fixed_latency() {
        let text = [t("FADD", "R4,R2,R3"), t("FMUL", "R5,R4,R4"), t("EXIT", "")];
        assert!(timing(80, &[ins(4, None, 0), ins(1, None, 0), ins(1, None, 0)], &text).is_empty());
        let v = timing(80, &[ins(3, None, 0), ins(1, None, 0), ins(1, None, 0)], &text);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].rule, Rule::TooSoon { reg: Reg::R(4), need: 4, got: 3 });
        assert_eq!((v[0].at, v[0].from), (1, Some(0)));
    }

    #[test]
    fn scoreboards_must_be_waited_for_and_count() {
        let text = [
            t("LDG.E", "R4,[R2.64]"),
            t("LDG.E", "R5,[R2.64+0x4]"),
            t("DEPBAR.LE", "SB0,0x1"),
            t("FADD", "R6,R4,R4"),
            t("FADD", "R7,R5,R5"),
            t("EXIT", ""),
        ];
        let mut i = vec![
            ins(1, Some(0), 0),
            ins(2, Some(0), 0),
            ins(1, None, 0),
            ins(4, None, 0),
            ins(4, None, 0),
            ins(1, None, 0),
        ];
        let v = timing(80, &i, &text);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!((v[0].at, v[0].rule.clone()), (4, Rule::ReadInFlight { reg: Reg::R(5), sb: Some(0) }));
        i[4] = ins(4, None, 1);
        assert!(timing(80, &i, &text).is_empty());
    }

    /// A scoreboard counts its setter only from 2 cycles after it issued: a wait 1 cycle on
    /// goes ahead on the hardware (an H200 ran `S2R` → `IMAD` so, wrong in every CTA).
    #[test]
    fn a_wait_must_come_two_cycles_after_its_scoreboard_was_set() {
        let text = [t("S2R", "R9,SR_CTAID.X"), t("IMAD", "R9,R9,0x80,R0"), t("EXIT", "")];
        let soon = [ins(1, Some(3), 0), ins(4, None, 1 << 3), ins(1, None, 0)];
        let v = timing(90, &soon, &text);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!((v[0].at, v[0].from), (1, Some(0)));
        assert_eq!(v[0].rule, Rule::WaitTooSoon { sb: 3, need: 2, got: 1 });
        assert!(v[0].describe(&text).contains("waits on SB3 1 cycles after"), "{}", v[0].describe(&text));
        assert!(timing(90, &[ins(2, Some(3), 0), soon[1], soon[2]], &text).is_empty());
        // Counted in cycles, not instructions: an instruction between with stall 1 is enough.
        let text = [t("S2R", "R9,SR_CTAID.X"), t("MOV", "R2,R3"), t("IMAD", "R9,R9,0x80,R0"), t("EXIT", "")];
        let between = [ins(1, Some(3), 0), ins(1, None, 0), ins(4, None, 1 << 3), ins(1, None, 0)];
        assert!(timing(90, &between, &text).is_empty());
        // A read scoreboard too (a store's).
        let text = [t("STG.E", "[R2.64],R4"), t("MOV", "R4,R5"), t("EXIT", "")];
        let i = [ins_r(1, None, Some(0), 0), ins(1, None, 1), ins(1, None, 0)];
        let v = timing(90, &i, &text);
        assert_eq!(
            v.iter().map(|v| v.rule.clone()).collect::<Vec<_>>(),
            [Rule::WaitTooSoon { sb: 0, need: 2, got: 1 }]
        );
        // Not a `DEPBAR` (`ptxas` puts one 1 cycle after the `SYNCS.EXCH.64` or `UTMACMDFLUSH`
        // that sets its scoreboard), and not after the uniform datapath, which sets its
        // scoreboards at issue (`ptxas` waits 1 cycle after `USETMAXREG`).
        let text = [t("SYNCS.EXCH.64", "URZ,[UR8],UR4"), t("DEPBAR.LE", "SB0,0x0"), t("EXIT", "")];
        assert!(timing(90, &[ins(1, Some(0), 0), ins(1, None, 0), ins(1, None, 0)], &text).is_empty());
        let text =
            [t("USETMAXREG.DEALLOC.CTAPOOL", "0x28"), t("ISETP.GE.U32.AND", "P1,PT,R11,0x120,PT"), t("EXIT", "")];
        assert!(timing(90, &[ins(1, Some(0), 0), ins(1, None, 1), ins(1, None, 0)], &text).is_empty());
    }

    #[test]
    fn results_in_flight_follow_loops() {
        // 0: LDG R4 (SB1); 1: FADD reads R4 waiting SB1; 2: LDG R4 again (prefetch);
        // 3: @P0 BRA 0x10 back to 1 — whose wait covers the prefetch too.
        let text = [
            t("LDG.E", "R4,[R2.64]"),
            t("FADD", "R6,R4,R4"),
            t("LDG.E", "R4,[R2.64]"),
            t("BRA", "P0,0x10"),
            t("EXIT", ""),
        ];
        let mut text = text.to_vec();
        text[3].predicate = "@P0".into();
        let i = [ins(2, Some(1), 0), ins(4, None, 2), ins(1, Some(1), 0), ins(1, None, 0), ins(1, None, 0)];
        assert!(timing(80, &i, &text).is_empty());
        let mut bad = i;
        bad[2] = ins(1, Some(2), 0);
        let v = timing(80, &bad, &text);
        assert!(v.iter().any(|v| v.at == 1 && v.from == Some(2)), "{v:?}");
    }

    fn ins_r(stall: u8, write_sb: Option<u8>, read_sb: Option<u8>, wait: u8) -> Instr {
        let c = Control { stall, yield_bit: false, write_sb, read_sb, wait, reuse: 0 };
        Instr { offset: 0, lo: 0, hi: c.encode(0) }
    }

    #[test]
    fn a_landed_result_frees_its_read_scoreboard() {
        // Trident's bf16 softmax, sm_80: `LDG.E.U16 R6, [R6.64]` on W5 and R0; the wait for
        // SB5 means the load also read R6, so R6 may be overwritten without waiting for SB0.
        let text =
            [t("LDG.E.U16", "R6,[R6.64]"), t("PRMT", "R13,RZ,0x5410,R6"), t("FMNMX", "R6,R5,R13,!PT"), t("EXIT", "")];
        let i = [ins_r(2, Some(5), Some(0), 0), ins(5, None, 1 << 5), ins(5, None, 0), ins(1, None, 0)];
        assert!(timing(80, &i, &text).is_empty());
        // Without the wait for the result, the overwrite is still a violation.
        let early = [ins_r(2, Some(5), Some(0), 0), ins(5, None, 0), ins(5, None, 0), ins(1, None, 0)];
        let text2 = [text[0].clone(), t("NOP", ""), text[2].clone(), text[3].clone()];
        let v = timing(80, &early, &text2);
        assert!(v.iter().any(|v| v.at == 2 && v.rule == Rule::WrittenWhileRead { reg: Reg::R(6), sb: 0 }), "{v:?}");
    }

    #[test]
    fn a_shared_load_may_overwrite_what_an_earlier_store_reads() {
        // matmul epilogue: `@P3 STG.E.U16 [R6.64], R15` (R2), then `LDS.U16 R15, ...` with no
        // wait for SB2: the LDS passes the memory pipe after the store read R15.
        let mut stg = t("STG.E.U16", "[R6.64],R15");
        stg.predicate = "@P3".into();
        let text = [stg, t("LDS.U16", "R15,[R94+0x500]"), t("EXIT", "")];
        let i = [ins_r(1, None, Some(2), 0), ins(1, Some(0), 0), ins(1, None, 0)];
        assert!(timing(80, &i, &text).is_empty());
        // An ALU write there must still wait for the store's read.
        let text = [text[0].clone(), t("IADD3", "R15,R1,R2,RZ"), t("EXIT", "")];
        let i = [ins_r(1, None, Some(2), 0), ins(1, None, 0), ins(1, None, 0)];
        let v = timing(80, &i, &text);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].rule, Rule::WrittenWhileRead { reg: Reg::R(15), sb: 2 });
    }

    #[test]
    fn the_high_half_of_an_sm90_wide_addend_is_read_late() {
        // Triton's softmax, sm_90a: `IMAD.U32 R3, RZ, RZ, UR4` then `IMAD.WIDE.U32 R2, R0, 0x2, R2`
        // 2 cycles later: R3 is the addend's high register.
        let text = [t("IMAD.U32", "R3,RZ,RZ,UR4"), t("IMAD.WIDE.U32", "R2,R0,0x2,R2"), t("EXIT", "")];
        let i = [ins(2, None, 0), ins(4, None, 0), ins(1, None, 0)];
        assert!(timing(90, &i, &text).is_empty());
        // Not on sm_80, and not for the low register.
        assert_eq!(timing(80, &i, &text).len(), 1);
        let low = [t("IMAD.U32", "R2,RZ,RZ,UR4"), text[1].clone(), text[2].clone()];
        let v = timing(90, &i, &low);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].rule, Rule::TooSoon { reg: Reg::R(2), need: 4, got: 2 });
    }

    #[test]
    fn mufu_is_covered_by_a_younger_i2f_and_s2ur_by_a_younger_s2ur() {
        // Dropout, sm_80: `MUFU.RCP R7, R7` with no scoreboard, `I2F R8, R8` on SB1, a wait for
        // SB1, then the reader of R7.
        let text = [t("MUFU.RCP", "R7,R7"), t("I2F", "R8,R8"), t("FMUL", "R6,R8,R7"), t("EXIT", "")];
        let i = [ins(8, None, 0), ins(2, Some(1), 0), ins(2, None, 1 << 1), ins(1, None, 0)];
        assert!(timing(80, &i, &text).is_empty());
        let unwaited = [ins(8, None, 0), ins(2, Some(1), 0), ins(2, None, 0), ins(1, None, 0)];
        assert!(timing(80, &unwaited, &text).iter().any(|v| v.from == Some(0)));
        // Split-K, sm_90a: `S2UR UR10, SR_CTAID.Y` with none, `S2UR UR11, SR_CTAID.X` on SB3.
        let text = [
            t("S2UR", "UR10,SR_CTAID.Y"),
            t("S2UR", "UR11,SR_CTAID.X"),
            t("UIMAD", "UR4,UR10,UR11,URZ"),
            t("EXIT", ""),
        ];
        let i = [ins(1, None, 0), ins(2, Some(3), 0), ins(1, None, 1 << 3), ins(1, None, 0)];
        assert!(timing(90, &i, &text).is_empty());
    }

    #[test]
    fn reordering_keeps_dependent_pairs() {
        let text = [t("FADD", "R4,R2,R3"), t("FMUL", "R5,R4,R4"), t("IADD3", "R9,R8,R8,RZ"), t("EXIT", "")];
        let w = |k: u64| Instr { offset: 0, lo: k, hi: 0 };
        let old = [w(1), w(2), w(3), w(4)];
        let ok = [w(3), w(1), w(2), w(4)];
        let ok_text = [text[2].clone(), text[0].clone(), text[1].clone(), text[3].clone()];
        assert!(reordering((&old, &text), (&ok, &ok_text)).is_empty());
        let bad = [w(2), w(1), w(3), w(4)];
        let bad_text = [text[1].clone(), text[0].clone(), text[2].clone(), text[3].clone()];
        let v = reordering((&old, &text), (&bad, &bad_text));
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].rule, Rule::Reordered);
    }
}
