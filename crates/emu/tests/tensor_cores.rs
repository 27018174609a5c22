//! Tensor-core instructions against host matmuls, with fragments laid out as the
//! PTX ISA documents ("Matrix Fragments for mma.m16n8k*": groupID = lane >> 2,
//! threadID_in_group = lane % 4).

#![allow(clippy::needless_range_loop)]

mod common;

use common::*;
use half::{bf16, f16};
use trident_core::{DType, HostTensor};
use trident_emu::KernelArg;

fn u32_tensor(v: &[u32]) -> HostTensor {
    let mut t = HostTensor::zeros(DType::U32, &[v.len()]);
    for (i, x) in v.iter().enumerate() {
        t.data[4 * i..4 * i + 4].copy_from_slice(&x.to_le_bytes());
    }
    t
}

fn u32s(t: &HostTensor) -> Vec<u32> {
    (0..t.numel()).map(|i| t.get_bits(i) as u32).collect()
}

/// A kernel that loads `na`/`nb`/`nc` fragment registers per lane from global
/// arrays (lane-major), runs `mma_op`, and stores the `nd` result registers.
fn mma_kernel(mma_op: &str, na: usize, nb: usize, nc: usize, nd: usize) -> String {
    let mut s = String::from(
        ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)\n{\n .reg .b32 %a<4>; .reg .b32 %b<2>; .reg .b32 %c<4>; .reg .b32 %d<4>; .reg .b32 %r<4>; .reg .b64 %rd<16>;\n mov.u32 %r0, %tid.x;\n",
    );
    for (name, n, reg) in [("pa", na, "a"), ("pb", nb, "b"), ("pc", nc, "c")] {
        s += &format!(" ld.param.u64 %rd1, [{name}]; mul.wide.u32 %rd2, %r0, {}; add.s64 %rd3, %rd1, %rd2;\n", 4 * n);
        for j in 0..n {
            s += &format!(" ld.global.b32 %{reg}{j}, [%rd3+{}];\n", 4 * j);
        }
    }
    let list = |r: &str, n: usize| (0..n).map(|j| format!("%{r}{j}")).collect::<Vec<_>>().join(", ");
    s += &format!(
        " {mma_op} {{{}}}, {{{}}}, {{{}}}, {{{}}};\n",
        list("d", nd),
        list("a", na),
        list("b", nb),
        list("c", nc)
    );
    s += &format!(" ld.param.u64 %rd1, [pd]; mul.wide.u32 %rd2, %r0, {}; add.s64 %rd3, %rd1, %rd2;\n", 4 * nd);
    for j in 0..nd {
        s += &format!(" st.global.b32 [%rd3+{}], %d{j};\n", 4 * j);
    }
    s + " ret;\n}\n"
}

fn run_mma(ptx: &str, fa: &[u32], fb: &[u32], fc: &[u32], nd: usize) -> Vec<u32> {
    let mut args = vec![
        KernelArg::Buffer(u32_tensor(fa)),
        KernelArg::Buffer(u32_tensor(fb)),
        KernelArg::Buffer(u32_tensor(fc)),
        KernelArg::Buffer(poisoned(DType::U32, &[32 * nd])),
    ];
    run(ptx, "k", [1, 1, 1], [32, 1, 1], &mut args).unwrap_or_else(|e| panic!("{e}"));
    u32s(buf(&args, 3))
}

/// The accumulator layout (16×8, four 32-bit registers): c_j at row g + 8*(j/2), col 2t + j%2.
fn acc_pos(lane: usize, j: usize) -> (usize, usize) {
    (lane / 4 + 8 * (j / 2), 2 * (lane % 4) + j % 2)
}

