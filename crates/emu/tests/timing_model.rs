//! The timing model on micro-kernels whose modelled time is predictable (latency
//! chains, issue and unit throughput, bank conflicts, memory bandwidth, tensor cores),
//! and the zero-cost `//@trident.mark` markers. Modelled cycles are deterministic, so
//! these assert on them directly.

mod common;

use common::*;
use trident_core::{DType, HostTensor};
use trident_emu::{launch, KernelArg, LaunchConfig, LaunchReport, MachineModel, Marker, Module};

const HEADER: &str = ".version 8.0\n.target sm_90a\n.address_size 64\n";

fn go(ptx: &str, grid: [u32; 3], block: u32, shared: u32, args: &mut [KernelArg]) -> LaunchReport {
    let m = Module::parse(ptx).unwrap_or_else(|e| panic!("{e}"));
    let cfg = LaunchConfig { grid, block: [block, 1, 1], dynamic_shared_bytes: shared, ..LaunchConfig::default() };
    launch(&m, "k", &cfg, args).unwrap_or_else(|e| panic!("{e}"))
}

/// Cycles warp `warp` of CTA 0 spent between markers 1 and 2.
fn region(r: &LaunchReport, warp: u32) -> u64 {
    let at = |id| r.markers.iter().find(|m| m.cta == 0 && m.warp == warp && m.id == id).expect("marker").clock;
    at(2) - at(1)
}

fn assert_near(got: u64, want: f64, tol: f64, what: &str) {
    let err = got as f64 / want - 1.0;
    assert!(err.abs() <= tol, "{what}: {got} cycles, expected about {want:.0} ({:+.1}%)", err * 100.0);
}

/// A kernel whose body `body` runs between markers 1 and 2, then stores %f1.
fn alu_kernel(body: &str) -> String {
    format!(
        "{HEADER}.visible .entry k(.param .u64 out)
{{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .f32 %f<40>;
  .reg .b64 %rd<8>;
  mov.u32 %r0, %tid.x;
  mov.f32 %f1, 0f3F800000;
  mov.f32 %f2, 0f3F000000;
  mov.f32 %f3, 0f3E800000;
//@trident.mark 1
{body}
//@trident.mark 2
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.f32 [%rd3], %f1;
  ret;
}}"
    )
}

fn run_alu(body: &str, threads: u32) -> LaunchReport {
    let mut args = vec![KernelArg::Buffer(HostTensor::zeros(DType::F32, &[threads as usize]))];
    go(&alu_kernel(body), [1, 1, 1], threads, 0, &mut args)
}

#[test]
fn a_dependent_chain_takes_its_latency_per_instruction() {
    let n = 200;
    let body = "  fma.rn.f32 %f1, %f1, %f2, %f3;\n".repeat(n);
    let r = run_alu(&body, 32);
    let lat = MachineModel::h100_sxm().lat_alu as f64;
    assert_near(region(&r, 0), n as f64 * lat, 0.02, "dependent FMA chain");
    // SFU: ex2 depends on itself.
    let body = "  ex2.approx.ftz.f32 %f1, %f1;\n".repeat(n);
    let r = run_alu(&body, 32);
    assert_near(region(&r, 0), n as f64 * MachineModel::h100_sxm().lat_sfu as f64, 0.02, "dependent ex2 chain");
}

/// `n` rounds of 8 independent FMAs (accumulators %f10..%f17).
fn independent_fmas(n: usize, op: &str) -> String {
    let mut s = String::new();
    for _ in 0..n {
        for a in 10..18 {
            s.push_str(&format!("  {op} %f{a}, %f{a}, %f2, %f3;\n"));
        }
    }
    s
}

#[test]
fn independent_instructions_issue_one_per_cycle_per_scheduler() {
    let n = 50;
    let body = independent_fmas(n, "fma.rn.f32");
    // One warp per scheduler: one FMA per cycle each.
    let r = run_alu(&body, 128);
    for w in 0..4 {
        assert_near(region(&r, w), 8.0 * n as f64, 0.03, "4 warps on 4 schedulers");
    }
    // Two warps per scheduler share its issue slots: twice as long.
    let r = run_alu(&body, 256);
    assert_near(region(&r, 0).max(region(&r, 4)), 16.0 * n as f64, 0.03, "8 warps on 4 schedulers");
}

