//! Which registers an instruction writes and reads, from `nvdisasm`'s text of it.
//!
//! Conservative by construction: where an operand's width is not known exactly, it is taken
//! wide (a 64-bit pair, a 4-register fragment), so a dependence is never missed — a schedule
//! search may lose a legal move, never make an illegal one. The zero and true registers
//! (`RZ`, `PT`, `URZ`, `UPT`) carry nothing.

use crate::disasm::Text;

/// A register: general (`R`), predicate (`P`), uniform (`UR`), uniform predicate (`UP`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reg {
    R(u16),
    P(u8),
    Ur(u16),
    Up(u8),
}

impl std::fmt::Display for Reg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reg::R(n) => write!(f, "R{n}"),
            Reg::P(n) => write!(f, "P{n}"),
            Reg::Ur(n) => write!(f, "UR{n}"),
            Reg::Up(n) => write!(f, "UP{n}"),
        }
    }
}

/// What an instruction writes and reads (the guard predicate included in `uses`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Operands {
    pub defs: Vec<Reg>,
    pub uses: Vec<Reg>,
    /// The registers in `uses` only because a predicated instruction keeps their old value
    /// where its predicate is false: an ordering constraint (the write must land after the
    /// earlier one), not an operand read through the register file — no latency applies.
    pub kept: Vec<Reg>,
}

/// Opcodes that write no register: stores, reductions, control flow, barriers, fences.
const NO_DEFS: &[&str] = &[
    "ST",
    "STG",
    "STS",
    "STL",
    "STSM",
    "RED",
    "REDG",
    "REDUX.",
    "BAR",
    "BRA",
    "BRX",
    "JMP",
    "EXIT",
    "RET",
    "CALL",
    "BSYNC",
    "WARPSYNC",
    "DEPBAR",
    "MEMBAR",
    "FENCE",
    "ERRBAR",
    "CCTL",
    "NOP",
    "YIELD",
    "LDGDEPBAR",
    "ARRIVES",
    "WARPGROUP",
    "UTMA",
    "UTMALDG",
    "UTMASTG",
    "UTMAREDG",
    "UTMAPF",
    "UTMACCTL",
    "UBLKCP",
    "UTMACMDFLUSH",
    "SYNCS.CCTL",
    "BREAK",
    "BPT",
    "KILL",
    "NANOSLEEP",
    "LDGSTS",
    "ACQBULK",
    "BMOV",
];

fn starts(op: &str, list: &[&str]) -> bool {
    list.iter().any(|p| op == *p || op.starts_with(&format!("{p}.")) || (p.ends_with('.') && op.starts_with(p)))
}

/// Registers written by one destination operand of `opcode`, starting at `base`.
fn def_width(opcode: &str) -> u16 {
    let has = |s: &str| opcode.split('.').any(|p| p == s);
    // An mbarrier arrival's state is a 64-bit pair (`SYNCS.ARRIVE.TRANS64.A1T0 R2, ...` then
    // R2 and R3 read as `mbarrier.arrive`'s 64-bit result: experiment, ptxas 13.0).
    if opcode.starts_with("SYNCS.ARRIVE") {
        return 2;
    }
    // `CS2R R4, SRZ` writes the pair R4:R5 (a 64-bit special register: `SRZ`, `SR_CLOCKLO`);
    // `CS2R.32` one register.
    if opcode.split('.').next() == Some("CS2R") {
        return if has("32") { 1 } else { 2 };
    }
    if let Some([d, _]) = conversion_widths(opcode) {
        return d;
    }
    if opcode.starts_with("HGMMA") || opcode.starts_with("WGMMA") {
        // 64xNxK with f32/s32 accumulators: N/2 registers per thread (f16: N/4).
        let n = opcode
            .split('.')
            .find_map(|p| p.strip_prefix("64x").and_then(|r| r.split('x').next()).and_then(|n| n.parse::<u16>().ok()))
            .unwrap_or(256);
        return if has("F16") && !has("F32") { (n / 4).max(1) } else { (n / 2).max(1) };
    }
    if let Some([d, _, _]) = mma_widths(opcode) {
        return d;
    }
    if opcode.starts_with("LDSM") {
        return if has("4") {
            4
        } else if has("2") {
            2
        } else {
            1
        };
    }
    if has("128") {
        4
    } else if has("64") || has("WIDE") || has("F64") || opcode.starts_with('D') && !opcode.starts_with("DEPBAR") {
        2
    } else {
        1
    }
}

