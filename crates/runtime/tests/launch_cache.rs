//! The compile cache in the launch path: hits without recompiling, misses on
//! changed constexprs or source, damaged entries, eviction, and interpreter
//! diagnostics after a hit. Every test uses its own temporary cache directory;
//! a "new process" is a new `Session` on the same directory.

mod common;

use common::*;
use std::fs;
use trident_runtime::args::Backend;
use trident_runtime::cache::Outcome;
use trident_runtime::launch::{launch, prepare};

const VADD_ARGS: [&str; 4] = ["x=randn:f32:1000", "y=randn:f32:1000", "out=empty:f32:1000", "n=1000"];

fn vadd_launch(
    session: &std::sync::Arc<trident_runtime::session::Session>,
    prog: &trident_runtime::KernelProgram,
    backend: Backend,
    block: u32,
    seed: u64,
) -> trident_runtime::launch::LaunchOutcome {
    let mut a = args(&VADD_ARGS, seed);
    a.extend(args(&[&format!("BLOCK={block}")], seed));
    let kernel = prog.kernel(Some("vadd")).unwrap();
    let out = launch(prog, kernel, &mut a, &opts(session, backend, "cdiv(n, BLOCK)")).unwrap_or_else(|e| panic!("{e}"));
    check_vadd(&a, seed);
    out
}

#[test]
fn a_second_identical_launch_does_not_recompile() {
    let dir = TempDir::new("hit");
    let seed = seed();
    let prog = program("vadd.py", VADD);
    for backend in [Backend::Emu, Backend::Interp] {
        let s1 = session(dir.path());
        assert_eq!(vadd_launch(&s1, &prog, backend, 256, seed).cache, Some(Outcome::Miss), "{backend:?}");
        // The same process: the memo answers (no source hashing, no disk).
        assert_eq!(vadd_launch(&s1, &prog, backend, 256, seed + 1).cache, Some(Outcome::Memo), "{backend:?}");
        let c = s1.counts();
        assert_eq!((c.builds, c.loads, c.reuses), (1, 0, 1), "{backend:?}");
        // A new process: read from disk, decoded, and it computes the same thing.
        let s2 = session(dir.path());
        let prog2 = program("vadd.py", VADD);
        assert_eq!(vadd_launch(&s2, &prog2, backend, 256, seed + 2).cache, Some(Outcome::Hit), "{backend:?}");
        let c = s2.counts();
        assert_eq!((c.builds, c.loads), (0, 1), "{backend:?}: no recompilation");
    }
    // One entry per specialization and target.
    let listed = session(dir.path()).cache().unwrap().list();
    let mut targets: Vec<&str> = listed.iter().map(|e| e.summary.split(' ').next().unwrap()).collect();
    targets.sort();
    assert_eq!(targets, ["target=emu-sm_80", "target=tile"]);
}

#[test]
fn a_changed_constexpr_or_source_misses() {
    let dir = TempDir::new("miss");
    let seed = seed();
    let s = session(dir.path());
    let prog = program("vadd.py", VADD);
    assert_eq!(vadd_launch(&s, &prog, Backend::Emu, 128, seed).cache, Some(Outcome::Miss));
    assert_eq!(vadd_launch(&s, &prog, Backend::Emu, 256, seed).cache, Some(Outcome::Miss));
    assert_eq!(vadd_launch(&s, &prog, Backend::Emu, 128, seed).cache, Some(Outcome::Memo));
    // The same kernel with a comment added: another source, another entry.
    let edited = program("vadd.py", &VADD.replace("    m = offs < n", "    # in bounds\n    m = offs < n"));
    assert_eq!(vadd_launch(&s, &edited, Backend::Emu, 128, seed).cache, Some(Outcome::Miss));
    // Another file path (it is in the PTX's line info) is another entry too.
    let moved = program("elsewhere/vadd.py", VADD);
    assert_eq!(vadd_launch(&s, &moved, Backend::Emu, 128, seed).cache, Some(Outcome::Miss));
    // A runtime argument's specialization: n divisible by 16 or not.
    let mut a = args(&["x=randn:f32:1024", "y=randn:f32:1024", "out=empty:f32:1024", "n=1024", "BLOCK=128"], seed);
    let k = prog.kernel(None).unwrap();
    let out = launch(&prog, k, &mut a, &opts(&s, Backend::Emu, "cdiv(n, BLOCK)")).unwrap();
    assert_eq!(out.cache, Some(Outcome::Miss));
    check_vadd(&a, seed);
    assert_eq!(s.cache().unwrap().list().len(), 5);
}

/// The entry directory of the one entry in the cache.
fn only_entry(dir: &std::path::Path) -> std::path::PathBuf {
    let entries: Vec<_> = fs::read_dir(dir.join("kernels")).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    entries[0].clone()
}

