//! CTA- and launch-level behaviour: barriers, shared memory, atomics, asynchronous
//! copies, calls and printf, the modelled clock, and every kind of error (with the
//! caller's buffers left untouched).

#![allow(clippy::needless_range_loop)]

mod common;

use common::*;
use trident_core::{DType, HostTensor};
use trident_emu::{launch, ErrorKind, KernelArg, LaunchConfig, Module, Ty};

const HEADER: &str = ".version 8.0\n.target sm_80\n.address_size 64\n";

fn u32_buf(n: usize) -> KernelArg {
    KernelArg::Buffer(poisoned(DType::U32, &[n]))
}

/// Each thread writes its tid to shared memory; after a barrier it reads its
/// neighbour's slot (in another warp for lanes at warp edges) and stores it.
fn neighbour_kernel(barrier: &str) -> String {
    format!(
        "{HEADER}
.visible .entry k(.param .u64 out)
{{
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  .shared .align 4 .b8 s[512];
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, s;
  shl.b32 %r2, %r0, 2;
  add.s32 %r3, %r1, %r2;
  mad.lo.s32 %r4, %r0, 3, 1;
  st.shared.u32 [%r3], %r4;
  {barrier}
  add.s32 %r5, %r0, 1;
  and.b32 %r5, %r5, 127;
  shl.b32 %r6, %r5, 2;
  add.s32 %r7, %r1, %r6;
  ld.shared.u32 %r8, [%r7];
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r8;
  ret;
}}"
    )
}

#[test]
fn barrier_orders_shared_memory_across_warps() {
    let mut args = vec![u32_buf(128)];
    run(&neighbour_kernel("bar.sync 0;"), "k", [1, 1, 1], [128, 1, 1], &mut args).unwrap();
    for t in 0..128u64 {
        assert_eq!(buf(&args, 0).get_bits(t as usize), ((t + 1) % 128) * 3 + 1);
    }
    // The same with an explicit thread count, as Triton emits it.
    let mut args = vec![u32_buf(128)];
    run(&neighbour_kernel("barrier.sync 0, 128;"), "k", [1, 1, 1], [128, 1, 1], &mut args).unwrap();
    assert_eq!(buf(&args, 0).get_bits(127), 1);
}

#[test]
fn missing_barrier_is_a_race() {
    let mut args = vec![u32_buf(128)];
    let e = run(&neighbour_kernel(""), "k", [1, 1, 1], [128, 1, 1], &mut args).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Race, "{e}");
    let msg = e.to_string();
    assert!(msg.contains("data race") && msg.contains("shared.u32") && msg.contains("CTA (0,0,0)"), "{msg}");
    // The caller's buffer is untouched.
    assert!(buf(&args, 0).data.iter().all(|&b| b == 0x5a));
    // With race checking off the launch runs (warps happen to run in order here).
    let m = Module::parse(&neighbour_kernel("")).unwrap();
    let cfg = LaunchConfig { block: [128, 1, 1], check_races: false, ..LaunchConfig::default() };
    launch(&m, "k", &cfg, &mut args).unwrap();
}

#[test]
fn barrier_not_reached_by_all_warps_is_a_deadlock() {
    let ptx = format!(
        "{HEADER}
.visible .entry k()
{{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  mov.u32 %r0, %tid.x;
  setp.lt.u32 %p1, %r0, 32;
  @%p1 bra SKIP;
  bar.sync 1, 128;
SKIP:
  ret;
}}"
    );
    let e = run(&ptx, "k", [1, 1, 1], [128, 1, 1], &mut []).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Deadlock, "{e}");
    assert!(e.to_string().contains("barrier 1"), "{e}");
    // Without a count, exited warps do not count: the remaining three complete it.
    let ok = ptx.replace("bar.sync 1, 128;", "bar.sync 0;");
    run(&ok, "k", [1, 1, 1], [128, 1, 1], &mut []).unwrap();
}

fn store_kernel(offset: i64, ty: &str) -> String {
    format!(
        "{HEADER}
.visible .entry k(.param .u64 out, .param .u32 n)
{{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.{ty} [%rd3+{offset}], %r0;
  ret;
}}"
    )
}

