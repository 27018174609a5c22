//! Hopper's asynchronous copies on the SASS emulator against the PTX emulator: PTX kernels
//! with tensor-map (TMA) loads and stores, bulk copies and mbarriers, through `ptxas` for
//! sm_90a, run on both emulators with fresh random inputs (outputs poisoned first); the
//! outputs must be equal byte for byte, and `ptxas`'s schedules must never trip a hazard.
//! The maps are in the PTX emulator's encoding (`trident_emu::TensorMap`), passed by value as
//! a `.param .align 64 .b8 [128]` parameter, as the runtime passes them. Needs ptxas and
//! nvdisasm (scripts/install-tools).

mod common;

use common::Rng;
use trident_core::{DType, HostTensor};
use trident_emu::tensormap::{ElemType, OobFill, Swizzle};
use trident_emu::{buffer_base, ErrorKind, KernelArg, Module, TensorMap};
use trident_sass_emu::{launch, LaunchConfig};

const THREADS: u32 = 128;

fn random_bytes(rng: &mut Rng, n: usize) -> HostTensor {
    let mut t = HostTensor::zeros(DType::U8, &[n]);
    for b in t.data.iter_mut() {
        *b = rng.next() as u8;
    }
    t
}

fn poisoned(n: usize) -> HostTensor {
    let mut t = HostTensor::zeros(DType::U8, &[n]);
    t.data.fill(0xa5);
    t
}

fn seed(tag: u64) -> Rng {
    Rng(0x7a3c_91d5 ^ (std::process::id() as u64) << 16 ^ tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
}

/// The kernel's head: parameters `out` (u64), `in` (u64), `o0`..`o4` (s32), `map` (128 bytes);
/// `tile` (`tile_bytes` of shared memory, 1024-aligned) and `bars` (8 mbarriers).
fn head(tile_bytes: usize) -> String {
    format!(
        ".version 8.0\n.target sm_90a\n.address_size 64\n\
         .visible .entry k(.param .u64 out, .param .u64 in, .param .s32 o0, .param .s32 o1, .param .s32 o2, \
         .param .s32 o3, .param .s32 o4, .param .align 64 .b8 map[128])\n{{\n\
         \t.reg .pred %p<16>;\n\t.reg .b32 %r<96>;\n\t.reg .b64 %rd<32>;\n\
         \t.shared .align 1024 .b8 tile[{tile_bytes}];\n\t.shared .align 8 .b64 bars[8];\n\
         \tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 0;\n\
         \tmov.u32 %r2, tile;\n\tmov.u32 %r3, bars;\n\
         \tmov.u64 %rd1, map;\n\tcvta.param.u64 %rd2, %rd1;\n\
         \tld.param.u64 %rd3, [out];\n\
         \tld.param.s32 %r10, [o0];\n\tld.param.s32 %r11, [o1];\n\tld.param.s32 %r12, [o2];\n\
         \tld.param.s32 %r13, [o3];\n\tld.param.s32 %r14, [o4];\n\
         \tmov.u32 %r20, %ctaid.x;\n\tmov.u32 %r21, %ctaid.y;\n\tmov.u32 %r22, %ctaid.z;\n\
         \tmov.u32 %r23, %nctaid.x;\n\tmov.u32 %r24, %nctaid.y;\n\
         \tmad.lo.u32 %r25, %r22, %r24, %r21;\n\tmad.lo.u32 %r25, %r25, %r23, %r20;\n"
    )
}

/// Box coordinates of the CTA (`%r30`..`%r34`): dimension i < 3 at `ctaid_i * box_i + o_i`,
/// the others at `o_i`.
fn coords(boxes: &[u32]) -> String {
    let mut s = String::new();
    for (i, b) in boxes.iter().enumerate() {
        if i < 3 {
            s += &format!("\tmad.lo.s32 %r{}, %r{}, {b}, %r{};\n", 30 + i, 20 + i, 10 + i);
        } else {
            s += &format!("\tmov.u32 %r{}, %r{};\n", 30 + i, 10 + i);
        }
    }
    s
}

fn coord_list(rank: usize, first: usize) -> String {
    (0..rank).map(|i| format!("%r{}", first + i)).collect::<Vec<_>>().join(", ")
}

/// Initialises mbarrier `bars[k]` for `count` arrivals (thread 0), fences, syncs.
fn init(k: usize, count: u32) -> String {
    format!(
        "\t@%p1 mbarrier.init.shared::cta.b64 [%r3+{}], {count};\n\tfence.mbarrier_init.release.cluster;\n\tbar.sync 0;\n",
        8 * k
    )
}

/// Every thread waits for parity `parity` (a register or an immediate) of `bars[k]`.
fn wait(k: usize, parity: &str, label: &str) -> String {
    format!(
        "{label}:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [%r3+{}], {parity};\n\t@!%p2 bra {label};\n",
        8 * k
    )
}

/// The CTA copies `bytes` of shared memory from `tile + from` to `out + (cta * per_cta + at)`
/// (u32 words, threads striding).
fn copy_out(from: usize, bytes: usize, per_cta: usize, at: usize, label: &str) -> String {
    format!(
        "\tmul.wide.u32 %rd10, %r25, {per_cta};\n\tadd.u64 %rd11, %rd3, %rd10;\n\tadd.u64 %rd11, %rd11, {at};\n\
         \tmov.u32 %r40, %r1;\n\
         {label}:\n\tsetp.ge.u32 %p5, %r40, {words};\n\t@%p5 bra {label}_done;\n\
         \tshl.b32 %r41, %r40, 2;\n\tadd.u32 %r42, %r2, %r41;\n\tld.shared.u32 %r43, [%r42+{from}];\n\
         \tmul.wide.u32 %rd12, %r40, 4;\n\tadd.u64 %rd13, %rd11, %rd12;\n\tst.global.u32 [%rd13], %r43;\n\
         \tadd.u32 %r40, %r40, {THREADS};\n\tbra {label};\n{label}_done:\n",
        words = bytes / 4
    )
}

struct Case {
    name: String,
    ptx: String,
    grid: [u32; 3],
    args: Vec<KernelArg>,
    /// SASS opcodes the kernel must contain (so the test runs what it is about).
    expect: &'static [&'static str],
}

