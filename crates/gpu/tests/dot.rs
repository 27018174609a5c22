//! `dot` on tensor cores and with FMAs: tiled matmuls with masked edges and a K loop,
//! emulator vs interpreter.

mod common;
use common::*;
use trident_core::DType;

/// C (f32) = A (MxK, `dt`) @ B (KxN, `dt`), tiles BMxBN, K in steps of BK; every edge masked.
/// A is row-major (stride `sam`), B row-major (stride `sbk`), C row-major (stride `scm`).
fn matmul(bm: u32, bn: u32, bk: u32, dt: &str, precision: &str) -> String {
    matmul_k(bm, bn, bk, dt, precision, "")
}

/// `k_attr`: `{divisibility = 16}` when K is a multiple of 16 (enables vectorised, pipelined loads).
fn matmul_k(bm: u32, bn: u32, bk: u32, dt: &str, precision: &str, k_attr: &str) -> String {
    let acc = if dt == "i8" { "i32" } else { "f32" };
    let zero = if dt == "i8" { "0" } else { "0.0" };
    format!(
        r#"
kernel @matmul(%a: ptr<{dt}> {{divisibility = 16}}, %b: ptr<{dt}> {{divisibility = 16}}, %c: ptr<{acc}> {{divisibility = 16}}, %M: i32, %N: i32, %K: i32 {k_attr}, %sam: i32 {{divisibility = 16}}, %sbk: i32 {{divisibility = 16}}, %scm: i32 {{divisibility = 16}}) {{
  %pm = program_id [axis = 0] : i32
  %pn = program_id [axis = 1] : i32
  %cbm = constant [value = {bm}] : i32
  %cbn = constant [value = {bn}] : i32
  %cbk = constant [value = {bk}] : i32
  %m0 = mul %pm, %cbm : i32
  %n0 = mul %pn, %cbn : i32
  %ar = arange [start = 0, end = {bm}] : tensor<{bm}xi32>
  %m0s = splat %m0 : tensor<{bm}xi32>
  %rows = add %m0s, %ar : tensor<{bm}xi32>
  %ac = arange [start = 0, end = {bn}] : tensor<{bn}xi32>
  %n0s = splat %n0 : tensor<{bn}xi32>
  %cols = add %n0s, %ac : tensor<{bn}xi32>
  %ks = arange [start = 0, end = {bk}] : tensor<{bk}xi32>
  // A pointers: rows[:, None] * sam + ks[None, :]
  %r1 = expand_dims %rows [axis = 1] : tensor<{bm}x1xi32>
  %sams = splat %sam : tensor<{bm}x1xi32>
  %ra = mul %r1, %sams : tensor<{bm}x1xi32>
  %rab = broadcast %ra : tensor<{bm}x{bk}xi32>
  %k0e = expand_dims %ks [axis = 0] : tensor<1x{bk}xi32>
  %kab = broadcast %k0e : tensor<{bm}x{bk}xi32>
  %aoff = add %rab, %kab : tensor<{bm}x{bk}xi32>
  %as = splat %a : tensor<{bm}x{bk}xptr<{dt}>>
  %ap0 = addptr %as, %aoff : tensor<{bm}x{bk}xptr<{dt}>>
  // B pointers: ks[:, None] * sbk + cols[None, :]
  %k1e = expand_dims %ks [axis = 1] : tensor<{bk}x1xi32>
  %sbks = splat %sbk : tensor<{bk}x1xi32>
  %kb = mul %k1e, %sbks : tensor<{bk}x1xi32>
  %kbb = broadcast %kb : tensor<{bk}x{bn}xi32>
  %c0e = expand_dims %cols [axis = 0] : tensor<1x{bn}xi32>
  %cbb = broadcast %c0e : tensor<{bk}x{bn}xi32>
  %boff = add %kbb, %cbb : tensor<{bk}x{bn}xi32>
  %bs = splat %b : tensor<{bk}x{bn}xptr<{dt}>>
  %bp0 = addptr %bs, %boff : tensor<{bk}x{bn}xptr<{dt}>>
  // Masks pieces
  %Ms = splat %M : tensor<{bm}x1xi32>
  %rowok = cmp %r1, %Ms [pred = lt] : tensor<{bm}x1xi1>
  %rowokb = broadcast %rowok : tensor<{bm}x{bk}xi1>
  %Ns = splat %N : tensor<1x{bn}xi32>
  %colok = cmp %c0e, %Ns [pred = lt] : tensor<1x{bn}xi1>
  %colokb = broadcast %colok : tensor<{bk}x{bn}xi1>
  %acc0 = constant [value = {zero}] : tensor<{bm}x{bn}x{acc}>
  %one = constant [value = 1] : i32
  %zero = constant [value = 0] : i32
  %kp = add %K, %cbk : i32
  %kp1 = sub %kp, %one : i32
  %nk = div %kp1, %cbk : i32
  %bkstep = mul %cbk, %sbk : i32
  %bksteps = splat %bkstep : tensor<{bk}x{bn}xi32>
  %akstep = splat %cbk : tensor<{bm}x{bk}xi32>
  %az = constant [value = {zero}] : tensor<{bm}x{bk}x{dt}>
  %bz = constant [value = {zero}] : tensor<{bk}x{bn}x{dt}>
  %accf, %apf, %bpf = for %zero, %nk, %one, %acc0, %ap0, %bp0 {{
  ^(%kk: i32, %acc: tensor<{bm}x{bn}x{acc}>, %ap: tensor<{bm}x{bk}xptr<{dt}>>, %bp: tensor<{bk}x{bn}xptr<{dt}>>):
    %kdone = mul %kk, %cbk : i32
    %kleft = sub %K, %kdone : i32
    %kls = splat %kleft : tensor<1x{bk}xi32>
    %kin = cmp %k0e, %kls [pred = lt] : tensor<1x{bk}xi1>
    %kinb = broadcast %kin : tensor<{bm}x{bk}xi1>
    %am = and %rowokb, %kinb : tensor<{bm}x{bk}xi1>
    %kls2 = splat %kleft : tensor<{bk}x1xi32>
    %kin2 = cmp %k1e, %kls2 [pred = lt] : tensor<{bk}x1xi1>
    %kin2b = broadcast %kin2 : tensor<{bk}x{bn}xi1>
    %bmask = and %kin2b, %colokb : tensor<{bk}x{bn}xi1>
    %ablk = load %ap, %am, %az : tensor<{bm}x{bk}x{dt}>
    %bblk = load %bp, %bmask, %bz : tensor<{bk}x{bn}x{dt}>
    %acc2 = dot %ablk, %bblk, %acc [precision = {precision}] : tensor<{bm}x{bn}x{acc}>
    %ap2 = addptr %ap, %akstep : tensor<{bm}x{bk}xptr<{dt}>>
    %bp2 = addptr %bp, %bksteps : tensor<{bk}x{bn}xptr<{dt}>>
    yield %acc2, %ap2, %bp2
  }} : tensor<{bm}x{bn}x{acc}>, tensor<{bm}x{bk}xptr<{dt}>>, tensor<{bk}x{bn}xptr<{dt}>>
  // C pointers and mask
  %scms = splat %scm : tensor<{bm}x1xi32>
  %rc = mul %r1, %scms : tensor<{bm}x1xi32>
  %rcb = broadcast %rc : tensor<{bm}x{bn}xi32>
  %ccb = broadcast %c0e : tensor<{bm}x{bn}xi32>
  %coff = add %rcb, %ccb : tensor<{bm}x{bn}xi32>
  %cs = splat %c : tensor<{bm}x{bn}xptr<{acc}>>
  %cp = addptr %cs, %coff : tensor<{bm}x{bn}xptr<{acc}>>
  %rokc = broadcast %rowok : tensor<{bm}x{bn}xi1>
  %cokc = broadcast %colok : tensor<{bm}x{bn}xi1>
  %cmask = and %rokc, %cokc : tensor<{bm}x{bn}xi1>
  store %cp, %accf, %cmask
  return
}}
"#
    )
}

