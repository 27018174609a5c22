//! The SASS emulator against the PTX emulator: Triton's own PTX (the emulator's test data)
//! compiled by `ptxas` for sm_80 and sm_90a, run both ways on the same fresh random inputs
//! (outputs poisoned first); the outputs must agree, and `ptxas`'s schedules must never
//! trip a hazard. Needs ptxas and nvdisasm (scripts/install-tools).

mod common;

use common::Rng;
use trident_core::{DType, HostTensor};
use trident_emu::{KernelArg, Module};
use trident_sass_emu::{launch, LaunchConfig, Program};

fn random(rng: &mut Rng, dtype: DType, n: usize, scale: f64) -> HostTensor {
    let v: Vec<f64> = (0..n).map(|_| (rng.uniform() * 2.0 - 1.0) * scale).collect();
    HostTensor::from_f64(dtype, &[n], &v)
}

fn poisoned(dtype: DType, n: usize) -> HostTensor {
    let mut t = HostTensor::zeros(dtype, &[n]);
    for b in t.data.iter_mut() {
        *b = 0xa5;
    }
    t
}

/// The emulator's test data `NAME.ptx`. The `.sm90.ptx` files say PTX 9.4, newer than the
/// `ptxas` 13.0 the tests install; they use nothing past PTX 9.0, so they are read as 9.0.
fn data(name: &str) -> String {
    let text = std::fs::read_to_string(format!("{}/../emu/tests/data/{name}.ptx", env!("CARGO_MANIFEST_DIR"))).unwrap();
    text.replacen(".version 9.4", ".version 9.0", 1)
}

/// Compiles `ptx` for `arch` and loads `entry` for the SASS emulator.
fn sass_program(ptx: &str, arch: &str, entry: &str) -> Program {
    let dir = std::env::temp_dir().join(format!("trident-sass-emu-{}", std::process::id()));
    common::compile(ptx, arch, entry, &dir, &format!("{entry}.{arch}")).2
}

/// Runs both emulators; returns the largest difference in ulps over the outputs `outs`.
#[allow(clippy::too_many_arguments)]
fn both(
    name: &str,
    entry: &str,
    arch: &str,
    grid: [u32; 3],
    threads: u32,
    shared: u32,
    args: Vec<KernelArg>,
    outs: &[usize],
) -> u64 {
    let ptx = data(name);
    let module = Module::parse(&ptx).unwrap();
    let mut want = args.clone();
    let cfg =
        trident_emu::LaunchConfig { grid, block: [threads, 1, 1], dynamic_shared_bytes: shared, ..Default::default() };
    trident_emu::launch(&module, entry, &cfg, &mut want).unwrap_or_else(|e| panic!("PTX emulator: {e}"));
    let p = sass_program(&ptx, arch, entry);
    let mut got = args;
    let cfg = LaunchConfig { grid, block: [threads, 1, 1], dynamic_shared_bytes: shared, ..Default::default() };
    let report = launch(&p, &cfg, &mut got).unwrap_or_else(|e| panic!("{name} on sass-emu ({arch}): {e}"));
    assert!(report.cycles > 0 && report.instructions > 0);
    let mut worst = 0u64;
    for &i in outs {
        let (KernelArg::Buffer(a), KernelArg::Buffer(b)) = (&want[i], &got[i]) else {
            panic!("argument {i} is not a buffer")
        };
        assert_eq!(a.dtype, b.dtype);
        let w = a.dtype.size_bytes();
        for (j, (x, y)) in a.data.chunks(w).zip(b.data.chunks(w)).enumerate() {
            let (mut xb, mut yb) = ([0u8; 8], [0u8; 8]);
            xb[..w].copy_from_slice(x);
            yb[..w].copy_from_slice(y);
            let (xv, yv) = (i64::from_le_bytes(xb), i64::from_le_bytes(yb));
            let ulps = xv.abs_diff(yv);
            assert!(ulps <= 4, "{name} {arch}: output {i} element {j}: PTX emulator {x:02x?}, SASS emulator {y:02x?}");
            worst = worst.max(ulps);
        }
    }
    eprintln!(
        "{name} ({arch}): agrees (worst {worst} ulp), {} estimated cycles, {} warp-instructions",
        report.cycles, report.instructions
    );
    worst
}

