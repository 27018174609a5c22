//! The launch path on a CUDA device: cubin stored and loaded, autotuning with
//! CUDA events, input protection with device buffers. Run on a machine with an
//! NVIDIA GPU: `cargo test -p trident-runtime --test launch_cuda -- --ignored`
//! (with `ptxas` installed by scripts/install-tools for the cubin checks).

mod common;

use common::*;
use trident_runtime::args::Backend;
use trident_runtime::autotune::ChoiceSource;
use trident_runtime::autotune::Decision;
use trident_runtime::cache::Outcome;
use trident_runtime::launch::launch;

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn cuda_launches_hit_the_cache_and_load_the_cubin() {
    let dir = TempDir::new("cuda");
    let seed = seed();
    let run = |s: &std::sync::Arc<trident_runtime::session::Session>, seed: u64| {
        let prog = program("vadd.py", VADD);
        let mut a = args(&["x=randn:f32:5000", "y=randn:f32:5000", "out=empty:f32:5000", "n=5000", "BLOCK=256"], seed);
        let out = launch(&prog, prog.kernel(None).unwrap(), &mut a, &opts(s, Backend::Cuda, "cdiv(n, BLOCK)"))
            .unwrap_or_else(|e| panic!("{e}"));
        check_vadd(&a, seed);
        out.cache
    };
    let s = session(dir.path());
    assert_eq!(run(&s, seed), Some(Outcome::Miss));
    assert_eq!(run(&s, seed + 1), Some(Outcome::Memo));
    assert_eq!(run(&session(dir.path()), seed + 2), Some(Outcome::Hit));
    let listed = s.cache().unwrap().list();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].summary.starts_with("target=cuda-sm_"), "{}", listed[0].summary);
    let entry = dir.path().join("kernels").join(listed[0].id.as_str());
    if trident_gpu::tools::find(trident_gpu::tools::Tool::Ptxas).is_ok() {
        assert!(entry.join("kernel.cubin").is_file(), "ptxas is installed: the cubin is stored");
        let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(entry.join("meta.json")).unwrap()).unwrap();
        assert!(meta["build"]["registers"].as_u64().is_some_and(|r| r > 0), "{meta}");
    }
}

const TUNED_ACCUMULATE: &str = r#"import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 1024}), triton.Config({"BLOCK": 256})],
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
#[ignore = "needs an NVIDIA GPU"]
fn cuda_tuning_times_with_events_protects_inputs_and_persists() {
    let dir = TempDir::new("cuda-tune");
    let seed = seed();
    let prog = program("accumulate.py", TUNED_ACCUMULATE);
    let k = prog.kernel(None).unwrap();
    let mut a = args(&["x=randn:f32:100000", "acc=randn:f32:100000", "n=100000"], seed);
    let before = a.clone();
    let out = launch(&prog, k, &mut a, &opts(&session(dir.path()), Backend::Cuda, "cdiv(n, BLOCK)")).unwrap();
    let t = out.tuning.unwrap();
    assert_eq!(t.decided_by, Decision::Tuner(ChoiceSource::Benchmarked));
    assert!(t.bench_runs > 3 * 3, "time budgets give many runs: {}", t.bench_runs);
    let (x0, acc0) = (values(&before, "x"), values(&before, "acc"));
    let (x1, acc1) = (values(&a, "x"), values(&a, "acc"));
    for i in 0..x0.len() {
        assert_eq!(acc1[i], (acc0[i] as f32 + x0[i] as f32) as f64, "acc[{i}] seed {seed}");
        assert_eq!(x1[i], (x0[i] as f32 + 1.0) as f64, "x[{i}] seed {seed}");
    }
    let mut a = before.clone();
    let out = launch(&prog, k, &mut a, &opts(&session(dir.path()), Backend::Cuda, "cdiv(n, BLOCK)")).unwrap();
    let t2 = out.tuning.unwrap();
    assert_eq!((t2.decided_by, t2.bench_runs), (Decision::Tuner(ChoiceSource::Disk), 0));
    assert_eq!(t2.config, t.config);
}
