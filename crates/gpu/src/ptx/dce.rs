//! Dead-code elimination on the emitted kernel body.
//!
//! The emitter computes every register of every tensor, but instructions often use only
//! some (a vector load needs the pointer of its first element; a loop-carried pointer
//! tensor is advanced element by element). ptxas removes plain dead code, yet keeps
//! loop-carried recurrences nothing reads. This pass marks, from the instructions with
//! effects (stores, atomics, copies, barriers, branches, calls, traps), every register
//! they read and every instruction writing a marked register, to a fixed point, and
//! drops the rest. Registers are not SSA here, so all writes of a live register stay.

use std::collections::{HashMap, HashSet};

/// Registers named in `s` (`%p1`, `%h2`, `%r3`, `%rd4`; not special registers like `%tid.x`).
fn regs(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let start = i;
            i += 1;
            while i < b.len() && b[i].is_ascii_lowercase() {
                i += 1;
            }
            let letters = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let name = &s[start..i];
            let prefix = &s[start + 1..letters];
            let has_digits = i > letters;
            let dotted = i < b.len() && b[i] == b'.';
            if has_digits && !dotted && matches!(prefix, "p" | "h" | "r" | "rd") {
                out.push(name);
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Opcodes (their first part) known to do nothing but write their destinations from their
/// sources: only these may go when nothing reads what they write. Anything else is kept, so a
/// new kind of instruction is never dropped for want of a rule (`stmatrix` once was, with the
/// epilogue feeding it).
const PURE: &[&str] = &[
    "abs", "add", "and", "bfe", "bfi", "brev", "clz", "cnot", "copysign", "cos", "cvt", "cvta", "div", "dp2a", "dp4a",
    "ex2", "fma", "ld", "ldmatrix", "lg2", "lop3", "mad", "mad24", "max", "min", "mma", "mov", "mul", "mul24", "neg",
    "not", "or", "popc", "prmt", "rcp", "rem", "rsqrt", "sad", "selp", "set", "setp", "shf", "shfl", "shl", "shr",
    "sin", "slct", "sqrt", "sub", "tanh", "testp", "xor",
];

/// Whether an instruction (without its predicate) has effects beyond its destinations (or
/// is not known to have none).
fn has_effect(ins: &str) -> bool {
    let op = ins.split_whitespace().next().unwrap_or("");
    !PURE.contains(&op.split('.').next().unwrap_or(""))
        || op.starts_with("st.")
        || op.starts_with("stmatrix")
        || op.starts_with("atom")
        || op.starts_with("red.")
        || op.starts_with("cp.async")
        || op.starts_with("mbarrier.init")
        || op.starts_with("mbarrier.arrive")
        || op.starts_with("bar")
        || op.starts_with("bra")
        || op.starts_with("call")
        || op.starts_with("ret")
        || op.starts_with("trap")
        || op.starts_with("exit")
        || op.contains(".volatile")
        || op.starts_with("membar")
        || op.starts_with("fence")
        || op.starts_with("wgmma.fence")
        || op.starts_with("wgmma.commit_group")
        || op.starts_with("wgmma.wait_group")
        || op.starts_with("mbarrier")
        || op.starts_with("setmaxnreg")
}

/// Whether the first operand is a destination (false for stores and other effect-only ops).
fn writes_first_operand(ins: &str) -> bool {
    let op = ins.split_whitespace().next().unwrap_or("");
    !(op.starts_with("st.")
        || op.starts_with("stmatrix")
        || op.starts_with("wgmma.fence")
        || op.starts_with("wgmma.commit_group")
        || op.starts_with("wgmma.wait_group")
        || op.starts_with("red.")
        || op.starts_with("cp.async")
        || op.starts_with("bar")
        || op.starts_with("bra")
        || op.starts_with("ret")
        || op.starts_with("trap")
        || op.starts_with("setmaxnreg"))
}

struct Line<'a> {
    text: &'a str,
    /// Never removed (labels, directives, blocks, effects).
    keep: bool,
    defs: Vec<&'a str>,
    uses: Vec<&'a str>,
}

fn parse(line: &str, in_block: bool) -> Line<'_> {
    let t = line.trim();
    let keep_all = Line { text: line, keep: true, defs: vec![], uses: regs(t) };
    if in_block
        || t.is_empty()
        || t.ends_with(':')
        || t.starts_with('.')
        || t.starts_with('{')
        || t.starts_with('}')
        || t.starts_with("//")
    {
        return keep_all;
    }
    let body = t.trim_end_matches(';');
    // Guard predicate.
    let (guard, ins) = if let Some(rest) = body.strip_prefix('@') {
        let mut it = rest.splitn(2, char::is_whitespace);
        let g = it.next().unwrap_or("");
        (Some(g), it.next().unwrap_or("").trim())
    } else {
        (None, body)
    };
    let mut uses: Vec<&str> = guard.map(regs).unwrap_or_default();
    if has_effect(ins) || !writes_first_operand(ins) {
        uses.extend(regs(ins));
        return Line { text: line, keep: true, defs: vec![], uses };
    }
    // Destination: the first operand (a register or a `{...}` list).
    let ops_start = ins.find(char::is_whitespace).map(|i| i + 1).unwrap_or(ins.len());
    let operands = &ins[ops_start..];
    let (dst, rest) = if operands.trim_start().starts_with('{') {
        match operands.find('}') {
            Some(e) => operands.split_at(e + 1),
            None => (operands, ""),
        }
    } else {
        match operands.find(',') {
            Some(c) => operands.split_at(c),
            None => (operands, ""),
        }
    };
    uses.extend(regs(rest));
    Line { text: line, keep: false, defs: regs(dst), uses }
}

