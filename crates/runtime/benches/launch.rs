//! Host overhead of the launch path for an already compiled kernel (a cache
//! memo hit): choosing the config, keying the specialization and fetching the
//! loaded kernel, alone and around a run. Numbers are recorded in the crate README.
//!
//! * `launch/compile_memo_hit/*`: `launch::prepare` — argument binding, config
//!   choice, specialization text, memo lookup; no run.
//! * `launch/run_only/*` and `launch/full/*`: `run_compiled` on a kernel in
//!   hand, and `launch` (compile + run); their difference is the launch path's
//!   overhead around the backend.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use trident_runtime::args::{parse_and_materialize, parse_grid, Arg, Backend};
use trident_runtime::cache::{Cache, Outcome};
use trident_runtime::grid_expr::GridExpr;
use trident_runtime::launch::{launch, prepare, run_compiled, LaunchOptions};
use trident_runtime::session::Session;
use trident_runtime::KernelProgram;

const VADD: &str = r#"import triton
import triton.language as tl


@triton.jit
def vadd(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)
"#;

const TUNED: &str = r#"import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 256})], key=["n"])
@triton.jit
def vadd(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)
"#;

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn args(list: &[&str]) -> Vec<Arg> {
    list.iter().map(|a| parse_and_materialize(a, 1).expect("valid argument")).collect()
}

fn overhead(c: &mut Criterion) {
    let dir = Dir(std::env::temp_dir().join(format!("trident-launch-bench-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    let session = Arc::new(Session::with_cache(Cache::open(&dir.0, 1 << 30).unwrap()).quiet(true));
    let plain = KernelProgram::from_source("vadd.py", VADD).unwrap();
    let tuned = KernelProgram::from_source("tuned.py", TUNED).unwrap();
    let small = ["x=randn:f32:256", "y=randn:f32:256", "out=zeros:f32:256", "n=256"];
    for (name, prog, backend, extra) in [
        ("interp", &plain, Backend::Interp, Some("BLOCK=256")),
        ("emu", &plain, Backend::Emu, Some("BLOCK=256")),
        ("emu_autotuned", &tuned, Backend::Emu, None),
    ] {
        let mut a = args(&small);
        a.extend(extra.map(|e| args(&[e])).unwrap_or_default());
        let mut opts = LaunchOptions::new(parse_grid("1").unwrap());
        opts.grid_expr = Some(GridExpr::parse("cdiv(n, BLOCK)").unwrap());
        opts.backend = backend;
        opts.session = Some(session.clone());
        let k = prog.kernel(None).unwrap();
        // Compile (and tune) once; every measured call below is a memo hit.
        // (An autotuned kernel's configs were compiled while tuning: its launch is already a memo hit.)
        launch(prog, k, &mut a.clone(), &opts).unwrap();
        assert_eq!(prepare(prog, k, &a, &opts).unwrap().cache, Some(Outcome::Memo));
        c.bench_function(&format!("launch/compile_memo_hit/{name}"), |b| {
            b.iter(|| black_box(prepare(prog, k, black_box(&a), &opts).unwrap()))
        });
        let prepared = prepare(prog, k, &a, &opts).unwrap();
        c.bench_function(&format!("launch/run_only/{name}"), |b| {
            b.iter_batched_ref(
                || a.clone(),
                |a| black_box(run_compiled(&prepared, a, &opts).unwrap()),
                criterion::BatchSize::SmallInput,
            )
        });
        c.bench_function(&format!("launch/full/{name}"), |b| {
            b.iter_batched_ref(
                || a.clone(),
                |a| black_box(launch(prog, k, a, &opts).unwrap()),
                criterion::BatchSize::SmallInput,
            )
        });
    }
}

criterion_group!(benches, overhead);
criterion_main!(benches);
