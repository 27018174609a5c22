//! Runs the calibration cases `scripts/emu-calibrate` wrote (DIR/cases.txt and the PTX
//! next to it) on the emulator and prints modelled against measured H100 time.
//!
//!     cargo run --release -p trident-emu --example calibrate -- DIR [CASE-NUMBER...]
//!
//! A line of cases.txt: `name|file.ptx|entry|gx,gy,gz|threads|shared bytes|registers|
//! H100 µs|sample CTAs (0: all)|args`, args as `x=*f16:N` (a buffer of N elements),
//! `n=123` (a scalar; ints equal to 1 were specialized away by the compiler, as Triton
//! does) or `eps=f32` (a float scalar, 1e-5). Sampled cases time only the first CTAs
//! (`LaunchConfig::timing_sample_ctas`); their outputs are not complete.

use std::time::Instant;

use trident_core::{DType, HostTensor};
use trident_emu::{launch, KernelArg, LaunchConfig, MachineModel, Module};

fn dtype(s: &str) -> DType {
    match s {
        "f16" => DType::F16,
        "bf16" => DType::BF16,
        "f32" => DType::F32,
        "i32" => DType::I32,
        other => panic!("dtype {other}"),
    }
}

fn buffer(dt: DType, n: usize, seed: usize) -> HostTensor {
    // Deterministic values in [-1, 1): the timing model does not look at data.
    let v: Vec<f64> = (0..n).map(|i| (((i + seed) * 7919) % 2000) as f64 / 1000.0 - 1.0).collect();
    HostTensor::from_f64(dt, &[n], &v)
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let dir = argv.first().cloned().unwrap_or_else(|| "target/emu-calibrate".into());
    let only: Vec<usize> = argv.iter().skip(1).filter_map(|a| a.parse().ok()).collect();
    let text = std::fs::read_to_string(format!("{dir}/cases.txt")).expect("cases.txt (run scripts/emu-calibrate)");
    let machine = MachineModel::h100_sxm();
    println!("| kernel | H100 µs | modelled µs | error | CTAs run | wall s |");
    println!("|---|---:|---:|---:|---|---:|");
    for (i, line) in text.lines().enumerate() {
        if !only.is_empty() && !only.contains(&(i + 1)) {
            continue;
        }
        let f: Vec<&str> = line.split('|').collect();
        let [name, file, entry, grid, threads, smem, regs, us, sample, args] = f[..] else { panic!("bad line {line}") };
        let ptx = std::fs::read_to_string(format!("{dir}/{file}")).expect("ptx");
        let module = Module::parse(&ptx).unwrap_or_else(|e| panic!("{name}: {e}"));
        let params = module.entry_params(entry).expect("entry");
        let mut kargs = Vec::new();
        for (k, a) in args.split_whitespace().enumerate() {
            let (_, v) = a.split_once('=').expect("name=value");
            if let Some(rest) = v.strip_prefix('*') {
                let (dt, n) = rest.split_once(':').expect("*dtype:n");
                kargs.push(KernelArg::Buffer(buffer(dtype(dt), n.parse().expect("n"), k)));
            } else if v == "f32" {
                kargs.push(KernelArg::Scalar(1e-5f32.to_bits() as u64));
            } else if v == "1" {
                // Specialized away by the compiler.
            } else {
                let p = params.get(kargs.len()).expect("more arguments than parameters");
                if p.is_float() {
                    kargs.push(KernelArg::Scalar(v.parse::<f32>().expect("float").to_bits() as u64));
                } else {
                    kargs.push(KernelArg::Scalar(v.parse::<i64>().expect("int") as u64));
                }
            }
        }
        assert_eq!(kargs.len(), params.len(), "{name}: arguments vs parameters");
        let g: Vec<u32> = grid.split(',').map(|x| x.parse().expect("grid")).collect();
        let cfg = LaunchConfig {
            grid: [g[0], g[1], g[2]],
            block: [threads.parse().expect("threads"), 1, 1],
            dynamic_shared_bytes: smem.parse().expect("smem"),
            check_races: false,
            registers_per_thread: regs.parse().unwrap_or(0),
            timing_sample_ctas: sample.parse().expect("sample"),
            machine: machine.clone(),
            ..LaunchConfig::default()
        };
        let t0 = Instant::now();
        let r = launch(&module, entry, &cfg, &mut kargs).unwrap_or_else(|e| panic!("{name}: {e}"));
        let wall = t0.elapsed().as_secs_f64();
        let modelled = machine.seconds(r.cycles) * 1e6;
        let measured: f64 = us.parse().expect("µs");
        let ncta = g.iter().map(|&x| x as u64).product::<u64>();
        let run = if r.ctas_run < ncta { format!("{} of {ncta} (sampled)", r.ctas_run) } else { format!("all {ncta}") };
        println!(
            "| {name} | {measured:.1} | {modelled:.1} | {:+.0}% | {run} | {wall:.1} |",
            (modelled / measured - 1.0) * 100.0
        );
        eprintln!(
            "  {name}: {} cycles, {} CTAs/SM, DRAM {:.1} MB, L2 {:.1} MB, {} warp-instructions",
            r.cycles,
            r.ctas_per_sm,
            r.dram_bytes as f64 / 1e6,
            r.l2_bytes as f64 / 1e6,
            r.warp_instructions
        );
    }
}
