//! Layout tests: blocked layouts against hand-drawn tables, mma and dot-operand layouts
//! against the PTX ISA's fragment formulas, shared swizzles against worked examples.

use super::build::{blocked, mma_v2, mma_v2_operand, shared};
use super::linear::{flatten, unflatten, ConversionKind};
use super::*;

fn cell(text: &str, row: usize, col: usize) -> String {
    let line = text.lines().nth(row + 1).unwrap();
    let inner = line.trim().trim_start_matches('[').trim_end_matches(']');
    inner.split(',').nth(col).unwrap().trim().to_string()
}

#[test]
fn blocked_4x32_matches_the_triton_drawing() {
    let l = blocked(&[4, 32], &[1, 4], &[4, 8], &[1, 1], &[1, 0]).unwrap();
    assert!(l.is_valid());
    assert_eq!(l.num_regs(), 4);
    let d = draw_layout(&l);
    assert_eq!(cell(&d, 0, 0), "T0:0");
    assert_eq!(cell(&d, 0, 3), "T0:3");
    assert_eq!(cell(&d, 0, 4), "T1:0");
    assert_eq!(cell(&d, 1, 0), "T8:0");
    assert_eq!(cell(&d, 3, 31), "T31:3");
}

#[test]
fn blocked_smaller_than_its_tile_broadcasts_lanes() {
    // 16x16 with a 16x32 tile: threads t and t+4 hold the same elements.
    let l = blocked(&[16, 16], &[1, 4], &[4, 8], &[4, 1], &[1, 0]).unwrap();
    assert!(l.is_valid());
    let d = draw_layout(&l);
    assert_eq!(cell(&d, 0, 0), "T0:0|T4:0");
    assert_eq!(cell(&d, 1, 5), "T9:1|T13:1");
    assert_eq!(cell(&d, 15, 15), "T123:3|T127:3");
    assert_eq!(l.free_lane_mask(), 0b100);
}

#[test]
fn blocked_larger_than_its_tile_repeats_in_registers() {
    let l = blocked(&[1024], &[4], &[32], &[4], &[0]).unwrap();
    assert_eq!(l.num_regs(), 8);
    // Register 4 is the second 512-element tile.
    assert_eq!(l.apply(4, 0, 0), 512);
    assert_eq!(l.apply(1, 1, 1), 128 + 4 + 1);
    assert_eq!(l.contig_regs(0), 4);
    // A size-1 per-thread width covering a smaller tensor drops duplicate registers.
    let s = blocked(&[2], &[4], &[32], &[1], &[0]).unwrap();
    assert_eq!(s.num_regs(), 2);
}

/// PTX ISA: groupID = lane >> 2, threadID_in_group = lane % 4.
fn gid(lane: u64) -> u32 {
    (lane >> 2) as u32
}
fn tig(lane: u64) -> u32 {
    (lane % 4) as u32
}

#[test]
fn mma_accumulator_matches_the_ptx_fragment_table() {
    // m16n8kK accumulator: row = groupID (c0, c1) or groupID + 8 (c2, c3); col = tig*2 + (i & 1).
    let l = mma_v2(&[16, 8], &[1, 1]).unwrap();
    assert!(l.is_valid());
    assert_eq!(l.num_regs(), 4);
    for lane in 0..32 {
        for i in 0..4u64 {
            let row = gid(lane) + if i < 2 { 0 } else { 8 };
            let col = tig(lane) * 2 + (i as u32 & 1);
            assert_eq!(l.apply(i, lane, 0), flatten(&[16, 8], &[row, col]), "lane {lane} c{i}");
        }
    }
}

#[test]
fn mma_warps_tile_n_then_m_and_repeat_in_registers() {
    let l = mma_v2(&[64, 64], &[2, 2]).unwrap();
    assert!(l.is_valid());
    // Warp 1 is the next 8 columns, warp 2 the next 16 rows.
    assert_eq!(l.coords(0, 0, 1).as_slice(), &[0, 8]);
    assert_eq!(l.coords(0, 0, 2).as_slice(), &[16, 0]);
    // 64x64 over a 32x16 warp grid tile: 2 x 4 repeats of 4 registers.
    assert_eq!(l.num_regs(), 32);
    assert_eq!(l.coords(4, 0, 0).as_slice(), &[0, 16]);
}

