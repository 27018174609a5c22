//! The project's kernels (kernels/*.py) through the front end, the tile pipeline and the
//! GPU backend: PTX accepted by ptxas for sm_80 and sm_90, emulator results equal to the
//! interpreter's at several shapes (ragged edges, non-powers of two) and warp counts.

mod common;
use common::*;
use trident_core::DType;

#[test]
fn vector_add() {
    let mut rng = Rng(seed());
    for &(n, block, warps) in &[(1000usize, 256i64, 4u32), (4096, 1024, 4), (77, 128, 1), (5000, 512, 8)] {
        let args = [
            ("x", A::T(random(&mut rng, DType::F32, &[n], 10.0))),
            ("y", A::T(random(&mut rng, DType::F32, &[n], 10.0))),
            ("out", A::T(poisoned(DType::F32, &[n]))),
            ("n_elements", A::I(n as i64)),
            ("BLOCK", A::C(block)),
        ];
        kernel_differential(
            "vector_add.py",
            "add_kernel",
            &args,
            warps,
            [(n as u32).div_ceil(block as u32), 1, 1],
            None,
        );
    }
}

#[test]
fn softmax() {
    let mut rng = Rng(seed());
    for &(rows, cols, block, warps) in
        &[(5usize, 100usize, 128i64, 4u32), (3, 1000, 1024, 4), (4, 2048, 2048, 8), (2, 17, 32, 1)]
    {
        for dt in [DType::F32, DType::F16] {
            let args = [
                ("x", A::T(random(&mut rng, dt, &[rows, cols], 4.0))),
                ("y", A::T(poisoned(dt, &[rows, cols]))),
                ("x_row_stride", A::I(cols as i64)),
                ("y_row_stride", A::I(cols as i64)),
                ("n_cols", A::I(cols as i64)),
                ("BLOCK", A::C(block)),
            ];
            let tol = if dt == DType::F16 { (2e-3, 1e-5) } else { (2e-5, 1e-6) };
            kernel_differential("softmax.py", "softmax_kernel", &args, warps, [rows as u32, 1, 1], Some(tol));
        }
    }
}

#[test]
fn layernorm_forward() {
    let mut rng = Rng(seed());
    for &(m, n, block, warps) in &[(4usize, 100usize, 128i64, 4u32), (3, 1024, 1024, 8), (2, 33, 64, 2)] {
        let args = [
            ("x", A::T(random(&mut rng, DType::F32, &[m, n], 2.0))),
            ("y", A::T(poisoned(DType::F32, &[m, n]))),
            ("w", A::T(random(&mut rng, DType::F32, &[n], 1.0))),
            ("b", A::T(random(&mut rng, DType::F32, &[n], 1.0))),
            ("mean", A::T(poisoned(DType::F32, &[m]))),
            ("rstd", A::T(poisoned(DType::F32, &[m]))),
            ("stride", A::I(n as i64)),
            ("N", A::I(n as i64)),
            ("eps", A::F(1e-5)),
            ("BLOCK_N", A::C(block)),
        ];
        kernel_differential("layernorm.py", "layernorm_fwd", &args, warps, [m as u32, 1, 1], Some((1e-4, 1e-5)));
    }
}

#[test]
fn layernorm_backward() {
    let mut rng = Rng(seed());
    for &(m, n, block, rpp, warps) in &[(10usize, 100usize, 128i64, 4i64, 4u32), (7, 64, 64, 8, 2)] {
        let groups = m.div_ceil(rpp as usize);
        let args = [
            ("dy", A::T(random(&mut rng, DType::F32, &[m, n], 1.0))),
            ("x", A::T(random(&mut rng, DType::F32, &[m, n], 2.0))),
            ("w", A::T(random(&mut rng, DType::F32, &[n], 1.0))),
            ("mean", A::T(random(&mut rng, DType::F32, &[m], 0.5))),
            ("rstd", A::T(random(&mut rng, DType::F32, &[m], 1.0))),
            ("dx", A::T(poisoned(DType::F32, &[m, n]))),
            ("dw_part", A::T(poisoned(DType::F32, &[groups, n]))),
            ("db_part", A::T(poisoned(DType::F32, &[groups, n]))),
            ("stride", A::I(n as i64)),
            ("M", A::I(m as i64)),
            ("N", A::I(n as i64)),
            ("ROWS_PER_PROGRAM", A::C(rpp)),
            ("BLOCK_N", A::C(block)),
        ];
        kernel_differential(
            "layernorm.py",
            "layernorm_bwd_dx",
            &args,
            warps,
            [groups as u32, 1, 1],
            Some((1e-4, 1e-5)),
        );
        let args = [
            ("dw_part", A::T(random(&mut rng, DType::F32, &[groups, n], 1.0))),
            ("db_part", A::T(random(&mut rng, DType::F32, &[groups, n], 1.0))),
            ("dw", A::T(poisoned(DType::F32, &[n]))),
            ("db", A::T(poisoned(DType::F32, &[n]))),
            ("G", A::I(groups as i64)),
            ("N", A::I(n as i64)),
            ("BLOCK_G", A::C(16)),
            ("BLOCK_N", A::C(64)),
        ];
        kernel_differential(
            "layernorm.py",
            "layernorm_bwd_dwdb",
            &args,
            warps,
            [(n as u32).div_ceil(64), 1, 1],
            Some((1e-5, 1e-5)),
        );
    }
}

