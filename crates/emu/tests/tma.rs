//! Tensor-map (TMA) copies on the emulator's tensor-map encoding (`trident_emu::tensormap`):
//! tile loads in every swizzle mode against host references computed here from the PTX ISA's
//! swizzle tables (not with the emulator's swizzle function), out-of-bounds fills at every
//! edge, maps passed as kernel parameters, in `.const` and `.global` memory and built in the
//! kernel with `tensormap.replace` + `tensormap.cp_fenceproxy`, stores, 3-D and 5-D boxes with
//! traversal strides, transaction accounting and timing, races, and every error. Inputs are
//! fresh random bytes (the seed is printed); outputs are poisoned first. Each program is
//! checked by `ptxas -arch=sm_90a` when `TRIDENT_PTXAS` names it.

mod common;

use common::*;
use trident_core::{DType, HostTensor};
use trident_emu::tensormap::{ElemType, OobFill, Swizzle};
use trident_emu::{buffer_base, launch, ErrorKind, KernelArg, LaunchConfig, LaunchReport, Module, TensorMap};

const HEADER: &str = ".version 8.3\n.target sm_90a\n.address_size 64\n";

fn seed(test: &str) -> Rng {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let s = t ^ (std::process::id() as u64) << 32;
    println!("{test}: seed {s:#x}");
    Rng(s)
}

/// `valid` once per distinct program (the load kernels repeat with other coordinates).
fn valid_once(ptx: &str) {
    use std::sync::Mutex;
    static SEEN: Mutex<Vec<u64>> = Mutex::new(Vec::new());
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    ptx.hash(&mut h);
    let k = h.finish();
    if SEEN
        .lock()
        .map(|mut v| {
            if v.contains(&k) {
                false
            } else {
                v.push(k);
                true
            }
        })
        .unwrap_or(true)
    {
        valid(ptx);
    }
}

fn bytes_tensor(b: &[u8]) -> HostTensor {
    HostTensor { dtype: DType::U8, shape: vec![b.len()], data: b.to_vec() }
}

fn random_bytes(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.next_u64() as u8).collect()
}

fn out_bytes(args: &[KernelArg], i: usize) -> Vec<u8> {
    buf(args, i).data.clone()
}

/// Runs without recording the launch for GPU replay (these launches carry emulator-encoded
/// tensor maps, which a GPU cannot read).
fn run_local(
    ptx: &str,
    entry: &str,
    block: u32,
    args: &mut [KernelArg],
) -> Result<LaunchReport, trident_emu::EmuError> {
    let m = Module::parse(ptx)?;
    let cfg = LaunchConfig { grid: [1, 1, 1], block: [block, 1, 1], ..LaunchConfig::default() };
    launch(&m, entry, &cfg, args)
}

// ---------------------------------------------------------------------------------------
// Host references, written from the PTX ISA independently of the emulator's code.

/// Element size and PTX `.elemtype` number (PTX ISA "Tensormap new_val validity").
fn elem_info(e: ElemType) -> (usize, u32) {
    match e {
        ElemType::U8 => (1, 0),
        ElemType::U16 => (2, 1),
        ElemType::U32 => (4, 2),
        ElemType::F16 => (2, 6),
        ElemType::F32 => (4, 7),
        ElemType::F64 => (8, 9),
        ElemType::BF16 => (2, 10),
        _ => panic!("not used in these tests"),
    }
}

fn swizzle_code(s: Swizzle) -> u32 {
    match s {
        Swizzle::None => 0,
        Swizzle::B32 => 1,
        Swizzle::B64 => 2,
        Swizzle::B128 => 3,
        Swizzle::B96 => 4,
    }
}

/// The ISA's destination layouts ("Swizzling Modes"): in the r-th 128-byte line of the
/// repeating pattern, destination 16-byte chunk p holds source chunk `table[r][p]`.
const T32: [[usize; 8]; 2] = [[0, 1, 2, 3, 4, 5, 6, 7], [1, 0, 3, 2, 5, 4, 7, 6]];
const T64: [[usize; 8]; 4] =
    [[0, 1, 2, 3, 4, 5, 6, 7], [1, 0, 3, 2, 5, 4, 7, 6], [2, 3, 0, 1, 6, 7, 4, 5], [3, 2, 1, 0, 7, 6, 5, 4]];
const T128: [[usize; 8]; 8] = [
    [0, 1, 2, 3, 4, 5, 6, 7],
    [1, 0, 3, 2, 5, 4, 7, 6],
    [2, 3, 0, 1, 6, 7, 4, 5],
    [3, 2, 1, 0, 7, 6, 5, 4],
    [4, 5, 6, 7, 0, 1, 2, 3],
    [5, 4, 7, 6, 1, 0, 3, 2],
    [6, 7, 4, 5, 2, 3, 0, 1],
    [7, 6, 5, 4, 3, 2, 1, 0],
];

/// Where in shared memory the byte that belongs at (unswizzled) shared address `a` lands.
fn dest_of(sw: Swizzle, a: usize) -> usize {
    let table: &[[usize; 8]] = match sw {
        Swizzle::None => return a,
        Swizzle::B32 => &T32,
        Swizzle::B64 => &T64,
        Swizzle::B128 => &T128,
        Swizzle::B96 => unreachable!(),
    };
    let (line, chunk, byte) = (a / 128, a % 128 / 16, a % 16);
    let p = table[line % table.len()].iter().position(|&c| c == chunk).expect("a permutation");
    line * 128 + p * 16 + byte
}

/// Elements per dimension a copy moves: ceil(box / stride), 1 past the rank.
fn moved(m: &TensorMap) -> [usize; 5] {
    let mut n = [1usize; 5];
    for (i, x) in n.iter_mut().enumerate().take(m.rank as usize) {
        *x = (m.box_dims[i] as usize).div_ceil(m.element_strides[i] as usize);
    }
    n
}

fn box_bytes(m: &TensorMap) -> usize {
    moved(m).iter().product::<usize>() * elem_info(m.elem_type).0
}

/// For each element of the box in shared-memory order: its byte offset in the tensor buffer,
/// or `None` out of bounds.
fn box_elements(m: &TensorMap, c: [i64; 5]) -> Vec<Option<usize>> {
    let n = moved(m);
    let esz = elem_info(m.elem_type).0 as i64;
    let total: usize = n.iter().product();
    let mut out = Vec::with_capacity(total);
    for idx in 0..total {
        let mut rest = idx;
        let mut off = 0i64;
        let mut inside = true;
        for i in 0..m.rank as usize {
            let j = (rest % n[i]) as i64;
            rest /= n[i];
            let g = c[i] + j * m.element_strides[i] as i64;
            inside &= g >= 0 && g < m.global_dims[i] as i64;
            off += if i == 0 { g * esz } else { g * m.global_strides[i - 1] as i64 };
        }
        out.push(inside.then_some(off as usize));
    }
    out
}

