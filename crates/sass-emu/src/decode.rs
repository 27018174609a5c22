//! `nvdisasm`'s text of each instruction turned into what the executor reads: the opcode
//! and its modifiers, the guard predicate, and typed operands. Parsed once per kernel.

use trident_sass::disasm::Text;

/// A register selector suffix (`R4.H1`, `R4.H0_H0`, `R4.B2`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Sel {
    None,
    H0,
    H1,
    /// `.H0_H0` / `.H1_H1`: the half broadcast to both.
    H0H0,
    H1H1,
    B(u8),
}

/// One operand.
#[derive(Clone, Debug, PartialEq)]
pub enum Opnd {
    /// General register (255: `RZ`), with the source modifiers.
    R { n: u8, neg: bool, abs: bool, not: bool, sel: Sel },
    /// Predicate (7: `PT`).
    P { n: u8, not: bool },
    /// Uniform register (63: `URZ`).
    Ur { n: u8, neg: bool, not: bool },
    /// Uniform predicate (7: `UPT`).
    Up { n: u8, not: bool },
    /// A hex immediate, as bits (`0x4`, `-0x20`, `0xff800000`).
    Imm(u64),
    /// A decimal immediate, as a value (`1.5`, `-126`, `-INF`, `1.4426950216293334961`).
    FImm(f64),
    /// `c[bank][offset]`, `c[bank][R+offset]`, `c[bank][UR+offset]`.
    C { bank: u8, off: i64, reg: Option<u8>, ureg: Option<u8>, neg: bool, abs: bool },
    /// A memory address: `[R2.64+0x10]`, `[R0+UR4+0x800]`, `desc[UR4][R2.64]`, `[R2.X4]`
    /// (the register scaled by 4).
    Mem { reg: Option<u8>, wide: bool, scale: u8, ureg: Option<u8>, off: i64 },
    /// `SR_TID.X`, `SR_CTAID.X`, `SR_LANEID`, `SRZ`, ...
    Sr(String),
    /// A branch target: instruction index.
    Label(usize),
    /// Anything else (`SB0`, `B0`, `gsb0`, `{4,3}`), kept as text.
    Other(String),
}

/// One decoded instruction.
#[derive(Clone, Debug)]
pub struct Op {
    /// Guard predicate: (index, negated, uniform). `None`: always.
    pub guard: Option<(u8, bool, bool)>,
    /// `IMAD`, `LDG`, ...
    pub root: String,
    /// The modifiers after the root, in order (`WIDE`, `U32`, ...).
    pub mods: Vec<String>,
    pub ops: Vec<Opnd>,
    /// The text, for messages.
    pub text: String,
}

impl Op {
    pub fn has(&self, m: &str) -> bool {
        self.mods.iter().any(|x| x == m)
    }
}

fn num(s: &str) -> Option<i64> {
    let (neg, t) = match s.strip_prefix('-') {
        Some(t) => (true, t),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = if let Some(h) = t.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()? as i64
    } else {
        t.parse::<i64>().ok()?
    };
    Some(if neg { v.wrapping_neg() } else { v })
}

fn reg_num(s: &str, prefix: &str, zero: &str, zero_n: u8) -> Option<u8> {
    if s == zero {
        return Some(zero_n);
    }
    let d = s.strip_prefix(prefix)?;
    if d.is_empty() || !d.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    d.parse().ok()
}

/// `[R2.64+UR4+0x10]` → its parts.
fn address(inner: &str) -> Option<Opnd> {
    let (mut reg, mut wide, mut ureg, mut off, mut scale) = (None, false, None, 0i64, 1u8);
    let mut parts = vec![];
    let mut cur = String::new();
    for ch in inner.chars() {
        if (ch == '+' || ch == '-') && !cur.is_empty() {
            parts.push(std::mem::take(&mut cur));
        }
        cur.push(ch);
    }
    if !cur.is_empty() {
        parts.push(cur);
    }
    for p in parts {
        let p = p.trim_start_matches('+');
        if p.is_empty() {
            continue; // `+-0x8`: the sign comes with the number
        }
        let p = match p.split_once(".X") {
            Some((r, k)) => {
                scale = k.parse().ok()?;
                r
            }
            None => p,
        };
        if let Some(r) = p.strip_suffix(".64") {
            reg = Some(reg_num(r, "R", "RZ", 255)?);
            wide = true;
        } else if let Some(n) = reg_num(p, "UR", "URZ", 63) {
            ureg = Some(n);
        } else if let Some(n) = reg_num(p, "R", "RZ", 255) {
            reg = Some(n);
        } else {
            off = off.wrapping_add(num(p)?);
        }
    }
    Some(Opnd::Mem { reg, wide, scale, ureg, off })
}

