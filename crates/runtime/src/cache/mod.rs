//! The on-disk compile cache: one directory per kernel specialization, keyed
//! by everything that changes the compiled output.
//!
//! * [`CacheKey`] gathers the inputs (source texts, compiler version,
//!   signature with specialization attributes, constexprs, options, target)
//!   and hashes them to a [`CacheId`] (BLAKE3; see [`key`]).
//! * An entry (`<root>/kernels/<id>/`) holds the artifacts of [`EntryData`] —
//!   `kernel.ttir`, `kernel.ttgir`, `kernel.ptx`, `kernel.cubin`, extra
//!   files — plus `meta.json` ([`Metadata`]) and `manifest.json` (size and
//!   checksum of every file, verified on every read: a damaged entry is
//!   removed and rebuilt, never returned).
//! * Writers stage an entry in `<root>/tmp/` and rename it into place, so
//!   concurrent writers (threads or processes) are safe: one wins, the others
//!   discard their copies and return the winner's (see `store.rs`).
//! * The total size is kept under a limit by evicting the least recently used
//!   entries after each store (last use = mtime of the entry's `last_use` file).
//! * [`Cache::get_or_build_memo`] adds an in-process memo keyed by a cheap
//!   identity ([`MemoKey`]): a repeated lookup hashes nothing and reads no
//!   file (see [`memo`]).
//!
//! Environment (read through [`crate::env`]): `TRIDENT_CACHE_DIR` (default
//! `$XDG_CACHE_HOME/trident`, else `~/.cache/trident`), `TRIDENT_CACHE_MAX_BYTES`
//! (default 1 GiB; a number of bytes, optionally with a `K`/`M`/`G`/`T` suffix,
//! binary: `512M`, `2GiB`).

pub mod entry;
pub mod key;
pub mod memo;
pub mod regular;
pub mod stats;
mod store;

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub use entry::{BuildInfo, Entry, EntryData, Metadata};
pub use key::{set_code_file, version, CacheId, CacheKey, KeySummary};
pub use memo::{FileStamp, MemoKey};
pub use stats::Counters;

use entry::ReadError;
use stats::Session;
use store::{Install, AUTOTUNE, KERNELS, LOCK, TMP};

pub(crate) use store::unique_name as unique_tmp_name;

/// Default size limit: 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// Errors opening or administering a cache. Lookups never fail: a missing or
/// damaged entry is a miss, and a build that cannot be stored is still returned.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// An environment variable has a value we cannot use.
    #[error("{var}={value:?}: {message}")]
    Env {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        message: String,
    },
    /// A file-system operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The path it failed on.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> CacheError + '_ {
    move |source| CacheError::Io { path: path.to_path_buf(), source }
}

/// Where a lookup's entry came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The in-process memo (only [`Cache::get_or_build_memo`]).
    Memo,
    /// The disk cache.
    Hit,
    /// Neither: the builder ran.
    Miss,
}

/// One entry as listed by [`Cache::list`].
#[derive(Clone, Debug, PartialEq)]
pub struct Listed {
    /// Its id.
    pub id: CacheId,
    /// The kernel name (`None` when `meta.json` is unreadable).
    pub kernel: Option<String>,
    /// The key in one line ([`KeySummary`]'s `Display`), empty when unreadable.
    pub summary: String,
    /// Bytes on disk.
    pub bytes: u64,
    /// Last use.
    pub last_use: Option<SystemTime>,
    /// When it was stored (seconds since the Unix epoch; 0 when unknown).
    pub created_unix: u64,
}

/// What [`Cache::clear`] removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cleared {
    /// Kernel entries.
    pub entries: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Autotuning records.
    pub autotune_records: u64,
}

/// What [`Cache::stats`] reports.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    /// The cache directory.
    pub root: PathBuf,
    /// Kernel entries on disk.
    pub entries: u64,
    /// Their total bytes.
    pub bytes: u64,
    /// The size limit.
    pub max_bytes: u64,
    /// Autotuning records on disk.
    pub autotune_records: u64,
    /// Counts over all processes since the last clear (`stats.json` plus this
    /// process's unflushed counts).
    pub totals: Counters,
    /// Counts of this [`Cache`] value alone.
    pub session: Counters,
}