fn fill_of(m: &TensorMap) -> Vec<u8> {
    match (m.fill, elem_info(m.elem_type).0) {
        (OobFill::Zero, n) => vec![0; n],
        (OobFill::Nan, 2) => vec![0xff, 0x7f],
        (OobFill::Nan, 4) => vec![0xff, 0xff, 0xff, 0x7f],
        (OobFill::Nan, _) => panic!("not used"),
    }
}

/// The `copy_bytes` shared-memory bytes from `dstoff` after a tile load of `m` at `c`.
fn expected_load(m: &TensorMap, tensor: &[u8], c: [i64; 5], dstoff: usize, copy_bytes: usize) -> Vec<u8> {
    let esz = elem_info(m.elem_type).0;
    let mut linear = Vec::new();
    for e in box_elements(m, c) {
        match e {
            Some(off) => linear.extend_from_slice(&tensor[off..off + esz]),
            None => linear.extend_from_slice(&fill_of(m)),
        }
    }
    let mut out = vec![0u8; copy_bytes];
    for (l, &b) in linear.iter().enumerate() {
        out[dest_of(m.swizzle, dstoff + l) - dstoff] = b;
    }
    out
}

/// The tensor after a tile store of the shared image `img` (physical, swizzled bytes at
/// `dstoff`) at `c`.
fn expected_store(m: &TensorMap, before: &[u8], img: &[u8], c: [i64; 5], dstoff: usize) -> Vec<u8> {
    let esz = elem_info(m.elem_type).0;
    let mut out = before.to_vec();
    for (k, e) in box_elements(m, c).into_iter().enumerate() {
        if let Some(off) = e {
            for b in 0..esz {
                out[off + b] = img[dest_of(m.swizzle, dstoff + k * esz + b) - dstoff];
            }
        }
    }
    out
}

/// Bytes of a tensor buffer holding `m`'s tensor.
fn tensor_bytes(m: &TensorMap) -> usize {
    let r = m.rank as usize;
    if r == 1 {
        m.global_dims[0] as usize * elem_info(m.elem_type).0
    } else {
        m.global_strides[r - 2] as usize * m.global_dims[r - 1] as usize
    }
}

fn coords_arg(c: [i64; 5]) -> KernelArg {
    let mut t = HostTensor::zeros(DType::I32, &[5]);
    for (k, x) in c.iter().enumerate() {
        t.data[4 * k..4 * k + 4].copy_from_slice(&(*x as i32).to_le_bytes());
    }
    KernelArg::Buffer(t)
}

// ---------------------------------------------------------------------------------------
// Kernels.

/// Where the load kernel finds its map.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Via {
    /// `.param .align 64 .b8 tmap[128]` (host-encoded), used through `mov.b64 %rd, tmap`.
    Param,
    /// A `.global` buffer argument holding the host-encoded map (and an L2 cache hint).
    Global,
    /// A `.const` module variable initialized with the host-encoded bytes.
    Const,
    /// Built by warp 0 in shared memory with `tensormap.replace`, copied to a global scratch
    /// buffer with `tensormap.cp_fenceproxy`.
    InKernel,
}

/// The `tensormap.replace` sequence that builds `m` in shared memory at `%r10` (lane 0 of
/// warp 0, predicate `%p4`), the tensor's address in `%rd0`.
fn replace_sequence(m: &TensorMap) -> String {
    let r = m.rank as usize;
    let mut s = String::new();
    let put = |s: &mut String, x: String| {
        s.push_str("  @%p4 ");
        s.push_str(&x);
        s.push('\n');
    };
    put(&mut s, "tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%r10], %rd0;".into());
    put(&mut s, format!("tensormap.replace.tile.rank.shared::cta.b1024.b32 [%r10], {};", r - 1));
    for i in 0..r {
        // Box dims from registers, global dims as immediates.
        s.push_str(&format!("  mov.u32 %r14, {};\n", m.box_dims[i]));
        put(&mut s, format!("tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%r10], {i}, %r14;"));
        put(
            &mut s,
            format!("tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%r10], {i}, {};", m.global_dims[i]),
        );
        put(
            &mut s,
            format!(
                "tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%r10], {i}, {};",
                m.element_strides[i]
            ),
        );
    }
    for k in 0..r - 1 {
        s.push_str(&format!("  mov.u64 %rd15, {};\n", m.global_strides[k]));
        put(&mut s, format!("tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%r10], {k}, %rd15;"));
    }
    put(&mut s, format!("tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [%r10], {};", elem_info(m.elem_type).1));
    put(&mut s, "tensormap.replace.tile.interleave_layout.shared::cta.b1024.b32 [%r10], 0;".into());
    put(
        &mut s,
        format!("tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32 [%r10], {};", swizzle_code(m.swizzle)),
    );
    let fill = match m.fill {
        OobFill::Zero => 0,
        OobFill::Nan => 1,
    };
    put(&mut s, format!("tensormap.replace.tile.fill_mode.shared::cta.b1024.b32 [%r10], {fill};"));
    s
}

fn coord_list(n: u32) -> String {
    (0..n).map(|i| format!("%r{}", 20 + i)).collect::<Vec<_>>().join(", ")
}