fn operand(s: &str) -> Opnd {
    let s = s.trim().replace(".reuse", "");
    let other = || Opnd::Other(s.clone());
    if let Some(rest) = s.strip_prefix("desc[") {
        // desc[URn][address]: the cache-policy descriptor is ignored.
        return rest.split_once("][").and_then(|(_, a)| address(a.strip_suffix(']')?)).unwrap_or_else(other);
    }
    if s.starts_with('[') && s.ends_with(']') {
        return address(&s[1..s.len() - 1]).unwrap_or_else(other);
    }
    // Source modifiers.
    let mut t = s.as_str();
    let (mut neg, mut abs, mut not) = (false, false, false);
    if let Some(x) = t.strip_prefix('-') {
        if !x.starts_with(|c: char| c.is_ascii_digit()) && !x.starts_with("INF") && !x.starts_with("QNAN") {
            neg = true;
            t = x;
        }
    }
    if let Some(x) = t.strip_prefix('!') {
        not = true;
        t = x;
    }
    if let Some(x) = t.strip_prefix('~') {
        not = true;
        t = x;
    }
    if t.starts_with('|') && t.ends_with('|') && t.len() > 2 {
        abs = true;
        t = &t[1..t.len() - 1];
    }
    if let Some(c) = t.strip_prefix("c[") {
        let Some((bank, rest)) = c.split_once("][") else { return other() };
        let Some(bank) = num(bank) else { return other() };
        let Some(Opnd::Mem { reg, ureg, off, .. }) = address(rest.trim_end_matches(']')) else { return other() };
        return Opnd::C { bank: bank as u8, off, reg: reg.filter(|&r| r != 255), ureg, neg, abs };
    }
    if t.starts_with("SR") {
        return Opnd::Sr(t.to_string());
    }
    let (base, sel) = match t.split_once('.') {
        Some((b, "H0")) => (b, Sel::H0),
        Some((b, "H1")) => (b, Sel::H1),
        Some((b, "H0_H0")) => (b, Sel::H0H0),
        Some((b, "H1_H1")) => (b, Sel::H1H1),
        Some((b, x)) if x.len() == 2 && x.starts_with('B') => (b, Sel::B(x[1..].parse().unwrap_or(0))),
        _ => (t, Sel::None),
    };
    if let Some(n) = reg_num(base, "UR", "URZ", 63) {
        return Opnd::Ur { n, neg, not };
    }
    if let Some(n) = reg_num(base, "UP", "UPT", 7) {
        return Opnd::Up { n, not };
    }
    if let Some(n) = reg_num(base, "R", "RZ", 255) {
        return Opnd::R { n, neg, abs, not, sel };
    }
    if let Some(n) = reg_num(base, "P", "PT", 7) {
        return Opnd::P { n, not };
    }
    // Hex immediates are bits; decimal ones are values (nvdisasm prints float operands in
    // decimal, `-126` included): the executor converts by the instruction's type.
    if s.trim_start_matches(['-', '+']).starts_with("0x") {
        if let Some(v) = num(&s) {
            return Opnd::Imm(v as u64);
        }
    }
    let f = match s.as_str() {
        "INF" | "+INF" => Some(f64::INFINITY),
        "-INF" => Some(f64::NEG_INFINITY),
        "QNAN" | "+QNAN" | "-QNAN" | "NAN" => Some(f64::NAN),
        _ => s.parse::<f64>().ok(),
    };
    match f {
        Some(f) => Opnd::FImm(f),
        None => other(),
    }
}

