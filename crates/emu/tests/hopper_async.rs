//! Hopper's asynchronous machinery: mbarriers (phases, parity, transaction counts), bulk
//! copies completing on them in a producer/consumer ring, bulk groups, `setmaxnreg`,
//! `elect.sync`, cluster registers and `barrier.cluster` for a cluster of one CTA, and
//! every misuse the emulator reports. Each valid program is checked by `ptxas -arch=sm_90a`
//! when `TRIDENT_PTXAS` names it; the emulator runs them regardless.

mod common;

use common::*;
use trident_core::{DType, HostTensor};
use trident_emu::{ErrorKind, KernelArg};

const HEADER: &str = ".version 8.0\n.target sm_90a\n.address_size 64\n";

fn u32s(args: &[KernelArg], i: usize) -> Vec<u32> {
    let t = buf(args, i);
    (0..t.numel()).map(|k| t.get_bits(k) as u32).collect()
}

fn u32_tensor(v: &[u32]) -> HostTensor {
    let mut t = HostTensor::zeros(DType::U32, &[v.len()]);
    for (k, x) in v.iter().enumerate() {
        t.data[4 * k..4 * k + 4].copy_from_slice(&x.to_le_bytes());
    }
    t
}

/// A producer thread (thread 0) streams `ntiles` tiles of 128 u32 through an `stages`-deep
/// ring of shared buffers with bulk copies, each completing on the stage's `full`
/// barrier; 96 consumer threads (warps 1-3) wait on `full`, write `x * 3 + tile` to `out`,
/// and arrive on the stage's `empty` barrier, which the producer waits on before reusing
/// the stage. `early_read` makes the consumers read tile 0 before waiting.
fn ring_kernel(stages: u32, early_read: bool) -> String {
    let early = if early_read { "ld.shared.u32 %r30, [%r11];" } else { "" };
    format!(
        "{HEADER}
.visible .entry ring(.param .u64 inp, .param .u64 out, .param .u32 ntiles)
{{
  .reg .pred %p<8>;
  .reg .b32 %r<40>;
  .reg .b64 %rd<16>;
  .shared .align 8 .b64 full[{stages}];
  .shared .align 8 .b64 empty[{stages}];
  .shared .align 128 .b8 buf[{bufbytes}];
  mov.u32 %r0, %tid.x;
  ld.param.u64 %rd0, [inp];
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [ntiles];
  mov.u32 %r2, full;
  mov.u32 %r3, empty;
  mov.u32 %r4, buf;
  setp.ne.u32 %p0, %r0, 0;
  @%p0 bra INIT_DONE;
  mov.u32 %r5, 0;
INIT:
  shl.b32 %r6, %r5, 3;
  add.u32 %r7, %r2, %r6;
  mbarrier.init.shared::cta.b64 [%r7], 1;
  add.u32 %r7, %r3, %r6;
  mbarrier.init.shared::cta.b64 [%r7], 96;
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p1, %r5, {stages};
  @%p1 bra INIT;
  fence.mbarrier_init.release.cluster;
INIT_DONE:
  bar.sync 0;
  setp.lt.u32 %p0, %r0, 32;
  @%p0 bra PRODUCER;
  // Consumers: thread c = tid - 32 handles words c and c + 96 (< 128).
  sub.u32 %r20, %r0, 32;
  mov.u32 %r21, 0;
CONS:
  rem.u32 %r22, %r21, {stages};
  div.u32 %r23, %r21, {stages};
  and.b32 %r23, %r23, 1;
  shl.b32 %r6, %r22, 3;
  add.u32 %r7, %r2, %r6;
  shl.b32 %r8, %r22, 9;
  add.u32 %r9, %r4, %r8;
  shl.b32 %r10, %r20, 2;
  add.u32 %r11, %r9, %r10;
  {early}
WAIT_FULL:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r7], %r23;
  @!%p2 bra WAIT_FULL;
  mov.u32 %r24, %r20;
WORDS:
  shl.b32 %r10, %r24, 2;
  add.u32 %r11, %r9, %r10;
  ld.shared.u32 %r12, [%r11];
  mad.lo.u32 %r12, %r12, 3, %r21;
  mad.lo.u32 %r13, %r21, 128, %r24;
  mul.wide.u32 %rd2, %r13, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r12;
  add.u32 %r24, %r24, 96;
  setp.lt.u32 %p3, %r24, 128;
  @%p3 bra WORDS;
  add.u32 %r7, %r3, %r6;
  mbarrier.arrive.release.cta.shared::cta.b64 %rd4, [%r7];
  add.u32 %r21, %r21, 1;
  setp.lt.u32 %p3, %r21, %r1;
  @%p3 bra CONS;
  ret;
PRODUCER:
  elect.sync %r25|%p4, 0xffffffff;
  @!%p4 bra DONE;
  mov.u32 %r21, 0;
PROD:
  rem.u32 %r22, %r21, {stages};
  div.u32 %r23, %r21, {stages};
  shl.b32 %r6, %r22, 3;
  setp.lt.u32 %p5, %r21, {stages};
  @%p5 bra FILL;
  // Reuse: wait until the consumers released the stage's previous tile.
  sub.u32 %r26, %r23, 1;
  and.b32 %r26, %r26, 1;
  add.u32 %r7, %r3, %r6;
WAIT_EMPTY:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r7], %r26, 1000000;
  @!%p2 bra WAIT_EMPTY;
FILL:
  add.u32 %r7, %r2, %r6;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r7], 512;
  shl.b32 %r8, %r22, 9;
  add.u32 %r9, %r4, %r8;
  mul.wide.u32 %rd5, %r21, 512;
  add.s64 %rd6, %rd0, %rd5;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r9], [%rd6], 512, [%r7];
  add.u32 %r21, %r21, 1;
  setp.lt.u32 %p3, %r21, %r1;
  @%p3 bra PROD;