#[test]
fn matmul() {
    let mut rng = Rng(seed());
    for &(m, n, k, bm, bn, bk, warps, dt) in &[
        (64usize, 64usize, 64usize, 64i64, 64i64, 32i64, 4u32, DType::F16),
        (100, 70, 50, 32, 32, 32, 4, DType::F16),
        (130, 60, 40, 64, 32, 16, 2, DType::BF16),
        (48, 96, 64, 16, 32, 32, 1, DType::F16),
    ] {
        let args = matmul_args(&mut rng, (m, n, k), (bm, bn, bk), dt, (false, false));
        let grid = [(m as u32).div_ceil(bm as u32) * (n as u32).div_ceil(bn as u32), 1, 1];
        kernel_differential("matmul.py", "matmul_kernel", &args, warps, grid, None);
    }
}

#[test]
fn cumsum() {
    let mut rng = Rng(seed());
    for &(m, n, bm, bn, warps) in &[(10usize, 100usize, 4i64, 128i64, 4u32), (3, 1000, 2, 1024, 8), (9, 7, 8, 8, 1)] {
        for dt in [DType::I32, DType::F32] {
            let args = [
                ("x", A::T(random(&mut rng, dt, &[m, n], 100.0))),
                ("y", A::T(poisoned(dt, &[m, n]))),
                ("M", A::I(m as i64)),
                ("N", A::I(n as i64)),
                ("stride_xm", A::I(n as i64)),
                ("stride_ym", A::I(n as i64)),
                ("BLOCK_M", A::C(bm)),
                ("BLOCK_N", A::C(bn)),
            ];
            kernel_differential(
                "cumsum.py",
                "cumsum_kernel",
                &args,
                warps,
                [(m as u32).div_ceil(bm as u32), 1, 1],
                // f32 prefix sums of up to 1000 values of magnitude <= 100, associated as a
                // tree on the emulator and left to right in the interpreter: the rounding
                // error scales with the sum of |x| so far (~5e4 · 6e-8 per level, 10 levels),
                // not with the (possibly tiny, after cancellation) result.
                Some((1e-5, 2e-2)),
            );
        }
    }
}

#[test]
fn dropout() {
    let mut rng = Rng(seed());
    for &(n, block, warps) in &[(1000usize, 1024i64, 4u32), (3000, 256, 2)] {
        let args = [
            ("x", A::T(random(&mut rng, DType::F32, &[n], 5.0))),
            ("out", A::T(poisoned(DType::F32, &[n]))),
            ("n_elements", A::I(n as i64)),
            ("p", A::F(0.3)),
            ("seed", A::I(1234 + rng.below(1000) as i64)),
            ("BLOCK", A::C(block)),
        ];
        kernel_differential(
            "dropout.py",
            "dropout_kernel",
            &args,
            warps,
            [(n as u32).div_ceil(block as u32), 1, 1],
            None,
        );
    }
}

#[test]
fn splitk_matmul() {
    let mut rng = Rng(seed());
    let (m, n, k) = (40usize, 50usize, 200usize);
    let kps = 64i64;
    let args = [
        ("a", A::T(random(&mut rng, DType::F16, &[m, k], 1.0))),
        ("b", A::T(random(&mut rng, DType::F16, &[k, n], 1.0))),
        ("c", A::T(trident_core::HostTensor::zeros(DType::F32, &[m, n]))),
        ("M", A::I(m as i64)),
        ("N", A::I(n as i64)),
        ("K", A::I(k as i64)),
        ("stride_am", A::I(k as i64)),
        ("stride_ak", A::I(1)),
        ("stride_bk", A::I(n as i64)),
        ("stride_bn", A::I(1)),
        ("stride_cm", A::I(n as i64)),
        ("stride_cn", A::I(1)),
        ("K_PER_SPLIT", A::I(kps)),
        ("BLOCK_M", A::C(32)),
        ("BLOCK_N", A::C(32)),
        ("BLOCK_K", A::C(32)),
    ];
    let grid = [(m as u32).div_ceil(32) * (n as u32).div_ceil(32), (k as u32).div_ceil(kps as u32), 1];
    kernel_differential("splitk_matmul.py", "splitk_matmul_kernel", &args, 4, grid, Some((1e-4, 1e-4)));
}