/// Runs `c` on both emulators; returns the output (argument 0) they agree on.
fn both(c: Case) -> Vec<u8> {
    let module = Module::parse(&c.ptx).unwrap_or_else(|e| panic!("{}: {e}\n{}", c.name, c.ptx));
    let mut want = c.args.clone();
    let cfg = trident_emu::LaunchConfig { grid: c.grid, block: [THREADS, 1, 1], ..Default::default() };
    trident_emu::launch(&module, "k", &cfg, &mut want).unwrap_or_else(|e| panic!("{}: PTX emulator: {e}", c.name));
    let dir = std::env::temp_dir().join(format!("trident-sass-emu-tma-{}", std::process::id()));
    let (_, text, p) = common::compile(&c.ptx, "sm_90a", "k", &dir, &c.name);
    for e in c.expect {
        assert!(text.iter().any(|t| t.opcode.starts_with(e)), "{}: no {e} in the SASS", c.name);
    }
    let mut got = c.args;
    let scfg = LaunchConfig { grid: c.grid, block: [THREADS, 1, 1], ..Default::default() };
    let report = launch(&p, &scfg, &mut got).unwrap_or_else(|e| panic!("{}: SASS emulator: {e}", c.name));
    let (KernelArg::Buffer(a), KernelArg::Buffer(b)) = (&want[0], &got[0]) else { unreachable!() };
    if let Some(i) = (0..a.data.len()).find(|&i| a.data[i] != b.data[i]) {
        panic!("{}: byte {i} of the output: PTX emulator {:#04x}, SASS emulator {:#04x}", c.name, a.data[i], b.data[i]);
    }
    eprintln!(
        "{}: agree ({} bytes), {} estimated cycles, {} warp-instructions",
        c.name,
        a.data.len(),
        report.cycles,
        report.instructions
    );
    a.data.clone()
}

/// A tensor of `dims` elements of `elem` (dimension 0 contiguous) with rows padded to 16
/// bytes: its byte strides and size.
fn layout(elem: ElemType, dims: &[u64]) -> (Vec<u64>, usize) {
    let esz = elem.bytes().unwrap() as u64;
    let mut strides = vec![];
    let mut s = (dims[0] * esz).div_ceil(16) * 16;
    for d in &dims[1..] {
        strides.push(s);
        s *= d;
    }
    (strides, s as usize)
}

fn args(out: usize, input: HostTensor, offs: [i32; 5], map: &TensorMap) -> Vec<KernelArg> {
    let mut a = vec![KernelArg::Buffer(poisoned(out)), KernelArg::Buffer(input)];
    a.extend(offs.iter().map(|&o| KernelArg::Scalar(o as u32 as u64)));
    a.push(KernelArg::Bytes(map.encode().to_vec()));
    a
}