DONE:
  ret;
}}",
        bufbytes = stages * 512
    )
}

#[test]
fn producer_ring_of_bulk_copies_feeds_consumers() {
    let mut rng = Rng(0x5eed_0013 ^ std::process::id() as u64);
    for (stages, ntiles) in [(2u32, 7u32), (3, 10), (4, 4), (1, 3)] {
        let ptx = ring_kernel(stages, false);
        valid(&ptx);
        let input: Vec<u32> = (0..ntiles * 128).map(|_| rng.next_u64() as u32).collect();
        let mut args = vec![
            KernelArg::Buffer(u32_tensor(&input)),
            KernelArg::Buffer(poisoned(DType::U32, &[(ntiles * 128) as usize])),
            KernelArg::Scalar(ntiles as u64),
        ];
        run(&ptx, "ring", [2, 1, 1], [128, 1, 1], &mut args).unwrap_or_else(|e| panic!("stages {stages}: {e}"));
        let out = u32s(&args, 1);
        for (k, (&o, &x)) in out.iter().zip(&input).enumerate() {
            let tile = (k / 128) as u32;
            assert_eq!(o, x.wrapping_mul(3).wrapping_add(tile), "stages {stages}, word {k}");
        }
    }
}

#[test]
fn reading_a_bulk_copy_destination_before_waiting_is_a_race() {
    let ptx = ring_kernel(2, true);
    valid(&ptx);
    let mut args = vec![
        KernelArg::Buffer(u32_tensor(&[7; 512])),
        KernelArg::Buffer(poisoned(DType::U32, &[512])),
        KernelArg::Scalar(4),
    ];
    let e = run(&ptx, "ring", [1, 1, 1], [128, 1, 1], &mut args).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Race, "{e}");
    assert!(e.message.contains("bulk copy"), "{e}");
    assert!(e.line.as_ref().is_some_and(|l| l.1.contains("ld.shared.u32 %r30")), "{e}");
}

