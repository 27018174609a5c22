//! The sm_90a path: `tl.dot` on warpgroup MMA (`wgmma.mma_async` with shared-memory
//! descriptors, A from shared memory or registers). Every case asserts that the sm_90a
//! PTX really uses wgmma, then runs it (and the sm_80 build) on the PTX emulator against
//! the interpreter, and ptxas checks all three targets.

mod common;
use common::*;
use trident_core::{DType, HostTensor};
use trident_gpu::{emit_ptx, GpuOptions, Target};
use trident_ir::Module;

/// The sm_90a PTX of a kernel (compiled with `num_warps`, `num_stages`).
fn sm90a(m: &Module, kernel: &str, num_warps: u32, num_stages: u32) -> String {
    let opts = GpuOptions { target: Target::Sm90a, num_warps, num_stages, ..GpuOptions::default() };
    emit_ptx(m, kernel, &opts).unwrap_or_else(|d| panic!("{}", d.render(&m.files))).ptx
}

fn wgmma_count(ptx: &str) -> usize {
    ptx.matches("wgmma.mma_async").count()
}

/// Matmul with A (M×K) and B (K×N) in either storage order: `a_t` stores A column-major
/// (M contiguous: an M-major wgmma operand), `b_t` stores B column-major (K contiguous:
/// a K-major B).
#[allow(clippy::too_many_arguments)]
fn matmul_case(
    rng: &mut Rng,
    (m, n, k): (usize, usize, usize),
    (bm, bn, bk): (i64, i64, i64),
    warps: u32,
    stages: u32,
    dt: DType,
    a_t: bool,
    b_t: bool,
) {
    let args = matmul_args(rng, (m, n, k), (bm, bn, bk), dt, (a_t, b_t));
    let (md, kernel, rt) = front("matmul.py", "matmul_kernel", &args);
    let what =
        format!("matmul {m}x{n}x{k} blocks {bm}x{bn}x{bk} {warps} warps {stages} stages {dt} a_t={a_t} b_t={b_t}");
    let ptx = sm90a(&md, &kernel, warps, stages);
    if m as i64 % bm == 0 && n as i64 % bn == 0 && k as i64 % bk == 0 && stages > 1 && !a_t && !b_t {
        assert!(ptx.contains("wgmma.wait_group.sync.aligned 1;"), "{what}: no MMA kept in flight\n{}", numbered(&ptx));
    }
    // One instruction per m64 tile of the warps and K step of 16 (the N tile is whole).
    let want = (bm as usize / (16 * warps as usize)).max(1) * (bk as usize / 16) * (bn as usize).div_ceil(256);
    assert_eq!(wgmma_count(&ptx), want, "{what}: wgmma instructions\n{}", numbered(&ptx));
    // The 16-bit result leaves the accumulator layout through shared memory with
    // `stmatrix` (four 8x8 matrices per instruction), not one 32-bit store per pair.
    let stsm = ptx.matches("stmatrix.sync.aligned.m8n8.x4.shared.b16").count();
    let per_thread = (bm * bn) as usize / (32 * warps as usize);
    assert_eq!(stsm, per_thread / 8, "{what}: stmatrix instructions\n{}", numbered(&ptx));
    eprintln!("{what}");
    let grid = [(m as u32).div_ceil(bm as u32) * (n as u32).div_ceil(bn as u32), 1, 1];
    differential_stages(&md, &kernel, warps, stages, grid, &rt, None);
}

#[test]
fn matmul_on_warpgroup_mma() {
    let mut rng = Rng(seed());
    // The benchmark configuration, ragged edges.
    matmul_case(&mut rng, (200, 136, 96), (128, 128, 32), 8, 3, DType::F16, false, false);
    // Sizes the tiles divide: both operands through the cp.async ring, the MMA in flight
    // across the back edge (`wgmma.wait_group 1` at the barrier before the refill).
    matmul_case(&mut rng, (256, 128, 160), (128, 128, 32), 8, 3, DType::F16, false, false);
    // One warpgroup, 128-byte rows of A, bf16.
    matmul_case(&mut rng, (130, 70, 100), (64, 64, 64), 4, 2, DType::BF16, false, false);
    // Two m64 tiles per warpgroup, the widest instruction N (256, 64-byte B rows... of 512 bytes).
    matmul_case(&mut rng, (128, 256, 48), (128, 256, 16), 4, 3, DType::F16, false, false);
    // Four stages, 32-byte swizzle (K = 16 rows of A).
    matmul_case(&mut rng, (64, 32, 80), (64, 32, 16), 4, 4, DType::F16, false, false);
}

