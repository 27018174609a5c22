//! Deterministic generation of `rand` / `randn` tensors.
//!
//! The exact stream is part of the `trident run` contract: the same `--seed`
//! and argument name give the same tensor on every machine, forever. That is
//! why this module hand-writes a tiny generator instead of depending on the
//! `rand` family: their value streams are allowed to change between
//! releases, and a stream defined in twenty lines can be re-implemented in a
//! few lines of Python by anyone who wants to reproduce our inputs.
//!
//! # The algorithm
//!
//! * Generator: SplitMix64 (Steele, Lea & Flood 2014): the state advances by
//!   `0x9E3779B97F4A7C15` and each output is the state passed through the
//!   finaliser [`mix64`]. It passes BigCrush, which is far more than test data
//!   needs.
//! * Streams: each tensor argument gets its own stream, so adding or
//!   reordering arguments on the command line changes nothing else. The start
//!   state is `mix64(seed) ^ fnv1a64(name)` where `fnv1a64` is 64-bit FNV-1a
//!   over the argument name's UTF-8 bytes.
//! * `rand`, float dtypes: `u = (next >> 11) * 2^-53`, uniform in `[0, 1)`,
//!   then rounded to nearest in the dtype; a value that rounds up to `1.0`
//!   (possible for f16/bf16/fp8) is replaced by the largest value of the dtype
//!   below 1, so `[0, 1)` holds in every dtype.
//! * `randn`, float dtypes: Box–Muller on pairs of uniforms,
//!   `u1 = ((next >> 11) + 1) * 2^-53` (in `(0, 1]`, so `ln` is finite),
//!   `u2 = (next >> 11) * 2^-53`, giving `r cos θ` then `r sin θ` with
//!   `r = sqrt(-2 ln u1)`, `θ = 2π u2`; rounded to nearest in the dtype. (The
//!   last bit of `ln`/`cos` may differ between libms; after rounding to the
//!   tensor's dtype that almost never shows.)
//! * Integer dtypes follow the oracle (numpy) conventions: `rand` draws
//!   integers uniformly from `0..100` (`(next * 100) >> 64`, Lemire's
//!   multiply), so it fits every integer dtype including `i8`/`u8`; `randn`
//!   draws the normal above and rounds it toward zero (`astype`), negative
//!   values wrapping for unsigned dtypes (two's complement, like numpy on
//!   common platforms). Bool is `value != 0` in both cases, so `rand:bool`
//!   is true with probability 0.99, exactly as the oracle's.

use trident_core::tensor::encode_f64;
use trident_core::{DType, HostTensor};

/// SplitMix64's increment (the golden-ratio constant).
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output finaliser: a bijective mix of 64 bits.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// 64-bit FNV-1a hash of `bytes`: names an argument's stream.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

