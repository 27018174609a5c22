//! Issue slots in the SASS emulator's estimate: an SM's four sub-partitions each issue one
//! warp instruction per cycle, and warp `w` of a CTA runs on sub-partition `w % 4`. A kernel
//! of independent f32 FMAs (full rate: one warp instruction per cycle per sub-partition) (issue-bound: nothing to wait for) must be estimated
//! about as fast on four warps as on one (each has a sub-partition to itself) and markedly
//! slower on eight (two warps share each); a dependent chain (latency-bound: each warp
//! issues only every few cycles) barely slows at eight, the other warp filling the stalls.
//! Results are checked against the PTX emulator. Needs ptxas and nvdisasm
//! (scripts/install-tools).

mod common;

use trident_emu::{KernelArg, Module};
use trident_sass_emu::{launch, LaunchConfig};

/// 64 rounds over `ways` accumulators: `ways` independent chains of `x = 0.5 x + 1` in f32 (a
/// full-rate FMA; no reassociation lets the compiler shorten the chain).
fn kernel(ways: usize, arch: &str) -> String {
    let mut body = String::new();
    for i in 0..ways {
        body += &format!("\tadd.u32 %r3, %r0, {i};\n\tcvt.rn.f32.u32 %a{i}, %r3;\n");
    }
    body += "\tmov.u32 %r1, 0;\n$L_loop:\n";
    for i in 0..ways {
        body += &format!("\tfma.rn.f32 %a{i}, %a{i}, 0f3F000000, 0f3F800000;\n");
    }
    body += "\tadd.u32 %r1, %r1, 1;\n\tsetp.lt.u32 %p1, %r1, 64;\n\t@%p1 bra $L_loop;\n";
    body += "\tmov.u32 %r2, 0;\n";
    for i in 0..ways {
        body += &format!("\tmov.b32 %r3, %a{i};\n\txor.b32 %r2, %r2, %r3;\n");
    }
    format!(
        ".version 8.0
.target {arch}
.address_size 64
.visible .entry chains(.param .u64 out)
{{
	.reg .b32 %r<8>;
	.reg .f32 %a<16>;
	.reg .b64 %rd<4>;
	.reg .pred %p<2>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r0, %tid.x;
{body}	mul.wide.u32 %rd2, %r0, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r2;
	ret;
}}
"
    )
}

/// Modelled cycles of `chains` with `ways` chains on `warps` warps for `arch`, its outputs
/// checked against the PTX emulator's; `edit` may change the cubin's control bits first.
fn cycles(
    arch: &str,
    ways: usize,
    warps: u32,
    edit: &dyn Fn(&mut trident_sass::Cubin, &[trident_sass::disasm::Text]),
) -> u64 {
    let dir = std::env::temp_dir().join(format!("trident-sass-emu-slots-{}", std::process::id()));
    {
        let ptx = kernel(ways, arch);
        let threads = 32 * warps;
        let module = Module::parse(&ptx).unwrap();
        let mut want = common::poisoned_u32(threads);
        let cfg = trident_emu::LaunchConfig { block: [threads, 1, 1], ..Default::default() };
        trident_emu::launch(&module, "chains", &cfg, &mut want).unwrap_or_else(|e| panic!("PTX emulator: {e}"));
        let (mut cubin, text, _) = common::compile(&ptx, arch, "chains", &dir, &format!("chains{ways}{arch}"));
        edit(&mut cubin, &text);
        let p = trident_sass_emu::Program::new(&cubin, "chains", &text).unwrap();
        let mut got = common::poisoned_u32(threads);
        let cfg = LaunchConfig { block: [threads, 1, 1], ..Default::default() };
        let report = launch(&p, &cfg, &mut got).unwrap_or_else(|e| panic!("SASS emulator: {e}"));
        let (KernelArg::Buffer(a), KernelArg::Buffer(b)) = (&want[0], &got[0]) else { panic!("a buffer") };
        assert_eq!(a.data, b.data, "{ways} chains, {warps} warps: outputs of the two emulators");
        report.cycles
    }
}

#[test]
fn warps_share_their_sub_partitions_issue_slots() {
    if !common::tools() {
        return;
    }
    let cycles = |ways, warps| cycles("sm_90a", ways, warps, &|_, _| {});
    // Issue-bound: eight independent chains.
    let (one, four, eight) = (cycles(8, 1), cycles(8, 4), cycles(8, 8));
    eprintln!("8 chains: 1 warp {one}, 4 warps {four}, 8 warps {eight} cycles");
    assert!(four <= one + one / 20, "four warps, one per sub-partition: {four} vs one warp's {one}");
    assert!(eight * 10 >= four * 17, "eight warps, two per sub-partition: {eight} vs four warps' {four}");
    // Latency-bound: one chain.
    let (four, eight) = (cycles(1, 4), cycles(1, 8));
    eprintln!("1 chain: 4 warps {four}, 8 warps {eight} cycles");
    assert!(eight * 10 <= four * 12, "a dependent chain leaves room for a second warp: {eight} vs {four}");
}

/// sm_80's FMA pipe takes a warp's `FFMA` every 2 cycles (`trident_sass::pipes`): eight
/// warps, two per sub-partition, take about twice as long as four, although two warps' stall
/// counts of 2 would interleave in the issue slots; and lowering `ptxas`'s stalls between the
/// `FFMA`s from 2 to 1 (still no hazard: each chain's next step is 8 instructions on) does not
/// make one warp faster — the pipe is the limit, not the stall count.
#[test]
fn warps_wait_for_their_pipes() {
    if !common::tools() {
        return;
    }
    let none = |_: &mut trident_sass::Cubin, _: &[trident_sass::disasm::Text]| {};
    let (four, eight) = (cycles("sm_80", 8, 4, &none), cycles("sm_80", 8, 8, &none));
    eprintln!("sm_80, 8 chains: 4 warps {four}, 8 warps {eight} cycles");
    assert!(eight * 10 >= four * 18, "two warps share a sub-partition's FMA pipe: {eight} vs {four}");
    let lowered = std::cell::Cell::new(0);
    let lower = |c: &mut trident_sass::Cubin, text: &[trident_sass::disasm::Text]| {
        let k = c.kernels.iter_mut().find(|k| k.name == "chains").unwrap();
        for (i, t) in text.iter().enumerate() {
            let next_ffma = text.get(i + 1).is_some_and(|n| n.opcode == "FFMA");
            let ctl = k.instrs[i].control();
            if t.opcode == "FFMA" && next_ffma && ctl.stall == 2 {
                k.instrs[i].set_control(trident_sass::Control { stall: 1, ..ctl });
                lowered.set(lowered.get() + 1);
            }
        }
    };
    let (as_is, faster) = (cycles("sm_80", 8, 1, &none), cycles("sm_80", 8, 1, &lower));
    eprintln!("sm_80, 8 chains, one warp: {as_is} cycles; {faster} with {} FFMA stalls lowered to 1", lowered.get());
    assert!(lowered.get() >= 100, "the edit found ptxas's FFMA pairs: {}", lowered.get());
    assert!(faster * 100 >= as_is * 97, "the lowered stalls gain nothing: {faster} vs {as_is}");
}