#[test]
fn a_damaged_entry_is_rebuilt() {
    let dir = TempDir::new("damaged");
    let seed = seed();
    let prog = program("vadd.py", VADD);
    assert_eq!(vadd_launch(&session(dir.path()), &prog, Backend::Emu, 64, seed).cache, Some(Outcome::Miss));
    // Flip bytes in the middle of the PTX.
    let ptx = only_entry(dir.path()).join("kernel.ptx");
    let mut bytes = fs::read(&ptx).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    fs::write(&ptx, bytes).unwrap();
    let s = session(dir.path());
    assert_eq!(vadd_launch(&s, &prog, Backend::Emu, 64, seed + 1).cache, Some(Outcome::Miss));
    assert_eq!(s.cache().unwrap().stats().totals.corrupt, 1);
    assert_eq!(s.counts().builds, 1);
    // Rebuilt: the next process hits again.
    assert_eq!(vadd_launch(&session(dir.path()), &prog, Backend::Emu, 64, seed + 2).cache, Some(Outcome::Hit));
}

#[test]
fn an_entry_that_verifies_but_cannot_be_decoded_is_recompiled() {
    let dir = TempDir::new("undecodable");
    let seed = seed();
    let prog = program("vadd.py", VADD);
    assert_eq!(vadd_launch(&session(dir.path()), &prog, Backend::Interp, 64, seed).cache, Some(Outcome::Miss));
    // Replace the tile IR with text that does not parse, and make the manifest agree
    // (as an entry written by an incompatible build would).
    let entry = only_entry(dir.path());
    let garbage = b"kernel @vadd( this is not tile IR".to_vec();
    fs::write(entry.join("kernel.ttir"), &garbage).unwrap();
    let manifest_path = entry.join("manifest.json");
    let mut manifest: serde_json::Value = serde_json::from_slice(&fs::read(&manifest_path).unwrap()).unwrap();
    for f in manifest["files"].as_array_mut().unwrap() {
        if f["name"] == "kernel.ttir" {
            f["size"] = garbage.len().into();
            f["blake3"] = blake3::hash(&garbage).to_hex().to_string().into();
        }
    }
    fs::write(&manifest_path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    let s = session(dir.path());
    let out = vadd_launch(&s, &prog, Backend::Interp, 64, seed + 1);
    assert_eq!(out.cache, Some(Outcome::Miss), "recompiled after the failed decode");
    assert_eq!(s.counts().builds, 1);
    assert_eq!(s.cache().unwrap().stats().totals.hits, 1, "the bad entry was found first");
    assert_eq!(vadd_launch(&session(dir.path()), &prog, Backend::Interp, 64, seed + 2).cache, Some(Outcome::Hit));
}

#[test]
fn eviction_keeps_the_cache_under_its_limit() {
    let dir = TempDir::new("evict");
    let seed = seed();
    let prog = program("vadd.py", VADD);
    vadd_launch(&session(dir.path()), &prog, Backend::Emu, 16, seed);
    let one = session(dir.path()).cache().unwrap().stats().bytes;
    // Room for two entries and a half.
    let limit = one * 5 / 2;
    let s = session_limited(dir.path(), limit);
    for block in [32, 64, 128, 256] {
        assert_eq!(vadd_launch(&s, &prog, Backend::Emu, block, seed).cache, Some(Outcome::Miss));
        let st = s.cache().unwrap().stats();
        assert!(st.bytes <= limit, "{} bytes over the limit {limit}", st.bytes);
    }
    let st = s.cache().unwrap().stats();
    assert_eq!(st.entries, 2);
    assert_eq!(st.totals.evicted, 3);
    // The least recently used went first: the newest hit, the oldest compile again.
    let fresh = session_limited(dir.path(), limit);
    assert_eq!(vadd_launch(&fresh, &prog, Backend::Emu, 256, seed).cache, Some(Outcome::Hit));
    assert_eq!(vadd_launch(&fresh, &prog, Backend::Emu, 128, seed).cache, Some(Outcome::Hit));
    assert_eq!(vadd_launch(&fresh, &prog, Backend::Emu, 16, seed).cache, Some(Outcome::Miss));
}

const OOB: &str = r#"import triton
import triton.language as tl


@triton.jit
def shifted_copy(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs + n)
    tl.store(out + offs, v)
"#;

#[test]
fn interpreter_errors_point_at_the_source_after_a_cache_hit() {
    let dir = TempDir::new("diag");
    let seed = seed();
    let run = |s: &std::sync::Arc<trident_runtime::session::Session>| {
        let prog = program("kernels/oob.py", OOB);
        let mut a = args(&["x=randn:f32:64", "out=empty:f32:64", "n=8", "BLOCK=64"], seed);
        let before = a.clone();
        let k = prog.kernel(None).unwrap();
        let o = opts(s, Backend::Interp, "1");
        let prepared = prepare(&prog, k, &a, &o).unwrap();
        let e = launch(&prog, k, &mut a, &o).unwrap_err();
        assert_eq!(a, before, "a failed launch leaves the arguments alone");
        (prepared.cache, e.text)
    };
    let (first, miss_text) = run(&session(dir.path()));
    let (second, hit_text) = run(&session(dir.path()));
    assert_eq!((first, second), (Some(Outcome::Miss), Some(Outcome::Hit)));
    assert_eq!(miss_text, hit_text);
    assert!(hit_text.contains("kernels/oob.py:8:"), "{hit_text}");
    assert!(hit_text.contains("v = tl.load(x + offs + n)"), "{hit_text}");
}

#[test]
fn tile_ir_from_the_cache_prints_as_compiled() {
    let dir = TempDir::new("ttir");
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../kernels/matmul.py")).unwrap();
    let a = args(
        &[
            "a=zeros:f16:16x16",
            "b=zeros:f16:16x16",
            "c=zeros:f16:16x16",
            "M=4096",
            "N=4096",
            "K=4096",
            "stride_am=4096",
            "stride_ak=1",
            "stride_bk=4096",
            "stride_bn=1",
            "stride_cm=4096",
            "stride_cn=1",
        ],
        0,
    );
    let printed = |s| {
        let prog = program("kernels/matmul.py", &text);
        // The autotuned kernel: a tile-IR compile (the interpreter's) takes its first config.
        let k = prog.kernel(Some("matmul_autotuned")).unwrap();
        let p = prepare(&prog, k, &a, &opts(&s, Backend::Interp, "1")).unwrap();
        let po = trident_ir::print::PrintOptions::with_locs();
        (p.cache, trident_ir::print::print_module(&p.module, &po), p.module.files.clone())
    };
    let (c1, t1, f1) = printed(session(dir.path()));
    let (c2, t2, f2) = printed(session(dir.path()));
    assert_eq!((c1, c2), (Some(Outcome::Miss), Some(Outcome::Hit)));
    assert_eq!(t1, t2);
    assert_eq!(f1, f2, "source files restored");
    assert!(t1.contains(" loc(") && t1.contains(" dot "), "{t1}");
}

#[test]
fn an_edited_imported_helper_misses() {
    let dir = TempDir::new("imports");
    let cache_dir = dir.path().join("cache");
    let pkg = dir.path().join("proj");
    fs::create_dir_all(&pkg).unwrap();
    fs::write(pkg.join("__init__.py"), "").unwrap();
    let helper = |body: &str| {
        format!("import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef combine(a, b):\n    return {body}\n")
    };
    fs::write(pkg.join("helpers.py"), helper("a + b")).unwrap();
    fs::write(
        pkg.join("kern.py"),
        "import triton\nimport triton.language as tl\n\nfrom .helpers import combine\n\n\n@triton.jit\n\
         def k(x, y, out, n, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    m = offs < n\n    \
         tl.store(out + offs, combine(tl.load(x + offs, mask=m), tl.load(y + offs, mask=m)), mask=m)\n",
    )
    .unwrap();
    let seed = seed();
    let run = |s: &std::sync::Arc<trident_runtime::session::Session>| {
        let prog = trident_runtime::KernelProgram::load(&pkg.join("kern.py")).unwrap();
        assert_eq!(prog.file.dependencies().count(), 1, "the helper file is followed");
        let mut a = args(&["x=randn:f32:100", "y=randn:f32:100", "out=empty:f32:100", "n=100", "BLOCK=128"], seed);
        let out = launch(&prog, prog.kernel(None).unwrap(), &mut a, &opts(s, Backend::Emu, "1")).unwrap();
        let (x, y, o) = (values(&a, "x"), values(&a, "y"), values(&a, "out"));
        (out.cache, (0..100).map(|i| o[i] - (x[i] as f32 + y[i] as f32) as f64).fold(0.0, f64::max))
    };
    let s = session(&cache_dir);
    assert_eq!(run(&s), (Some(Outcome::Miss), 0.0));
    assert_eq!(run(&s), (Some(Outcome::Memo), 0.0), "a reloaded, unchanged program");
    assert_eq!(run(&session(&cache_dir)), (Some(Outcome::Hit), 0.0));
    // Edit only the imported file: a new entry, and the new helper's result.
    fs::write(pkg.join("helpers.py"), helper("a + b + 1.0")).unwrap();
    let (outcome, diff) = run(&s);
    assert_eq!(outcome, Some(Outcome::Miss));
    assert!((diff - 1.0).abs() < 1e-6, "{diff} (seed {seed})");
}
