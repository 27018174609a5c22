//! The SASS toolkit on Trident's own output (issue 10's corpus, Trident half): every case of
//! the catalog compiled by Trident's pipeline to PTX for sm_80 and sm_90a (identical PTX
//! assembled once), each PTX assembled by `ptxas`, and each cubin checked the way
//! `crates/sass/tests/corpus.rs` checks its corpus:
//!
//! * `trident_sass::Cubin` parses it and writes it back byte for byte;
//! * `nvdisasm -json` lists exactly the instructions the cubin holds, kernel by kernel, and
//!   every instruction's control bits encode back to the same word;
//! * the verifier (`trident_sass::verify::timing`) finds no violation in what `ptxas`
//!   scheduled (a violation there is a false alarm of the verifier: its operand model or
//!   latency table is wrong, not `ptxas`).
//!
//! Needs `ptxas` and `nvdisasm` (scripts/install-tools); without them it prints a skip line.
//! `TRIDENT_SASS_CORPUS_KEEP=DIR` keeps the cubins there, named after their first case
//! (`trident sass dump|verify DIR/FILE.cubin` to look at one).
//! Triton's half of the corpus is `crates/sass/tests/triton_corpus.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use trident_gpu::tools::{find, ptxas, Tool};
use trident_runtime::stages::{compile_stage, Stage, StageOptions, StageOutput};
use trident_runtime::KernelProgram;
use trident_sass::disasm::{disassemble, section_text};
use trident_sass::verify::{reordering, timing};
use trident_sass::Cubin;

const ARCHS: [&str; 2] = ["sm_80", "sm_90a"];

/// What the checks found: any problem fails the test.
#[derive(Default)]
struct Findings {
    problems: Vec<String>,
}

/// One distinct PTX for one architecture, and the catalog cases that compile to it.
struct Unit {
    arch: &'static str,
    ptx: String,
    cases: Vec<String>,
}

/// Trident's PTX of `case` for `arch`, as `trident compile --emit ptx` prints it.
fn trident_ptx(case: &trident_testkit::Case, arch: &str) -> Result<String, String> {
    let prog = KernelProgram::load(&case.kernel_path()).map_err(|e| e.text)?;
    let kernel = prog.kernel(Some(case.kernel)).map_err(|e| e.text)?;
    let opts = StageOptions { arch: arch.into(), num_warps: case.num_warps, ..StageOptions::new(Stage::Ptx) };
    match compile_stage(&prog, kernel, &case.args, &opts).map_err(|e| e.text)? {
        StageOutput::Text(ptx) => Ok(ptx),
        StageOutput::Cubin(_) => Err("asked for PTX, got a cubin".into()),
    }
}

/// Where the cubins are written: `TRIDENT_SASS_CORPUS_KEEP` (kept), else a scratch directory
/// (removed after).
fn cubin_dir() -> (PathBuf, bool) {
    match std::env::var_os("TRIDENT_SASS_CORPUS_KEEP") {
        Some(d) => (PathBuf::from(d), true),
        None => (std::env::temp_dir().join(format!("trident-testkit-sass-corpus-{}", std::process::id())), false),
    }
}

