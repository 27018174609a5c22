//! `trident bench`: time a kernel over repetitions (CUDA events on the GPU, the
//! modelled clock on the emulator, wall time on the interpreter).

use crate::expr;
use clap::Args;
use trident_runtime::launch::{self, LaunchOptions};
use trident_runtime::{KernelProgram, RunCommand};

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// FILE.py::KERNEL, run options, bench options and NAME=VALUE arguments, in any order (see below).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub words: Vec<String>,
}

pub fn bench(a: BenchArgs) -> Result<(), String> {
    let cmd = RunCommand::parse_bench(&a.words).map_err(|e| format!("error: {e}"))?;
    let b = &cmd.bench;
    let prog = KernelProgram::load(&cmd.file).map_err(|e| e.text)?;
    let kernel = prog.kernel(cmd.kernel.as_deref()).map_err(|e| e.text)?;
    let mut args = cmd.materialize().map_err(|e| format!("error: {e}"))?;
    let flops =
        b.flops.as_deref().map(|e| expr::eval(e, &args)).transpose().map_err(|e| format!("error: --flops: {e}"))?;
    let bytes =
        b.bytes.as_deref().map(|e| expr::eval(e, &args)).transpose().map_err(|e| format!("error: --bytes: {e}"))?;
    let opts = LaunchOptions::from_command(&cmd);
    let ck = launch::prepare(&prog, kernel, &args, &opts).map_err(|e| e.text)?;
    let out = launch::run_compiled_reps(&ck, &mut args, &opts, b.warmup, b.reps).map_err(|e| e.text)?;
    let mut us: Vec<f64> = out.samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    us.sort_by(f64::total_cmp);
    let median = us[us.len() / 2];
    let tflops = flops.map(|f| f / (median * 1e-6) / 1e12);
    let gbps = bytes.map(|b| b / (median * 1e-6) / 1e9);
    if b.json {
        let opt = |v: Option<f64>| v.map_or("null".to_string(), |x| format!("{x:.6}"));
        println!(
            "{{\"kernel\": \"{}\", \"backend\": \"{:?}\", \"median_us\": {median:.3}, \"min_us\": {:.3}, \"max_us\": {:.3}, \"reps\": {}, \"tflops\": {}, \"gbps\": {}, \"num_warps\": {}, \"num_stages\": {}}}",
            kernel.name,
            out.backend,
            us[0],
            us[us.len() - 1],
            us.len(),
            opt(tflops),
            opt(gbps),
            ck.num_warps,
            ck.num_stages
        );
    } else {
        print!(
            "{} on {:?}: median {median:.2} µs (min {:.2}, max {:.2}, {} reps)",
            kernel.name,
            out.backend,
            us[0],
            us[us.len() - 1],
            us.len()
        );
        if let Some(t) = tflops {
            print!(", {t:.2} TFLOP/s");
        }
        if let Some(g) = gbps {
            print!(", {g:.1} GB/s");
        }
        println!();
        if let Some(e) = &out.estimate {
            println!("  {e}");
        }
    }
    Ok(())
}