fn run_matmul(bm: u32, bn: u32, bk: u32, dt: DType, precision: &str, warps: u32, sizes: &[(usize, usize, usize)]) {
    run_matmul_stages(bm, bn, bk, dt, precision, warps, 3, sizes)
}

#[allow(clippy::too_many_arguments)]
fn run_matmul_stages(
    bm: u32,
    bn: u32,
    bk: u32,
    dt: DType,
    precision: &str,
    warps: u32,
    stages: u32,
    sizes: &[(usize, usize, usize)],
) {
    run_matmul_text(bm, bn, bk, dt, precision, warps, stages, sizes, "")
}

#[allow(clippy::too_many_arguments)]
fn run_matmul_text(
    bm: u32,
    bn: u32,
    bk: u32,
    dt: DType,
    precision: &str,
    warps: u32,
    stages: u32,
    sizes: &[(usize, usize, usize)],
    k_attr: &str,
) {
    let name = match dt {
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::F32 => "f32",
        DType::I8 => "i8",
        _ => unreachable!(),
    };
    let m = parse(&matmul_k(bm, bn, bk, name, precision, k_attr));
    let mut rng = Rng(seed());
    let acc = if dt == DType::I8 { DType::I32 } else { DType::F32 };
    for &(mm, nn, kk) in sizes {
        // Strides padded to multiples of 16 elements (the divisibility the kernel assumes).
        let (sam, sbk, scm) = (kk.div_ceil(16) * 16, nn.div_ceil(16) * 16, nn.div_ceil(16) * 16);
        let scale = if dt == DType::I8 { 20.0 } else { 1.0 };
        let args = vec![
            Arg::Tensor(random(&mut rng, dt, &[mm * sam], scale)),
            Arg::Tensor(random(&mut rng, dt, &[kk * sbk], scale)),
            Arg::Tensor(random(&mut rng, acc, &[mm * scm], 1.0)),
            i32_arg(mm as i32),
            i32_arg(nn as i32),
            i32_arg(kk as i32),
            i32_arg(sam as i32),
            i32_arg(sbk as i32),
            i32_arg(scm as i32),
        ];
        let grid = [(mm as u32).div_ceil(bm), (nn as u32).div_ceil(bn), 1];
        // Products of rounded inputs summed in different orders: relative to the sum of |terms|.
        let tol = match (dt, precision) {
            (DType::I8, _) => None,
            (DType::F32, "tf32") => Some((5e-3, 5e-3 * (kk as f64).sqrt())),
            _ => Some((1e-4, 1e-4 * (kk as f64).sqrt())),
        };
        differential_stages(&m, "matmul", warps, stages, grid, &args, tol);
    }
}