#[test]
fn mma_m16n8k16_f16_f32_fragments() {
    for (bf, name) in [(false, "f16"), (true, "bf16")] {
        let mut rng = Rng(21 + bf as u64);
        let enc = |x: f64| if bf { bf16::from_f64(x).to_bits() } else { f16::from_f64(x).to_bits() };
        let dec = |b: u16| if bf { bf16::from_bits(b).to_f64() } else { f16::from_bits(b).to_f64() };
        let a: Vec<Vec<u16>> = (0..16).map(|_| (0..16).map(|_| enc(rng.uniform() * 2.0)).collect()).collect();
        let b: Vec<Vec<u16>> = (0..16).map(|_| (0..8).map(|_| enc(rng.uniform() * 2.0)).collect()).collect();
        let c: Vec<Vec<f32>> = (0..16).map(|_| (0..8).map(|_| (rng.uniform() * 4.0) as f32).collect()).collect();
        // ISA layout for A (.f16/.bf16, m16n8k16): a_i at row g (+8 for i in {2,3,6,7}),
        // col 2t + (i&1) (+8 for i >= 4); register j holds a_{2j}, a_{2j+1}.
        let mut fa = vec![0u32; 32 * 4];
        let mut fb = vec![0u32; 32 * 2];
        let mut fc = vec![0u32; 32 * 4];
        for lane in 0..32 {
            let (g, t) = (lane / 4, lane % 4);
            for i in 0..8 {
                let row = g + if matches!(i, 2 | 3 | 6 | 7) { 8 } else { 0 };
                let col = 2 * t + (i & 1) + if i >= 4 { 8 } else { 0 };
                fa[lane * 4 + i / 2] |= (a[row][col] as u32) << (16 * (i & 1));
            }
            // B: b_i at row 2t + (i&1) (+8 for i >= 2), col g.
            for i in 0..4 {
                let row = 2 * t + (i & 1) + if i >= 2 { 8 } else { 0 };
                fb[lane * 2 + i / 2] |= (b[row][g] as u32) << (16 * (i & 1));
            }
            for j in 0..4 {
                let (r, cc) = acc_pos(lane, j);
                fc[lane * 4 + j] = c[r][cc].to_bits();
            }
        }
        let op = format!("mma.sync.aligned.m16n8k16.row.col.f32.{name}.{name}.f32");
        let got = run_mma(&mma_kernel(&op, 4, 2, 4, 4), &fa, &fb, &fc, 4);
        for lane in 0..32 {
            for j in 0..4 {
                let (r, cc) = acc_pos(lane, j);
                let want: f64 = (0..16).map(|k| dec(a[r][k]) * dec(b[k][cc])).sum::<f64>() + c[r][cc] as f64;
                let g = f32::from_bits(got[lane * 4 + j]) as f64;
                assert!((g - want).abs() < 1e-5 * (1.0 + want.abs()), "{name} D[{r}][{cc}] = {g}, want {want}");
            }
        }
    }
}