/// An open cache directory. Cheap lookups, safe to share between threads
/// (`&Cache` is all any operation needs) and between processes.
pub struct Cache {
    root: PathBuf,
    max_bytes: u64,
    memo: Mutex<HashMap<MemoKey, Arc<Entry>>>,
    session: Session,
    last_problem: Mutex<Option<String>>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache").field("root", &self.root).field("max_bytes", &self.max_bytes).finish()
    }
}

impl Cache {
    /// Opens the cache named by the environment (`TRIDENT_CACHE_DIR`,
    /// `TRIDENT_CACHE_MAX_BYTES`), creating its directory.
    pub fn open_default() -> Result<Cache, CacheError> {
        Cache::open(default_dir()?, max_bytes_from_env()?)
    }

    /// Opens (creating if needed) the cache at `root` with a size limit.
    pub fn open(root: impl Into<PathBuf>, max_bytes: u64) -> Result<Cache, CacheError> {
        let root = root.into();
        for sub in [KERNELS, TMP, AUTOTUNE] {
            let p = root.join(sub);
            fs::create_dir_all(&p).map_err(io_err(&p))?;
        }
        Ok(Cache {
            root,
            max_bytes,
            memo: Mutex::new(HashMap::new()),
            session: Session::default(),
            last_problem: Mutex::new(None),
        })
    }

    /// The cache directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The size limit in bytes.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// Where the entry `id` lives (whether or not it exists).
    pub fn entry_dir(&self, id: &CacheId) -> PathBuf {
        self.root.join(KERNELS).join(id.as_str())
    }

    /// The directory for autotuning records (see [`crate::autotune::TuneStore`]).
    pub fn autotune_dir(&self) -> PathBuf {
        self.root.join(AUTOTUNE)
    }

    /// The last problem met: a damaged entry found, or a build that could not be stored.
    pub fn last_problem(&self) -> Option<String> {
        self.last_problem.lock().ok().and_then(|p| p.clone())
    }

    fn note(&self, problem: String) {
        if let Ok(mut p) = self.last_problem.lock() {
            *p = Some(problem);
        }
    }

    /// The entry for `key`, verified, if the disk cache has a good one.
    pub fn get(&self, key: &CacheKey) -> Option<Arc<Entry>> {
        self.get_id(&key.id())
    }

    /// The entry `id`, verified, if the disk cache has a good one. A damaged
    /// entry is removed (and counted) and reads as a miss.
    pub fn get_id(&self, id: &CacheId) -> Option<Arc<Entry>> {
        let dir = self.entry_dir(id);
        match entry::read(&dir, id) {
            Ok(e) => {
                store::touch(&dir);
                Session::bump(&self.session.hits, 1);
                Some(Arc::new(e))
            }
            Err(ReadError::Absent) => {
                Session::bump(&self.session.misses, 1);
                None
            }
            Err(ReadError::Corrupt(why)) => {
                self.note(format!("cache entry {id} was damaged ({why}); removed"));
                Session::bump(&self.session.corrupt, 1);
                Session::bump(&self.session.misses, 1);
                store::remove(&self.root, &dir);
                None
            }
        }
    }

    /// The entry for `key`: from disk if there is a good one, else built by
    /// `build`, stored, and returned. Only `build`'s errors are returned: a
    /// build that cannot be stored is returned with `path: None`.
    pub fn get_or_build<E>(
        &self,
        key: &CacheKey,
        build: impl FnOnce() -> Result<EntryData, E>,
    ) -> Result<(Arc<Entry>, Outcome), E> {
        let id = key.id();
        if let Some(e) = self.get_id(&id) {
            return Ok((e, Outcome::Hit));
        }
        let start = Instant::now();
        let mut data = build()?;
        data.info.compile_secs = start.elapsed().as_secs_f64();
        Ok((self.store(&id, key, data), Outcome::Miss))
    }

    /// [`Cache::get_or_build`] behind the in-process memo: when `memo` was
    /// looked up before by this `Cache`, returns that entry at once
    /// ([`Outcome::Memo`]) without calling `make_key` (no source reading or
    /// hashing) or touching the disk. Otherwise makes the key, looks on disk,
    /// builds on a miss, and remembers the entry under `memo`.
    pub fn get_or_build_memo<E>(
        &self,
        memo: &MemoKey,
        make_key: impl FnOnce() -> Result<CacheKey, E>,
        build: impl FnOnce(&CacheKey) -> Result<EntryData, E>,
    ) -> Result<(Arc<Entry>, Outcome), E> {
        if let Some(e) = self.memo.lock().ok().and_then(|m| m.get(memo).cloned()) {
            Session::bump(&self.session.memo_hits, 1);
            return Ok((e, Outcome::Memo));
        }
        let key = make_key()?;
        let (e, outcome) = self.get_or_build(&key, || build(&key))?;
        if let Ok(mut m) = self.memo.lock() {
            m.insert(memo.clone(), e.clone());
        }
        Ok((e, outcome))
    }

