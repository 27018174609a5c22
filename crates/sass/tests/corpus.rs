//! The toolkit on a corpus of real cubins: every PTX file of the emulator's test data
//! (Triton 3.x's own PTX for vector add, softmax, layer norm, matmul, attention) and of the
//! GPU crate's PTX snapshots (Trident's), compiled by `ptxas` for sm_80 and sm_90a where
//! the PTX allows, and disassembled by `nvdisasm`. Needs both tools (scripts/install-tools).
//!
//! Checked on every cubin and instruction: the round trip is byte-identical; the
//! instructions are `nvdisasm`'s, one for one; control bits encode back to the same word;
//! reuse flags match the `.reuse` operands `nvdisasm` prints; every load that sets a write
//! scoreboard has that scoreboard waited for by the first instruction that reads its result
//! (or one before it); every offset `EIATTR_EXIT_INSTR_OFFSETS` lists is an `EXIT`; each
//! kernel's registers (`EIATTR_REGCOUNT`) are those `ptxas -v` reports.

mod common;

use common::{corpus, tools_present};
use trident_gpu::tools::{find, Tool};
use trident_sass::disasm::{disassemble, section_text, Text};
use trident_sass::Cubin;

/// Registers named in an operand list (`R12`, not `RZ`), with vector widths from the opcode.
fn regs(operands: &str) -> Vec<u32> {
    let mut out = vec![];
    let b = operands.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let starts =
            b[i] == b'R' && (i == 0 || !b[i - 1].is_ascii_alphanumeric() && b[i - 1] != b'U' && b[i - 1] != b'_');
        if starts && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
            let mut j = i + 1;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            out.push(operands[i + 1..j].parse().unwrap());
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

fn width(opcode: &str) -> u32 {
    if opcode.contains(".128") {
        4
    } else if opcode.contains(".64") {
        2
    } else {
        1
    }
}

#[test]
fn the_corpus_round_trips_and_decodes_as_nvdisasm_reads_it() {
    if !tools_present() {
        eprintln!("skipped: ptxas/nvdisasm not found (scripts/install-tools)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("trident-sass-corpus-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = corpus(&dir);
    assert!(cases.len() >= 20, "the corpus compiled: {} cubins", cases.len());
    let nvdisasm = find(Tool::Nvdisasm).unwrap();
    let (mut instrs, mut reuse_ops, mut waited_loads, mut exits) = (0usize, 0usize, 0usize, 0usize);
    let mut checked_regs = 0usize;
    for c in &cases {
        let cubin = Cubin::parse(&c.bytes).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let sm: u32 = c.name.rsplit("sm_").next().unwrap().trim_end_matches('a').parse().unwrap();
        assert_eq!(cubin.sm(), sm, "{}: the SM version from e_flags", c.name);
        assert_eq!(cubin.write().unwrap(), c.bytes, "{}: round trip", c.name);
        let listings = disassemble(&nvdisasm, &c.path).unwrap();
        for k in &cubin.kernels {
            if let Some((_, want)) = c.registers.iter().find(|(f, _)| *f == k.name) {
                assert_eq!(cubin.registers(k), Some(*want), "{} {}: registers as ptxas -v reports", c.name, k.name);
                checked_regs += 1;
            }
            let text = section_text(&cubin, &listings, k.text_section);
            assert_eq!(text.len(), k.instrs.len(), "{} {}: instruction count", c.name, k.name);
            for (ins, t) in k.instrs.iter().zip(&text) {
                instrs += 1;
                let ctl = ins.control();
                assert_eq!(ctl.encode(ins.hi), ins.hi, "{} {} at {:#x}", c.name, k.name, ins.offset);
                let printed = t.operands.matches(".reuse").count();
                assert_eq!(
                    ctl.reuse.count_ones() as usize,
                    printed,
                    "{} {} at {:#x}: `{}` {}",
                    c.name,
                    k.name,
                    ins.offset,
                    t.line(),
                    ctl.text()
                );
                reuse_ops += printed;
            }
            waited_loads += check_load_scoreboards(&c.name, k, &text);
            for (attr, off) in k.listed_offsets(&cubin.elf) {
                if attr == 0x1c {
                    let t = &text[off as usize / 16];
                    assert!(
                        t.opcode.starts_with("EXIT"),
                        "{} {}: EXIT offset {off:#x} is `{}`",
                        c.name,
                        k.name,
                        t.line()
                    );
                    exits += 1;
                }
            }
        }
    }
    eprintln!(
        "{} cubins, {instrs} instructions, {reuse_ops} reuse flags, {waited_loads} load scoreboards, {exits} EXIT offsets checked",
        cases.len()
    );
    assert!(reuse_ops > 0 && waited_loads > 100 && exits > 0);
    assert!(checked_regs >= cases.len(), "register counts checked: {checked_regs}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every global/shared load that sets write scoreboard SB*b*: the first later instruction
/// (before any control flow) that reads one of its destination registers must wait for
/// SB*b* itself or be preceded by one that does. Returns how many loads were checked.
fn check_load_scoreboards(name: &str, k: &trident_sass::Kernel, text: &[Text]) -> usize {
    let mut checked = 0;
    for (i, (ins, t)) in k.instrs.iter().zip(text).enumerate() {
        let is_load = ["LDG", "LDS", "LD.", "LDSM"].iter().any(|p| t.opcode.starts_with(p));
        let Some(sb) = ins.control().write_sb else { continue };
        if !is_load || t.operands.is_empty() {
            continue;
        }
        let dst_first = t.operands.split(',').next().unwrap_or("");
        let Some(&base) = regs(dst_first).first() else { continue };
        let dsts: Vec<u32> = (base..base + width(&t.opcode)).collect();
        let mut waited = false;
        for (ins2, t2) in k.instrs.iter().zip(text).skip(i + 1).take(200) {
            waited |= ins2.control().wait >> sb & 1 == 1;
            if ["BRA", "EXIT", "RET", "CALL", "BAR", "BSYNC", "WARPSYNC"].iter().any(|p| t2.opcode.starts_with(p)) {
                break;
            }
            let srcs: Vec<u32> = t2.operands.split(',').skip(1).flat_map(regs).collect();
            if srcs.iter().any(|r| dsts.contains(r)) {
                assert!(
                    waited,
                    "{name} {}: `{}` at {:#x} reads SB{sb}'s result without waiting for it",
                    k.name,
                    t2.line(),
                    ins2.offset
                );
                checked += 1;
                break;
            }
        }
    }
    checked
}

#[test]
fn damaged_cubins_are_errors_not_panics() {
    if !tools_present() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("trident-sass-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = corpus(&dir);
    let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ std::process::id() as u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut parsed = 0;
    for c in cases.iter().take(6) {
        for _ in 0..400 {
            let mut b = c.bytes.clone();
            match next() % 3 {
                0 => b.truncate((next() % b.len() as u64) as usize),
                1 => {
                    for _ in 0..1 + next() % 8 {
                        let at = (next() % b.len() as u64) as usize;
                        b[at] = next() as u8;
                    }
                }
                _ => {
                    // Corrupt a header field: offsets and counts are what a reader trusts.
                    let at = 16 + (next() % 48) as usize;
                    b[at] = next() as u8;
                }
            }
            if let Ok(cb) = Cubin::parse(&b) {
                parsed += 1;
                let _ = cb.write();
            }
        }
    }
    eprintln!("{parsed} of the mutated cubins still parsed");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Blocks partition every kernel and end at control flow; every read-after-write edge from an
/// instruction that sets a write scoreboard is covered by a wait for that scoreboard (on the
/// reader, an instruction between, or a `DEPBAR`) — the dependence graph and the decoded
/// control bits agree with what `ptxas` scheduled. Prints the latency evidence: the fewest
/// stall cycles `ptxas` left between a fixed-latency producer and its first reader, per
/// opcode.
#[test]
fn dependences_agree_with_the_scoreboards_ptxas_set() {
    use std::collections::BTreeMap;
    use trident_sass::deps::{blocks, dependences, Why};
    if !tools_present() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("trident-sass-deps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let nvdisasm = find(Tool::Nvdisasm).unwrap();
    let (mut edges, mut covered) = (0usize, 0usize);
    let mut latency: BTreeMap<String, (u32, usize)> = BTreeMap::new();
    for c in corpus(&dir) {
        let cubin = Cubin::parse(&c.bytes).unwrap();
        let listings = disassemble(&nvdisasm, &c.path).unwrap();
        for k in &cubin.kernels {
            let text = section_text(&cubin, &listings, k.text_section);
            let bs = blocks(&text);
            assert_eq!(bs.first().map(|b| b.start), Some(0));
            assert_eq!(bs.last().map(|b| b.end), Some(text.len()));
            assert!(bs.windows(2).all(|w| w[0].end == w[1].start && w[0].start < w[0].end));
            for b in bs {
                let es = dependences(&text, b);
                edges += es.len();
                // Only the first reader of each produced register matters for the waits.
                let mut seen = std::collections::HashSet::new();
                for e in es.iter().filter(|e| matches!(e.why, Why::Raw(_))) {
                    let Why::Raw(r) = e.why else { unreachable!() };
                    if !seen.insert((e.from, r)) {
                        continue;
                    }
                    let p = k.instrs[e.from].control();
                    match p.write_sb {
                        Some(sb) => {
                            let ok = (e.from + 1..=e.to).any(|i| {
                                k.instrs[i].control().wait >> sb & 1 == 1 || text[i].opcode.starts_with("DEPBAR")
                            });
                            assert!(
                                ok,
                                "{} {}: `{}` at {:#x} reads {r:?} from `{}` at {:#x} (SB{sb}) without a wait",
                                c.name,
                                k.name,
                                text[e.to].line(),
                                16 * e.to,
                                text[e.from].line(),
                                16 * e.from
                            );
                            covered += 1;
                        }
                        None => {
                            if trident_sass::operands::operands(&text[e.to]).kept.contains(&r) {
                                continue; // a predicated write keeping the old value: no read
                            }
                            let cycles: u32 = (e.from..e.to).map(|i| k.instrs[i].control().stall as u32).sum();
                            let op = text[e.from].opcode.split('.').next().unwrap_or("").to_string();
                            let reader =
                                if trident_sass::latency::memory_reader(&text[e.to].opcode) { "mem" } else { "alu" };
                            let reader = format!(
                                "{reader}{}",
                                if matches!(r, trident_sass::operands::Reg::P(_)) { "/P" } else { "" }
                            );
                            let sm = if c.name.contains("sm_80") && !c.name.ends_with("sm_90a") { 80 } else { 90 };
                            let slot = latency.entry(format!("sm_{sm} {op:<10} -> {reader}")).or_insert((u32::MAX, 0));
                            slot.0 = slot.0.min(cycles);
                            slot.1 += 1;
                        }
                    }
                }
            }
        }
    }
    eprintln!("{edges} dependence edges; {covered} scoreboard-guarded reads covered by a wait");
    eprintln!("fewest stall cycles between a fixed-latency producer and its first reader:");
    for (op, (min, n)) in &latency {
        eprintln!("  {op} {min:>3} cycles (over {n} edges)");
    }
    assert!(covered > 500, "{covered}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The verifier raises no false alarm on what `ptxas` scheduled: every kernel of the corpus
/// is timing-clean, and a kernel is a legal reordering of itself.
#[test]
fn the_verifier_accepts_every_kernel_ptxas_made() {
    use trident_sass::verify::{reordering, timing};
    if !tools_present() {
        return;
    }
    let dir = common::scratch("verify");
    let (mut kernels, mut instrs) = (0, 0);
    for c in corpus(&dir) {
        let cubin = Cubin::parse(&c.bytes).unwrap();
        for (k, text) in cubin.kernels.iter().zip(common::texts(&cubin, &c.path)) {
            let v = timing(cubin.sm(), &k.instrs, &text);
            let lines: Vec<String> = v.iter().map(|v| v.describe(&text)).collect();
            assert!(v.is_empty(), "{} {}: {} false alarms:\n{}", c.name, k.name, v.len(), lines.join("\n"));
            assert!(reordering((&k.instrs, &text), (&k.instrs, &text)).is_empty());
            kernels += 1;
            instrs += k.instrs.len();
        }
    }
    eprintln!("{kernels} kernels, {instrs} instructions: no violations");
    assert!(kernels >= 20);
    let _ = std::fs::remove_dir_all(&dir);
}
