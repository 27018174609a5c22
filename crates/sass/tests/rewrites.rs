//! Rewriting on the corpus: the verifier against injected hazards (a mutation test whose
//! generator reasons on its own, block by block, about what makes each mutation a hazard),
//! and random legal moves, each repaired, re-verified and read back by `nvdisasm` (and
//! `cuobjdump` where installed).

mod common;

use std::collections::BTreeMap;

use common::{corpus, tools_present, Rng};
use trident_sass::deps::{blocks, Block};
use trident_sass::disasm::Text;
use trident_sass::latency;
use trident_sass::operands::{operands, Operands, Reg};
use trident_sass::rewrite::{legal_range, move_instr};
use trident_sass::verify::{reordering, timing};
use trident_sass::{Cubin, Instr};

#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    LowerStall,
    DropWait,
    BusyScoreboard,
    SwapDependent,
    CrossBarrier,
}

/// One injected hazard: the mutated kernel and the instruction where it must show.
struct Mutation {
    kind: Kind,
    instrs: Vec<Instr>,
    text: Vec<Text>,
    at: usize,
}

fn root(op: &str) -> &str {
    op.split('.').next().unwrap_or(op)
}

fn reads(o: &Operands) -> Vec<Reg> {
    o.uses.iter().filter(|r| !o.kept.contains(r)).copied().collect()
}

fn set(instrs: &mut [Instr], i: usize, f: impl FnOnce(&mut trident_sass::Control)) {
    let mut c = instrs[i].control();
    f(&mut c);
    instrs[i].set_control(c);
}

/// Whether `x` drains anything: a wait mask, `DEPBAR`, a warpgroup wait.
fn waits(instrs: &[Instr], text: &[Text], x: usize) -> bool {
    instrs[x].control().wait != 0 || root(&text[x].opcode) == "DEPBAR" || text[x].opcode.starts_with("WARPGROUP")
}

fn mutations(sm: u32, instrs: &[Instr], text: &[Text], rng: &mut Rng, per_kind: usize) -> Vec<Mutation> {
    let ops: Vec<Operands> = text.iter().map(operands).collect();
    let bs: Vec<Block> = blocks(text);
    let mut found: BTreeMap<Kind, Vec<Mutation>> = BTreeMap::new();
    let mut add = |m: Mutation| found.entry(m.kind).or_default().push(m);
    for b in &bs {
        for p in b.start..b.end {
            let cp = instrs[p].control();
            for &r in &ops[p].defs {
                // The first later instruction in the block that reads or rewrites r.
                let Some(c) = (p + 1..b.end).find(|&c| ops[c].uses.contains(&r) || ops[c].defs.contains(&r)) else {
                    continue;
                };
                let real_read = reads(&ops[c]).contains(&r);
                let fixed = cp.write_sb.is_none() && !latency::variable(&text[p].opcode);
                // Lower a stall: fixed-latency producer, read now exactly or more than needed.
                if fixed && real_read {
                    let predicate = matches!(r, Reg::P(_) | Reg::Up(_));
                    if let Some(need) = latency::needed(sm, &text[p].opcode, &text[c].opcode, predicate) {
                        // The rules the table's number bends to: sm_90a's IMAD.WIDE reads its
                        // addend's high register late; a CTA barrier takes a few cycles more.
                        let late = latency::wide_addend_high_late(sm, &text[c].opcode);
                        let addend_high = text[c]
                            .operands
                            .rsplit(',')
                            .next()
                            .and_then(|o| o.trim().trim_end_matches(".reuse").strip_prefix('R')?.parse::<u16>().ok())
                            .map(|n| Reg::R(n + 1));
                        let need = if late > 0 && addend_high == Some(r) { need - late } else { need };
                        let barriers = (p..c).filter(|&x| text[x].opcode.starts_with("BAR.SYNC")).count() as u32;
                        let have: u32 = (p..c).map(|x| instrs[x].control().stall as u32).sum::<u32>()
                            + barriers * latency::BARRIER_MIN_CYCLES;
                        let mut deficit = (have + 1).saturating_sub(need);
                        let mut m = instrs.to_vec();
                        for x in (p..c).rev() {
                            let s = m[x].control().stall as u32;
                            let cut = deficit.min(s.saturating_sub(1));
                            set(&mut m, x, |k| k.stall -= cut as u8);
                            deficit -= cut;
                        }
                        if deficit == 0 && have >= need {
                            add(Mutation { kind: Kind::LowerStall, instrs: m, text: text.to_vec(), at: c });
                        }
                    }
                }
                let Some(k) = cp.write_sb else { continue };
                if latency::queue(&text[p].opcode) != latency::Queue::None {
                    // A younger result of the same queue may cover it: not a sure hazard.
                    if (p + 1..c).any(|x| latency::queue(&text[x].opcode) == latency::queue(&text[p].opcode)) {
                        continue;
                    }
                }
                // The one wait for SB k between p and c that covers it.
                let covering: Vec<usize> = (p + 1..=c).filter(|&x| waits(instrs, text, x)).collect();
                if covering.len() == 1 && instrs[covering[0]].control().wait == 1 << k {
                    let x = covering[0];
                    let mut m = instrs.to_vec();
                    set(&mut m, x, |c| c.wait = 0);
                    add(Mutation { kind: Kind::DropWait, instrs: m, text: text.to_vec(), at: c });
                }
                // Put p on another scoreboard that nothing up to c waits for, preferably one
                // in use before it.
                if covering.len() == 1 {
                    let free = |j: u8| (p + 1..=c).all(|x| instrs[x].control().wait >> j & 1 == 0);
                    let busy = |j: u8| (b.start..p).any(|x| instrs[x].control().write_sb == Some(j));
                    let pick = (0..6u8).filter(|&j| j != k && free(j)).max_by_key(|&j| busy(j));
                    if let Some(j) = pick {
                        if root(&text[covering[0]].opcode) != "DEPBAR" {
                            let mut m = instrs.to_vec();
                            set(&mut m, p, |c| c.write_sb = Some(j));
                            add(Mutation { kind: Kind::BusyScoreboard, instrs: m, text: text.to_vec(), at: c });
                        }
                    }
                }
            }
        }
        for i in b.start..b.end.saturating_sub(2) {
            let (a, c) = (&ops[i], &ops[i + 1]);
            let meets = |x: &[Reg], y: &[Reg]| x.iter().any(|r| y.contains(r));
            let dependent = meets(&a.defs, &c.uses) || meets(&a.uses, &c.defs) || meets(&a.defs, &c.defs);
            let barrier = root(&text[i + 1].opcode) == "BAR" && mem(&text[i].opcode)
                || root(&text[i].opcode) == "BAR" && mem(&text[i + 1].opcode);
            if dependent || barrier {
                let (mut m, mut t) = (instrs.to_vec(), text.to_vec());
                m.swap(i, i + 1);
                t.swap(i, i + 1);
                let kind = if barrier { Kind::CrossBarrier } else { Kind::SwapDependent };
                add(Mutation { kind, instrs: m, text: t, at: i });
            }
        }
    }
    let mut out = vec![];
    for (_, mut v) in found {
        while v.len() > per_kind {
            let x = rng.below(v.len());
            v.swap_remove(x);
        }
        out.extend(v);
    }
    out
}