    /// Stores a build under `key`'s id (replacing nothing: if a good entry is
    /// already there, that one is returned), then evicts down to the size limit.
    pub fn insert(&self, key: &CacheKey, data: EntryData) -> Arc<Entry> {
        self.store(&key.id(), key, data)
    }

    fn store(&self, id: &CacheId, key: &CacheKey, data: EntryData) -> Arc<Entry> {
        let created_unix = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let summary = key.summary();
        let meta = Metadata {
            format: entry::FORMAT,
            id: id.to_string(),
            kernel: key.kernel().to_string(),
            trident_version: summary.version.clone(),
            created_unix,
            key: summary,
            build: data.info.clone(),
        };
        let dest = self.entry_dir(id);
        // A damaged entry in the way is removed and the install retried; the
        // bound keeps a pathological file system from looping forever.
        let mut last_err = None;
        for _ in 0..3 {
            let attempt = (|| {
                let staged = store::staging_dir(&self.root, id.as_str())?;
                if let Err(e) = entry::write(&staged, id, &data, &meta) {
                    store::remove(&self.root, &staged);
                    return Err(e);
                }
                store::install(&self.root, &staged, &dest)
            })();
            match attempt {
                Ok(Install::Installed) => {
                    self.evict(Some(id));
                    return Arc::new(Entry::from_data(id.clone(), Some(dest), data, meta));
                }
                Ok(Install::Exists) => match entry::read(&dest, id) {
                    Ok(e) => return Arc::new(e),
                    Err(ReadError::Absent) => {}
                    Err(ReadError::Corrupt(why)) => {
                        self.note(format!("cache entry {id} was damaged ({why}); replaced"));
                        Session::bump(&self.session.corrupt, 1);
                        store::remove(&self.root, &dest);
                    }
                },
                Err(e) => {
                    last_err = Some(e);
                    break;
                }
            }
        }
        Session::bump(&self.session.store_errors, 1);
        let why = last_err.map_or_else(|| "entry kept changing under us".to_string(), |e| e.to_string());
        self.note(format!("could not store cache entry {id} in {}: {why}", self.root.display()));
        Arc::new(Entry::from_data(id.clone(), None, data, meta))
    }

    /// Evicts least-recently-used entries until the cache fits its limit
    /// (never `keep`). Serialized between processes by the lock file.
    fn evict(&self, keep: Option<&CacheId>) {
        let lock = match fs::OpenOptions::new().create(true).truncate(false).write(true).open(self.root.join(LOCK)) {
            Ok(f) if f.lock().is_ok() => f,
            _ => return,
        };
        let (n, _) = store::evict(&self.root, self.max_bytes, keep);
        Session::bump(&self.session.evicted, n);
        store::sweep_tmp(&self.root);
        drop(lock);
    }

    /// Every entry on disk, most recently used first.
    pub fn list(&self) -> Vec<Listed> {
        let mut out: Vec<Listed> = store::scan(&self.root)
            .into_iter()
            .map(|s| {
                let meta = entry::read_meta(&s.path);
                Listed {
                    kernel: meta.as_ref().map(|m| m.kernel.clone()),
                    summary: meta.as_ref().map(|m| m.key.to_string()).unwrap_or_default(),
                    created_unix: meta.as_ref().map_or(0, |m| m.created_unix),
                    id: s.id,
                    bytes: s.bytes,
                    last_use: s.last_use,
                }
            })
            .collect();
        out.sort_by(|a, b| b.last_use.cmp(&a.last_use).then_with(|| a.id.cmp(&b.id)));
        out
    }

    /// Removes one entry; whether it existed.
    pub fn remove(&self, id: &CacheId) -> bool {
        let dir = self.entry_dir(id);
        let existed = dir.exists();
        store::remove(&self.root, &dir);
        if let Ok(mut m) = self.memo.lock() {
            m.retain(|_, e| e.id != *id);
        }
        existed
    }

