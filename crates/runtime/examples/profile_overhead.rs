//! The probes' overhead and error on the emulator (the numbers of `bench/PROFILE.md`):
//! each kernel launched plain, profiled with probes (twice: the traces must be identical)
//! and profiled with zero-cost markers (the true timeline of the unprobed kernel), for
//! several region sets; outputs compared byte for byte with the plain launch's.
//!
//! Printed per kernel and region set: distinct regions, records per warp, modelled times
//! (plain, probed, marked), the overhead (probed / plain − 1), the schedule's fidelity
//! (marked / plain − 1: records compiled as comments must leave the kernel's time alone),
//! and the error of the replayed probes against the markers, per region, of the mean
//! cycles: relative for regions of at least 180 cycles, absolute in cycles for shorter
//! ones (a region of 14 cycles measured 10 is 30% off and still within a probe's cost).
//!
//! `cargo run --release -p trident-runtime --example profile_overhead [-- REGIONS...]`
//! (`TRIDENT_EMU_TARGET=sm_90a` for the Hopper code; `DETAIL=1`: every region's true and
//! replayed mean cycles; `CAPACITY=N`: ring capacity; `ONLY=word`: kernels whose name
//! holds it); `COST=inkernel`: replay with the probe cost measured in the kernel itself
//! (`ProbeCost::InKernel`) instead of the calibration kernel's; `COST=persite`: with the
//! per-site costs of a second launch with doubled records (`ProbeCost::PerSite`).
//!
//! `BACKEND=cuda` (a GPU; the binary built here runs there, from the repository root): the
//! overhead with CUDA events instead of the model — plain and probed launches timed as
//! `trident bench` times them (median of 50 after 10 warm-up, L2 flushed before each) — and
//! each region's replayed mean cycles (`DETAIL=1`); no markers there, so no error column,
//! except for `fma chain`, whose scopes have known lengths (chains of dependent FFMAs, 4
//! cycles each on Ampere and Hopper): its rows print the replayed cycles per FFMA of each.
//!
//! "Long" regions (relative error) are those of at least 180 true cycles (`LONG=N`: N
//! cycles): ten probes of the seven-instruction lowering (17.95 cycles each), kept fixed
//! so that tables before and after the six-instruction one (9 cycles) compare.

use std::collections::BTreeMap;
use trident_runtime::args::RunCommand;
use trident_runtime::launch::{launch, prepare, run_compiled_reps, LaunchOptions, LaunchOutcome};
use trident_runtime::profile::{self as profile, trace, ProbeCost, ProbeMode, Profile, ProfileOptions, Regions, Site};
use trident_runtime::KernelProgram;

/// Mean cycles per region name (closed instances).
fn means(p: &Profile) -> BTreeMap<String, f64> {
    let mut sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for i in p.instances.iter().filter(|i| !i.open) {
        let e = sums.entry(p.meta.region(i.region).map_or(String::new(), |r| r.name.clone())).or_default();
        e.0 += i.cycles();
        e.1 += 1;
    }
    sums.into_iter().map(|(k, (s, n))| (k, s / n as f64)).collect()
}

/// Attention's arguments: Z=1, H=8, N_CTX=1024, HEAD_DIM=64, BLOCK 64×64, 4 warps.
fn attention(file: &str, causal: bool) -> String {
    let (h, n, d) = (8, 1024, 64);
    let mut s = format!(
        "{file} --grid {},{h} --num-warps 4 --num-stages 2 q=randn:f16:1x{h}x{n}x{d} k=randn:f16:1x{h}x{n}x{d} \
         v=randn:f16:1x{h}x{n}x{d} o=empty:f16:1x{h}x{n}x{d} sm_scale=0.125",
        n / 64
    );
    for t in ["q", "k", "v", "o"] {
        let dims = if t == "k" || t == "v" { ["z", "h", "n", "d"] } else { ["z", "h", "m", "d"] };
        for (dim, st) in dims.iter().zip([h * n * d, n * d, d, 1]) {
            s += &format!(" stride_{t}{dim}={st}");
        }
    }
    let c = if causal { "True" } else { "False" };
    s + &format!(" H={h} N_CTX={n} BLOCK_M=64 BLOCK_N=64 HEAD_DIM={d} IS_CAUSAL={c}")
}

