//! What a compiled kernel depends on ([`CacheKey`]), the short id it hashes to
//! ([`CacheId`]), and the policy of what a kernel specialization's key holds
//! (`describe`, `cache_key`: the second half of this file).
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
use trident_front::{ArgInfo, CompileOptions, ConstValue, KernelInfo};

use crate::compiled::CodeTarget;
use crate::program::KernelProgram;

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

/// The file whose fingerprint stands for the compiler's code, when it is not the running
/// executable ([`set_code_file`]).
static CODE_FILE: OnceLock<std::path::PathBuf> = OnceLock::new();

/// Names the file that holds the compiler's code, for a process whose executable does not:
/// the Python package's extension module (`_native.abi3.so`) inside a `python` process, whose
/// executable's fingerprint never changes when the package is rebuilt or upgraded — without
/// this, a rebuilt package kept handing out kernels the old compiler had cached. Call before
/// the first compile; a later call (or a second one) changes nothing.
pub fn set_code_file(path: impl Into<std::path::PathBuf>) {
    let _ = CODE_FILE.set(path.into());
}

/// The compiler version that goes into every key: the crate version plus a
/// fingerprint of the file holding the compiler's code — the running executable, or the
/// file named by [`set_code_file`] (its size and modification time).
///
/// Trident's version number does not change when its code does, and a cache
/// that survived a rebuild of the compiler would hand out kernels compiled by
/// the old one; the file's fingerprint changes on every rebuild.
/// Computed once per process.
pub fn version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        let file = match CODE_FILE.get() {
            Some(p) => Ok(p.clone()),
            None => std::env::current_exe(),
        };
        match file.and_then(|p| p.metadata()) {
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

// What a kernel specialization's key holds: the policy.
//
// Everything that changes the compiled output, and nothing else:
// * the kernel file's path and text (the path is in the PTX's line info), and those of
//   every project file it imports, and Trident's version ([`version`]);
// * the signature: one text per runtime parameter with the specialization attributes the
//   front end looks at ([`signature_text`]);
// * every constexpr given, from the config or from `@triton.heuristics` ([`constexpr_text`]);
// * the options: `debug` and `default_dot_precision` (the front end's [`CompileOptions`],
//   the very value the compile is given), `profile_scopes` when set (scopes become records
//   in the tile IR), and for GPU targets `num_warps`, `num_stages` and, when profiling,
//   `profile` (regions, granularity, ring capacity, probe mode; tile IR does not depend on
//   them, so a tile-IR entry serves every choice of them), and `sanitize` when set (the
//   bounds checks and hidden parameters of sanitize mode), and `pingpong=false` when
//   `TRIDENT_PINGPONG` turns ping-pong turns off, `setmaxnreg=true` with
//   `TRIDENT_SETMAXNREG`; `split_loops=true` with `TRIDENT_SPLIT_LOOPS` (every target: it
//   is a tile pass). Options only written when set
//   keep the keys of unprofiled compilations what they were;
// * the value of every environment variable the kernel's files read at module level
//   (`env:NAME` options; [`env_names_read`]);
// * the target ([`CodeTarget::name`]).

/// The GPU options beyond warps and stages that change the code (GPU targets only).
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct GpuExtras<'a> {
    /// In-kernel profiling.
    pub profile: Option<&'a trident_gpu::ProfileOptions>,
    /// Sanitize mode (bounds checks in the kernel).
    pub sanitize: bool,
}

/// The parts of a specialization's key, computed once per lookup: what the in-process
/// memo is keyed by ([`Described::spec_text`]) and what the disk key is made of.
pub(crate) struct Described {
    target: String,
    signature: Vec<String>,
    constexprs: Vec<(String, String)>,
    options: Vec<(String, String)>,
}

impl Described {
    /// The memo's text for this specialization of the program named by `source_id`.
    pub(crate) fn spec_text(&self, source_id: &str) -> String {
        format!("{source_id}|{}|{:?}|{:?}|{:?}", self.target, self.signature, self.constexprs, self.options)
    }
}

