//! What a compiled kernel depends on ([`CacheKey`]) and the short id it hashes to ([`CacheId`]).
//!
//! The id is a BLAKE3 hash. A cache key needs a hash that is collision-resistant
//! (two specializations must never share an entry, and sources are arbitrary
//! user text) and fast (the key covers the kernel's whole source file, and the
//! same function verifies every file of an entry on each disk hit, a cubin
//! being hundreds of KiB). BLAKE3 is cryptographic and, with its SIMD code,
//! several times faster than SHA-256 without SHA extensions, from one small
//! dependency; 128 bits of it (32 hex digits) keep directory names short with
//! no practical chance of collision.

use std::fmt;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// Everything that changes a compiled kernel: sources, compiler version,
/// signature, constexpr values, options and target.
///
/// Values are given as text (`Display`), so the key does not depend on the
/// front end's or the pipeline's types; the caller must make that text
/// faithful (two different values must print differently — e.g. `1` vs
/// `1.0` vs `True`). Sources, constexprs and options are sorted by name when
/// hashed, so the order they are added in does not matter; the signature is
/// positional.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheKey {
    kernel: String,
    target: String,
    version: String,
    sources: Vec<(String, String)>,
    signature: Vec<String>,
    constexprs: Vec<(String, String)>,
    options: Vec<(String, String)>,
}

impl CacheKey {
    /// A key for `kernel` compiled for `target` (e.g. `"sm_90a"`, `"emu-sm_80"`,
    /// `"interp"`), with the running Trident's [`version`] and nothing else yet.
    pub fn new(kernel: impl Into<String>, target: impl Into<String>) -> CacheKey {
        CacheKey {
            kernel: kernel.into(),
            target: target.into(),
            version: version().to_string(),
            sources: vec![],
            signature: vec![],
            constexprs: vec![],
            options: vec![],
        }
    }

    /// Adds a source text: the kernel's file, or a file of a helper it calls.
    /// `name` identifies it (a path); the text is what gets hashed.
    pub fn source(mut self, name: impl Into<String>, text: impl Into<String>) -> CacheKey {
        self.sources.push((name.into(), text.into()));
        self
    }

    /// Adds the next parameter's type and specialization attributes
    /// (e.g. `"*fp16:16"` for a 16-byte-aligned f16 pointer, `"i32:1"` for an
    /// integer specialized as 1), in parameter order.
    pub fn arg(mut self, ty: impl Into<String>) -> CacheKey {
        self.signature.push(ty.into());
        self
    }

    /// Adds a constexpr parameter's value.
    pub fn constexpr(mut self, name: impl Into<String>, value: impl fmt::Display) -> CacheKey {
        self.constexprs.push((name.into(), value.to_string()));
        self
    }

    /// Adds a compile option (`num_warps`, `num_stages`, `debug`, ...).
    pub fn option(mut self, name: impl Into<String>, value: impl fmt::Display) -> CacheKey {
        self.options.push((name.into(), value.to_string()));
        self
    }

    /// Replaces the compiler version (default: [`version`]); for tests and tools.
    pub fn with_version(mut self, version: impl Into<String>) -> CacheKey {
        self.version = version.into();
        self
    }

    /// The kernel's name.
    pub fn kernel(&self) -> &str {
        &self.kernel
    }

    /// The hash of every field: the entry's directory name.
    pub fn id(&self) -> CacheId {
        let mut h = blake3::Hasher::new();
        // A domain tag and length-prefixed fields: no two different keys
        // encode to the same byte stream.
        h.update(b"trident-cache-key/1\0");
        field(&mut h, b'k', &self.kernel);
        field(&mut h, b't', &self.target);
        field(&mut h, b'v', &self.version);
        for (name, text) in sorted(&self.sources) {
            field(&mut h, b's', name);
            field(&mut h, b'S', text);
        }
        for ty in &self.signature {
            field(&mut h, b'a', ty);
        }
        for (name, value) in sorted(&self.constexprs) {
            field(&mut h, b'c', name);
            field(&mut h, b'C', value);
        }
        for (name, value) in sorted(&self.options) {
            field(&mut h, b'o', name);
            field(&mut h, b'O', value);
        }
        CacheId::from_hash(h.finalize())
    }