fn kernels() -> Vec<(&'static str, String, Vec<&'static str>)> {
    let auto = vec!["kernel", "kernel,loops", "kernel,loops,dots,loads"];
    vec![
        (
            "fma chain",
            "bench/profile/fma_chain.py::fma_chain --grid 264 --num-warps 1 x=randn:f32:8448 y=empty:f32:8448 \
             CHAIN=32 BLOCK=32"
                .into(),
            vec!["scopes", "scopes,kernel"],
        ),
        (
            "softmax 256x1024 f32",
            "kernels/softmax.py::softmax_kernel --grid 256 x=randn:f32:256x1024 y=empty:f32:256x1024 \
             x_row_stride=1024 y_row_stride=1024 n_cols=1024 BLOCK=1024"
                .into(),
            auto.clone(),
        ),
        (
            "layernorm 256x1024 f32",
            "kernels/layernorm.py::layernorm_fwd --grid 256 x=randn:f32:256x1024 y=empty:f32:256x1024 \
             w=randn:f32:1024 b=randn:f32:1024 mean=empty:f32:256 rstd=empty:f32:256 stride=1024 N=1024 \
             eps=1e-5 BLOCK_N=1024"
                .into(),
            auto.clone(),
        ),
        (
            "matmul 512^3 f16",
            "kernels/matmul.py::matmul_kernel --grid 16 --num-warps 4 --num-stages 3 a=randn:f16:512x512 \
             b=randn:f16:512x512 c=empty:f16:512x512 M=512 N=512 K=512 stride_am=512 stride_ak=1 stride_bk=512 \
             stride_bn=1 stride_cm=512 stride_cn=1 BLOCK_M=128 BLOCK_N=128 BLOCK_K=32 GROUP_M=4"
                .into(),
            auto.clone(),
        ),
        ("attention 1x8x1024x64", attention("kernels/flash_attention.py::attn_fwd", false), auto.clone()),
        ("attention causal", attention("kernels/flash_attention.py::attn_fwd", true), auto),
        (
            "attention, 5 scopes",
            attention("bench/profile/attn_fwd_scoped.py::attn_fwd_scoped", false),
            vec!["scopes,kernel", "scopes,kernel,loops"],
        ),
        // Warp-specialized on sm_90a (a producer warp and its own regions; unspecialized on
        // sm_80, where the request changes nothing).
        (
            "matmul persistent WS 512^3",
            "kernels/matmul_persistent.py::matmul_persistent_kernel --grid 4 --num-warps 8 --num-stages 3 \
             a=randn:f16:512x512 b=randn:f16:512x512 c=empty:f16:512x512 M=512 N=512 K=512 BLOCK_M=128 \
             BLOCK_N=128 BLOCK_K=64 GROUP_M=4 NUM_SMS=4 WARP_SPECIALIZE=True"
                .into(),
            vec!["kernel", "kernel,loops", "kernel,loops,dots,loads"],
        ),
        (
            "attention desc WS, 5 scopes",
            attention_desc("bench/profile/attn_fwd_desc_scoped.py::attn_fwd_desc_scoped"),
            vec!["kernel,loops,loads", "scopes,kernel", "scopes,kernel,loops,loads"],
        ),
    ]
}

/// The descriptor attention's arguments: Z=1, H=8, N_CTX=1024, HEAD_DIM=64, BLOCK 128×64,
/// 8 warps, 3 stages, warp-specialized.
fn attention_desc(file: &str) -> String {
    let (h, n, d) = (8, 1024, 64);
    format!(
        "{file} --grid {},{h} --num-warps 8 --num-stages 3 q=randn:f16:1x{h}x{n}x{d} k=randn:f16:1x{h}x{n}x{d} \
         v=randn:f16:1x{h}x{n}x{d} o=empty:f16:1x{h}x{n}x{d} sm_scale=0.125 Z=1 H={h} N_CTX={n} BLOCK_M=128 \
         BLOCK_N=64 HEAD_DIM={d} IS_CAUSAL=False WARP_SPECIALIZE=True",
        n / 128
    )
}

