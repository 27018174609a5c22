//! The tensor-memory accelerator's shared-memory layouts.
//!
//! A TMA copy writes its box row-major (the innermost dimension contiguous) from a 1024-byte
//! aligned base, with the byte address `a` of each element permuted by the map's swizzle
//! span `W`: the 16-byte chunk bits `[4, 4 + log2(W/16))` are XORed with the bits
//! `[7, 7 + log2(W/16))` (PTX ISA, "Tensor swizzling modes"; the PTX emulator implements the
//! same function, `trident_emu::tensormap::Swizzle::apply`). A shared buffer can be filled
//! by TMA when its layout is exactly one of these permutations.

use crate::layout::SharedLinear;

/// The byte address TMA gives element `linear` (row-major index) of a box, with swizzle span
/// `w` (0: none).
pub fn tma_byte_offset(linear: u64, elem_bytes: u32, w: u32) -> u64 {
    let a = linear * elem_bytes as u64;
    match w {
        32 | 64 | 128 => {
            let m = (w as u64 / 16) - 1;
            a ^ (((a >> 7) & m) << 4)
        }
        _ => a,
    }
}

/// The swizzle span (0, 32, 64 or 128) with which a TMA copy of a box of `sl.shape` writes
/// exactly the layout `sl`, if any: every element lands where `sl` puts it. A swizzled map
/// also needs the box's contiguous dimension to span at most the swizzle (a driver rule).
pub fn swizzle_for(sl: &SharedLinear, elem_bytes: u32) -> Option<u32> {
    let shape = &sl.shape;
    if shape.iter().any(|d| !d.is_power_of_two()) {
        return None;
    }
    let numel: u64 = shape.iter().map(|&d| d as u64).product();
    let inner = *shape.last()? as u64 * elem_bytes as u64;
    let offset = sl.offset_fn();
    [0u32, 32, 64, 128].into_iter().find(|&w| {
        (w == 0 || inner <= w as u64)
            // Flat coordinates of power-of-two shapes are row-major indices.
            && (0..numel).all(|i| offset(i) * elem_bytes as u64 == tma_byte_offset(i, elem_bytes, w))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::build::shared;

    #[test]
    fn swizzled_tiles_match_their_tma_modes() {
        // f16 rows of 128, 64 and 32 bytes, swizzled as wgmma's canonical layouts are.
        let cases = [([64, 64], 8, 1, 8, Some(128)), ([64, 32], 8, 2, 4, Some(64)), ([64, 16], 8, 4, 2, Some(32))];
        for (shape, vec, per_phase, max_phase, want) in cases {
            let sl = shared(&shape, vec, per_phase, max_phase, &[1, 0]).unwrap();
            assert_eq!(swizzle_for(&sl, 2), want, "{shape:?} vec {vec} per_phase {per_phase} max_phase {max_phase}");
        }
        // Row-major: no swizzle.
        let plain = shared(&[32, 64], 1, 1, 1, &[1, 0]).unwrap();
        assert_eq!(swizzle_for(&plain, 2), Some(0));
        // Column-major is no TMA layout of this box.
        let colmajor = shared(&[32, 64], 1, 1, 1, &[0, 1]).unwrap();
        assert_eq!(swizzle_for(&colmajor, 2), None);
        // 128-byte rows swizzled like 64-byte ones: no mode matches.
        let odd = shared(&[64, 64], 8, 2, 4, &[1, 0]).unwrap();
        assert_eq!(swizzle_for(&odd, 2), None);
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
