//! Compile time for the bundled matmul and flash-attention kernels at typical GPU configs:
//! source text → optimised tile IR (parse, front end, tile passes), and the whole
//! compilation to PTX (the same, then the GPU pipeline and emission) for sm_80 and sm_90a.

use criterion::{criterion_group, criterion_main, Criterion};
use trident_runtime::args::Backend;
use trident_runtime::args::{parse_and_materialize, parse_grid, Arg};
use trident_runtime::launch::{prepare, LaunchOptions};
use trident_runtime::session::Session;
use trident_runtime::stages::{compile_stage, Stage, StageOptions};
use trident_runtime::KernelProgram;

fn args(list: &[&str]) -> Vec<Arg> {
    list.iter().map(|a| parse_and_materialize(a, 0).expect("valid argument")).collect()
}

fn bench_kernel(c: &mut Criterion, name: &str, path: &str, kernel: &str, a: &[Arg]) {
    let text = std::fs::read_to_string(format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))).expect("kernel file");
    let mut opts = LaunchOptions::new(parse_grid("1").unwrap());
    // The interpreter's target: tile IR only.
    opts.backend = Backend::Interp;
    // Without a cache: this measures compiling, not cache lookups.
    opts.session = Some(std::sync::Arc::new(Session::uncached()));
    c.bench_function(name, |b| {
        b.iter(|| {
            let prog = KernelProgram::from_source(path, &text).unwrap();
            let k = prog.kernel(Some(kernel)).unwrap();
            prepare(&prog, k, a, &opts).unwrap()
        })
    });
}

/// The whole compilation to PTX (no cache: the tile IR is compiled every time too).
fn bench_ptx(c: &mut Criterion, name: &str, path: &str, kernel: &str, words: &[&str], arch: &str, warps: u32) {
    let text = std::fs::read_to_string(format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))).expect("kernel file");
    let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    let mut opts = StageOptions::new(Stage::Ptx);
    opts.arch = arch.to_string();
    opts.num_warps = Some(warps);
    opts.session = Some(std::sync::Arc::new(Session::uncached()));
    c.bench_function(name, |b| {
        b.iter(|| {
            let prog = KernelProgram::from_source(path, &text).unwrap();
            let k = prog.kernel(Some(kernel)).unwrap();
            compile_stage(&prog, k, &words, &opts).unwrap()
        })
    });
}

fn compile_time(c: &mut Criterion) {
    let mm_list = [
        "a=zeros:f16:16x16",
        "b=zeros:f16:16x16",
        "c=zeros:f16:16x16",
        "M=4096",
        "N=4096",
        "K=4096",
        "stride_am=4096",
        "stride_ak=1",
        "stride_bk=4096",
        "stride_bn=1",
        "stride_cm=4096",
        "stride_cn=1",
        "BLOCK_M=128",
        "BLOCK_N=128",
        "BLOCK_K=32",
        "GROUP_M=8",
    ];
    let mm = args(&mm_list);
    bench_kernel(c, "compile/matmul_kernel 128x128x32", "kernels/matmul.py", "matmul_kernel", &mm);
    for arch in ["sm_80", "sm_90a"] {
        let name = format!("compile to PTX {arch}/matmul_kernel 128x128x32 w8");
        bench_ptx(c, &name, "kernels/matmul.py", "matmul_kernel", &mm_list, arch, 8);
    }
    let mut fa: Vec<String> = vec!["q", "k", "v", "o"].into_iter().map(|n| format!("{n}=zeros:f16:16")).collect();
    fa.push("sm_scale=0.125".into());
    for t in ["q", "k", "v", "o"] {
        let dim = if t == "k" || t == "v" { "n" } else { "m" };
        for (s, v) in [("z", 2097152), ("h", 131072), (dim, 64), ("d", 1)] {
            fa.push(format!("stride_{t}{s}={v}"));
        }
    }
    fa.extend(["H=16", "N_CTX=2048", "BLOCK_M=128", "BLOCK_N=64", "HEAD_DIM=64", "IS_CAUSAL=True"].map(String::from));
    let fa: Vec<&str> = fa.iter().map(String::as_str).collect();
    bench_kernel(c, "compile/attn_fwd causal 128x64 d64", "kernels/flash_attention.py", "attn_fwd", &args(&fa));
    for arch in ["sm_80", "sm_90a"] {
        let name = format!("compile to PTX {arch}/attn_fwd causal 128x64 d64 w8");
        bench_ptx(c, &name, "kernels/flash_attention.py", "attn_fwd", &fa, arch, 8);
    }
}

criterion_group!(benches, compile_time);
criterion_main!(benches);
