//! What an entry holds ([`EntryData`] in, [`Entry`] out), its metadata, and its
//! on-disk form: one file per artifact plus `meta.json` and a `manifest.json`
//! listing every file with its size and checksum, verified on every read.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::key::{checksum, CacheId, KeySummary};

/// Version of the entry layout; entries of another format read as corrupt and are rebuilt.
pub(crate) const FORMAT: u32 = 1;

pub(crate) const MANIFEST: &str = "manifest.json";
pub(crate) const META: &str = "meta.json";
/// Empty file whose modification time is the entry's last use (for LRU eviction).
pub(crate) const LAST_USE: &str = "last_use";
const TTIR: &str = "kernel.ttir";
const TTGIR: &str = "kernel.ttgir";
const PTX: &str = "kernel.ptx";
const CUBIN: &str = "kernel.cubin";
const RESERVED: [&str; 7] = [MANIFEST, META, LAST_USE, TTIR, TTGIR, PTX, CUBIN];

/// Facts about a build that the launcher and `trident cache list` need.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BuildInfo {
    /// Dynamic + static shared memory the kernel needs, in bytes.
    pub shared_mem_bytes: u64,
    /// Warps per CTA.
    pub num_warps: u32,
    /// Software-pipelining stages.
    pub num_stages: u32,
    /// Registers per thread, when ptxas reported them.
    pub registers: Option<u32>,
    /// Bytes spilled to local memory, when ptxas reported them.
    pub spills: Option<u32>,
    /// Wall-clock seconds the build took. [`super::Cache::get_or_build`] measures
    /// it around the builder and overwrites what the builder put here.
    pub compile_secs: f64,
}

/// What a build produces, handed to the cache to store. Every artifact is
/// optional: an interpreter build has only tile IR.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EntryData {
    /// Tile IR text.
    pub ttir: Option<String>,
    /// GPU IR text (tile IR with layouts).
    pub ttgir: Option<String>,
    /// PTX text.
    pub ptx: Option<String>,
    /// The cubin ptxas made.
    pub cubin: Option<Vec<u8>>,
    /// Other artifacts by file name (`[A-Za-z0-9._-]`, not starting with `.`,
    /// not one of the names above): SASS dumps, a re-scheduled cubin, ...
    pub extra: Vec<(String, Vec<u8>)>,
    /// Build facts.
    pub info: BuildInfo,
}

/// An entry's `meta.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    /// Layout version (1 now; entries of another version read as damaged).
    pub format: u32,
    /// The entry's id (hex).
    pub id: String,
    /// Kernel name.
    pub kernel: String,
    /// Compiler version that built it.
    pub trident_version: String,
    /// Seconds since the Unix epoch when it was stored.
    pub created_unix: u64,
    /// The key's readable fields.
    pub key: KeySummary,
    /// Build facts.
    pub build: BuildInfo,
}

/// A cache entry: the artifacts of one specialization, verified against their checksums.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Its id.
    pub id: CacheId,
    /// Its directory, or `None` when the entry could not be stored (the
    /// artifacts are still here in memory; see [`super::Counters::store_errors`]).
    pub path: Option<PathBuf>,
    /// Tile IR text.
    pub ttir: Option<String>,
    /// GPU IR text.
    pub ttgir: Option<String>,
    /// PTX text.
    pub ptx: Option<String>,
    /// cubin bytes.
    pub cubin: Option<Vec<u8>>,
    /// Other artifacts by file name.
    pub extra: Vec<(String, Vec<u8>)>,
    /// `meta.json`.
    pub metadata: Metadata,
}

impl Entry {
    pub(crate) fn from_data(id: CacheId, path: Option<PathBuf>, data: EntryData, metadata: Metadata) -> Entry {
        Entry {
            id,
            path,
            ttir: data.ttir,
            ttgir: data.ttgir,
            ptx: data.ptx,
            cubin: data.cubin,
            extra: data.extra,
            metadata,
        }
    }

    /// Total bytes of the artifacts.
    pub fn artifact_bytes(&self) -> u64 {
        let text = |s: &Option<String>| s.as_ref().map_or(0, |s| s.len() as u64);
        text(&self.ttir)
            + text(&self.ttgir)
            + text(&self.ptx)
            + self.cubin.as_ref().map_or(0, |c| c.len() as u64)
            + self.extra.iter().map(|(_, b)| b.len() as u64).sum::<u64>()
    }
}

#[derive(Serialize, Deserialize)]
struct Manifest {
    format: u32,
    id: String,
    files: Vec<ManifestFile>,
}

#[derive(Serialize, Deserialize)]
struct ManifestFile {
    name: String,
    size: u64,
    blake3: String,
}

/// Whether `name` may be an extra artifact's file name.
pub(crate) fn valid_extra_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        && !RESERVED.contains(&name)
}

