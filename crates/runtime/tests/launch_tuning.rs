//! Autotuning in the launch path, on the emulator (modelled clock, deterministic):
//! the choice matches per-config times measured here, is reused from memory
//! and from disk without benchmarking, skips configs that do not compile or
//! do not fit, and never leaves tuning runs' writes in the caller's tensors.

mod common;

use common::*;
use std::sync::Arc;
use trident_runtime::args::{Backend, RunCommand};
use trident_runtime::autotune::Decision;
use trident_runtime::autotune::{ChoiceSource, TrialError, TrialOutcome, TuneValue};
use trident_runtime::cache::Outcome;
use trident_runtime::launch::launch;
use trident_runtime::session::Session;
use trident_runtime::KernelProgram;

/// Configs whose modelled costs differ (on the H100 model, 65536 elements take 2.8 µs in
/// 128 blocks of 512 on one warp each and 3.4 µs in 8 blocks of 8192: with so few blocks
/// each warp's loads are serialised), with the fastest neither first nor last and no ties.
const TUNED_VADD: &str = r#"import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 2048}, num_warps=1),
        triton.Config({"BLOCK": 512}, num_warps=1),
        triton.Config({"BLOCK": 8192}, num_warps=1),
        triton.Config({"BLOCK": 4096}, num_warps=1),
    ],
    key=["n"],
)
@triton.jit
def vadd(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)
"#;

const N: &str = "n=65536";
const GRID: &str = "cdiv(n, BLOCK)";

fn vadd_args(seed: u64) -> Vec<trident_runtime::Arg> {
    args(&["x=randn:f32:65536", "y=randn:f32:65536", "out=empty:f32:65536", N], seed)
}

fn block_of(c: &trident_runtime::autotune::TuneConfig) -> i64 {
    match c.get("BLOCK") {
        Some(TuneValue::Int(b)) => *b,
        other => panic!("BLOCK is {other:?}"),
    }
}

/// The modelled time of each config, measured by launching it pinned (no cache).
fn modelled_times(prog: &KernelProgram, seed: u64) -> Vec<(i64, u32, f64)> {
    let s = Arc::new(Session::uncached().quiet(true));
    let k = prog.kernel(None).unwrap();
    let mut out = vec![];
    for (block, warps) in [(2048, 1), (512, 1), (8192, 1), (4096, 1)] {
        let mut a = vadd_args(seed);
        a.extend(args(&[&format!("BLOCK={block}")], seed));
        let mut o = opts(&s, Backend::Emu, GRID);
        o.num_warps = Some(warps);
        let r = launch(prog, k, &mut a, &o).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.tuning.as_ref().unwrap().decided_by, Decision::Pinned);
        check_vadd(&a, seed);
        out.push((block, warps, r.run_time.as_secs_f64() * 1e3));
    }
    out
}