    /// Removes every entry, every autotuning record, leftovers in `tmp/` and
    /// the counters; forgets the in-process memo.
    pub fn clear(&self) -> Result<Cleared, CacheError> {
        let lock_path = self.root.join(LOCK);
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_err(&lock_path))?;
        lock.lock().map_err(io_err(&lock_path))?;
        let mut cleared = Cleared::default();
        for s in store::scan(&self.root) {
            store::remove(&self.root, &s.path);
            cleared.entries += 1;
            cleared.bytes += s.bytes;
        }
        let tune = self.autotune_dir();
        if let Ok(rd) = fs::read_dir(&tune) {
            for f in rd.flatten() {
                let p = f.path();
                let record = p.extension().is_some_and(|x| x == "json");
                if fs::remove_file(&p).is_ok() && record {
                    cleared.autotune_records += 1;
                }
            }
        }
        let tmp = self.root.join(TMP);
        if let Ok(rd) = fs::read_dir(&tmp) {
            for d in rd.flatten() {
                let p = d.path();
                let _ = if p.is_dir() { fs::remove_dir_all(p) } else { fs::remove_file(p) };
            }
        }
        stats::reset(&self.root);
        let _ = self.session.take();
        if let Ok(mut m) = self.memo.lock() {
            m.clear();
        }
        Ok(cleared)
    }

    /// Entries, bytes and counters.
    pub fn stats(&self) -> Stats {
        let scanned = store::scan(&self.root);
        let autotune_records = fs::read_dir(self.autotune_dir())
            .map_or(0, |rd| rd.flatten().filter(|f| f.path().extension().is_some_and(|x| x == "json")).count() as u64);
        let session = self.session.snapshot();
        let mut totals = stats::read(&self.root);
        totals.add(&session);
        Stats {
            root: self.root.clone(),
            entries: scanned.len() as u64,
            bytes: scanned.iter().map(|s| s.bytes).sum(),
            max_bytes: self.max_bytes,
            autotune_records,
            totals,
            session,
        }
    }

    /// Adds this cache's counts to the totals on disk (also done on drop).
    pub fn flush_stats(&self) -> Result<(), CacheError> {
        stats::flush(&self.root, &self.session).map_err(io_err(&self.root))
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        let _ = stats::flush(&self.root, &self.session);
    }
}

/// The cache directory the environment names: `TRIDENT_CACHE_DIR`, else the
/// platform's user cache directory + `trident` (`$XDG_CACHE_HOME/trident`,
/// `~/.cache/trident`; `~/Library/Caches/trident` on macOS;
/// `%LOCALAPPDATA%\trident` on Windows).
pub fn default_dir() -> Result<PathBuf, CacheError> {
    if crate::env::cache_dir_is_empty() {
        return Err(CacheError::Env {
            var: "TRIDENT_CACHE_DIR",
            value: String::new(),
            message:
                "set but empty: unset it for the default directory, or name one (TRIDENT_CACHE=0 turns the cache off)"
                    .into(),
        });
    }
    if let Some(d) = crate::env::cache_dir() {
        return Ok(d);
    }
    crate::env::user_cache_dir().map(|b| b.join("trident")).ok_or(CacheError::Env {
        var: "TRIDENT_CACHE_DIR",
        value: String::new(),
        message: "not set, and no home or cache directory to default to".into(),
    })
}

/// The size limit the environment names: `TRIDENT_CACHE_MAX_BYTES`, else [`DEFAULT_MAX_BYTES`].
pub fn max_bytes_from_env() -> Result<u64, CacheError> {
    match crate::env::cache_max_bytes() {
        Some(v) => parse_size(&v).ok_or(CacheError::Env {
            var: "TRIDENT_CACHE_MAX_BYTES",
            value: v,
            message: "expected a size in bytes, e.g. 1073741824, 512M or 2GiB".into(),
        }),
        None => Ok(DEFAULT_MAX_BYTES),
    }
}

/// Parses `123`, `64K`, `512M`, `2G`, `1T` (binary multiples; `KiB`/`KB`/`B`
/// spellings accepted, any case).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n: u64 = s[..digits].parse().ok()?;
    let unit = s[digits..].trim().to_ascii_lowercase();
    let unit = unit.strip_suffix("ib").or_else(|| unit.strip_suffix('b')).unwrap_or(&unit);
    let shift = match unit {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return None,
    };
    n.checked_mul(1u64 << shift)
}
