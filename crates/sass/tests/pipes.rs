//! The pipe table (`trident_sass::pipes`) against what `ptxas` does. Each experiment is a loop
//! of eight independent chains of one or two operations (interleaved), compiled for sm_80 and
//! sm_90a. Between two consecutive instructions that need the same pipes, `ptxas` leaves the
//! cycles the table says the first holds them (divided among the pipes it may take): for
//! every opcode pair seen at least 20 times so, the most common stall must be that. In an
//! experiment of two operations the table puts on different pipes, their instructions must
//! be seen back to back (a stall of 1), in one order or the other, where seen 20 times in a
//! row.
//! Needs ptxas and nvdisasm (scripts/install-tools).

mod common;

use std::collections::{BTreeMap, HashMap};

use common::{scratch, texts, tools_present};
use trident_gpu::tools::ptxas;
use trident_sass::pipes::pipe;
use trident_sass::Cubin;

/// One operation: its register type and the PTX of one step of chain `d` reading chain `s`.
fn op(kind: &str) -> (&'static str, &'static str) {
    match kind {
        "ffma" => ("f32", "fma.rn.f32 {d}, {d}, 0f3F000000, 0f3F800000;"),
        "fadd" => ("f32", "add.rn.f32 {d}, {d}, {s};"),
        "fmul" => ("f32", "mul.rn.f32 {d}, {d}, {s};"),
        "fmnmx" => ("f32", "max.f32 {d}, {d}, {s};"),
        "fsel" => ("f32", "setp.lt.f32 %p0, {d}, {s}; selp.f32 {d}, {d}, 0f40000000, %p0;"),
        "imad" => ("u32", "mad.lo.u32 {d}, {d}, {s}, 7;"),
        "iadd" => ("u32", "add.u32 {d}, {d}, {s};"),
        "lop" => ("u32", "xor.b32 {d}, {d}, {s};"),
        "shf" => ("u32", "shf.l.wrap.b32 {d}, {d}, {s}, 3;"),
        "imnmx" => ("u32", "max.u32 {d}, {d}, {s};"),
        "prmt" => ("u32", "prmt.b32 {d}, {d}, {s}, 0x3012;"),
        "sel" => ("u32", "setp.lt.u32 %p0, {d}, {s}; selp.u32 {d}, {d}, 5, %p0;"),
        "lea" => ("u32", "shl.b32 %r5, {d}, 3; add.u32 {d}, %r5, {s};"),
        "popc" => ("u32", "popc.b32 {d}, {d};"),
        "cvt" => ("u32", "cvt.rn.f32.u32 %ft, {d}; cvt.rzi.u32.f32 {d}, %ft;"),
        "mufu" => ("f32", "ex2.approx.ftz.f32 {d}, {d};"),
        "hfma2" => ("b32", "fma.rn.f16x2 {d}, {d}, {s}, {s};"),
        "dfma" => ("f64", "fma.rn.f64 {d}, {d}, 0d3FE0000000000000, 0d3FF0000000000000;"),
        "hmma1688" => (
            "mma",
            "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {{d}0,{d}1,{d}2,{d}3}, {%r0,%r1}, {%r2}, \
             {{d}0,{d}1,{d}2,{d}3};",
        ),
        "hmma" => (
            "mma",
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {{d}0,{d}1,{d}2,{d}3}, {%r0,%r1,%r2,%r3}, \
             {%r0,%r2}, {{d}0,{d}1,{d}2,{d}3};",
        ),
        _ => unreachable!("{kind}"),
    }
}

/// The opcodes (roots) `ptxas` makes of an operation.
fn roots(kind: &str) -> &'static [&'static str] {
    match kind {
        "ffma" => &["FFMA"],
        "imad" => &["IMAD"],
        "iadd" => &["IADD3", "IMAD"],
        "lop" => &["LOP3"],
        "mufu" => &["MUFU"],
        "cvt" => &["I2F", "F2I"],
        "dfma" => &["DFMA"],
        "hfma2" => &["HFMA2"],
        "sel" => &["ISETP", "SEL"],
        "fsel" => &["FSETP", "FSEL"],
        "lea" => &["LEA"],
        "hmma" | "hmma1688" => &["HMMA"],
        _ => &[],
    }
}