#[test]
fn tuning_picks_the_config_the_modelled_clock_says_is_fastest_and_reuses_it() {
    let dir = TempDir::new("tune");
    let seed = seed();
    let prog = program("tuned_vadd.py", TUNED_VADD);
    let k = prog.kernel(None).unwrap();
    let times = modelled_times(&prog, seed);
    let fastest = times.iter().min_by(|a, b| a.2.total_cmp(&b.2)).unwrap();
    let slowest = times.iter().map(|t| t.2).fold(0.0, f64::max);
    assert!(slowest > 1.1 * fastest.2, "the configs' modelled costs should differ: {times:?}");
    let ties = times.iter().filter(|t| t.2 == fastest.2).count();
    assert_eq!(ties, 1, "one config must be fastest: {times:?}");

    let s = session(dir.path());
    let mut a = vadd_args(seed + 1);
    let out = launch(&prog, k, &mut a, &opts(&s, Backend::Emu, GRID)).unwrap();
    check_vadd(&a, seed + 1);
    let t = out.tuning.expect("an autotuned kernel reports its config");
    assert_eq!(t.decided_by, Decision::Tuner(ChoiceSource::Benchmarked));
    assert_eq!((block_of(&t.config), t.config.num_warps), (fastest.0, fastest.1), "{times:?}");
    assert_eq!(t.bench_runs, 4, "one run per config on the modelled clock");
    // Every config was measured, and at the time measured here (the clock is deterministic).
    assert_eq!(t.results.len(), 4);
    for r in &t.results {
        let TrialOutcome::Timed(timing) = &r.outcome else { panic!("{r:?}") };
        let want = times.iter().find(|x| x.0 == block_of(&r.config)).unwrap().2;
        assert!((timing.median_ms - want).abs() <= 1e-12 * want, "{r:?} vs {want}");
    }
    // The launch ran the chosen config's grid.
    assert_eq!(out.grid, [(65536 / fastest.0) as u32, 1, 1]);

    // Same process, same key: remembered, nothing benchmarked, kernel from memory.
    let mut a = vadd_args(seed + 2);
    let out = launch(&prog, k, &mut a, &opts(&s, Backend::Emu, GRID)).unwrap();
    check_vadd(&a, seed + 2);
    let t = out.tuning.unwrap();
    assert_eq!((t.decided_by, t.bench_runs), (Decision::Tuner(ChoiceSource::Memo), 0));
    assert_eq!(out.cache, Some(Outcome::Memo));

    // A new process: the choice comes from disk, the kernel too; nothing runs but the launch.
    let s2 = session(dir.path());
    let prog2 = program("tuned_vadd.py", TUNED_VADD);
    let mut a = vadd_args(seed + 3);
    let out = launch(&prog2, prog2.kernel(None).unwrap(), &mut a, &opts(&s2, Backend::Emu, GRID)).unwrap();
    check_vadd(&a, seed + 3);
    let t = out.tuning.unwrap();
    assert_eq!((t.decided_by, t.bench_runs), (Decision::Tuner(ChoiceSource::Disk), 0));
    assert_eq!(block_of(&t.config), fastest.0);
    assert_eq!(out.cache, Some(Outcome::Hit));
    assert_eq!(s2.counts().builds, 0, "nothing compiled");

    // Another key (n) is tuned afresh.
    let mut a = args(&["x=randn:f32:4096", "y=randn:f32:4096", "out=empty:f32:4096", "n=4096"], seed + 4);
    let out = launch(&prog2, prog2.kernel(None).unwrap(), &mut a, &opts(&s2, Backend::Emu, GRID)).unwrap();
    check_vadd(&a, seed + 4);
    assert_eq!(out.tuning.unwrap().decided_by, Decision::Tuner(ChoiceSource::Benchmarked));
}

#[test]
fn given_constexprs_skip_tuning_and_the_interpreter_takes_the_first_config() {
    let dir = TempDir::new("pinned");
    let seed = seed();
    let prog = program("tuned_vadd.py", TUNED_VADD);
    let k = prog.kernel(None).unwrap();
    let s = session(dir.path());
    // BLOCK given: used as is, with the warps of the config that sets it.
    let mut a = vadd_args(seed);
    a.extend(args(&["BLOCK=512"], seed));
    let out = launch(&prog, k, &mut a, &opts(&s, Backend::Emu, GRID)).unwrap();
    check_vadd(&a, seed);
    let t = out.tuning.unwrap();
    assert_eq!((t.decided_by, t.bench_runs, t.config.num_warps), (Decision::Pinned, 0, 1));
    assert_eq!(out.grid, [128, 1, 1]);
    // The interpreter's wall clock says nothing about GPUs: the first config, untimed.
    let mut a = vadd_args(seed);
    let out = launch(&prog, k, &mut a, &opts(&s, Backend::Interp, GRID)).unwrap();
    check_vadd(&a, seed);
    let t = out.tuning.unwrap();
    assert_eq!((t.decided_by, t.bench_runs, block_of(&t.config)), (Decision::FirstConfig, 0, 2048));
    assert!(s.cache().unwrap().list().len() == 2);
    assert_eq!(std::fs::read_dir(dir.path().join("autotune")).unwrap().count(), 0, "nothing tuned");
}