/// A conversion's destination and source widths from its types. `nvdisasm` leaves out
/// 32-bit defaults: `I2F.U64` names the (integer) source only, `I2F.F64` the (float)
/// destination; for `F2F`/`I2I` the first type is the destination's.
fn conversion_widths(opcode: &str) -> Option<[u16; 2]> {
    let mut parts = opcode.split('.');
    let root = parts.next()?;
    if !matches!(root, "F2F" | "F2I" | "I2F" | "I2I" | "F2IP" | "I2FP") {
        return None;
    }
    let types: Vec<&str> = parts
        .filter(|p| {
            p.len() >= 2
                && matches!(&p[..1], "F" | "S" | "U" | "B")
                && p[1..].trim_start_matches('F').chars().all(|c| c.is_ascii_digit())
                && p.chars().any(|c| c.is_ascii_digit())
        })
        .collect();
    let float = |t: &&&str| t.starts_with('F') || t.starts_with("BF");
    let w = |t: Option<&&str>| if t.is_some_and(|t| t.ends_with("64")) { 2 } else { 1 };
    let (d, s) = match root {
        "I2F" | "I2FP" => (types.iter().find(float), types.iter().find(|t| !float(t))),
        "F2I" | "F2IP" => (types.iter().find(|t| !float(t)), types.iter().find(float)),
        _ => (types.first(), types.get(1)),
    };
    Some([w(d), w(s)])
}

/// Register counts of a warp-level MMA's operands `[D, A, B]` (C is as wide as D), from
/// its shape and types (PTX ISA's fragment layouts); unknown shapes are taken wide.
fn mma_widths(opcode: &str) -> Option<[u16; 3]> {
    if !(opcode.starts_with("HMMA") || opcode.starts_with("IMMA") || opcode.starts_with("DMMA")) {
        return None;
    }
    let has = |s: &str| opcode.split('.').any(|p| p == s);
    let d = if opcode.starts_with("DMMA") || has("F32") || has("S32") || !has("F16") { 4 } else { 2 };
    let (a, b) = if opcode.starts_with("DMMA") {
        (2, 2)
    } else if has("16816") || has("16832") {
        (4, 2)
    } else if has("1688") {
        if has("TF32") {
            (4, 2)
        } else {
            (2, 1)
        }
    } else if has("1684") || has("8816") || has("8832") {
        (2, 1)
    } else {
        (4, 4)
    };
    Some([d, a, b])
}

