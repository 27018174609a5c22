//! The tensor-memory accelerator's shared-memory layouts, and the launch-time fields of its
//! tensor maps ([`MapField`]: what the host computes from the arguments).
//!
//! A TMA copy writes its box row-major (the innermost dimension contiguous) from its
//! shared destination, with the byte address `a` of each element permuted by the map's
//! swizzle span `W`: the 16-byte chunk bits `[4, 4 + log2(W/16))` are XORed with the bits
//! `[7, 7 + log2(W/16))` (PTX ISA, "Tensor swizzling modes"; the PTX emulator implements the
//! same function, `trident_emu::tensormap::Swizzle::apply`). The permutation is a function
//! of the absolute shared address; buffers are 1024-byte aligned, so offsets from a buffer's
//! base permute alike. A shared buffer can be filled by TMA when its layout is exactly what
//! one copy, or a row of copies (below), writes.
//!
//! **Wide rows.** A swizzled box's innermost dimension may span at most `W` bytes (a driver
//! rule). A tile whose rows are wider (128 f16 columns: 256 bytes) is copied as `n` boxes of
//! `W / elem_bytes` columns each — box `j` at innermost coordinate `offset + j * cols`, into
//! the buffer at byte `j * box_bytes` — which is the layout Trident's swizzled tiles already
//! have for wide rows: column blocks of one swizzle span, each a contiguous `rows × W` block
//! (`layout::build::shared`, what wgmma's descriptors read). [`swizzle_for`] checks that
//! element by element for every box.

use crate::layout::SharedLinear;
use trident_ir::{CastKind, Const, Function, OpKind, Value, ValueDef};

/// The byte address TMA gives the byte at offset `a` of a 1024-byte aligned destination,
/// with swizzle span `w` (0: none).
pub fn tma_swizzle(a: u64, w: u32) -> u64 {
    match w {
        32 | 64 | 128 => {
            let m = (w as u64 / 16) - 1;
            a ^ (((a >> 7) & m) << 4)
        }
        _ => a,
    }
}

/// The byte address TMA gives element `linear` (row-major index) of a box copied to a
/// 1024-byte aligned destination, with swizzle span `w` (0: none).
pub fn tma_byte_offset(linear: u64, elem_bytes: u32, w: u32) -> u64 {
    tma_swizzle(linear * elem_bytes as u64, w)
}

/// How TMA fills a shared tile: `boxes` copies side by side along the innermost dimension,
/// each of `box_cols` columns (the map's innermost box dimension) and swizzle span `swizzle`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TmaFill {
    /// 0 (none), 32, 64 or 128 bytes.
    pub swizzle: u32,
    /// Columns of one box (the tile's innermost dimension divided by `boxes`).
    pub box_cols: u32,
    pub boxes: u32,
}

/// How TMA copies write exactly the layout `sl` (a tile of `sl.shape`, elements of
/// `elem_bytes`), if they can: one box when its rows fit the swizzle span, else one box per
/// span-wide column block (module docs); every element of every box must land where `sl`
/// puts it, in every slot of a ring of such tiles (the tile spans whole swizzle repeats).
pub fn swizzle_for(sl: &SharedLinear, elem_bytes: u32) -> Option<TmaFill> {
    let shape = &sl.shape;
    if shape.is_empty() || shape.iter().any(|&d| !d.is_power_of_two()) {
        return None;
    }
    let eb = elem_bytes as u64;
    let numel: u64 = shape.iter().map(|&d| d as u64).product();
    let cols = *shape.last()? as u64;
    let rows = numel / cols;
    let offset = sl.offset_fn();
    [0u32, 32, 64, 128].into_iter().find_map(|w| {
        // Without a swizzle the rows are plain: one box of any width.
        let box_cols = if w == 0 { cols } else { cols.min(w as u64 / eb) };
        if box_cols == 0 || !(box_cols * eb).is_multiple_of(16) {
            return None;
        }
        let boxes = cols / box_cols;
        let box_bytes = rows * box_cols * eb;
        // A ring's slot j starts j tile sizes in: on the pattern's repeat (8 rows of `w`).
        if w != 0 && !(numel * eb).is_multiple_of(8 * w as u64) {
            return None;
        }
        let fits = (0..boxes).all(|j| {
            (0..rows * box_cols).all(|i| {
                // Element i of box j (row-major in the box) is tile element (row, j*box_cols + col).
                let (row, col) = (i / box_cols, i % box_cols);
                let tile_index = row * cols + j * box_cols + col;
                offset(tile_index) * eb == tma_swizzle(j * box_bytes + i * eb, w)
            })
        });
        fits.then_some(TmaFill { swizzle: w, box_cols: box_cols as u32, boxes: boxes as u32 })
    })
}

