//! Warpgroup MMAs in the SASS emulator's estimate (sm_90a `HGMMA`): each warp's part holds
//! its sub-partition's tensor pipe for N/2 cycles per `64xNx16` (H100: 2048 f16
//! multiply-adds a cycle per SM), the warp runs on until `WARPGROUP.DEPBAR`, and the two
//! warpgroups of an 8-warp CTA share the four tensor pipes. Sixteen more chained
//! `m64n128k16` MMAs in a kernel must cost their 1024 tensor cycles on one warpgroup and
//! twice that on two (the rest of the kernel is the same, so the difference is the MMAs'),
//! as in the PTX emulator's model of `wgmma` (the same rates). Outputs are checked against
//! the PTX emulator. Needs ptxas and nvdisasm (scripts/install-tools).

mod common;

use trident_emu::{KernelArg, Module};
use trident_sass_emu::{launch, LaunchConfig};

/// The MMAs' N: the tensor pipe's cycles per MMA are N/2.
const N: usize = 128;

/// Every thread writes 32 words of shared memory (a warp's 32 consecutive words at a time:
/// no bank conflicts) with f16 values near 1, then the warpgroup
/// runs `rounds` chained `m64n128k16` MMAs (A at the start of shared memory, B 4 KB on, both
/// K-major without swizzle), waits, and each thread writes the sum of its first and last
/// accumulators.
fn kernel(rounds: usize) -> String {
    let regs: Vec<String> = (0..N / 2).map(|i| format!("%d{i}")).collect();
    let d = regs.join(",");
    let mut mmas = String::new();
    for _ in 0..rounds {
        mmas +=
            &format!("\twgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {{{d}}}, %rd4, %rd5, %p1, 1, 1, 0, 0;\n");
    }
    let zero: String = (0..N / 2).map(|i| format!("\tmov.f32 %d{i}, 0f00000000;\n")).collect();
    format!(
        ".version 8.0
.target sm_90a
.address_size 64
.visible .entry mmas(.param .u64 out)
{{
	.reg .b32 %r<12>;
	.reg .f32 %d<{n2}>;
	.reg .f32 %f<2>;
	.reg .b64 %rd<8>;
	.reg .pred %p<3>;
	.shared .align 1024 .b8 smem[32768];
	mov.u32 %r0, %tid.x;
	mov.u32 %r1, smem;
	shl.b32 %r2, %r0, 2;
	add.u32 %r2, %r2, %r1;
	mov.u32 %r7, %ntid.x;
	shl.b32 %r7, %r7, 2;
	mov.u32 %r3, 0;
$L_fill:
	add.u32 %r4, %r0, %r3;
	and.b32 %r4, %r4, 7;
	or.b32 %r4, %r4, 0x3c00;
	shl.b32 %r5, %r4, 16;
	or.b32 %r4, %r4, %r5;
	mul.lo.u32 %r5, %r3, %r7;
	add.u32 %r5, %r2, %r5;
	st.shared.u32 [%r5], %r4;
	add.u32 %r3, %r3, 1;
	setp.lt.u32 %p2, %r3, 32;
	@%p2 bra $L_fill;
	bar.sync 0;
	// Descriptors: start >> 4, leading byte offset 128 >> 4, stride byte offset 256 >> 4.
	cvt.u64.u32 %rd1, %r1;
	shr.u64 %rd1, %rd1, 4;
	or.b64 %rd4, %rd1, 0x0000001000080000;
	add.u64 %rd5, %rd4, 256;
	setp.eq.u32 %p1, %r0, %r0;
{zero}	wgmma.fence.sync.aligned;
{mmas}	wgmma.commit_group.sync.aligned;
	wgmma.wait_group.sync.aligned 0;
	add.f32 %f0, %d0, %d{last};
	mov.b32 %r6, %f0;
	ld.param.u64 %rd2, [out];
	mul.wide.u32 %rd3, %r0, 4;
	add.s64 %rd3, %rd2, %rd3;
	st.global.u32 [%rd3], %r6;
	ret;
}}
",
        n2 = N / 2,
        last = N / 2 - 1,
    )
}

/// Modelled cycles of the kernel of `rounds` MMAs on `warps` warps: (SASS emulator, PTX
/// emulator), the outputs of the two checked equal.
fn cycles(rounds: usize, warps: u32) -> (u64, u64) {
    let (report, ptx) = run(rounds, warps, 1);
    (report.cycles, ptx)
}