/// Decodes one instruction (`index`: its position, for branch targets).
pub fn decode(t: &Text) -> Op {
    let mut parts = t.opcode.split('.');
    let root = parts.next().unwrap_or("").to_string();
    let mods: Vec<String> = parts.map(str::to_string).collect();
    let guard = (!t.predicate.is_empty()).then(|| {
        let p = t.predicate.trim_start_matches('@');
        let (neg, p) = match p.strip_prefix('!') {
            Some(x) => (true, x),
            None => (false, p),
        };
        if let Some(n) = reg_num(p, "UP", "UPT", 7) {
            (n, neg, true)
        } else {
            (reg_num(p, "P", "PT", 7).unwrap_or(7), neg, false)
        }
    });
    let branchy = matches!(root.as_str(), "BRA" | "BSSY" | "CALL" | "JMP" | "BREAK" | "BRX");
    let ops = if t.operands.is_empty() {
        vec![]
    } else {
        t.operands
            .split(',')
            // `[R9][R12.64]` (LDGSTS's shared and global addresses, printed together).
            .flat_map(|o| match o.trim().strip_prefix('[').and_then(|x| x.split_once("][")) {
                Some((a, b)) => vec![format!("[{a}]"), format!("[{b}")],
                None => vec![o.to_string()],
            })
            .map(|o| {
                let o = o.as_str();
                let o = o.trim();
                if branchy {
                    if let Some(h) = o.strip_prefix("0x") {
                        if let Ok(v) = u64::from_str_radix(h, 16) {
                            return Opnd::Label((v / 16) as usize);
                        }
                    }
                }
                operand(o)
            })
            .collect()
    };
    Op { guard, root, mods, ops, text: t.line() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(op: &str, ops: &str) -> Op {
        decode(&Text { predicate: String::new(), opcode: op.into(), operands: ops.into() })
    }

    #[test]
    fn operands_parse() {
        let o = d("IMAD.WIDE.U32", "R4,R0.reuse,0x4,R4");
        assert_eq!(o.root, "IMAD");
        assert!(o.has("WIDE") && o.has("U32"));
        assert_eq!(o.ops[1], Opnd::R { n: 0, neg: false, abs: false, not: false, sel: Sel::None });
        assert_eq!(o.ops[2], Opnd::Imm(4));
        let o = d("FSETP.GT.AND", "P1,PT,|R8|,8.50705917302346158658e+37,PT");
        assert_eq!(o.ops[1], Opnd::P { n: 7, not: false });
        assert_eq!(o.ops[2], Opnd::R { n: 8, neg: false, abs: true, not: false, sel: Sel::None });
        assert_eq!(o.ops[3], Opnd::FImm("8.50705917302346158658e+37".parse().unwrap()));
        let o = d("LDG.E", "R3,desc[UR6][R4.64+0x10]");
        assert_eq!(o.ops[1], Opnd::Mem { reg: Some(4), wide: true, scale: 1, ureg: None, off: 16 });
        let o = d("STS", "[R7+UR4+-0x8],R10");
        assert_eq!(o.ops[0], Opnd::Mem { reg: Some(7), wide: false, scale: 1, ureg: Some(4), off: -8 });
        let o = d("STS", "[R2.X4],R13");
        assert_eq!(o.ops[0], Opnd::Mem { reg: Some(2), wide: false, scale: 4, ureg: None, off: 0 });
        let o = d("LDGSTS.E.BYPASS.128", "[R9][R12.64],P1");
        assert_eq!(o.ops.len(), 3);
        assert_eq!(o.ops[1], Opnd::Mem { reg: Some(12), wide: true, scale: 1, ureg: None, off: 0 });
        let o = d("LDC.64", "R2,c[0x0][0x220]");
        assert_eq!(o.ops[1], Opnd::C { bank: 0, off: 0x220, reg: None, ureg: None, neg: false, abs: false });
        let o = d("FADD", "R8,-R8,R3");
        assert_eq!(o.ops[1], Opnd::R { n: 8, neg: true, abs: false, not: false, sel: Sel::None });
        let o = d("FSETP.GEU.AND", "P1,PT,R8,-126,PT");
        assert_eq!(o.ops[3], Opnd::FImm(-126.0));
        let o = d("IADD3", "R1,R1,-0x20,RZ");
        assert_eq!(o.ops[2], Opnd::Imm((-0x20i64) as u64));
        let o = d("BRA", "0x4b0");
        assert_eq!(o.ops[0], Opnd::Label(0x4b));
        let o = decode(&Text { predicate: "@!P0".into(), opcode: "EXIT".into(), operands: String::new() });
        assert_eq!(o.guard, Some((0, true, false)));
        let o = d("HADD2.F32", "R10,-RZ,R10.H0_H0");
        assert_eq!(o.ops[2], Opnd::R { n: 10, neg: false, abs: false, not: false, sel: Sel::H0H0 });
    }
}