#[test]
fn f16_operands_match_the_m16n8k16_fragment_tables() {
    let a = mma_v2_operand(&[16, 16], 0, &[1, 1], 2).unwrap();
    let b = mma_v2_operand(&[16, 8], 1, &[1, 1], 2).unwrap();
    assert!(a.is_valid() && b.is_valid());
    assert_eq!((a.num_regs(), b.num_regs()), (8, 4));
    for lane in 0..32 {
        for i in 0..8u64 {
            // A: row = groupID for a0,a1,a4,a5, else +8; col = tig*2 + (i&1) (+8 for i >= 4).
            let row = gid(lane) + if i % 4 < 2 { 0 } else { 8 };
            let col = tig(lane) * 2 + (i as u32 & 1) + if i >= 4 { 8 } else { 0 };
            assert_eq!(a.apply(i, lane, 0), flatten(&[16, 16], &[row, col]), "A lane {lane} a{i}");
        }
        for i in 0..4u64 {
            // B: row = tig*2 + (i&1) (+8 for i >= 2); col = groupID.
            let row = tig(lane) * 2 + (i as u32 & 1) + if i >= 2 { 8 } else { 0 };
            assert_eq!(b.apply(i, lane, 0), flatten(&[16, 8], &[row, gid(lane)]), "B lane {lane} b{i}");
        }
    }
}

#[test]
fn tf32_operands_match_the_m16n8k8_fragment_tables() {
    let a = mma_v2_operand(&[16, 8], 0, &[1, 1], 1).unwrap();
    let b = mma_v2_operand(&[8, 8], 1, &[1, 1], 1).unwrap();
    for lane in 0..32 {
        for i in 0..4u64 {
            // A: row = groupID for a0, a2, +8 for a1, a3; col = tig for a0, a1, +4 for a2, a3.
            let row = gid(lane) + if i % 2 == 0 { 0 } else { 8 };
            let col = tig(lane) + if i < 2 { 0 } else { 4 };
            assert_eq!(a.apply(i, lane, 0), flatten(&[16, 8], &[row, col]), "A lane {lane} a{i}");
        }
        for i in 0..2u64 {
            let row = tig(lane) + if i == 0 { 0 } else { 4 };
            assert_eq!(b.apply(i, lane, 0), flatten(&[8, 8], &[row, gid(lane)]), "B lane {lane} b{i}");
        }
    }
}

#[test]
fn int8_operands_match_the_m16n8k32_fragment_tables() {
    let a = mma_v2_operand(&[16, 32], 0, &[1, 1], 4).unwrap();
    let b = mma_v2_operand(&[32, 8], 1, &[1, 1], 4).unwrap();
    for lane in 0..32 {
        for i in 0..16u64 {
            // A: row = groupID for i in 0..4 and 8..12, else +8; col = tig*4 + (i&3) (+16 for i >= 8).
            let row = gid(lane) + if i % 8 < 4 { 0 } else { 8 };
            let col = tig(lane) * 4 + (i as u32 & 3) + if i >= 8 { 16 } else { 0 };
            assert_eq!(a.apply(i, lane, 0), flatten(&[16, 32], &[row, col]), "A lane {lane} a{i}");
        }
        for i in 0..8u64 {
            let row = tig(lane) * 4 + (i as u32 & 3) + if i >= 4 { 16 } else { 0 };
            assert_eq!(b.apply(i, lane, 0), flatten(&[32, 8], &[row, gid(lane)]), "B lane {lane} b{i}");
        }
    }
}

#[test]
fn operands_broadcast_over_the_other_operands_warps() {
    let a = mma_v2_operand(&[64, 32], 0, &[2, 2], 2).unwrap();
    let b = mma_v2_operand(&[32, 64], 1, &[2, 2], 2).unwrap();
    assert!(a.is_valid() && b.is_valid());
    // Warp bit 0 tiles N: A's copy; warp bit 1 tiles M: B's copy.
    assert_eq!(a.warp[0], 0);
    assert_eq!(a.coords(0, 0, 2).as_slice(), &[16, 0]);
    assert_eq!(b.coords(0, 0, 1).as_slice(), &[0, 8]);
    assert_eq!(b.warp[1], 0);
}