/// Warp 0 (thread 0) and warp 1 (thread 32) ping-pong through barriers A and B for six
/// phases: parity waits must alternate 0, 1, 0, ... State tokens and `test_wait` with
/// them, `pending_count`, and `arrive` with a count are checked on the way.
#[test]
fn parity_waits_across_phases() {
    let ptx = format!(
        "{HEADER}
.visible .entry pp(.param .u64 out)
{{
  .reg .pred %p<8>;
  .reg .b32 %r<32>;
  .reg .b64 %rd<16>;
  .shared .align 8 .b64 bars[2];
  mov.u32 %r0, %tid.x;
  ld.param.u64 %rd0, [out];
  mov.u32 %r1, bars;
  add.u32 %r2, %r1, 8;
  setp.ne.u32 %p0, %r0, 0;
  @%p0 bra SYNC;
  mbarrier.init.shared.b64 [%r1], 3;
  mbarrier.init.shared.b64 [%r2], 1;
SYNC:
  bar.sync 0;
  and.b32 %r3, %r0, 31;
  setp.ne.u32 %p0, %r3, 0;
  @%p0 bra END;
  mov.u32 %r4, 0;
  setp.eq.u32 %p1, %r0, 0;
  @!%p1 bra WAITER;
PING:
  // Two arrivals with count 1 and 2 complete A's phase (expected count 3).
  mbarrier.arrive.shared::cta.b64 %rd1, [%r1];
  mbarrier.pending_count.b64 %r5, %rd1;
  mbarrier.test_wait.shared::cta.b64 %p2, [%r1], %rd1;
  selp.u32 %r6, 1, 0, %p2;
  mbarrier.arrive.shared::cta.b64 %rd2, [%r1], 2;
  mbarrier.test_wait.shared::cta.b64 %p3, [%r1], %rd2;
  selp.u32 %r7, 1, 0, %p3;
  // out[k*4 + 0..3] = pending after the first arrival, test before, test after, 0
  shl.b32 %r8, %r4, 2;
  mul.wide.u32 %rd3, %r8, 4;
  add.s64 %rd4, %rd0, %rd3;
  st.global.v4.u32 [%rd4], {{%r5, %r6, %r7, %r4}};
  and.b32 %r9, %r4, 1;
WAIT_B:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r2], %r9;
  @!%p4 bra WAIT_B;
  add.u32 %r4, %r4, 1;
  setp.lt.u32 %p5, %r4, 6;
  @%p5 bra PING;
  bra END;
WAITER:
  and.b32 %r9, %r4, 1;
WAIT_A:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r1], %r9;
  @!%p4 bra WAIT_A;
  // The other parity has not completed again: test_wait.parity says so.
  xor.b32 %r10, %r9, 1;
  mbarrier.test_wait.parity.shared::cta.b64 %p6, [%r1], %r10;
  selp.u32 %r11, 1, 0, %p6;
  add.u32 %r12, %r4, 24;
  mul.wide.u32 %rd3, %r12, 4;
  add.s64 %rd4, %rd0, %rd3;
  st.global.u32 [%rd4], %r11;
  mbarrier.arrive.shared::cta.b64 _, [%r2];
  add.u32 %r4, %r4, 1;
  setp.lt.u32 %p5, %r4, 6;
  @%p5 bra WAITER;
END:
  ret;
}}"
    );
    valid(&ptx);
    let mut args = vec![KernelArg::Buffer(poisoned(DType::U32, &[30]))];
    run(&ptx, "pp", [1, 1, 1], [64, 1, 1], &mut args).unwrap();
    let out = u32s(&args, 0);
    for k in 0..6u32 {
        let r = &out[4 * k as usize..4 * k as usize + 4];
        assert_eq!(r, &[2, 0, 1, k], "phase {k}: pending 2 after one of 3 arrivals, incomplete, then complete");
        assert_eq!(out[24 + k as usize], 0, "phase {k}: the other parity is not complete");
    }
}

/// A one-warp kernel around `body`, with a shared `bar` (b64) and `data` (64 bytes).
fn misuse(body: &str) -> String {
    format!(
        "{HEADER}
.visible .entry m(.param .u64 g)
{{
  .reg .pred %p<8>;
  .reg .b32 %r<32>;
  .reg .b64 %rd<16>;
  .shared .align 16 .b64 bar;
  .shared .align 128 .b8 data[64];
  mov.u32 %r1, bar;
  mov.u32 %r2, data;
  ld.param.u64 %rd0, [g];
  mov.u32 %r0, %tid.x;
{body}
  ret;
}}"
    )
}

fn run_misuse(body: &str, threads: u32) -> trident_emu::EmuError {
    let ptx = misuse(body);
    valid(&ptx);
    let mut args = vec![KernelArg::Buffer(u32_tensor(&[1; 64]))];
    let before = args.clone();
    let e = run(&ptx, "m", [1, 1, 1], [threads, 1, 1], &mut args).unwrap_err();
    assert_eq!(args, before, "buffers untouched on error");
    e
}

fn line_has(e: &trident_emu::EmuError, text: &str) -> bool {
    e.line.as_ref().is_some_and(|l| l.1.contains(text))
}