/// A 128-thread kernel: thread 0 loads the box of map `m` (found `via`) at the coordinates in
/// `coords` to shared memory at `smem + dstoff`, completing `expect_tx` bytes on an mbarrier;
/// all threads wait for the phase, then copy `copy_bytes` bytes from `smem + dstoff` to `out`.
/// Parameters: tensor, coords, out, then the map's (`Param`: `tmap`, `Global`: `tmapp`,
/// `InKernel`: `scratch`).
fn load_kernel(m: &TensorMap, via: Via, dstoff: u32, expect_tx: usize, copy_bytes: usize) -> String {
    let n = m.rank;
    let coords = coord_list(n);
    let (extra_param, const_decl, setup, prefetch, hint) = match via {
        Via::Param => (
            ", .param .align 64 .b8 tmap[128]".to_string(),
            String::new(),
            "  mov.b64 %rd1, tmap;\n".to_string(),
            format!(
                "  prefetch.param.tensormap [tmap];\n  prefetch.tensormap [%rd1];\n  cp.async.bulk.prefetch.tensor.{n}d.L2.global.tile [%rd1, {{{coords}}}];\n"
            ),
            "",
        ),
        Via::Global => (
            ", .param .u64 tmapp".to_string(),
            String::new(),
            "  ld.param.u64 %rd1, [tmapp];\n".to_string(),
            "  prefetch.tensormap [%rd1];\n  createpolicy.fractional.L2::evict_last.b64 %rd9, 1.0;\n".to_string(),
            ".L2::cache_hint",
        ),
        Via::Const => {
            let bytes: Vec<String> = m.encode().iter().map(|b| b.to_string()).collect();
            (
                String::new(),
                format!(".const .align 64 .b8 cmap[128] = {{{}}};\n", bytes.join(", ")),
                "  mov.u64 %rd1, cmap;\n  cvta.const.u64 %rd1, %rd1;\n".to_string(),
                "  prefetch.const.tensormap [%rd1];\n".to_string(),
                "",
            )
        }
        Via::InKernel => (
            ", .param .u64 scratch".to_string(),
            String::new(),
            format!(
                "  ld.param.u64 %rd1, [scratch];
  mov.u32 %r10, tm;
  setp.lt.u32 %p3, %r0, 32;
  @!%p3 bra BUILT;
  // Warp 0 zeroes the map, lane 0 replaces every field, the warp copies it out.
  shl.b32 %r11, %r0, 2;
  add.u32 %r12, %r10, %r11;
  mov.u32 %r13, 0;
  st.shared.u32 [%r12], %r13;
  bar.warp.sync -1;
  setp.eq.u32 %p4, %r0, 0;
{}  bar.warp.sync -1;
  tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%rd1], [%r10], 128;
  fence.proxy.tensormap::generic.acquire.gpu [%rd1], 128;
BUILT:
",
                replace_sequence(m)
            ),
            String::new(),
            "",
        ),
    };
    let hint_op = if hint.is_empty() { "" } else { ", %rd9" };
    let smem = dstoff as usize + copy_bytes.max(box_bytes(m)) + 1024;
    format!(
        "{HEADER}{const_decl}
.visible .entry tma_load(.param .u64 tensor, .param .u64 coords, .param .u64 out{extra_param})
{{
  .reg .pred %p<8>;
  .reg .b32 %r<48>;
  .reg .b64 %rd<24>;
  .shared .align 1024 .b8 smem[{smem}];
  .shared .align 128 .b8 tm[128];
  .shared .align 8 .b64 bar;
  mov.u32 %r0, %tid.x;
  ld.param.u64 %rd0, [tensor];
  ld.param.u64 %rd2, [coords];
  ld.param.u64 %rd3, [out];
{setup}  ld.global.s32 %r20, [%rd2];
  ld.global.s32 %r21, [%rd2+4];
  ld.global.s32 %r22, [%rd2+8];
  ld.global.s32 %r23, [%rd2+12];
  ld.global.s32 %r24, [%rd2+16];
  mov.u32 %r3, smem;
  add.u32 %r3, %r3, {dstoff};
  mov.u32 %r4, bar;
  setp.ne.u32 %p0, %r0, 0;
  @%p0 bra SYNC;
  mbarrier.init.shared::cta.b64 [%r4], 1;
SYNC:
  bar.sync 0;
  @%p0 bra WAIT;
{prefetch}  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], {expect_tx};
  cp.async.bulk.tensor.{n}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes{hint} [%r3], [%rd1, {{{coords}}}], [%r4]{hint_op};
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r4], 0;
  @!%p1 bra WAIT;
  mov.u32 %r5, %r0;
COPY:
  setp.ge.u32 %p2, %r5, {words};
  @%p2 bra END;
  shl.b32 %r6, %r5, 2;
  add.u32 %r7, %r3, %r6;
  ld.shared.u32 %r8, [%r7];
  cvt.u64.u32 %rd4, %r6;
  add.s64 %rd5, %rd3, %rd4;
  st.global.u32 [%rd5], %r8;
  add.u32 %r5, %r5, 128;
  bra COPY;
END:
  ret;
}}",
        words = copy_bytes / 4
    )
}

/// Launches `load_kernel`: returns the out bytes (and for `InKernel` the scratch map bytes).
fn run_load(
    m: &TensorMap,
    via: Via,
    tensor: &[u8],
    c: [i64; 5],
    dstoff: u32,
    expect_tx: usize,
) -> Result<(Vec<u8>, Vec<u8>), trident_emu::EmuError> {
    let copy_bytes = box_bytes(m).next_multiple_of(128);
    let ptx = load_kernel(m, via, dstoff, expect_tx, copy_bytes);
    valid_once(&ptx);
    let mut args = vec![
        KernelArg::Buffer(bytes_tensor(tensor)),
        coords_arg(c),
        KernelArg::Buffer(poisoned(DType::U8, &[copy_bytes])),
    ];
    match via {
        Via::Param => args.push(KernelArg::Bytes(m.encode().to_vec())),
        Via::Global => args.push(KernelArg::Buffer(bytes_tensor(&m.encode()))),
        Via::Const => {}
        Via::InKernel => args.push(KernelArg::Buffer(poisoned(DType::U8, &[128]))),
    }
    if via == Via::InKernel {
        // Replayable on a GPU (the PTX builds its own map; only the scratch bytes differ).
        run(&ptx, "tma_load", [1, 1, 1], [128, 1, 1], &mut args)?;
    } else {
        run_local(&ptx, "tma_load", 128, &mut args)?;
    }
    let scratch = if via == Via::InKernel { out_bytes(&args, 3) } else { Vec::new() };
    Ok((out_bytes(&args, 2), scratch))
}

fn map_2d(elem: ElemType, dims: [u64; 2], ld_elems: u64, bx: [u32; 2], sw: Swizzle, fill: OobFill) -> TensorMap {
    let esz = elem_info(elem).0 as u64;
    TensorMap::tiled(buffer_base(0), elem, &dims, &[ld_elems * esz], &bx, sw, fill).unwrap()
}

fn check_load(m: &TensorMap, via: Via, tensor: &[u8], c: [i64; 5], dstoff: u32, what: &str) -> Vec<u8> {
    let (out, _) = run_load(m, via, tensor, c, dstoff, box_bytes(m)).unwrap_or_else(|e| panic!("{what}: {e}"));
    let want = expected_load(m, tensor, c, dstoff as usize, out.len());
    if out != want {
        let k = out.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "{what}: {} of {} bytes differ, first at {k}: got {:#04x}, want {:#04x}",
            out.iter().zip(&want).filter(|(a, b)| a != b).count(),
            out.len(),
            out[k],
            want[k]
        );
    }
    out
}

