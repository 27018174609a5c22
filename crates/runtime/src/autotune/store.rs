//! Autotuning choices on disk: one JSON file per (kernel identity, config
//! list, key values) under the compile cache's `autotune/` directory.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::config::TuneConfig;
use super::TrialResult;
use crate::cache::{self, Cache};

const FORMAT: u32 = 1;

/// Where autotuning choices are kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TuneStore {
    dir: PathBuf,
}

/// Whether choices persist on disk: on unless `TRIDENT_AUTOTUNE_CACHE` is `0`
/// (or `false`/`off`/`no`).
pub fn persistence_enabled() -> bool {
    crate::env::autotune_cache()
}

impl TuneStore {
    /// A store in `dir` (created when the first choice is saved).
    pub fn new(dir: impl Into<PathBuf>) -> TuneStore {
        TuneStore { dir: dir.into() }
    }

    /// The store inside a compile cache (`<root>/autotune/`), or `None` when
    /// `TRIDENT_AUTOTUNE_CACHE=0` turns persistence off.
    pub fn for_cache(cache: &Cache) -> Option<TuneStore> {
        persistence_enabled().then(|| TuneStore::new(cache.autotune_dir()))
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn path(&self, kernel: &str, hash: &str) -> PathBuf {
        let name: String =
            kernel.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').take(64).collect::<String>();
        self.dir.join(format!("{name}-{hash}.json"))
    }

    pub(crate) fn load(&self, path: &Path) -> Option<Record> {
        let r: Record = serde_json::from_slice(&crate::cache::regular::read(path).ok()?).ok()?;
        (r.format == FORMAT).then_some(r)
    }

    /// Writes atomically (temp file + rename): concurrent tuners of the same
    /// key each write a whole record, and the last one stays.
    pub(crate) fn save(&self, path: &Path, record: &Record) -> io::Result<()> {
        fs::create_dir_all(&self.dir)?;
        let tmp = self.dir.join(format!(".{}", cache::unique_tmp_name("tune")));
        fs::write(&tmp, serde_json::to_vec_pretty(record).map_err(io::Error::other)?)?;
        fs::rename(&tmp, path).inspect_err(|_| {
            let _ = fs::remove_file(&tmp);
        })
    }
}

/// One autotuning file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Record {
    pub format: u32,
    pub kernel: String,
    pub identity: String,
    pub trident_version: String,
    pub key: Vec<(String, String)>,
    pub best: TuneConfig,
    pub results: Vec<TrialResult>,
    pub tuning_secs: f64,
    pub created_unix: u64,
}

impl Record {
    pub(crate) fn new(
        kernel: &str,
        identity: &str,
        key: &[(String, String)],
        best: &TuneConfig,
        results: &[TrialResult],
        tuning_secs: f64,
    ) -> Record {
        Record {
            format: FORMAT,
            kernel: kernel.to_string(),
            identity: identity.to_string(),
            trident_version: cache::version().to_string(),
            key: key.to_vec(),
            best: best.clone(),
            results: results.to_vec(),
            tuning_secs,
            created_unix: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        }
    }
}