/// Where one field of a tensor map comes from at launch.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MapField {
    /// The value of the kernel's scalar parameter with this index (IR parameter order), as
    /// an integer of its type (signed types sign-extended).
    Param(usize),
    Const(i64),
    /// The product of the factors as the kernel computes it: wrapped to a signed integer of
    /// `bits` bits (a `mul` of `i32` values wraps at 32 bits), then sign-extended. A shape
    /// like `Z * H * N_CTX` of parameters is known at launch without code in the kernel.
    Product {
        factors: Vec<MapField>,
        bits: u32,
    },
}

impl MapField {
    /// The field's value for the launch's parameter values (`param(i)`: parameter `i`'s
    /// value as an integer of its type), or `None` where a parameter has none.
    pub fn eval(&self, param: &mut dyn FnMut(usize) -> Option<i64>) -> Option<i64> {
        match self {
            MapField::Param(i) => param(*i),
            MapField::Const(c) => Some(*c),
            MapField::Product { factors, bits } => {
                let mut p: i64 = 1;
                for x in factors {
                    p = p.wrapping_mul(x.eval(param)?);
                }
                let sh = 64 - (*bits).clamp(1, 64);
                Some((p << sh) >> sh)
            }
        }
    }
}

/// The map field `v` is, if the launch can compute it: an integer parameter (through integer
/// conversions), a constant, or a product of such (`mul`s of signed integers).
pub fn map_field(f: &Function, v: Value) -> Option<MapField> {
    let is_int = |t: &trident_ir::Type| t.is_scalar() && t.elem().is_int() && !t.elem().is_bool();
    if !is_int(f.ty(v)) {
        return None;
    }
    match f.values[v].def {
        ValueDef::Arg(b, i) if b == f.body => Some(MapField::Param(i as usize)),
        ValueDef::Arg(..) => None,
        ValueDef::Result(op, _) => match &f.ops[op].kind {
            OpKind::Constant(Const::Int(x)) => Some(MapField::Const(*x)),
            OpKind::Cast { kind: CastKind::Convert, .. } => {
                let inner = map_field(f, f.ops[op].operands[0])?;
                // A product wraps at its own width (and is signed): widening keeps its value,
                // a narrowing cast would wrap it again.
                if let MapField::Product { bits, .. } = &inner {
                    if f.ty(v).elem().num().is_none_or(|d| !d.is_int() || d.bits() < *bits) {
                        return None;
                    }
                }
                Some(inner)
            }
            OpKind::Binary(trident_ir::BinaryOp::Mul) => {
                let d = f.ty(v).elem().num().filter(|d| d.is_signed_int())?;
                let mut factors = vec![];
                for &o in f.ops[op].operands.iter() {
                    match map_field(f, o)? {
                        MapField::Product { factors: inner, bits } if bits == d.bits() => factors.extend(inner),
                        x => factors.push(x),
                    }
                }
                Some(MapField::Product { factors, bits: d.bits() })
            }
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_field_products_wrap_like_the_kernel() {
        let p = |v: Vec<i64>| move |i: usize| v.get(i).copied();
        let prod = |bits| MapField::Product {
            factors: vec![MapField::Param(0), MapField::Param(1), MapField::Const(3)],
            bits,
        };
        assert_eq!(prod(32).eval(&mut p(vec![4, 5])), Some(60));
        assert_eq!(prod(32).eval(&mut p(vec![-4, 5])), Some(-60));
        // 2^20 * 2^11 * 3 wraps at 32 bits as an i32 `mul` does; not at 64.
        let (a, b) = (1 << 20, 1 << 11);
        assert_eq!(prod(32).eval(&mut p(vec![a, b])), Some(((a * b * 3) as i32) as i64));
        assert_eq!(prod(64).eval(&mut p(vec![a, b])), Some(a * b * 3));
        // A parameter without a value leaves the product without one.
        assert_eq!(prod(32).eval(&mut p(vec![4])), None);
    }
    use crate::layout::build::shared;

    fn one_box(swizzle: u32, box_cols: u32) -> Option<TmaFill> {
        Some(TmaFill { swizzle, box_cols, boxes: 1 })
    }

    #[test]
    fn swizzled_tiles_match_their_tma_modes() {
        // f16 rows of 128, 64 and 32 bytes, swizzled as wgmma's canonical layouts are.
        let cases = [
            ([64, 64], 8, 1, 8, one_box(128, 64)),
            ([64, 32], 8, 2, 4, one_box(64, 32)),
            ([64, 16], 8, 4, 2, one_box(32, 16)),
        ];
        for (shape, vec, per_phase, max_phase, want) in cases {
            let sl = shared(&shape, vec, per_phase, max_phase, &[1, 0]).unwrap();
            assert_eq!(swizzle_for(&sl, 2), want, "{shape:?} vec {vec} per_phase {per_phase} max_phase {max_phase}");
        }
        // Row-major: no swizzle, one box however wide the rows.
        let plain = shared(&[32, 64], 1, 1, 1, &[1, 0]).unwrap();
        assert_eq!(swizzle_for(&plain, 2), one_box(0, 64));
        let wide_plain = shared(&[8, 256], 1, 1, 1, &[1, 0]).unwrap();
        assert_eq!(swizzle_for(&wide_plain, 4), one_box(0, 256));
        // Column-major is no TMA layout of this box.
        let colmajor = shared(&[32, 64], 1, 1, 1, &[0, 1]).unwrap();
        assert_eq!(swizzle_for(&colmajor, 2), None);
        // 128-byte rows in a 64-byte swizzle pattern are two column blocks of 64 bytes:
        // two 64B-swizzled boxes, not one 128-byte box.
        let odd = shared(&[64, 64], 8, 2, 4, &[1, 0]).unwrap();
        assert_eq!(swizzle_for(&odd, 2), Some(TmaFill { swizzle: 64, box_cols: 32, boxes: 2 }));
        // A swizzle of 32-byte groups (vec 16 f16) is none of TMA's 16-byte-chunk patterns.
        let wide_groups = shared(&[64, 64], 16, 1, 4, &[1, 0]).unwrap();
        assert_eq!(swizzle_for(&wide_groups, 2), None);
    }

    #[test]
    fn wide_rows_are_copied_as_one_box_per_column_block() {
        // f16 rows of 256 and 512 bytes (B of 128x128x64, B of 64x256x64, A with K = 128),
        // and f32 / i8 rows of 256 bytes: column blocks of 128 bytes, one 128B-swizzled box each.
        let cases = [
            ([64, 128], 2, 64, 2),
            ([64, 256], 2, 64, 4),
            ([128, 128], 2, 64, 2),
            ([16, 64], 4, 32, 2),
            ([32, 256], 1, 128, 2),
        ];
        for (shape, bytes, box_cols, boxes) in cases {
            let sl = shared(&shape, 16 / bytes, 1, 8, &[1, 0]).unwrap();
            assert_eq!(
                swizzle_for(&sl, bytes),
                Some(TmaFill { swizzle: 128, box_cols, boxes }),
                "{shape:?} of {bytes}-byte elements"
            );
        }
        // The same rows without column blocks (one 256-byte row after the other) are no
        // row of boxes: box 1 would have to interleave with box 0.
        let sl = shared(&[64, 128], 8, 1, 8, &[1, 0]).unwrap();
        let mut rows_whole = sl.clone();
        // Rebuild with the column bit below the row bits: plain 256-byte rows, swizzled per 128 bytes.
        let col_block = rows_whole.offset.iter().position(|&b| b == 64).unwrap();
        let b = rows_whole.offset.remove(col_block);
        rows_whole.offset.insert(6, b);
        assert!(rows_whole.is_valid());
        assert_eq!(swizzle_for(&rows_whole, 2), None);
    }

    #[test]
    fn the_swizzle_permutes_16_byte_chunks_within_1024_bytes() {
        // 128B: row r's chunk c lands at chunk c ^ (r % 8).
        for r in 0..16u64 {
            for c in 0..8u64 {
                let a = tma_byte_offset(r * 64 + c * 8, 2, 128);
                assert_eq!(a, r * 128 + ((c ^ (r % 8)) * 16));
            }
        }
    }
}