/// A tiled transpose: BLOCK=256 needs 256 KiB of shared memory for the
/// transposition (more than sm_80 has); BLOCK=48 is not a power of two.
const TUNED_TRANSPOSE: &str = r#"import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 256}),
        triton.Config({"BLOCK": 48}),
        triton.Config({"BLOCK": 32}),
        triton.Config({"BLOCK": 16}),
    ],
    key=["n"],
)
@triton.jit
def transpose(x, out, n, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = (r[:, None] < n) & (c[None, :] < n)
    t = tl.load(x + r[:, None] * n + c[None, :], mask=m)
    mt = (c[:, None] < n) & (r[None, :] < n)
    tl.store(out + c[:, None] * n + r[None, :], tl.trans(t), mask=mt)
"#;

#[test]
fn configs_that_do_not_compile_or_do_not_fit_are_skipped() {
    let dir = TempDir::new("skips");
    let seed = seed();
    let prog = program("transpose.py", TUNED_TRANSPOSE);
    let s = session(dir.path());
    let mut a = args(&["x=randn:f32:40x40", "out=empty:f32:40x40", "n=40"], seed);
    let out =
        launch(&prog, prog.kernel(None).unwrap(), &mut a, &opts(&s, Backend::Emu, "cdiv(n, BLOCK), cdiv(n, BLOCK)"))
            .unwrap_or_else(|e| panic!("{e}"));
    let (x, o) = (values(&a, "x"), values(&a, "out"));
    for i in 0..40 {
        for j in 0..40 {
            assert_eq!(o[j * 40 + i], x[i * 40 + j], "({i}, {j}) seed {seed}");
        }
    }
    let t = out.tuning.unwrap();
    let outcome = |b: i64| &t.results.iter().find(|r| block_of(&r.config) == b).unwrap().outcome;
    assert!(
        matches!(outcome(256), TrialOutcome::Skipped(TrialError::OutOfResources(m)) if m.contains("shared memory")),
        "{:?}",
        outcome(256)
    );
    assert!(
        matches!(outcome(48), TrialOutcome::Skipped(TrialError::Compile(m)) if m.contains("transpose.py:")),
        "{:?}",
        outcome(48)
    );
    assert!(matches!(outcome(32), TrialOutcome::Timed(_)));
    assert!(matches!(outcome(16), TrialOutcome::Timed(_)));
    assert!([16, 32].contains(&block_of(&t.config)));
    // Failed compilations are not cached; the two that compiled are.
    assert_eq!(s.cache().unwrap().list().len(), 2);
}

/// Accumulates into `acc` (so each run changes it) and bumps `x` in place.
const TUNED_ACCUMULATE: &str = r#"import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 32})],
    key=["n"],
    reset_to_zero=["acc"],
    restore_value=["x"],
)
@triton.jit
def accumulate(x, acc, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m)
    tl.atomic_add(acc + offs, v, mask=m)
    tl.store(x + offs, v + 1.0, mask=m)
"#;

#[test]
fn tuning_runs_leave_the_callers_tensors_as_they_were() {
    let dir = TempDir::new("protect");
    let seed = seed();
    let prog = program("accumulate.py", TUNED_ACCUMULATE);
    let s = session(dir.path());
    let mut a = args(&["x=randn:f32:300", "acc=randn:f32:300", "n=300"], seed);
    let before = a.clone();
    let out = launch(&prog, prog.kernel(None).unwrap(), &mut a, &opts(&s, Backend::Emu, "cdiv(n, BLOCK)")).unwrap();
    assert_eq!(out.tuning.unwrap().bench_runs, 3);
    // Exactly one launch's effect: acc0 + x0 and x0 + 1, not three tuning runs' worth.
    let (x0, acc0) = (values(&before, "x"), values(&before, "acc"));
    let (x1, acc1) = (values(&a, "x"), values(&a, "acc"));
    for i in 0..300 {
        assert_eq!(acc1[i], (acc0[i] as f32 + x0[i] as f32) as f64, "acc[{i}] seed {seed}");
        assert_eq!(x1[i], (x0[i] as f32 + 1.0) as f64, "x[{i}] seed {seed}");
    }
}