// ---------------------------------------------------------------------------------------
// Tests.

#[test]
fn two_d_f16_tile_loads_in_every_swizzle_mode_match_the_isa_layout() {
    let mut rng = seed("swizzle");
    // 100 x 70 f16, rows padded to 104 elements (208 bytes, a multiple of 16).
    let (w, h, ld) = (100u64, 70u64, 104u64);
    let tensor = random_bytes(&mut rng, (ld * h * 2) as usize);
    for (sw, b0, b1) in
        [(Swizzle::None, 24u32, 10u32), (Swizzle::B32, 16, 16), (Swizzle::B64, 32, 12), (Swizzle::B128, 64, 16)]
    {
        let m = map_2d(ElemType::F16, [w, h], ld, [b0, b1], sw, OobFill::Zero);
        let inside = [rng.below(w - b0 as u64) as i64, rng.below(h - b1 as u64) as i64, 0, 0, 0];
        let cases = [
            ("inside", inside),
            ("right edge", [w as i64 - b0 as i64 / 2, inside[1], 0, 0, 0]),
            ("bottom edge", [inside[0], h as i64 - 3, 0, 0, 0]),
            ("negative corner", [-5, -7, 0, 0, 0]),
            ("fully outside", [w as i64 + 10, 2, 0, 0, 0]),
        ];
        for (what, c) in cases {
            // Off the pattern's boundary too: the swizzle follows the absolute shared address.
            let dstoff = 128 * rng.below(8) as u32;
            check_load(&m, Via::Param, &tensor, c, dstoff, &format!("{sw:?} {what} at {c:?}, dst +{dstoff}"));
        }
    }
}

