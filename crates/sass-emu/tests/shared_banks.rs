//! Shared-memory bank conflicts in the SASS emulator's estimate: one warp writes 8 words per
//! lane and reads them back, once with lane `l` at word `l` of each row (conflict-free: the 32
//! lanes hit 32 banks) and once at word `32 * l` (every lane in bank 0: 32 wavefronts per
//! access). Both must compute the same (checked against the PTX emulator), and the conflicted
//! one must be estimated slower by at least half of what its 31 extra wavefronts per access
//! cost one warp (the warp's pipe queues 32 cycles of work before it holds the warp).
//! Needs ptxas and nvdisasm (scripts/install-tools).

mod common;

use trident_core::{DType, HostTensor};
use trident_emu::{KernelArg, Module};
use trident_sass_emu::{launch, LaunchConfig};

/// The kernel with lane `l`'s word of row `r` at `r * ROW + l * LANE` (words).
fn kernel(lane: u32, row: u32) -> String {
    format!(
        ".version 8.0
.target sm_90a
.address_size 64
.visible .entry banks(.param .u64 out)
.reqntid 32
{{
	.reg .b32 %r<40>;
	.reg .b64 %rd<4>;
	.shared .align 16 .b32 buf[16384];
	ld.param.u64 %rd1, [out];
	mov.u32 %r0, %tid.x;
	mul.lo.u32 %r1, %r0, {lane_bytes};
	mov.u32 %r2, buf;
	add.u32 %r3, %r2, %r1;
	st.shared.u32 [%r3+{o0}], %r0;
	st.shared.u32 [%r3+{o1}], %r1;
	st.shared.u32 [%r3+{o2}], %r2;
	st.shared.u32 [%r3+{o3}], %r3;
	st.shared.u32 [%r3+{o4}], %r0;
	st.shared.u32 [%r3+{o5}], %r1;
	st.shared.u32 [%r3+{o6}], %r3;
	st.shared.u32 [%r3+{o7}], %r0;
	bar.warp.sync -1;
	ld.shared.u32 %r10, [%r3+{o0}];
	ld.shared.u32 %r11, [%r3+{o1}];
	ld.shared.u32 %r12, [%r3+{o2}];
	ld.shared.u32 %r13, [%r3+{o3}];
	ld.shared.u32 %r14, [%r3+{o4}];
	ld.shared.u32 %r15, [%r3+{o5}];
	ld.shared.u32 %r16, [%r3+{o6}];
	ld.shared.u32 %r17, [%r3+{o7}];
	add.u32 %r20, %r10, %r11;
	add.u32 %r21, %r12, %r13;
	add.u32 %r22, %r14, %r15;
	add.u32 %r23, %r16, %r17;
	add.u32 %r24, %r20, %r21;
	add.u32 %r25, %r22, %r23;
	sub.u32 %r26, %r24, %r25;
	sub.u32 %r27, %r26, %r2;
	mul.wide.u32 %rd2, %r0, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r27;
	ret;
}}
",
        lane_bytes = 4 * lane,
        o0 = 0,
        o1 = 4 * row,
        o2 = 8 * row,
        o3 = 12 * row,
        o4 = 16 * row,
        o5 = 20 * row,
        o6 = 24 * row,
        o7 = 28 * row,
    )
}

#[test]
fn bank_conflicts_cost_estimated_cycles_not_results() {
    if !common::tools() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("trident-sass-emu-banks-{}", std::process::id()));
    let run = |ptx: &str, name: &str| {
        let module = Module::parse(ptx).unwrap();
        let poisoned = || {
            let mut t = HostTensor::zeros(DType::U32, &[32]);
            t.data.iter_mut().for_each(|b| *b = 0xa5);
            vec![KernelArg::Buffer(t)]
        };
        let mut want = poisoned();
        let cfg = trident_emu::LaunchConfig { block: [32, 1, 1], ..Default::default() };
        trident_emu::launch(&module, "banks", &cfg, &mut want).unwrap_or_else(|e| panic!("PTX emulator: {e}"));
        let (_, text, p) = common::compile(ptx, "sm_90a", "banks", &dir, name);
        for ins in ["STS", "LDS"] {
            let n = text.iter().filter(|t| t.opcode == ins).count();
            assert_eq!(n, 8, "{name}: 8 scalar `{ins}`: {text:?}");
        }
        let mut got = poisoned();
        let cfg = LaunchConfig { block: [32, 1, 1], ..Default::default() };
        let report = launch(&p, &cfg, &mut got).unwrap_or_else(|e| panic!("SASS emulator ({name}): {e}"));
        let (KernelArg::Buffer(a), KernelArg::Buffer(b)) = (&want[0], &got[0]) else { panic!("a buffer") };
        assert_eq!(a.data, b.data, "{name}: outputs of the two emulators");
        report.cycles
    };
    // Rows 32 words apart, lane l at word l: every access one wavefront.
    let free = run(&kernel(1, 32), "free");
    // Rows 1024 words apart, lane l at word 32 l (128 bytes): all lanes in one bank. (Rows
    // far apart keep ptxas from merging a lane's words into one vector access.)
    let conflicted = run(&kernel(32, 1024), "conflicted");
    // 16 accesses with 31 extra wavefronts each; the stores' part hides in the queue only
    // until it holds 32 cycles.
    eprintln!("conflicted {conflicted}, free {free}");
    assert!(conflicted >= free + 16 * 31 / 2, "conflicted {conflicted} cycles, conflict-free {free}");
}