#[test]
fn f16_matmul_on_tensor_cores() {
    run_matmul(64, 64, 32, DType::F16, "tf32", 4, &[(64, 64, 32), (100, 70, 50), (17, 9, 33)]);
    let k = compile(&parse(&matmul(64, 64, 32, "f16", "tf32")), "matmul", 4);
    assert!(k.ptx.contains("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
}

#[test]
fn bf16_matmul_on_tensor_cores_with_other_warps() {
    run_matmul(32, 64, 16, DType::BF16, "tf32", 2, &[(40, 64, 48)]);
    run_matmul(128, 32, 32, DType::BF16, "tf32", 8, &[(130, 31, 64)]);
}

#[test]
fn tf32_and_ieee_f32_matmuls() {
    run_matmul(32, 32, 16, DType::F32, "tf32", 4, &[(33, 40, 40)]);
    run_matmul(32, 32, 16, DType::F32, "ieee", 4, &[(33, 40, 40)]);
    run_matmul(32, 32, 16, DType::F32, "tf32x3", 4, &[(33, 40, 40)]);
}

#[test]
fn int8_matmul_is_exact() {
    run_matmul(32, 32, 32, DType::I8, "tf32", 4, &[(32, 32, 64), (45, 20, 70)]);
}

#[test]
fn pipelined_loops_of_every_depth_and_trip_count() {
    // K = 0 (no iteration), one partial iteration, fewer iterations than stages, many.
    let sizes = [(40usize, 24usize, 0usize), (40, 24, 16), (40, 24, 80), (64, 64, 304)];
    for stages in [1u32, 2, 3, 4] {
        run_matmul_text(32, 32, 32, DType::F16, "tf32", 4, stages, &sizes, "{divisibility = 16}");
    }
    run_matmul_text(64, 32, 32, DType::I8, "tf32", 4, 3, &[(64, 32, 96)], "{divisibility = 16}");
    run_matmul_text(32, 32, 16, DType::F32, "tf32", 4, 3, &[(32, 32, 64)], "{divisibility = 16}");
    let k = compile_stages(&parse(&matmul_k(64, 64, 32, "f16", "tf32", "{divisibility = 16}")), "matmul", 4, 3);
    assert!(k.ptx.contains("cp.async.cg.shared.global"), "not pipelined");
    assert!(k.ptx.contains("cp.async.wait_group 1"));
}

/// `tl.dot(a, b, out_dtype=tl.float16)` on f16 operands: the f16-accumulating `mma.sync`
/// (rounded after every k-step of 16, as the interpreter rounds), not an FMA loop; bit for
/// bit the interpreter's on every target, with a K loop carrying the f16 accumulator.
#[test]
fn f16_accumulating_dot_on_tensor_cores() {
    let src = r#"
import triton
import triton.language as tl

@triton.jit
def dot16(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, BK)
    acc = tl.zeros((M, N), dtype=tl.float16)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :])
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc, out_dtype=tl.float16)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
"#;
    let mut rng = Rng(seed());
    let (m, n, k) = (32usize, 32usize, 64usize);
    let args = [
        ("a_ptr", A::T(random(&mut rng, DType::F16, &[m, k], 1.0))),
        ("b_ptr", A::T(random(&mut rng, DType::F16, &[k, n], 1.0))),
        ("c_ptr", A::T(poisoned(DType::F16, &[m, n]))),
        ("M", A::C(m as i64)),
        ("N", A::C(n as i64)),
        ("K", A::C(k as i64)),
        ("BK", A::C(32)),
    ];
    let (module, kernel, rt) = front_text("dot16.py", src, "dot16", &args);
    for p in compile_all(&module, &kernel, 4, 2) {
        assert!(p.ptx.contains(".f16.f16.f16.f16"), "{}: no f16-accumulating mma", p.target);
        assert!(!p.ptx.contains("fma.rn.f32"), "{}: an FMA loop", p.target);
    }
    differential(&module, &kernel, 4, [1, 1, 1], &rt, Some((0.0, 0.0)));
}

