//! Compile time, source → tile IR, of the project's matmul and flash-attention kernels.
//! `cargo bench -p trident-front --bench compile`

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use trident_core::DType;
use trident_front::{compile, parse_file, ArgInfo, CompileOptions, ConstValue};

fn src(name: &str) -> String {
    std::fs::read_to_string(format!("{}/../../kernels/{name}", env!("CARGO_MANIFEST_DIR"))).expect("kernel source")
}

fn ptr(d: DType) -> ArgInfo {
    ArgInfo::Pointer { dtype: d, aligned16: true }
}

fn c(v: i64) -> ArgInfo {
    ArgInfo::Constexpr(ConstValue::int(v))
}

fn matmul_args() -> Vec<(String, ArgInfo)> {
    let mut a = vec![("a", ptr(DType::F16)), ("b", ptr(DType::F16)), ("c", ptr(DType::F16))];
    for (n, v) in [
        ("M", 512),
        ("N", 512),
        ("K", 512),
        ("stride_am", 512),
        ("stride_ak", 1),
        ("stride_bk", 512),
        ("stride_bn", 1),
        ("stride_cm", 512),
        ("stride_cn", 1),
    ] {
        a.push((n, ArgInfo::Int(v)));
    }
    a.extend([("BLOCK_M", c(128)), ("BLOCK_N", c(128)), ("BLOCK_K", c(32)), ("GROUP_M", c(8))]);
    a.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn attn_args() -> Vec<(String, ArgInfo)> {
    let mut a = vec![
        ("q", ptr(DType::F16)),
        ("k", ptr(DType::F16)),
        ("v", ptr(DType::F16)),
        ("o", ptr(DType::F16)),
        ("sm_scale", ArgInfo::Float(0.125)),
    ];
    for t in ["q", "k", "v", "o"] {
        let dims = match t {
            "q" => ["z", "h", "m", "d"],
            "k" | "v" => ["z", "h", "n", "d"],
            _ => ["z", "h", "m", "d"],
        };
        for (d, v) in dims.iter().zip([65536, 8192, 64, 1]) {
            a.push((Box::leak(format!("stride_{t}{d}").into_boxed_str()), ArgInfo::Int(v)));
        }
    }
    a.extend([
        ("H", ArgInfo::Int(8)),
        ("N_CTX", ArgInfo::Int(1024)),
        ("BLOCK_M", c(128)),
        ("BLOCK_N", c(64)),
        ("HEAD_DIM", c(64)),
        ("IS_CAUSAL", ArgInfo::Constexpr(ConstValue::Bool(true))),
    ]);
    a.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn bench(cr: &mut Criterion) {
    let opts = CompileOptions::default();
    for (file, kernel, args) in
        [("matmul.py", "matmul_kernel", matmul_args()), ("flash_attention.py", "attn_fwd", attn_args())]
    {
        let text = src(file);
        let parsed = parse_file(file, &text).expect("parses");
        compile(&parsed, kernel, &args, &opts).expect("compiles");
        cr.bench_function(&format!("parse+compile {kernel}"), |b| {
            b.iter(|| {
                let f = parse_file(file, black_box(&text)).expect("parses");
                compile(&f, kernel, &args, &opts).expect("compiles")
            })
        });
        cr.bench_function(&format!("compile {kernel}"), |b| {
            b.iter(|| compile(black_box(&parsed), kernel, &args, &opts).expect("compiles"))
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
