//! Special values (NaN propagation and payloads, division by zero, saturation,
//! rounding, byte permutes, fp8) against results measured on a real GPU.
//!
//! `tests/data/special_values.ptx` computes 91 probes from inputs loaded from memory
//! (so ptxas cannot constant-fold them) and stores one 64-bit word each;
//! `special_values.h100.txt` lists what an H100 stored (recorded with the replay
//! tooling in `tests/data/replay_on_gpu.py`).

#![allow(clippy::needless_range_loop)]

mod common;

use common::*;
use trident_core::{DType, HostTensor};
use trident_emu::KernelArg;

#[test]
fn special_values_match_an_h100() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let ptx = std::fs::read_to_string(format!("{dir}/special_values.ptx")).expect("ptx");
    let inputs = std::fs::read(format!("{dir}/special_values.in.bin")).expect("inputs");
    let want: Vec<(String, u64)> = std::fs::read_to_string(format!("{dir}/special_values.h100.txt"))
        .expect("values")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (n, v) = l.split_once(' ').expect("name value");
            (n.to_string(), u64::from_str_radix(v.trim().trim_start_matches("0x"), 16).expect("hex"))
        })
        .collect();
    let n = want.len();
    let inp = HostTensor { dtype: DType::U8, shape: vec![inputs.len()], data: inputs };
    let mut args = vec![KernelArg::Buffer(poisoned(DType::U64, &[n])), KernelArg::Buffer(inp)];
    run(&ptx, "k", [1, 1, 1], [32, 1, 1], &mut args).unwrap_or_else(|e| panic!("{e}"));
    let got = buf(&args, 0);
    let mut bad = Vec::new();
    for (i, (name, w)) in want.iter().enumerate() {
        // All 32 lanes store to the same word: which lane's shuffle result lands is
        // unspecified, so this probe only shows the instruction runs.
        if name == "shfl_up_clamp" {
            continue;
        }
        let g = got.get_bits(i);
        if g != *w {
            bad.push(format!("{name}: emulator {g:#018x}, H100 {w:#018x}"));
        }
    }
    assert!(bad.is_empty(), "{} of {n} probes differ:\n{}", bad.len(), bad.join("\n"));
}