#[test]
fn out_of_bounds_store_names_line_cta_and_thread() {
    let ptx = store_kernel(0, "u32");
    let m = Module::parse(&ptx).unwrap();
    let before = poisoned(DType::U32, &[40]);
    let mut args = vec![KernelArg::Buffer(before.clone()), KernelArg::Scalar(40)];
    let cfg = LaunchConfig { grid: [2, 1, 1], block: [64, 1, 1], ..LaunchConfig::default() };
    let e = launch(&m, "k", &cfg, &mut args).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Memory);
    let msg = e.to_string();
    eprintln!("{msg}");
    assert!(msg.contains("out-of-bounds") && msg.contains("offset 160") && msg.contains("line 13"), "{msg}");
    assert_eq!(e.thread, Some([40, 0, 0]), "{msg}");
    assert_eq!(buf(&args, 0), &before, "buffers unchanged after a failed launch");
}

#[test]
fn misaligned_and_null_accesses() {
    let mut args = vec![u32_buf(64), KernelArg::Scalar(0)];
    let e = run(&store_kernel(2, "u32"), "k", [1, 1, 1], [32, 1, 1], &mut args).unwrap_err();
    assert!(e.to_string().contains("misaligned"), "{e}");
    let mut args = vec![KernelArg::Null, KernelArg::Scalar(0)];
    let e = run(&store_kernel(0, "u32"), "k", [1, 1, 1], [32, 1, 1], &mut args).unwrap_err();
    assert!(e.to_string().contains("null pointer"), "{e}");
}

#[test]
fn global_atomics_across_ctas() {
    let ptx = format!(
        "{HEADER}
.visible .entry k(.param .u64 acc, .param .u64 cnt)
{{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .f32 %f<4>;
  ld.param.u64 %rd1, [acc];
  ld.param.u64 %rd2, [cnt];
  mov.u32 %r0, %tid.x;
  cvt.rn.f32.u32 %f1, %r0;
  atom.global.add.f32 %f2, [%rd1], %f1;
  atom.global.add.u32 %r1, [%rd2], 1;
  atom.global.max.s32 %r2, [%rd2+4], %r0;
  red.global.add.u32 [%rd2+8], 2;
  atom.global.cas.b32 %r3, [%rd2+12], 0, 77;
  atom.global.exch.b32 %r4, [%rd2+16], %r0;
  ret;
}}"
    );
    let mut args = vec![
        KernelArg::Buffer(HostTensor::zeros(DType::F32, &[1])),
        KernelArg::Buffer(HostTensor::zeros(DType::U32, &[5])),
    ];
    run(&ptx, "k", [8, 1, 1], [64, 1, 1], &mut args).unwrap();
    assert_eq!(buf(&args, 0).get_f64(0), 8.0 * (0..64).sum::<u32>() as f64);
    let c = buf(&args, 1);
    assert_eq!(c.get_bits(0), 512);
    assert_eq!(c.get_bits(1), 63);
    assert_eq!(c.get_bits(2), 1024);
    assert_eq!(c.get_bits(3), 77);
    assert!(c.get_bits(4) < 64);
}

#[test]
fn shared_atomics_and_histogram() {
    let ptx = format!(
        "{HEADER}
.visible .entry k(.param .u64 out)
{{
  .reg .pred %p<2>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<8>;
  .shared .align 4 .b32 h[8];
  mov.u32 %r0, %tid.x;
  setp.lt.u32 %p1, %r0, 8;
  mov.u32 %r1, h;
  shl.b32 %r2, %r0, 2;
  add.s32 %r3, %r1, %r2;
  @%p1 st.shared.u32 [%r3], 0;
  bar.sync 0;
  and.b32 %r4, %r0, 7;
  shl.b32 %r5, %r4, 2;
  add.s32 %r6, %r1, %r5;
  atom.shared.add.u32 %r7, [%r6], %r0;
  bar.sync 0;
  @%p1 ld.shared.u32 %r8, [%r3];
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd1, %rd2;
  @%p1 st.global.u32 [%rd3], %r8;
  ret;
}}"
    );
    let mut args = vec![u32_buf(8)];
    run(&ptx, "k", [1, 1, 1], [256, 1, 1], &mut args).unwrap();
    for b in 0..8u64 {
        let want: u64 = (0..256u64).filter(|t| t % 8 == b).sum();
        assert_eq!(buf(&args, 0).get_bits(b as usize), want);
    }
}