#[test]
fn the_bundled_autotuned_matmul_runs_on_the_emulator_with_tuning() {
    let dir = TempDir::new("matmul");
    let seed = seed();
    // What `trident run` does with these words.
    let words = "kernels/matmul.py::matmul_autotuned --backend emu --grid cdiv(M,BLOCK_M)*cdiv(N,BLOCK_N) \
                 a=randn:f16:96x80 b=randn:f16:80x112 c=empty:f16:96x112 M=96 N=112 K=80 \
                 stride_am=80 stride_ak=1 stride_bk=112 stride_bn=1 stride_cm=112 stride_cn=1";
    let words: Vec<&str> = words.split_whitespace().collect();
    let mut cmd = RunCommand::parse(&words).unwrap();
    cmd.seed = seed;
    cmd.file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(&cmd.file);
    let prog = KernelProgram::load(&cmd.file).unwrap();
    let kernel = prog.kernel(cmd.kernel.as_deref()).unwrap();
    let mut a = cmd.materialize().unwrap();
    let s = session(dir.path());
    let mut o = opts(&s, cmd.backend, "1");
    o.grid_expr = cmd.grid_expr.clone();
    let out = launch(&prog, kernel, &mut a, &o).unwrap_or_else(|e| panic!("{e}"));
    let t = out.tuning.unwrap();
    assert_eq!(t.decided_by, Decision::Tuner(ChoiceSource::Benchmarked));
    assert_eq!(t.bench_runs, 5);
    let best = t
        .results
        .iter()
        .map(|r| match &r.outcome {
            TrialOutcome::Timed(x) => x.median_ms,
            o => panic!("{o:?}"),
        })
        .fold(f64::INFINITY, f64::min);
    let chosen = t.results.iter().find(|r| r.config == t.config).unwrap();
    assert!(matches!(&chosen.outcome, TrialOutcome::Timed(x) if x.median_ms == best));
    // C = A @ B in f32, rounded to f16.
    let (am, bm, cm) = (values(&a, "a"), values(&a, "b"), values(&a, "c"));
    for i in 0..96 {
        for j in 0..112 {
            let want: f64 = (0..80).map(|k| am[i * 80 + k] * bm[k * 112 + j]).sum();
            let got = cm[i * 112 + j];
            assert!((got - want).abs() <= 2e-2 + 2e-3 * want.abs(), "c[{i},{j}] = {got}, want {want} (seed {seed})");
        }
    }
}

/// `prune_configs_by` (host Python: not run, every config is tuned) and
/// `@triton.heuristics` computed for each config.
const PRUNED_WITH_HEURISTICS: &str = r#"import triton
import triton.language as tl


def _only_first(configs, named_args, **kwargs):
    return configs[:1]


@triton.autotune(
    configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 256})],
    key=["n"],
    prune_configs_by={"early_config_prune": _only_first},
)
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def vadd(x, y, out, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out + offs, tl.load(x + offs) + tl.load(y + offs))
    else:
        m = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)
"#;

#[test]
fn prune_hooks_are_not_run_and_heuristics_apply_per_config() {
    let dir = TempDir::new("heuristics");
    let seed = seed();
    let prog = program("pruned.py", PRUNED_WITH_HEURISTICS);
    let k = prog.kernel(None).unwrap();
    let s = session(dir.path());
    let mut a = args(&["x=randn:f32:384", "y=randn:f32:384", "out=empty:f32:384", "n=384"], seed);
    let o = opts(&s, Backend::Emu, GRID);
    let prepared = trident_runtime::launch::prepare(&prog, k, &a, &o).unwrap();
    let t = prepared.tuning.clone().unwrap();
    assert_eq!(t.results.len(), 3, "all configs tuned: {:?}", t.results);
    assert!(t.results.iter().all(|r| matches!(r.outcome, TrialOutcome::Timed(_))));
    let block = block_of(&t.config);
    let even = prepared.constexprs.iter().find(|(n, _)| n == "EVEN").map(|(_, v)| v.clone());
    assert_eq!(even, Some(TuneValue::Bool(384 % block == 0)), "block {block}");
    // Every config compiled with its own EVEN: 64 and 128 divide 384, 256 does not.
    let evens: Vec<String> = s.cache().unwrap().list().iter().map(|e| e.summary.clone()).collect();
    assert_eq!(evens.len(), 3);
    for (b, e) in [(64, "True"), (128, "True"), (256, "False")] {
        assert!(evens.iter().any(|x| x.contains(&format!("BLOCK={b} EVEN={e}"))), "{evens:?}");
    }
    let out = trident_runtime::launch::run_compiled(&prepared, &mut a, &o).unwrap();
    assert_eq!(out.grid, [384u32.div_ceil(block as u32), 1, 1]);
    check_vadd(&a, seed);
}