/// The experiment's kernel: eight chains of each of `kinds`, stepped in turn 64 times.
fn kernel(arch: &str, kinds: &[&str]) -> String {
    const WAYS: usize = 8;
    let (mut decl, mut init, mut body, mut out) = (String::new(), String::new(), String::new(), String::new());
    for k in kinds {
        let (ty, _) = op(k);
        for i in 0..WAYS {
            let d = format!("%{k}_{i}_");
            match ty {
                "mma" => {
                    decl += &format!("\t.reg .f32 {d}<4>;\n");
                    for j in 0..4 {
                        init += &format!("\tcvt.rn.f32.u32 {d}{j}, %r0;\n");
                    }
                    out += &format!("\tmov.b32 %r3, {d}0; xor.b32 %r2, %r2, %r3;\n");
                    continue;
                }
                "f32" => {
                    decl += &format!("\t.reg .f32 {d};\n");
                    init += &format!("\tadd.u32 %r3, %r0, {}; cvt.rn.f32.u32 {d}, %r3;\n", i + 1);
                }
                "f64" => {
                    decl += &format!("\t.reg .f64 {d};\n");
                    init += &format!("\tadd.u32 %r3, %r0, {}; cvt.rn.f64.u32 {d}, %r3;\n", i + 1);
                    out += &format!("\tcvt.rzi.u32.f64 %r3, {d}; xor.b32 %r2, %r2, %r3;\n");
                    continue;
                }
                _ => {
                    decl += &format!("\t.reg .b32 {d};\n");
                    init +=
                        &format!("\tadd.u32 %r3, %r0, {}; shl.b32 %r4, %r3, 16; or.b32 {d}, %r3, %r4;\n", 77 * i + 1);
                }
            }
            out += &format!("\tmov.b32 %r3, {d}; xor.b32 %r2, %r2, %r3;\n");
        }
    }
    for i in 0..WAYS {
        for k in kinds {
            let step =
                op(k).1.replace("{d}", &format!("%{k}_{i}_")).replace("{s}", &format!("%{k}_{}_", (i + 1) % WAYS));
            body += &format!("\t{step}\n");
        }
    }
    format!(
        ".version 8.0\n.target {arch}\n.address_size 64\n.visible .entry chains(.param .u64 out)\n{{\n\
         \t.reg .b32 %r<8>;\n\t.reg .b64 %rd<4>;\n\t.reg .pred %p<2>;\n\t.reg .f32 %ft;\n{decl}\
         \tld.param.u64 %rd1, [out];\n\tmov.u32 %r0, %tid.x;\n{init}\tmov.u32 %r1, 0;\n\tmov.u32 %r2, 0;\n\
         $L_loop:\n{body}\tadd.u32 %r1, %r1, 1;\n\tsetp.lt.u32 %p1, %r1, 64;\n\t@%p1 bra $L_loop;\n{out}\
         \tmul.wide.u32 %rd2, %r0, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n\tst.global.u32 [%rd3], %r2;\n\tret;\n}}\n"
    )
}

