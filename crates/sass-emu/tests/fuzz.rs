//! The differential fuzzer: random straight-line PTX programs over the integer, float,
//! half, conversion and predicate families, compiled by `ptxas` for sm_80 and sm_90a, run on
//! the PTX emulator (the PTX ISA's semantics) and on the SASS emulator (the SASS `ptxas`
//! made) with random inputs; the outputs must agree bit for bit (float NaNs as NaNs). The
//! approximate functions (`ex2`/`rcp`/`sqrt.approx`) are left out: `ptxas` builds some from
//! other `MUFU` functions, so the two emulators differ by an ulp there by design (the catalog
//! checks them against references with tolerances). Float adds and multiplies carry `.rn`,
//! which forbids `ptxas` to fuse them into an FMA (without it, it may, and does: a different
//! but valid rounding). By default the programs use the integer
//! and compare families, which agree; `TRIDENT_SASS_FUZZ_FAMILIES=all` adds float, half and
//! conversion instructions, where it still finds 1-ulp and sign differences (issue 11's
//! closing note lists them). A short
//! run in the test suite; a long one with `TRIDENT_SASS_FUZZ=N` programs. The seed is printed
//! and `TRIDENT_SASS_FUZZ_SEED` replays it.

use std::fmt::Write as _;

mod common;

use common::Rng;
use trident_core::{DType, HostTensor};
use trident_emu::{KernelArg, Module};
use trident_sass_emu::{launch, LaunchConfig};

const INPUTS: usize = 6;
const OUT_I: usize = 4;
const OUT_F: usize = 4;
const THREADS: usize = 64;