/// One box per CTA, loaded by thread 0 on one mbarrier, copied out whole (the out-of-bounds
/// fill included).
fn tile_load(name: &str, elem: ElemType, dims: &[u64], boxes: &[u32], offs: [i32; 5], sw: Swizzle, fill: OobFill) {
    let mut rng = seed(name.len() as u64 * 31 + dims.iter().sum::<u64>());
    let rank = dims.len();
    let (strides, bytes) = layout(elem, dims);
    let map = TensorMap::tiled(buffer_base(1), elem, dims, &strides, boxes, sw, fill).unwrap();
    let box_bytes = map.box_bytes() as usize;
    let grid: Vec<u32> = (0..3)
        .map(|i| match (dims.get(i), boxes.get(i)) {
            (Some(&d), Some(&b)) if i < 3 => ((d as i64 - offs[i] as i64).max(1) as u64).div_ceil(b as u64) as u32 + 1,
            _ => 1,
        })
        .collect();
    let ctas = grid.iter().product::<u32>() as usize;
    let mut ptx = head(box_bytes.max(1024));
    ptx += &coords(boxes);
    ptx += &init(0, 1);
    ptx += &format!("\t@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r3], {box_bytes};\n");
    ptx += &format!(
        "\t@%p1 cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd2, {{{}}}], [%r3];\n",
        coord_list(rank, 30)
    );
    ptx += &wait(0, "0", "W0");
    ptx += &copy_out(0, box_bytes, box_bytes, 0, "OUT");
    ptx += "\tret;\n}\n";
    let out = both(Case {
        name: name.to_string(),
        ptx,
        grid: [grid[0], grid[1], grid[2]],
        args: args(ctas * box_bytes, random_bytes(&mut rng, bytes), offs, &map),
        expect: &["UTMALDG", "SYNCS.EXCH", "SYNCS.ARRIVE", "SYNCS.PHASECHK"],
    });
    // The fill must show where boxes leave the tensor (the grid goes one box past it).
    let nan = elem.oob_nan();
    let fill_bytes: &[u8] = if fill == OobFill::Nan { &nan } else { &[0, 0] };
    assert!(out.windows(fill_bytes.len()).any(|w| w == fill_bytes), "{name}: no out-of-bounds fill in the output");
}

#[test]
fn two_d_f16_ragged_boxes_and_negative_coordinates() {
    if !common::tools() {
        return;
    }
    // 100 x 60 halves (rows padded to 208 bytes), 64 x 16 boxes from (-5, -3): boxes hang off
    // every edge.
    tile_load("ragged2d", ElemType::F16, &[100, 60], &[64, 16], [-5, -3, 0, 0, 0], Swizzle::None, OobFill::Zero);
}

#[test]
fn two_d_f16_swizzled_128b() {
    if !common::tools() {
        return;
    }
    tile_load("swizzle2d", ElemType::F16, &[72, 40], &[64, 8], [-8, 3, 0, 0, 0], Swizzle::B128, OobFill::Zero);
    tile_load("swizzle32", ElemType::F32, &[20, 33], &[8, 16], [1, -7, 0, 0, 0], Swizzle::B32, OobFill::Zero);
}

#[test]
fn three_d_and_the_other_ranks() {
    if !common::tools() {
        return;
    }
    tile_load("rank3", ElemType::F32, &[24, 7, 5], &[16, 4, 2], [-4, 1, -1, 0, 0], Swizzle::None, OobFill::Zero);
    tile_load("rank1", ElemType::U8, &[200], &[48], [-16, 0, 0, 0, 0], Swizzle::None, OobFill::Zero);
    tile_load(
        "rank5",
        ElemType::BF16,
        &[20, 3, 4, 3, 2],
        &[8, 2, 3, 2, 2],
        [-2, 0, 1, 2, -1],
        Swizzle::None,
        OobFill::Zero,
    );
}

#[test]
fn nan_fill() {
    if !common::tools() {
        return;
    }
    tile_load("nan_f32", ElemType::F32, &[30, 9], &[16, 4], [-3, -2, 0, 0, 0], Swizzle::None, OobFill::Nan);
    tile_load("nan_f16", ElemType::F16, &[40, 6], &[32, 4], [5, -1, 0, 0, 0], Swizzle::B64, OobFill::Nan);
}

