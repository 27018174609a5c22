//! The toolkit on Triton's own cubins (issue 10's corpus, Triton half): every `*.cubin` in the
//! directory `TRIDENT_TRITON_SASS_CORPUS` names — what `scripts/triton-sass-corpus.py` writes:
//! every catalog case AOT-compiled by Triton (3.9) for sm_80 and sm_90a, assembled by the
//! `ptxas` Triton bundles. Not committed (a few MB); without the variable the test prints how
//! to make it and passes. Trident's half is `crates/testkit/tests/sass_corpus.rs`.
//!
//! Checked on every cubin: the round trip is byte-identical; `nvdisasm -json` lists exactly
//! the cubin's instructions, kernel by kernel, and every control word encodes back; the SM
//! version read from `e_flags` is the one the file name says; the verifier finds no
//! violation in what `ptxas` scheduled (none may be a false alarm), and every kernel is a
//! legal reordering of itself.

use std::path::PathBuf;

use trident_gpu::tools::{find, Tool};
use trident_sass::disasm::{disassemble, section_text};
use trident_sass::verify::{reordering, timing};
use trident_sass::Cubin;

#[test]
fn tritons_cubins_round_trip_disassemble_and_verify() {
    let Some(dir) = std::env::var_os("TRIDENT_TRITON_SASS_CORPUS").map(PathBuf::from) else {
        eprintln!(
            "skipped: TRIDENT_TRITON_SASS_CORPUS is not set; make the corpus with \
             `~/.cache/trident-conformance/bin/python scripts/triton-sass-corpus.py DIR` (a Python with \
             triton and torch) and run with TRIDENT_TRITON_SASS_CORPUS=DIR"
        );
        return;
    };
    let Ok(nvdisasm) = find(Tool::Nvdisasm) else {
        eprintln!("skipped: nvdisasm not found (scripts/install-tools)");
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "cubin"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no *.cubin in {}", dir.display());
    let t0 = std::time::Instant::now();
    let (mut kernels, mut instrs) = (0usize, 0usize);
    let mut per_sm = std::collections::BTreeMap::<u32, usize>::new();
    let mut problems: Vec<String> = vec![];
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let bytes = std::fs::read(path).unwrap();
        let cubin = match Cubin::parse(&bytes) {
            Ok(c) => c,
            Err(e) => {
                problems.push(format!("{name}: does not parse: {e}"));
                continue;
            }
        };
        *per_sm.entry(cubin.sm()).or_default() += 1;
        if let Some(sm) = name.rsplit("sm_").next().and_then(|s| s.split('.').next()) {
            let sm: u32 = sm.trim_end_matches('a').parse().unwrap_or(0);
            if sm != 0 && sm != cubin.sm() {
                problems.push(format!("{name}: e_flags say sm_{}", cubin.sm()));
            }
        }
        match cubin.write() {
            Ok(out) if out == bytes => {}
            Ok(_) => problems.push(format!("{name}: the round trip changed bytes")),
            Err(e) => problems.push(format!("{name}: cannot write back: {e}")),
        }
        let listings = match disassemble(&nvdisasm, path) {
            Ok(l) => l,
            Err(e) => {
                problems.push(format!("{name}: {e}"));
                continue;
            }
        };
        for k in &cubin.kernels {
            let text = section_text(&cubin, &listings, k.text_section);
            if text.len() != k.instrs.len() {
                problems.push(format!(
                    "{name} {}: {} instructions, nvdisasm lists {}",
                    k.name,
                    k.instrs.len(),
                    text.len()
                ));
                continue;
            }
            if let Some(ins) = k.instrs.iter().find(|i| i.control().encode(i.hi) != i.hi) {
                problems.push(format!("{name} {}: control bits at {:#x} do not encode back", k.name, ins.offset));
            }
            for v in timing(cubin.sm(), &k.instrs, &text) {
                problems.push(format!("{name} {}: {}", k.name, v.describe(&text)));
            }
            if !reordering((&k.instrs, &text), (&k.instrs, &text)).is_empty() {
                problems.push(format!("{name} {}: not a legal reordering of itself", k.name));
            }
            kernels += 1;
            instrs += k.instrs.len();
        }
    }
    eprintln!(
        "{} Triton cubins ({}), {kernels} kernels, {instrs} instructions, checked in {:.1?}",
        files.len(),
        per_sm.iter().map(|(sm, n)| format!("{n} sm_{sm}")).collect::<Vec<_>>().join(", "),
        t0.elapsed()
    );
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
    eprintln!("round trip byte-identical, nvdisasm matched one for one, verifier: 0 violations");
}
