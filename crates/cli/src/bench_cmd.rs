//! `trident bench`: time a kernel over repetitions (CUDA events on the GPU, the
//! modelled clock on the emulator, wall time on the interpreter).

use crate::expr;
use clap::Args;
use trident_runtime::launch::{self, KernelProgram, LaunchOptions};
use trident_runtime::RunCommand;

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Untimed launches before timing.
    #[arg(long, default_value_t = 10)]
    pub warmup: usize,
    /// Timed launches.
    #[arg(long, default_value_t = 50)]
    pub reps: usize,
    /// Floating-point operations per launch, an expression over the arguments (e.g. `2*M*N*K`).
    #[arg(long)]
    pub flops: Option<String>,
    /// Bytes moved per launch, an expression (e.g. `nbytes(x)+nbytes(y)+nbytes(out)`).
    #[arg(long)]
    pub bytes: Option<String>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// CUDA: overwrite 256 MiB before each timed launch so inputs are not in L2 (as
    /// `triton.testing.do_bench` does); off by default.
    #[arg(long)]
    pub flush_l2: bool,
    /// FILE.py::KERNEL, run options and NAME=VALUE arguments, as for `trident run`.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub words: Vec<String>,
}

/// Moves the bench options given among the run words (anywhere after the kernel) into `a`.
fn take_bench_options(a: &mut BenchArgs) -> Result<Vec<String>, String> {
    let mut rest = vec![];
    let mut it = std::mem::take(&mut a.words).into_iter();
    while let Some(w) = it.next() {
        let (flag, inline) = match w.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (w.clone(), None),
        };
        if flag == "--json" {
            a.json = true;
            continue;
        }
        if flag == "--flush-l2" {
            a.flush_l2 = true;
            continue;
        }
        if !["--warmup", "--reps", "--flops", "--bytes"].contains(&flag.as_str()) {
            rest.push(w);
            continue;
        }
        let v = inline.or_else(|| it.next()).ok_or_else(|| format!("error: {flag} needs a value"))?;
        let count = || v.parse::<usize>().map_err(|_| format!("error: {flag}: expected a count, got `{v}`"));
        match flag.as_str() {
            "--warmup" => a.warmup = count()?,
            "--reps" => a.reps = count()?.max(1),
            "--flops" => a.flops = Some(v.clone()),
            _ => a.bytes = Some(v.clone()),
        }
    }
    Ok(rest)
}

pub fn bench(mut a: BenchArgs) -> Result<(), String> {
    let words = take_bench_options(&mut a)?;
    let cmd = RunCommand::parse(&words).map_err(|e| format!("error: {e}"))?;
    let prog = KernelProgram::load(&cmd.file).map_err(|e| e.text)?;
    let kernel = prog.kernel(cmd.kernel.as_deref()).map_err(|e| e.text)?;
    let mut args = cmd.materialize().map_err(|e| format!("error: {e}"))?;
    let flops =
        a.flops.as_deref().map(|e| expr::eval(e, &args)).transpose().map_err(|e| format!("error: --flops: {e}"))?;
    let bytes =
        a.bytes.as_deref().map(|e| expr::eval(e, &args)).transpose().map_err(|e| format!("error: --bytes: {e}"))?;
    let mut opts = LaunchOptions::new(cmd.grid);
    opts.grid_expr = cmd.grid_expr.clone();
    opts.backend = cmd.backend;
    opts.num_warps = cmd.num_warps;
    opts.num_stages = cmd.num_stages;
    opts.flush_l2 = a.flush_l2;
    let ck = launch::compile(&prog, kernel, &args, &opts).map_err(|e| e.text)?;
    let out = launch::run_compiled_reps(&ck, &mut args, &opts, a.warmup, a.reps).map_err(|e| e.text)?;
    let mut us: Vec<f64> = out.samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    us.sort_by(f64::total_cmp);
    let median = us[us.len() / 2];
    let tflops = flops.map(|f| f / (median * 1e-6) / 1e12);
    let gbps = bytes.map(|b| b / (median * 1e-6) / 1e9);
    if a.json {
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
    }
    Ok(())
}
