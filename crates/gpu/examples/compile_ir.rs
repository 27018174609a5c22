//! Compiles a kernel written in IR text and prints its GPU IR and PTX.
//!
//! `cargo run -p trident-gpu --example compile_ir -- FILE.tir KERNEL [NUM_WARPS] [sm_80|sm_90] [key=value...]`
//!
//! The `key=value` words are `GpuOptions::parse_words`' (`num_stages=2`,
//! `profile=scopes,kernel granularity=warp buffer_records=64 profile_mode=markers`, ...).

use trident_gpu::{GpuOptions, Target};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: compile_ir FILE.tir KERNEL [NUM_WARPS] [sm_80|sm_90] [key=value...]");
        std::process::exit(2);
    }
    let text = std::fs::read_to_string(&args[1]).unwrap_or_else(|e| panic!("{}: {e}", args[1]));
    let mut m = trident_ir::parse_module(&text).unwrap_or_else(|d| panic!("{}", d.render(&[])));
    for f in &mut m.funcs {
        f.kernel = true;
    }
    let words = args.get(5..).map(|w| w.join(" ")).unwrap_or_default();
    let opts = GpuOptions {
        num_warps: args.get(3).and_then(|s| s.parse().ok()).unwrap_or(4),
        target: args.get(4).and_then(|s| Target::parse(s)).unwrap_or_default(),
        ..GpuOptions::parse_words(&words).unwrap_or_else(|e| panic!("{e}"))
    };
    let art = trident_gpu::compile(&m, &args[2], &opts).unwrap_or_else(|e| panic!("{}", e.diagnostic.render(&m.files)));
    println!("{}", art.gpu_ir);
    println!("{}", art.ptx.ptx);
    if let Some(meta) = art.profile {
        println!("{}", meta.to_json_pretty());
    }
}