/// One batched-matmul problem of `kernels/batched_matmul.py`.
#[derive(Clone, Copy, Debug)]
struct Bmm {
    /// Operand and result element types.
    dt: DType,
    acc: DType,
    /// `input_precision="ieee"`.
    ieee: bool,
    /// BLOCK_B, BLOCK_M, BLOCK_N, BLOCK_K.
    block: (u32, u32, u32, u32),
    warps: u32,
    stages: u32,
    /// B, M, N, K.
    size: (usize, usize, usize, usize),
}

/// Compiles the batched matmul for sm_80, sm_90 and sm_90a (ptxas-clean each), runs every
/// target's PTX on the emulator and the kernel on the interpreter with the same fresh random
/// inputs (C poisoned), compares; returns each target's PTX.
fn run_bmm(p: Bmm, rng: &mut Rng) -> Vec<(trident_gpu::Target, String)> {
    let (bb, bm, bn, bk) = p.block;
    let (nb, m, n, k) = p.size;
    let scale = if p.dt.is_int() { 20.0 } else { 1.0 };
    let args = [
        ("a", A::T(random(rng, p.dt, &[nb, m, k], scale))),
        ("b", A::T(random(rng, p.dt, &[nb, k, n], scale))),
        ("c", A::T(poisoned(p.acc, &[nb, m, n]))),
        ("B", A::I(nb as i64)),
        ("M", A::I(m as i64)),
        ("N", A::I(n as i64)),
        ("K", A::I(k as i64)),
        ("BLOCK_B", A::C(bb as i64)),
        ("BLOCK_M", A::C(bm as i64)),
        ("BLOCK_N", A::C(bn as i64)),
        ("BLOCK_K", A::C(bk as i64)),
        ("IEEE", A::CB(p.ieee)),
    ];
    let (module, kernel, rt) = front("batched_matmul.py", "bmm_kernel", &args);
    let grid = [(nb as u32).div_ceil(bb), (m as u32).div_ceil(bm), (n as u32).div_ceil(bn)];
    // Products of rounded inputs summed in different orders: relative to the sum of |terms|.
    // The f16-accumulating form rounds where the interpreter rounds: bit for bit.
    let tol = match (p.dt, p.acc) {
        (_, DType::I32) | (_, DType::F16) => Some((0.0, 0.0)),
        (DType::F32, _) if !p.ieee => Some((5e-3, 5e-3 * (k as f64).sqrt())),
        _ => Some((1e-4, 1e-4 * (k as f64).sqrt())),
    };
    let want = run_interp(&module, &kernel, grid, &rt);
    let mut out = vec![];
    for target in [trident_gpu::Target::Sm80, trident_gpu::Target::Sm90, trident_gpu::Target::Sm90a] {
        let opts = trident_gpu::GpuOptions { target, num_warps: p.warps, num_stages: p.stages, ..Default::default() };
        let kp = trident_gpu::emit_ptx(&module, &kernel, &opts)
            .unwrap_or_else(|d| panic!("compiling {p:?} for {target}: {}", d.render(&module.files)));
        ptxas_ok(&kp.ptx, target.arch());
        let got = run_emu(&kp, grid, &rt);
        assert_same(&got, &want, tol, &format!("bmm {p:?} on {target}"));
        out.push((target, kp.ptx));
    }
    out
}