/// Writes an entry's files into `dir` (a fresh, empty directory), manifest last.
pub(crate) fn write(dir: &Path, id: &CacheId, data: &EntryData, meta: &Metadata) -> io::Result<()> {
    let known: [(&str, Option<&[u8]>); 4] = [
        (TTIR, data.ttir.as_deref().map(str::as_bytes)),
        (TTGIR, data.ttgir.as_deref().map(str::as_bytes)),
        (PTX, data.ptx.as_deref().map(str::as_bytes)),
        (CUBIN, data.cubin.as_deref()),
    ];
    let mut files: Vec<(&str, &[u8])> = known.into_iter().filter_map(|(n, b)| Some((n, b?))).collect();
    for (name, bytes) in &data.extra {
        if !valid_extra_name(name) || files.iter().any(|(n, _)| n == name) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bad artifact name `{name}`")));
        }
        files.push((name, bytes));
    }
    let meta_json = serde_json::to_vec_pretty(meta).map_err(io::Error::other)?;
    files.push((META, &meta_json));
    let mut manifest = Manifest { format: FORMAT, id: id.to_string(), files: vec![] };
    // No fsync: a crash can leave a renamed-in entry with short files, which
    // the manifest check on read catches (the entry is then rebuilt). Syncing
    // every file would cost more than the rare rebuild.
    for (name, bytes) in files {
        fs::write(dir.join(name), bytes)?;
        manifest.files.push(ManifestFile { name: name.to_string(), size: bytes.len() as u64, blake3: checksum(bytes) });
    }
    fs::File::create(dir.join(LAST_USE))?;
    fs::write(dir.join(MANIFEST), serde_json::to_vec_pretty(&manifest).map_err(io::Error::other)?)
}

/// Why an entry could not be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// No entry (or it vanished while being read: evicted or replaced).
    Absent,
    /// The entry exists but is damaged; the message says how.
    Corrupt(String),
}

fn read_file(dir: &Path, name: &str) -> Result<Vec<u8>, ReadError> {
    super::regular::read(&dir.join(name)).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound if !dir.exists() => ReadError::Absent,
        _ => ReadError::Corrupt(format!("cannot read {name}: {e}")),
    })
}

/// Reads and verifies the entry in `dir`.
///
/// A damaged entry must look damaged twice: one look can race another writer.
/// A reader whose open of the manifest fails because the entry does not exist
/// yet, and who then finds the directory present (another process installed
/// it in between), would otherwise call a good entry damaged and remove it,
/// after its writer had already handed its artifacts out (seen in CI as two
/// concurrent writers returning different entries for one key). Entries are
/// only ever renamed in whole, so a second look sees a complete one or none.
pub(crate) fn read(dir: &Path, id: &CacheId) -> Result<Entry, ReadError> {
    match read_once(dir, id) {
        Err(ReadError::Corrupt(_)) => read_once(dir, id),
        r => r,
    }
}

fn read_once(dir: &Path, id: &CacheId) -> Result<Entry, ReadError> {
    let corrupt = |m: String| ReadError::Corrupt(m);
    let manifest = read_file(dir, MANIFEST)?;
    let manifest: Manifest = serde_json::from_slice(&manifest).map_err(|e| corrupt(format!("bad {MANIFEST}: {e}")))?;
    if manifest.format != FORMAT || manifest.id != id.as_str() {
        return Err(corrupt(format!("{MANIFEST} is for format {} / id {}", manifest.format, manifest.id)));
    }
    let mut entry = Entry {
        id: id.clone(),
        path: Some(dir.to_path_buf()),
        ttir: None,
        ttgir: None,
        ptx: None,
        cubin: None,
        extra: vec![],
        metadata: Metadata {
            format: 0,
            id: String::new(),
            kernel: String::new(),
            trident_version: String::new(),
            created_unix: 0,
            key: KeySummary::default(),
            build: BuildInfo::default(),
        },
    };
    let mut have_meta = false;
    for f in manifest.files {
        let bytes = read_file(dir, &f.name)?;
        if bytes.len() as u64 != f.size {
            return Err(corrupt(format!("{} has {} bytes, manifest says {}", f.name, bytes.len(), f.size)));
        }
        if checksum(&bytes) != f.blake3 {
            return Err(corrupt(format!("{} does not match its checksum", f.name)));
        }
        let text = |b: Vec<u8>| String::from_utf8(b).map_err(|_| corrupt(format!("{} is not UTF-8", f.name)));
        match f.name.as_str() {
            TTIR => entry.ttir = Some(text(bytes)?),
            TTGIR => entry.ttgir = Some(text(bytes)?),
            PTX => entry.ptx = Some(text(bytes)?),
            CUBIN => entry.cubin = Some(bytes),
            META => {
                entry.metadata = serde_json::from_slice(&bytes).map_err(|e| corrupt(format!("bad {META}: {e}")))?;
                have_meta = true;
            }
            name if valid_extra_name(name) => entry.extra.push((f.name, bytes)),
            name => return Err(corrupt(format!("unexpected file `{name}` in {MANIFEST}"))),
        }
    }
    if !have_meta || entry.metadata.id != id.as_str() {
        return Err(corrupt(format!("{META} missing or for another entry")));
    }
    Ok(entry)
}

/// Reads only `meta.json` (no verification): for listings.
pub(crate) fn read_meta(dir: &Path) -> Option<Metadata> {
    serde_json::from_slice(&super::regular::read(&dir.join(META)).ok()?).ok()
}
