//! Named barriers as ping-pong turns between warps (the lowering of `pingpong_wait` /
//! `pingpong_pass`: `bar.sync` on a register id, `bar.arrive`, a predicated `bar.arrive` to
//! start): two warps take eight turns each at incrementing a shared counter, recording who
//! held each turn; both emulators must see strict alternation, warp 0 first. ptxas turns
//! these into `BAR.SYNC.DEFER_BLOCKING R, 0x40`, `BAR.ARV R, 0x40` and `@!P BAR.ARV 0x2, 0x40`.
//! Needs ptxas and nvdisasm (scripts/install-tools).

mod common;

use trident_core::{DType, HostTensor};
use trident_emu::{KernelArg, Module};
use trident_sass_emu::{launch, LaunchConfig};

const TURNS: &str = ".version 8.0
.target sm_90a
.address_size 64
.visible .entry turns(.param .u64 out)
.reqntid 64
{
	.reg .b32 %r<16>;
	.reg .b64 %rd<8>;
	.reg .pred %p<4>;
	.shared .align 4 .b32 cnt;
	ld.param.u64 %rd1, [out];
	mov.u32 %r0, %tid.x;
	shr.u32 %r1, %r0, 5;
	add.u32 %r2, %r1, 2;
	sub.u32 %r3, 3, %r1;
	setp.eq.u32 %p1, %r1, 1;
	and.b32 %r5, %r0, 31;
	setp.eq.u32 %p2, %r5, 0;
	setp.eq.u32 %p3, %r0, 0;
	mov.u32 %r7, 0;
	@%p3 st.shared.u32 [cnt], %r7;
	bar.sync 0;
	@%p1 bar.arrive 2, 64;
	mov.u32 %r4, 0;
LOOP:
	bar.sync %r2, 64;
	ld.shared.u32 %r6, [cnt];
	add.u32 %r8, %r6, 1;
	bar.warp.sync -1;
	@%p2 st.shared.u32 [cnt], %r8;
	mul.wide.u32 %rd2, %r6, 4;
	add.s64 %rd3, %rd1, %rd2;
	@%p2 st.global.u32 [%rd3], %r1;
	bar.arrive %r3, 64;
	add.u32 %r4, %r4, 1;
	setp.lt.u32 %p0, %r4, 8;
	@%p0 bra LOOP;
	@!%p1 bar.sync 2, 64;
	ret;
}
";

#[test]
fn turns_alternate_between_two_warps_on_both_emulators() {
    if !common::tools() {
        return;
    }
    let poisoned = || {
        let mut t = HostTensor::zeros(DType::U32, &[16]);
        t.data.iter_mut().for_each(|b| *b = 0xa5);
        KernelArg::Buffer(t)
    };
    let want: Vec<u64> = (0..16).map(|i| i % 2).collect();
    let module = Module::parse(TURNS).unwrap();
    let mut ptx_args = vec![poisoned()];
    let cfg = trident_emu::LaunchConfig { block: [64, 1, 1], ..Default::default() };
    trident_emu::launch(&module, "turns", &cfg, &mut ptx_args).unwrap_or_else(|e| panic!("PTX emulator: {e}"));
    let dir = std::env::temp_dir().join(format!("trident-sass-emu-bars-{}", std::process::id()));
    let (_, text, p) = common::compile(TURNS, "sm_90a", "turns", &dir, "turns");
    let sass: Vec<String> = text.iter().map(|t| format!("{t:?}")).collect();
    assert!(sass.iter().any(|t| t.contains("BAR.ARV")), "ptxas kept the arrivals: {sass:?}");
    let mut sass_args = vec![poisoned()];
    let cfg = LaunchConfig { block: [64, 1, 1], ..Default::default() };
    launch(&p, &cfg, &mut sass_args).unwrap_or_else(|e| panic!("SASS emulator: {e}"));
    for (who, args) in [("PTX emulator", &ptx_args), ("SASS emulator", &sass_args)] {
        let KernelArg::Buffer(out) = &args[0] else { panic!("a buffer") };
        let got: Vec<u64> = (0..16).map(|i| out.get_bits(i)).collect();
        assert_eq!(got, want, "{who}: the warp that held each turn");
    }
}
