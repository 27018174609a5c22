//! What the SASS emulator's tests share: a small seeded generator, and PTX through `ptxas`
//! and `nvdisasm` into a kernel the emulator runs.

#![allow(dead_code)]

use std::path::Path;

use trident_gpu::tools::{find, ptxas, Tool};
use trident_sass::disasm::{disassemble, section_text, Text};
use trident_sass::Cubin;
use trident_sass_emu::Program;

/// xorshift64.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

/// Whether ptxas and nvdisasm are there (scripts/install-tools); says so when not.
pub fn tools() -> bool {
    let ok = find(Tool::Ptxas).is_ok() && find(Tool::Nvdisasm).is_ok();
    if !ok {
        eprintln!("skipped: ptxas/nvdisasm not found (scripts/install-tools)");
    }
    ok
}

/// `ptx` assembled for `arch` (the cubin written into `dir` as `NAME.cubin` for nvdisasm):
/// the cubin, `nvdisasm`'s text of `entry`, and `entry` decoded for the SASS emulator.
pub fn compile(ptx: &str, arch: &str, entry: &str, dir: &Path, name: &str) -> (Cubin, Vec<Text>, Program) {
    let bytes = ptxas(ptx, arch).unwrap_or_else(|e| panic!("ptxas {arch}: {e}\n{ptx}")).cubin;
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(format!("{name}.cubin"));
    std::fs::write(&path, &bytes).unwrap();
    let cubin = Cubin::parse(&bytes).unwrap();
    let listings = disassemble(&find(Tool::Nvdisasm).unwrap(), &path).unwrap();
    let text = section_text(&cubin, &listings, cubin.kernel(entry).unwrap().text_section);
    let p = Program::new(&cubin, entry, &text).unwrap_or_else(|e| panic!("{entry} {arch}: {e}"));
    (cubin, text, p)
}

/// One `u32` output per thread, every byte 0xa5 (a value no kernel of the tests writes), as
/// the single argument of a one-CTA kernel of `threads` threads.
pub fn poisoned_u32(threads: u32) -> Vec<trident_emu::KernelArg> {
    let mut t = trident_core::HostTensor::zeros(trident_core::DType::U32, &[threads as usize]);
    t.data.iter_mut().for_each(|b| *b = 0xa5);
    vec![trident_emu::KernelArg::Buffer(t)]
}
