//! The probes' overhead on the emulator: each bundled kernel launched plain and profiled
//! (several region sets, per warp), outputs compared byte for byte, modelled cycles and the
//! overhead (profiled / plain − 1) printed, with the probes per warp and the measured
//! per-record cost. The emulator's timing model is what these numbers are worth.
//!
//! `cargo run --release -p trident-runtime --example profile_overhead [-- REGIONS...]`

use trident_runtime::args::RunCommand;
use trident_runtime::gpu::EMU_CLOCK_GHZ;
use trident_runtime::launch::{launch, LaunchOptions};
use trident_runtime::profile::Regions;
use trident_runtime::KernelProgram;

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
        "{:<26} {:<26} {:>12} {:>12} {:>9} {:>13} {:>10}",
        "kernel", "regions", "plain cyc", "profiled cyc", "overhead", "records/warp", "cost cyc"
    );
    for (name, line) in KERNELS {
        let words: Vec<&str> = line.split_whitespace().collect();
        let mut cmd = RunCommand::parse(&words).unwrap_or_else(|e| panic!("{name}: {e}"));
        cmd.backend = trident_runtime::Backend::Emu;
        let prog = KernelProgram::load(&cmd.file).unwrap_or_else(|e| panic!("{e}"));
        let kernel = prog.kernel(cmd.kernel.as_deref()).unwrap_or_else(|e| panic!("{e}"));
        let cycles =
            |o: &trident_runtime::launch::LaunchOutcome| (o.run_time.as_secs_f64() * EMU_CLOCK_GHZ * 1e9).round();
        let mut plain_args = cmd.materialize().unwrap();
        let plain = launch(&prog, kernel, &mut plain_args, &LaunchOptions::from_command(&cmd))
            .unwrap_or_else(|e| panic!("{e}"));
        for set in &sets {
            let mut args = cmd.materialize().unwrap();
            let mut opts = LaunchOptions::from_command(&cmd);
            let regions = Regions::parse(set).unwrap_or_else(|e| panic!("{e}"));
            opts.profile = Some(trident_runtime::profile::ProfileOptions { regions, ..Default::default() });
            let out = launch(&prog, kernel, &mut args, &opts).unwrap_or_else(|e| panic!("{name} {set}: {e}"));
            for (a, b) in args.iter().zip(&plain_args) {
                assert_eq!(a.value, b.value, "{name} {set}: `{}` differs from the unprofiled launch", a.name);
            }
            let p = out.profile.as_ref().expect("a profile");
            let records = p.slots.iter().map(|s| s.trace.total as f64).sum::<f64>() / p.slots.len() as f64;
            let (c0, c1) = (cycles(&plain), cycles(&out));
            println!(
                "{name:<26} {set:<26} {c0:>12} {c1:>12} {:>8.1}% {records:>13.1} {:>10}",
                (c1 / c0 - 1.0) * 100.0,
                p.record_cost
            );
        }
    }
}