#[test]
fn mma_m16n8k8_tf32_fragments() {
    let mut rng = Rng(23);
    let a: Vec<Vec<f32>> = (0..16).map(|_| (0..8).map(|_| rng.uniform() as f32).collect()).collect();
    let b: Vec<Vec<f32>> = (0..8).map(|_| (0..8).map(|_| rng.uniform() as f32).collect()).collect();
    let tf = |x: f32| f32::from_bits(x.to_bits() & !0x1fff) as f64;
    let mut fa = vec![0u32; 32 * 4];
    let mut fb = vec![0u32; 32 * 2];
    for lane in 0..32 {
        let (g, t) = (lane / 4, lane % 4);
        // a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); b0 (t, g), b1 (t+4, g).
        for j in 0..4 {
            fa[lane * 4 + j] = a[g + 8 * (j & 1)][t + 4 * (j >> 1)].to_bits();
        }
        for j in 0..2 {
            fb[lane * 2 + j] = b[t + 4 * j][g].to_bits();
        }
    }
    let fc = vec![0u32; 32 * 4];
    let got = run_mma(&mma_kernel("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 4, 2, 4, 4), &fa, &fb, &fc, 4);
    for lane in 0..32 {
        for j in 0..4 {
            let (r, c) = acc_pos(lane, j);
            let want: f64 = (0..8).map(|k| tf(a[r][k]) * tf(b[k][c])).sum();
            let g = f32::from_bits(got[lane * 4 + j]) as f64;
            assert!((g - want).abs() < 1e-5, "tf32 D[{r}][{c}] = {g}, want {want}");
        }
    }
}

#[test]
fn mma_m16n8k32_s8_fragments() {
    let mut rng = Rng(24);
    let a: Vec<Vec<i8>> = (0..16).map(|_| (0..32).map(|_| rng.next_u64() as i8).collect()).collect();
    let b: Vec<Vec<i8>> = (0..32).map(|_| (0..8).map(|_| rng.next_u64() as i8).collect()).collect();
    let mut fa = vec![0u32; 32 * 4];
    let mut fb = vec![0u32; 32 * 2];
    let mut fc = vec![0u32; 32 * 4];
    for lane in 0..32 {
        let (g, t) = (lane / 4, lane % 4);
        // a_i: row g (+8 for i in 4..8 and 12..16), col 4t + (i&3) (+16 for i >= 8).
        for i in 0..16 {
            let row = g + if (4..8).contains(&i) || i >= 12 { 8 } else { 0 };
            let col = 4 * t + (i & 3) + if i >= 8 { 16 } else { 0 };
            fa[lane * 4 + i / 4] |= (a[row][col] as u8 as u32) << (8 * (i & 3));
        }
        // b_i: row 4t + (i&3) (+16 for i >= 4), col g.
        for i in 0..8 {
            let row = 4 * t + (i & 3) + if i >= 4 { 16 } else { 0 };
            fb[lane * 2 + i / 4] |= (b[row][g] as u8 as u32) << (8 * (i & 3));
        }
        for j in 0..4 {
            fc[lane * 4 + j] = (lane * 10 + j) as u32;
        }
    }
    let got = run_mma(&mma_kernel("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", 4, 2, 4, 4), &fa, &fb, &fc, 4);
    for lane in 0..32 {
        for j in 0..4 {
            let (r, c) = acc_pos(lane, j);
            let want: i32 = (0..32).map(|k| a[r][k] as i32 * b[k][c] as i32).sum::<i32>() + (lane * 10 + j) as i32;
            assert_eq!(got[lane * 4 + j] as i32, want, "s8 D[{r}][{c}]");
        }
    }
}

#[test]
fn mma_m16n8k8_f16_accumulator() {
    let mut rng = Rng(25);
    let a: Vec<Vec<f16>> = (0..16).map(|_| (0..8).map(|_| f16::from_f64(rng.uniform())).collect()).collect();
    let b: Vec<Vec<f16>> = (0..8).map(|_| (0..8).map(|_| f16::from_f64(rng.uniform())).collect()).collect();
    let mut fa = vec![0u32; 32 * 2];
    let mut fb = vec![0u32; 32];
    let fc = vec![0u32; 32 * 2];
    for lane in 0..32 {
        let (g, t) = (lane / 4, lane % 4);
        // a_i: row g (+8 for i >= 2), col 2t + (i&1); b_i: row 2t + i, col g.
        for i in 0..4 {
            fa[lane * 2 + i / 2] |= (a[g + 8 * (i / 2)][2 * t + (i & 1)].to_bits() as u32) << (16 * (i & 1));
        }
        for i in 0..2 {
            fb[lane] |= (b[2 * t + i][g].to_bits() as u32) << (16 * i);
        }
    }
    let got = run_mma(&mma_kernel("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16", 2, 1, 2, 2), &fa, &fb, &fc, 2);
    for lane in 0..32 {
        let (g, t) = (lane / 4, lane % 4);
        // f16 accumulators: register j holds (row g + 8j, cols 2t, 2t+1).
        for j in 0..2 {
            for s in 0..2 {
                let (r, c) = (g + 8 * j, 2 * t + s);
                let want: f64 = (0..8).map(|k| a[r][k].to_f64() * b[k][c].to_f64()).sum();
                let gv = f16::from_bits((got[lane * 2 + j] >> (16 * s)) as u16).to_f64();
                assert!((gv - want).abs() <= 2e-3 * (1.0 + want.abs()), "D[{r}][{c}] = {gv}, want {want}");
            }
        }
    }
}

/// ldmatrix (plain for A, .trans for B) feeding mma, checked against a host matmul:
/// the fragment layouts ldmatrix produces are the ones mma consumes.
#[test]
fn ldmatrix_feeds_mma() {
    let ptx = r#"
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pd)
{
  .reg .pred %p<2>;
  .reg .b32 %r<40>;
  .reg .b64 %rd<16>;
  .reg .f32 %f<8>;
  .shared .align 16 .b8 sa[512];
  .shared .align 16 .b8 sb[256];
  mov.u32 %r0, %tid.x;
  // Copy A (16x16 f16, 512 B) and B (16x8 f16, 256 B) to shared: 16 B per lane for A, 8 B for B.
  ld.param.u64 %rd1, [pa];
  mul.wide.u32 %rd2, %r0, 16;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd3];
  mov.u32 %r5, sa;
  shl.b32 %r6, %r0, 4;
  add.s32 %r7, %r5, %r6;
  st.shared.v4.b32 [%r7], {%r1, %r2, %r3, %r4};
  ld.param.u64 %rd4, [pb];
  mul.wide.u32 %rd5, %r0, 8;
  add.s64 %rd6, %rd4, %rd5;
  ld.global.v2.b32 {%r1, %r2}, [%rd6];
  mov.u32 %r8, sb;
  shl.b32 %r9, %r0, 3;
  add.s32 %r10, %r8, %r9;
  st.shared.v2.b32 [%r10], {%r1, %r2};
  bar.sync 0;
  // A: lane l points at row l%16, column 8*(l/16).
  and.b32 %r11, %r0, 15;
  shr.u32 %r12, %r0, 4;
  shl.b32 %r13, %r11, 5;
  shl.b32 %r14, %r12, 4;
  add.s32 %r15, %r13, %r14;
  add.s32 %r16, %r5, %r15;
  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r20, %r21, %r22, %r23}, [%r16];
  // B (k x n row-major): lane l < 16 points at row l; .trans gives the col-major fragment.
  shl.b32 %r17, %r11, 4;
  add.s32 %r18, %r8, %r17;
  ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r24, %r25}, [%r18];
  mov.f32 %f0, 0f00000000;
  mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r20, %r21, %r22, %r23}, {%r24, %r25}, {%f0, %f0, %f0, %f0};
  // D: row g (and g+8), columns 2t, 2t+1.
  shr.u32 %r26, %r0, 2;
  and.b32 %r27, %r0, 3;
  shl.b32 %r28, %r26, 3;
  shl.b32 %r29, %r27, 1;
  add.s32 %r30, %r28, %r29;
  ld.param.u64 %rd7, [pd];
  mul.wide.u32 %rd8, %r30, 4;
  add.s64 %rd9, %rd7, %rd8;
  st.global.v2.f32 [%rd9], {%f1, %f2};
  st.global.v2.f32 [%rd9+256], {%f3, %f4};
  ret;
}
"#;
    let mut rng = Rng(26);
    let a = random(&mut rng, DType::F16, &[16, 16], 1.0);
    let b = random(&mut rng, DType::F16, &[16, 8], 1.0);
    let mut want = vec![0f64; 128];
    for i in 0..16 {
        for j in 0..8 {
            want[i * 8 + j] = (0..16).map(|k| a.get_f64(i * 16 + k) * b.get_f64(k * 8 + j)).sum();
        }
    }
    let mut args = vec![KernelArg::Buffer(a), KernelArg::Buffer(b), KernelArg::Buffer(poisoned(DType::F32, &[16, 8]))];
    run(ptx, "k", [1, 1, 1], [32, 1, 1], &mut args).unwrap_or_else(|e| panic!("{e}"));
    let d = buf(&args, 2);
    for i in 0..128 {
        assert!((d.get_f64(i) - want[i]).abs() < 1e-5, "D[{}][{}] = {}, want {}", i / 8, i % 8, d.get_f64(i), want[i]);
    }
}

