//! PTX snapshots: the exact PTX of a few representative bundled kernels (one per code
//! path that matters: vectorised elementwise, row reductions, `mma.sync` with a cp.async
//! pipeline, Hopper `wgmma`, flash attention, atomics, scans) is kept in
//! `tests/ptx_snapshots/NAME.TARGET.ptx` and compared byte for byte. A change to emission
//! shows up here as a diff to review; when the change is intended, `BLESS=1 cargo test -p
//! trident-gpu --test ptx_snapshots` (or `scripts/bless`) rewrites the files.

mod common;

use std::path::{Path, PathBuf};
use trident_front::{ArgInfo, ConstValue};
use trident_gpu::{GpuOptions, Target};

#[derive(Clone)]
struct Snapshot {
    name: &'static str,
    file: &'static str,
    kernel: &'static str,
    target: Target,
    num_warps: u32,
    num_stages: u32,
    /// `NAME=*DTYPE` (a 16-byte aligned pointer), `NAME=INT`, `NAME=FLOAT`, `NAME=True|False`;
    /// values of constexpr parameters become constexprs.
    args: &'static str,
    /// Compiled in sanitize mode (bounds checks of every global access).
    sanitize: bool,
}

const MATMUL: &str = "a=*f16 b=*f16 c=*f16 M=4096 N=4096 K=4096 stride_am=4096 stride_ak=1 stride_bk=4096 \
                      stride_bn=1 stride_cm=4096 stride_cn=1 GROUP_M=8";
const ATTN: &str = "q=*f16 k=*f16 v=*f16 o=*f16 sm_scale=0.125 stride_qz=1048576 stride_qh=262144 stride_qm=64 \
                    stride_qd=1 stride_kz=1048576 stride_kh=262144 stride_kn=64 stride_kd=1 stride_vz=1048576 \
                    stride_vh=262144 stride_vn=64 stride_vd=1 stride_oz=1048576 stride_oh=262144 stride_om=64 \
                    stride_od=1 H=4 N_CTX=4096 HEAD_DIM=64 IS_CAUSAL=True";