#[test]
fn unit_throughput_limits_issue() {
    // Integer adds: 16 lanes per sub-partition, two cycles per warp-instruction.
    let mut body = String::new();
    for _ in 0..50 {
        for a in 4..12 {
            body.push_str(&format!("  add.u32 %r{a}, %r{a}, 3;\n"));
        }
    }
    let r = run_alu(&body, 32);
    assert_near(region(&r, 0), 2.0 * 400.0, 0.03, "INT pipe");
    // SFU: 4 lanes per sub-partition, eight cycles per warp-instruction.
    let mut body = String::new();
    for _ in 0..20 {
        for a in 10..18 {
            body.push_str(&format!("  ex2.approx.ftz.f32 %f{a}, %f{a};\n"));
        }
    }
    let r = run_alu(&body, 32);
    assert_near(region(&r, 0), 8.0 * 160.0, 0.03, "SFU pipe");
}

/// Each lane stores to shared memory at `stride` words apart, `n` times, then loads
/// (queued behind the stores) and uses the value, between markers.
fn shared_stores(stride: u32, n: usize) -> u64 {
    let stores = format!(
        "  st.shared.u32 [%r5], %r0;\n{}  ld.shared.u32 %r7, [%r5];\n  add.u32 %r8, %r7, 1;\n",
        "  st.shared.u32 [%r5+4096], %r0;\n".repeat(n - 1)
    );
    let ptx = format!(
        "{HEADER}.visible .entry k(.param .u64 out)
{{
  .reg .b32 %r<16>;
  .shared .align 4 .b8 s[8192];
  mov.u32 %r0, %tid.x;
  mul.lo.u32 %r4, %r0, {};
  mov.u32 %r6, s;
  add.u32 %r5, %r6, %r4;
//@trident.mark 1
{stores}//@trident.mark 2
  ret;
}}",
        stride * 4
    );
    let mut args = vec![KernelArg::Null];
    let r = go(&ptx, [1, 1, 1], 32, 0, &mut args);
    region(&r, 0)
}

#[test]
fn shared_memory_bank_conflicts_serialize() {
    let n = 40;
    let clean = shared_stores(1, n);
    let conflicted = shared_stores(32, n);
    // 32 lanes on one bank: 32 wavefronts per store instead of 1.
    assert_near(conflicted - clean, 31.0 * n as f64, 0.05, "32-way conflicts");
    let two_way = shared_stores(2, n);
    assert_near(two_way - clean, n as f64, 0.1, "2-way conflicts");
}

/// A small machine (4 SMs) with the H100's per-SM share of bandwidth, so a few MiB
/// saturate it.
fn small_h100() -> MachineModel {
    let h = MachineModel::h100_sxm();
    let f = 4.0 / h.sms as f64;
    MachineModel {
        sms: 4,
        dram_bytes_per_s: h.dram_bytes_per_s * f,
        l2_bytes_per_s: h.l2_bytes_per_s * f,
        l2_bytes: (h.l2_bytes as f64 * f) as u64,
        ..h
    }
}

const COPY: &str = "
.visible .entry k(.param .u64 src, .param .u64 dst, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [dst];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.u32 %r5, %r2, %r3, %r4;
  shl.b32 %r6, %r5, 2;
  setp.ge.u32 %p1, %r6, %r1;
  @%p1 bra DONE;
  mul.wide.u32 %rd3, %r6, 4;
  add.s64 %rd4, %rd1, %rd3;
  add.s64 %rd5, %rd2, %rd3;
  ld.global.v4.u32 {%r8, %r9, %r10, %r11}, [%rd4];
  st.global.v4.u32 [%rd5], {%r8, %r9, %r10, %r11};
DONE:
  ret;
}";

