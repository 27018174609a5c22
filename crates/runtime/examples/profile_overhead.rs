//! The probes' overhead and error on the emulator: each bundled kernel launched plain,
//! profiled with probes and profiled with zero-cost markers (the true timeline of the
//! unprobed kernel), for several region sets per warp; outputs compared byte for byte.
//! Printed: modelled times, the overhead (probed / plain − 1), records per warp, the
//! measured per-record cost, and the error of the replayed probes against the markers:
//! per region, |mean replayed cycles − mean true cycles| / mean true cycles, the worst
//! region's. The emulator's timing model is what these numbers are worth.
//!
//! `cargo run --release -p trident-runtime --example profile_overhead [-- REGIONS...]`
//! (`DETAIL=1`: every region's true and replayed mean cycles).

use std::collections::BTreeMap;
use trident_runtime::args::RunCommand;
use trident_runtime::launch::{launch, LaunchOptions, LaunchOutcome};
use trident_runtime::profile::{ProbeMode, Profile, ProfileOptions, Regions};
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

const KERNELS: &[(&str, &str)] = &[
    (
        "softmax 256x1024 f32",
        "kernels/softmax.py::softmax_kernel --grid 256 x=randn:f32:256x1024 y=empty:f32:256x1024 \
         x_row_stride=1024 y_row_stride=1024 n_cols=1024 BLOCK=1024",
    ),
    (
        "layernorm 256x1024 f32",
        "kernels/layernorm.py::layernorm_fwd --grid 256 x=randn:f32:256x1024 y=empty:f32:256x1024 \
         w=randn:f32:1024 b=randn:f32:1024 mean=empty:f32:256 rstd=empty:f32:256 stride=1024 N=1024 eps=1e-5 \
         BLOCK_N=1024",
    ),
    (
        "matmul 512x512x512 f16",
        "kernels/matmul.py::matmul_kernel --grid 16 --num-warps 4 --num-stages 3 a=randn:f16:512x512 \
         b=randn:f16:512x512 c=empty:f16:512x512 M=512 N=512 K=512 stride_am=512 stride_ak=1 stride_bk=512 \
         stride_bn=1 stride_cm=512 stride_cn=1 BLOCK_M=128 BLOCK_N=128 BLOCK_K=32 GROUP_M=4",
    ),
    (
        "attention 1x4x512x64 f16",
        "kernels/flash_attention.py::attn_fwd --grid 8,4 --num-warps 4 --num-stages 2 q=randn:f16:1x4x512x64 \
         k=randn:f16:1x4x512x64 v=randn:f16:1x4x512x64 o=empty:f16:1x4x512x64 sm_scale=0.125 \
         stride_qz=131072 stride_qh=32768 stride_qm=64 stride_qd=1 stride_kz=131072 stride_kh=32768 stride_kn=64 \
         stride_kd=1 stride_vz=131072 stride_vh=32768 stride_vn=64 stride_vd=1 stride_oz=131072 stride_oh=32768 \
         stride_om=64 stride_od=1 H=4 N_CTX=512 BLOCK_M=64 BLOCK_N=64 HEAD_DIM=64 IS_CAUSAL=False",
    ),
];

fn main() {
    let sets: Vec<String> = std::env::args().skip(1).collect();
    let sets = if sets.is_empty() {
        vec!["kernel".into(), "kernel,loops".into(), "kernel,loops,dots,loads".into()]
    } else {
        sets
    };
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    std::env::set_current_dir(root).expect("the repository root");
    println!(
        "{:<24} {:<24} {:>9} {:>9} {:>9} {:>9} {:>8} {:>6} {:>10}",
        "kernel", "regions", "plain us", "probed us", "overhead", "marked us", "rec/warp", "cost", "max error"
    );
    let us = |o: &LaunchOutcome| o.run_time.as_secs_f64() * 1e6;
    for (name, line) in KERNELS {
        let words: Vec<&str> = line.split_whitespace().collect();
        let mut cmd = RunCommand::parse(&words).unwrap_or_else(|e| panic!("{name}: {e}"));
        cmd.backend = trident_runtime::Backend::Emu;
        let prog = KernelProgram::load(&cmd.file).unwrap_or_else(|e| panic!("{e}"));
        let kernel = prog.kernel(cmd.kernel.as_deref()).unwrap_or_else(|e| panic!("{e}"));
        let mut plain_args = cmd.materialize().unwrap();
        let plain = launch(&prog, kernel, &mut plain_args, &LaunchOptions::from_command(&cmd))
            .unwrap_or_else(|e| panic!("{e}"));
        for set in &sets {
            let regions = Regions::parse(set).unwrap_or_else(|e| panic!("{e}"));
            let run = |mode| {
                let mut args = cmd.materialize().unwrap();
                let mut opts = LaunchOptions::from_command(&cmd);
                let mut po = ProfileOptions { regions, mode, ..Default::default() };
                if let Some(c) = std::env::var("CAPACITY").ok().and_then(|c| c.parse().ok()) {
                    po.capacity = c;
                }
                opts.profile = Some(po);
                let out = launch(&prog, kernel, &mut args, &opts).unwrap_or_else(|e| panic!("{name} {set}: {e}"));
                for (a, b) in args.iter().zip(&plain_args) {
                    assert_eq!(a.value, b.value, "{name} {set}: `{}` differs from the unprofiled launch", a.name);
                }
                out
            };
            let (probed, marked) = (run(ProbeMode::Probes), run(ProbeMode::Markers));
            let (p, truth) = (probed.profile.as_ref().unwrap(), marked.profile.as_ref().unwrap());
            let records = p.slots.iter().map(|s| s.trace.total as f64).sum::<f64>() / p.slots.len() as f64;
            let (got, want) = (means(p), means(truth));
            let worst = want
                .iter()
                .filter(|(_, &t)| t > 0.0)
                .map(|(k, &t)| (got.get(k).copied().unwrap_or(f64::NAN) - t).abs() / t)
                .fold(0.0f64, f64::max);
            println!(
                "{name:<24} {set:<24} {:>9.2} {:>9.2} {:>8.1}% {:>9.2} {records:>8.1} {:>6} {:>9.1}%",
                us(&plain),
                us(&probed),
                (us(&probed) / us(&plain) - 1.0) * 100.0,
                us(&marked),
                p.record_cost,
                worst * 100.0
            );
            if std::env::var_os("DETAIL").is_some() {
                for (k, t) in &want {
                    println!("    {k:<40} true {t:>10.1}  replayed {:>10.1}", got.get(k).copied().unwrap_or(f64::NAN));
                }
            }
        }
    }
}