fn snapshots() -> Vec<Snapshot> {
    let s = |name, file, kernel, target, num_warps, num_stages, args| Snapshot {
        name,
        file,
        kernel,
        target,
        num_warps,
        num_stages,
        args,
        sanitize: false,
    };
    vec![
        s(
            "vector_add_f16",
            "kernels/vector_add.py",
            "add_kernel",
            Target::Sm80,
            4,
            3,
            "x=*f16 y=*f16 out=*f16 n_elements=4096 BLOCK=1024",
        ),
        s(
            "softmax_f32",
            "kernels/softmax.py",
            "softmax_kernel",
            Target::Sm80,
            4,
            3,
            "x=*f32 y=*f32 x_row_stride=1000 y_row_stride=1000 n_cols=1000 BLOCK=1024",
        ),
        s(
            "cumsum_f32",
            "kernels/cumsum.py",
            "cumsum_kernel",
            Target::Sm80,
            4,
            3,
            "x=*f32 y=*f32 M=10 N=37 stride_xm=37 stride_ym=37 BLOCK_M=4 BLOCK_N=64",
        ),
        s(
            "splitk_matmul_f16_atomics",
            "kernels/splitk_matmul.py",
            "splitk_matmul_kernel",
            Target::Sm90,
            4,
            3,
            "a=*f16 b=*f16 c=*f32 M=512 N=512 K=4096 stride_am=4096 stride_ak=1 stride_bk=512 stride_bn=1 \
             stride_cm=512 stride_cn=1 K_PER_SPLIT=1024 BLOCK_M=64 BLOCK_N=64 BLOCK_K=32",
        ),
        s(
            "matmul_f16_64x64x32_w4",
            "kernels/matmul.py",
            "matmul_kernel",
            Target::Sm80,
            4,
            3,
            "BLOCK_M=64 BLOCK_N=64 BLOCK_K=32",
        ),
        s(
            "matmul_f16_128x128x32_w8",
            "kernels/matmul.py",
            "matmul_kernel",
            Target::Sm90a,
            8,
            3,
            "BLOCK_M=128 BLOCK_N=128 BLOCK_K=32",
        ),
        s(
            "attn_fwd_causal_d64",
            "kernels/flash_attention.py",
            "attn_fwd",
            Target::Sm90a,
            4,
            3,
            "BLOCK_M=64 BLOCK_N=32",
        ),
        // Sanitize mode's lowering: plain loads and stores (vectors), and pipelined cp.async copies.
        Snapshot {
            sanitize: true,
            ..s(
                "vector_add_f16_sanitized",
                "kernels/vector_add.py",
                "add_kernel",
                Target::Sm80,
                4,
                3,
                "x=*f16 y=*f16 out=*f16 n_elements=4096 BLOCK=1024",
            )
        },
        Snapshot {
            sanitize: true,
            ..s(
                "matmul_f16_64x64x32_w4_sanitized",
                "kernels/matmul.py",
                "matmul_kernel",
                Target::Sm80,
                4,
                3,
                "BLOCK_M=64 BLOCK_N=64 BLOCK_K=32",
            )
        },
    ]
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The launch-time facts the front end specializes on, from `NAME=VALUE` words.
fn arg_infos(kf: &trident_front::KernelFile, kernel: &str, words: &str) -> Vec<(String, ArgInfo)> {
    let info = kf.kernel(kernel).unwrap_or_else(|| panic!("no kernel {kernel}"));
    words
        .split_whitespace()
        .map(|w| {
            let (name, v) = w.split_once('=').unwrap_or_else(|| panic!("`{w}`: expected NAME=VALUE"));
            let constexpr = info.param(name).unwrap_or_else(|| panic!("no parameter {name}")).is_constexpr;
            let a = if let Some(d) = v.strip_prefix('*') {
                ArgInfo::Pointer { dtype: trident_core::DType::parse(d).expect("dtype"), aligned16: true }
            } else if v == "True" || v == "False" {
                let b = v == "True";
                if constexpr {
                    ArgInfo::Constexpr(ConstValue::Bool(b))
                } else {
                    ArgInfo::Bool(b)
                }
            } else if let Ok(i) = v.parse::<i64>() {
                if constexpr {
                    ArgInfo::Constexpr(ConstValue::int(i))
                } else {
                    ArgInfo::Int(i)
                }
            } else {
                ArgInfo::Float(v.parse().unwrap_or_else(|_| panic!("`{w}`: not a number")))
            };
            (name.to_string(), a)
        })
        .collect()
}

/// The kernel of `s` in tile IR after the tile passes, and its name.
fn tile_ir_of(s: &Snapshot) -> (trident_ir::Module, String) {
    let src = std::fs::read_to_string(root().join(s.file)).expect("kernel source");
    // The relative path keeps the `.file` directive the same on every machine.
    let kf = trident_front::parse_file(s.file, &src).unwrap_or_else(|d| panic!("{d}"));
    let args = match s.file {
        "kernels/matmul.py" => format!("{MATMUL} {}", s.args),
        "kernels/flash_attention.py" => format!("{ATTN} {}", s.args),
        _ => s.args.to_string(),
    };
    let infos = arg_infos(&kf, s.kernel, &args);
    let c = trident_front::compile(&kf, s.kernel, &infos, &trident_front::CompileOptions::default())
        .unwrap_or_else(|ds| panic!("{}", ds[0].render(&[kf.source_file()])));
    let mut m = c.module;
    trident_opt::default_tile_pipeline().run(&mut m).unwrap_or_else(|e| panic!("{}", e[0].render(&m.files)));
    (m, c.kernel)
}

fn ptx_of(s: &Snapshot) -> String {
    let (m, kernel) = tile_ir_of(s);
    let opts = GpuOptions {
        target: s.target,
        num_warps: s.num_warps,
        num_stages: s.num_stages,
        sanitize: s.sanitize,
        ..GpuOptions::default()
    };
    trident_gpu::compile(&m, &kernel, &opts).unwrap_or_else(|e| panic!("{}", e.diagnostic.render(&m.files))).ptx.ptx
}

/// The first line where two texts differ, for a readable failure.
fn first_difference(want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    for i in 0..w.len().max(g.len()) {
        let (a, b) = (w.get(i).copied().unwrap_or("<end>"), g.get(i).copied().unwrap_or("<end>"));
        if a != b {
            return format!("line {}:\n  snapshot: {a}\n  now:      {b}", i + 1);
        }
    }
    "only line endings differ".to_string()
}

#[test]
fn ptx_matches_the_snapshots() {
    let bless = std::env::var("BLESS").is_ok_and(|v| v == "1");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ptx_snapshots");
    let mut failures = vec![];
    for s in snapshots() {
        let ptx = ptx_of(&s);
        let path = dir.join(format!("{}.{}.ptx", s.name, s.target.arch()));
        if bless {
            std::fs::create_dir_all(&dir).expect("snapshot folder");
            std::fs::write(&path, &ptx).expect("write snapshot");
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(want) if want == ptx => {}
            Ok(want) => failures.push(format!("{}: {}", path.display(), first_difference(&want, &ptx))),
            Err(e) => failures.push(format!("{}: {e} (BLESS=1 writes it)", path.display())),
        }
    }
    assert!(
        failures.is_empty(),
        "the emitted PTX changed (review, then `BLESS=1 cargo test -p trident-gpu --test ptx_snapshots`):\n{}",
        failures.join("\n")
    );
}

/// The snapshots cover the paths they claim to (a snapshot of the wrong code would pass forever).
#[test]
fn snapshots_exercise_their_code_paths() {
    let by_name = |n: &str| ptx_of(snapshots().iter().find(|s| s.name == n).expect("snapshot"));
    assert!(by_name("vector_add_f16").contains("ld.global.v4"));
    assert!(by_name("softmax_f32").contains("shfl.sync.bfly"));
    let mma = by_name("matmul_f16_64x64x32_w4");
    assert!(mma.contains("mma.sync.aligned") && mma.contains("cp.async") && mma.contains("ldmatrix"));
    assert!(by_name("matmul_f16_128x128x32_w8").contains("wgmma.mma_async"));
    assert!(by_name("attn_fwd_causal_d64").contains("wgmma.mma_async"));
    assert!(
        by_name("splitk_matmul_f16_atomics").contains("atom.") || by_name("splitk_matmul_f16_atomics").contains("red.")
    );
}

/// Sanitize mode's PTX of every snapshot kernel is accepted by ptxas (no warnings) for sm_80
/// and sm_90a (sm_90a only for the kernels written for it), and checks every global access
/// of the plain kernel: as many bounds checks as `ld.global`/`st.global`/`atom.global`/
/// `cp.async` instructions of the user's accesses.
#[test]
fn sanitized_ptx_is_accepted_by_ptxas_and_guards_every_access() {
    for s in snapshots().into_iter().filter(|s| !s.sanitize) {
        for target in [Target::Sm80, Target::Sm90a] {
            if s.target == Target::Sm90a && target == Target::Sm80 {
                continue;
            }
            let snap = Snapshot { sanitize: true, target, ..s.clone() };
            let ptx = ptx_of(&snap);
            common::ptxas_ok(&ptx, target.arch());
            let plain = ptx_of(&Snapshot { sanitize: false, ..snap });
            // Global accesses: instructions (after an optional `@pred` guard) of these kinds.
            let accesses = |t: &str| {
                t.lines()
                    .map(|l| l.trim_start())
                    .map(|l| if l.starts_with('@') { l.split_once(' ').map_or("", |x| x.1) } else { l })
                    .filter(|l| {
                        (l.starts_with("atom.") && l.contains(".global"))
                            || ["ld.global", "st.global", "cp.async.cg.", "cp.async.ca."]
                                .iter()
                                .any(|p| l.starts_with(p))
                    })
                    .count()
            };
            let checks = ptx.matches("bra $L_san_ok_").count();
            assert_eq!(checks, accesses(&plain), "{} for {target}: one check per access", s.name);
            // Each check's recording code adds two stores and two atomics on the record.
            assert_eq!(accesses(&ptx), accesses(&plain) + 4 * checks, "{} for {target}", s.name);
        }
    }
}

/// ARCHITECTURE.md's invariants on the IR, on real kernels: in tile IR every op carries a
/// source location and no tensor has a layout; in GPU IR every tensor has a layout and the
/// ops that came from the source keep their locations (passes may add ops of their own,
/// such as barriers, without one).
#[test]
fn ir_invariants_hold_on_the_bundled_kernels() {
    for s in snapshots() {
        let (m, kernel) = tile_ir_of(&s);
        let f = m.func(&kernel).expect("kernel");
        for op in f.all_ops() {
            let d = &f.ops[op];
            assert!(!d.loc.is_unknown(), "{}: tile-IR op `{}` has no location", s.name, d.kind.name());
            for &r in &d.results {
                assert!(f.ty(r).layout().is_none(), "{}: tile IR has a layout on `{}`", s.name, f.ty(r));
            }
        }
        let opts =
            GpuOptions { target: s.target, num_warps: s.num_warps, num_stages: s.num_stages, ..GpuOptions::default() };
        let art = trident_gpu::compile(&m, &kernel, &opts).expect("compiles");
        let g = art.gpu_ir.func(&kernel).expect("kernel");
        let mut located = 0;
        for op in g.all_ops() {
            let d = &g.ops[op];
            located += usize::from(!d.loc.is_unknown());
            for &r in &d.results {
                let t = g.ty(r);
                assert!(!t.is_tensor() || t.layout().is_some(), "{}: GPU-IR tensor `{t}` has no layout", s.name);
            }
        }
        // Every source location of the tile IR is still somewhere in the GPU IR.
        let locs = |f: &trident_ir::Function| -> std::collections::BTreeSet<String> {
            f.all_ops().iter().map(|&o| format!("{:?}", f.ops[o].loc)).collect()
        };
        let missing: Vec<String> = locs(f).difference(&locs(g)).cloned().collect();
        assert!(missing.is_empty(), "{}: GPU IR lost the locations {missing:?}", s.name);
        assert!(located > 0);
    }
}