#[test]
fn ptxas_spaces_instructions_as_the_pipe_table_says() {
    if !tools_present() {
        eprintln!("skipped: ptxas/nvdisasm not installed (scripts/install-tools)");
        return;
    }
    let experiments: &[&[&str]] = &[
        &["ffma"],
        &["fadd"],
        &["fmul"],
        &["fmnmx"],
        &["imad"],
        &["iadd"],
        &["lop"],
        &["shf"],
        &["imnmx"],
        &["prmt"],
        &["sel"],
        &["fsel"],
        &["lea"],
        &["popc"],
        &["cvt"],
        &["mufu"],
        &["hfma2"],
        &["dfma"],
        &["hmma"],
        &["hmma1688"],
        &["ffma", "imad"],
        &["ffma", "iadd"],
        &["ffma", "lop"],
        &["imad", "lop"],
        &["ffma", "mufu"],
        &["mufu", "cvt"],
        &["ffma", "dfma"],
        &["ffma", "hfma2"],
        &["lop", "hfma2"],
        &["sel", "ffma"],
        &["fsel", "ffma"],
        &["lea", "ffma"],
        &["hmma", "ffma"],
        &["hmma", "hfma2"],
        &["dfma", "hmma"],
    ];
    let dir = scratch("pipes");
    std::fs::create_dir_all(&dir).unwrap();
    let (mut checked, mut pairs) = (0, 0);
    for arch in ["sm_80", "sm_90a"] {
        for kinds in experiments {
            let ptx = kernel(arch, kinds);
            let out = ptxas(&ptx, arch).unwrap_or_else(|e| panic!("{arch} {kinds:?}: {e}"));
            let path = dir.join(format!("{}_{arch}.cubin", kinds.join("_")));
            std::fs::write(&path, &out.cubin).unwrap();
            let cubin = Cubin::parse(&out.cubin).unwrap();
            let text = &texts(&cubin, &path)[0];
            let k = &cubin.kernels[0];
            let sm = cubin.sm();
            let stall = |i: usize| k.instrs[i].control().stall;
            // The stalls between consecutive instructions on the same pipes and on different
            // ones, by opcode pair.
            let mut same: HashMap<(String, String), BTreeMap<u32, usize>> = HashMap::new();
            let mut apart: HashMap<(String, String), BTreeMap<u8, usize>> = HashMap::new();
            for i in 0..text.len() {
                let a = &text[i].opcode;
                let Some(pa) = pipe(sm, a) else { continue };
                if let Some(pb) = text.get(i + 1).and_then(|t| pipe(sm, &t.opcode)) {
                    if pa.pipes.iter().all(|p| !pb.pipes.contains(p)) {
                        let key = (a.clone(), text[i + 1].opcode.clone());
                        *apart.entry(key).or_default().entry(stall(i)).or_default() += 1;
                    }
                }
                if let Some(b) = text.get(i + 1).filter(|t| pipe(sm, &t.opcode).is_some_and(|pb| pb.pipes == pa.pipes))
                {
                    let key = (a.clone(), b.opcode.clone());
                    *same.entry(key).or_default().entry(stall(i) as u32).or_default() += 1;
                }
            }
            for ((a, b), cycles) in &same {
                let n: usize = cycles.values().sum();
                if n < 20 {
                    continue;
                }
                let pa = pipe(sm, a).unwrap();
                let want = (pa.cycles as u32 / pa.pipes.len() as u32).max(1);
                let mode = cycles.iter().max_by_key(|(_, c)| **c).map(|(s, _)| *s).unwrap();
                assert_eq!(
                    mode, want,
                    "{arch} {kinds:?}: `{a}` → `{b}` (same pipes): stalls {cycles:?}, the table says {want}"
                );
                checked += 1;
                pairs += n;
            }
            // Two operations interleaved on different pipes: seen back to back.
            let root = |o: &str| o.split('.').next().unwrap_or(o).to_string();
            let of = |o: &str, kind: &str| roots(kind).contains(&root(o).as_str());
            for ((a, b), stalls) in &apart {
                let Some((k1, k2)) = kinds.first().zip(kinds.get(1)) else { continue };
                if !(of(a, k1) && of(b, k2) || of(a, k2) && of(b, k1)) {
                    continue;
                }
                let back = apart.get(&(b.clone(), a.clone()));
                let n: usize = stalls.values().chain(back.into_iter().flat_map(|m| m.values())).sum();
                if n < 20 || a > b && back.is_some() {
                    continue;
                }
                let least = stalls.keys().chain(back.into_iter().flat_map(|m| m.keys())).min();
                assert_eq!(
                    least,
                    Some(&1),
                    "{arch} {kinds:?}: `{a}` and `{b}` (different pipes) never issue back to back: {stalls:?}, {back:?}"
                );
                checked += 1;
                pairs += n;
            }
        }
    }
    eprintln!("{checked} opcode pairs ({pairs} consecutive instructions) as the table says");
    assert!(checked >= 40, "too few pairs checked: {checked}");
}