/// Three boxes on one mbarrier: one expect-tx of their sum, one wait.
#[test]
fn several_copies_on_one_barrier() {
    if !common::tools() {
        return;
    }
    let mut rng = seed(3);
    let dims = [50u64, 30];
    let (strides, bytes) = layout(ElemType::F16, &dims);
    let map = TensorMap::tiled(buffer_base(1), ElemType::F16, &dims, &strides, &[32, 8], Swizzle::None, OobFill::Zero)
        .unwrap();
    let bb = map.box_bytes() as usize;
    let mut ptx = head(4 * bb);
    ptx += &coords(&[32, 8]);
    ptx += &init(0, 1);
    ptx += &format!("\t@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r3], {};\n", 3 * bb);
    for (k, (dx, dy)) in [(0, 0), (-20, 5), (9, -6)].iter().enumerate() {
        ptx += &format!("\tadd.s32 %r50, %r30, {dx};\n\tadd.s32 %r51, %r31, {dy};\n\tadd.u32 %r52, %r2, {};\n", k * bb);
        ptx += "\t@%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r52], [%rd2, {%r50, %r51}], [%r3];\n";
    }
    ptx += &wait(0, "0", "W0");
    ptx += &copy_out(0, 3 * bb, 3 * bb, 0, "OUT");
    ptx += "\tret;\n}\n";
    let grid = [3, 5, 1];
    both(Case {
        name: "three_on_one".into(),
        ptx,
        grid,
        args: args(15 * 3 * bb, random_bytes(&mut rng, bytes), [-7, -2, 0, 0, 0], &map),
        expect: &["UTMALDG.2D"],
    });
}

/// One barrier reused by a loop: copy k waits for parity k & 1; the tile is copied out after
/// each, and a CTA barrier keeps the next copy from overwriting it early.
#[test]
fn a_loop_reusing_the_barrier_alternates_parity() {
    if !common::tools() {
        return;
    }
    let mut rng = seed(5);
    let dims = [64u64, 90];
    let (strides, bytes) = layout(ElemType::F32, &dims);
    let map = TensorMap::tiled(buffer_base(1), ElemType::F32, &dims, &strides, &[16, 8], Swizzle::None, OobFill::Nan)
        .unwrap();
    let bb = map.box_bytes() as usize;
    let steps = 13;
    let mut ptx = head(bb.max(1024));
    ptx += &coords(&[16, 8]);
    ptx += &init(0, 1);
    ptx += "\tmov.u32 %r60, 0;\n\tmov.u32 %r61, 0;\nLOOP:\n";
    ptx += "\tmul.lo.s32 %r62, %r60, 8;\n\tadd.s32 %r63, %r31, %r62;\n";
    ptx += &format!("\t@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r3], {bb};\n");
    ptx += "\t@%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd2, {%r30, %r63}], [%r3];\n";
    ptx += &wait(0, "%r61", "W0");
    // out[cta][step]: the step's offset in bytes.
    ptx += &format!("\tmul.lo.u32 %r64, %r60, {bb};\n\tcvt.u64.u32 %rd20, %r64;\n");
    ptx += &copy_out(0, bb, steps * bb, 0, "OUT").replace("add.u64 %rd11, %rd11, 0;", "add.u64 %rd11, %rd11, %rd20;");
    ptx += "\tbar.sync 0;\n\txor.b32 %r61, %r61, 1;\n\tadd.u32 %r60, %r60, 1;\n";
    ptx += &format!("\tsetp.lt.u32 %p6, %r60, {steps};\n\t@%p6 bra LOOP;\n\tret;\n}}\n");
    both(Case {
        name: "parity_loop".into(),
        ptx,
        grid: [5, 2, 1],
        args: args(10 * steps * bb, random_bytes(&mut rng, bytes), [-3, -20, 0, 0, 0], &map),
        expect: &["UTMALDG.2D", "SYNCS.PHASECHK.TRANS64.TRYWAIT"],
    });
}

