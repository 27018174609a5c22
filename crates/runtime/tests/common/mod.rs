//! Helpers shared by the launch-path tests: temporary cache directories,
//! sessions on them, fresh random arguments.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use trident_runtime::args::{parse_and_materialize, parse_grid, Arg, ArgValue, Backend};
use trident_runtime::cache::Cache;
use trident_runtime::grid_expr::GridExpr;
use trident_runtime::launch::LaunchOptions;
use trident_runtime::session::Session;
use trident_runtime::KernelProgram;

/// A directory removed when the test ends.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "trident-launch-test-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A fresh seed per run (tests print it when they fail).
pub fn seed() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos() as u64
}

/// A new session (as a new process would have) on the cache in `dir`.
pub fn session(dir: &Path) -> Arc<Session> {
    session_limited(dir, 1 << 30)
}

pub fn session_limited(dir: &Path, max_bytes: u64) -> Arc<Session> {
    Arc::new(Session::with_cache(Cache::open(dir, max_bytes).unwrap()).quiet(true))
}

pub fn args(list: &[&str], seed: u64) -> Vec<Arg> {
    list.iter().map(|a| parse_and_materialize(a, seed).unwrap_or_else(|e| panic!("{a}: {e}"))).collect()
}

pub fn opts(session: &Arc<Session>, backend: Backend, grid: &str) -> LaunchOptions {
    let mut o = LaunchOptions::new(parse_grid("1").unwrap());
    match parse_grid(grid) {
        Ok(g) => o.grid = g,
        Err(_) => o.grid_expr = Some(GridExpr::parse(grid).unwrap()),
    }
    o.backend = backend;
    o.session = Some(session.clone());
    o
}

pub fn program(path: &str, text: &str) -> KernelProgram {
    KernelProgram::from_source(path, text).unwrap_or_else(|e| panic!("{e}"))
}

pub fn tensor<'a>(args: &'a [Arg], name: &str) -> &'a trident_core::HostTensor {
    match &args.iter().find(|a| a.name == name).unwrap().value {
        ArgValue::Tensor(t) => t,
        v => panic!("{name} is {v:?}"),
    }
}

pub fn values(args: &[Arg], name: &str) -> Vec<f64> {
    tensor(args, name).to_f64_vec()
}

/// An element-wise f32 vector add with the block size as a constexpr.
pub const VADD: &str = r#"import triton
import triton.language as tl


@triton.jit
def vadd(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)
"#;

/// Checks `out == x + y` exactly (f32 addition of f32 inputs).
pub fn check_vadd(args: &[Arg], seed: u64) {
    let (x, y, out) = (values(args, "x"), values(args, "y"), values(args, "out"));
    for i in 0..x.len() {
        let want = (x[i] as f32 + y[i] as f32) as f64;
        assert_eq!(out[i], want, "element {i} (seed {seed})");
    }
}