#[test]
fn shared_swizzles_match_the_worked_examples() {
    // out[r][c] = in[r][c ^ r]: the element (r, c) sits at position c ^ r of row r.
    let s = shared(&[4, 4], 1, 1, 4, &[1, 0]).unwrap();
    for r in 0..4u32 {
        for c in 0..4u32 {
            assert_eq!(s.offset_of(flatten(&[4, 4], &[r, c])), (r * 4 + (c ^ r)) as u64);
        }
    }
    let s = shared(&[4, 4], 1, 2, 4, &[1, 0]).unwrap();
    assert_eq!(s.offset_of(flatten(&[4, 4], &[2, 0])), 9);
    // vec = 2: pairs move together.
    let s = shared(&[4, 4], 2, 2, 4, &[1, 0]).unwrap();
    assert_eq!(s.offset_of(flatten(&[4, 4], &[2, 0])), 10);
    assert_eq!(s.offset_of(flatten(&[4, 4], &[2, 1])), 11);
    assert_eq!(s.offset_of(flatten(&[4, 4], &[3, 2])), 12);
    assert!(draw_shared(&s).contains("[10, 11,  8,  9]"), "{}", draw_shared(&s));
    // Column-major order: dim 0 contiguous.
    let s = shared(&[4, 8], 1, 1, 1, &[0, 1]).unwrap();
    assert_eq!(s.offset_of(flatten(&[4, 8], &[1, 2])), 9);
}

#[test]
fn slices_and_conversions() {
    let mut table = Table::new();
    let p = table.push(trident_ir::Layout::Blocked {
        size_per_thread: [1, 4].into_iter().collect(),
        threads_per_warp: [4, 8].into_iter().collect(),
        warps_per_cta: [2, 2].into_iter().collect(),
        order: [1, 0].into_iter().collect(),
    });
    let s = table.push(trident_ir::Layout::Slice { dim: 1, parent: p });
    let row = distributed(&table, s, &[64]).unwrap();
    assert!(row.is_valid());
    // Lanes along dim 1 and warps along dim 1 hold copies.
    assert_eq!(row.free_lane_mask(), 0b00111);
    assert_eq!(row.free_warp_mask(), 0b01);
    assert_eq!(row.num_regs(), 8);
    let full = distributed(&table, p, &[64, 64]).unwrap();
    let other = blocked(&[64, 64], &[4, 1], &[8, 4], &[2, 2], &[0, 1]).unwrap();
    assert_eq!(full.conversion_to(&full), ConversionKind::Identity);
    assert_eq!(full.conversion_to(&other), ConversionKind::CrossWarp);
    let mut permuted = full.clone();
    permuted.reg.swap(0, 1);
    assert_eq!(full.conversion_to(&permuted), ConversionKind::RegisterPermute);
    let mut lanes = full.clone();
    lanes.lane.swap(0, 1);
    assert_eq!(full.conversion_to(&lanes), ConversionKind::WarpLocal);
}