#[test]
fn waiting_on_an_uninitialized_barrier_is_an_error() {
    let e = run_misuse("W: mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], 0;\n @!%p1 bra W;", 32);
    assert_eq!(e.kind, ErrorKind::Runtime, "{e}");
    assert!(e.message.contains("not initialized"), "{e}");
    assert!(line_has(&e, "mbarrier.try_wait"), "{e}");
    // And after inval.
    let e = run_misuse(
        "mbarrier.init.shared::cta.b64 [%r1], 1;\n mbarrier.inval.shared::cta.b64 [%r1];\n mbarrier.arrive.shared::cta.b64 %rd1, [%r1];",
        1,
    );
    assert!(e.message.contains("not initialized") && line_has(&e, "mbarrier.arrive"), "{e}");
}

#[test]
fn arriving_more_than_expected_is_an_error() {
    let e = run_misuse("mbarrier.init.shared::cta.b64 [%r1], 2;\n mbarrier.arrive.shared::cta.b64 %rd1, [%r1], 3;", 1);
    assert!(e.message.contains("more arrivals than its expected count"), "{e}");
    assert!(line_has(&e, "mbarrier.arrive"), "{e}");
    // 32 threads arriving with count 2 on a barrier expecting 17: the ninth finds 1 pending.
    let e = run_misuse(
        "setp.eq.u32 %p1, %r0, 0;\n @%p1 mbarrier.init.shared::cta.b64 [%r1], 17;\n bar.warp.sync -1;\n mbarrier.arrive.shared::cta.b64 %rd1, [%r1], 2;",
        32,
    );
    assert!(e.message.contains("more arrivals"), "{e}");
}

#[test]
fn a_negative_transaction_count_is_an_error() {
    let e = run_misuse(
        "mbarrier.init.shared::cta.b64 [%r1], 1;\n mbarrier.expect_tx.shared::cta.b64 [%r1], 16;\n mbarrier.complete_tx.shared::cta.b64 [%r1], 32;",
        1,
    );
    assert!(e.message.contains("transaction count would go negative"), "{e}");
    assert!(line_has(&e, "complete_tx"), "{e}");
    // A bulk copy of more bytes than the phase expects.
    let e = run_misuse(
        "mbarrier.init.shared::cta.b64 [%r1], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd1, [%r1], 32;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd0], 64, [%r1];
W: mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], 0;
  @!%p1 bra W;",
        1,
    );
    assert!(e.message.contains("negative"), "{e}");
    assert!(line_has(&e, "cp.async.bulk"), "{e}");
}

#[test]
fn reusing_a_live_barriers_memory_is_an_error() {
    let e = run_misuse("mbarrier.init.shared::cta.b64 [%r1], 1;\n st.shared.u32 [%r1+4], %r0;", 1);
    assert_eq!(e.kind, ErrorKind::Memory, "{e}");
    assert!(e.message.contains("still live") && line_has(&e, "st.shared.u32"), "{e}");
    let e = run_misuse("mbarrier.init.shared::cta.b64 [%r1], 1;\n mbarrier.init.shared::cta.b64 [%r1], 1;", 1);
    assert!(e.message.contains("initialized again while live"), "{e}");
    // After inval the memory is ordinary shared memory again.
    let ptx = misuse(
        "mbarrier.init.shared::cta.b64 [%r1], 1;\n mbarrier.inval.shared::cta.b64 [%r1];\n st.shared.u32 [%r1+4], %r0;",
    );
    valid(&ptx);
    let mut args = vec![KernelArg::Buffer(u32_tensor(&[1; 64]))];
    run(&ptx, "m", [1, 1, 1], [1, 1, 1], &mut args).unwrap();
}

#[test]
fn waiting_on_a_phase_nobody_completes_is_a_deadlock() {
    let t = std::time::Instant::now();
    let e = run_misuse(
        "mbarrier.init.shared::cta.b64 [%r1], 2;
  mbarrier.arrive.shared::cta.b64 %rd1, [%r1];
W: mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], 0;
  @!%p1 bra W;",
        1,
    );
    assert_eq!(e.kind, ErrorKind::Deadlock, "{e}");
    assert!(e.message.contains("1 of 2 arrivals pending"), "{e}");
    // Bytes expected that no copy delivers: the copy lands, the phase still waits.
    let e = run_misuse(
        "mbarrier.init.shared::cta.b64 [%r1], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd1, [%r1], 64;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd0], 32, [%r1];
W: mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], 0;
  @!%p1 bra W;",
        1,
    );
    assert_eq!(e.kind, ErrorKind::Deadlock, "{e}");
    assert!(e.message.contains("32 transaction bytes pending"), "{e}");
    assert!(t.elapsed().as_secs() < 5, "reported, not hung");
}

