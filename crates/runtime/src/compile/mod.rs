//! Compiling one specialization through the compile cache: the one function every
//! compilation of the launch path goes through (`compile`).
//!
//! A `Request` names what to compile: the kernel, its launch arguments as
//! the front end sees them, the constexprs a config adds, the front end's options,
//! warps and stages, and the [`CodeTarget`]. `compile` evaluates `@triton.heuristics`,
//! then looks the specialization up:
//!
//! 1. in the cache's in-process memo, under a [`MemoKey`] made of the
//!    program's source id (hashed once when the program was loaded), the
//!    kernel and the specialization text — no source is hashed and no file
//!    is read; the [`Session`] hands back the kernel already decoded;
//! 2. on disk, under the [`crate::cache::CacheKey`] that [`crate::cache::key`]'s policy
//!    makes (source texts, compiler version, signature, constexprs, options, target);
//!    the entry is decoded (`codec.rs`: the tile IR re-parsed, its source files restored);
//! 3. otherwise it compiles (`build.rs`) and stores the entry.
//!
//! Compiling with IR dumps on (`print_ir_after_all`, `TRIDENT_DUMP_IR=1`)
//! bypasses the cache so that the dumps happen.

mod build;
mod codec;

use std::sync::Arc;

use trident_front::{ArgInfo, CompileOptions, KernelInfo};
use trident_gpu::ProfileOptions;

use crate::cache::key::{cache_key, describe, GpuExtras};
use crate::cache::{MemoKey, Outcome};
use crate::compiled::{CodeTarget, CompiledKernel};
use crate::error::RunError;
use crate::program::KernelProgram;
use crate::session::Session;

pub(crate) use build::gpu_error;
pub use codec::{GpuMeta, KernelMeta};

/// A failed compilation.
#[derive(Clone, Debug)]
pub struct CompileError {
    /// What went wrong, rendered.
    pub error: RunError,
    /// What kind of failure it was.
    pub kind: CompileErrorKind,
}

/// The kinds of [`CompileError`] callers act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompileErrorKind {
    /// The kernel needs more shared memory than the target has: the autotuner skips
    /// such a config as out of resources (from [`trident_gpu::GpuErrorKind::OutOfSharedMemory`]).
    OutOfSharedMemory {
        /// Bytes the kernel needs.
        needed: u64,
        /// Bytes it may use.
        limit: u64,
    },
    /// Anything else: a front-end diagnostic, an unsupported construct, a damaged entry.
    Other,
}

impl CompileError {
    /// Whether the kernel asked for more of the target than it has (a config to skip, not a bug).
    pub fn is_out_of_resources(&self) -> bool {
        matches!(self.kind, CompileErrorKind::OutOfSharedMemory { .. })
    }
}

impl From<RunError> for CompileError {
    fn from(error: RunError) -> CompileError {
        CompileError { error, kind: CompileErrorKind::Other }
    }
}

/// Everything one compilation depends on besides the source.
pub(crate) struct Request<'a> {
    pub prog: &'a KernelProgram,
    pub kernel: &'a KernelInfo,
    /// Launch arguments and config constexprs; heuristics are added by [`compile`].
    pub infos: Vec<(String, ArgInfo)>,
    /// The front end's options (debug, default dot precision), built once per launch by
    /// [`crate::env::compile_options`]: the key describes this very value.
    pub options: CompileOptions,
    /// Warps per program (GPU targets).
    pub num_warps: u32,
    /// Software-pipelining depth (GPU targets).
    pub num_stages: u32,
    /// In-kernel profiling (GPU targets; the user's scopes are the front end's
    /// `options.profile_scopes`).
    pub profile: Option<ProfileOptions>,
    /// Sanitize mode (GPU targets): bounds checks of every global access in the kernel.
    pub sanitize: bool,
    /// Print the IR after every pass (the launch's flag or `TRIDENT_DUMP_IR`); bypasses the cache.
    pub print_ir_after_all: bool,
    pub target: CodeTarget,
}

/// Launch arguments plus the constexprs `@triton.heuristics` adds (names not already given).
fn with_heuristics(req: &Request) -> Result<Vec<(String, ArgInfo)>, RunError> {
    let mut infos = req.infos.clone();
    if !req.kernel.heuristics.is_empty() {
        let extra =
            req.kernel.eval_heuristics(&infos).map_err(|d| RunError::from_diags(&[d], &req.prog.source_files()))?;
        for (k, v) in extra {
            if !infos.iter().any(|(n, _)| *n == k) {
                infos.push((k, ArgInfo::Constexpr(v)));
            }
        }
    }
    Ok(infos)
}

/// Compiles (or fetches) the specialization `req` describes. The second
/// value is where it came from (`None`: the session has no cache, or IR
/// dumps bypassed it).
pub(crate) fn compile(
    session: &Session,
    req: &Request,
) -> Result<(Arc<CompiledKernel>, Option<Outcome>), CompileError> {
    let infos = with_heuristics(req)?;
    let Some(cache) = session.cache().filter(|_| !req.print_ir_after_all) else {
        session.count_build();
        return Ok((Arc::new(build::build(req, &infos)?), None));
    };
    let extras = GpuExtras { profile: req.profile.as_ref(), sanitize: req.sanitize };
    let d = describe(req.kernel, &infos, req.target, &req.options, req.num_warps, req.num_stages, extras);
    let memo = MemoKey::new(&req.kernel.name, d.spec_text(req.prog.source_id()));
    // A decoding failure (an entry that verifies but cannot be used, e.g.
    // written by an incompatible build) removes the entry and compiles again, once.
    for attempt in 0..2 {
        let mut built: Option<CompiledKernel> = None;
        let (entry, outcome) = cache.get_or_build_memo(
            &memo,
            || Ok::<_, CompileError>(cache_key(req.prog, &req.kernel.name, &d)),
            |_| {
                session.count_build();
                let ck = build::build(req, &infos)?;
                let data = codec::encode(&ck, req.prog);
                built = Some(ck);
                Ok(data)
            },
        )?;
        if outcome != Outcome::Memo {
            // Disk traffic happened anyway; keep `trident cache stats` current.
            let _ = cache.flush_stats();
        }
        if let Some(mut ck) = built {
            ck.cache_id = Some(entry.id.clone());
            let ck = Arc::new(ck);
            if let Ok(mut l) = session.loaded.lock() {
                l.insert(entry.id.clone(), ck.clone());
            }
            return Ok((ck, Some(outcome)));
        }
        if let Some(ck) = session.loaded.lock().ok().and_then(|l| l.get(&entry.id).cloned()) {
            session.count_reuse();
            return Ok((ck, Some(outcome)));
        }
        match codec::decode(&entry, req.prog) {
            Ok(ck) => {
                session.count_load();
                let ck = Arc::new(ck);
                if let Ok(mut l) = session.loaded.lock() {
                    l.insert(entry.id.clone(), ck.clone());
                }
                return Ok((ck, Some(outcome)));
            }
            Err(why) if attempt == 0 => {
                session.warn_once(
                    &format!("undecodable {}", entry.id),
                    &format!("cache entry {} could not be used ({why}); recompiling", entry.id),
                );
                cache.remove(&entry.id);
            }
            Err(why) => return Err(RunError::msg(format!("cache entry {} could not be used: {why}", entry.id)).into()),
        }
    }
    unreachable!("the loop returns on its second attempt")
}