/// Registers a source register covers, from where it stands in its operand (`at`: the
/// byte where its name starts): `R2.64` is a pair, an address register inside brackets one
/// register, a `desc[URn]` cache-policy descriptor a uniform pair; otherwise wide opcodes
/// read pairs or fragments (taken wide). `last`: the operand is the instruction's last,
/// which is the 64-bit addend of the `.WIDE` multiply-adds.
fn use_width(opcode: &str, operand: &str, at: usize, last: bool) -> u16 {
    let rest = &operand[at..];
    let name_len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
    if rest[name_len..].starts_with(".64") {
        return 2;
    }
    let before = &operand[..at];
    if before.matches('[').count() > before.matches(']').count() {
        return if before.ends_with("desc[") { 2 } else { 1 };
    }
    if let Some([_, src]) = conversion_widths(opcode) {
        return src;
    }
    let has = |s: &str| opcode.split('.').any(|p| p == s);
    // `STSM.16.M88.4 [R17], R48` stores four 8x8 matrices from R48..R51 (`.2`: two).
    if opcode.starts_with("STSM") {
        return if has("4") {
            4
        } else if has("2") {
            2
        } else {
            1
        };
    }
    let memory = ["ST", "RED", "ATOM", "LD"].iter().any(|p| opcode.starts_with(p));
    if memory {
        // The data operand of a store or atomic: as wide as the access.
        return if has("128") {
            4
        } else if has("64") {
            2
        } else {
            1
        };
    }
    // `IMAD.WIDE`'s and `IMAD.HI`'s addend is a 64-bit pair (`IMAD.HI R9, R17, R15, R4` adds
    // R5:R4 to the 64-bit product before taking its high word: ptxas folds an add into it).
    if has("WIDE") || opcode.starts_with("IMAD") && has("HI") {
        return if last { 2 } else { 1 };
    }
    if has("64") || has("F64") || opcode.starts_with('D') && !opcode.starts_with("DEPBAR") {
        2
    } else {
        1
    }
}

/// The registers named in one operand, in order: `R12`, `P0`, `UR4`, `UP1` (not `RZ`/`PT`/
/// `URZ`/`UPT`, not `SR_*`/`SB*`).
fn named(operand: &str) -> Vec<(Reg, usize)> {
    let b = operand.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        let prev_alnum = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        let (kind, len) = if prev_alnum {
            (None, 1)
        } else if b[i..].starts_with(b"UR") {
            (Some('U'), 2)
        } else if b[i..].starts_with(b"UP") {
            (Some('V'), 2)
        } else if b[i] == b'R' {
            (Some('R'), 1)
        } else if b[i] == b'P' {
            (Some('P'), 1)
        } else {
            (None, 1)
        };
        let Some(k) = kind else {
            i += len;
            continue;
        };
        let mut j = i + len;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > i + len {
            let n: u16 = operand[i + len..j].parse().unwrap_or(0);
            let reg = match k {
                'R' => Reg::R(n),
                'P' => Reg::P(n as u8),
                'U' => Reg::Ur(n),
                _ => Reg::Up(n as u8),
            };
            out.push((reg, i));
        }
        i = j.max(i + 1);
    }
    out
}

fn span(r: Reg, width: u16) -> impl Iterator<Item = Reg> {
    (0..width.max(1)).map(move |k| match r {
        Reg::R(n) => Reg::R(n.saturating_add(k)),
        Reg::Ur(n) => Reg::Ur(n.saturating_add(k)),
        other => other,
    })
}

/// The predicates `P2R`/`R2P` move through `PR`: those of the mask (the last operand, an
/// immediate), all seven (`P0`–`P6`) where it is not one.
fn pr_mask(ops: &[&str]) -> Vec<Reg> {
    let mask = ops
        .last()
        .and_then(|o| o.trim().strip_prefix("0x"))
        .and_then(|h| u8::from_str_radix(h, 16).ok())
        .unwrap_or(0x7f);
    (0..7u8).filter(|k| mask >> k & 1 == 1).map(Reg::P).collect()
}