/// Threads 0..3 each initialise their own barrier and load their own box: `ptxas` serves the
/// distinct barrier addresses and copies one lane at a time (`R2UR P`, `ELECT`,
/// `BRA.U.ANY` loops).
#[test]
fn copies_issued_by_several_threads() {
    if !common::tools() {
        return;
    }
    let mut rng = seed(7);
    let dims = [48u64, 40];
    let (strides, bytes) = layout(ElemType::F16, &dims);
    let map = TensorMap::tiled(buffer_base(1), ElemType::F16, &dims, &strides, &[16, 8], Swizzle::None, OobFill::Zero)
        .unwrap();
    let bb = map.box_bytes() as usize;
    let mut ptx = head(4 * 1024);
    ptx += &coords(&[16, 8]);
    ptx += "\tsetp.lt.u32 %p7, %r1, 4;\n\tshl.b32 %r70, %r1, 3;\n\tadd.u32 %r71, %r3, %r70;\n";
    ptx += "\tshl.b32 %r72, %r1, 10;\n\tadd.u32 %r73, %r2, %r72;\n";
    ptx += "\t@%p7 mbarrier.init.shared::cta.b64 [%r71], 1;\n\tfence.mbarrier_init.release.cluster;\n\tbar.sync 0;\n";
    // Thread t's box: t * 5 along dimension 0, -t along dimension 1.
    ptx += "\tmad.lo.s32 %r74, %r1, 5, %r30;\n\tsub.s32 %r75, %r31, %r1;\n";
    ptx += &format!("\t@%p7 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r71], {bb};\n");
    ptx += "\t@%p7 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r73], [%rd2, {%r74, %r75}], [%r71];\n";
    ptx += "\t@!%p7 bra SKIP;\n";
    ptx += "W0:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [%r71], 0;\n\t@!%p2 bra W0;\nSKIP:\n\tbar.sync 0;\n";
    for t in 0..4 {
        ptx += &copy_out(t * 1024, bb, 4 * bb, t * bb, &format!("OUT{t}"));
    }
    ptx += "\tret;\n}\n";
    both(Case {
        name: "four_issuers".into(),
        ptx,
        grid: [3, 5, 1],
        args: args(15 * 4 * bb, random_bytes(&mut rng, bytes), [-4, -1, 0, 0, 0], &map),
        expect: &["UTMALDG.2D", "ELECT", "R2UR"],
    });
}

/// A tensor store: the CTA fills a tile from the input, thread 0 stores it as a box of the
/// output's map (clipped at the edges), commits and waits for the bulk group.
#[test]
fn tensor_store_through_a_map() {
    if !common::tools() {
        return;
    }
    let mut rng = seed(11);
    let dims = [44u64, 30];
    let (strides, bytes) = layout(ElemType::F16, &dims);
    // The map describes the output (argument 0); rows of 88 bytes padded to 96.
    let map = TensorMap::tiled(buffer_base(0), ElemType::F16, &dims, &strides, &[32, 8], Swizzle::B64, OobFill::Zero)
        .unwrap();
    let bb = map.box_bytes() as usize;
    let mut ptx = head(1024);
    ptx += &coords(&[32, 8]);
    // tile[i] = in[cta * bb + i] (u32 words).
    ptx += &format!(
        "\tld.param.u64 %rd4, [in];\n\tmul.wide.u32 %rd5, %r25, {bb};\n\tadd.u64 %rd4, %rd4, %rd5;\n\tmov.u32 %r40, %r1;\n\
         FILL:\n\tsetp.ge.u32 %p5, %r40, {};\n\t@%p5 bra FILLED;\n\tmul.wide.u32 %rd6, %r40, 4;\n\tadd.u64 %rd7, %rd4, %rd6;\n\
         \tld.global.u32 %r41, [%rd7];\n\tshl.b32 %r42, %r40, 2;\n\tadd.u32 %r43, %r2, %r42;\n\tst.shared.u32 [%r43], %r41;\n\
         \tadd.u32 %r40, %r40, {THREADS};\n\tbra FILL;\nFILLED:\n",
        bb / 4
    );
    ptx += "\tfence.proxy.async.shared::cta;\n\tbar.sync 0;\n";
    ptx += "\t@%p1 cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd2, {%r30, %r31}], [%r2];\n";
    ptx += "\t@%p1 cp.async.bulk.commit_group;\n\t@%p1 cp.async.bulk.wait_group.read 0;\n\tbar.sync 0;\n\tret;\n}\n";
    let grid = [3, 5, 1];
    let a = args(bytes, random_bytes(&mut rng, 15 * bb), [-6, -4, 0, 0, 0], &map);
    let out = both(Case {
        name: "tensor_store".into(),
        ptx,
        grid,
        args: a,
        expect: &["UTMASTG.2D", "UTMACMDFLUSH", "DEPBAR"],
    });
    // Padding bytes past dimension 0 stay poisoned: nothing outside the tensor is written.
    assert_eq!(out[88..96], [0xa5; 8]);
    assert_ne!(out[..88], [0xa5; 88]);
}