/// Triton's sm_80 PTX for both architectures, and its sm_90a PTX (warpgroup MMA in the
/// matmul) for sm_90a: `(file, arch)`.
fn archs(name: &str) -> Vec<(String, &'static str)> {
    vec![(name.to_string(), "sm_80"), (name.to_string(), "sm_90a"), (format!("{name}.sm90"), "sm_90a")]
}

#[test]
fn vector_add_agrees() {
    if !common::tools() {
        return;
    }
    for name in ["vadd"] {
        for (name, arch) in archs(name) {
            let name = name.as_str();
            let mut rng = Rng(0x1234 ^ std::process::id() as u64);
            let n = 1000;
            let args = vec![
                KernelArg::Buffer(random(&mut rng, DType::F32, n, 10.0)),
                KernelArg::Buffer(random(&mut rng, DType::F32, n, 10.0)),
                KernelArg::Buffer(poisoned(DType::F32, n)),
                KernelArg::Scalar(n as u64),
                KernelArg::Null,
                KernelArg::Null,
            ];
            assert_eq!(both(name, "vadd", arch, [4, 1, 1], 128, 0, args, &[2]), 0);
        }
    }
}

#[test]
fn softmax_agrees() {
    if !common::tools() {
        return;
    }
    for name in ["softmax"] {
        for (name, arch) in archs(name) {
            let name = name.as_str();
            let mut rng = Rng(0x5678 ^ std::process::id() as u64);
            let (rows, cols) = (6, 100);
            let args = vec![
                KernelArg::Buffer(random(&mut rng, DType::F32, rows * cols, 5.0)),
                KernelArg::Buffer(poisoned(DType::F32, rows * cols)),
                KernelArg::Scalar(cols as u64),
                KernelArg::Scalar(cols as u64),
                KernelArg::Null,
                KernelArg::Null,
            ];
            both(name, "row_softmax", arch, [rows as u32, 1, 1], 128, 16, args, &[1]);
        }
    }
}

#[test]
fn layer_norm_agrees() {
    if !common::tools() {
        return;
    }
    for name in ["layernorm"] {
        for (name, arch) in archs(name) {
            let name = name.as_str();
            let mut rng = Rng(0x9abc ^ std::process::id() as u64);
            let (rows, cols) = (8, 200);
            let args = vec![
                KernelArg::Buffer(random(&mut rng, DType::F16, rows * cols, 3.0)),
                KernelArg::Buffer(random(&mut rng, DType::F32, cols, 1.0)),
                KernelArg::Buffer(random(&mut rng, DType::F32, cols, 1.0)),
                KernelArg::Buffer(poisoned(DType::F16, rows * cols)),
                KernelArg::Scalar(cols as u64),
                KernelArg::Scalar(cols as u64),
                KernelArg::Scalar(1e-5f32.to_bits() as u64),
                KernelArg::Null,
                KernelArg::Null,
            ];
            both(name, "layernorm", arch, [rows as u32, 1, 1], 128, 16, args, &[3]);
        }
    }
}

