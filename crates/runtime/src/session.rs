//! What the launch path keeps between launches: the compile cache, the
//! kernels already loaded from it, the autotuners (with their per-key
//! choices) and the warnings already given.
//!
//! [`Session::global`] is the process-wide session every launch uses unless
//! [`crate::launch::LaunchOptions::session`] names another (tests use their
//! own, on a temporary directory). It opens the cache the environment names:
//!
//! * `TRIDENT_CACHE_DIR`, `TRIDENT_CACHE_MAX_BYTES`: see [`crate::cache`];
//! * `TRIDENT_CACHE=0` (or `false`/`off`/`no`): no compile cache at all —
//!   every launch compiles, nothing is written (autotuning choices are then
//!   kept in memory only);
//! * a cache directory that cannot be created is reported once on stderr and
//!   the session runs without a cache.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::autotune::select::Candidate;
use crate::autotune::Autotuner;
use crate::cache::{Cache, CacheId};
use crate::compiled::CompiledKernel;

/// A tuner's identity and the key values of one of its choices.
pub(crate) type ChoiceKey = (String, Vec<(String, String)>);

/// The compile cache, loaded kernels and autotuners of a process (or of a test).
pub struct Session {
    cache: Option<Cache>,
    /// Loaded kernels by cache entry: a memo hit of the cache gives back the
    /// entry, and this gives back what was built or decoded from it (parsed
    /// IR, PTX ready to launch) without decoding again.
    pub(crate) loaded: Mutex<HashMap<CacheId, Arc<CompiledKernel>>>,
    pub(crate) tuners: Mutex<HashMap<String, Arc<Autotuner>>>,
    /// Choices made or read by this session: (tuner, key values) → the chosen candidate.
    pub(crate) choices: Mutex<HashMap<ChoiceKey, Arc<Candidate>>>,
    warned: Mutex<HashSet<String>>,
    cuda_target: OnceLock<Result<trident_gpu::Target, String>>,
    quiet: bool,
    builds: AtomicU64,
    loads: AtomicU64,
    reuses: AtomicU64,
}

/// What a session's compilations did (see [`Session::counts`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionCounts {
    /// Kernels compiled from source (cache misses, or no cache).
    pub builds: u64,
    /// Kernels decoded from a disk entry (IR parsed, PTX read).
    pub loads: u64,
    /// Kernels handed back from memory (the cache's in-process memo).
    pub reuses: u64,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("cache", &self.cache.as_ref().map(|c| c.root().to_path_buf())).finish()
    }
}

impl Session {
    /// The process-wide session, opened from the environment on first use.
    pub fn global() -> Arc<Session> {
        static GLOBAL: OnceLock<Arc<Session>> = OnceLock::new();
        GLOBAL.get_or_init(|| Arc::new(Session::from_env())).clone()
    }

    /// A session on the cache the environment names (see the module docs).
    pub fn from_env() -> Session {
        if !crate::env::cache_enabled() {
            return Session::uncached();
        }
        match Cache::open_default() {
            Ok(c) => Session::with_cache(c),
            Err(e) => {
                eprintln!("warning: compile cache disabled: {e}");
                Session::uncached()
            }
        }
    }

    /// A session on this cache.
    pub fn with_cache(cache: Cache) -> Session {
        Session::new(Some(cache))
    }

    /// A session without a compile cache: every launch compiles, and
    /// autotuning choices live in memory only.
    pub fn uncached() -> Session {
        Session::new(None)
    }

    fn new(cache: Option<Cache>) -> Session {
        Session {
            cache,
            loaded: Mutex::new(HashMap::new()),
            tuners: Mutex::new(HashMap::new()),
            choices: Mutex::new(HashMap::new()),
            warned: Mutex::new(HashSet::new()),
            cuda_target: OnceLock::new(),
            quiet: false,
            builds: AtomicU64::new(0),
            loads: AtomicU64::new(0),
            reuses: AtomicU64::new(0),
        }
    }

    /// Hides the autotuner's progress bar (it is also hidden when stderr is not a terminal).
    pub fn quiet(mut self, quiet: bool) -> Session {
        self.quiet = quiet;
        self
    }

    pub(crate) fn is_quiet(&self) -> bool {
        self.quiet
    }

    /// The compile cache, if the session has one.
    pub fn cache(&self) -> Option<&Cache> {
        self.cache.as_ref()
    }

    /// How many kernels this session compiled, loaded from disk and reused from memory.
    pub fn counts(&self) -> SessionCounts {
        SessionCounts {
            builds: self.builds.load(Ordering::Relaxed),
            loads: self.loads.load(Ordering::Relaxed),
            reuses: self.reuses.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn count_build(&self) {
        self.builds.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_load(&self) {
        self.loads.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_reuse(&self) {
        self.reuses.fetch_add(1, Ordering::Relaxed);
    }

    /// Prints `warning: {message}` on stderr the first time `key` is warned about in this session.
    pub(crate) fn warn_once(&self, key: &str, message: &str) {
        let first = self.warned.lock().map(|mut w| w.insert(key.to_string())).unwrap_or(true);
        if first {
            eprintln!("warning: {message}");
        }
    }

    /// The target of CUDA device 0 (asked once per session).
    pub(crate) fn cuda_target(&self) -> Result<trident_gpu::Target, String> {
        self.cuda_target
            .get_or_init(|| {
                let dev = trident_cuda::Device::open(0).map_err(|e| format!("cuda: {e}"))?;
                Ok(crate::gpu::target_for(dev.info().compute_capability))
            })
            .clone()
    }

    /// Forgets the loaded kernels and autotuners' in-memory choices (the disk
    /// cache keeps its entries; the cache's own memo is cleared by
    /// [`Cache::clear`]).
    pub fn forget(&self) {
        if let Ok(mut l) = self.loaded.lock() {
            l.clear();
        }
        if let Ok(mut t) = self.tuners.lock() {
            t.clear();
        }
        if let Ok(mut c) = self.choices.lock() {
            c.clear();
        }
    }
}
