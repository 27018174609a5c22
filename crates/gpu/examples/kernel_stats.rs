//! Compiles the project's kernels at typical configurations and prints what ptxas says
//! (registers, spills, shared memory) and counts of the instructions that matter for
//! performance, and the SASS instruction count (`nvdisasm`, when found).
//! `cargo run -p trident-gpu --example kernel_stats [-- sm_90] [--ptx NAME]`

use trident_core::DType;
use trident_front::{ArgInfo, ConstValue};
use trident_gpu::{GpuOptions, Target};

fn ptr(d: DType) -> ArgInfo {
    ArgInfo::Pointer { dtype: d, aligned16: true }
}

fn c(v: i64) -> ArgInfo {
    ArgInfo::Constexpr(ConstValue::int(v))
}

struct Case {
    name: &'static str,
    file: &'static str,
    kernel: &'static str,
    warps: u32,
    stages: u32,
    args: Vec<(&'static str, ArgInfo)>,
}

fn cases() -> Vec<Case> {
    let i = |v: i64| ArgInfo::Int(v);
    let mm = |bm, bn, bk, warps, stages, dt| Case {
        name: Box::leak(format!("matmul {bm}x{bn}x{bk} {warps}w {stages}s {dt:?}").into_boxed_str()),
        file: "matmul.py",
        kernel: "matmul_kernel",
        warps,
        stages,
        args: vec![
            ("a", ptr(dt)),
            ("b", ptr(dt)),
            ("c", ptr(dt)),
            ("M", i(4096)),
            ("N", i(4096)),
            ("K", i(4096)),
            ("stride_am", i(4096)),
            ("stride_ak", ArgInfo::Int(1)),
            ("stride_bk", i(4096)),
            ("stride_bn", ArgInfo::Int(1)),
            ("stride_cm", i(4096)),
            ("stride_cn", ArgInfo::Int(1)),
            ("BLOCK_M", c(bm)),
            ("BLOCK_N", c(bn)),
            ("BLOCK_K", c(bk)),
            ("GROUP_M", c(8)),
        ],
    };
    let mut v = vec![
        Case {
            name: "vector add 1024",
            file: "vector_add.py",
            kernel: "add_kernel",
            warps: 4,
            stages: 1,
            args: vec![
                ("x", ptr(DType::F32)),
                ("y", ptr(DType::F32)),
                ("out", ptr(DType::F32)),
                ("n_elements", i(1 << 20)),
                ("BLOCK", c(1024)),
            ],
        },
        Case {
            name: "softmax 1024 f32",
            file: "softmax.py",
            kernel: "softmax_kernel",
            warps: 4,
            stages: 1,
            args: vec![
                ("x", ptr(DType::F32)),
                ("y", ptr(DType::F32)),
                ("x_row_stride", i(1024)),
                ("y_row_stride", i(1024)),
                ("n_cols", i(1000)),
                ("BLOCK", c(1024)),
            ],
        },
        Case {
            name: "layernorm fwd 1024",
            file: "layernorm.py",
            kernel: "layernorm_fwd",
            warps: 4,
            stages: 1,
            args: vec![
                ("x", ptr(DType::F16)),
                ("y", ptr(DType::F16)),
                ("w", ptr(DType::F16)),
                ("b", ptr(DType::F16)),
                ("mean", ptr(DType::F32)),
                ("rstd", ptr(DType::F32)),
                ("stride", i(1024)),
                ("N", i(1024)),
                ("eps", ArgInfo::Float(1e-5)),
                ("BLOCK_N", c(1024)),
            ],
        },
    ];
    v.push(mm(128, 128, 32, 8, 3, DType::F16));
    v.push(mm(128, 64, 32, 4, 4, DType::F16));
    v.push(mm(64, 64, 64, 4, 3, DType::F16));
    v.push(mm(128, 128, 64, 8, 3, DType::F16));
    v.push(mm(128, 256, 64, 8, 3, DType::F16));
    v.push(mm(128, 128, 32, 4, 4, DType::F16));
    let mut fa = vec![
        ("q", ptr(DType::F16)),
        ("k", ptr(DType::F16)),
        ("v", ptr(DType::F16)),
        ("o", ptr(DType::F16)),
        ("sm_scale", ArgInfo::Float(0.125)),
    ];
    let strides = [1 << 20, 1 << 16, 64, 1];
    for (j, n) in [
        "stride_qz",
        "stride_qh",
        "stride_qm",
        "stride_qd",
        "stride_kz",
        "stride_kh",
        "stride_kn",
        "stride_kd",
        "stride_vz",
        "stride_vh",
        "stride_vn",
        "stride_vd",
        "stride_oz",
        "stride_oh",
        "stride_om",
        "stride_od",
    ]
    .into_iter()
    .enumerate()
    {
        fa.push((n, ArgInfo::Int(strides[j % 4])));
    }
    fa.extend([
        ("H", i(16)),
        ("N_CTX", i(1024)),
        ("BLOCK_M", c(64)),
        ("BLOCK_N", c(64)),
        ("HEAD_DIM", c(64)),
        ("IS_CAUSAL", ArgInfo::Constexpr(ConstValue::Bool(false))),
    ]);
    // Batched matmul (`kernels/batched_matmul.py`, a 3-D `tl.dot`): BLOCK_B batch indices of
    // a BMxBNxBK tile per program.
    for (bb, bm, bn, bk, warps, stages) in [(2, 64, 64, 32, 4, 3), (4, 32, 32, 32, 4, 3), (8, 16, 16, 32, 8, 3)] {
        v.push(Case {
            name: Box::leak(format!("bmm {bb}x{bm}x{bn}x{bk} {warps}w {stages}s F16").into_boxed_str()),
            file: "batched_matmul.py",
            kernel: "bmm_kernel",
            warps,
            stages,
            args: vec![
                ("a", ptr(DType::F16)),
                ("b", ptr(DType::F16)),
                ("c", ptr(DType::F32)),
                ("B", i(64)),
                ("M", i(1024)),
                ("N", i(1024)),
                ("K", i(1024)),
                ("BLOCK_B", c(bb)),
                ("BLOCK_M", c(bm)),
                ("BLOCK_N", c(bn)),
                ("BLOCK_K", c(bk)),
            ],
        });
    }
    v.push(Case {
        name: "flash attention 64x64 d64",
        file: "flash_attention.py",
        kernel: "attn_fwd",
        warps: 4,
        stages: 2,
        args: fa,
    });
    v
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let target = argv.iter().find_map(|a| Target::parse(a)).unwrap_or_default();
    let dump = argv.iter().position(|a| a == "--ptx").and_then(|i| argv.get(i + 1)).cloned();
    println!(
        "{:<34} {:>5} {:>6} {:>7} {:>6} {:>7} {:>8} {:>6} {:>5} {:>5} {:>6}",
        "kernel", "regs", "spill", "smem", "v4 ld", "ldmatx", "mma", "bar", "cp.as", "shfl", "sass"
    );
    for case in cases() {
        let path = format!("{}/../../kernels/{}", env!("CARGO_MANIFEST_DIR"), case.file);
        let src = std::fs::read_to_string(&path).expect("kernel source");
        let kf = trident_front::parse_file(&path, &src).unwrap_or_else(|d| panic!("{d}"));
        let args: Vec<(String, ArgInfo)> = case.args.iter().map(|(k, a)| (k.to_string(), a.clone())).collect();
        let compiled = trident_front::compile(&kf, case.kernel, &args, &Default::default())
            .unwrap_or_else(|d| panic!("{}", d[0].render(&[kf.source_file()])));
        let mut m = compiled.module.clone();
        trident_opt::default_tile_pipeline().run(&mut m).unwrap_or_else(|e| panic!("{}", e[0]));
        let opts = GpuOptions { target, num_warps: case.warps, num_stages: case.stages, ..Default::default() };
        let art = match trident_gpu::compile(&m, &compiled.kernel, &opts) {
            Ok(a) => a,
            Err(e) => {
                println!("{:<34} error: {}", case.name, e.diagnostic.render(&m.files));
                continue;
            }
        };
        let k = &art.ptx;
        if dump.as_deref().is_some_and(|d| case.name.starts_with(d)) {
            println!("{}", art.gpu_ir);
            println!("{}", k.ptx);
        }
        let count = |pat: &str| k.ptx.lines().filter(|l| l.contains(pat)).count();
        match trident_gpu::tools::ptxas(&k.ptx, target.arch()) {
            Ok(out) => {
                let u = out.usage.first().cloned().unwrap_or_default();
                // SASS instructions: the disassembly's lines that hold one (`/*addr*/ OP ... ;`).
                let sass = trident_gpu::tools::nvdisasm(&out.cubin, &[]).map_or("-".to_string(), |t| {
                    t.lines().filter(|l| l.trim_start().starts_with("/*") && l.contains(';')).count().to_string()
                });
                println!(
                    "{:<34} {:>5} {:>6} {:>7} {:>6} {:>7} {:>8} {:>6} {:>5} {:>5} {:>6}",
                    case.name,
                    u.registers,
                    u.spill_stores + u.spill_loads,
                    k.shared_bytes,
                    count("ld.global.v4") + count("ld.global.nc.v4"),
                    count("ldmatrix"),
                    count("mma.sync"),
                    count("bar.sync"),
                    count("cp.async.cg") + count("cp.async.ca"),
                    count("shfl.sync"),
                    sass
                );
            }
            Err(e) => println!("{:<34} ptxas: {e}", case.name),
        }
    }
}