fn mem(op: &str) -> bool {
    matches!(root(op), "LDS" | "STS" | "LDG" | "STG" | "LDSM" | "LDGSTS" | "ATOMS" | "ATOMG" | "RED" | "LD" | "ST")
}

/// Injects hazards of five kinds into every corpus kernel and counts how many the verifier
/// catches at the instruction the hazard is at (swaps: the reordering check against the
/// original). Goal: at least 99% of each kind.
#[test]
fn the_verifier_catches_injected_hazards() {
    if !tools_present() {
        eprintln!("skipped: ptxas/nvdisasm not found (scripts/install-tools)");
        return;
    }
    let dir = common::scratch("mutations");
    let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ std::process::id() as u64);
    let mut tally: BTreeMap<Kind, (usize, usize)> = BTreeMap::new();
    let mut missed = vec![];
    for c in corpus(&dir) {
        let cubin = Cubin::parse(&c.bytes).unwrap();
        let sm = cubin.sm();
        for (k, text) in cubin.kernels.iter().zip(common::texts(&cubin, &c.path)) {
            for m in mutations(sm, &k.instrs, &text, &mut rng, 12) {
                let caught = match m.kind {
                    Kind::SwapDependent | Kind::CrossBarrier => {
                        !reordering((&k.instrs, &text), (&m.instrs, &m.text)).is_empty()
                    }
                    _ => timing(sm, &m.instrs, &m.text).iter().any(|v| v.at == m.at),
                };
                let e = tally.entry(m.kind).or_default();
                e.0 += 1;
                e.1 += caught as usize;
                if !caught {
                    missed.push(format!(
                        "{} {} {:?} at {:#06x} `{}`",
                        c.name,
                        k.name,
                        m.kind,
                        16 * m.at,
                        m.text[m.at].line()
                    ));
                }
            }
        }
    }
    for (kind, (n, caught)) in &tally {
        eprintln!("{kind:?}: {caught} of {n} caught");
    }
    for m in missed.iter().take(20) {
        eprintln!("missed: {m}");
    }
    let (n, caught) = tally.values().fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    eprintln!("all kinds: {caught} of {n} injected hazards caught");
    assert_eq!(tally.len(), 5, "every kind injected: {tally:?}");
    for (kind, (n, caught)) in &tally {
        assert!(*n >= 20, "{kind:?}: only {n} injected");
        assert!(*caught * 100 >= *n * 99, "{kind:?}: {caught} of {n} caught");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn plain(t: &Text) -> String {
    t.line().replace(".reuse", "")
}

/// Random legal moves across the corpus (chains of them per cubin): every one repaired to a
/// timing-clean kernel that is a legal reordering of the original; the written cubins parse,
/// and `nvdisasm` reads back the moved instructions; illegal moves are refused with a reason.
#[test]
fn random_legal_moves_give_clean_cubins() {
    if !tools_present() {
        return;
    }
    let dir = common::scratch("moves");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ std::process::id() as u64);
    let cuobjdump = trident_gpu::tools::find(trident_gpu::tools::Tool::Cuobjdump).ok();
    let (mut moves, mut refused, mut repaired, mut written) = (0usize, 0usize, 0usize, 0usize);
    let cases = corpus(&dir);
    for round in 0..2 {
        for c in &cases {
            let original = Cubin::parse(&c.bytes).unwrap();
            let texts = common::texts(&original, &c.path);
            let mut cubin = original.clone();
            let mut now = texts.clone();
            for _ in 0..40 {
                let k = rng.below(cubin.kernels.len());
                let n = now[k].len();
                let i = rng.below(n);
                let (lo, hi) = match legal_range(&now[k], i) {
                    Ok(r) => r,
                    Err(_) => continue,
                };
                if lo == hi {
                    // Nothing to do; an illegal move one step out must be refused, unchanged.
                    let before = cubin.write().unwrap();
                    let by = if i > lo || i == 0 { 1 } else { -1 };
                    assert!(move_instr(&mut cubin, k, &now[k], i, by).is_err());
                    assert_eq!(cubin.write().unwrap(), before);
                    refused += 1;
                    continue;
                }
                let j = lo + rng.below(hi - lo + 1);
                if j == i {
                    continue;
                }
                let by = j as isize - i as isize;
                match move_instr(&mut cubin, k, &now[k], i, by) {
                    Ok(m) => {
                        moves += 1;
                        repaired += (!m.repairs.is_empty()) as usize;
                        now[k] = m.text;
                        let kern = &cubin.kernels[k];
                        let o = &original.kernels[k];
                        let r = reordering((&o.instrs, &texts[k]), (&kern.instrs, &now[k]));
                        assert!(r.is_empty(), "{}: {}", c.name, r[0].describe(&now[k]));
                    }
                    Err(_) => refused += 1,
                }
            }
            let bytes = cubin.write().unwrap();
            let path = dir.join(format!("{}.r{round}.cubin", c.name));
            std::fs::write(&path, &bytes).unwrap();
            let again = Cubin::parse(&bytes).unwrap();
            let read = common::texts(&again, &path);
            for (k, kern) in again.kernels.iter().enumerate() {
                // The control bits as written: timing-clean.
                let v = timing(again.sm(), &kern.instrs, &read[k]);
                assert!(v.is_empty(), "{}: {}", c.name, v[0].describe(&read[k]));
            }
            for (k, (a, b)) in read.iter().zip(&now).enumerate() {
                let (a, b): (Vec<String>, Vec<String>) = (a.iter().map(plain).collect(), b.iter().map(plain).collect());
                assert_eq!(a, b, "{} kernel {k}: nvdisasm reads back the moved instructions", c.name);
            }
            // Every listed instruction offset still names an instruction of the same opcode.
            for (k, kern) in again.kernels.iter().enumerate() {
                for (attr, off) in kern.listed_offsets(&again.elf) {
                    if attr == 0x1c {
                        assert!(read[k][off as usize / 16].opcode.starts_with("EXIT"), "{}: EXIT offset", c.name);
                    }
                }
            }
            if let Some(tool) = &cuobjdump {
                // cuobjdump disassembles through nvdisasm, which it looks for on NVDISASM_PATH.
                let nvdisasm = trident_gpu::tools::find(trident_gpu::tools::Tool::Nvdisasm).unwrap();
                let out = std::process::Command::new(tool)
                    .arg("-sass")
                    .arg(&path)
                    .env("NVDISASM_PATH", nvdisasm.parent().unwrap())
                    .output()
                    .unwrap();
                let listing = String::from_utf8_lossy(&out.stdout);
                assert!(listing.contains("code for sm_"), "cuobjdump lists {}", path.display());
                assert!(
                    out.status.success(),
                    "cuobjdump rejects {}: {}",
                    path.display(),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            written += 1;
        }
    }
    eprintln!(
        "{moves} legal moves ({repaired} needed repairs), {refused} refused, {written} rewritten cubins read back{}",
        if cuobjdump.is_some() { " by nvdisasm and cuobjdump" } else { " by nvdisasm (cuobjdump not installed)" }
    );
    assert!(moves >= 1000, "{moves} moves");
    let _ = std::fs::remove_dir_all(&dir);
}