/// Describes a compilation of `kernel` for these arguments (`infos`: given values, config
/// constexprs and heuristics), front-end options, warps, stages and target.
pub(crate) fn describe(
    kernel: &KernelInfo,
    infos: &[(String, ArgInfo)],
    target: CodeTarget,
    options: &CompileOptions,
    num_warps: u32,
    num_stages: u32,
    gpu: GpuExtras<'_>,
) -> Described {
    let find = |name: &str| infos.iter().rev().find(|(n, _)| n == name).map(|(_, a)| a);
    let mut signature = vec![];
    let mut constexprs = vec![];
    for p in &kernel.params {
        let info = find(&p.name);
        // A tuple given element by element: each element's name and signature.
        let elems: Vec<&(String, ArgInfo)> =
            infos.iter().filter(|(n, _)| *n != p.name && trident_front::tuple_root(n) == p.name).collect();
        if !elems.is_empty() {
            for (n, a) in elems {
                signature.push(format!("{n}={}", signature_text(Some(a))));
            }
            continue;
        }
        if p.is_constexpr {
            // A constexpr left out takes its default from the source (part of the key already).
            if let Some(a) = info {
                constexprs.push((p.name.clone(), constexpr_text(a)));
            }
        } else {
            signature.push(signature_text(info));
        }
    }
    let mut opts = vec![
        ("debug".to_string(), options.debug.to_string()),
        ("default_dot_precision".to_string(), options.default_dot_precision.name().to_string()),
    ];
    if options.profile_scopes {
        opts.push(("profile_scopes".to_string(), "true".to_string()));
    }
    if crate::env::split_loops() {
        opts.push(("split_loops".to_string(), "true".to_string()));
    }
    if target != CodeTarget::Tile {
        opts.push(("num_warps".to_string(), num_warps.to_string()));
        opts.push(("num_stages".to_string(), num_stages.to_string()));
        if let Some(p) = gpu.profile {
            opts.push(("profile".to_string(), p.key_text()));
        }
        if gpu.sanitize {
            opts.push(("sanitize".to_string(), "true".to_string()));
        }
        if !crate::env::pingpong() {
            opts.push(("pingpong".to_string(), "false".to_string()));
        }
        if crate::env::setmaxnreg() {
            opts.push(("setmaxnreg".to_string(), "true".to_string()));
        }
    }
    Described { target: target.name(), signature, constexprs, options: opts }
}

/// The disk key of a described specialization of `kernel` in `prog`.
pub(crate) fn cache_key(prog: &KernelProgram, kernel: &str, d: &Described) -> CacheKey {
    let file = &prog.file;
    let mut k = CacheKey::new(kernel, &d.target).source(file.path(), file.text());
    // Helpers imported from other project files are part of the source too.
    for dep in file.dependencies() {
        k = k.source(dep.path(), dep.text());
    }
    for s in &d.signature {
        k = k.arg(s);
    }
    for (n, v) in &d.constexprs {
        k = k.constexpr(n, v);
    }
    for (n, v) in &d.options {
        k = k.option(n, v);
    }
    // Module-level code may read the environment (`os.environ.get("X", ...)`), and the
    // front end evaluates it: the values change the output, so they are part of the key.
    let texts = std::iter::once(file.text()).chain(file.dependencies().map(|f| f.text()));
    let mut names: Vec<String> = texts.flat_map(env_names_read).collect();
    names.sort();
    names.dedup();
    for n in names {
        let value = crate::env::source_variable(&n);
        k = k.option(format!("env:{n}"), value);
    }
    k
}