#[test]
fn cp_async_zero_fill_and_groups() {
    // Lane i copies 16 bytes from in[4i..4i+4] with src-size (i % 5) * 4 (the rest
    // zero-filled), in two commit groups; wait_group 0 then makes all visible.
    let ptx = format!(
        "{HEADER}
.extern .shared .align 16 .b8 smem[];
.visible .entry k(.param .u64 inp, .param .u64 out)
{{
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [inp];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd2, %r0, 16;
  add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r1, smem;
  shl.b32 %r2, %r0, 4;
  add.s32 %r3, %r1, %r2;
  rem.u32 %r4, %r0, 5;
  shl.b32 %r5, %r4, 2;
  cp.async.cg.shared.global [%r3], [%rd3], 16, %r5;
  cp.async.commit_group;
  add.s32 %r6, %r3, 512;
  cp.async.ca.shared.global [%r6], [%rd3], 8;
  cp.async.commit_group;
  cp.async.wait_group 0;
  ld.shared.v4.u32 {{%r7, %r8, %r9, %r10}}, [%r3];
  ld.shared.v2.u32 {{%r11, %r12}}, [%r6];
  ld.param.u64 %rd4, [out];
  mul.wide.u32 %rd5, %r0, 24;
  add.s64 %rd6, %rd4, %rd5;
  st.global.v2.u32 [%rd6], {{%r7, %r8}};
  st.global.v2.u32 [%rd6+8], {{%r9, %r10}};
  st.global.v2.u32 [%rd6+16], {{%r11, %r12}};
  ret;
}}"
    );
    let m = Module::parse(&ptx).unwrap();
    let mut inp = HostTensor::zeros(DType::U32, &[128]);
    for i in 0..128 {
        inp.data[4 * i..4 * i + 4].copy_from_slice(&(1000 + i as u32).to_le_bytes());
    }
    let mut args = vec![KernelArg::Buffer(inp), u32_buf(32 * 6)];
    let cfg = LaunchConfig { block: [32, 1, 1], dynamic_shared_bytes: 1024, ..LaunchConfig::default() };
    launch(&m, "k", &cfg, &mut args).unwrap();
    let out = buf(&args, 1);
    for lane in 0..32u64 {
        let n = lane % 5;
        for k in 0..4u64 {
            let want = if k < n { 1000 + 4 * lane + k } else { 0 };
            assert_eq!(out.get_bits((lane * 6 + k) as usize), want, "lane {lane} word {k}");
        }
        assert_eq!(out.get_bits((lane * 6 + 4) as usize), 1000 + 4 * lane);
    }
    // Without enough dynamic shared memory the copy is out of bounds.
    let cfg = LaunchConfig { block: [32, 1, 1], dynamic_shared_bytes: 256, ..LaunchConfig::default() };
    let e = launch(&m, "k", &cfg, &mut args).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Memory, "{e}");
}

#[test]
fn reading_before_wait_sees_old_data() {
    // A cp.async lands in shared memory only at wait_group: reading before it sees zeros.
    let ptx = format!(
        "{HEADER}
.visible .entry k(.param .u64 inp, .param .u64 out)
{{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .shared .align 16 .b8 s[16];
  ld.param.u64 %rd1, [inp];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, s;
  cp.async.ca.shared.global [%r1], [%rd1], 4;
  cp.async.commit_group;
  ld.shared.u32 %r2, [%r1];
  cp.async.wait_all;
  ld.shared.u32 %r3, [%r1];
  st.global.v2.u32 [%rd2], {{%r2, %r3}};
  ret;
}}"
    );
    let mut inp = HostTensor::zeros(DType::U32, &[1]);
    inp.data.copy_from_slice(&42u32.to_le_bytes());
    let mut args = vec![KernelArg::Buffer(inp), u32_buf(2)];
    run(&ptx, "k", [1, 1, 1], [1, 1, 1], &mut args).unwrap();
    assert_eq!((buf(&args, 1).get_bits(0), buf(&args, 1).get_bits(1)), (0, 42));
}