/// `cp.async.bulk` both ways: a CTA's slice of the input into shared memory on an mbarrier,
/// then back out to the output from another offset.
#[test]
fn bulk_copies_both_ways() {
    if !common::tools() {
        return;
    }
    let mut rng = seed(13);
    let per_cta = 1024usize;
    let map = TensorMap::tiled(buffer_base(1), ElemType::U8, &[16], &[], &[16], Swizzle::None, OobFill::Zero).unwrap();
    let mut ptx = head(2048);
    ptx += &init(0, 1);
    ptx += &format!(
        "\tld.param.u64 %rd4, [in];\n\tmul.wide.u32 %rd5, %r25, {per_cta};\n\tadd.u64 %rd4, %rd4, %rd5;\n\
         \tadd.u64 %rd8, %rd3, %rd5;\n\tadd.u32 %r44, %r10, {per_cta};\n"
    );
    ptx += "\t@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r3], %r44;\n";
    ptx += "\t@%p1 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd4], %r44, [%r3];\n";
    ptx += &wait(0, "0", "W0");
    ptx += "\tfence.proxy.async.shared::cta;\n\tbar.sync 0;\n";
    ptx += "\t@%p1 cp.async.bulk.global.shared::cta.bulk_group [%rd8], [%r2+256], 512;\n";
    ptx += "\t@%p1 cp.async.bulk.global.shared::cta.bulk_group [%rd8+512], [%r2], 256;\n";
    ptx += "\t@%p1 cp.async.bulk.commit_group;\n\t@%p1 cp.async.bulk.wait_group 0;\n\tret;\n}\n";
    let ctas = 6;
    // o0 = 0: the load's size is 1024 bytes (a parameter, so in a register).
    both(Case {
        name: "bulk".into(),
        ptx,
        grid: [3, 2, 1],
        args: args(ctas * per_cta, random_bytes(&mut rng, ctas * per_cta), [0; 5], &map),
        expect: &["UBLKCP.S.G", "UBLKCP.G.S"],
    });
}

/// A wait on a phase nobody completes is a deadlock error, not a hang.
#[test]
fn a_wait_nothing_completes_is_a_deadlock() {
    if !common::tools() {
        return;
    }
    let map = TensorMap::tiled(buffer_base(1), ElemType::U8, &[16], &[], &[16], Swizzle::None, OobFill::Zero).unwrap();
    let mut ptx = head(1024);
    ptx += &init(0, 2);
    ptx += "\t@%p1 mbarrier.arrive.shared::cta.b64 %rd9, [%r3];\n";
    ptx += &wait(0, "0", "W0");
    ptx += "\tret;\n}\n";
    let dir = std::env::temp_dir().join(format!("trident-sass-emu-tma-{}", std::process::id()));
    let p = common::compile(&ptx, "sm_90a", "k", &dir, "deadlock").2;
    let mut a = args(64, poisoned(64), [0; 5], &map);
    let cfg = LaunchConfig { block: [THREADS, 1, 1], ..Default::default() };
    let e = launch(&p, &cfg, &mut a).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Deadlock, "{e}");
    assert!(e.message.contains("1 of 2 arrivals pending"), "{e}");
}

/// The copy's rank must be the map's; multicast and im2col forms are refused by name.
#[test]
fn misuse_and_unsupported_forms_are_errors() {
    if !common::tools() {
        return;
    }
    let map = TensorMap::tiled(buffer_base(1), ElemType::F16, &[64, 8], &[128], &[64, 8], Swizzle::None, OobFill::Zero)
        .unwrap();
    let dir = std::env::temp_dir().join(format!("trident-sass-emu-tma-{}", std::process::id()));
    let run = |copy: &str, name: &str| {
        let mut ptx = head(2048);
        ptx += &init(0, 1);
        ptx += "\tmov.b16 %rs1, 1;\n";
        ptx += &format!("\t@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r3], 1024;\n\t@%p1 {copy}\n");
        ptx += &wait(0, "0", "W0");
        ptx += "\tret;\n}\n";
        let ptx = ptx.replace("\t.reg .b64 %rd<32>;\n", "\t.reg .b64 %rd<32>;\n\t.reg .b16 %rs<4>;\n");
        let p = common::compile(&ptx, "sm_90a", "k", &dir, name).2;
        let mut a = args(64, random_bytes(&mut seed(1), 2048), [0; 5], &map);
        let cfg = LaunchConfig { block: [THREADS, 1, 1], ..Default::default() };
        launch(&p, &cfg, &mut a).unwrap_err()
    };
    let e = run("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd2, {%r10}], [%r3];", "rank");
    assert!(e.message.contains("has rank 2, but the copy is .1d"), "{e}");
    let e = run(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r2], [%rd2, {%r10, %r11}], [%r3], %rs1;",
        "multicast",
    );
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
    assert!(e.message.contains(".MULTICAST"), "{e}");
    let e = run(
        "cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%r2], [%rd2, {%r10, %r11, %r12}], [%r3], {%rs1};",
        "im2col",
    );
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
    assert!(e.message.contains(".IM2COL"), "{e}");
}