fn count(ptx: &str, what: &str) -> usize {
    ptx.matches(what).count()
}

/// Batched (rank-3) dots on tensor cores: f16 and bf16 into f32 at B = 1, 2, 4, 8, tiles of
/// 16 to 64, 1, 4 and 8 warps, ragged edges in every dim, a K loop (pipelined with `cp.async`
/// where the loads allow); every target's PTX agrees with the interpreter and uses
/// `mma.sync` with `ldmatrix`, no FMA.
#[test]
fn batched_f16_bf16_dots_on_tensor_cores() {
    let mut rng = Rng(seed());
    let cases = [
        // (dt, block, warps, size, pipelined: K a multiple of 16, the ring fits on sm_80)
        (DType::F16, (1, 16, 16, 16), 1, (3, 16, 16, 16), true),
        (DType::F16, (2, 32, 32, 32), 4, (3, 40, 24, 64), true),
        (DType::F16, (4, 16, 32, 16), 4, (4, 16, 32, 48), true),
        (DType::F16, (8, 16, 16, 32), 8, (8, 16, 16, 32), true),
        (DType::F16, (2, 64, 64, 32), 8, (2, 64, 64, 64), true),
        (DType::F16, (4, 32, 32, 16), 1, (5, 50, 30, 20), false),
        (DType::BF16, (2, 32, 16, 16), 4, (2, 32, 16, 33), false),
        (DType::BF16, (8, 16, 64, 64), 4, (9, 16, 64, 64), false),
        (DType::BF16, (1, 64, 64, 64), 8, (2, 64, 64, 128), true),
    ];
    for (dt, block, warps, size, pipelined) in cases {
        let p = Bmm { dt, acc: DType::F32, ieee: false, block, warps, stages: 3, size };
        for (target, ptx) in run_bmm(p, &mut rng) {
            eprintln!(
                "{p:?} {target}: {} mma, {} ldmatrix, {} cp.async",
                count(&ptx, "mma.sync"),
                count(&ptx, "ldmatrix"),
                count(&ptx, "cp.async.c")
            );
            let want = if dt == DType::F16 { "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" } else { "bf16.bf16" };
            assert!(ptx.contains(want), "{p:?} {target}: no mma");
            assert!(!ptx.contains("fma.rn.f32"), "{p:?} {target}: an FMA loop");
            assert!(!ptx.contains("wgmma"), "{p:?} {target}: wgmma has no batch dim");
            // Operands reach the fragments through ldmatrix (from the conversion's tile or
            // the pipeline's ring slot).
            assert!(ptx.contains("ldmatrix.sync.aligned.m8n8.x"), "{p:?} {target}: no ldmatrix");
            if pipelined {
                assert!(ptx.contains("cp.async.cg.shared.global"), "{p:?} {target}: not pipelined");
            }
        }
    }
}