#[test]
fn out_of_bounds_boxes_fill_zeros_or_nans_at_every_edge() {
    let mut rng = seed("oob");
    // 37 x 29 f32, rows of 40 elements (160 bytes); box 8 x 6.
    let (w, h) = (37i64, 29i64);
    let tensor = random_bytes(&mut rng, 160 * 29);
    for fill in [OobFill::Zero, OobFill::Nan] {
        let m = map_2d(ElemType::F32, [w as u64, h as u64], 40, [8, 6], Swizzle::None, fill);
        for x in [-7, -3, 0, 13, w - 5, w - 1, w] {
            for y in [-5, -1, 0, 11, h - 4, h] {
                let c = [x, y, 0, 0, 0];
                let out = check_load(&m, Via::Global, &tensor, c, 0, &format!("{fill:?} at {c:?}"));
                // The fill is a NaN (and zero is +0.0) whatever its exact bits.
                for (k, e) in box_elements(&m, c).iter().enumerate() {
                    let v = f32::from_le_bytes(out[4 * k..4 * k + 4].try_into().unwrap());
                    if e.is_none() {
                        match fill {
                            OobFill::Zero => assert_eq!(v.to_bits(), 0),
                            OobFill::Nan => assert!(v.is_nan(), "{c:?} element {k}"),
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn a_map_built_in_the_kernel_equals_the_host_map() {
    let mut rng = seed("in-kernel");
    let (w, h, ld) = (90u64, 50u64, 96u64);
    let tensor = random_bytes(&mut rng, (ld * h * 2) as usize);
    for (sw, b0, fill) in [(Swizzle::B128, 64u32, OobFill::Nan), (Swizzle::B32, 16, OobFill::Zero)] {
        let m = map_2d(ElemType::F16, [w, h], ld, [b0, 8], sw, fill);
        for c in [[3, 5, 0, 0, 0], [w as i64 - 20, -2, 0, 0, 0]] {
            let (built, scratch) = run_load(&m, Via::InKernel, &tensor, c, 0, box_bytes(&m)).unwrap();
            assert_eq!(
                scratch,
                m.encode().to_vec(),
                "the map tensormap.replace built is the host encoding, byte for byte"
            );
            let (host, _) = run_load(&m, Via::Param, &tensor, c, 0, box_bytes(&m)).unwrap();
            assert_eq!(built, host, "{sw:?} at {c:?}");
            assert_eq!(built, expected_load(&m, &tensor, c, 0, built.len()));
        }
    }
    // A 3-D map with traversal strides, built in the kernel.
    let mut m = TensorMap::tiled(
        buffer_base(0),
        ElemType::U16,
        &[40, 9, 10],
        &[96, 960],
        &[16, 5, 7],
        Swizzle::None,
        OobFill::Zero,
    )
    .unwrap();
    m.element_strides = [1, 2, 3, 0, 0];
    m.validate().unwrap();
    let tensor = random_bytes(&mut rng, tensor_bytes(&m));
    let c = [-4, 6, 2, 0, 0];
    let (built, scratch) = run_load(&m, Via::InKernel, &tensor, c, 0, box_bytes(&m)).unwrap();
    assert_eq!(scratch, m.encode().to_vec());
    assert_eq!(built, expected_load(&m, &tensor, c, 0, built.len()));
}

#[test]
fn a_map_in_const_memory() {
    let mut rng = seed("const");
    let m = map_2d(ElemType::F32, [33, 20], 36, [16, 4], Swizzle::B64, OobFill::Zero);
    let tensor = random_bytes(&mut rng, tensor_bytes(&m));
    check_load(&m, Via::Const, &tensor, [25, 17, 0, 0, 0], 256, "const map");
}

#[test]
fn three_and_five_dimensional_boxes() {
    let mut rng = seed("3d-5d");
    // 3-D u16 with traversal strides 1, 2, 3 (box 16 x 5 x 7 moves 16 x 3 x 3 elements).
    let mut m3 = TensorMap::tiled(
        buffer_base(0),
        ElemType::U16,
        &[40, 9, 10],
        &[96, 960],
        &[16, 5, 7],
        Swizzle::None,
        OobFill::Zero,
    )
    .unwrap();
    m3.element_strides = [1, 2, 3, 0, 0];
    m3.validate().unwrap();
    assert_eq!(m3.box_bytes(), 16 * 3 * 3 * 2);
    let t3 = random_bytes(&mut rng, tensor_bytes(&m3));
    for _ in 0..6 {
        let c = [rng.below(50) as i64 - 8, rng.below(12) as i64 - 3, rng.below(13) as i64 - 3, 0, 0];
        check_load(&m3, Via::Param, &t3, c, 0, &format!("3-D at {c:?}"));
    }
    // 5-D u8, dimension strides padded.
    let m5 = TensorMap::tiled(
        buffer_base(0),
        ElemType::U8,
        &[20, 3, 4, 5, 6],
        &[32, 112, 480, 2400],
        &[16, 2, 3, 2, 4],
        Swizzle::None,
        OobFill::Zero,
    )
    .unwrap();
    let t5 = random_bytes(&mut rng, tensor_bytes(&m5));
    for _ in 0..6 {
        let c = [
            rng.below(12) as i64 - 4,
            rng.below(4) as i64 - 1,
            rng.below(5) as i64 - 1,
            rng.below(6) as i64 - 1,
            rng.below(7) as i64 - 2,
        ];
        check_load(&m5, Via::Global, &t5, c, 0, &format!("5-D at {c:?}"));
    }
}

/// Threads write `img` into shared memory; thread 0 stores the box with the map at the
/// coordinates, through a bulk group.
fn store_kernel(m: &TensorMap, img_bytes: usize) -> String {
    let n = m.rank;
    let coords = coord_list(n);
    format!(
        "{HEADER}
.visible .entry tma_store(.param .u64 tensor, .param .u64 img, .param .u64 coords, .param .align 64 .b8 tmap[128])
{{
  .reg .pred %p<8>;
  .reg .b32 %r<48>;
  .reg .b64 %rd<24>;
  .shared .align 1024 .b8 smem[{img_bytes}];
  mov.u32 %r0, %tid.x;
  ld.param.u64 %rd2, [img];
  ld.param.u64 %rd3, [coords];
  mov.b64 %rd1, tmap;
  ld.global.s32 %r20, [%rd3];
  ld.global.s32 %r21, [%rd3+4];
  ld.global.s32 %r22, [%rd3+8];
  ld.global.s32 %r23, [%rd3+12];
  ld.global.s32 %r24, [%rd3+16];
  mov.u32 %r3, smem;
  mov.u32 %r5, %r0;
FILL:
  setp.ge.u32 %p2, %r5, {words};
  @%p2 bra FILLED;
  shl.b32 %r6, %r5, 2;
  cvt.u64.u32 %rd4, %r6;
  add.s64 %rd5, %rd2, %rd4;
  ld.global.u32 %r8, [%rd5];
  add.u32 %r7, %r3, %r6;
  st.shared.u32 [%r7], %r8;
  add.u32 %r5, %r5, 128;
  bra FILL;
FILLED:
  fence.proxy.async.shared::cta;
  bar.sync 0;
  setp.ne.u32 %p0, %r0, 0;
  @%p0 bra END;
  cp.async.bulk.tensor.{n}d.global.shared::cta.tile.bulk_group [%rd1, {{{coords}}}], [%r3];
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.read 0;
  cp.async.bulk.wait_group 0;
END:
  ret;
}}",
        words = img_bytes / 4
    )
}

#[test]
fn tensor_stores_write_only_in_bounds_elements() {
    let mut rng = seed("store");
    let cases = [
        map_2d(ElemType::F32, [45, 21], 48, [32, 8], Swizzle::B128, OobFill::Zero),
        map_2d(ElemType::F16, [45, 21], 48, [24, 5], Swizzle::None, OobFill::Zero),
        map_2d(ElemType::U8, [70, 9], 80, [32, 6], Swizzle::B32, OobFill::Zero),
    ];
    for m in cases {
        let img_bytes = box_bytes(&m).next_multiple_of(128);
        let ptx = store_kernel(&m, img_bytes);
        valid(&ptx);
        let (w, h) = (m.global_dims[0] as i64, m.global_dims[1] as i64);
        for c in [[3, 2, 0, 0, 0], [-5, -3, 0, 0, 0], [w - 7, h - 2, 0, 0, 0], [w + 1, 0, 0, 0, 0]] {
            let img = random_bytes(&mut rng, img_bytes);
            let before = poisoned(DType::U8, &[tensor_bytes(&m)]);
            let mut args = vec![
                KernelArg::Buffer(before.clone()),
                KernelArg::Buffer(bytes_tensor(&img)),
                coords_arg(c),
                KernelArg::Bytes(m.encode().to_vec()),
            ];
            run_local(&ptx, "tma_store", 128, &mut args).unwrap_or_else(|e| panic!("{:?} at {c:?}: {e}", m.swizzle));
            let want = expected_store(&m, &before.data, &img, c, 0);
            assert_eq!(out_bytes(&args, 0), want, "{:?} {:?} at {c:?}", m.elem_type, m.swizzle);
        }
    }
}

/// `load_kernel` with a map passed as a parameter, expected to fail; returns the error.
fn load_error(
    m_bytes: [u8; 128],
    shape: &TensorMap,
    tensor_len: usize,
    c: [i64; 5],
    dstoff: u32,
) -> trident_emu::EmuError {
    let copy_bytes = box_bytes(shape).next_multiple_of(128);
    let ptx = load_kernel(shape, Via::Param, dstoff, box_bytes(shape), copy_bytes);
    valid(&ptx);
    let mut args = vec![
        KernelArg::Buffer(HostTensor::zeros(DType::U8, &[tensor_len])),
        coords_arg(c),
        KernelArg::Buffer(poisoned(DType::U8, &[copy_bytes])),
        KernelArg::Bytes(m_bytes.to_vec()),
    ];
    let before = args.clone();
    let e = run_local(&ptx, "tma_load", 128, &mut args).unwrap_err();
    assert_eq!(args, before, "buffers untouched on error");
    assert!(e.line.as_ref().is_some_and(|l| l.1.contains("cp.async.bulk")), "{e}");
    e
}

#[test]
fn unusable_maps_and_copies_are_errors_naming_the_rule() {
    let good = map_2d(ElemType::F16, [64, 16], 64, [64, 8], Swizzle::B128, OobFill::Zero);
    let len = tensor_bytes(&good);
    let c = [0, 0, 0, 0, 0];
    let check = |bytes: [u8; 128], dstoff: u32, kind: ErrorKind, text: &str| {
        let e = load_error(bytes, &good, len, c, dstoff);
        assert_eq!(e.kind, kind, "{e}");
        assert!(e.message.contains(text), "wanted `{text}` in: {e}");
    };
    check([0; 128], 0, ErrorKind::Runtime, "not initialised");
    let mut foreign = [0x11u8; 128];
    foreign[0] = 0;
    check(foreign, 0, ErrorKind::Runtime, "not an emulator tensor map");
    let mut m = good;
    m.global_address += 8;
    check(m.encode(), 0, ErrorKind::Runtime, "not 16-byte aligned");
    m = good;
    m.box_dims[1] = 300;
    check(m.encode(), 0, ErrorKind::Runtime, "box_dim[1] = 300 outside 1..=256");
    m = good;
    m.swizzle = Swizzle::B64;
    check(m.encode(), 0, ErrorKind::Runtime, "exceeds the 64-byte span");
    m = good;
    m.global_strides[0] = 72;
    check(m.encode(), 0, ErrorKind::Runtime, "multiples of 16");
    m = good;
    m.interleave = trident_emu::tensormap::Interleave::B16;
    check(m.encode(), 0, ErrorKind::Unsupported, "interleave");
    m = good;
    m.rank = 3;
    m.global_dims[2] = 1;
    m.box_dims[2] = 1;
    m.element_strides[2] = 1;
    m.global_strides[1] = 2048;
    check(m.encode(), 0, ErrorKind::Runtime, "has rank 3, but the copy is .2d");
    // The map's dims reach past the buffer: the read is the usual out-of-bounds error.
    m = good;
    m.global_dims[1] = 40;
    let e = load_error(m.encode(), &good, len, [0, 12, 0, 0, 0], 0);
    assert_eq!(e.kind, ErrorKind::Memory, "{e}");
    assert!(e.message.contains("out-of-bounds") && e.message.contains("buffer argument 0"), "{e}");
    assert_eq!(e.access.as_ref().map(|a| a.param), Some(0), "{e}");
    // Shared destination not 128-byte aligned.
    check(good.encode(), 64, ErrorKind::Memory, "not 128-byte aligned");
    // A valid box larger than the shared memory the kernel has.
    m = good;
    m.box_dims[1] = 200;
    m.global_dims[1] = 200;
    check(m.encode(), 0, ErrorKind::Memory, "outside the CTA's");
}

#[test]
fn a_field_replaced_in_a_global_map_is_used() {
    let mut rng = seed("global-replace");
    let m = map_2d(ElemType::F16, [64, 24], 64, [32, 8], Swizzle::B64, OobFill::Zero);
    let tensor = random_bytes(&mut rng, tensor_bytes(&m));
    // The host map points 64 KiB past the tensor; thread 0 points it at the tensor.
    let mut stale = m;
    stale.global_address += 1 << 16;
    let copy_bytes = box_bytes(&m).next_multiple_of(128);
    let ptx = load_kernel(&m, Via::Global, 0, box_bytes(&m), copy_bytes).replace(
        "  ld.param.u64 %rd1, [tmapp];\n",
        "  ld.param.u64 %rd1, [tmapp];
  setp.eq.u32 %p6, %r0, 0;
  @%p6 tensormap.replace.tile.global_address.global.b1024.b64 [%rd1], %rd0;
  fence.proxy.tensormap::generic.release.gpu;
  fence.proxy.tensormap::generic.acquire.gpu [%rd1], 128;
",
    );
    valid(&ptx);
    let c = [20, 19, 0, 0, 0];
    let mut args = vec![
        KernelArg::Buffer(bytes_tensor(&tensor)),
        coords_arg(c),
        KernelArg::Buffer(poisoned(DType::U8, &[copy_bytes])),
        KernelArg::Buffer(bytes_tensor(&stale.encode())),
    ];
    run_local(&ptx, "tma_load", 128, &mut args).unwrap();
    assert_eq!(out_bytes(&args, 2), expected_load(&m, &tensor, c, 0, copy_bytes));
    assert_eq!(out_bytes(&args, 3), m.encode().to_vec(), "the map in global memory now names the tensor");
}

#[test]
fn cp_fenceproxy_is_executed_by_whole_warps() {
    let m = map_2d(ElemType::F16, [64, 16], 64, [64, 8], Swizzle::None, OobFill::Zero);
    let ptx = load_kernel(&m, Via::InKernel, 0, box_bytes(&m), 1024)
        .replace("  tensormap.cp_fenceproxy", "  @%p4 tensormap.cp_fenceproxy");
    valid(&ptx);
    let mut args = vec![
        KernelArg::Buffer(HostTensor::zeros(DType::U8, &[tensor_bytes(&m)])),
        coords_arg([0; 5]),
        KernelArg::Buffer(poisoned(DType::U8, &[1024])),
        KernelArg::Buffer(poisoned(DType::U8, &[128])),
    ];
    let e = run_local(&ptx, "tma_load", 128, &mut args).unwrap_err();
    assert!(e.message.contains("part of a warp"), "{e}");
}

#[test]
fn a_map_in_shared_memory_cannot_be_used_by_a_copy() {
    // Built in shared memory but used from there (it must go to global memory first).
    let m = map_2d(ElemType::F16, [64, 16], 64, [64, 8], Swizzle::None, OobFill::Zero);
    let ptx = load_kernel(&m, Via::InKernel, 0, box_bytes(&m), 1024).replace(
        "  bar.warp.sync -1;\n  tensormap.cp_fenceproxy",
        "  bar.warp.sync -1;\n  cvta.shared.u64 %rd1, %rd14;\n  tensormap.cp_fenceproxy",
    );
    let ptx = ptx
        .replace("  ld.param.u64 %rd1, [scratch];\n", "  ld.param.u64 %rd16, [scratch];\n  mov.u64 %rd14, tm;\n")
        .replace("[%rd1], [%r10], 128;", "[%rd16], [%r10], 128;")
        .replace("acquire.gpu [%rd1], 128;", "acquire.gpu [%rd16], 128;");
    valid(&ptx);
    let mut args = vec![
        KernelArg::Buffer(HostTensor::zeros(DType::U8, &[tensor_bytes(&m)])),
        coords_arg([0; 5]),
        KernelArg::Buffer(poisoned(DType::U8, &[1024])),
        KernelArg::Buffer(poisoned(DType::U8, &[128])),
    ];
    let e = run_local(&ptx, "tma_load", 128, &mut args).unwrap_err();
    assert!(e.message.contains("is in shared memory"), "{e}");
}

#[test]
fn transaction_bytes_of_a_tensor_copy_are_the_whole_box() {
    let mut rng = seed("tx");
    let m = map_2d(ElemType::F16, [40, 30], 40, [32, 8], Swizzle::None, OobFill::Zero);
    let tensor = random_bytes(&mut rng, tensor_bytes(&m));
    let bytes = box_bytes(&m);
    // A box entirely outside the tensor still completes all its bytes.
    let (out, _) = run_load(&m, Via::Param, &tensor, [-100, 50, 0, 0, 0], 0, bytes).unwrap();
    assert!(out.iter().all(|&b| b == 0));
    // Fewer bytes expected than the copy brings: the count goes negative, as for bulk copies.
    let e = run_load(&m, Via::Param, &tensor, [0, 0, 0, 0, 0], 0, bytes - 16).unwrap_err();
    assert!(e.message.contains("transaction count would go negative"), "{e}");
    assert!(e.line.as_ref().is_some_and(|l| l.1.contains("cp.async.bulk.tensor")), "{e}");
    // More bytes expected than any copy brings: the waiters deadlock, reported with the bytes.
    let e = run_load(&m, Via::Param, &tensor, [0, 0, 0, 0, 0], 0, bytes + 32).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Deadlock, "{e}");
    assert!(e.message.contains("32 transaction bytes pending"), "{e}");
}

/// One thread: clock, expect_tx, copy (a 2048-byte TMA box or a 2048-byte bulk copy),
/// test_wait at once, wait, clock; out = {elapsed cycles, test_wait right after issue}.
fn timed_kernel(tma: bool) -> String {
    let copy = if tma {
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r3], [%rd1, {%r9, %r9}], [%r4];"
    } else {
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r3], [%rd0], 2048, [%r4];"
    };
    format!(
        "{HEADER}
.visible .entry timed(.param .u64 tensor, .param .u64 out, .param .align 64 .b8 tmap[128])
{{
  .reg .pred %p<8>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<16>;
  .shared .align 1024 .b8 smem[2048];
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd0, [tensor];
  ld.param.u64 %rd2, [out];
  mov.b64 %rd1, tmap;
  mov.u32 %r3, smem;
  mov.u32 %r4, bar;
  mov.u32 %r9, 0;
  mbarrier.init.shared::cta.b64 [%r4], 1;
  mov.u64 %rd3, %clock64;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 2048;
  {copy}
  mbarrier.test_wait.parity.shared::cta.b64 %p2, [%r4], 0;
  selp.u64 %rd6, 1, 0, %p2;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r4], 0;
  @!%p1 bra WAIT;
  mov.u64 %rd4, %clock64;
  sub.s64 %rd5, %rd4, %rd3;
  st.global.v2.u64 [%rd2], {{%rd5, %rd6}};
  ret;
}}"
    )
}

#[test]
fn waiting_completes_when_the_box_arrives_timed_like_a_bulk_copy() {
    let mut rng = seed("timing");
    // 64 x 16 f16 rows of 128 bytes: the box is the buffer's 2048 contiguous bytes.
    let m = map_2d(ElemType::F16, [64, 16], 64, [64, 16], Swizzle::None, OobFill::Zero);
    let tensor = random_bytes(&mut rng, 2048);
    let mut elapsed = Vec::new();
    for tma in [true, false] {
        let ptx = timed_kernel(tma);
        valid(&ptx);
        let mut args = vec![
            KernelArg::Buffer(bytes_tensor(&tensor)),
            KernelArg::Buffer(poisoned(DType::U64, &[2])),
            KernelArg::Bytes(m.encode().to_vec()),
        ];
        run_local(&ptx, "timed", 1, &mut args).unwrap();
        let out = buf(&args, 1);
        let (cycles, early) = (out.get_bits(0), out.get_bits(1));
        assert_eq!(early, 0, "tma {tma}: the phase is not complete right after the copy issues");
        assert!(cycles > 200, "tma {tma}: the data takes a memory latency to arrive ({cycles} cycles)");
        elapsed.push(cycles as f64);
    }
    let ratio = elapsed[0] / elapsed[1];
    assert!(
        (0.8..1.25).contains(&ratio),
        "TMA {} vs bulk copy {} cycles for the same 2048 bytes",
        elapsed[0],
        elapsed[1]
    );
}

#[test]
fn reading_a_tensor_copy_destination_before_waiting_is_a_race() {
    let m = map_2d(ElemType::F16, [64, 16], 64, [64, 8], Swizzle::B128, OobFill::Zero);
    // Thread 0 reads the destination right after issuing the copy, without waiting.
    let ptx = load_kernel(&m, Via::Param, 0, box_bytes(&m), 1024)
        .replace("WAIT:\n", "  ld.shared.u32 %r30, [%r3+16];\nWAIT:\n");
    valid(&ptx);
    let mut args = vec![
        KernelArg::Buffer(HostTensor::zeros(DType::U8, &[tensor_bytes(&m)])),
        coords_arg([0; 5]),
        KernelArg::Buffer(poisoned(DType::U8, &[1024])),
        KernelArg::Bytes(m.encode().to_vec()),
    ];
    let e = run_local(&ptx, "tma_load", 128, &mut args).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Race, "{e}");
    assert!(
        e.message.contains("bulk copy") && e.line.as_ref().is_some_and(|l| l.1.contains("ld.shared.u32 %r30")),
        "{e}"
    );
}

#[test]
fn kernel_parameter_addresses_work_with_ld_param_and_generic_loads() {
    let mut rng = seed("param-addresses");
    let blob = random_bytes(&mut rng, 128);
    let ptx = format!(
        "{HEADER}
.visible .entry pw(.param .u64 out, .param .align 64 .b8 blob[128])
{{
  .reg .b32 %r<8>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd0, [out];
  mov.b64 %rd1, blob;
  ld.param.u64 %rd2, [%rd1+8];
  cvta.param.u64 %rd3, blob;
  ld.u64 %rd4, [%rd3+16];
  mov.u32 %r1, blob;
  ld.param.u32 %r2, [%r1+24];
  cvt.u64.u32 %rd6, %r2;
  ld.param.u64 %rd5, [blob+32];
  st.global.v2.u64 [%rd0], {{%rd2, %rd4}};
  st.global.v2.u64 [%rd0+16], {{%rd6, %rd5}};
  ret;
}}"
    );
    valid(&ptx);
    let mut args = vec![KernelArg::Buffer(poisoned(DType::U64, &[4])), KernelArg::Bytes(blob.clone())];
    run(&ptx, "pw", [1, 1, 1], [1, 1, 1], &mut args).unwrap();
    let word = |at: usize, n: usize| {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&blob[at..at + n]);
        u64::from_le_bytes(b)
    };
    let out = buf(&args, 0);
    let got: Vec<u64> = (0..4).map(|k| out.get_bits(k)).collect();
    assert_eq!(got, vec![word(8, 8), word(16, 8), word(24, 4), word(32, 8)]);
    // Parameters are read-only; a byte argument must be as long as its parameter.
    let bad = ptx.replace("  ret;", "  st.u64 [%rd3], %rd2;\n  ret;");
    let mut args = vec![KernelArg::Buffer(poisoned(DType::U64, &[4])), KernelArg::Bytes(blob.clone())];
    let e = run(&bad, "pw", [1, 1, 1], [1, 1, 1], &mut args).unwrap_err();
    assert!(e.message.contains("store to kernel parameters"), "{e}");
    let mut args = vec![KernelArg::Buffer(poisoned(DType::U64, &[4])), KernelArg::Bytes(blob[..64].to_vec())];
    let e = run(&ptx, "pw", [1, 1, 1], [1, 1, 1], &mut args).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Launch, "{e}");
    assert!(e.message.contains("64 bytes") && e.message.contains("128 bytes long"), "{e}");
}