/// Uniform registers each bracketed operand of an asynchronous copy covers (`[URa]` names a
/// run), from experiment (`ptxas` 13.0, ranks 1–5; the SASS emulator's `tma` module has the
/// table): `UTMALDG.nD [dst, mbarrier, n coordinates], [map address pair]`, `UTMASTG.nD
/// [src, n coordinates], [map]`, `UBLKCP.S.G [dst, mbarrier], [global pair], size`, `UBLKCP.G.S
/// [global pair], [src], size`, `UTMACCTL.PF [map]`. Forms not established (`UTMAPF`,
/// `.IM2COL`, `.MULTICAST`, `UTMAREDG`) are taken wide: the copy's run plus one, a pair.
fn async_copy_widths(opcode: &str) -> Option<[u16; 2]> {
    let root = opcode.split('.').next()?;
    let has = |s: &str| opcode.split('.').any(|p| p == s);
    let n = opcode.split('.').find_map(|p| p.strip_suffix('D').and_then(|d| d.parse::<u16>().ok())).unwrap_or(5);
    let established = !has("IM2COL") && !has("MULTICAST");
    Some(match root {
        "UTMALDG" if established => [2 + n, 2],
        "UTMASTG" if established => [1 + n, 2],
        "UTMALDG" | "UTMASTG" | "UTMAREDG" | "UTMAPF" => [3 + n, 2],
        "UBLKCP" if has("S") && opcode.ends_with(".G") => [2, 2],
        "UBLKCP" if has("G") && opcode.ends_with(".S") => [2, 1],
        "UBLKCP" => [2, 2],
        "UTMACCTL" => [2, 2],
        _ => return None,
    })
}