/// A bulk load, then a bulk store of the same bytes back through a bulk group.
#[test]
fn bulk_load_then_bulk_store_round_trips() {
    let ptx = misuse(
        "mbarrier.init.shared::cta.b64 [%r1], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd1, [%r1], 64;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd0], 64, [%r1];
W: mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], 0;
  @!%p1 bra W;
  ld.shared.u32 %r3, [%r2+4];
  add.u32 %r3, %r3, 100;
  st.shared.u32 [%r2+4], %r3;
  fence.proxy.async.shared::cta;
  add.s64 %rd2, %rd0, 128;
  cp.async.bulk.global.shared::cta.bulk_group [%rd2], [%r2], 64;
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.read 0;
  cp.async.bulk.wait_group 0;
  mbarrier.inval.shared::cta.b64 [%r1];",
    );
    valid(&ptx);
    let mut rng = Rng(99);
    let input: Vec<u32> = (0..64).map(|_| rng.next_u64() as u32).collect();
    let mut args = vec![KernelArg::Buffer(u32_tensor(&input))];
    run(&ptx, "m", [1, 1, 1], [1, 1, 1], &mut args).unwrap();
    let out = u32s(&args, 0);
    let mut want = input.clone();
    want[32..48].copy_from_slice(&input[0..16]);
    want[33] = input[1].wrapping_add(100);
    assert_eq!(out, want);
}

#[test]
fn setmaxnreg_is_checked() {
    let prog = |body: &str| {
        format!("{HEADER}\n.visible .entry s()\n{{\n  .reg .pred %p<4>;\n  .reg .b32 %r<8>;\n  mov.u32 %r0, %warpid;\n{body}\n  ret;\n}}")
    };
    // Producer warpgroup gives registers back, consumer warpgroup takes them.
    let ok = prog(
        "  setp.lt.u32 %p0, %r0, 4;\n  @%p0 bra P;\n  setmaxnreg.inc.sync.aligned.u32 232;\n  bra E;\nP:\n  setmaxnreg.dec.sync.aligned.u32 40;\nE:",
    );
    valid(&ok);
    run(&ok, "s", [1, 1, 1], [256, 1, 1], &mut []).unwrap();
    // Warps of one warpgroup disagreeing.
    let split = prog(
        "  setp.lt.u32 %p0, %r0, 2;\n  @%p0 bra P;\n  setmaxnreg.inc.sync.aligned.u32 232;\n  bra E;\nP:\n  setmaxnreg.dec.sync.aligned.u32 40;\nE:",
    );
    valid(&split);
    let e = run(&split, "s", [1, 1, 1], [128, 1, 1], &mut []).unwrap_err();
    assert!(e.message.contains("not uniform across warpgroup 0"), "{e}");
    // Counts that are not a multiple of 8 in [24, 256].
    for n in [20u32, 30, 264] {
        let bad = prog(&format!("  setmaxnreg.dec.sync.aligned.u32 {n};"));
        if let Some(ok) = ptxas_accepts(&bad) {
            assert!(!ok, "ptxas accepts setmaxnreg {n}");
        }
        let e = run(&bad, "s", [1, 1, 1], [128, 1, 1], &mut []).unwrap_err();
        assert!(e.message.contains("multiple of 8 in [24, 256]"), "{n}: {e}");
    }
}

