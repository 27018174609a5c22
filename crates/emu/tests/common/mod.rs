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
    let before = args.to_vec();
    let r = launch(&m, entry, &cfg, args)?;
    dump_case(&m, ptx, entry, &cfg, &before, args);
    Ok(r)
}

/// With `TRIDENT_EMU_DUMP=DIR`, every successful test launch is written to DIR (PTX,
/// launch shape, argument bytes before, buffer bytes after) so the same launches can
/// be replayed on a real GPU (`tests/data/replay_on_gpu.py`) and compared.
pub fn dump_case(m: &Module, ptx: &str, entry: &str, cfg: &LaunchConfig, before: &[KernelArg], after: &[KernelArg]) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let Ok(dir) = std::env::var("TRIDENT_EMU_DUMP") else { return };
    // Byte-array arguments hold emulator tensor maps (the emulator's encoding, fake addresses):
    // such launches do not replay on a GPU.
    if before.iter().any(|a| matches!(a, KernelArg::Bytes(_))) {
        return;
    }
    let test = std::thread::current().name().unwrap_or("case").replace("::", "_");
    let name = format!("{dir}/{test}_{}", N.fetch_add(1, Ordering::Relaxed));
    let params = m.entry_params(entry).unwrap_or_default();
    let mut meta = format!(
        "entry {entry}\ngrid {} {} {}\nblock {} {} {}\nshared {}\n",
        cfg.grid[0], cfg.grid[1], cfg.grid[2], cfg.block[0], cfg.block[1], cfg.block[2], cfg.dynamic_shared_bytes
    );
    for (i, (a, b)) in before.iter().zip(after).enumerate() {
        let size = params.get(i).map(|p| p.bytes).unwrap_or(8);
        match (a, b) {
            (KernelArg::Buffer(x), KernelArg::Buffer(y)) => {
                meta += &format!("buf {i} {}\n", x.data.len());
                let _ = std::fs::write(format!("{name}.in.{i}.bin"), &x.data);
                let _ = std::fs::write(format!("{name}.emu.{i}.bin"), &y.data);
            }
            (KernelArg::Scalar(v), _) => meta += &format!("scalar {v} {size}\n"),
            _ => meta += "null\n",
        }
    }
    let _ = std::fs::write(format!("{name}.ptx"), ptx);
    let _ = std::fs::write(format!("{name}.txt"), meta);
}

/// Assembles `ptx` with the ptxas in `TRIDENT_PTXAS` (if set) for sm_90a; returns whether it
/// accepted it (`None` without ptxas).
pub fn ptxas_accepts(ptx: &str) -> Option<bool> {
    let tool = std::env::var("TRIDENT_PTXAS").ok()?;
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let path = std::env::temp_dir().join(format!(
        "emu_ptxas_{}_{}.ptx",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&path, ptx).ok()?;
    let out = std::process::Command::new(tool).args(["-arch=sm_90a", "-o", "/dev/null"]).arg(&path).output().ok()?;
    let _ = std::fs::remove_file(&path);
    if !out.status.success() {
        eprintln!("ptxas: {}", String::from_utf8_lossy(&out.stderr));
    }
    Some(out.status.success())
}

/// Asserts that ptxas (when `TRIDENT_PTXAS` names it) accepts the test program.
pub fn valid(ptx: &str) {
    if let Some(ok) = ptxas_accepts(ptx) {
        assert!(ok, "ptxas rejects the test program:\n{ptx}");
    }
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