#[test]
fn tensor_map_instruction_forms_parse_and_unimplemented_ones_are_refused_by_name() {
    let prog = |body: &str| {
        format!(
            "{HEADER}
.visible .entry k(.param .u64 g, .param .align 64 .b8 tmap[128])
{{
  .reg .pred %p<4>;
  .reg .b16 %rs<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<16>;
  .shared .align 1024 .b8 buf[4096];
  .shared .align 8 .b64 bar;
  mov.u32 %r1, bar;
  mov.u32 %r2, buf;
  mov.b64 %rd0, tmap;
  ld.param.u64 %rd1, [g];
  mov.u32 %r0, 0;
  mov.u16 %rs0, 1;
  {body}
  ret;
}}"
        )
    };
    // Modifiers in either order, `.tile` implied, reductions of the map fields by register.
    for ok in [
        "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes.tile [%r2], [%rd0, {%r0}], [%r1];",
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd0, {%r0, -3}], [%r1];",
        "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd0, {%r0, %r0}], [%r2];",
        "cp.async.bulk.prefetch.tensor.3d.L2.global [%rd0, {%r0, %r0, %r0}];",
        "tensormap.replace.tile.box_dim.global.b1024.b32 [%rd1], 4, %r0;",
        "tensormap.replace.tile.rank.b1024.b32 [%rd1], %r0;",
        "fence.proxy.tensormap::generic.release.cta;",
        "fence.proxy.tensormap::generic.acquire.sys [%rd1], 128;",
    ] {
        let ptx = prog(ok);
        valid(&ptx);
        Module::parse(&ptx).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    for (bad, why) in [
        (
            "cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%r2], [%rd0, {%r0, %r0, %r0}], [%r1], {%rs0};",
            "im2col",
        ),
        (
            "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r2], [%rd0, {%r0}], [%r1], %rs0;",
            "multicast",
        ),
        ("cp.reduce.async.bulk.tensor.1d.global.shared::cta.add.tile.bulk_group [%rd0, {%r0}], [%r2];", "tensor reductions"),
    ] {
        let ptx = prog(bad);
        valid(&ptx);
        let e = Module::parse(&ptx).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
        assert!(e.message.contains(why), "{e}");
    }
    // Operand mistakes ptxas also rejects.
    for (bad, why) in [
        ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd0, {%r0}], [%r1];", "takes 2 coordinates"),
        ("tensormap.replace.tile.swizzle_mode.global.b1024.b32 [%rd1], 5;", "0..=4"),
        ("tensormap.replace.tile.global_dim.global.b1024.b32 [%rd1], 5, %r0;", "ordinal"),
        ("tensormap.replace.tile.global_address.global.b1024.b32 [%rd1], %r0;", ".b64"),
        ("fence.proxy.tensormap::generic.acquire.gpu [%rd1], 64;", "128"),
    ] {
        let ptx = prog(bad);
        if let Some(ok) = ptxas_accepts(&ptx) {
            assert!(!ok, "ptxas accepts `{bad}`");
        }
        let e = Module::parse(&ptx).unwrap_err();
        assert!(e.message.contains(why), "{bad}: {e}");
    }
}