/// The registers `t` writes and reads.
pub fn operands(t: &Text) -> Operands {
    let op = t.opcode.as_str();
    let ops: Vec<&str> = if t.operands.is_empty() { vec![] } else { t.operands.split(',').collect() };
    let mut out = Operands::default();
    // `P2R R11, PR, RZ, 0x40` comes out of `nvdisasm -json` as predicate `PR`, operands
    // `R11,RZ,0x40`: the predicate register file, read (its mask's predicates), not a guard.
    // `R2P PR, R8, 0x1f` keeps `PR` among the operands: it writes the mask's predicates.
    let pr_operand = t.predicate == "PR";
    if op.starts_with("P2R") && (pr_operand || ops.first().is_some_and(|o| o.trim() == "PR")) {
        out.uses.extend(pr_mask(&ops));
    }
    if op.starts_with("R2P") && ops.first().is_some_and(|o| o.trim() == "PR") {
        out.defs.extend(pr_mask(&ops));
    }
    // `UP2UR UR24, UPR, URZ, 0x1`: the uniform form of `P2R` (uniform predicates UP0..UP6 as
    // bits of a uniform register), which reads the mask's uniform predicates.
    let upr_operand = t.predicate == "UPR" || ops.get(1).is_some_and(|o| o.trim() == "UPR");
    if op.starts_with("UP2UR") && upr_operand {
        out.uses.extend(pr_mask(&ops).into_iter().map(|r| match r {
            Reg::P(k) => Reg::Up(k),
            other => other,
        }));
    }
    if !upr_operand {
        for (r, _) in named(&t.predicate) {
            out.uses.push(r);
        }
    }
    // How many leading operands are destinations.
    let ndefs = if starts(op, NO_DEFS) {
        0
    } else if op.contains("SETP") || op.starts_with("PLOP3") || op.starts_with("UPLOP3") || op.starts_with("SHFL") {
        // Two predicates out; `SHFL PT, R8, ...`: the lane-valid predicate, then the value.
        2
    } else if op.starts_with("ELECT")
        || op.starts_with("R2UR") && ops.first().is_some_and(|o| matches!(named(o).first(), Some((Reg::P(_), _))))
    {
        // `ELECT P0, UR4, PT`: the leader predicate and its lane id; `R2UR P0, UR7, R0`: the
        // lanes whose value differs, and the uniform value (experiment, ptxas 13.0).
        2
    } else if ops.get(1).is_some_and(|o| named(o).first().is_some_and(|(r, _)| matches!(r, Reg::P(_) | Reg::Up(_)))) {
        // A carry or flag out (`IADD3 R0, P0, ...`, `LEA ... P1`): written too.
        2
    } else {
        1
    };
    let copy = async_copy_widths(op);
    for (i, o) in ops.iter().enumerate() {
        let regs = named(o);
        if let Some(w) = copy.and_then(|w| w.get(i).copied()).filter(|_| o.trim_start().starts_with('[')) {
            for (r, _) in regs {
                out.uses.extend(span(r, if matches!(r, Reg::Ur(_)) { w } else { 1 }));
            }
            continue;
        }
        if i < ndefs && !o.starts_with('[') {
            for (r, _) in regs {
                let w = if matches!(r, Reg::R(_) | Reg::Ur(_)) { def_width(op) } else { 1 };
                out.defs.extend(span(r, w));
            }
        } else {
            for (r, at) in regs {
                let last = i + 1 == ops.len();
                let w = match (mma_widths(op), r) {
                    (Some([d, a, b]), Reg::R(_)) => [d, a, b, d].get(i).copied().unwrap_or(d),
                    (_, Reg::R(_) | Reg::Ur(_)) => use_width(op, o, at, last),
                    _ => 1,
                };
                out.uses.extend(span(r, w));
            }
        }
    }
    // An instruction that writes part of a register pair under a predicate, or a
    // read-modify-write accumulator (`HMMA ... R4`), reads its destination too: a
    // conditional write keeps the old value where the predicate is false.
    if !t.predicate.is_empty() && !pr_operand && t.predicate != "UPR"
        || op.starts_with("HMMA")
        || op.starts_with("HGMMA")
        || op.starts_with("IMMA")
    {
        let d = out.defs.clone();
        out.kept = d.iter().filter(|r| !out.uses.contains(r)).copied().collect();
        out.uses.extend(d);
    }
    out.defs.sort();
    out.defs.dedup();
    out.uses.sort();
    out.uses.dedup();
    out.kept.sort();
    out.kept.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(pred: &str, op: &str, ops: &str) -> Operands {
        operands(&Text { predicate: pred.into(), opcode: op.into(), operands: ops.into() })
    }

    #[test]
    fn destinations_sources_and_widths() {
        let o = t("", "IMAD.MOV.U32", "R1,RZ,RZ,c[0x0][0x28]");
        assert_eq!((o.defs, o.uses), (vec![Reg::R(1)], vec![]));
        let o = t("@!P1", "IADD3", "R2,P0,R2,0x1,-R9");
        assert_eq!(o.defs, vec![Reg::R(2), Reg::P(0)]);
        assert_eq!(o.uses, vec![Reg::R(2), Reg::R(9), Reg::P(0), Reg::P(1)]);
        let o = t("", "CS2R", "R4,SRZ");
        assert_eq!(o.defs, vec![Reg::R(4), Reg::R(5)], "CS2R writes a pair");
        let o = t("", "CS2R.32", "R4,SR_CLOCKLO");
        assert_eq!(o.defs, vec![Reg::R(4)]);
        let o = t("", "LDG.E.128", "R4,[R2.64+0x10]");
        assert_eq!(o.defs, (4..8).map(Reg::R).collect::<Vec<_>>());
        assert_eq!(o.uses, vec![Reg::R(2), Reg::R(3)]);
        let o = t("", "STG.E", "[R2.64],R5");
        assert!(o.defs.is_empty());
        assert_eq!(o.uses, vec![Reg::R(2), Reg::R(3), Reg::R(5)]);
        // `stmatrix.x4`: four registers of data (the search once moved one above the writes
        // of its last two, which neither the mask nor the verifier saw).
        let o = t("", "STSM.16.M88.4", "[R17],R48");
        assert!(o.defs.is_empty());
        assert_eq!(o.uses, vec![Reg::R(17), Reg::R(48), Reg::R(49), Reg::R(50), Reg::R(51)]);
        let o = t("", "STSM.16.MT88.2", "[R3+0x400],R8");
        assert_eq!(o.uses, vec![Reg::R(3), Reg::R(8), Reg::R(9)]);
        let o = t("", "ISETP.GE.AND", "P0,PT,R3,UR4,PT");
        assert_eq!(o.defs, vec![Reg::P(0)]);
        assert_eq!(o.uses, vec![Reg::R(3), Reg::Ur(4)]);
        let o = t("", "IMAD.WIDE.U32", "R2,R0,0x4,R4");
        assert_eq!(o.defs, vec![Reg::R(2), Reg::R(3)]);
        let o = t("", "HMMA.16816.F32", "R8,R12,R16,R8");
        assert_eq!(o.defs, (8..12).map(Reg::R).collect::<Vec<_>>());
        assert!(o.uses.contains(&Reg::R(15)) && o.uses.contains(&Reg::R(17)) && !o.uses.contains(&Reg::R(18)));
        let o = t("", "LDGSTS.E.BYPASS.LTC128B.128", "[R3+0x800],[R70.64],P4");
        assert_eq!(o.uses, vec![Reg::R(3), Reg::R(70), Reg::R(71), Reg::P(4)]);
        let o = t("", "LDGSTS.E.BYPASS.LTC128B.128", "[R3+0x800][R70.64],P4");
        assert_eq!(o.uses, vec![Reg::R(3), Reg::R(70), Reg::R(71), Reg::P(4)]);
        let o = t("", "LDG.E.128", "R4,desc[UR6][R2.64+0x10]");
        assert_eq!(o.uses, vec![Reg::R(2), Reg::R(3), Reg::Ur(6), Reg::Ur(7)]);
        let o = t("", "STS.128", "[R9+0x10],R4");
        assert_eq!(o.uses, (4..8).chain([9]).map(Reg::R).collect::<Vec<_>>());
        let o = t("@P0", "MOV", "R8,RZ");
        assert_eq!((o.uses, o.kept), (vec![Reg::R(8), Reg::P(0)], vec![Reg::R(8)]));
        let o = t("", "F2F.F32.F64", "R8,R10");
        assert_eq!((o.defs, o.uses), (vec![Reg::R(8)], vec![Reg::R(10), Reg::R(11)]));
        let o = t("", "F2F.F64.F32", "R8,R10");
        assert_eq!((o.defs, o.uses), (vec![Reg::R(8), Reg::R(9)], vec![Reg::R(10)]));
        let o = t("", "I2F.U64", "R12,R12");
        assert_eq!((o.defs, o.uses), (vec![Reg::R(12)], vec![Reg::R(12), Reg::R(13)]));
        let o = t("", "F2I.S64.F64", "R12,R14");
        assert_eq!((o.defs.len(), o.uses.len()), (2, 2));
        let o = t("", "SHFL.BFLY", "PT,R8,R63,0x2,0x1f");
        assert_eq!((o.defs, o.uses), (vec![Reg::R(8)], vec![Reg::R(63)]));
        let o = t("", "IMAD.HI", "R9,R17,R15,R4");
        assert_eq!(o.uses, vec![Reg::R(4), Reg::R(5), Reg::R(15), Reg::R(17)]);
        let o = t("", "S2R", "R7,SR_CTAID.X");
        assert_eq!((o.defs, o.uses), (vec![Reg::R(7)], vec![]));
        let o = t("", "BAR.SYNC.DEFER_BLOCKING", "0x0");
        assert!(o.defs.is_empty() && o.uses.is_empty());
    }

    #[test]
    fn asynchronous_copies_and_mbarriers() {
        let ur = |r: std::ops::Range<u16>| r.map(Reg::Ur).collect::<Vec<_>>();
        // UTMALDG.2D [UR8], [UR6]: destination, mbarrier, two coordinates; the map's pair.
        let o = t("@!UP1", "UTMALDG.2D", "[UR8],[UR6]");
        assert!(o.defs.is_empty());
        assert_eq!(o.uses, [ur(6..12), vec![Reg::Up(1)]].concat());
        let o = t("", "UTMASTG.3D", "[UR16],[UR14]");
        assert_eq!(o.uses, ur(14..20));
        let o = t("", "UBLKCP.S.G", "[UR6],[UR8],UR4");
        assert_eq!(o.uses, [ur(4..5), ur(6..10)].concat());
        let o = t("", "UBLKCP.G.S", "[UR8],[UR6],UR7");
        assert_eq!(o.uses, ur(6..10));
        // The arrival's state is a pair; its count a single register.
        let o = t("", "SYNCS.ARRIVE.TRANS64.A1T0", "R2,[UR6+0x2000],RZ");
        assert_eq!((o.defs, o.uses), (vec![Reg::R(2), Reg::R(3)], vec![Reg::Ur(6)]));
        let o = t("@!P0", "SYNCS.ARRIVE.TRANS64", "RZ,[UR8+0x2000],R0");
        assert_eq!((o.defs, o.uses), (vec![], vec![Reg::R(0), Reg::P(0), Reg::Ur(8)]));
        let o = t("", "SYNCS.PHASECHK.TRANS64.TRYWAIT", "P0,[R0+URZ],R3");
        assert_eq!((o.defs, o.uses), (vec![Reg::P(0)], vec![Reg::R(0), Reg::R(3)]));
        let o = t("@!UP1", "SYNCS.EXCH.64", "URZ,[UR8+0x2000],UR4");
        assert_eq!((o.defs, o.uses), (vec![], vec![Reg::Ur(4), Reg::Ur(5), Reg::Ur(8), Reg::Up(1)]));
        let o = t("@P2", "ELECT", "P1,URZ,PT");
        assert_eq!((o.defs, o.uses), (vec![Reg::P(1)], vec![Reg::P(1), Reg::P(2)]));
        let o = t("", "ELECT", "P0,UR4,PT");
        assert_eq!(o.defs, vec![Reg::P(0), Reg::Ur(4)]);
        let o = t("@P2", "R2UR", "P0,UR7,R0");
        assert_eq!(o.defs, vec![Reg::P(0), Reg::Ur(7)]);
        assert!(o.uses.contains(&Reg::R(0)) && !o.kept.contains(&Reg::R(0)));
    }

    #[test]
    fn the_predicate_register_file_is_an_operand_not_a_guard() {
        // `P2R R11, PR, RZ, 0x40` as `nvdisasm -json` gives it: reads P6, writes R11,
        // unconditionally (nothing kept).
        let o = t("PR", "P2R", "R11,RZ,0x40");
        assert_eq!((o.defs, o.uses, o.kept), (vec![Reg::R(11)], vec![Reg::P(6)], vec![]));
        let o = t("PR", "P2R", "R2,R2,0x21");
        assert_eq!(o.uses, vec![Reg::R(2), Reg::P(0), Reg::P(5)]);
        // `R2P PR, R8, 0x1f` writes P0..P4 from R8.
        let o = t("", "R2P", "PR,R8.reuse,0x1f");
        assert_eq!((o.defs, o.uses), ((0..5).map(Reg::P).collect::<Vec<_>>(), vec![Reg::R(8)]));
        // A real guard on one still keeps its destination.
        let o = t("@P1", "R2P", "PR,R8,0x3");
        assert_eq!(o.kept, vec![Reg::P(0)]);
        // `UP2UR UR24, UPR, URZ, 0x5`: the uniform form reads UP0 and UP2, writes UR24,
        // whether `UPR` comes as the predicate field or among the operands.
        for o in [t("UPR", "UP2UR", "UR24,URZ,0x5"), t("", "UP2UR", "UR24,UPR,URZ,0x5")] {
            assert_eq!(o.defs, vec![Reg::Ur(24)], "{o:?}");
            assert!(o.uses.contains(&Reg::Up(0)) && o.uses.contains(&Reg::Up(2)), "{o:?}");
            assert!(!o.uses.contains(&Reg::Up(1)) && o.kept.is_empty(), "{o:?}");
        }
    }
}