#[test]
fn device_printf_and_function_calls() {
    let ptx = format!(
        "{HEADER}
.global .align 1 .b8 $fmt[21] = {{116, 105, 100, 61, 37, 100, 32, 120, 61, 37, 46, 50, 102, 32, 37, 115, 33, 10, 0, 0, 0}};
.global .align 1 .b8 $word[3] = {{111, 107, 0}};
.extern .func (.param .b32 func_retval0) vprintf(.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);
.func (.param .b32 ret) twice(.param .b32 x)
{{
  .reg .b32 %t<3>;
  ld.param.b32 %t1, [x];
  shl.b32 %t2, %t1, 1;
  st.param.b32 [ret], %t2;
  ret;
}}
.visible .entry k(.param .u64 out)
{{
  .local .align 8 .b8 __local_depot0[24];
  .reg .b32 %r<8>;
  .reg .b64 %rd<12>;
  .reg .f64 %fd<2>;
  mov.u64 %rd1, __local_depot0;
  cvta.local.u64 %rd2, %rd1;
  mov.u32 %r0, %tid.x;
  {{
    .param .b32 param0;
    st.param.b32 [param0], %r0;
    .param .b32 retval0;
    call.uni (retval0), twice, (param0);
    ld.param.b32 %r1, [retval0];
  }}
  ld.param.u64 %rd3, [out];
  mul.wide.u32 %rd4, %r0, 4;
  add.s64 %rd5, %rd3, %rd4;
  st.global.u32 [%rd5], %r1;
  st.local.u32 [%rd1], %r0;
  cvt.rn.f64.u32 %fd1, %r1;
  st.local.f64 [%rd1+8], %fd1;
  mov.u64 %rd6, $word;
  st.local.u64 [%rd1+16], %rd6;
  mov.u64 %rd7, $fmt;
  {{
    .param .b64 p0;
    st.param.b64 [p0], %rd7;
    .param .b64 p1;
    st.param.b64 [p1], %rd2;
    .param .b32 r0;
    call.uni (r0), vprintf, (p0, p1);
  }}
  ret;
}}"
    );
    let mut args = vec![u32_buf(4)];
    let r = run(&ptx, "k", [1, 1, 1], [4, 1, 1], &mut args).unwrap();
    for t in 0..4u64 {
        assert_eq!(buf(&args, 0).get_bits(t as usize), 2 * t);
    }
    assert_eq!(r.printf, "tid=0 x=0.00 ok!\ntid=1 x=2.00 ok!\ntid=2 x=4.00 ok!\ntid=3 x=6.00 ok!\n");
}

#[test]
fn modelled_clock_is_deterministic_and_grows_with_work() {
    let ptx = |iters: u32| {
        format!(
            "{HEADER}
.visible .entry k(.param .u64 out)
{{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  mov.u64 %rd1, %clock64;
  mov.u32 %r1, 0;
L:
  add.u32 %r1, %r1, 1;
  setp.lt.u32 %p1, %r1, {iters};
  @%p1 bra L;
  mov.u64 %rd2, %clock64;
  sub.s64 %rd3, %rd2, %rd1;
  ld.param.u64 %rd4, [out];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd5, %r0, 8;
  add.s64 %rd6, %rd4, %rd5;
  st.global.u64 [%rd6], %rd3;
  ret;
}}"
        )
    };
    let go = |iters| {
        let mut args = vec![KernelArg::Buffer(HostTensor::zeros(DType::U64, &[64]))];
        let r = run(&ptx(iters), "k", [4, 1, 1], [64, 1, 1], &mut args).unwrap();
        (buf(&args, 0).get_bits(0), r.cycles, r.lane_instructions)
    };
    let (d10, k10, n10) = go(10);
    let (d100, k100, _) = go(100);
    assert_eq!(go(10), (d10, k10, n10), "same launch, same numbers");
    assert!(d100 > d10 && k100 > k10, "{d10} {d100} {k10} {k100}");
    // 64 lanes * 4 CTAs * (2 before the loop + 3 per iteration * 10 + 8 after) lane-instructions.
    assert_eq!(n10, 256 * (2 + 30 + 8));
}

#[test]
fn multi_dimensional_grid_and_block() {
    let ptx = format!(
        "{HEADER}
.visible .entry k(.param .u64 out)
{{
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %tid.y;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ctaid.y;
  mov.u32 %r5, %ntid.x;
  mov.u32 %r6, %nctaid.x;
  // global x = ctaid.x * ntid.x + tid.x; global y = ctaid.y * ntid.y + tid.y
  mad.lo.s32 %r7, %r3, %r5, %r1;
  mov.u32 %r8, %ntid.y;
  mad.lo.s32 %r9, %r4, %r8, %r2;
  mul.lo.s32 %r10, %r6, %r5;
  mad.lo.s32 %r11, %r9, %r10, %r7;
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd2, %r11, 4;
  add.s64 %rd3, %rd1, %rd2;
  mad.lo.s32 %r12, %r9, 1000, %r7;
  st.global.u32 [%rd3], %r12;
  ret;
}}"
    );
    let mut args = vec![u32_buf(12 * 10)];
    run(&ptx, "k", [3, 2, 1], [4, 5, 1], &mut args).unwrap();
    for y in 0..10 {
        for x in 0..12 {
            assert_eq!(buf(&args, 0).get_bits(y * 12 + x), (y * 1000 + x) as u64);
        }
    }
}

