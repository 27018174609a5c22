//! Shared by the integration tests: the hand-written kernels, a seeded random source, and
//! opening the GPU.
#![allow(dead_code)]

use trident_cuda::{CudaError, Device};

pub const VADD_PTX: &str = include_str!("../kernels/vadd.ptx");
pub const VADD_SM90_CUBIN: &[u8] = include_bytes!("../kernels/vadd.sm_90.cubin");
pub const PARAMS_PTX: &str = include_str!("../kernels/params.ptx");
pub const SMEM_PTX: &str = include_str!("../kernels/smem.ptx");
pub const REQNTID_PTX: &str = include_str!("../kernels/reqntid.ptx");
pub const FAULT_PTX: &str = include_str!("../kernels/fault.ptx");

/// Device 0; GPU tests are `#[ignore]`d, so reaching here without one is a real failure.
pub fn gpu() -> Device {
    match Device::open(0) {
        Ok(d) => d,
        Err(e) => panic!("this test needs an NVIDIA GPU: {e}"),
    }
}

/// A small xorshift generator, seeded fresh for each test run (the seed is printed so a
/// failure can be replayed with TRIDENT_TEST_SEED).
pub struct Rng(u64);

impl Rng {
    pub fn fresh(test: &str) -> Rng {
        let seed = std::env::var("TRIDENT_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
        });
        eprintln!("{test}: seed {seed}");
        Rng(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform in [-100, 100), never exactly zero.
    pub fn f32(&mut self) -> f32 {
        let x = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 200.0 - 100.0;
        if x == 0.0 {
            0.5
        } else {
            x
        }
    }
}

pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn f32_from_bytes(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// The error, or a panic naming what unexpectedly succeeded.
pub fn expect_err<T>(r: Result<T, CudaError>, what: &str) -> CudaError {
    match r {
        Ok(_) => panic!("{what} unexpectedly succeeded"),
        Err(e) => e,
    }
}