/// A launch's time on the GPU as `trident bench --backend cuda` measures it: the median of
/// 50 CUDA-event timings after 10 warm-up launches, L2 flushed before each; None (and the
/// reason on stderr) if it fails.
fn gpu_us(prog: &KernelProgram, cmd: &RunCommand, profile: Option<ProfileOptions>) -> Option<f64> {
    let kernel = prog.kernel(cmd.kernel.as_deref()).ok()?;
    let mut args = cmd.materialize().ok()?;
    let mut opts = LaunchOptions::from_command(cmd);
    opts.profile = profile;
    opts.flush_l2 = true;
    let timed = prepare(prog, kernel, &args, &opts).and_then(|p| run_compiled_reps(&p, &mut args, &opts, 10, 50));
    match timed {
        Ok(out) => {
            let mut s: Vec<f64> = out.samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
            s.sort_by(f64::total_cmp);
            s.get(s.len() / 2).copied()
        }
        Err(e) => {
            eprintln!("timing failed: {e}");
            None
        }
    }
}

/// For the `fma chain` kernel: replayed cycles per FFMA of each `chain_Nx` scope (N × 32
/// dependent FFMAs), e.g. `chain_1x 4.02, chain_4x 4.00, chain_16x 4.00`.
fn per_fma(got: &BTreeMap<String, f64>) -> String {
    let mut cells = vec![];
    for n in [1.0, 4.0, 16.0] {
        let name = format!("chain_{n}x");
        if let Some(c) = got.get(&name) {
            cells.push(format!("{name} {:.2}", c / (32.0 * n)));
        }
    }
    cells.join(", ")
}

/// Errors of a replayed profile against the truth: over regions of at least `long` true
/// cycles the mean and the worst relative error, over shorter ones the worst absolute one.
fn errors(got: &BTreeMap<String, f64>, want: &BTreeMap<String, f64>, long: f64) -> (f64, f64, f64) {
    let (mut rel, mut abs, mut sum, mut n) = (0.0f64, 0.0f64, 0.0f64, 0usize);
    for (k, &t) in want {
        let e = (got.get(k).copied().unwrap_or(f64::NAN) - t).abs();
        if t >= long {
            rel = rel.max(e / t);
            sum += e / t;
            n += 1;
        } else {
            abs = abs.max(e);
        }
    }
    (sum / n.max(1) as f64 * 100.0, rel * 100.0, abs)
}

