//! The corpus the crate's tests run on: every PTX file of the emulator's test data (Triton
//! 3.x's own PTX) and of the GPU crate's PTX snapshots (Trident's), compiled by `ptxas` for
//! sm_80 and sm_90a where the PTX allows.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use trident_gpu::tools::{find, ptxas, Tool};
use trident_sass::disasm::{disassemble, section_text, Text};
use trident_sass::Cubin;

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub struct Case {
    pub name: String,
    pub bytes: Vec<u8>,
    pub path: PathBuf,
    /// `ptxas -v`'s report: (function, registers per thread).
    pub registers: Vec<(String, u32)>,
}

/// Every corpus PTX compiled for each target it can run on, written into `dir`.
pub fn corpus(dir: &Path) -> Vec<Case> {
    std::fs::create_dir_all(dir).unwrap();
    let mut ptx_files = vec![];
    for sub in ["crates/emu/tests/data", "crates/gpu/tests/ptx_snapshots"] {
        for e in std::fs::read_dir(root().join(sub)).unwrap().flatten() {
            if e.path().extension().is_some_and(|x| x == "ptx") {
                ptx_files.push(e.path());
            }
        }
    }
    ptx_files.sort();
    let mut out = vec![];
    for p in ptx_files {
        let text = std::fs::read_to_string(&p).unwrap();
        let target = text.lines().find_map(|l| l.trim().strip_prefix(".target ")).unwrap_or("sm_80").trim().to_string();
        let archs: Vec<&str> = if target.starts_with("sm_90") { vec!["sm_90a"] } else { vec!["sm_80", "sm_90a"] };
        for arch in archs {
            let name = format!("{}.{arch}", p.file_stem().unwrap().to_string_lossy());
            let Ok(out_) = ptxas(&text, arch) else { continue };
            let path = dir.join(format!("{name}.cubin"));
            std::fs::write(&path, &out_.cubin).unwrap();
            let registers = out_.usage.iter().map(|u| (u.function.clone(), u.registers)).collect();
            out.push(Case { name, bytes: out_.cubin, path, registers });
        }
    }
    out
}

pub fn tools_present() -> bool {
    find(Tool::Ptxas).is_ok() && find(Tool::Nvdisasm).is_ok()
}

/// A scratch directory for one test.
pub fn scratch(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("trident-sass-{tag}-{}", std::process::id()))
}

/// `nvdisasm`'s text of every kernel of the cubin at `path`, in `cubin.kernels` order.
pub fn texts(cubin: &Cubin, path: &Path) -> Vec<Vec<Text>> {
    let listings = disassemble(&find(Tool::Nvdisasm).unwrap(), path).unwrap();
    cubin.kernels.iter().map(|k| section_text(cubin, &listings, k.text_section)).collect()
}

/// A small deterministic generator (xorshift), seeded per run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}