#[test]
fn a_grid_of_ctas_copies_a_tensor_tile_by_tile() {
    let mut rng = seed("tile-copy");
    // 100 x 70 f16 in rows of 104 elements; 64 x 16 boxes (128B swizzle), the last column and
    // row of boxes partly outside. Each CTA loads its box and stores it to the same place of
    // the output: the tensor is copied, the row padding never written.
    let (w, h, ld, b0, b1) = (100u64, 70u64, 104u64, 64u32, 16u32);
    let bytes = (b0 * b1 * 2) as usize;
    let map_of = |i: usize| {
        TensorMap::tiled(buffer_base(i), ElemType::F16, &[w, h], &[ld * 2], &[b0, b1], Swizzle::B128, OobFill::Zero)
            .unwrap()
    };
    let ptx = format!(
        "{HEADER}
.visible .entry tile_copy(.param .u64 src, .param .u64 dst, .param .align 64 .b8 inmap[128], .param .align 64 .b8 outmap[128])
{{
  .reg .pred %p<4>;
  .reg .b32 %r<32>;
  .reg .b64 %rd<8>;
  .shared .align 1024 .b8 smem[{bytes}];
  .shared .align 8 .b64 bar;
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, %ctaid.x;
  mul.lo.u32 %r20, %r1, {b0};
  mov.u32 %r2, %ctaid.y;
  mul.lo.u32 %r21, %r2, {b1};
  mov.b64 %rd1, inmap;
  mov.b64 %rd2, outmap;
  mov.u32 %r3, smem;
  mov.u32 %r4, bar;
  setp.ne.u32 %p0, %r0, 0;
  @%p0 bra DONE;
  mbarrier.init.shared::cta.b64 [%r4], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], {bytes};
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r3], [%rd1, {{%r20, %r21}}], [%r4];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r4], 0;
  @!%p1 bra WAIT;
  cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd2, {{%r20, %r21}}], [%r3];
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.read 0;
DONE:
  ret;
}}"
    );
    valid(&ptx);
    let input = random_bytes(&mut rng, (ld * h * 2) as usize);
    let before = poisoned(DType::U8, &[input.len()]);
    let mut args = vec![
        KernelArg::Buffer(bytes_tensor(&input)),
        KernelArg::Buffer(before.clone()),
        KernelArg::Bytes(map_of(0).encode().to_vec()),
        KernelArg::Bytes(map_of(1).encode().to_vec()),
    ];
    let m = Module::parse(&ptx).unwrap();
    let grid = [w.div_ceil(b0 as u64) as u32, h.div_ceil(b1 as u64) as u32, 1];
    let cfg = LaunchConfig { grid, block: [32, 1, 1], ..LaunchConfig::default() };
    launch(&m, "tile_copy", &cfg, &mut args).unwrap();
    let out = out_bytes(&args, 1);
    for (k, (&o, &i)) in out.iter().zip(&input).enumerate() {
        let col = (k % (ld as usize * 2)) / 2;
        let want = if (col as u64) < w { i } else { before.data[k] };
        assert_eq!(o, want, "byte {k} (row {}, column {col})", k / (ld as usize * 2));
    }
}
