//! Temporary: one launch of the ALU loop bench kernel, for profiling.
use trident_core::{DType, HostTensor};
use trident_emu::{launch, KernelArg, LaunchConfig, Module};
fn main() {
    let src = std::fs::read_to_string("crates/emu/benches/emulation_speed.rs").unwrap();
    let start = src.find("const ALU_LOOP: &str = \"").unwrap() + 24;
    let end = start + src[start..].find("\";").unwrap();
    let m = Module::parse(&src[start..end]).unwrap();
    let which = std::env::args().nth(1).unwrap_or_default();
    if which == "vadd" {
        let text = std::fs::read_to_string("crates/emu/tests/data/vadd.ptx").unwrap();
        let m = Module::parse(&text).unwrap();
        let n = 1usize << 20;
        let mut args = vec![
            KernelArg::Buffer(HostTensor::zeros(DType::F32, &[n])),
            KernelArg::Buffer(HostTensor::zeros(DType::F32, &[n])),
            KernelArg::Buffer(HostTensor::zeros(DType::F32, &[n])),
            KernelArg::Scalar(n as u64),
            KernelArg::Null,
            KernelArg::Null,
        ];
        let cfg = LaunchConfig { grid: [(n / 256) as u32, 1, 1], block: [128, 1, 1], ..LaunchConfig::default() };
        let r = launch(&m, "vadd", &cfg, &mut args).unwrap();
        eprintln!("{} warp instrs {} cycles", r.warp_instructions, r.cycles);
        return;
    }
    let mut args = vec![KernelArg::Buffer(HostTensor::zeros(DType::F32, &[16 * 256]))];
    let cfg = LaunchConfig { grid: [16, 1, 1], block: [256, 1, 1], ..LaunchConfig::default() };
    let r = launch(&m, "alu", &cfg, &mut args).unwrap();
    eprintln!("{} warp instrs {} cycles", r.warp_instructions, r.cycles);
}