#[test]
fn cluster_of_one_cta_registers_and_barrier() {
    let ptx = format!(
        "{HEADER}
.visible .entry c(.param .u64 out)
{{
  .reg .pred %p<4>;
  .reg .b32 %r<32>;
  .reg .b64 %rd<8>;
  .shared .align 4 .b32 s[64];
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, %cluster_ctaid.x;
  mov.u32 %r2, %cluster_ctaid.y;
  mov.u32 %r3, %cluster_nctaid.x;
  mov.u32 %r4, %cluster_nctaid.z;
  mov.u32 %r5, %cluster_ctarank;
  mov.u32 %r6, %cluster_nctarank;
  mov.pred %p2, %is_explicit_cluster;
  selp.u32 %r7, 1, 0, %p2;
  mov.u32 %r8, %clusterid.x;
  mov.u32 %r9, %nclusterid.x;
  elect.sync %r10|%p1, 0xffffffff;
  selp.u32 %r11, 1, 0, %p1;
  // Each thread writes its slot, the cluster barrier orders it, then it reads its
  // neighbour's slot through a mapa'd address of rank 0.
  mov.u32 %r12, s;
  shl.b32 %r13, %r0, 2;
  add.u32 %r14, %r12, %r13;
  st.shared.u32 [%r14], %r0;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  add.u32 %r15, %r0, 1;
  and.b32 %r15, %r15, 63;
  shl.b32 %r15, %r15, 2;
  add.u32 %r15, %r12, %r15;
  mapa.shared::cluster.u32 %r16, %r15, 0;
  ld.shared::cluster.u32 %r17, [%r16];
  mul.wide.u32 %rd1, %r0, 48;
  add.s64 %rd2, %rd0, %rd1;
  st.global.v4.u32 [%rd2], {{%r1, %r2, %r3, %r4}};
  st.global.v4.u32 [%rd2+16], {{%r5, %r6, %r7, %r8}};
  st.global.v4.u32 [%rd2+32], {{%r9, %r10, %r11, %r17}};
  ret;
}}"
    );
    valid(&ptx);
    let mut args = vec![KernelArg::Buffer(poisoned(DType::U32, &[64 * 12]))];
    run(&ptx, "c", [1, 1, 1], [64, 1, 1], &mut args).unwrap();
    let out = u32s(&args, 0);
    for t in 0..64usize {
        let r = &out[12 * t..12 * t + 12];
        let leader = if t < 32 { 0 } else { 32 } as usize;
        let want = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0, (t == leader) as u32, ((t + 1) % 64) as u32];
        assert_eq!(r, &want, "thread {t}");
    }
    // A rank other than 0 does not exist in a cluster of one.
    let bad = ptx.replace("mapa.shared::cluster.u32 %r16, %r15, 0;", "mapa.shared::cluster.u32 %r16, %r15, 1;");
    let mut args = vec![KernelArg::Buffer(poisoned(DType::U32, &[64 * 12]))];
    let e = run(&bad, "c", [1, 1, 1], [64, 1, 1], &mut args).unwrap_err();
    assert!(e.message.contains("cluster of one"), "{e}");
}

/// The body of a two-warp kernel: thread 0 fills `data`, then stores it to global memory with a
/// bulk store, and `after` runs (thread 32 is warp 1's first thread).
fn store_then(after: &str) -> String {
    format!(
        "setp.eq.u32 %p2, %r0, 0;
  setp.eq.u32 %p3, %r0, 32;
  mov.u32 %r5, 7;
  mov.u32 %r6, 9;
  @%p2 st.shared.u32 [%r2], %r5;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  @%p2 cp.async.bulk.global.shared::cta.bulk_group [%rd0], [%r2], 64;
  @%p2 cp.async.bulk.commit_group;
{after}"
    )
}

#[test]
fn overwriting_a_bulk_stores_source_before_its_read_wait_is_a_race() {
    // Across a barrier, but before the issuing warp waited for the read: warp 1, and the
    // issuing thread itself.
    for (who, after) in
        [("1", "bar.sync 0;\n  @%p3 st.shared.u32 [%r2+8], %r6;"), ("0", "@%p2 st.shared.u32 [%r2+4], %r6;")]
    {
        let e = run_misuse(&store_then(after), 64);
        assert_eq!(e.kind, ErrorKind::Race, "{e}");
        assert!(e.message.contains(&format!("warp {who} overwrites bytes the bulk store")), "{e}");
        assert!(e.message.contains("before warp 0 waited"), "{e}");
    }
    // Waited for, but nothing orders warp 1's write after the wait.
    let e = run_misuse(
        &store_then("bar.sync 0;\n  @%p2 cp.async.bulk.wait_group.read 0;\n  @%p3 st.shared.u32 [%r2+8], %r6;"),
        64,
    );
    assert_eq!(e.kind, ErrorKind::Race, "{e}");
    assert!(e.message.contains("after warp 0 waited for it, with no barrier between"), "{e}");
    // The wait, then a barrier: fine, and the store wrote what was there at issue.
    let ptx = misuse(&store_then(
        "bar.sync 0;\n  @%p2 cp.async.bulk.wait_group.read 0;\n  bar.sync 0;\n  @%p3 st.shared.u32 [%r2+8], %r6;\n  @%p2 st.shared.u32 [%r2+12], %r6;",
    ));
    valid(&ptx);
    let mut args = vec![KernelArg::Buffer(u32_tensor(&[1; 64]))];
    run(&ptx, "m", [1, 1, 1], [64, 1, 1], &mut args).unwrap();
    assert_eq!(&u32s(&args, 0)[..4], &[7, 0, 0, 0]);
}
