//! Hit/miss counters: kept per [`super::Cache`] in atomics, added to the
//! totals in `stats.json` when the cache is dropped (or on
//! [`super::Cache::flush_stats`]), under the cache's lock file so that
//! concurrent processes do not lose each other's counts.

use std::fs;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::store::{unique_name, LOCK, TMP};

const STATS: &str = "stats.json";

/// Event counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Lookups answered from disk.
    pub hits: u64,
    /// Lookups answered from the in-process memo (no hashing, no disk).
    pub memo_hits: u64,
    /// Lookups that found nothing usable (absent or corrupt).
    pub misses: u64,
    /// Entries found damaged (and removed, to be rebuilt).
    pub corrupt: u64,
    /// Entries evicted by the size limit.
    pub evicted: u64,
    /// Builds that could not be stored (disk full, permissions, bad artifact name).
    pub store_errors: u64,
}

impl Counters {
    pub(crate) fn add(&mut self, o: &Counters) {
        self.hits += o.hits;
        self.memo_hits += o.memo_hits;
        self.misses += o.misses;
        self.corrupt += o.corrupt;
        self.evicted += o.evicted;
        self.store_errors += o.store_errors;
    }

    fn is_zero(&self) -> bool {
        *self == Counters::default()
    }
}

/// Counters of one [`super::Cache`] not yet written to `stats.json`.
#[derive(Default)]
pub(crate) struct Session {
    pub hits: AtomicU64,
    pub memo_hits: AtomicU64,
    pub misses: AtomicU64,
    pub corrupt: AtomicU64,
    pub evicted: AtomicU64,
    pub store_errors: AtomicU64,
}

impl Session {
    pub fn bump(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> Counters {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Counters {
            hits: g(&self.hits),
            memo_hits: g(&self.memo_hits),
            misses: g(&self.misses),
            corrupt: g(&self.corrupt),
            evicted: g(&self.evicted),
            store_errors: g(&self.store_errors),
        }
    }

    /// Takes the counts out (leaving zeros), for flushing.
    pub fn take(&self) -> Counters {
        let t = |c: &AtomicU64| c.swap(0, Ordering::Relaxed);
        Counters {
            hits: t(&self.hits),
            memo_hits: t(&self.memo_hits),
            misses: t(&self.misses),
            corrupt: t(&self.corrupt),
            evicted: t(&self.evicted),
            store_errors: t(&self.store_errors),
        }
    }

    fn put_back(&self, c: &Counters) {
        Session::bump(&self.hits, c.hits);
        Session::bump(&self.memo_hits, c.memo_hits);
        Session::bump(&self.misses, c.misses);
        Session::bump(&self.corrupt, c.corrupt);
        Session::bump(&self.evicted, c.evicted);
        Session::bump(&self.store_errors, c.store_errors);
    }
}

/// The totals in `root/stats.json` (zeros when absent or unreadable).
pub(crate) fn read(root: &Path) -> Counters {
    super::regular::read(&root.join(STATS)).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
}

/// Adds the session's counts to `root/stats.json`.
pub(crate) fn flush(root: &Path, session: &Session) -> io::Result<()> {
    let delta = session.take();
    if delta.is_zero() {
        return Ok(());
    }
    let r = (|| {
        let lock = fs::OpenOptions::new().create(true).truncate(false).write(true).open(root.join(LOCK))?;
        lock.lock()?;
        let mut total = read(root);
        total.add(&delta);
        let tmp = root.join(TMP).join(unique_name("stats"));
        fs::write(&tmp, serde_json::to_vec_pretty(&total).map_err(io::Error::other)?)?;
        fs::rename(&tmp, root.join(STATS))
        // The lock is released when `lock` is closed.
    })();
    if r.is_err() {
        session.put_back(&delta);
    }
    r
}

/// Removes `stats.json`.
pub(crate) fn reset(root: &Path) {
    let _ = fs::remove_file(root.join(STATS));
}