/// The other arrival forms (`SYNCS.ARRIVE.TRANS64.ART0`, `.A1T0`, `.RED.A0TR`, `.RED.A0TX`,
/// `.OPTOUT.A1T0`) and waits on a state or a parity (`SYNCS.PHASECHK.TRANS64` and
/// `.TRYWAIT`), through three phases of one barrier; each thread writes what its waits saw.
#[test]
fn arrival_forms_and_waits_on_a_state() {
    if !common::tools() {
        return;
    }
    let map = TensorMap::tiled(buffer_base(1), ElemType::U8, &[16], &[], &[16], Swizzle::None, OobFill::Zero).unwrap();
    let mut ptx = head(1024);
    ptx += "\tsetp.eq.u32 %p8, %r1, 1;\n\tsetp.ge.u32 %p9, %r1, 1;\n\tsetp.le.u32 %p10, %r1, 3;\n\tand.pred %p9, %p9, %p10;\n";
    ptx += "\tmov.u32 %r80, 0;\n";
    // Phase 0 expects 4 arrivals: thread 0 expects 64 bytes and arrives 3 times at once.
    ptx += &init(0, 4);
    let record = |p: &str, bit: u32| format!("\tselp.u32 %r81, {}, 0, {p};\n\tor.b32 %r80, %r80, %r81;\n", 1 << bit);
    ptx += "\t@%p1 mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r3], 64;\n";
    ptx += "\t@%p1 mbarrier.arrive.shared::cta.b64 %rd20, [%r3], 3;\n";
    ptx += "\tmov.pred %p11, 0;\n\t@%p1 mbarrier.test_wait.shared::cta.b64 %p11, [%r3], %rd20;\n";
    ptx += &record("%p11", 0);
    ptx += "\tbar.sync 0;\n";
    // Thread 1 arrives (the bytes are still missing), then completes them.
    ptx += "\t@%p8 mbarrier.arrive.shared::cta.b64 %rd21, [%r3];\n";
    ptx += "\tmov.pred %p12, 0;\n\t@%p8 mbarrier.test_wait.shared::cta.b64 %p12, [%r3], %rd21;\n";
    ptx += &record("%p12", 1);
    ptx += "\t@%p8 mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%r3], 64;\n";
    ptx += &wait(0, "0", "W0");
    ptx += "\tmov.pred %p13, 0;\n\t@%p1 mbarrier.test_wait.shared::cta.b64 %p13, [%r3], %rd20;\n";
    ptx += &record("%p13", 2);
    ptx += "\t@!%p8 bra S1;\nW1:\n\tmbarrier.try_wait.shared::cta.b64 %p14, [%r3], %rd21;\n\t@!%p14 bra W1;\n";
    ptx += &record("%p14", 3);
    ptx += "S1:\n\tbar.sync 0;\n";
    // Phase 1: thread 0 drops out (3 expected from then on), threads 1..3 arrive.
    ptx += "\t@%p1 mbarrier.arrive_drop.shared::cta.b64 %rd22, [%r3];\n\t@%p9 mbarrier.arrive.shared::cta.b64 %rd23, [%r3];\n";
    ptx += &wait(0, "1", "W2");
    ptx += "\tmov.pred %p15, 0;\n\tmbarrier.test_wait.parity.shared::cta.b64 %p15, [%r3], 1;\n";
    ptx += &record("%p15", 4);
    ptx += "\tbar.sync 0;\n";
    // Phase 2: threads 1..3 alone complete it.
    ptx += "\t@%p9 mbarrier.arrive.shared::cta.b64 %rd23, [%r3];\n";
    ptx += &wait(0, "0", "W3");
    ptx += "\tmul.wide.u32 %rd24, %r1, 4;\n\tadd.u64 %rd25, %rd3, %rd24;\n\tst.global.u32 [%rd25], %r80;\n\tret;\n}\n";
    let out = both(Case {
        name: "arrivals".into(),
        ptx,
        grid: [2, 1, 1],
        args: args(4 * THREADS as usize, poisoned(16), [0; 5], &map),
        expect: &[
            "SYNCS.ARRIVE.TRANS64.ART0",
            "SYNCS.ARRIVE.TRANS64.A1T0",
            "SYNCS.ARRIVE.TRANS64.RED.A0TR",
            "SYNCS.ARRIVE.TRANS64.RED.A0TX",
            "SYNCS.ARRIVE.TRANS64.OPTOUT.A1T0",
        ],
    });
    // Thread 0: phase 0 incomplete, then complete (bit 2); thread 1: incomplete, then complete
    // through its state (bit 3); everyone: the phase of parity 1 complete (bit 4).
    let word = |t: usize| u32::from_le_bytes(out[4 * t..4 * t + 4].try_into().unwrap());
    assert_eq!((word(0), word(1), word(2)), (0b10100, 0b11000, 0b10000));
}