/// stmatrix is ldmatrix's inverse: load four 8x8 matrices and store them back elsewhere.
#[test]
fn stmatrix_inverts_ldmatrix() {
    let ptx = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 pd)
{
  .reg .b32 %r<40>;
  .reg .b64 %rd<16>;
  .shared .align 16 .b8 s[1024];
  mov.u32 %r0, %tid.x;
  ld.param.u64 %rd1, [pa];
  mul.wide.u32 %rd2, %r0, 16;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd3];
  mov.u32 %r5, s;
  shl.b32 %r6, %r0, 4;
  add.s32 %r7, %r5, %r6;
  st.shared.v4.b32 [%r7], {%r1, %r2, %r3, %r4};
  bar.sync 0;
  ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r10, %r11, %r12, %r13}, [%r7];
  add.s32 %r8, %r7, 512;
  stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%r8], {%r10, %r11, %r12, %r13};
  bar.sync 0;
  ld.shared.v4.b32 {%r1, %r2, %r3, %r4}, [%r8];
  ld.param.u64 %rd4, [pd];
  add.s64 %rd5, %rd4, %rd2;
  st.global.v4.b32 [%rd5], {%r1, %r2, %r3, %r4};
  ret;
}
"#;
    let mut rng = Rng(27);
    let a = random(&mut rng, DType::F16, &[256], 1.0);
    let mut args = vec![KernelArg::Buffer(a.clone()), KernelArg::Buffer(poisoned(DType::F16, &[256]))];
    run(ptx, "k", [1, 1, 1], [32, 1, 1], &mut args).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(buf(&args, 1).data, a.data);
}