/// A SplitMix64 generator. Small, fast and fully specified (see the module docs).
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from the raw state `state`.
    pub fn new(state: u64) -> SplitMix64 {
        SplitMix64 { state }
    }

    /// The stream of argument `name` under the run's `seed`.
    pub fn for_argument(seed: u64, name: &str) -> SplitMix64 {
        SplitMix64::new(mix64(seed) ^ fnv1a64(name.as_bytes()))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        mix64(self.state)
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `(0, 1]`: safe to take the logarithm of.
    fn next_f64_nonzero(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in `0..n` (`n > 0`), by Lemire's multiply-shift (bias below 2^-57 for small n).
    pub fn next_below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// A pair of independent standard normal values (Box–Muller).
    pub fn next_normal_pair(&mut self) -> (f64, f64) {
        let u1 = self.next_f64_nonzero();
        let u2 = self.next_f64();
        let r = (-2.0 * u1.ln()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u2;
        (r * theta.cos(), r * theta.sin())
    }
}

/// The distribution of a generated tensor.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// Floats uniform in `[0, 1)`; integers uniform in `0..100`.
    Uniform,
    /// Floats standard normal; integers the normal rounded toward zero.
    Normal,
}

/// Fills a new tensor of `dtype` and `shape` from `rng` (see the module docs for the exact rules).
pub fn generate(rng: &mut SplitMix64, dist: Distribution, dtype: DType, shape: &[usize]) -> HostTensor {
    let mut t = HostTensor::zeros(dtype, shape);
    let n = t.numel();
    let w = dtype.size_bytes();
    let mut spare: Option<f64> = None;
    let mut normal = |rng: &mut SplitMix64| match spare.take() {
        Some(z) => z,
        None => {
            let (a, b) = rng.next_normal_pair();
            spare = Some(b);
            a
        }
    };
    for i in 0..n {
        let out = &mut t.data[i * w..(i + 1) * w];
        match (dist, dtype.is_float()) {
            (Distribution::Uniform, true) => {
                encode_f64(dtype, rng.next_f64(), out);
                if trident_core::tensor::decode_f64(dtype, out) >= 1.0 {
                    encode_f64(dtype, below_one(dtype), out);
                }
            }
            (Distribution::Normal, true) => encode_f64(dtype, normal(rng), out),
            (Distribution::Uniform, false) => encode_int(dtype, rng.next_below(100) as i64, out),
            (Distribution::Normal, false) => encode_int(dtype, normal(rng).trunc() as i64, out),
        }
    }
    t
}

/// The largest value of float type `dtype` below 1.0: `1 - 2^-(mantissa bits + 1)`.
fn below_one(dtype: DType) -> f64 {
    let m = dtype.mantissa_bits().unwrap_or(52);
    1.0 - (-((m + 1) as f64)).exp2()
}

/// Stores integer `v` in `dtype`, wrapping modulo 2^bits (two's complement); bool is `v != 0`.
fn encode_int(dtype: DType, v: i64, out: &mut [u8]) {
    if dtype == DType::I1 {
        out[0] = (v != 0) as u8;
    } else {
        let bytes = v.to_le_bytes();
        out.copy_from_slice(&bytes[..out.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_published_vector() {
        // SplitMix64 seeded with 1234567: the first outputs from the reference implementation.
        let mut g = SplitMix64::new(1234567);
        assert_eq!(g.next_u64(), 6457827717110365317);
        assert_eq!(g.next_u64(), 3203168211198807973);
        assert_eq!(g.next_u64(), 9817491932198370423);
    }

    #[test]
    fn fnv_known_values() {
        assert_eq!(fnv1a64(b""), 0xCBF2_9CE4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xAF63_DC4C_8601_EC8C);
    }

    #[test]
    fn streams_differ_by_name_and_seed_and_repeat() {
        let a = generate(&mut SplitMix64::for_argument(0, "x"), Distribution::Normal, DType::F32, &[64]);
        let b = generate(&mut SplitMix64::for_argument(0, "y"), Distribution::Normal, DType::F32, &[64]);
        let c = generate(&mut SplitMix64::for_argument(1, "x"), Distribution::Normal, DType::F32, &[64]);
        let a2 = generate(&mut SplitMix64::for_argument(0, "x"), Distribution::Normal, DType::F32, &[64]);
        assert_ne!(a.data, b.data);
        assert_ne!(a.data, c.data);
        assert_eq!(a.data, a2.data);
    }

    #[test]
    fn uniform_floats_stay_below_one_in_every_dtype() {
        for dt in [DType::F16, DType::BF16, DType::F32, DType::F64, DType::F8E4M3, DType::F8E5M2] {
            let t = generate(&mut SplitMix64::new(7), Distribution::Uniform, dt, &[4000]);
            let v = t.to_f64_vec();
            assert!(v.iter().all(|&x| (0.0..1.0).contains(&x)), "{dt}");
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            assert!((mean - 0.5).abs() < 0.05, "{dt}: mean {mean}");
        }
    }

    #[test]
    fn normal_has_unit_moments() {
        let t = generate(&mut SplitMix64::new(3), Distribution::Normal, DType::F64, &[20000]);
        let v = t.to_f64_vec();
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        assert!(mean.abs() < 0.03, "mean {mean}");
        assert!((var - 1.0).abs() < 0.05, "var {var}");
    }

    #[test]
    fn integer_conventions() {
        let t = generate(&mut SplitMix64::new(5), Distribution::Uniform, DType::I8, &[1000]);
        let v = t.to_f64_vec();
        assert!(v.iter().all(|&x| (0.0..100.0).contains(&x) && x.fract() == 0.0));
        assert!(v.iter().any(|&x| x >= 90.0) && v.iter().any(|&x| x < 10.0));

        let t = generate(&mut SplitMix64::new(5), Distribution::Normal, DType::I32, &[1000]);
        let v = t.to_f64_vec();
        assert!(v.iter().all(|&x| x.abs() < 7.0));
        assert!(v.iter().any(|&x| x < 0.0) && v.iter().any(|&x| x > 0.0));

        // Unsigned randn wraps negative values, like numpy's astype.
        let t = generate(&mut SplitMix64::new(5), Distribution::Normal, DType::U8, &[1000]);
        assert!(t.data.iter().any(|&b| b >= 250));

        let t = generate(&mut SplitMix64::new(5), Distribution::Uniform, DType::I1, &[1000]);
        assert!(t.data.iter().all(|&b| b <= 1));
        let trues = t.data.iter().filter(|&&b| b == 1).count();
        assert!(trues > 950, "{trues}");
    }
}
