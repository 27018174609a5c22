//! Runs a recorded launch (the `TRIDENT_EMU_DUMP` format, see `tests/data/replay_on_gpu.py`)
//! on the emulator and writes the buffers after the launch to `NAME.emu.I.bin`.
//!
//!     cargo run -p trident-emu --example replay -- DIR/NAME

use trident_core::{DType, HostTensor};
use trident_emu::{launch, KernelArg, LaunchConfig, Module};

fn main() {
    let base = std::env::args().nth(1).expect("usage: replay DIR/NAME");
    let ptx = std::fs::read_to_string(format!("{base}.ptx")).expect("NAME.ptx");
    let meta = std::fs::read_to_string(format!("{base}.txt")).expect("NAME.txt");
    let mut cfg = LaunchConfig::default();
    let mut entry = String::new();
    let mut args = Vec::new();
    let mut bufs = Vec::new();
    for line in meta.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| w.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
        match w.first().copied() {
            Some("entry") => entry = w.get(1).unwrap_or(&"").to_string(),
            Some("grid") => cfg.grid = [num(1) as u32, num(2) as u32, num(3) as u32],
            Some("block") => cfg.block = [num(1) as u32, num(2) as u32, num(3) as u32],
            Some("shared") => cfg.dynamic_shared_bytes = num(1) as u32,
            Some("buf") => {
                let i = num(1) as usize;
                let data = std::fs::read(format!("{base}.in.{i}.bin")).expect("input bytes");
                bufs.push(args.len());
                args.push(KernelArg::Buffer(HostTensor { dtype: DType::U8, shape: vec![data.len()], data }));
            }
            Some("scalar") => args.push(KernelArg::Scalar(num(1))),
            Some("null") => args.push(KernelArg::Null),
            _ => {}
        }
    }
    let m = Module::parse(&ptx).unwrap_or_else(|e| panic!("{e}"));
    let r = launch(&m, &entry, &cfg, &mut args).unwrap_or_else(|e| panic!("{e}"));
    for i in bufs {
        if let KernelArg::Buffer(t) = &args[i] {
            std::fs::write(format!("{base}.emu.{i}.bin"), &t.data).expect("write");
        }
    }
    print!("{}", r.printf);
    eprintln!("{} lane-instructions, {} modelled cycles", r.lane_instructions, r.cycles);
}