#[test]
fn parse_errors_and_unsupported_instructions_name_the_line() {
    let bad = format!("{HEADER}\n.visible .entry k()\n{{\n  .reg .b32 %r<2>;\n  frobnicate.b32 %r0, %r1;\n  ret;\n}}");
    let e = Module::parse(&bad).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert!(e.to_string().contains("unsupported instruction `frobnicate.b32` at line 8"), "{e}");
    let e = Module::parse(&bad.replace("frobnicate.b32 %r0, %r1", "add.s32 %r0, %r9, 1")).unwrap_err();
    assert!(e.to_string().contains("unknown name `%r9`") && e.to_string().contains("line 8"), "{e}");
    let e = Module::parse(&bad.replace("frobnicate.b32 %r0, %r1", "add.cc.s32 %r0, %r1, 1")).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
    let e = Module::parse(&bad.replace("frobnicate.b32 %r0, %r1", "ld.global.foo.u32 %r0, [%r1]")).unwrap_err();
    assert!(e.to_string().contains("modifier `.foo`"), "{e}");
    let e = Module::parse(&bad.replace("ret;", "ret")).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Parse, "{e}");
}

#[test]
fn entry_params_and_argument_checks() {
    let ptx = format!(
        "{HEADER}\n.visible .entry k(.param .u64 .ptr .global .align 16 p, .param .f32 x, .param .s32 n, .param .align 8 .b8 blob[16])\n{{\n  ret;\n}}"
    );
    let m = Module::parse(&ptx).unwrap();
    let ps = m.entry_params("k").unwrap();
    assert_eq!(ps.len(), 4);
    assert!(ps[0].is_pointer && ps[0].bytes == 8);
    assert_eq!((ps[1].ty, ps[1].bytes), (Ty::F32, 4));
    assert!(ps[2].is_signed());
    assert_eq!(ps[3].name(), "b8[16]");
    assert_eq!(m.entries(), vec!["k"]);
    let e = launch(&m, "k", &LaunchConfig::default(), &mut []).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Launch);
    assert!(e.to_string().contains("takes 4 arguments"), "{e}");
    assert!(launch(&m, "nope", &LaunchConfig::default(), &mut []).is_err());
    let cfg = LaunchConfig { block: [2048, 1, 1], ..LaunchConfig::default() };
    let mut args = vec![KernelArg::Null, KernelArg::Scalar(0), KernelArg::Scalar(0), KernelArg::Scalar(0)];
    assert_eq!(launch(&m, "k", &cfg, &mut args).unwrap_err().kind, ErrorKind::Launch);
}

#[test]
fn trap_and_endless_loops_are_errors() {
    let ptx = format!("{HEADER}\n.visible .entry k()\n{{\nL:\n  bra L;\n}}");
    let m = Module::parse(&ptx).unwrap();
    let cfg = LaunchConfig { max_warp_instructions_per_cta: 10_000, ..LaunchConfig::default() };
    let e = launch(&m, "k", &cfg, &mut []).unwrap_err();
    assert!(e.to_string().contains("endless loop"), "{e}");
    let ptx = format!("{HEADER}\n.visible .entry k()\n{{\n  trap;\n}}");
    let e = run(&ptx, "k", [1, 1, 1], [32, 1, 1], &mut []).unwrap_err();
    assert!(e.to_string().contains("trap"), "{e}");
}