/// The other operand types of the rank-2 tensor-core path, batched: f32 as tf32 (the default
/// precision; ieee is below), int8 into i32 (exact), f16 accumulating in f16 (bit for bit the
/// interpreter's rounding), each on `mma.sync`.
#[test]
fn batched_tf32_int8_and_f16_accumulating_dots_on_tensor_cores() {
    let mut rng = Rng(seed());
    let cases = [
        // (dt, acc, block, warps, size, instruction)
        (DType::F32, DType::F32, (2, 32, 32, 16), 4, (3, 40, 24, 40), "m16n8k8.row.col.f32.tf32.tf32.f32"),
        (DType::F32, DType::F32, (4, 16, 16, 32), 8, (4, 16, 16, 64), "m16n8k8.row.col.f32.tf32.tf32.f32"),
        (DType::I8, DType::I32, (2, 32, 32, 32), 4, (2, 32, 32, 96), "m16n8k32.row.col.s32.s8.s8.s32"),
        (DType::I8, DType::I32, (8, 16, 16, 32), 4, (7, 20, 9, 45), "m16n8k32.row.col.s32.s8.s8.s32"),
        (DType::F16, DType::F16, (2, 32, 32, 32), 4, (2, 32, 32, 64), ".f16.f16.f16.f16"),
        (DType::F16, DType::F16, (4, 16, 16, 16), 1, (4, 16, 16, 48), ".f16.f16.f16.f16"),
    ];
    for (dt, acc, block, warps, size, instr) in cases {
        let p = Bmm { dt, acc, ieee: false, block, warps, stages: 2, size };
        for (target, ptx) in run_bmm(p, &mut rng) {
            assert!(ptx.contains(instr), "{p:?} {target}: no {instr}");
            assert!(!ptx.contains("fma.rn.f32") && !ptx.contains("mad.lo.s32 %r"), "{p:?} {target}: an FMA loop");
        }
    }
}

/// Where tensor cores do not apply the batched dot stays on the exact FMA loop: f32 with
/// `input_precision="ieee"`, and tiles below one instruction (M < 16 or N < 8; the front end
/// already rejects a K below the instruction's, as Triton does).
#[test]
fn batched_dots_tensor_cores_cannot_take_stay_on_the_fma_loop() {
    let mut rng = Rng(seed());
    let cases = [
        // (dt, ieee, block, warps, size)
        (DType::F32, true, (2, 16, 16, 16), 4, (3, 20, 16, 24)),
        (DType::F16, false, (2, 8, 16, 16), 4, (2, 8, 16, 32)),
        (DType::F16, false, (4, 16, 4, 16), 1, (4, 16, 4, 16)),
        (DType::BF16, false, (1, 8, 8, 32), 1, (3, 5, 8, 40)),
    ];
    for (dt, ieee, block, warps, size) in cases {
        let p = Bmm { dt, acc: DType::F32, ieee, block, warps, stages: 2, size };
        for (target, ptx) in run_bmm(p, &mut rng) {
            assert!(!ptx.contains("mma.sync"), "{p:?} {target}: mma");
            assert!(ptx.contains("fma.rn.f32"), "{p:?} {target}: no FMA loop");
        }
    }
}

