//! The in-process memo: a cheap identity of a specialization → its loaded entry.
//!
//! Building a [`super::CacheKey`] means reading and hashing the kernel's
//! source files, and a disk hit reads and verifies every artifact. A process
//! that launches the same specialization many times (a benchmark loop, the
//! autotuner re-running a config) should pay that once. [`MemoKey`] names a
//! specialization by things that cost a `stat` per file to compute — path,
//! modification time and size of each source file, the kernel name, and the
//! caller's specialization tuple — and [`super::Cache::get_or_build_memo`]
//! keeps the loaded [`super::Entry`] under it for the life of the [`super::Cache`].
//!
//! The usual caveat of mtime-based staleness checks applies: a file rewritten
//! with the same size within the file system's timestamp granularity is not
//! noticed until the process restarts (the disk cache, keyed by content, is
//! never fooled). An entry held by the memo stays usable in memory even if
//! another process evicts or clears it on disk; [`super::Cache::clear`] and
//! [`super::Cache::remove`] forget it in this process.

use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Identity of a source file as cheap to check as a `stat`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FileStamp {
    /// The path as given.
    pub path: PathBuf,
    /// Modification time, where the file system has one.
    pub modified: Option<SystemTime>,
    /// Size in bytes.
    pub len: u64,
}

impl FileStamp {
    /// Stats `path`.
    pub fn of(path: impl AsRef<Path>) -> io::Result<FileStamp> {
        let path = path.as_ref();
        let m = path.metadata()?;
        Ok(FileStamp { path: path.to_path_buf(), modified: m.modified().ok(), len: m.len() })
    }
}

/// A specialization's cheap identity: the stamps of its source files, the
/// kernel's name and a text for everything else the [`super::CacheKey`]
/// would hold (signature with specialization attributes, constexprs, options,
/// target), e.g. the `Debug` form of the launcher's specialization tuple.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemoKey {
    files: Vec<FileStamp>,
    kernel: String,
    spec: String,
}

impl MemoKey {
    /// A memo key for `kernel` with specialization text `spec` and no files yet.
    pub fn new(kernel: impl Into<String>, spec: impl Into<String>) -> MemoKey {
        MemoKey { files: vec![], kernel: kernel.into(), spec: spec.into() }
    }

    /// Adds a source file's stamp.
    pub fn file(mut self, stamp: FileStamp) -> MemoKey {
        self.files.push(stamp);
        self
    }

    /// Adds the stamps of the given files (the kernel's and its helpers').
    pub fn files<P: AsRef<Path>>(mut self, paths: impl IntoIterator<Item = P>) -> io::Result<MemoKey> {
        for p in paths {
            self.files.push(FileStamp::of(p)?);
        }
        Ok(self)
    }
}