#[test]
fn barrier_reductions() {
    // bar.red.popc counts threads with tid % 3 == 0; .and/.or combine tid < 100 / tid == 77.
    let ptx = format!(
        "{HEADER}
.visible .entry k(.param .u64 out)
{{
  .reg .pred %p<8>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  mov.u32 %r0, %tid.x;
  rem.u32 %r1, %r0, 3;
  setp.eq.u32 %p1, %r1, 0;
  bar.red.popc.u32 %r2, 0, %p1;
  setp.lt.u32 %p2, %r0, 100;
  bar.red.and.pred %p3, 1, %p2;
  setp.eq.u32 %p4, %r0, 77;
  bar.red.or.pred %p5, 2, 128, %p4;
  selp.b32 %r3, 1, 0, %p3;
  selp.b32 %r4, 1, 0, %p5;
  vote.ballot.b32 %r5, %p4;
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd2, %r0, 16;
  add.s64 %rd3, %rd1, %rd2;
  st.global.v4.u32 [%rd3], {{%r2, %r3, %r4, %r5}};
  ret;
}}"
    );
    let mut args = vec![u32_buf(128 * 4)];
    run(&ptx, "k", [1, 1, 1], [128, 1, 1], &mut args).unwrap();
    let out = buf(&args, 0);
    for t in 0..128usize {
        assert_eq!(out.get_bits(4 * t), 43, "popc at thread {t}");
        assert_eq!(out.get_bits(4 * t + 1), 0, "and at thread {t}");
        assert_eq!(out.get_bits(4 * t + 2), 1, "or at thread {t}");
        // Legacy vote without .sync: the ballot of the warp's active lanes.
        let want = if t / 32 == 2 { 1u64 << (77 - 64) } else { 0 };
        assert_eq!(out.get_bits(4 * t + 3), want, "ballot at thread {t}");
    }
}

#[test]
fn cp_async_ignore_src_predicate() {
    let ptx = format!(
        "{HEADER}
.visible .entry k(.param .u64 inp, .param .u64 out)
{{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .shared .align 16 .b8 s[128];
  ld.param.u64 %rd1, [inp];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r1, s;
  shl.b32 %r2, %r0, 2;
  add.s32 %r3, %r1, %r2;
  and.b32 %r4, %r0, 1;
  setp.eq.u32 %p1, %r4, 1;
  cp.async.ca.shared.global [%r3], [%rd3], 4, %p1;
  cp.async.wait_all;
  ld.shared.u32 %r5, [%r3];
  ld.param.u64 %rd4, [out];
  add.s64 %rd5, %rd4, %rd2;
  st.global.u32 [%rd5], %r5;
  ret;
}}"
    );
    let mut inp = HostTensor::zeros(DType::U32, &[32]);
    for i in 0..32 {
        inp.data[4 * i..4 * i + 4].copy_from_slice(&(500 + i as u32).to_le_bytes());
    }
    let mut args = vec![KernelArg::Buffer(inp), u32_buf(32)];
    run(&ptx, "k", [1, 1, 1], [32, 1, 1], &mut args).unwrap();
    for t in 0..32u64 {
        assert_eq!(buf(&args, 1).get_bits(t as usize), if t % 2 == 1 { 0 } else { 500 + t });
    }
}

#[test]
fn module_data_const_and_vector_registers() {
    let ptx = format!(
        "{HEADER}
.const .align 4 .u32 table[4] = {{10, 20, 30, 40}};
.global .align 4 .f32 scale = 0f40000000;
.global .align 4 .u32 counter;
.visible .entry k(.param .u64 out)
{{
  .reg .b32 %r<8>;
  .reg .v4 .b32 %v<2>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<8>;
  mov.u32 %r0, %tid.x;
  and.b32 %r1, %r0, 3;
  shl.b32 %r2, %r1, 2;
  mov.u64 %rd5, table;
  cvt.u64.u32 %rd6, %r2;
  add.s64 %rd1, %rd5, %rd6;
  ld.const.u32 %r5, [%rd1];
  ld.global.f32 %f1, [scale];
  cvt.rn.f32.u32 %f2, %r5;
  mul.f32 %f3, %f2, %f1;
  atom.global.add.u32 %r6, [counter], 1;
  mov.b32 %v1.x, %r5;
  mov.b32 %v1.y, %f3;
  mov.b32 %v1.z, %r0;
  mov.b32 %v1.w, 7;
  ld.param.u64 %rd2, [out];
  mul.wide.u32 %rd3, %r0, 16;
  add.s64 %rd4, %rd2, %rd3;
  st.global.v4.b32 [%rd4], {{%v1.x, %v1.y, %v1.z, %v1.w}};
  ret;
}}"
    );
    let mut args = vec![u32_buf(8 * 4)];
    run(&ptx, "k", [1, 1, 1], [8, 1, 1], &mut args).unwrap();
    let out = buf(&args, 0);
    for t in 0..8usize {
        let v = 10 * (t as u64 % 4 + 1);
        assert_eq!(out.get_bits(4 * t), v);
        assert_eq!(f32::from_bits(out.get_bits(4 * t + 1) as u32), 2.0 * v as f32);
        assert_eq!(out.get_bits(4 * t + 2), t as u64);
        assert_eq!(out.get_bits(4 * t + 3), 7);
    }
    // Constant memory is read-only.
    let bad = ptx.replace("ld.const.u32 %r5, [%rd1];", "st.global.u32 [%rd1], 1;");
    let e = run(&bad, "k", [1, 1, 1], [8, 1, 1], &mut args).unwrap_err();
    assert!(e.to_string().contains("read-only"), "{e}");
}