#[test]
fn flash_attention() {
    let mut rng = Rng(seed());
    for &(z, h, n_ctx, d, bm, bn, causal, warps) in &[
        (1usize, 2usize, 64usize, 32usize, 32i64, 32i64, false, 4u32),
        (1, 1, 70, 16, 32, 16, true, 4),
        (2, 1, 40, 64, 16, 16, false, 1),
    ] {
        let args = attention_args(&mut rng, (z, h, n_ctx, d), (bm, bn), causal);
        let grid = [(n_ctx as u32).div_ceil(bm as u32), (z * h) as u32, 1];
        kernel_differential("flash_attention.py", "attn_fwd", &args, warps, grid, Some((2e-3, 2e-3)));
    }
}

/// D128 attention on 8 warps with 128x128 blocks: the KV loop's registers are scarce (a
/// 64-register accumulator, a 64-register score tile), so on sm_80 `gpu-shared-operands`
/// keeps Q in a shared tile stored once before the loop and re-read (`ldmatrix`) by the
/// dot in every iteration. Asserted on the GPU IR, then run on the emulator against the
/// interpreter (ragged N, causal: the masked last block).
#[test]
fn attention_keeps_q_in_shared_memory_when_registers_are_scarce() {
    let mut rng = Rng(seed());
    let args = attention_args(&mut rng, (1, 1, 200, 128), (128, 128), true);
    let (m, kernel, rt) = front("flash_attention.py", "attn_fwd", &args);
    let opts = trident_gpu::GpuOptions { num_warps: 8, ..Default::default() };
    let (gm, _) = trident_gpu::GpuPipeline::new(&opts).lower(&m, &kernel).unwrap();
    let f = &gm.funcs[0];
    let q_tile = |op: trident_ir::Op| {
        let d = &f.ops[op];
        matches!(d.kind, trident_ir::OpKind::LocalStore) && f.ty(d.operands[1]).shape() == [128, 128]
    };
    let top = &f.blocks[f.body].ops;
    let store = top.iter().copied().find(|&o| q_tile(o)).expect("Q is stored into a shared tile before the loop");
    let tile = f.ops[store].operands[0];
    let lp = top.iter().copied().find(|&o| matches!(f.ops[o].kind, trident_ir::OpKind::For)).expect("the KV loop");
    let mut reads = 0;
    f.walk_block(f.ops[lp].regions[0], &mut |o| {
        if matches!(f.ops[o].kind, trident_ir::OpKind::LocalLoad) && f.ops[o].operands[0] == tile {
            reads += 1;
        }
    });
    assert_eq!(reads, 1, "the loop re-reads Q from its tile, for its one dot");
    let grid = [2, 1, 1];
    differential(&m, &kernel, 8, grid, &rt, Some((2e-3, 2e-3)));
}

