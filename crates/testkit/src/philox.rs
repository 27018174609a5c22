//! Triton's `tl.rand`, bit for bit, as the dropout reference needs it.
//!
//! `tl.rand(seed, offset)` (for 32-bit offsets, with the default 10 rounds) is:
//!
//! 1. Philox-4x32 on the counter `(offset as u32, 0, 0, 0)` — the high word is 0
//!    for 32-bit offsets — with the key `(seed as u64 & 0xffffffff, seed as u64 >> 32)`,
//!    where `seed` is sign-extended to 64 bits first;
//! 2. the first output word `x`, reinterpreted as i32, folded to a non-negative
//!    value (`x < 0 ? !x : x`, i.e. `-x - 1`);
//! 3. converted to f32 (rounding to nearest) and multiplied in f32 by
//!    `4.6566127342e-10` (≈ 2^-31, itself rounded to f32).
//!
//! This was checked against the Triton oracle (see `kernels/check_with_oracle.py`).

const ROUND_A: u32 = 0xD251_1F53;
const ROUND_B: u32 = 0xCD9E_8D57;
const KEY_A: u32 = 0x9E37_79B9;
const KEY_B: u32 = 0xBB67_AE85;

/// Philox-4x32 with `rounds` rounds: counter `c`, key `k`.
pub fn philox4x32(mut c: [u32; 4], mut k: [u32; 2], rounds: u32) -> [u32; 4] {
    for _ in 0..rounds {
        let p0 = ROUND_A as u64 * c[0] as u64;
        let p2 = ROUND_B as u64 * c[2] as u64;
        c = [(p2 >> 32) as u32 ^ c[1] ^ k[0], p2 as u32, (p0 >> 32) as u32 ^ c[3] ^ k[1], p0 as u32];
        k = [k[0].wrapping_add(KEY_A), k[1].wrapping_add(KEY_B)];
    }
    c
}

/// `tl.randint(seed, offset)` for a 32-bit offset: the first Philox output word.
pub fn randint(seed: i64, offset: i32) -> u32 {
    let s = seed as u64;
    philox4x32([offset as u32, 0, 0, 0], [s as u32, (s >> 32) as u32], 10)[0]
}

/// `tl.rand(seed, offset)` for a 32-bit offset: a float in [0, 1], computed exactly as Triton does.
pub fn rand(seed: i64, offset: i32) -> f32 {
    let x = randint(seed, offset) as i32;
    let folded = if x < 0 { !x } else { x };
    folded as f32 * 4.656_612_7e-10_f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn philox_known_answer() {
        // Random123's published known-answer test for Philox-4x32-10: zero counter and key.
        assert_eq!(philox4x32([0; 4], [0; 2], 10), [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]);
        // ... and all-ones counter and key.
        assert_eq!(philox4x32([u32::MAX; 4], [u32::MAX; 2], 10), [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]);
    }

    #[test]
    fn rand_is_in_unit_interval_and_uniform() {
        let v: Vec<f32> = (0..10000).map(|i| rand(1234, i)).collect();
        assert!(v.iter().all(|&x| (0.0..=1.0).contains(&x)));
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
        assert_ne!(rand(1, 0), rand(2, 0));
    }
}