#[test]
fn nested_divergence_with_break_and_divergent_return() {
    // Outer if on lane parity; inside, a loop some lanes leave early with a branch
    // out of the loop; on the other side a nested if. JOIN post-dominates every
    // path, so all lanes are active again there. A predicated early exit first
    // retires lanes with tid % 8 == 6.
    let ptx = format!(
        "{HEADER}
.visible .entry k(.param .u64 out)
{{
  .reg .pred %p<8>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  mov.u32 %r0, %tid.x;
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd2, %r0, 8;
  add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r1, 0;
  and.b32 %r7, %r0, 7;
  setp.eq.u32 %p5, %r7, 6;
  mov.u32 %r6, 77;
  @%p5 st.global.v2.u32 [%rd3], {{%r6, %r6}};
  @%p5 exit;
  and.b32 %r2, %r0, 1;
  setp.eq.u32 %p1, %r2, 0;
  @%p1 bra EVEN;
  mov.u32 %r3, 0;
LOOP:
  add.u32 %r1, %r1, %r3;
  add.u32 %r3, %r3, 1;
  setp.eq.u32 %p2, %r3, %r0;
  @%p2 bra OUT;
  setp.lt.u32 %p3, %r3, 10;
  @%p3 bra LOOP;
OUT:
  bra JOIN;
EVEN:
  and.b32 %r4, %r0, 7;
  setp.eq.u32 %p4, %r4, 4;
  @%p4 bra FOUR;
  mov.u32 %r1, 1000;
  bra JOIN;
FOUR:
  mov.u32 %r1, 4000;
JOIN:
  activemask.b32 %r5;
  st.global.v2.u32 [%rd3], {{%r1, %r5}};
  ret;
}}"
    );
    let mut args = vec![u32_buf(64)];
    run(&ptx, "k", [1, 1, 1], [32, 1, 1], &mut args).unwrap();
    let out = buf(&args, 0);
    let survivors: u64 = (0..32).filter(|t| t % 8 != 6).map(|t| 1u64 << t).sum();
    for t in 0..32u64 {
        let (v, m) = (out.get_bits(2 * t as usize), out.get_bits(2 * t as usize + 1));
        if t % 8 == 6 {
            assert_eq!((v, m), (77, 77), "thread {t}");
            continue;
        }
        let want = if t % 8 == 4 {
            4000
        } else if t % 2 == 0 {
            1000
        } else {
            // Sum of 0..n where the loop stops when the counter reaches t or 10.
            let n = t.min(10);
            (0..n).sum::<u64>()
        };
        assert_eq!(v, want, "thread {t}");
        assert_eq!(m, survivors, "thread {t}: all surviving lanes reconverge at JOIN");
    }
}