/// A batched (rank-3) mma layout is the matrix layout in every batch index: the thread
/// holding (b, m, n) holds (m, n) of the rank-2 layout with the same M and N warps, in the
/// warp and register the batch index selects (warps on the batch, or registers beyond it).
/// The operand layouts likewise, so fragments are found per batch index.
#[test]
fn batched_mma_layouts_are_the_matrix_layout_per_batch_index() {
    for (shape, warps) in [([2u32, 32, 32], [2u32, 1, 2]), ([4, 16, 16], [2, 1, 1]), ([8, 32, 16], [1, 2, 2])] {
        let (b, m, n) = (shape[0], shape[1], shape[2]);
        let l3 = mma_v2(&shape, &warps).unwrap();
        let l2 = mma_v2(&[m, n], &warps[1..]).unwrap();
        assert!(l3.is_valid() && l2.is_valid());
        // Batch warps come after the matrix's warps; batch repeats after its registers.
        let mw = l2.warp.len();
        let wb = warps[0].trailing_zeros() as usize;
        for r in 0..l3.num_regs() as u64 {
            for lane in 0..32 {
                for w in 0..l3.num_warps() as u64 {
                    let c = l3.coords(r, lane, w);
                    let (r2, w2) = (r % l2.num_regs() as u64, w % (1 << mw));
                    let bt = (w >> mw) + ((r / l2.num_regs() as u64) << wb);
                    assert_eq!(c[0] as u64, bt % b as u64, "{shape:?} r{r} lane{lane} w{w}");
                    assert_eq!(&c[1..], l2.coords(r2, lane, w2).as_slice(), "{shape:?} r{r} lane{lane} w{w}");
                }
            }
        }
        for (op, oshape) in [(0u8, [b, m, 16]), (1, [b, 16, n])] {
            let o3 = mma_v2_operand(&oshape, op, &warps, 2).unwrap();
            let o2 = mma_v2_operand(&oshape[1..], op, &warps[1..], 2).unwrap();
            assert!(o3.is_valid());
            // The first bases (one instruction's fragment) are the matrix's.
            let frag = if op == 0 { 3 } else { 2 };
            for i in 0..frag {
                assert_eq!(unflatten(&oshape, o3.reg[i])[1..], unflatten(&oshape[1..], o2.reg[i])[..], "op {op}");
            }
            assert_eq!(o3.lane.len(), 5);
            for (x, y) in o3.lane.iter().zip(&o2.lane) {
                assert_eq!(unflatten(&oshape, *x)[1..], unflatten(&oshape[1..], *y)[..], "op {op} lanes");
            }
        }
    }
}

#[test]
fn an_accumulator_reshaped_permuted_and_split_keeps_every_element_in_its_register() {
    // Triton's split epilogue on a 64x64 warpgroup-MMA accumulator: 64x2x32, permuted to
    // 64x32x2, split. Each step keeps the element each register holds (checked element by
    // element), and the halves are the accumulator layout of a 64x32 tile.
    let acc = super::build::mma_v3(&[64, 64], &[4, 1]).unwrap();
    let r = acc.reshaped(&[64, 2, 32]);
    let t = r.permuted(&[0, 2, 1]);
    let half = t.split_halves().expect("the split dimension is a register bit");
    assert!(r.is_valid() && t.is_valid() && half.is_valid());
    let want = super::build::mma_v3(&[64, 32], &[4, 1]).unwrap();
    for (lane, warp) in (0..32).flat_map(|l| (0..4).map(move |w| (l, w))) {
        for reg in 0..acc.num_regs() as u64 {
            // Register `reg` holds (m, n) of the accumulator; after the reshape (m, n / 32, n %
            // 32), after the permute (m, n % 32, n / 32).
            let c = acc.coords(reg, lane, warp);
            let (m, n) = (c[0], c[1]);
            assert_eq!(r.coords(reg, lane, warp).as_slice(), &[m, n / 32, n % 32]);
            assert_eq!(t.coords(reg, lane, warp).as_slice(), &[m, n % 32, n / 32]);
        }
        let mut mine: Vec<u64> = (0..half.num_regs() as u64).map(|r| half.apply(r, lane, warp)).collect();
        let mut theirs: Vec<u64> = (0..want.num_regs() as u64).map(|r| want.apply(r, lane, warp)).collect();
        mine.sort_unstable();
        theirs.sort_unstable();
        assert_eq!(mine, theirs, "lane {lane} warp {warp}");
    }
    // Half j's register r is the permuted tensor's element (its coordinate, j): picked, not moved.
    for j in 0..2u64 {
        let map = t.split_registers(&half, j).expect("register-only");
        for (r, &src) in map.iter().enumerate() {
            assert_eq!(t.reg_part(src as u64), (half.reg_part(r as u64) << 1) | j);
        }
    }
    // A split whose dimension is spread over lanes has no such halves.
    let lanes = blocked(&[32, 2], &[1, 1], &[16, 2], &[1, 1], &[1, 0]).unwrap();
    assert!(lanes.split_halves().is_none());
}