fn main() {
    let sets: Vec<String> = std::env::args().skip(1).collect();
    // Kernel paths are relative to the repository root: run from it (the binary carried to
    // a GPU machine is), or from anywhere in the tree it was built in.
    if !std::path::Path::new("kernels").is_dir() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
        std::env::set_current_dir(root).expect("the repository root");
    }
    let only = std::env::var("ONLY").ok();
    let all = std::env::var("COST").is_ok_and(|c| c == "all");
    let gpu = std::env::var("BACKEND").is_ok_and(|b| b == "cuda");
    if gpu {
        println!("| kernel | regions | n | rec/warp | plain µs | probed µs | overhead | outputs | cycles per FFMA (fma chain) |");
        println!("|---|---|---:|---:|---:|---:|---:|---|---|");
    } else if all {
        println!(
            "| kernel | regions | n | rec/warp | plain µs | probed µs | overhead | marked/plain | calibrated: mean / max, abs | in-kernel: mean / max, abs | per-site: mean / max, abs | traces identical |"
        );
        println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    } else {
        println!(
            "| kernel | regions | n | rec/warp | plain µs | probed µs | overhead | marked/plain | error ≥180 cyc: mean / max | max abs. error <180 cyc | traces identical |"
        );
        println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    }
    let us = |o: &LaunchOutcome| o.run_time.as_secs_f64() * 1e6;
    for (name, line, default_sets) in kernels() {
        if only.as_ref().is_some_and(|w| !name.contains(w.as_str())) {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let mut cmd = RunCommand::parse(&words).unwrap_or_else(|e| panic!("{name}: {e}"));
        cmd.backend = if gpu { trident_runtime::Backend::Cuda } else { trident_runtime::Backend::Emu };
        let prog = KernelProgram::load(&cmd.file).unwrap_or_else(|e| panic!("{e}"));
        if gpu {
            gpu_rows(name, &cmd, &prog, if sets.is_empty() { &default_sets } else { &[] }, &sets);
            continue;
        }
        let kernel = prog.kernel(cmd.kernel.as_deref()).unwrap_or_else(|e| panic!("{e}"));
        let mut plain_args = cmd.materialize().unwrap();
        let plain = launch(&prog, kernel, &mut plain_args, &LaunchOptions::from_command(&cmd))
            .unwrap_or_else(|e| panic!("{e}"));
        let sets: Vec<String> =
            if sets.is_empty() { default_sets.iter().map(|s| s.to_string()).collect() } else { sets.clone() };
        let capacity = std::env::var("CAPACITY").ok().and_then(|c| c.parse().ok());
        for set in &sets {
            let regions = Regions::parse(set).unwrap_or_else(|e| panic!("{e}"));
            let options = |mode| {
                let mut po = ProfileOptions { regions, mode, ..Default::default() };
                if let Some(c) = capacity {
                    po.capacity = c;
                }
                po
            };
            let run = |po: ProfileOptions, cost| {
                let mut args = cmd.materialize().unwrap();
                let mut opts = LaunchOptions::from_command(&cmd);
                opts.profile = Some(po);
                opts.profile_cost = cost;
                let out = launch(&prog, kernel, &mut args, &opts).unwrap_or_else(|e| panic!("{name} {set}: {e}"));
                for (a, b) in args.iter().zip(&plain_args) {
                    assert_eq!(a.value, b.value, "{name} {set}: `{}` differs from the unprofiled launch", a.name);
                }
                out
            };
            let cost = match std::env::var("COST").as_deref() {
                Ok("inkernel") => ProbeCost::InKernel,
                Ok("persite") => ProbeCost::PerSite,
                _ => ProbeCost::Calibrated,
            };
            let probed = run(options(ProbeMode::Probes), cost);
            let again = run(options(ProbeMode::Probes), cost);
            let marked = run(options(ProbeMode::Markers), ProbeCost::Calibrated);
            let (p, truth) = (probed.profile.as_ref().unwrap(), marked.profile.as_ref().unwrap());
            let same = trace::chrome_trace_json(p) == trace::chrome_trace_json(again.profile.as_ref().unwrap());
            let records = p.slots.iter().map(|s| s.trace.total as f64).sum::<f64>() / p.slots.len() as f64;
            let want = means(truth);
            let long = std::env::var("LONG").ok().and_then(|l| l.parse().ok()).unwrap_or(180.0);
            let head = format!(
                "| {name} | {set} | {} | {records:.0} | {:.2} | {:.2} | {:+.1}% | {:+.2}% |",
                want.len(),
                us(&plain),
                us(&probed),
                (us(&probed) / us(&plain) - 1.0) * 100.0,
                (us(&marked) / us(&plain) - 1.0) * 100.0,
            );
            let same = if same { "yes" } else { "NO" };
            // The replays compared (`COST=all`): the calibrated cost, the in-kernel cost and
            // per-site costs, all from the same launches (the two extra ones as `launch` makes
            // them: kernel region only, and doubled records).
            let mut replays: Vec<(&str, Profile)> = vec![("calibrated", p.clone())];
            if all {
                let base = run(
                    ProfileOptions { regions: Regions::parse("kernel").unwrap(), ..options(ProbeMode::Probes) },
                    ProbeCost::Calibrated,
                );
                let base = base.profile.as_ref().unwrap();
                if let Some(c) = profile::in_kernel_cost(p, base) {
                    replays.push(("in-kernel", p.with_cost(c).unwrap()));
                } else {
                    replays.push(("in-kernel", p.clone()));
                }
                let doubled = trident_runtime::launch::doubled_launch(
                    &prog,
                    kernel,
                    cmd.materialize().unwrap(),
                    &LaunchOptions::from_command(&cmd),
                    options(ProbeMode::Probes),
                )
                .unwrap_or_else(|e| panic!("{name} {set}: {e}"));
                let costs = profile::per_site_costs(p, &doubled, Some(base)).unwrap();
                replays.push(("per-site", p.with_site_costs(costs).unwrap()));
                let cells: Vec<String> = replays
                    .iter()
                    .map(|(_, r)| {
                        let (mean, max, abs) = errors(&means(r), &want, long);
                        format!("{mean:.2}% / {max:.2}%, {abs:.1}")
                    })
                    .collect();
                println!("{head} {} | {same} |", cells.join(" | "));
            } else {
                let (mean, max, abs) = errors(&means(p), &want, long);
                println!("{head} {mean:.2}% / {max:.2}% | {abs:.1} | {same} |");
            }
            if std::env::var_os("DETAIL").is_some() {
                let got: Vec<BTreeMap<String, f64>> = replays.iter().map(|(_, r)| means(r)).collect();
                for (k, t) in &want {
                    let cells: Vec<String> = replays
                        .iter()
                        .zip(&got)
                        .map(|((what, _), g)| format!("{what} {:>10.1}", g.get(k).copied().unwrap_or(f64::NAN)))
                        .collect();
                    println!("    {k:<40} true {t:>10.1}  {}", cells.join("  "));
                }
                let sites = replays.iter().rev().find_map(|(_, r)| r.site_costs.as_ref()).or(p.site_costs.as_ref());
                if let Some(costs) = sites {
                    let name = |s: Site| match s {
                        Site::Start => "start".to_string(),
                        Site::End => "end".to_string(),
                        Site::Record { region, end } => format!(
                            "{}({})",
                            if end { "E" } else { "S" },
                            p.meta.region(region).map_or("?", |r| r.name.as_str())
                        ),
                    };
                    println!(
                        "    per-site costs (fallback {:.2}, shift {:+.2} cycles/record):",
                        costs.fallback, costs.shift
                    );
                    for ((a, b), c) in &costs.steps {
                        let shift = if *a == Site::Start { 0.0 } else { costs.shift };
                        println!("      {:<32} -> {:<32} {:>8.2}", name(*a), name(*b), c + shift);
                    }
                }
            }
        }
    }
}

