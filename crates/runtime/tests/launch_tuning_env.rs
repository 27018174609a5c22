//! The environment switches of autotuning: `TRIDENT_AUTOTUNE_INTERP=1` tunes on
//! the interpreter (wall clock) and `TRIDENT_AUTOTUNE_CACHE=0` keeps choices in
//! memory only. One test in its own binary: it sets process environment
//! variables, which no other test may race with.

mod common;

use common::*;
use trident_runtime::args::Backend;
use trident_runtime::autotune::Decision;
use trident_runtime::autotune::{ChoiceSource, TrialOutcome};
use trident_runtime::launch::launch;

const TUNED: &str = r#"import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 256})], key=["n"])
@triton.jit
def vadd(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)
"#;

#[test]
fn interpreter_tuning_and_memory_only_choices() {
    std::env::set_var("TRIDENT_AUTOTUNE_INTERP", "1");
    std::env::set_var("TRIDENT_AUTOTUNE_CACHE", "0");
    let dir = TempDir::new("env");
    let seed = seed();
    let prog = program("tuned.py", TUNED);
    let k = prog.kernel(None).unwrap();
    let run = |s: &std::sync::Arc<trident_runtime::session::Session>| {
        let mut a = args(&["x=randn:f32:1000", "y=randn:f32:1000", "out=empty:f32:1000", "n=1000"], seed);
        let out = launch(&prog, k, &mut a, &opts(s, Backend::Interp, "cdiv(n, BLOCK)")).unwrap();
        check_vadd(&a, seed);
        out.tuning.unwrap()
    };
    let t = run(&session(dir.path()));
    assert_eq!(t.decided_by, Decision::Tuner(ChoiceSource::Benchmarked));
    // Wall-clock timing under a time budget: at least a few runs of each config.
    assert!(t.bench_runs >= 2 * 3, "{}", t.bench_runs);
    assert!(t.results.iter().all(|r| matches!(&r.outcome, TrialOutcome::Timed(x) if x.runs >= 1)));
    assert_eq!(std::fs::read_dir(dir.path().join("autotune")).unwrap().count(), 0, "nothing saved");
    // A new process tunes again.
    assert_eq!(run(&session(dir.path())).decided_by, Decision::Tuner(ChoiceSource::Benchmarked));
}