#[test]
fn a_streaming_copy_approaches_the_dram_bandwidth() {
    let n = 1usize << 20; // 4 MiB each way
    let machine = small_h100();
    let m = Module::parse(&format!("{HEADER}{COPY}")).unwrap();
    let src = HostTensor::from_f64(DType::F32, &[n], &(0..n).map(|i| i as f64).collect::<Vec<_>>());
    let mut args = vec![
        KernelArg::Buffer(src.clone()),
        KernelArg::Buffer(HostTensor::zeros(DType::F32, &[n])),
        KernelArg::Scalar(n as u64),
    ];
    let cfg = LaunchConfig {
        grid: [(n / 1024) as u32, 1, 1],
        block: [256, 1, 1],
        machine: machine.clone(),
        ..LaunchConfig::default()
    };
    let r = launch(&m, "k", &cfg, &mut args).unwrap();
    assert_eq!(buf(&args, 1).data, src.data, "the copy is still a copy");
    let overhead = (machine.launch_overhead_ns * machine.clock_ghz) as u64;
    let bound = 2.0 * 4.0 * n as f64 / machine.dram_bytes_per_s * machine.clock_hz();
    let got = r.cycles - overhead;
    // Every byte read comes from DRAM; the written ones are acknowledged by the L2 and
    // compete for DRAM bandwidth as they are written back, so the last few may still be
    // on their way when the kernel ends.
    assert!(got as f64 >= bound / 2.0, "reads faster than DRAM allows: {got} < {:.0}", bound / 2.0);
    assert_near(got, bound, 0.15, "streaming copy vs bytes / DRAM bandwidth");
    assert_eq!(r.dram_bytes, 8 * n as u64);
}

/// One warpgroup issues `n` chained `wgmma.m64n128k16` (A and B from shared memory).
fn wgmma_loop(n: usize) -> String {
    let d: Vec<String> = (0..64).map(|i| format!("%d{i}")).collect();
    let d = d.join(", ");
    let mma = format!("  wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {{{d}}}, %rd5, %rd7, %p1, 1, 1, 0, 0;\n");
    format!(
        "{HEADER}.visible .entry k(.param .u64 out)
{{
  .reg .pred %p<2>;
  .reg .b32 %r<16>;
  .reg .b32 %d<64>;
  .reg .b64 %rd<16>;
  .shared .align 1024 .b8 s[8192];
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, s;
  shr.u32 %r6, %r1, 4;
  cvt.u64.u32 %rd4, %r6;
  or.b64 %rd5, %rd4, 0x0000001000080000;
  add.u32 %r7, %r6, 128;
  cvt.u64.u32 %rd6, %r7;
  or.b64 %rd7, %rd6, 0x0000001000080000;
{zero}  setp.eq.u32 %p1, 0, 0;
  wgmma.fence.sync.aligned;
//@trident.mark 1
{mmas}  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
//@trident.mark 2
  ld.param.u64 %rd8, [out];
  mul.wide.u32 %rd9, %r0, 4;
  add.s64 %rd10, %rd8, %rd9;
  st.global.b32 [%rd10], %d0;
  ret;
}}",
        zero = (0..64).map(|i| format!("  mov.b32 %d{i}, 0;\n")).collect::<String>(),
        mmas = mma.repeat(n)
    )
}

#[test]
fn tensor_core_loops_approach_the_tensor_core_bound() {
    let h = MachineModel::h100_sxm();
    // wgmma: each warp's quarter (16 × 128 × 16 multiply-adds) on its sub-partition's
    // tensor core at tensor_fma_per_clk / 4 per cycle.
    let n = 64;
    let mut args = vec![KernelArg::Buffer(HostTensor::zeros(DType::F32, &[128]))];
    let r = go(&wgmma_loop(n), [1, 1, 1], 128, 0, &mut args);
    let per = (16 * 128 * 16) as f64 / (h.tensor_fma_per_clk / 4) as f64;
    assert_near(region(&r, 0), n as f64 * per, 0.05, "wgmma loop");
    // mma.sync: 8 independent m16n8k16 accumulators per warp, one warp per sub-partition.
    let rounds = 16;
    let mut body = String::new();
    for _ in 0..rounds {
        for a in 0..8 {
            let d = 20 + 4 * a;
            body.push_str(&format!(
                "  mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {{%f{d}, %f{}, %f{}, %f{}}}, {{%r4, %r5, %r6, %r7}}, {{%r8, %r9}}, {{%f{d}, %f{}, %f{}, %f{}}};\n",
                d + 1, d + 2, d + 3, d + 1, d + 2, d + 3
            ));
        }
    }
    let ptx = alu_kernel(&body).replace(".reg .f32 %f<40>;", ".reg .f32 %f<60>;");
    let mut args = vec![KernelArg::Buffer(HostTensor::zeros(DType::F32, &[128]))];
    let r = go(&ptx, [1, 1, 1], 128, 0, &mut args);
    let per = (16 * 8 * 16) as f64 / (h.mma_sync_fma_per_clk / 4) as f64;
    assert_near(region(&r, 0), (8 * rounds) as f64 * per, 0.05, "mma.sync loop");
}