#[test]
fn every_catalog_case_round_trips_disassembles_and_verifies() {
    let (Ok(_), Ok(nvdisasm)) = (find(Tool::Ptxas), find(Tool::Nvdisasm)) else {
        eprintln!("skipped: ptxas/nvdisasm not found (scripts/install-tools)");
        return;
    };
    let t0 = Instant::now();
    // Compile every case for every target; identical PTX (cases that differ only in sizes
    // the kernel is not specialized on) is assembled once.
    let cases = trident_testkit::cases();
    let mut units: Vec<Unit> = vec![];
    let mut index: BTreeMap<(&str, String), usize> = BTreeMap::new();
    let mut failed = vec![];
    for case in &cases {
        for arch in ARCHS {
            match trident_ptx(case, arch) {
                Ok(ptx) => match index.get(&(arch, ptx.clone())) {
                    Some(&u) => units[u].cases.push(case.name.clone()),
                    None => {
                        index.insert((arch, ptx.clone()), units.len());
                        units.push(Unit { arch, ptx, cases: vec![case.name.clone()] });
                    }
                },
                Err(e) => failed.push(format!("{} for {arch}: {e}", case.name)),
            }
        }
    }
    assert!(failed.is_empty(), "Trident did not compile:\n{}", failed.join("\n"));
    let compiled = t0.elapsed();

    let (dir, keep) = cubin_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let (mut kernels, mut instrs, mut per_arch) = (0usize, 0usize, BTreeMap::<&str, usize>::new());
    let mut found = Findings::default();
    for (n, u) in units.iter().enumerate() {
        let what = format!("{} ({}; {} case(s))", u.cases[0], u.arch, u.cases.len());
        let cubin_bytes = ptxas(&u.ptx, u.arch).unwrap_or_else(|e| panic!("{what}: {e}")).cubin;
        let stem: String = u.cases[0].chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
        let path = dir.join(format!("{n:03}.{stem}.{}.cubin", u.arch));
        std::fs::write(&path, &cubin_bytes).unwrap();
        let (k, i) = check_cubin(&what, &cubin_bytes, &path, &nvdisasm, &mut found);
        kernels += k;
        instrs += i;
        *per_arch.entry(u.arch).or_default() += 1;
    }
    if !keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    eprintln!(
        "{} catalog cases x {} targets -> {} distinct cubins ({}), {kernels} kernels, {instrs} instructions; \
         compiled in {:.1?}, checked in {:.1?}",
        cases.len(),
        ARCHS.len(),
        units.len(),
        per_arch.iter().map(|(a, n)| format!("{n} {a}")).collect::<Vec<_>>().join(", "),
        compiled,
        t0.elapsed() - compiled
    );
    let problems = &found.problems;
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
    eprintln!("round trip byte-identical, nvdisasm matched one for one, verifier: no violations");
    assert!(per_arch.len() == ARCHS.len() && kernels >= cases.len() / 2, "{per_arch:?}, {kernels} kernels");
}

/// Round trip, `nvdisasm` match and verifier on one cubin (written at `path`), named `what`;
/// what fails goes to `found`. Returns (kernels, instructions).
fn check_cubin(what: &str, bytes: &[u8], path: &Path, nvdisasm: &Path, found: &mut Findings) -> (usize, usize) {
    let problems = &mut found.problems;
    let cubin = match Cubin::parse(bytes) {
        Ok(c) => c,
        Err(e) => {
            problems.push(format!("{what}: does not parse: {e}"));
            return (0, 0);
        }
    };
    match cubin.write() {
        Ok(out) if out == bytes => {}
        Ok(_) => problems.push(format!("{what}: the round trip changed bytes")),
        Err(e) => problems.push(format!("{what}: cannot write back: {e}")),
    }
    let listings = match disassemble(nvdisasm, path) {
        Ok(l) => l,
        Err(e) => {
            problems.push(format!("{what}: {e}"));
            return (0, 0);
        }
    };
    let mut instrs = 0;
    for k in &cubin.kernels {
        let text = section_text(&cubin, &listings, k.text_section);
        if text.len() != k.instrs.len() {
            problems.push(format!("{what} {}: {} instructions, nvdisasm lists {}", k.name, k.instrs.len(), text.len()));
            continue;
        }
        if let Some(ins) = k.instrs.iter().find(|i| i.control().encode(i.hi) != i.hi) {
            problems.push(format!("{what} {}: control bits at {:#x} do not encode back", k.name, ins.offset));
        }
        for v in timing(cubin.sm(), &k.instrs, &text) {
            problems.push(format!("{what} {}: {}", k.name, v.describe(&text)));
        }
        if !reordering((&k.instrs, &text), (&k.instrs, &text)).is_empty() {
            problems.push(format!("{what} {}: not a legal reordering of itself", k.name));
        }
        instrs += k.instrs.len();
    }
    (cubin.kernels.len(), instrs)
}