/// The GPU rows of one kernel (`BACKEND=cuda`): overhead with CUDA events, the replayed
/// profile's regions (per site, as `trident profile` replays), outputs against the plain
/// launch's (reported, not asserted: one failed row must not end a GPU session's run).
fn gpu_rows(name: &str, cmd: &RunCommand, prog: &KernelProgram, defaults: &[&str], given: &[String]) {
    let kernel = prog.kernel(cmd.kernel.as_deref()).unwrap_or_else(|e| panic!("{e}"));
    let mut plain_args = cmd.materialize().unwrap();
    if let Err(e) = launch(prog, kernel, &mut plain_args, &LaunchOptions::from_command(cmd)) {
        println!("| {name} | - | - | - | - | - | - | plain launch failed: {e} | |");
        return;
    }
    let plain = gpu_us(prog, cmd, None);
    let sets: Vec<String> =
        if given.is_empty() { defaults.iter().map(|s| s.to_string()).collect() } else { given.to_vec() };
    let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    for set in &sets {
        let regions = Regions::parse(set).unwrap_or_else(|e| panic!("{e}"));
        let po = ProfileOptions { regions, ..Default::default() };
        let mut args = cmd.materialize().unwrap();
        let mut opts = LaunchOptions::from_command(cmd);
        opts.profile = Some(po);
        opts.profile_cost = ProbeCost::PerSite;
        let out = match launch(prog, kernel, &mut args, &opts) {
            Ok(o) => o,
            Err(e) => {
                println!("| {name} | {set} | - | - | {} | - | - | profiled launch failed: {e} | |", f(plain));
                continue;
            }
        };
        let same = args.iter().zip(&plain_args).all(|(a, b)| a.value == b.value);
        let probed = gpu_us(prog, cmd, Some(po));
        let Some(p) = out.profile.as_ref() else { continue };
        let records = p.slots.iter().map(|s| s.trace.total as f64).sum::<f64>() / p.slots.len().max(1) as f64;
        let got = means(p);
        let overhead = match (plain, probed) {
            (Some(a), Some(b)) => format!("{:+.1}%", (b / a - 1.0) * 100.0),
            _ => "-".into(),
        };
        println!(
            "| {name} | {set} | {} | {records:.0} | {} | {} | {overhead} | {} | {} |",
            got.len(),
            f(plain),
            f(probed),
            if same { "equal" } else { "DIFFER" },
            per_fma(&got)
        );
        if std::env::var_os("DETAIL").is_some() {
            for (k, c) in &got {
                println!("    {k:<40} replayed {c:>10.1}");
            }
        }
    }
}