#[test]
fn ptx_carries_line_info_pointing_at_the_kernel_source() {
    let (m, k, _) = front(
        "softmax.py",
        "softmax_kernel",
        &[
            ("x", A::T(poisoned(DType::F32, &[4]))),
            ("y", A::T(poisoned(DType::F32, &[4]))),
            ("x_row_stride", A::I(4)),
            ("y_row_stride", A::I(4)),
            ("n_cols", A::I(4)),
            ("BLOCK", A::C(128)),
        ],
    );
    let ptx = compile(&m, &k, 4).ptx;
    assert!(ptx.contains(".file 1 \"") && ptx.contains("softmax.py\""), "{ptx}");
    // `tl.max(vals, axis=0)` is on line 21 of kernels/softmax.py.
    let src = std::fs::read_to_string(format!("{}/../../kernels/softmax.py", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let line = src.lines().position(|l| l.contains("tl.max(vals")).unwrap() + 1;
    assert!(ptx.lines().any(|l| l.trim_start().starts_with(&format!(".loc 1 {line} "))), "no .loc for line {line}");
}

#[test]
fn sixteen_warps_and_tiny_blocks() {
    let mut rng = Rng(seed());
    // More threads than elements, and the largest CTA.
    for &(rows, cols, block, warps) in &[(3usize, 5usize, 8i64, 16u32), (2, 4000, 4096, 16), (4, 2, 2, 1)] {
        let args = [
            ("x", A::T(random(&mut rng, DType::F32, &[rows, cols], 4.0))),
            ("y", A::T(poisoned(DType::F32, &[rows, cols]))),
            ("x_row_stride", A::I(cols as i64)),
            ("y_row_stride", A::I(cols as i64)),
            ("n_cols", A::I(cols as i64)),
            ("BLOCK", A::C(block)),
        ];
        kernel_differential("softmax.py", "softmax_kernel", &args, warps, [rows as u32, 1, 1], Some((2e-5, 1e-6)));
    }
    let (m, n, k) = (130usize, 140usize, 96usize);
    let args = [
        ("a", A::T(random(&mut rng, DType::F16, &[m, k], 1.0))),
        ("b", A::T(random(&mut rng, DType::F16, &[k, n], 1.0))),
        ("c", A::T(poisoned(DType::F16, &[m, n]))),
        ("M", A::I(m as i64)),
        ("N", A::I(n as i64)),
        ("K", A::I(k as i64)),
        ("stride_am", A::I(k as i64)),
        ("stride_ak", A::I(1)),
        ("stride_bk", A::I(n as i64)),
        ("stride_bn", A::I(1)),
        ("stride_cm", A::I(n as i64)),
        ("stride_cn", A::I(1)),
        ("BLOCK_M", A::C(128)),
        ("BLOCK_N", A::C(128)),
        ("BLOCK_K", A::C(32)),
        ("GROUP_M", A::C(2)),
    ];
    kernel_differential("matmul.py", "matmul_kernel", &args, 16, [2 * 2, 1, 1], None);
}

/// Whether some loop of `kernel` compiled for `target` carries a tensor of pointers
/// (`gpu-rebase-pointers` turns the ones it rewrites into scalars).
fn carries_pointer_tensor(m: &trident_ir::Module, kernel: &str, target: trident_gpu::Target, warps: u32) -> bool {
    let opts = trident_gpu::GpuOptions { target, num_warps: warps, num_stages: 3, ..Default::default() };
    let art = trident_gpu::compile(m, kernel, &opts).unwrap_or_else(|e| panic!("{e:?}"));
    let f = &art.gpu_ir.funcs[0];
    f.all_ops().into_iter().filter(|&o| matches!(f.ops[o].kind, trident_ir::OpKind::For)).any(|o| {
        f.blocks[f.ops[o].regions[0]].args.iter().any(|&a| !f.ty(a).is_scalar() && f.ty(a).elem().pointee().is_some())
    })
}

/// The configuration of the ragged matmul's spills (bench/STATIC.md, issue 13): 128x128x32
/// tiles on 4 warps, 3 stages, sizes not multiples of 8, so every operand element is its own
/// load and the loop is not pipelined. Its pointer tensors are carried as scalar bases
/// (`gpu-rebase-pointers`); the results must not change, on sm_80 and with wgmma.
#[test]
fn ragged_matmul_with_rebased_pointers() {
    let mut rng = Rng(seed());
    for &(m, n, k) in &[(200usize, 136usize, 100usize), (129, 255, 33)] {
        let args = matmul_args(&mut rng, (m, n, k), (128, 128, 32), DType::F16, (false, false));
        let (module, kernel, rt) = front("matmul.py", "matmul_kernel", &args);
        for target in [trident_gpu::Target::Sm80, trident_gpu::Target::Sm90a] {
            assert!(!carries_pointer_tensor(&module, &kernel, target, 4), "{target}: pointers not rebased");
        }
        let grid = [(m as u32).div_ceil(128) * (n as u32).div_ceil(128), 1, 1];
        differential_stages(&module, &kernel, 4, 3, grid, &rt, None);
    }
}

/// Pointer tensors walked backwards (`p -= BLOCK * stride`: a negative step each iteration,
/// rows with a stride that is not a multiple of 16), read again after the loop, and the
/// result made order-dependent (`acc * 0.5 + x`) so that a wrong block shows.
#[test]
fn rebased_pointers_walking_backwards() {
    let src = r#"
import triton
import triton.language as tl


@triton.jit
def walk_back(x, y, n_blocks, stride, BLOCK: tl.constexpr):
    rows = tl.arange(0, BLOCK)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    p = x + (n_blocks - 1) * BLOCK * stride + rows * stride + cols
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for i in range(n_blocks):
        acc = acc * 0.5 + tl.load(p, mask=cols < stride, other=0.0)
        p -= BLOCK * stride
    # p now points one block before the first: step back into it.
    acc += tl.load(p + BLOCK * stride, mask=cols < stride, other=0.0)
    tl.store(y + rows * BLOCK + cols, acc)
"#;
    let mut rng = Rng(seed());
    let (blocks, stride, block) = (5usize, 37usize, 32usize);
    let args = vec![
        ("x", A::T(random(&mut rng, DType::F32, &[blocks * block * stride], 1.0))),
        ("y", A::T(poisoned(DType::F32, &[block, block]))),
        ("n_blocks", A::I(blocks as i64)),
        ("stride", A::I(stride as i64)),
        ("BLOCK", A::C(block as i64)),
    ];
    let (module, kernel, rt) = front_text("walk.py", src, "walk_back", &args);
    assert!(!carries_pointer_tensor(&module, &kernel, trident_gpu::Target::Sm80, 4), "pointers not rebased");
    differential(&module, &kernel, 4, [1, 1, 1], &rt, Some((1e-6, 1e-6)));
}
