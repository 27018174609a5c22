//! A loaded kernel file: [`KernelProgram`] (its `@triton.jit` functions, the files it
//! imports, and the id that names its sources in the memo and autotuning records) — read
//! from a file, or made from a live Python function ([`KernelProgram::from_live`]).
//!
//! Near the bottom of the crate: it imports only [`crate::error`].

use std::path::Path;
use std::sync::OnceLock;

use trident_front::live::LiveFunction;
use trident_front::{KernelFile, KernelInfo};
use trident_ir::SourceFile;

use crate::error::RunError;

/// A parsed kernel file.
pub struct KernelProgram {
    /// The parsed file: its `@triton.jit` functions and their decorators.
    pub file: KernelFile,
    source_id: OnceLock<String>,
}

impl KernelProgram {
    /// Reads and parses a kernel file.
    pub fn load(path: &Path) -> Result<KernelProgram, RunError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| RunError::msg(format!("cannot read kernel file `{}`: {e}", path.display())))?;
        KernelProgram::from_source(&path.display().to_string(), &text)
    }

    /// Parses kernel source held in memory (`path` is used in messages).
    pub fn from_source(path: &str, text: &str) -> Result<KernelProgram, RunError> {
        let file = trident_front::parse_file(path, text).map_err(|d| {
            RunError::from_diags(&[d], &[SourceFile { path: path.to_string(), text: text.to_string() }])
        })?;
        Ok(KernelProgram { file, source_id: OnceLock::new() })
    }

    /// A program made of a live Python function, as `trident._live.describe(fn)` describes it:
    /// its source and the values Python resolved its globals to (see `trident_front::live`).
    /// Its kernel ([`KernelProgram::kernel`] with `None`) is that function, compiled without the
    /// decorators in its source (the caller runs `@autotune`/`@heuristics` itself); helpers
    /// from other modules compile from their own sources, diagnostics point at the real file
    /// and line, and the cache key covers the sources and the globals' values, since the
    /// file's text (`KernelFile::text`) records them.
    pub fn from_live(live: LiveFunction) -> Result<KernelProgram, RunError> {
        let file = trident_front::parse_live(&live).map_err(|e| RunError::from_diags(&[e.diagnostic], &e.files))?;
        Ok(KernelProgram { file, source_id: OnceLock::new() })
    }

    /// [`KernelProgram::from_live`] from the description's JSON. Malformed JSON, or a description
    /// without its required fields, is an error; a malformed global is an error only where the
    /// kernel uses it, naming it.
    pub fn from_live_json(json: &str) -> Result<KernelProgram, RunError> {
        let live = LiveFunction::from_json(json).map_err(|e| RunError::from_diags(&[e.diagnostic], &e.files))?;
        KernelProgram::from_live(live)
    }

    /// Every file diagnostics may point into, in `Loc::file` order: the kernel
    /// file, Trident's prelude, then the project files it imports.
    pub fn source_files(&self) -> Vec<SourceFile> {
        self.file.source_files()
    }

    /// A hash of the paths and texts of the kernel file and the project files
    /// it imports (32 hex digits), computed once per program: what names this
    /// source in the in-process memo and autotuning records.
    pub fn source_id(&self) -> &str {
        self.source_id.get_or_init(|| {
            let mut h = blake3::Hasher::new();
            h.update(b"trident-source/2\0");
            for f in std::iter::once(&self.file).chain(self.file.dependencies()) {
                for part in [f.path(), f.text()] {
                    h.update(&(part.len() as u64).to_le_bytes());
                    h.update(part.as_bytes());
                }
            }
            h.finalize().to_hex()[..32].to_string()
        })
    }

    /// The kernel called `name`, or — when `name` is `None` — the file's only kernel (a live
    /// program's: the function it was made of).
    /// A kernel is a `@triton.jit` function that no other `@triton.jit` function calls.
    pub fn kernel(&self, name: Option<&str>) -> Result<&KernelInfo, RunError> {
        if let (None, Some(k)) = (name, self.file.live_kernel()) {
            return Ok(k);
        }
        let all = self.file.kernels();
        if let Some(n) = name {
            return self.file.kernel(n).ok_or_else(|| {
                let names: Vec<&str> = all.iter().map(|k| k.name.as_str()).collect();
                RunError::msg(format!(
                    "no @triton.jit function `{n}` in {} (it has: {})",
                    self.file.path(),
                    if names.is_empty() { "none".to_string() } else { names.join(", ") }
                ))
            });
        }
        let text = self.file.text();
        let called = |k: &KernelInfo| {
            let pat = format!("{}(", k.name);
            text.match_indices(&pat).any(|(i, _)| {
                let before = &text[..i];
                // `def name(` is the definition, not a call; a longer identifier ending in the name isn't a call either.
                !before.trim_end().ends_with("def")
                    && !before.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '.')
            })
        };
        let roots: Vec<&KernelInfo> = all.iter().filter(|k| !called(k)).collect();
        match roots.as_slice() {
            [k] => Ok(k),
            _ => Err(RunError::msg(format!(
                "{} holds several kernels ({}); name one as FILE.py::KERNEL",
                self.file.path(),
                all.iter().map(|k| k.name.as_str()).collect::<Vec<_>>().join(", ")
            ))),
        }
    }
}