/// The text a launch argument contributes to the signature: its type and the
/// specialization attributes the front end looks at (`trident_front::compile`
/// binds ints by `fits in i32`, `== 1` and `% 16 == 0`, pointers by dtype and
/// 16-byte alignment; everything else about a parameter is in the source).
/// Two arguments with the same text compile to the same code.
pub(crate) fn signature_text(info: Option<&ArgInfo>) -> String {
    let flags = |one: bool, div16: bool| format!("{}{}", if one { ":1" } else { "" }, if div16 { ":16" } else { "" });
    match info {
        None => "default".to_string(),
        Some(ArgInfo::Pointer { dtype, aligned16 }) => {
            format!("*{}{}", dtype.name(), if *aligned16 { ":16" } else { "" })
        }
        Some(ArgInfo::Int(v)) => {
            let ty = if i32::try_from(*v).is_ok() { "i32" } else { "i64" };
            format!("{ty}{}", flags(*v == 1, v % 16 == 0))
        }
        Some(ArgInfo::UInt(v)) => {
            let ty = if *v > i64::MAX as u64 {
                "u64"
            } else if *v > i32::MAX as u64 {
                "i64"
            } else {
                "i32"
            };
            format!("{ty}{}", flags(*v == 1, v % 16 == 0))
        }
        Some(ArgInfo::TensorDesc { dtype, aligned16, block, nan, shape_div16 }) => {
            let dims: Vec<String> = block.iter().map(|d| d.to_string()).collect();
            let div: String = shape_div16.iter().map(|&d| if d { '1' } else { '0' }).collect();
            format!(
                "desc<{}[{}]{}{}:div16={div}>",
                dtype.name(),
                dims.join("x"),
                if *aligned16 { ":16" } else { "" },
                if *nan { ":nan" } else { "" }
            )
        }
        Some(ArgInfo::Float(_)) => "fp32".to_string(),
        Some(ArgInfo::Bool(_)) => "i1".to_string(),
        // A faithful text: `Int(1)`, `Float(1.0)`, `Bool(true)`, `DType(..)` all differ.
        Some(ArgInfo::Constexpr(c)) => format!("constexpr={c:?}"),
    }
}

/// A constexpr's value as key text: readable and faithful (`128`, `128.0`,
/// `True`, `'s'` and anything else by its `Debug` form never coincide).
pub(crate) fn constexpr_text(a: &ArgInfo) -> String {
    match a {
        ArgInfo::Constexpr(ConstValue::Int(v)) => v.to_string(),
        ArgInfo::Constexpr(ConstValue::Float(v)) => format!("{v:?}"),
        ArgInfo::Constexpr(ConstValue::Bool(v)) => if *v { "True" } else { "False" }.to_string(),
        ArgInfo::Constexpr(ConstValue::Str(v)) => format!("{v:?}"),
        ArgInfo::Constexpr(ConstValue::None) => "None".to_string(),
        other => format!("{other:?}"),
    }
}