/// One program: PTX text. Each thread reads `INPUTS` u32 words, computes, writes `OUT_I`
/// integer and `OUT_F` float results.
fn program(rng: &mut Rng, steps: usize, all_families: bool) -> String {
    let mut body = String::new();
    let (mut ni, mut nf, mut np, mut nh) = (INPUTS, INPUTS, 0usize, 0usize);
    // %r0..%r5 inputs as integers, %f0..%f5 the same bits as floats.
    let ri = |rng: &mut Rng, n: usize| format!("%r{}", rng.below(n));
    let rf = |rng: &mut Rng, n: usize| format!("%f{}", rng.below(n));
    for _ in 0..steps {
        let d = ni;
        // Integer arithmetic and integer compares only, unless all families are asked for.
        let family = if all_families { rng.below(10) } else { [0, 1, 2, 6, 9][rng.below(5)] };
        match family {
            0..=2 => {
                let (a, b, c) = (ri(rng, ni), ri(rng, ni), ri(rng, ni));
                let imm =
                    rng.pick(&["0", "1", "3", "7", "31", "32", "255", "0x7fffffff", "0x80000000", "0xffffffff", "-5"]);
                let line = match rng.below(22) {
                    0 => format!("add.u32 %r{d}, {a}, {b};"),
                    1 => format!("sub.u32 %r{d}, {a}, {b};"),
                    2 => format!("mul.lo.u32 %r{d}, {a}, {b};"),
                    3 => format!("mul.hi.u32 %r{d}, {a}, {b};"),
                    4 => format!("mul.hi.s32 %r{d}, {a}, {b};"),
                    5 => format!("mad.lo.u32 %r{d}, {a}, {b}, {c};"),
                    6 => format!("shl.b32 %r{d}, {a}, {b};"),
                    7 => format!("shr.u32 %r{d}, {a}, {b};"),
                    8 => format!("shr.s32 %r{d}, {a}, {b};"),
                    9 => format!("and.b32 %r{d}, {a}, {b};"),
                    10 => format!("or.b32 %r{d}, {a}, {imm};"),
                    11 => format!("xor.b32 %r{d}, {a}, {b};"),
                    12 => format!("not.b32 %r{d}, {a};"),
                    13 => format!("min.s32 %r{d}, {a}, {b};"),
                    14 => format!("max.u32 %r{d}, {a}, {b};"),
                    // Not `abs.s32`: ptxas treats its result as non-negative (a later unsigned
                    // conversion becomes a signed one), which abs(-2^31) is not; the SASS
                    // emulator then computes what the hardware would, and the two differ.
                    15 => format!("popc.b32 %r{d}, {a};"),
                    // Not `neg.s32` (nor `sub` from 0): `ptxas` 13.0 for sm_90a drops the
                    // negation when it fuses two signed min/max into `VIMNMX3` — min(min(a, -b),
                    // c) assembles to the same machine code as min(min(a, b), c) (13.5 is
                    // right; bench/SASS_EMU.md has the reproducer). A nonzero minuend is safe.
                    16 => format!("sub.s32 %r{d}, {}, {a};", rng.pick(&["1", "-3", "100"])),
                    17 => format!(
                        "prmt.b32 %r{d}, {a}, {b}, {};",
                        rng.pick(&["0x3210", "0x0123", "0x7610", "0x5410", "0x1032", "0x8884"])
                    ),
                    18 => format!("add.u32 %r{d}, {a}, {imm};"),
                    19 => format!("shl.b32 %r{d}, {a}, {};", rng.below(40)),
                    20 => {
                        // A 64-bit product and its halves.
                        format!(
                            "{{ .reg .b64 %t; mul.wide.u32 %t, {a}, {b}; add.u64 %t, %t, 0x123456789; cvt.u32.u64 %r{d}, %t; }}"
                        )
                    }
                    _ => format!("min.u32 %r{d}, {a}, {imm};"),
                };
                let _ = writeln!(body, "    {line}");
                ni += 1;
            }
            3..=5 => {
                let (a, b, c) = (rf(rng, nf), rf(rng, nf), rf(rng, nf));
                let k = rng.pick(&["0f3F800000", "0fBF000000", "0f40490FDB", "0f00000000", "0f7F800000", "0f3A83126F"]);
                let d = nf;
                let line = match rng.below(21) {
                    16 => format!("div.rn.f32 %f{d}, {a}, {b};"),
                    17 => format!("cvt.rni.f32.f32 %f{d}, {a};"),
                    18 => format!("cvt.rmi.f32.f32 %f{d}, {a};"),
                    19 => format!("cvt.rpi.ftz.f32.f32 %f{d}, {a};"),
                    20 => format!("cvt.rzi.f32.f32 %f{d}, {a};"),
                    0 => format!("add.rn.f32 %f{d}, {a}, {b};"),
                    1 => format!("sub.rn.f32 %f{d}, {a}, {b};"),
                    2 => format!("mul.rn.f32 %f{d}, {a}, {b};"),
                    3 => format!("fma.rn.f32 %f{d}, {a}, {b}, {c};"),
                    4 => format!("min.f32 %f{d}, {a}, {b};"),
                    5 => format!("max.f32 %f{d}, {a}, {b};"),
                    6 => format!("abs.f32 %f{d}, {a};"),
                    7 => format!("neg.f32 %f{d}, {a};"),
                    8 => format!("mul.rn.f32 %f{d}, {a}, {k};"),
                    9 => format!("add.rn.f32 %f{d}, {a}, {k};"),
                    10 => format!("sub.rn.ftz.f32 %f{d}, {a}, {b};"),
                    11 => format!("add.rn.ftz.f32 %f{d}, {a}, {b};"),
                    12 => format!("mul.rn.ftz.f32 %f{d}, {a}, {b};"),
                    13 => format!("fma.rn.ftz.f32 %f{d}, {a}, {b}, {c};"),
                    14 => format!("min.ftz.f32 %f{d}, {a}, {b};"),
                    _ => format!("max.f32 %f{d}, {a}, {k};"),
                };
                let _ = writeln!(body, "    {line}");
                nf += 1;
            }
            6 => {
                // Compare and select.
                let p = np;
                let line = if rng.below(3) == 0 {
                    // 64-bit compares (`ISETP` on the low words, `ISETP.EX` on the high ones);
                    // half the time with equal high words, where the low words decide.
                    let cmp = rng.pick(&["lt.s64", "ge.u64", "eq.s64", "ne.u64", "gt.s64", "le.u64", "lt.u64"]);
                    let (hi_a, lo_a, lo_b) = (ri(rng, ni), ri(rng, ni), ri(rng, ni));
                    let hi_b = if rng.below(2) == 0 { hi_a.clone() } else { ri(rng, ni) };
                    format!(
                        "{{ .reg .b64 %x, %y; mov.b64 %x, {{{lo_a}, {hi_a}}}; mov.b64 %y, {{{lo_b}, {hi_b}}}; setp.{cmp} %p{p}, %x, %y; }}"
                    )
                } else if !all_families || rng.below(2) == 0 {
                    let cmp = rng.pick(&["lt.s32", "ge.u32", "eq.u32", "ne.s32", "gt.s32", "le.u32"]);
                    format!("setp.{cmp} %p{p}, {}, {};", ri(rng, ni), ri(rng, ni))
                } else {
                    let cmp = rng.pick(&["lt.f32", "gtu.f32", "eq.f32", "neu.f32", "ge.f32", "num.f32", "nan.f32"]);
                    format!("setp.{cmp} %p{p}, {}, {};", rf(rng, nf), rf(rng, nf))
                };
                let _ = writeln!(body, "    {line}");
                np += 1;
                let _ = writeln!(body, "    selp.b32 %r{ni}, {}, {}, %p{p};", ri(rng, ni), ri(rng, ni));
                ni += 1;
                let _ = writeln!(body, "    selp.f32 %f{nf}, {}, {}, %p{p};", rf(rng, nf), rf(rng, nf));
                nf += 1;
            }
            7 => {
                // Conversions.
                let line = match rng.below(6) {
                    0 => format!("cvt.rzi.s32.f32 %r{ni}, {};", rf(rng, nf)),
                    1 => format!("cvt.rni.u32.f32 %r{ni}, {};", rf(rng, nf)),
                    2 => {
                        let l = format!("cvt.rn.f32.s32 %f{nf}, {};", ri(rng, ni));
                        nf += 1;
                        let _ = writeln!(body, "    {l}");
                        continue;
                    }
                    3 => {
                        let l = format!("cvt.rn.f32.u32 %f{nf}, {};", ri(rng, ni));
                        nf += 1;
                        let _ = writeln!(body, "    {l}");
                        continue;
                    }
                    4 => {
                        let h = nh;
                        nh += 1;
                        let l = format!("cvt.rn.f16.f32 %h{h}, {}; cvt.f32.f16 %f{nf}, %h{h};", rf(rng, nf));
                        nf += 1;
                        let _ = writeln!(body, "    {l}");
                        continue;
                    }
                    _ => format!("cvt.u32.u16 %r{ni}, %rs0;"),
                };
                let _ = writeln!(body, "    {line}");
                ni += 1;
            }
            9 => {
                // Warp-wide: votes, reductions, matches, shuffles (all 32 lanes take part).
                let (a, b) = (ri(rng, ni), ri(rng, ni));
                let cmp = rng.pick(&["lt.u32", "ge.s32", "eq.u32", "ne.u32"]);
                let full = "0xffffffff";
                let line = match rng.below(9) {
                    0 => format!("{{ .reg .pred %q; setp.{cmp} %q, {a}, {b}; vote.sync.ballot.b32 %r{d}, %q, {full}; }}"),
                    1 => {
                        let mode = rng.pick(&["any", "all", "uni"]);
                        format!(
                            "{{ .reg .pred %q, %s; setp.{cmp} %q, {a}, {b}; vote.sync.{mode}.pred %s, %q, {full}; selp.b32 %r{d}, {a}, {b}, %s; }}"
                        )
                    }
                    2 => {
                        let op = rng.pick(&["add.u32", "min.u32", "max.u32", "min.s32", "max.s32"]);
                        format!("redux.sync.{op} %r{d}, {a}, {full};")
                    }
                    3 => {
                        // Not `and`: `ptxas` issues its bare `REDUX` with no write scoreboard and
                        // reads the result after waiting only for a younger `REDUX.SUM` — which
                        // neither the in-order-queue rule nor a fixed latency in the table
                        // explains yet (1 program in 400; the open question is in the README).
                        let op = rng.pick(&["or.b32", "xor.b32"]);
                        format!("redux.sync.{op} %r{d}, {a}, {full};")
                    }
                    4 => format!(
                        "{{ .reg .b32 %t; and.b32 %t, {a}, {}; match.any.sync.b32 %r{d}, %t, {full}; }}",
                        rng.pick(&["1", "3", "0x80000003"])
                    ),
                    5 => format!(
                        "{{ .reg .b32 %t; .reg .pred %q; and.b32 %t, {a}, {}; match.all.sync.b32 %t|%q, %t, {full}; selp.b32 %r{d}, %t, {b}, %q; }}",
                        rng.pick(&["0", "1", "0x100"])
                    ),
                    6 => format!("shfl.sync.bfly.b32 %r{d}, {a}, {}, 0x1f, {full};", rng.below(32)),
                    7 => format!("shfl.sync.idx.b32 %r{d}, {a}, {b}, 0x1f, {full};"),
                    _ => format!("{{ .reg .pred %q; setp.{cmp} %q, {a}, {b}; vote.sync.ballot.b32 %r{d}, !%q, {full}; }}"),
                };
                let _ = writeln!(body, "    {line}");
                ni += 1;
            }
            _ => {
                // Half2 arithmetic on packed bits.
                let (a, b) = (ri(rng, ni), ri(rng, ni));
                let op = rng.pick(&["add.rn.f16x2", "mul.rn.f16x2", "sub.rn.f16x2"]);
                let _ = writeln!(body, "    {op} %r{ni}, {a}, {b};");
                ni += 1;
            }
        }
    }
    let mut ptx = String::new();
    let _ = writeln!(ptx, ".version 7.8\n.target sm_80\n.address_size 64\n");
    let _ = writeln!(ptx, ".visible .entry fuzz(.param .u64 in, .param .u64 out_i, .param .u64 out_f)\n{{");
    let _ =
        writeln!(ptx, "    .reg .b32 %r<{}>;\n    .reg .f32 %f<{}>;\n    .reg .pred %p<{}>;", ni + 2, nf + 2, np + 2);
    let _ = writeln!(
        ptx,
        "    .reg .b16 %h<{}>;\n    .reg .b16 %rs<2>;\n    .reg .b64 %rd<8>;\n    .reg .b32 %me;",
        nh + 2
    );
    let _ = writeln!(ptx, "    mov.u32 %me, %tid.x;");
    let _ =
        writeln!(ptx, "    ld.param.u64 %rd0, [in];\n    ld.param.u64 %rd1, [out_i];\n    ld.param.u64 %rd2, [out_f];");
    let _ = writeln!(
        ptx,
        "    cvta.to.global.u64 %rd0, %rd0;\n    cvta.to.global.u64 %rd1, %rd1;\n    cvta.to.global.u64 %rd2, %rd2;"
    );
    let _ = writeln!(ptx, "    mul.wide.u32 %rd3, %me, {};\n    add.u64 %rd4, %rd0, %rd3;", 4 * INPUTS);
    for i in 0..INPUTS {
        let _ = writeln!(ptx, "    ld.global.u32 %r{i}, [%rd4+{}];\n    mov.b32 %f{i}, %r{i};", 4 * i);
    }
    let _ = writeln!(ptx, "    cvt.u16.u32 %rs0, %r0;");
    ptx.push_str(&body);
    let _ = writeln!(
        ptx,
        "    mul.wide.u32 %rd5, %me, {};\n    add.u64 %rd6, %rd1, %rd5;\n    add.u64 %rd7, %rd2, %rd5;",
        4 * OUT_I
    );
    for k in 0..OUT_I {
        let _ = writeln!(ptx, "    st.global.u32 [%rd6+{}], %r{};", 4 * k, ni - 1 - k.min(ni - 1));
    }
    for k in 0..OUT_F {
        let _ = writeln!(ptx, "    st.global.f32 [%rd7+{}], %f{};", 4 * k, nf - 1 - k.min(nf - 1));
    }
    let _ = writeln!(ptx, "    ret;\n}}");
    ptx
}