/// A warpgroup computes D (64x8, f32) = A (64x16) · B (16x8) with `wgmma.mma_async`, both
/// operands read from shared memory through descriptors of the non-swizzled K-major
/// layout: 8x16-byte core matrices, LBO 128 bytes between the two K halves, SBO 256
/// between groups of 8 rows. The kernel copies a prepared shared-memory image in.
const WGMMA_KERNEL: &str = r#"
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 pimg, .param .u64 pd)
{
  .reg .pred %p<2>;
  .reg .b32 %r<16>;
  .reg .b32 %d<4>;
  .reg .b64 %rd<16>;
  .shared .align 1024 .b8 s[4096];
  mov.u32 %r0, %tid.x;
  ld.param.u64 %rd1, [pimg];
  mov.u32 %r1, s;
  mov.u32 %r2, 0;
$copy:
  shl.b32 %r3, %r2, 7;
  add.u32 %r3, %r3, %r0;
  shl.b32 %r3, %r3, 2;
  cvt.u64.u32 %rd2, %r3;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.b32 %r4, [%rd3];
  add.u32 %r5, %r1, %r3;
  st.shared.b32 [%r5], %r4;
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p0, %r2, 8;
  @%p0 bra $copy;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  // Descriptors: start >> 4, LBO 128 >> 4 = 8 at bit 16, SBO 256 >> 4 = 16 at bit 32.
  shr.u32 %r6, %r1, 4;
  cvt.u64.u32 %rd4, %r6;
  or.b64 %rd5, %rd4, 0x0000001000080000;
  add.u32 %r7, %r6, 128;
  cvt.u64.u32 %rd6, %r7;
  or.b64 %rd7, %rd6, 0x0000001000080000;
  mov.b32 %d0, 0;
  mov.b32 %d1, 0;
  mov.b32 %d2, 0;
  mov.b32 %d3, 0;
  setp.eq.u32 %p1, 0, 0;
  wgmma.fence.sync.aligned;
  wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%d0, %d1, %d2, %d3}, %rd5, %rd7, %p1, 1, 1, 0, 0;
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
  ld.param.u64 %rd8, [pd];
  mul.wide.u32 %rd9, %r0, 16;
  add.s64 %rd10, %rd8, %rd9;
  st.global.v4.b32 [%rd10], {%d0, %d1, %d2, %d3};
  ret;
}
"#;