    /// The human-readable fields, for the entry's metadata and `trident cache list`
    /// (sources by name and hash, not text).
    pub fn summary(&self) -> KeySummary {
        KeySummary {
            kernel: self.kernel.clone(),
            target: self.target.clone(),
            version: self.version.clone(),
            sources: sorted(&self.sources)
                .into_iter()
                .map(|(name, text)| (name.clone(), CacheId::from_hash(blake3::hash(text.as_bytes())).0))
                .collect(),
            signature: self.signature.clone(),
            constexprs: sorted(&self.constexprs).into_iter().cloned().collect(),
            options: sorted(&self.options).into_iter().cloned().collect(),
        }
    }
}

fn field(h: &mut blake3::Hasher, tag: u8, text: &str) {
    h.update(&[tag]);
    h.update(&(text.len() as u64).to_le_bytes());
    h.update(text.as_bytes());
}

fn sorted(v: &[(String, String)]) -> Vec<&(String, String)> {
    let mut v: Vec<_> = v.iter().collect();
    v.sort();
    v
}

/// A key's readable fields, as stored in an entry's `meta.json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeySummary {
    /// Kernel name.
    pub kernel: String,
    /// Compile target.
    pub target: String,
    /// Compiler version the entry was built by.
    pub version: String,
    /// Source names and the hashes (32 hex digits) of their texts.
    pub sources: Vec<(String, String)>,
    /// Parameter types with specialization attributes, in order.
    pub signature: Vec<String>,
    /// Constexpr values, sorted by name.
    pub constexprs: Vec<(String, String)>,
    /// Options, sorted by name.
    pub options: Vec<(String, String)>,
}

impl fmt::Display for KeySummary {
    /// One line: `target=sm_80 sig=(*fp32:16, i32) BLOCK=1024 num_warps=4`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "target={} sig=({})", self.target, self.signature.join(", "))?;
        for (k, v) in self.constexprs.iter().chain(&self.options) {
            write!(f, " {k}={v}")?;
        }
        Ok(())
    }
}

/// The id of a cache entry: 32 lowercase hex digits (128 bits of BLAKE3).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CacheId(String);

impl CacheId {
    fn from_hash(h: blake3::Hash) -> CacheId {
        let mut s = h.to_hex().to_string();
        s.truncate(32);
        CacheId(s)
    }

    /// Parses an id (as printed by `trident cache list`); `None` unless 32 lowercase hex digits.
    pub fn parse(s: &str) -> Option<CacheId> {
        (s.len() == 32 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
            .then(|| CacheId(s.to_string()))
    }

    /// The hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CacheId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checksum of a file's bytes as stored in manifests: full 64-digit BLAKE3 hex.
pub(crate) fn checksum(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// The compiler version that goes into every key: the crate version plus a
/// fingerprint of the running executable (its size and modification time).
///
/// Trident's version number does not change when its code does, and a cache
/// that survived a rebuild of the compiler would hand out kernels compiled by
/// the old one; the executable's fingerprint changes on every rebuild.
/// Computed once per process.
pub fn version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        let exe = std::env::current_exe().and_then(|p| p.metadata());
        match exe {
            Ok(m) => {
                let mtime = m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
                let stamp = format!("{}:{:?}", m.len(), mtime);
                let h = blake3::hash(stamp.as_bytes()).to_hex();
                format!("{}+{}", env!("CARGO_PKG_VERSION"), &h.as_str()[..12])
            }
            Err(_) => env!("CARGO_PKG_VERSION").to_string(),
        }
    })
}