fn inputs(rng: &mut Rng) -> HostTensor {
    let specials: [u32; 12] = [
        0,
        1,
        0x8000_0000,
        0x7fff_ffff,
        0xffff_ffff,
        0x3f80_0000,
        0xbf80_0000,
        0x7f80_0000,
        0x0000_0001,
        0x7fc0_0000,
        0x4049_0fdb,
        0x0080_0000,
    ];
    let mut t = HostTensor::zeros(DType::U32, &[THREADS * INPUTS]);
    for w in t.data.chunks_mut(4) {
        let v: u32 = match rng.below(4) {
            0 => *rng.pick(&specials),
            // A moderate float.
            1 => (((rng.next() % 2000) as f32 - 1000.0) / 7.0).to_bits(),
            2 => (rng.next() % 100) as u32,
            _ => rng.next() as u32,
        };
        w.copy_from_slice(&v.to_le_bytes());
    }
    t
}

/// A program's launch arguments for `input` (outputs zeroed) and what the PTX emulator — the
/// PTX ISA's semantics — leaves in them.
fn reference(module: &Module, input: HostTensor) -> Result<(Vec<KernelArg>, Vec<KernelArg>), String> {
    let args = vec![
        KernelArg::Buffer(input),
        KernelArg::Buffer(HostTensor::zeros(DType::U32, &[THREADS * OUT_I])),
        KernelArg::Buffer(HostTensor::zeros(DType::U32, &[THREADS * OUT_F])),
    ];
    let mut want = args.clone();
    let cfg = trident_emu::LaunchConfig { grid: [1, 1, 1], block: [THREADS as u32, 1, 1], ..Default::default() };
    trident_emu::launch(module, "fuzz", &cfg, &mut want).map_err(|e| e.to_string())?;
    Ok((args, want))
}

