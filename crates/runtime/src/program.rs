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
        let file = trident_front::parse_live(&live).map_err(|e| RunError::from_diags(&[*e.diagnostic], &e.files))?;
        Ok(KernelProgram { file, source_id: OnceLock::new() })
    }

    /// [`KernelProgram::from_live`] from the description's JSON. Malformed JSON, or a description
    /// without its required fields, is an error; a malformed global is an error only where the
    /// kernel uses it, naming it.
    pub fn from_live_json(json: &str) -> Result<KernelProgram, RunError> {
        let live = LiveFunction::from_json(json).map_err(|e| RunError::from_diags(&[*e.diagnostic], &e.files))?;
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

#[cfg(test)]
mod live_tests {
    //! A live program (`KernelProgram::from_live_json`) compiles like the file it was described
    //! from, and its cache key follows the globals' values.

    use super::*;
    use crate::cache::key::{cache_key, describe};
    use crate::compiled::CodeTarget;
    use crate::session::Session;
    use crate::stages::{compile_stage, Stage, StageOptions, StageOutput};
    use std::sync::Arc;
    use trident_front::live::describe_file;
    use trident_front::{ArgInfo, CompileOptions, ConstValue};

    fn root() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    /// One case of every bundled kernel (the testkit catalog's first), grid left out.
    const BUNDLED: &[&str] = &[
        "kernels/vector_add.py::add_kernel x=randn:f32:1 y=randn:f32:1 out=empty:f32:1 n_elements=1 BLOCK=64",
        "kernels/softmax.py::softmax_kernel x=randn:f32:3x1 y=empty:f32:3x1 x_row_stride=1 y_row_stride=1 n_cols=1 BLOCK=1",
        "kernels/matmul.py::matmul_kernel a=randn:f16:16x16 b=randn:f16:16x16 c=empty:f16:16x16 M=16 N=16 K=16 stride_am=16 stride_ak=1 stride_bk=16 stride_bn=1 stride_cm=16 stride_cn=1 BLOCK_M=16 BLOCK_N=16 BLOCK_K=16 GROUP_M=1",
        "kernels/matmul.py::matmul_autotuned a=randn:f16:50x70 b=randn:f16:70x40 c=empty:f16:50x40 M=50 N=40 K=70 stride_am=70 stride_ak=1 stride_bk=40 stride_bn=1 stride_cm=40 stride_cn=1 BLOCK_M=32 BLOCK_N=32 BLOCK_K=32 GROUP_M=4",
        "kernels/layernorm.py::layernorm_fwd x=randn:f32:13x37 y=empty:f32:13x37 w=randn:f32:37 b=randn:f32:37 mean=empty:f32:13 rstd=empty:f32:13 stride=37 N=37 eps=1e-05 BLOCK_N=64",
        "kernels/layernorm.py::layernorm_bwd_dx dy=randn:f32:13x37 x=randn:f32:13x37 w=randn:f32:37 mean=randn:f32:13 rstd=rand:f32:13 dx=empty:f32:13x37 dw_part=empty:f32:4x37 db_part=empty:f32:4x37 stride=37 M=13 N=37 ROWS_PER_PROGRAM=4 BLOCK_N=64",
        "kernels/layernorm.py::layernorm_bwd_dwdb dw_part=randn:f32:4x37 db_part=randn:f32:4x37 dw=empty:f32:37 db=empty:f32:37 G=4 N=37 BLOCK_G=2 BLOCK_N=32",
        "kernels/flash_attention.py::attn_fwd q=randn:f16:1x2x16x16 k=randn:f16:1x2x16x16 v=randn:f16:1x2x16x16 o=empty:f16:1x2x16x16 sm_scale=0.25 stride_qz=512 stride_qh=256 stride_qm=16 stride_qd=1 stride_kz=512 stride_kh=256 stride_kn=16 stride_kd=1 stride_vz=512 stride_vh=256 stride_vn=16 stride_vd=1 stride_oz=512 stride_oh=256 stride_om=16 stride_od=1 H=2 N_CTX=16 BLOCK_M=16 BLOCK_N=16 HEAD_DIM=16 IS_CAUSAL=True",
        "kernels/dropout.py::dropout_kernel x=randn:f32:1000 out=empty:f32:1000 n_elements=1000 p=0.3 seed=1234 BLOCK=256",
        "kernels/splitk_matmul.py::splitk_matmul_kernel a=randn:f16:37x100 b=randn:f16:100x29 c=zeros:f32:37x29 M=37 N=29 K=100 stride_am=100 stride_ak=1 stride_bk=29 stride_bn=1 stride_cm=29 stride_cn=1 K_PER_SPLIT=48 BLOCK_M=16 BLOCK_N=16 BLOCK_K=16",
        "kernels/cumsum.py::cumsum_kernel x=randn:f32:1x1 y=empty:f32:1x1 M=1 N=1 stride_xm=1 stride_ym=1 BLOCK_M=1 BLOCK_N=1",
    ];

    /// The held-out cases (`tests/heldout/CASES.md`): `(FILE.py::KERNEL WORDS...)`, grids and the
    /// script's own generators dropped.
    fn heldout() -> Vec<String> {
        let text = std::fs::read_to_string(root().join("tests/heldout/CASES.md")).unwrap();
        let block = text.split("```cases").nth(1).unwrap().split("```").next().unwrap();
        block
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let f: Vec<&str> = l.split('|').map(str::trim).collect();
                let mut words = vec![format!("tests/heldout/{}", f[2])];
                let mut it = f[3].split_whitespace();
                while let Some(w) = it.next() {
                    if w == "--grid" {
                        it.next();
                        continue;
                    }
                    // randint/arange generators: a zeros tensor of the same dtype and shape.
                    let w = match w.split_once('=') {
                        Some((n, v)) if v.starts_with("randint:") || v.starts_with("arange:") => {
                            let p: Vec<&str> = v.split(':').collect();
                            format!("{n}=zeros:{}:{}", p[1], p[2])
                        }
                        _ => w.to_string(),
                    };
                    words.push(w);
                }
                words.join(" ")
            })
            .collect()
    }

    fn stage(
        prog: &KernelProgram,
        kernel: &str,
        words: &[String],
        stage: Stage,
        locs: bool,
    ) -> Result<String, RunError> {
        let mut opts = StageOptions::new(stage);
        opts.locs = locs;
        opts.num_warps = Some(4);
        opts.num_stages = Some(3);
        opts.session = Some(Arc::new(Session::uncached().quiet(true)));
        match compile_stage(prog, prog.kernel(Some(kernel))?, words, &opts)? {
            StageOutput::Text(t) => Ok(t),
            StageOutput::Cubin(_) => unreachable!("no cubin asked for"),
        }
    }

    #[test]
    fn live_programs_compile_the_bundled_and_held_out_kernels_to_identical_tile_ir_and_ptx() {
        let mut cases: Vec<String> = BUNDLED.iter().map(|s| s.to_string()).collect();
        cases.extend(heldout());
        let mut compared = 0;
        for case in &cases {
            let mut words = case.split_whitespace().map(str::to_string);
            let (path, kernel) =
                words.next().unwrap().split_once("::").map(|(a, b)| (a.to_string(), b.to_string())).unwrap();
            let words: Vec<String> = words.collect();
            // The path as the CLI gets it, relative to the repository; read from disk so that
            // project imports are followed.
            let text = std::fs::read_to_string(root().join(&path)).unwrap();
            let on_disk = root().join(&path).canonicalize().unwrap().display().to_string();
            let shown = if path.starts_with("kernels/") { path.clone() } else { on_disk };
            let file = KernelProgram::from_source(&shown, &text).unwrap();
            let json = describe_file(&file.file, &kernel).unwrap().to_json();
            let live = KernelProgram::from_live_json(&json).unwrap();
            assert_eq!(live.kernel(None).unwrap().name, kernel);
            // Project files the file imports but the kernel does not use are no source of the
            // live program: its file list (and so the file numbers in locations) can differ there.
            let same_files = file.source_files() == live.source_files();
            assert!(same_files || file.file.dependencies().next().is_some(), "{case}");
            // Otherwise the IR without locations is the same.
            let stages: &[(Stage, bool)] =
                if same_files { &[(Stage::Ttir, true), (Stage::Ptx, true)] } else { &[(Stage::Ttir, false)] };
            for &(st, locs) in stages {
                let want = stage(&file, &kernel, &words, st, locs);
                let got = stage(&live, &kernel, &words, st, locs);
                match (&want, &got) {
                    (Ok(w), Ok(g)) => {
                        assert!(st != Stage::Ptx || w.contains(".entry"), "{case}: {w}");
                        assert_eq!(g, w, "{case} {st:?}")
                    }
                    _ => panic!("{case} {st:?}: file {want:?}\nlive {got:?}"),
                }
            }
            compared += usize::from(same_files);
        }
        assert!(compared >= BUNDLED.len(), "only {compared} compared");
    }

    /// A small live kernel whose global `SCALE` Python resolved to `scale`.
    fn scaled(scale: &str, source_tail: &str, file_text: Option<&str>) -> KernelProgram {
        let source = format!(
            "@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * SCALE{source_tail})\n"
        );
        let live = serde_json::json!({
            "name": "k", "path": "/somewhere/k.py", "source": source, "first_line": 3,
            "file_text": file_text,
            "globals": {
                "tl": {"kind": "module", "value": "triton.language"},
                "triton": {"kind": "module", "value": "triton"},
                "SCALE": {"kind": "float", "value": scale},
            },
        });
        KernelProgram::from_live_json(&live.to_string()).unwrap()
    }

    fn key_of(prog: &KernelProgram) -> String {
        let k = prog.kernel(None).unwrap();
        let infos = vec![
            ("x_ptr".to_string(), ArgInfo::Pointer { dtype: trident_core::DType::F32, aligned16: true }),
            ("BLOCK".to_string(), ArgInfo::Constexpr(ConstValue::Int(16))),
        ];
        let d = describe(k, &infos, CodeTarget::Tile, &CompileOptions::default(), 4, 3, Default::default());
        format!("{}|{}", cache_key(prog, "k", &d).id(), prog.source_id())
    }

    #[test]
    fn the_cache_key_covers_the_sources_and_the_globals_values() {
        let base = key_of(&scaled("2.0", "", None));
        assert_eq!(key_of(&scaled("2.0", "", None)), base, "a key is deterministic");
        // A changed global constant recompiles, and so does changed source.
        assert_ne!(key_of(&scaled("3.0", "", None)), base);
        assert_ne!(key_of(&scaled("2.0", " + 1.0", None)), base);
        // The rest of the file changes diagnostics only (its lines at the function must agree).
        let file = "import triton\nimport triton.language as tl\n@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * SCALE)\n# more\n";
        let with_file = scaled("2.0", "", Some(file));
        assert_eq!(key_of(&with_file), base);
        assert_eq!(with_file.source_files()[0].text, file);
        // The program's text records the globals' values.
        assert!(
            with_file.file.text().contains("# global SCALE = Value(Const(Float(2.0)))"),
            "{}",
            with_file.file.text()
        );
    }

    #[test]
    fn live_errors_render_with_the_real_file() {
        let err = KernelProgram::from_live_json("{").err().unwrap().text;
        assert!(err.starts_with("error: malformed live-function description"), "{err}");
        let prog = scaled("oops", "", None);
        let words = vec!["x_ptr=zeros:f32:16".to_string(), "BLOCK=16".to_string()];
        let err = stage(&prog, "k", &words, Stage::Ttir, false).unwrap_err().text;
        assert!(err.contains("global `SCALE` (its description is malformed: `oops` is not a float)"), "{err}");
        assert!(err.contains("/somewhere/k.py:6:"), "{err}");
    }
}