/// Removes instructions whose results nothing with an effect depends on.
pub fn eliminate(body: &str) -> String {
    let mut lines = vec![];
    let mut depth = 0i32;
    for l in body.lines() {
        let t = l.trim();
        let opens = t == "{";
        let closes = t == "}";
        if closes {
            depth -= 1;
        }
        lines.push(parse(l, depth > 0 || opens || closes));
        if opens {
            depth += 1;
        }
    }
    // A worklist over registers: the kept lines' uses are live; a live register makes
    // every line writing it live, and their uses in turn. Linear in the body's size (a
    // sweep to a fixed point took one pass per link of the longest dependence chain:
    // quadratic for the reduction of a 1M-element block).
    let mut writers: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, l) in lines.iter().enumerate() {
        for d in &l.defs {
            writers.entry(d).or_default().push(i);
        }
    }
    let mut live = vec![false; lines.len()];
    let mut live_regs: HashSet<&str> = HashSet::new();
    let mut work: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].keep).collect();
    for &i in &work {
        live[i] = true;
    }
    while let Some(i) = work.pop() {
        for &u in &lines[i].uses {
            if live_regs.insert(u) {
                for &w in writers.get(u).map(Vec::as_slice).unwrap_or(&[]) {
                    if !live[w] {
                        live[w] = true;
                        work.push(w);
                    }
                }
            }
        }
    }
    let mut out = String::with_capacity(body.len());
    for (i, l) in lines.iter().enumerate() {
        if live[i] {
            out.push_str(l.text);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_dead_recurrences_and_keeps_what_stores_need() {
        let body = "\tmov.b64 %rd1, %rd9;\n\tmov.b64 %rd2, %rd9;\n$L_head:\n\tadd.s64 %rd1, %rd1, 4;\n\tadd.s64 %rd2, %rd2, 4;\n\tld.global.b32 %r1, [%rd1];\n\t@%p1 st.global.b32 [%rd1], %r1;\n\t@%p2 bra $L_head;\n\tmov.b32 {%h1, %h2}, %r7;\n\tst.shared.b16 [%r8], %h2;\n";
        let out = eliminate(body);
        assert!(!out.contains("%rd2"), "{out}");
        assert!(out.contains("add.s64 %rd1, %rd1, 4"), "{out}");
        assert!(out.contains("ld.global.b32 %r1"), "{out}");
        assert!(out.contains("mov.b32 {%h1, %h2}, %r7"), "{out}");
        assert!(out.contains("bra $L_head"));
        assert_eq!(regs("mov.u32 %r1, %tid.x"), vec!["%r1"]);
    }

    /// Every store form is an effect: a `stmatrix` (whose first operand is an address, not
    /// a destination) keeps the values it stores, and the address computation. So is an
    /// instruction the pass has no rule for (`prefetch`, here): kept, with what it reads.
    #[test]
    fn keeps_stmatrix_and_its_sources() {
        let body = "	add.u32 %r9, %r8, 64;
	mov.b32 %r1, {%h1, %h2};
	mov.b32 %r2, {%h3, %h4};
	mov.b32 %r3, %r7;
	stmatrix.sync.aligned.m8n8.x2.shared.b16 [%r9], {%r1, %r2};
";
        let out = eliminate(body);
        assert!(out.contains("stmatrix.sync"), "{out}");
        assert!(out.contains("mov.b32 %r1, {%h1, %h2}"), "{out}");
        assert!(out.contains("mov.b32 %r2, {%h3, %h4}"), "{out}");
        assert!(out.contains("add.u32 %r9, %r8, 64"), "{out}");
        assert!(!out.contains("%r3"), "{out}");
        let out = eliminate("\tadd.s64 %rd2, %rd1, 128;\n\tprefetch.global.L2 [%rd2];\n\tadd.s64 %rd3, %rd1, 4;\n");
        assert!(out.contains("prefetch.global.L2 [%rd2]") && out.contains("add.s64 %rd2"), "{out}");
        assert!(!out.contains("%rd3"), "{out}");
    }
}