/// The shared-memory image of A (at 0) and B (at 2048) for [`WGMMA_KERNEL`], and D.
fn wgmma_case(seed: u64) -> (HostTensor, Vec<f64>) {
    let mut rng = Rng(seed);
    let a = random(&mut rng, DType::F16, &[64 * 16], 1.0);
    let b = random(&mut rng, DType::F16, &[16 * 8], 1.0);
    let mut img = HostTensor::zeros(DType::U8, &[4096]);
    // K-major, no swizzle: element (row, k) at (row % 8)*16 + (row / 8)*256 + (k / 8)*128 + (k % 8)*2.
    let at = |row: usize, k: usize| (row % 8) * 16 + (row / 8) * 256 + (k / 8) * 128 + (k % 8) * 2;
    for row in 0..64 {
        for k in 0..16 {
            let o = at(row, k);
            img.data[o..o + 2].copy_from_slice(&(a.get_bits(row * 16 + k) as u16).to_le_bytes());
        }
    }
    for n in 0..8 {
        for k in 0..16 {
            let o = 2048 + at(n, k);
            img.data[o..o + 2].copy_from_slice(&(b.get_bits(k * 8 + n) as u16).to_le_bytes());
        }
    }
    let mut d = vec![0f64; 64 * 8];
    for i in 0..64 {
        for j in 0..8 {
            d[i * 8 + j] = (0..16).map(|k| a.get_f64(i * 16 + k) * b.get_f64(k * 8 + j)).sum();
        }
    }
    (img, d)
}

fn run_wgmma(ptx: &str, img: &HostTensor) -> Result<HostTensor, trident_emu::EmuError> {
    let mut args = vec![KernelArg::Buffer(img.clone()), KernelArg::Buffer(poisoned(DType::F32, &[128 * 4]))];
    run(ptx, "k", [1, 1, 1], [128, 1, 1], &mut args)?;
    Ok(buf(&args, 1).clone())
}

/// Each warp of the warpgroup holds rows 16w.. of D: d[i] of lane (4g + t) is row
/// 16w + g + 8((i % 4) >> 1), column 8(i / 4) + 2t + (i & 1).
#[test]
fn wgmma_from_shared_memory_descriptors() {
    let (img, want) = wgmma_case(31);
    let d = run_wgmma(WGMMA_KERNEL, &img).unwrap_or_else(|e| panic!("{e}"));
    for tid in 0..128 {
        let (w, lane) = (tid / 32, tid % 32);
        let (g, t) = (lane / 4, lane % 4);
        for i in 0..4 {
            let (row, col) = (16 * w + g + 8 * ((i % 4) >> 1), 8 * (i / 4) + 2 * t + (i & 1));
            let got = d.get_f64(tid * 4 + i);
            assert!((got - want[row * 8 + col]).abs() < 1e-5, "D[{row}][{col}] = {got}, want {}", want[row * 8 + col]);
        }
    }
}

/// The asynchronous rules: a wgmma needs a `wgmma.fence` after the last ordinary write of
/// its registers, and D holds nothing usable until `wgmma.wait_group` covers it.
#[test]
fn wgmma_hazards_are_caught() {
    let (img, _) = wgmma_case(32);
    let no_fence = WGMMA_KERNEL.replace("  wgmma.fence.sync.aligned;\n", "");
    let e = run_wgmma(&no_fence, &img).unwrap_err();
    assert!(e.to_string().contains("before any wgmma.fence"), "{e}");
    let late_write =
        WGMMA_KERNEL.replace("  wgmma.fence.sync.aligned;\n", "  wgmma.fence.sync.aligned;\n  mov.b32 %d2, 0;\n");
    let e = run_wgmma(&late_write, &img).unwrap_err();
    assert!(e.to_string().contains("written after the last wgmma.fence"), "{e}");
    // Storing D before waiting stores the in-flight pattern (NaN), not the product.
    let early = WGMMA_KERNEL.replace("  wgmma.wait_group.sync.aligned 0;\n", "").replace(
        "  st.global.v4.b32 [%rd10], {%d0, %d1, %d2, %d3};\n",
        "  st.global.v4.b32 [%rd10], {%d0, %d1, %d2, %d3};\n  wgmma.wait_group.sync.aligned 0;\n",
    );
    let d = run_wgmma(&early, &img).unwrap_or_else(|e| panic!("{e}"));
    assert!((0..512).all(|i| d.get_f64(i).is_nan()));
}
