//! File-system mechanics of the cache directory: staging directories, atomic
//! installs, atomic removal, last-use stamps, scans and LRU eviction.
//!
//! Layout under the root:
//!
//! ```text
//! kernels/<id>/   one entry (see entry.rs); immutable once renamed in
//! tmp/            staging directories and entries on their way out
//! autotune/       autotuning choices (see crate::autotune)
//! stats.json      hit/miss counters
//! .lock           advisory lock for eviction and stats updates
//! ```
//!
//! Writers stage a complete entry under `tmp/` and `rename` it to
//! `kernels/<id>`. Renaming a directory onto an existing non-empty one fails,
//! so of two racing writers exactly one wins and the other discards its copy.
//! Removal renames the entry back into `tmp/` before deleting it, so readers
//! see every entry either whole or not at all.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::entry::LAST_USE;
use super::key::CacheId;

pub(crate) const KERNELS: &str = "kernels";
pub(crate) const TMP: &str = "tmp";
pub(crate) const AUTOTUNE: &str = "autotune";
pub(crate) const LOCK: &str = ".lock";

/// Last-use stamps are refreshed at most this often: a hit then costs no
/// write in the common case, and LRU order at minute granularity is plenty.
const TOUCH_EVERY: Duration = Duration::from_secs(60);

/// Staging directories older than this are left over from a crashed writer.
const STALE_TMP: Duration = Duration::from_secs(3600);

/// A name no other writer, thread or process, will pick.
pub(crate) fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    format!("{prefix}-{}-{n}-{nanos}", std::process::id())
}

/// Creates a fresh staging directory under `root/tmp`.
pub(crate) fn staging_dir(root: &Path, prefix: &str) -> io::Result<PathBuf> {
    let dir = root.join(TMP).join(unique_name(prefix));
    fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// What happened to an install.
pub(crate) enum Install {
    /// Ours is now the entry.
    Installed,
    /// Another entry was already there (ours is discarded).
    Exists,
}

/// Renames `staged` to `dest`; if `dest` already exists, discards `staged`.
pub(crate) fn install(root: &Path, staged: &Path, dest: &Path) -> io::Result<Install> {
    match fs::rename(staged, dest) {
        Ok(()) => Ok(Install::Installed),
        // Lost the race (ENOTEMPTY/EEXIST on Unix, access denied on Windows).
        Err(_) if dest.exists() => {
            remove(root, staged);
            Ok(Install::Exists)
        }
        Err(e) => {
            remove(root, staged);
            Err(e)
        }
    }
}

/// Removes a directory atomically from readers' point of view: renames it
/// into `tmp/` first. Errors are ignored: the directory may already be gone
/// (another process evicted it), and a leftover in `tmp/` is swept later.
pub(crate) fn remove(root: &Path, dir: &Path) {
    let trash = root.join(TMP).join(unique_name("trash"));
    let target = if fs::rename(dir, &trash).is_ok() { trash } else { dir.to_path_buf() };
    let _ = fs::remove_dir_all(target);
}

/// Marks an entry as used now (at most every [`TOUCH_EVERY`]).
pub(crate) fn touch(dir: &Path) {
    let path = dir.join(LAST_USE);
    let now = SystemTime::now();
    if let Ok(m) = path.metadata().and_then(|m| m.modified()) {
        if now.duration_since(m).is_ok_and(|age| age < TOUCH_EVERY) {
            return;
        }
    }
    // Best effort: a read-only cache still serves hits.
    if let Ok(f) = fs::OpenOptions::new().write(true).create(true).truncate(false).open(&path) {
        let _ = f.set_modified(now);
    }
}

/// One entry directory as seen by a scan.
pub(crate) struct Scanned {
    pub id: CacheId,
    pub path: PathBuf,
    pub bytes: u64,
    pub last_use: Option<SystemTime>,
}

/// Every entry directory under `root/kernels`, with its size and last use.
/// Directories whose names are not ids are ignored.
pub(crate) fn scan(root: &Path) -> Vec<Scanned> {
    let mut out = vec![];
    let Ok(rd) = fs::read_dir(root.join(KERNELS)) else { return out };
    for d in rd.flatten() {
        let Some(id) = d.file_name().to_str().and_then(CacheId::parse) else { continue };
        let path = d.path();
        let mut bytes = 0;
        let mut last_use = None;
        if let Ok(files) = fs::read_dir(&path) {
            for f in files.flatten() {
                if let Ok(m) = f.metadata() {
                    bytes += m.len();
                    if f.file_name() == LAST_USE {
                        last_use = m.modified().ok();
                    }
                }
            }
        }
        out.push(Scanned { id, path, bytes, last_use });
    }
    out
}

/// Deletes staging directories under `root/tmp` older than [`STALE_TMP`].
pub(crate) fn sweep_tmp(root: &Path) {
    let Ok(rd) = fs::read_dir(root.join(TMP)) else { return };
    let now = SystemTime::now();
    for d in rd.flatten() {
        let old = d
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| now.duration_since(t).unwrap_or_default() > STALE_TMP);
        if old {
            let p = d.path();
            let _ = if p.is_dir() { fs::remove_dir_all(p) } else { fs::remove_file(p) };
        }
    }
}

/// Evicts least-recently-used entries until the total is at most `max_bytes`,
/// never evicting `keep` (the entry just stored: a single entry larger than
/// the limit stays until the next one arrives). Returns (entries, bytes) evicted.
pub(crate) fn evict(root: &Path, max_bytes: u64, keep: Option<&CacheId>) -> (u64, u64) {
    let mut entries = scan(root);
    let mut total: u64 = entries.iter().map(|e| e.bytes).sum();
    if total <= max_bytes {
        return (0, 0);
    }
    // Oldest first; entries without a stamp count as oldest.
    entries.sort_by_key(|e| e.last_use.unwrap_or(UNIX_EPOCH));
    let (mut n, mut freed) = (0, 0);
    for e in entries {
        if total <= max_bytes {
            break;
        }
        if Some(&e.id) == keep {
            continue;
        }
        remove(root, &e.path);
        total -= e.bytes;
        n += 1;
        freed += e.bytes;
    }
    (n, freed)
}
