//! Helpers shared by the integration tests: a small deterministic RNG and tensor builders.
#![allow(dead_code)]

use trident_core::{DType, HostTensor};
use trident_emu::{launch, EmuError, KernelArg, LaunchConfig, LaunchReport, Module};

/// SplitMix64: deterministic, seedable, no dependencies.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

pub fn random(rng: &mut Rng, dtype: DType, shape: &[usize], scale: f64) -> HostTensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|_| rng.uniform() * scale).collect();
    HostTensor::from_f64(dtype, shape, &v)
}

/// A tensor filled with NaN (floats) or 0x5a bytes, so unwritten outputs show.
pub fn poisoned(dtype: DType, shape: &[usize]) -> HostTensor {
    let mut t = HostTensor::zeros(dtype, shape);
    if dtype.is_float() {
        for i in 0..t.numel() {
            t.set_f64(i, f64::NAN);
        }
    } else {
        t.data.iter_mut().for_each(|b| *b = 0x5a);
    }
    t
}

pub fn run(
    ptx: &str,
    entry: &str,
    grid: [u32; 3],
    block: [u32; 3],
    args: &mut [KernelArg],
) -> Result<LaunchReport, EmuError> {
    let m = Module::parse(ptx)?;
    let cfg = LaunchConfig { grid, block, ..LaunchConfig::default() };
    launch(&m, entry, &cfg, args)
}

pub fn buf(args: &[KernelArg], i: usize) -> &HostTensor {
    match &args[i] {
        KernelArg::Buffer(t) => t,
        _ => panic!("argument {i} is not a buffer"),
    }
}

pub fn f32_bits(x: f32) -> KernelArg {
    KernelArg::Scalar(x.to_bits() as u64)
}