/// `warps` warps, each on its own rows: lane `l` of warp `w` at word `l * lane` of rows
/// `w * 4 + r` (`row` words apart), 4 stores then 4 loads per lane.
fn kernel_warps(lane: u32, row: u32) -> String {
    let (o, w) = (|r: u32| 4 * r * row, 16 * row);
    format!(
        ".version 8.0
.target sm_90a
.address_size 64
.visible .entry banks(.param .u64 out)
{{
	.reg .b32 %r<40>;
	.reg .b64 %rd<4>;
	.shared .align 16 .b32 buf[8192];
	ld.param.u64 %rd1, [out];
	mov.u32 %r0, %tid.x;
	and.b32 %r5, %r0, 31;
	shr.u32 %r6, %r0, 5;
	mul.lo.u32 %r1, %r5, {lane_bytes};
	mul.lo.u32 %r7, %r6, {w};
	add.u32 %r1, %r1, %r7;
	mov.u32 %r2, buf;
	add.u32 %r3, %r2, %r1;
	st.shared.u32 [%r3+{o0}], %r0;
	st.shared.u32 [%r3+{o1}], %r1;
	st.shared.u32 [%r3+{o2}], %r5;
	st.shared.u32 [%r3+{o3}], %r6;
	bar.warp.sync -1;
	ld.shared.u32 %r10, [%r3+{o0}];
	ld.shared.u32 %r11, [%r3+{o1}];
	ld.shared.u32 %r12, [%r3+{o2}];
	ld.shared.u32 %r13, [%r3+{o3}];
	add.u32 %r20, %r10, %r11;
	add.u32 %r21, %r12, %r13;
	sub.u32 %r26, %r20, %r21;
	mul.wide.u32 %rd2, %r0, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r26;
	ret;
}}
",
        lane_bytes = 4 * lane,
        o0 = o(0),
        o1 = o(1),
        o2 = o(2),
        o3 = o(3),
    )
}

/// The shared-memory pipe is the SM's: four warps (one per sub-partition, so the issue slots
/// do not limit them) whose every access is an 8-way bank conflict take about four times as
/// long as one warp — their wavefronts pass one pipe — while conflict-free ones barely slow.
#[test]
fn warps_share_the_shared_memory_pipe() {
    if !common::tools() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("trident-sass-emu-mio-{}", std::process::id()));
    let run = |ptx: &str, name: &str, warps: u32| {
        let threads = 32 * warps;
        let module = Module::parse(ptx).unwrap();
        let poisoned = || {
            let mut t = HostTensor::zeros(DType::U32, &[threads as usize]);
            t.data.iter_mut().for_each(|b| *b = 0xa5);
            vec![KernelArg::Buffer(t)]
        };
        let mut want = poisoned();
        let cfg = trident_emu::LaunchConfig { block: [threads, 1, 1], ..Default::default() };
        trident_emu::launch(&module, "banks", &cfg, &mut want).unwrap_or_else(|e| panic!("PTX emulator: {e}"));
        let (_, _, p) = common::compile(ptx, "sm_90a", "banks", &dir, name);
        let mut got = poisoned();
        let cfg = LaunchConfig { block: [threads, 1, 1], ..Default::default() };
        let report = launch(&p, &cfg, &mut got).unwrap_or_else(|e| panic!("SASS emulator ({name}): {e}"));
        let (KernelArg::Buffer(a), KernelArg::Buffer(b)) = (&want[0], &got[0]) else { panic!("a buffer") };
        assert_eq!(a.data, b.data, "{name}, {warps} warps: outputs of the two emulators");
        report.cycles
    };
    // Lane l at word 8 l: lanes 4 apart share a bank, 8 wavefronts per access.
    let conflicted = kernel_warps(8, 256);
    let (c1, c4) = (run(&conflicted, "c", 1), run(&conflicted, "c", 4));
    let free = kernel_warps(1, 256);
    let (f1, f4) = (run(&free, "f", 1), run(&free, "f", 4));
    eprintln!("8-way conflicted: 1 warp {c1}, 4 warps {c4} cycles; conflict-free: 1 warp {f1}, 4 warps {f4}");
    // 4 warps × 8 accesses × 8 wavefronts = 256 cycles of pipe, against 64 for one warp.
    assert!(c4 >= c1 + 150, "four warps' conflicted wavefronts share one pipe: {c4} vs {c1}");
    assert!(f4 <= f1 + 40, "conflict-free accesses barely wait for each other: {f4} vs {f1}");
}