/// Triton's softmax with a marker between every two instructions.
fn softmax_ptx(marked: bool) -> String {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/softmax.ptx")).unwrap();
    if !marked {
        return text;
    }
    let mut out = String::new();
    let mut inside = false;
    let mut id = 0;
    for line in text.lines() {
        let t = line.trim();
        out.push_str(line);
        out.push('\n');
        inside |= t == "{" || t.starts_with(".reg");
        // After each complete instruction inside the body: a marker of its own.
        if inside && t.ends_with(';') && !t.starts_with('.') {
            id += 1;
            out.push_str(&format!("//@trident.mark {id}\n"));
        }
    }
    out
}

fn run_softmax(ptx: &str, parallel: bool) -> (LaunchReport, HostTensor) {
    let m = Module::parse(ptx).unwrap_or_else(|e| panic!("{e}"));
    let (rows, cols) = (300usize, 100usize);
    let mut rng = Rng(5);
    let mut args = vec![
        KernelArg::Buffer(random(&mut rng, DType::F32, &[rows, cols], 5.0)),
        KernelArg::Buffer(HostTensor::zeros(DType::F32, &[rows, cols])),
        KernelArg::Scalar(cols as u64),
        KernelArg::Scalar(cols as u64),
        KernelArg::Null,
        KernelArg::Null,
    ];
    let cfg = LaunchConfig {
        grid: [rows as u32, 1, 1],
        block: [128, 1, 1],
        dynamic_shared_bytes: 16,
        parallel,
        ..LaunchConfig::default()
    };
    let r = launch(&m, "row_softmax", &cfg, &mut args).unwrap_or_else(|e| panic!("{e}"));
    (r, buf(&args, 1).clone())
}

#[test]
fn markers_cost_nothing_and_record_monotonic_deterministic_clocks() {
    let (plain, out_plain) = run_softmax(&softmax_ptx(false), true);
    let (marked, out_marked) = run_softmax(&softmax_ptx(true), true);
    assert!(plain.markers.is_empty());
    assert_eq!(out_plain.data, out_marked.data, "same outputs");
    assert_eq!(plain.cycles, marked.cycles, "same modelled time");
    assert_eq!(plain.cta_cycles, marked.cta_cycles);
    assert_eq!(plain.lane_instructions, marked.lane_instructions, "markers are not instructions");
    assert!(marked.markers.len() > 300 * 4 * 50, "{} markers", marked.markers.len());
    // Per warp, in program order: ids follow the code, clocks never go back.
    let mut last: Option<&Marker> = None;
    for m in &marked.markers {
        if let Some(p) = last {
            assert!((p.cta, p.warp) <= (m.cta, m.warp), "ordered by CTA, then warp");
            if (p.cta, p.warp) == (m.cta, m.warp) {
                assert!(m.clock >= p.clock, "clock went back: {p:?} then {m:?}");
            }
        }
        last = Some(m);
    }
    // Every warp's last marker is at or before its CTA's end.
    // Deterministic across runs and host scheduling.
    let (again, _) = run_softmax(&softmax_ptx(true), true);
    let (serial, out_serial) = run_softmax(&softmax_ptx(true), false);
    assert_eq!(again, marked);
    assert_eq!(serial, marked, "parallel: false gives the same timing");
    assert_eq!(out_serial.data, out_marked.data);
}