fn same_f32(a: u32, b: u32) -> bool {
    let (x, y) = (f32::from_bits(a), f32::from_bits(b));
    a == b || (x.is_nan() && y.is_nan())
}

#[test]
fn random_programs_agree_on_both_emulators() {
    if !common::tools() {
        return;
    }
    let n: usize = std::env::var("TRIDENT_SASS_FUZZ").ok().and_then(|v| v.parse().ok()).unwrap_or(12);
    let all_families = std::env::var("TRIDENT_SASS_FUZZ_FAMILIES").is_ok_and(|v| v == "all");
    let seed: u64 = std::env::var("TRIDENT_SASS_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
    });
    eprintln!("fuzz seed {seed} (TRIDENT_SASS_FUZZ_SEED), {n} programs (TRIDENT_SASS_FUZZ)");
    let mut rng = Rng(seed);
    let dir = std::env::temp_dir().join(format!("trident-sass-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut compared = 0usize;
    for i in 0..n {
        let steps = 10 + rng.below(30);
        let ptx = program(&mut rng, steps, all_families);
        let module = Module::parse(&ptx).unwrap_or_else(|e| panic!("program {i}: {e}\n{ptx}"));
        let (args, want) = reference(&module, inputs(&mut rng))
            .unwrap_or_else(|e| panic!("program {i} on the PTX emulator: {e}\n{ptx}"));
        for arch in ["sm_80", "sm_90a"] {
            let (_, _, p) = common::compile(&ptx, arch, "fuzz", &dir, &format!("p{i}.{arch}"));
            let mut got = args.clone();
            let scfg = LaunchConfig { grid: [1, 1, 1], block: [THREADS as u32, 1, 1], ..Default::default() };
            if let Err(e) = launch(&p, &scfg, &mut got) {
                panic!("program {i} ({arch}, seed {seed}) on the SASS emulator: {e}\n{ptx}");
            }
            for (which, float) in [(1usize, false), (2, true)] {
                let (KernelArg::Buffer(a), KernelArg::Buffer(b)) = (&want[which], &got[which]) else { unreachable!() };
                for (j, (x, y)) in a.data.chunks(4).zip(b.data.chunks(4)).enumerate() {
                    let (x, y) = (u32::from_le_bytes(x.try_into().unwrap()), u32::from_le_bytes(y.try_into().unwrap()));
                    let ok = if float { same_f32(x, y) } else { x == y };
                    if !ok {
                        // The failing thread's input words, to replay it alone.
                        let KernelArg::Buffer(inp) = &args[0] else { unreachable!() };
                        // The whole input for a replay outside the test (`trident run FILE.ptx`).
                        if let Ok(path) = std::env::var("TRIDENT_SASS_FUZZ_DUMP") {
                            let _ = std::fs::write(format!("{path}.ptx"), &ptx);
                            let _ = std::fs::write(format!("{path}.in.bin"), &inp.data);
                        }
                        let t = j / if float { OUT_F } else { OUT_I };
                        let words: Vec<String> = inp.data[4 * INPUTS * t..4 * INPUTS * (t + 1)]
                            .chunks(4)
                            .map(|c| format!("{:#010x}", u32::from_le_bytes(c.try_into().unwrap())))
                            .collect();
                        panic!(
                            "program {i} ({arch}, seed {seed}): output {} word {j} (thread {t}, inputs {}): PTX emulator {x:#010x}, SASS emulator {y:#010x}\n{ptx}",
                            if float { "out_f" } else { "out_i" },
                            words.join(" ")
                        );
                    }
                    compared += 1;
                }
            }
        }
    }
    eprintln!("{n} programs x 2 targets: {compared} output words agree");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A program the fuzzer found (seed 1795951722484041123, program 1072): `ptxas` 13.0 for
/// sm_90a lets `SHFL.BFLY PT, R10, ...` overwrite R10 while an earlier `SHFL.IDX` still reads
/// it, without waiting for that shuffle's read scoreboard — shuffles pass the memory queue in
/// order. The SASS emulator took it for a hazard; it must run and agree with the PTX emulator.
#[test]
fn a_shuffle_may_overwrite_what_an_earlier_shuffle_still_reads() {
    if !common::tools() {
        return;
    }
    let ptx = include_str!("data/fuzz_shfl_war.ptx");
    let module = Module::parse(ptx).unwrap();
    let (args, want) = reference(&module, inputs(&mut Rng(0x5eed_0001))).unwrap();
    let dir = std::env::temp_dir().join(format!("trident-sass-fuzz-shfl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for arch in ["sm_80", "sm_90a"] {
        let (_, _, p) = common::compile(ptx, arch, "fuzz", &dir, &format!("shfl.{arch}"));
        let mut got = args.clone();
        let scfg = LaunchConfig { grid: [1, 1, 1], block: [THREADS as u32, 1, 1], ..Default::default() };
        launch(&p, &scfg, &mut got).unwrap_or_else(|e| panic!("{arch}: {e}"));
        for which in [1usize, 2] {
            let (KernelArg::Buffer(a), KernelArg::Buffer(b)) = (&want[which], &got[which]) else { unreachable!() };
            let same = a.data.chunks(4).zip(b.data.chunks(4)).all(|(x, y)| {
                let (x, y) = (u32::from_le_bytes(x.try_into().unwrap()), u32::from_le_bytes(y.try_into().unwrap()));
                if which == 1 {
                    x == y
                } else {
                    same_f32(x, y)
                }
            });
            assert!(same, "{arch}: output {which} differs from the PTX emulator");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