#[test]
fn matmul_operands_in_every_storage_order() {
    let mut rng = Rng(seed());
    for (a_t, b_t) in [(true, false), (false, true), (true, true)] {
        matmul_case(&mut rng, (96, 80, 72), (64, 64, 32), 4, 3, DType::F16, a_t, b_t);
        matmul_case(&mut rng, (160, 128, 64), (128, 128, 64), 8, 2, DType::BF16, a_t, b_t);
    }
}

#[test]
fn matmul_without_pipelining_reads_converted_tiles() {
    // num_stages = 1: the operands are converted into swizzled tiles left in shared
    // memory for the descriptors (no cp.async ring).
    let mut rng = Rng(seed());
    matmul_case(&mut rng, (100, 72, 70), (64, 64, 32), 4, 1, DType::F16, false, false);
    matmul_case(&mut rng, (130, 130, 40), (128, 128, 16), 8, 1, DType::BF16, true, true);
}

fn attention_case(
    rng: &mut Rng,
    (z, h, n_ctx, d): (usize, usize, usize, usize),
    (bm, bn): (i64, i64),
    causal: bool,
    warps: u32,
) {
    let args = attention_args(rng, (z, h, n_ctx, d), (bm, bn), causal);
    let (md, kernel, rt) = front("flash_attention.py", "attn_fwd", &args);
    let ptx = sm90a(&md, &kernel, warps, 2);
    // Q·Kᵀ (A = Q from shared memory) and P·V (A = P from registers), K/16 steps each.
    let reps = (bm as usize / (16 * warps as usize)).max(1);
    assert_eq!(wgmma_count(&ptx), reps * (d / 16 + bn as usize / 16), "wgmma instructions\n{}", numbered(&ptx));
    assert!(
        ptx.contains("}, %rd") && ptx.contains("}, {%r"),
        "one dot reads A from shared memory, the other from registers"
    );
    let grid = [(n_ctx as u32).div_ceil(bm as u32), (z * h) as u32, 1];
    differential_stages(&md, &kernel, warps, 2, grid, &rt, Some((2e-3, 2e-3)));
}

#[test]
fn flash_attention_on_warpgroup_mma() {
    let mut rng = Rng(seed());
    attention_case(&mut rng, (1, 2, 200, 64), (128, 64), false, 8);
    attention_case(&mut rng, (1, 1, 150, 64), (128, 64), true, 8);
    attention_case(&mut rng, (2, 1, 100, 32), (64, 32), false, 4);
    attention_case(&mut rng, (1, 1, 96, 16), (64, 16), true, 4);
}

/// `kernels/flash_attention_fa3.py` on sm_90a: the softmax of block j waits for `Q·K_jᵀ` only
/// (`wgmma.wait_group 1`: the later-issued `P·V` of block j-1 runs on under it, FA3's order),
/// and the loop's yield then waits for everything (`wait_group 0`). Guards the emitter's
/// partial waits (`Emitter::groups_after_operands`); the results are the catalog's to check.
#[test]
fn a_softmax_under_the_previous_blocks_pv_waits_for_its_own_scores_only() {
    let shape = [1, 2, 256, 64];
    let t = || A::T(HostTensor::zeros(DType::F16, &shape));
    let args = [
        ("q", t()),
        ("k", t()),
        ("v", t()),
        ("o", t()),
        ("sm_scale", A::F(0.125)),
        ("Z", A::I(1)),
        ("H", A::I(2)),
        ("N_CTX", A::I(256)),
        ("BLOCK_M", A::C(128)),
        ("BLOCK_N", A::C(64)),
        ("HEAD_DIM", A::C(64)),
        ("IS_CAUSAL", A::CB(false)),
    ];
    let (m, kernel, _) = front("flash_attention_fa3.py", "attn_fwd_desc_fa3", &args);
    let kernels = compile_all(&m, &kernel, 8, 3);
    let hopper = kernels.iter().find(|k| k.ptx.contains("wgmma.mma_async")).expect("sm_90a uses wgmma");
    let ptx = &hopper.ptx;
    let body = &ptx[ptx.find("$L_for_head").expect("a loop")..ptx.find("bra.uni $L_for_head").expect("its back edge")];
    let partial = body.find("wgmma.wait_group.sync.aligned 1").unwrap_or_else(|| panic!("no partial wait:\n{body}"));
    let full = body.rfind("wgmma.wait_group.sync.aligned 0").expect("the yield's wait");
    let exps = body[partial..full].matches("ex2.approx").count();
    assert!(exps >= 32, "the softmax's exponentials sit between the two waits: {exps}");
    assert_eq!(body.matches("wgmma.wait_group").count(), 2, "one partial and one full wait per iteration");
}