/// Names of environment variables a Python source reads with a literal name:
/// `os.environ.get("X"...)`, `os.getenv("X"...)`, `os.environ["X"]`.
pub(crate) fn env_names_read(text: &str) -> Vec<String> {
    let mut out = vec![];
    for pat in ["environ.get(", "getenv(", "environ["] {
        for (i, _) in text.match_indices(pat) {
            let rest = text[i + pat.len()..].trim_start();
            let Some(q) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else { continue };
            if let Some(end) = rest[1..].find(q) {
                out.push(rest[1..1 + end].to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use trident_core::DType;

    #[test]
    fn finds_literal_environment_reads() {
        let src = "import os\nA = os.environ.get('FLA_FAST', '0')\nB = os.getenv(\"X_Y\")\nC = os.environ[\"Z\"]\nD = os.environ.get(name)\n";
        assert_eq!(env_names_read(src), vec!["FLA_FAST", "X_Y", "Z"]);
    }

    #[test]
    fn signature_texts_follow_the_front_ends_specialization() {
        let s = |a: ArgInfo| signature_text(Some(&a));
        assert_eq!(s(ArgInfo::Int(1)), "i32:1");
        assert_eq!(s(ArgInfo::Int(32)), "i32:16");
        assert_eq!(s(ArgInfo::Int(0)), "i32:16");
        assert_eq!(s(ArgInfo::Int(33)), "i32");
        assert_eq!(s(ArgInfo::Int(1 << 40)), "i64:16");
        assert_eq!(s(ArgInfo::UInt(u64::MAX)), "u64");
        assert_eq!(s(ArgInfo::Pointer { dtype: DType::F16, aligned16: true }), "*f16:16");
        assert_eq!(s(ArgInfo::Pointer { dtype: DType::F16, aligned16: false }), "*f16");
        assert_eq!(s(ArgInfo::Float(0.5)), "fp32");
        assert_eq!(s(ArgInfo::Bool(true)), "i1");
        assert_ne!(s(ArgInfo::Constexpr(ConstValue::Int(1))), s(ArgInfo::Constexpr(ConstValue::Float(1.0))));
        assert_ne!(s(ArgInfo::Constexpr(ConstValue::Int(1))), s(ArgInfo::Constexpr(ConstValue::Bool(true))));
        assert_eq!(signature_text(None), "default");
        let c = |v: ConstValue| constexpr_text(&ArgInfo::Constexpr(v));
        let texts = [
            c(ConstValue::Int(1)),
            c(ConstValue::Float(1.0)),
            c(ConstValue::Float(1e300)),
            c(ConstValue::Bool(true)),
            c(ConstValue::Str("1".into())),
            c(ConstValue::None),
            constexpr_text(&ArgInfo::Int(1)),
        ];
        for (i, a) in texts.iter().enumerate() {
            assert!(texts[i + 1..].iter().all(|b| a != b), "{texts:?}");
        }
        assert_eq!(texts[..4], ["1", "1.0", "1e300", "True"]);
    }

    fn kernel() -> KernelProgram {
        let src =
            "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x, n, B: tl.constexpr):\n    pass\n";
        KernelProgram::from_source("k.py", src).unwrap()
    }

    #[test]
    fn gpu_options_are_keyed_for_gpu_targets_only_and_front_options_always() {
        let prog = kernel();
        let k = prog.kernel(None).unwrap();
        let infos = vec![
            ("x".to_string(), ArgInfo::Pointer { dtype: DType::F32, aligned16: true }),
            ("n".to_string(), ArgInfo::Int(7)),
            ("B".to_string(), ArgInfo::Constexpr(ConstValue::Int(64))),
        ];
        let opts = CompileOptions::default();
        let text = |target, warps, stages, o: &CompileOptions| {
            describe(k, &infos, target, o, warps, stages, GpuExtras::default()).spec_text("s")
        };
        let emu = CodeTarget::Emu(trident_gpu::Target::Sm80);
        // Tile IR does not depend on warps or stages: one entry serves them all.
        assert_eq!(text(CodeTarget::Tile, 4, 1, &opts), text(CodeTarget::Tile, 8, 4, &opts));
        assert_ne!(text(emu, 4, 1, &opts), text(emu, 4, 4, &opts));
        assert_ne!(text(emu, 4, 3, &opts), text(emu, 8, 3, &opts));
        let ieee = CompileOptions { default_dot_precision: trident_ir::InputPrecision::Ieee, ..opts.clone() };
        assert_ne!(text(CodeTarget::Tile, 4, 3, &opts), text(CodeTarget::Tile, 4, 3, &ieee));
        let debug = CompileOptions { debug: true, ..opts.clone() };
        assert_ne!(text(CodeTarget::Tile, 4, 3, &opts), text(CodeTarget::Tile, 4, 3, &debug));
        // Profiling: the scopes change the tile IR (every target), the probes the GPU code.
        let scopes = CompileOptions { profile_scopes: true, ..opts.clone() };
        assert_ne!(text(CodeTarget::Tile, 4, 3, &opts), text(CodeTarget::Tile, 4, 3, &scopes));
        let profiled = |p: &trident_gpu::ProfileOptions, target| {
            describe(k, &infos, target, &opts, 4, 3, GpuExtras { profile: Some(p), ..Default::default() })
                .spec_text("s")
        };
        let p = trident_gpu::ProfileOptions::default();
        let small = trident_gpu::ProfileOptions { capacity: 64, ..p };
        assert_ne!(profiled(&p, emu), text(emu, 4, 3, &opts));
        assert_ne!(profiled(&p, emu), profiled(&small, emu));
        assert_eq!(profiled(&p, CodeTarget::Tile), text(CodeTarget::Tile, 4, 3, &opts));
        // Sanitize mode changes the GPU code only.
        let sanitized =
            |target| describe(k, &infos, target, &opts, 4, 3, GpuExtras { sanitize: true, ..Default::default() });
        assert_ne!(sanitized(emu).spec_text("s"), text(emu, 4, 3, &opts));
        assert_eq!(sanitized(CodeTarget::Tile).spec_text("s"), text(CodeTarget::Tile, 4, 3, &opts));
        assert!(cache_key(&prog, "k", &sanitized(emu)).summary().to_string().contains("sanitize=true"));
        let d = describe(k, &infos, emu, &opts, 4, 3, GpuExtras::default());
        assert_eq!(cache_key(&prog, "k", &d).id(), cache_key(&prog, "k", &d).id());
        let summary = cache_key(&prog, "k", &d).summary().to_string();
        assert_eq!(
            summary,
            "target=emu-sm_80 sig=(*f32:16, i32) B=64 debug=false default_dot_precision=tf32 num_stages=3 num_warps=4"
        );
    }
}