/// A wait resumes at the clock its own barrier's phase completed, not at the latest change
/// of any barrier: warp 0 waits on bars[0], which warp 1 completes at once before a long
/// dependent loop and a late arrival on bars[1]. Warp 0's clock after its wait must be
/// early (a producer running far ahead on another barrier holds no consumer back — what
/// made a warp-specialized kernel look 2.5× slower to this model). SASS emulator only: the
/// clocks are the model's.
#[test]
fn a_wait_resumes_when_its_own_barrier_completes() {
    if !common::tools() {
        return;
    }
    let mut ptx = head(16);
    ptx +=
        "\tshr.u32 %r50, %r1, 5;\n\tsetp.eq.u32 %p8, %r50, 1;\n\tand.b32 %r51, %r1, 31;\n\tsetp.eq.u32 %p9, %r51, 0;\n";
    ptx += "\t@%p1 mbarrier.init.shared::cta.b64 [%r3], 1;\n\t@%p1 mbarrier.init.shared::cta.b64 [%r3+8], 1;\n";
    ptx += "\tfence.mbarrier_init.release.cluster;\n\tbar.sync 0;\n\tsetp.ne.u32 %p10, %r50, 0;\n\t@%p10 bra ARR;\n";
    // Warp 0: wait for bars[0], then record its clock.
    ptx += &wait(0, "0", "W0");
    ptx += "\tmov.u64 %rd20, %clock64;\n\tbra OUT;\n";
    // Warp 1 (its first lane): arrive on bars[0], 4000 dependent multiply-adds, arrive on bars[1].
    ptx += "ARR:\n\t@!%p8 bra DONE;\n\t@%p9 mbarrier.arrive.shared::cta.b64 %rd21, [%r3];\n";
    ptx += "\tmov.u32 %r60, 0;\n\tadd.u32 %r61, %r10, 3;\nL:\n\tmad.lo.u32 %r61, %r61, %r61, 7;\n\tadd.u32 %r60, %r60, 1;\n";
    ptx += "\tsetp.lt.u32 %p11, %r60, 4000;\n\t@%p11 bra L;\n";
    ptx += "\t@%p9 mbarrier.arrive.shared::cta.b64 %rd21, [%r3+8];\n\tmov.u64 %rd20, %clock64;\n";
    // (The loop's result is stored too, so that it is not optimised away.)
    ptx += "\t@%p9 st.global.u32 [%rd3+16], %r61;\n";
    ptx +=
        "OUT:\n\tmul.wide.u32 %rd24, %r50, 8;\n\tadd.u64 %rd25, %rd3, %rd24;\n\t@%p9 st.global.u64 [%rd25], %rd20;\n";
    ptx += "DONE:\n\tret;\n}\n";
    let dir = std::env::temp_dir().join(format!("trident-sass-emu-tma-clock-{}", std::process::id()));
    let (_, _, p) = common::compile(&ptx, "sm_90a", "k", &dir, "clock");
    let map = TensorMap::tiled(buffer_base(1), ElemType::U8, &[16], &[], &[16], Swizzle::None, OobFill::Zero).unwrap();
    let mut got = args(24, poisoned(16), [0; 5], &map);
    let cfg = LaunchConfig { grid: [1, 1, 1], block: [64, 1, 1], ..Default::default() };
    launch(&p, &cfg, &mut got).unwrap();
    let KernelArg::Buffer(out) = &got[0] else { unreachable!() };
    let clock = |w: usize| u64::from_le_bytes(out.data[8 * w..8 * w + 8].try_into().unwrap());
    let (waiter, worker) = (clock(0), clock(1));
    assert!(waiter < worker / 4, "warp 0 resumed at {waiter}, warp 1 finished at {worker}: held back by bars[1]");
}