/// Launch sizes of the emulator's test data (`launch.txt`): threads, dynamic shared bytes.
fn launch_size(name: &str) -> (u32, u32) {
    let text = std::fs::read_to_string(format!("{}/../emu/tests/data/launch.txt", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let line = text.lines().find(|l| l.split_whitespace().next() == Some(name)).unwrap();
    let field = |k: &str| line.split_whitespace().find_map(|w| w.strip_prefix(k)).unwrap().parse::<u32>().unwrap();
    (field("threads="), field("shared="))
}

/// The test data's `matmul` arguments for an `m`×`k` by `k`×`n` product: fresh random inputs,
/// the output poisoned.
fn matmul_args(rng: &mut Rng, m: usize, n: usize, k: usize) -> Vec<KernelArg> {
    vec![
        KernelArg::Buffer(random(rng, DType::F16, m * k, 1.0)),
        KernelArg::Buffer(random(rng, DType::F16, k * n, 1.0)),
        KernelArg::Buffer(poisoned(DType::F16, m * n)),
        KernelArg::Scalar(m as u64),
        KernelArg::Scalar(n as u64),
        KernelArg::Scalar(k as u64),
        KernelArg::Scalar(k as u64),
        KernelArg::Scalar(n as u64),
        KernelArg::Scalar(n as u64),
        KernelArg::Null,
        KernelArg::Null,
    ]
}

#[test]
fn matmul_agrees() {
    if !common::tools() {
        return;
    }
    for (name, arch) in archs("matmul") {
        let name = name.as_str();
        let (threads, shared) = launch_size(name);
        let mut rng = Rng(0x4242 ^ std::process::id() as u64);
        // K = 80 is not a multiple of the K tile: the last copies zero-fill.
        let (m, n, k) = (128usize, 64usize, 80usize);
        let args = matmul_args(&mut rng, m, n, k);
        let grid = [(m as u32).div_ceil(64), (n as u32).div_ceil(64), 1];
        both(name, "matmul", arch, grid, threads, shared, args, &[2]);
    }
}

#[test]
fn attention_agrees() {
    if !common::tools() {
        return;
    }
    for (name, arch) in archs("attn_fwd") {
        let name = name.as_str();
        let (threads, shared) = launch_size(name);
        let mut rng = Rng(0x7777 ^ std::process::id() as u64);
        let (bh, seq, d) = (2usize, 64usize, 32usize);
        let n = bh * seq * d;
        let args = vec![
            KernelArg::Buffer(random(&mut rng, DType::F16, n, 1.0)),
            KernelArg::Buffer(random(&mut rng, DType::F16, n, 1.0)),
            KernelArg::Buffer(random(&mut rng, DType::F16, n, 1.0)),
            KernelArg::Buffer(poisoned(DType::F16, n)),
            KernelArg::Scalar(seq as u64),
            KernelArg::Scalar((1.0f32 / (d as f32).sqrt()).to_bits() as u64),
            KernelArg::Null,
            KernelArg::Null,
        ];
        both(name, "attn_fwd", arch, [(seq / 32) as u32, bh as u32, 1], threads, shared, args, &[3]);
    }
}

/// `stmatrix` (sm_90's `STSM`), plain and transposed, one to four matrices: each thread
/// stores fragments made from its id and an input word, the CTA reads shared memory back
/// out; both emulators must agree bit for bit.
#[test]
fn stmatrix_agrees() {
    if !common::tools() {
        return;
    }
    for (count, trans) in [(1, false), (2, true), (4, false), (4, true)] {
        let regs: Vec<String> = (0..count).map(|i| format!("%r{}", 10 + i)).collect();
        let mut ptx = String::from(
            ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry stm(.param .u64 in, .param .u64 out)\n{\n",
        );
        ptx.push_str("    .reg .b32 %r<20>;\n    .reg .b64 %rd<8>;\n    .shared .align 16 .b8 tile[2048];\n");
        ptx.push_str("    ld.param.u64 %rd0, [in];\n    ld.param.u64 %rd1, [out];\n    mov.u32 %r0, %tid.x;\n");
        ptx.push_str("    mul.wide.u32 %rd2, %r0, 4;\n    add.u64 %rd3, %rd0, %rd2;\n    ld.global.u32 %r1, [%rd3];\n");
        for (i, r) in regs.iter().enumerate() {
            ptx.push_str(&format!("    mad.lo.u32 {r}, %r0, {}, %r1;\n", 0x10003 + 0x20000 * i));
        }
        // Row addresses: lane l gives row l % 8 of matrix l / 8, rows 16 bytes apart with a
        // gap between matrices, so a wrong row or matrix lands elsewhere.
        ptx.push_str("    mul.lo.u32 %r2, %r0, 16;\n    shr.u32 %r3, %r0, 3;\n    mad.lo.u32 %r2, %r3, 64, %r2;\n");
        ptx.push_str("    mov.u32 %r4, tile;\n    add.u32 %r2, %r2, %r4;\n");
        let shape = if trans { ".trans" } else { "" };
        ptx.push_str(&format!(
            "    stmatrix.sync.aligned.m8n8.x{count}{shape}.shared.b16 [%r2], {{{}}};\n    bar.sync 0;\n",
            regs.join(", ")
        ));
        // Each thread copies 16 words of the tile out.
        ptx.push_str("    mul.lo.u32 %r5, %r0, 64;\n    add.u32 %r5, %r5, %r4;\n    mul.wide.u32 %rd4, %r0, 64;\n    add.u64 %rd5, %rd1, %rd4;\n");
        for k in 0..16 {
            ptx.push_str(&format!(
                "    ld.shared.u32 %r6, [%r5+{}];\n    st.global.u32 [%rd5+{}], %r6;\n",
                4 * k,
                4 * k
            ));
        }
        ptx.push_str("    ret;\n}\n");
        let mut rng = Rng(0x5757 ^ std::process::id() as u64 ^ count as u64);
        let input = {
            let mut t = HostTensor::zeros(DType::U32, &[32]);
            for w in t.data.chunks_mut(4) {
                w.copy_from_slice(&(rng.next() as u32).to_le_bytes());
            }
            t
        };
        let args = vec![KernelArg::Buffer(input), KernelArg::Buffer(poisoned(DType::U32, 32 * 16))];
        let module = Module::parse(&ptx).unwrap_or_else(|e| panic!("{e}\n{ptx}"));
        let mut want = args.clone();
        let cfg = trident_emu::LaunchConfig { grid: [1, 1, 1], block: [32, 1, 1], ..Default::default() };
        trident_emu::launch(&module, "stm", &cfg, &mut want).unwrap_or_else(|e| panic!("PTX emulator: {e}"));
        let dir = std::env::temp_dir().join(format!("trident-sass-emu-stm-{}", std::process::id()));
        let p = common::compile(&ptx, "sm_90a", "stm", &dir, &format!("stm{count}{trans}")).2;
        assert!(p.kernel.ops.iter().any(|o| o.root == "STSM"), "no STSM in the SASS");
        let mut got = args;
        let scfg = LaunchConfig { grid: [1, 1, 1], block: [32, 1, 1], ..Default::default() };
        launch(&p, &scfg, &mut got).unwrap_or_else(|e| panic!("SASS emulator: {e}"));
        let (KernelArg::Buffer(a), KernelArg::Buffer(b)) = (&want[1], &got[1]) else { unreachable!() };
        assert_eq!(a.data, b.data, "stmatrix x{count} trans={trans}: the emulators differ");
    }
}

/// nvdisasm 12 (Triton's bundled tools, what a GPU machine's search uses) prints `LDGSTS`'s
/// shared address last — `desc[UR16][R16.64], P4, [R5]` — where 13 prints it first: the
/// matmul with every `LDGSTS` rewritten into the older order computes what it computes as
/// disassembled (its cp.async copies read global memory at the 64-bit address either way).
#[test]
fn ldgsts_in_either_disassembler_order() {
    if !common::tools() {
        return;
    }
    let (name, arch) = ("matmul", "sm_80");
    let (threads, shared) = launch_size(name);
    let dir = std::env::temp_dir().join(format!("trident-sass-emu-{}", std::process::id()));
    let (cubin, text, p13) = common::compile(&data(name), arch, "matmul", &dir, "matmul.ldgsts-order");
    let mut rewritten = 0;
    let old: Vec<_> = text
        .iter()
        .map(|t| {
            let mut t = t.clone();
            if t.opcode.starts_with("LDGSTS") {
                // `[shared], [global], P` (or `[shared][global], P`) -> `[global], P, [shared]`.
                let ops = t.operands.replace("][", "],[");
                let parts: Vec<&str> = ops.split(',').map(str::trim).collect();
                let (shared, rest) = parts.split_first().unwrap();
                t.operands = format!("{}, {shared}", rest.join(", "));
                rewritten += 1;
            }
            t
        })
        .collect();
    assert!(rewritten > 0, "the matmul has no LDGSTS");
    let p12 = Program::new(&cubin, "matmul", &old).unwrap();
    let mut rng = Rng(0x5150 ^ std::process::id() as u64);
    let args = matmul_args(&mut rng, 64, 64, 80);
    let cfg =
        LaunchConfig { grid: [1, 1, 1], block: [threads, 1, 1], dynamic_shared_bytes: shared, ..Default::default() };
    let (mut a, mut b) = (args.clone(), args);
    launch(&p13, &cfg, &mut a).unwrap();
    launch(&p12, &cfg, &mut b).unwrap_or_else(|e| panic!("LDGSTS in nvdisasm 12's order: {e}"));
    let (KernelArg::Buffer(x), KernelArg::Buffer(y)) = (&a[2], &b[2]) else { unreachable!() };
    assert!(x.data.iter().any(|&v| v != 0xa5), "the matmul wrote nothing");
    assert_eq!(x.data, y.data);
}