#[test]
fn cache_hints_policies_and_special_registers() {
    let ptx = format!(
        "{HEADER}
.extern .shared .align 16 .b8 dyn[];
.visible .entry k(.param .u64 inp, .param .u64 out)
{{
  .reg .b32 %r<16>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [inp];
  ld.param.u64 %rd2, [out];
  createpolicy.fractional.L2::evict_last.b64 %rd3, 1.0;
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd4, %r0, 16;
  add.s64 %rd5, %rd1, %rd4;
  prefetch.global.L2 [%rd5];
  ld.global.nc.L1::evict_last.L2::cache_hint.v4.b32 {{%r1, %r2, %r3, %r4}}, [%rd5], %rd3;
  add.s64 %rd6, %rd2, %rd4;
  st.global.L1::no_allocate.v4.b32 [%rd6], {{%r1, %r2, %r3, %r4}};
  mov.u32 %r5, %dynamic_smem_size;
  mov.u32 %r6, %total_smem_size;
  mov.u32 %r7, %laneid;
  mov.u32 %r8, %warpid;
  mov.u32 %r9, %nwarpid;
  mov.u32 %r10, %lanemask_lt;
  fence.acq_rel.gpu;
  membar.cta;
  nanosleep.u32 100;
  mul.wide.u32 %rd7, %r0, 32;
  add.s64 %rd8, %rd2, 2048;
  add.s64 %rd9, %rd8, %rd7;
  st.global.v2.u32 [%rd9], {{%r5, %r6}};
  st.global.v4.u32 [%rd9+16], {{%r7, %r8, %r9, %r10}};
  ret;
}}"
    );
    let m = Module::parse(&ptx).unwrap();
    let mut rng = Rng(31);
    let inp = random(&mut rng, DType::F32, &[64 * 4], 10.0);
    let mut args = vec![KernelArg::Buffer(inp.clone()), u32_buf(512 + 64 * 8)];
    let cfg = LaunchConfig { block: [64, 1, 1], dynamic_shared_bytes: 96, ..LaunchConfig::default() };
    launch(&m, "k", &cfg, &mut args).unwrap();
    let out = buf(&args, 1);
    assert_eq!(&out.data[..1024], &inp.data[..]);
    for t in 0..64usize {
        let at = 512 + 8 * t;
        let lane = t as u64 % 32;
        assert_eq!(out.get_bits(at), 96, "%dynamic_smem_size");
        assert_eq!(out.get_bits(at + 1), 96, "%total_smem_size");
        assert_eq!(out.get_bits(at + 4), lane);
        assert_eq!(out.get_bits(at + 5), t as u64 / 32);
        assert_eq!(out.get_bits(at + 6), 2);
        assert_eq!(out.get_bits(at + 7), (1u64 << lane) - 1);
    }
}

/// Lanes of one warp at two different aligned barriers (`bar.sync 0` and `bar.sync 1`) are
/// undefined behaviour in PTX; it used to end with success and no warning (issue 14). The
/// non-aligned `barrier.sync` may be reached divergently.
#[test]
fn a_divergent_aligned_barrier_is_an_error() {
    let kernel = |bar: &str| {
        format!(
            "{HEADER}
.visible .entry k()
{{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 16;
  @%p1 bra A;
  {bar} 1;
  bra DONE;
A:
  {bar} 0;
DONE:
  ret;
}}"
        )
    };
    let e = run(&kernel("bar.sync"), "k", [1, 1, 1], [32, 1, 1], &mut []).unwrap_err();
    assert!(e.to_string().contains("divergent barrier"), "{e}");
    let e = run(&kernel("barrier.sync.aligned"), "k", [1, 1, 1], [32, 1, 1], &mut []).unwrap_err();
    assert!(e.to_string().contains("divergent barrier"), "{e}");
}

/// `bar.arrive` does not wait, but the phase it completes cannot end before it: a warp
/// waiting at `bar.sync` for a later arrival resumes after that arrival, not at its own
/// clock (ping-pong turns between warpgroups hand over this way).
#[test]
fn a_phase_completed_by_a_late_arrive_releases_its_waiter_after_it() {
    let ptx = format!(
        "{HEADER}
.visible .entry k(.param .u64 out)
{{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .pred %p<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r0, %tid.x;
  shr.u32 %r1, %r0, 5;
  mul.wide.u32 %rd2, %r1, 8;
  add.s64 %rd3, %rd1, %rd2;
  setp.eq.u32 %p1, %r1, 1;
  @%p1 bra LATE;
  bar.sync 2, 64;
  mov.u64 %rd4, %clock64;
  st.global.u64 [%rd3], %rd4;
  ret;
LATE:
  mov.u32 %r2, 0;
SPIN:
  mad.lo.u32 %r3, %r2, %r2, %r3;
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p2, %r2, 200;
  @%p2 bra SPIN;
  mov.u64 %rd4, %clock64;
  bar.arrive 2, 64;
  st.global.u64 [%rd3], %rd4;
  ret;
}}"
    );
    let m = Module::parse(&ptx).unwrap();
    let mut args = vec![KernelArg::Buffer(poisoned(DType::U64, &[2]))];
    let cfg = LaunchConfig { block: [64, 1, 1], ..LaunchConfig::default() };
    launch(&m, "k", &cfg, &mut args).unwrap();
    let (released, arrived) = (buf(&args, 0).get_bits(0), buf(&args, 0).get_bits(1));
    assert!(arrived > 200, "the spin takes time: arrived at {arrived}");
    assert!(released > arrived, "warp 0 resumed at {released}, before warp 1 arrived at {arrived}");
}