/// The SASS emulator's report of the kernel on a grid of `ctas` (each writing the same
/// outputs), and the PTX emulator's cycles for one CTA.
fn run(rounds: usize, warps: u32, ctas: u32) -> (trident_sass_emu::Report, u64) {
    let dir = std::env::temp_dir().join(format!("trident-sass-emu-tensor-{}", std::process::id()));
    let ptx = kernel(rounds);
    let threads = 32 * warps;
    let module = Module::parse(&ptx).unwrap();
    let mut want = common::poisoned_u32(threads);
    let cfg = trident_emu::LaunchConfig { block: [threads, 1, 1], ..Default::default() };
    let ptx_report =
        trident_emu::launch(&module, "mmas", &cfg, &mut want).unwrap_or_else(|e| panic!("PTX emulator: {e}"));
    let (_, _, p) = common::compile(&ptx, "sm_90a", "mmas", &dir, &format!("mmas{rounds}x{warps}"));
    let mut got = common::poisoned_u32(threads);
    let cfg = LaunchConfig { grid: [ctas, 1, 1], block: [threads, 1, 1], ..Default::default() };
    let report = launch(&p, &cfg, &mut got).unwrap_or_else(|e| panic!("SASS emulator: {e}"));
    let (KernelArg::Buffer(a), KernelArg::Buffer(b)) = (&want[0], &got[0]) else { panic!("a buffer") };
    assert_eq!(a.data, b.data, "{rounds} MMAs, {warps} warps: outputs of the two emulators");
    assert!(b.data.chunks(4).all(|x| x != [0xa5; 4]), "every thread wrote its result");
    (report, ptx_report.cycles)
}

#[test]
fn warpgroups_share_the_tensor_pipes() {
    if !common::tools() {
        return;
    }
    // Sixteen MMAs' tensor time on one sub-partition.
    let tensor = (16 * N / 2) as u64;
    let extra = |warps| {
        let ((s2, p2), (s18, p18)) = (cycles(2, warps), cycles(18, warps));
        eprintln!("{warps} warps, 2 / 18 MMAs: SASS emulator {s2} / {s18}, PTX emulator {p2} / {p18} cycles");
        (s18 - s2, p18.saturating_sub(p2))
    };
    let ((four, ptx_four), (eight, ptx_eight)) = (extra(4), extra(8));
    for (warps, got, want, ptx) in [(4, four, tensor, ptx_four), (8, eight, 2 * tensor, ptx_eight)] {
        assert!(got * 100 >= want * 95 && got * 100 <= want * 110, "{warps} warps: 16 MMAs cost {got}, not ~{want}");
        assert!(
            got * 10 >= ptx * 8 && got * 10 <= ptx * 12,
            "{warps} warps: the two emulators' models of 16 MMAs differ: {got} vs {ptx}"
        );
    }
}

/// The grid's estimate: 132 CTAs fill an H100's SMs once; 264 put two on each SM (this
/// kernel's registers and shared memory allow more), one wave, and the two share the SM's
/// tensor pipes — their 2 × 18 MMAs take 2 × 1152 tensor cycles a sub-partition, while the
/// rest of their time (fill, waits) overlaps. 264 CTAs one at a time would be two waves.
#[test]
fn ctas_sharing_an_sm_share_its_tensor_pipes() {
    if !common::tools() {
        return;
    }
    let tensor = (18 * N / 2) as u64;
    let (one, _) = run(18, 4, 132);
    let (two, _) = run(18, 4, 264);
    eprintln!(
        "132 CTAs: {} cycles ({} a CTA, {} per SM, {} waves); 264 CTAs: {} cycles ({} waves)",
        one.cycles, one.cta_cycles, one.ctas_per_sm, one.waves, two.cycles, two.waves
    );
    assert_eq!((one.waves, one.cycles), (1, one.cta_cycles), "one CTA per SM: the slowest CTA's time");
    assert!(two.ctas_per_sm >= 2 && two.waves == 1, "two CTAs per SM fit at once: {} per SM", two.ctas_per_sm);
    assert!(two.cycles >= 2 * tensor, "two CTAs' MMAs share the tensor pipes: {} < {}", two.cycles, 2 * tensor);
    assert!(two.cycles < 2 * one.cycles, "the rest of their time overlaps: {} vs {}", two.cycles, one.cycles);
}