/// Chained batched dots (`p = softmax(q @ kᵀ); p @ v` per batch index, as in batched
/// attention): the softmax reduces along N of a rank-3 mma accumulator, and `p` becomes the
/// A operand of the second dot; both dots on `mma.sync`.
#[test]
fn chained_batched_dots_with_a_softmax_between() {
    let src = r#"
import triton
import triton.language as tl

@triton.jit
def battn(q, k, v, o, BB: tl.constexpr, M: tl.constexpr, N: tl.constexpr, D: tl.constexpr):
    rb = tl.arange(0, BB)
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rd = tl.arange(0, D)
    qq = tl.load(q + rb[:, None, None] * (M * D) + rm[None, :, None] * D + rd[None, None, :])
    kt = tl.load(k + rb[:, None, None] * (N * D) + rn[None, None, :] * D + rd[None, :, None])
    s = tl.dot(qq, kt)
    p = tl.exp(s - tl.max(s, axis=2)[:, :, None])
    p = p / tl.sum(p, axis=2)[:, :, None]
    vv = tl.load(v + rb[:, None, None] * (N * D) + rn[None, :, None] * D + rd[None, None, :])
    out = tl.dot(p.to(tl.float16), vv)
    tl.store(o + rb[:, None, None] * (M * D) + rm[None, :, None] * D + rd[None, None, :], out)
"#;
    let mut rng = Rng(seed());
    for (bb, m, n, d, warps) in [(2usize, 32usize, 32usize, 16usize, 4u32), (4, 16, 64, 32, 8), (1, 64, 16, 16, 4)] {
        let args = [
            ("q", A::T(random(&mut rng, DType::F16, &[bb, m, d], 1.0))),
            ("k", A::T(random(&mut rng, DType::F16, &[bb, n, d], 1.0))),
            ("v", A::T(random(&mut rng, DType::F16, &[bb, n, d], 1.0))),
            ("o", A::T(poisoned(DType::F32, &[bb, m, d]))),
            ("BB", A::C(bb as i64)),
            ("M", A::C(m as i64)),
            ("N", A::C(n as i64)),
            ("D", A::C(d as i64)),
        ];
        let (module, kernel, rt) = front_text("battn.py", src, "battn", &args);
        let want = run_interp(&module, &kernel, [1, 1, 1], &rt);
        for target in [trident_gpu::Target::Sm80, trident_gpu::Target::Sm90, trident_gpu::Target::Sm90a] {
            let opts = trident_gpu::GpuOptions { target, num_warps: warps, ..Default::default() };
            let kp = trident_gpu::emit_ptx(&module, &kernel, &opts)
                .unwrap_or_else(|e| panic!("{target}: {}", e.render(&module.files)));
            ptxas_ok(&kp.ptx, target.arch());
            assert!(kp.ptx.contains("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), "{target}: no mma");
            assert!(!kp.ptx.contains("fma.rn.f32 "), "{target}: an FMA dot");
            // p rounds to f16 where exp differs in its last bits (the emulator's ex2.approx
            // is exact, the interpreter's exp correctly rounded).
            let got = run_emu(&kp, [1, 1, 1], &rt);
            assert_same(&got, &want, Some((2e-3, 2e-3)), &format!("battn {bb}x{m}x{n}x{d} {warps} warps {target}"));
        }
    }
}