#[test]
fn marker_grammar() {
    let k = |mark: &str| {
        format!("{HEADER}.visible .entry k()\n{{\n  .reg .b32 %r<2>;\n{mark}\n  mov.u32 %r0, %tid.x;\n  ret;\n}}")
    };
    for ok in ["//@trident.mark 7", "//@trident.mark\t7  ", "  //@trident.mark 4294967295"] {
        let m = Module::parse(&k(ok)).unwrap_or_else(|e| panic!("{ok}: {e}"));
        let r = launch(&m, "k", &LaunchConfig::default(), &mut []).unwrap();
        assert_eq!(r.markers.len(), 1, "{ok}");
        assert_eq!(r.markers[0].warp, 0);
    }
    for bad in [
        "//@trident.mark",
        "//@trident.mark x",
        "//@trident.mark 4294967296",
        "//@trident.marker 1",
        "//@trident.mark 1 2",
    ] {
        let e = Module::parse(&k(bad)).unwrap_err();
        assert!(e.to_string().contains("malformed marker"), "{bad}: {e}");
    }
    // Other comments, even similar ones, are comments.
    Module::parse(&k("// @trident.mark 1")).unwrap();
    Module::parse(&k("//trident.mark 1")).unwrap();
}

#[test]
fn clock_and_globaltimer_agree() {
    let ptx = format!(
        "{HEADER}.visible .entry k(.param .u64 out)
{{
  .reg .b64 %rd<8>;
  mov.u64 %rd1, %clock64;
  mov.u64 %rd2, %globaltimer;
  ld.param.u64 %rd3, [out];
  st.global.u64 [%rd3], %rd1;
  st.global.u64 [%rd3+8], %rd2;
  ret;
}}"
    );
    let mut args = vec![KernelArg::Buffer(HostTensor::zeros(DType::U64, &[2]))];
    let r = go(&ptx, [1, 1, 1], 32, 0, &mut args);
    let (clock, ns) = (buf(&args, 0).get_bits(0), buf(&args, 0).get_bits(1));
    assert!(clock > 0);
    let want = (clock + 1) as f64 / r.clock_ghz;
    assert!((ns as f64 - want).abs() <= 1.0, "{ns} ns vs {clock} cycles at {} GHz", r.clock_ghz);
}

#[test]
fn sampling_extrapolates_a_uniform_grid() {
    let n = 1usize << 20;
    let m = Module::parse(&format!("{HEADER}{COPY}")).unwrap();
    let run = |sample: u64| {
        let mut args = vec![
            KernelArg::Buffer(HostTensor::zeros(DType::F32, &[n])),
            KernelArg::Buffer(HostTensor::zeros(DType::F32, &[n])),
            KernelArg::Scalar(n as u64),
        ];
        let cfg = LaunchConfig {
            grid: [(n / 1024) as u32, 1, 1],
            block: [256, 1, 1],
            machine: small_h100(),
            timing_sample_ctas: sample,
            ..LaunchConfig::default()
        };
        launch(&m, "k", &cfg, &mut args).unwrap()
    };
    let full = run(0);
    let sampled = run(256);
    assert_eq!((full.ctas_run, sampled.ctas_run), (1024, 256));
    assert_eq!(sampled.cta_cycles.len(), 256);
    assert_near(sampled.cycles, full.cycles as f64, 0.25, "sampled vs full");
}

#[test]
fn residency_follows_registers_and_shared_memory() {
    let m = Module::parse(&format!("{HEADER}{COPY}")).unwrap();
    let run = |regs: u32, shared: u32| {
        let mut args = vec![KernelArg::Null, KernelArg::Null, KernelArg::Scalar(0)];
        let cfg = LaunchConfig {
            grid: [4, 1, 1],
            block: [256, 1, 1],
            registers_per_thread: regs,
            dynamic_shared_bytes: shared,
            ..LaunchConfig::default()
        };
        launch(&m, "k", &cfg, &mut args).unwrap().ctas_per_sm
    };
    assert_eq!(run(0, 0), 8);
    assert_eq!(run(128, 0), 2);
    assert_eq!(run(0, 100 * 1024), 2);
}
