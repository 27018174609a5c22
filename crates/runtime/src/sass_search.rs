//! `trident sass search`: the setup of a schedule search — a kernel from a Python file
//! compiled for the given arguments and target, its cubin, and the SASS emulator's launch
//! exactly as `--backend sass-emu` would make it — handed to trident-sass-search, which
//! does the search (re-exported as [`search`] for the CLI); with `--backend cuda`, the
//! search's reward is [`CudaTimer`]: the candidate cubin timed on device 0.

use std::time::Duration;

use trident_core::HostTensor;
use trident_gpu::tools::{find, Tool};
use trident_gpu::Target;

pub use trident_sass_search as search;

use crate::args::{ArgValue, Backend, RunCommand};
use crate::compiled::{CodeTarget, GpuCode};
use crate::error::RunError;
use crate::gpu::CudaRunner;
use crate::launch::{bind, prepare_bound, LaunchOptions};
use crate::program::KernelProgram;

const TOOL_HINT: &str = "(run scripts/install-tools, or set TRIDENT_PTXAS / TRIDENT_NVDISASM)";

/// What [`setup`] made: the search's problem, and the launch's shape for the summary.
#[derive(Clone)]
pub struct Setup {
    /// The cubin, the kernel's name and its launch on the SASS emulator.
    pub problem: search::Problem,
    /// The target compiled for (`sm_80`, `sm_90a`).
    pub arch: String,
    /// Programs along each axis.
    pub grid: [u32; 3],
    /// Threads per CTA.
    pub threads: u32,
    /// `--backend cuda`: the device's name (the search is timed there).
    pub device: Option<String>,
    /// The compiled kernel and the arguments' values (for a GPU timer).
    code: GpuCode,
    values: Vec<ArgValue>,
}

impl std::fmt::Debug for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setup")
            .field("problem", &self.problem)
            .field("arch", &self.arch)
            .field("grid", &self.grid)
            .field("threads", &self.threads)
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

/// Compiles `cmd`'s kernel (`trident run`'s command line: file, kernel, arguments, grid,
/// warps, stages) for `arch` and sets up its launch on the SASS emulator. The config is the
/// first autotune config (nothing is timed); the arguments are materialized with the
/// command's seed.
///
/// `--backend cuda` (`cmd.backend`): device 0 is opened first (no driver or no device is an
/// error, never a panic), and the target is the device's (`sm_80` below compute capability
/// 9, `sm_90a` on 9.0) unless `arch` names it; a target the device cannot run is an error.
/// The SASS emulator still runs the original and checks every kept schedule.
pub fn setup(cmd: &RunCommand, arch: Option<&str>) -> Result<Setup, RunError> {
    let device = match cmd.backend {
        Backend::SassEmu | Backend::Auto => None,
        Backend::Cuda => {
            let dev = trident_cuda::Device::open(0).map_err(|e| {
                RunError::other(format!(
                    "--backend cuda: {e}\n(a search on measured GPU time needs a CUDA device; --backend sass-emu \
                     searches on the SASS emulator's estimate)"
                ))
            })?;
            Some(dev.info().clone())
        }
        other => {
            return Err(RunError::argument(format!(
                "--backend {other:?}: a schedule search runs on the SASS emulator (--backend sass-emu) or a CUDA \
                 device (--backend cuda)"
            )))
        }
    };
    let arch = match (arch, &device) {
        (Some(a), _) => a.to_string(),
        (None, Some(d)) => crate::gpu::target_for(d.compute_capability).arch().to_string(),
        (None, None) => "sm_80".to_string(),
    };
    let arch = arch.as_str();
    let target = Target::parse(arch)
        .ok_or_else(|| RunError::argument(format!("--target {arch}: not a target (sm_80, sm_90 or sm_90a)")))?;
    if let Some(d) = &device {
        let (major, _) = d.compute_capability;
        let runs = match target {
            Target::Sm80 => major == 8,
            _ => d.compute_capability == (9, 0),
        };
        if !runs {
            return Err(RunError::argument(format!(
                "--target {arch}: device 0 ({}, {}) cannot run it",
                d.name,
                d.sm_name()
            )));
        }
    }
    let prog = KernelProgram::load(&cmd.file)?;
    let kernel = prog.kernel(cmd.kernel.as_deref())?;
    let args = cmd.materialize().map_err(|e| RunError::argument(e.to_string()))?;
    let opts = LaunchOptions { backend: Backend::SassEmu, ..LaunchOptions::from_command(cmd) };
    let bound = bind(kernel, &args)?;
    let prepared = prepare_bound(&prog, kernel, &args, &bound, &opts, CodeTarget::Emu(target), false)?;
    let code = prepared
        .gpu
        .as_ref()
        .ok_or_else(|| RunError::msg(format!("internal: kernel `{}` has no GPU code", prepared.kernel)))?;
    let values = crate::run::runtime_values(&prepared, &args)?;
    let grid = crate::run::grid_of(&prepared, &args, &opts)?;
    let cubin = crate::sass_run::cubin_of(code).map_err(|e| RunError::other(format!("{} {TOOL_HINT}", e.text)))?;
    let problem = problem(code, cubin, &values, grid)?;
    Ok(Setup {
        problem,
        arch: target.arch().to_string(),
        grid,
        threads: code.ptx.num_threads,
        device: device.map(|d| d.name),
        code: code.clone(),
        values,
    })
}

/// The search's problem: `cubin` (of `code`) launched on the SASS emulator with `values`,
/// and the tensor maps a TMA kernel takes as hidden parameters (built as the `sass-emu`
/// backend builds them).
pub(crate) fn problem(
    code: &crate::compiled::GpuCode,
    cubin: Vec<u8>,
    values: &[crate::args::ArgValue],
    grid: [u32; 3],
) -> Result<search::Problem, RunError> {
    let mut args = crate::gpu::emulator_args(&code.ptx, values);
    args.extend(crate::tma::emulator_maps(&code.ptx, values)?);
    Ok(search::Problem {
        cubin,
        kernel: code.ptx.entry.clone(),
        args,
        config: crate::sass_run::launch_config(&code.ptx, grid),
    })
}

/// `nvdisasm`, found as the GPU crate finds it, as the search's disassembler.
pub fn disassembler() -> Result<search::Disassembler, RunError> {
    let tool = find(Tool::Nvdisasm).map_err(|e| RunError::other(format!("error: {e} {TOOL_HINT}")))?;
    Ok(search::nvdisasm(tool))
}

fn ns(samples: &[Duration]) -> Vec<f64> {
    samples.iter().map(|d| d.as_secs_f64() * 1e9).collect()
}

/// The first buffer in which `got` differs from `want` bit for bit, skipping the buffers
/// marked `skip`.
fn first_gpu_difference(want: &[Option<HostTensor>], got: &[Option<HostTensor>], skip: &[bool]) -> Option<String> {
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        if let (Some(w), Some(g)) = (w, g) {
            if !skip.get(i).copied().unwrap_or(false) && w.data != g.data {
                let size = w.dtype.size_bytes().max(1);
                let at = w.data.iter().zip(&g.data).position(|(x, y)| x != y).unwrap_or(0) / size;
                return Some(format!("argument {i} element {at} differs from the original's on the GPU"));
            }
        }
    }
    None
}

/// A search's reward on device 0: each candidate cubin loaded as it is (never the driver's
/// JIT), launched with the search's arguments and grid, `warmup` untimed launches then
/// `repeats` launches each timed with CUDA events, [`crate::gpu::L2_FLUSH_BYTES`]
/// overwritten before each (outside the timed interval); the score is the samples'
/// median in nanoseconds, with their spread (trident-sass-search's `Measurement`), and
/// the search estimates the noise from them. Timing and launching are the runtime's own
/// ([`CudaRunner::time`], as `trident bench --flush-l2` does), once per candidate module.
///
/// Its check (every schedule about to be kept, after the SASS emulator's): the candidate run
/// once on the GPU from freshly uploaded arguments, every buffer compared bit for bit with
/// the original's run — except a buffer in which two runs of the original already differ
/// (float atomics, say), which [`CudaTimer::unstable`] lists.
pub struct CudaTimer {
    runner: CudaRunner,
    entry: String,
    warmup: usize,
    repeats: usize,
    device: String,
    want: Vec<Option<HostTensor>>,
    unstable: Vec<bool>,
    /// Set when a candidate faulted and took the device context with it (the search stops).
    lost: Option<String>,
}

impl CudaTimer {
    /// Warm-up launches before each candidate's timed ones.
    pub const WARMUP: usize = 5;
    /// Timed launches per measurement by default.
    pub const REPEATS: usize = 30;

    /// Loads the setup's original cubin on device 0 (exactly it), uploads the arguments and
    /// runs the original twice for the check's reference. `repeats` ≥ 3 timed launches per
    /// measurement.
    pub fn new(setup: &Setup, repeats: usize) -> Result<CudaTimer, RunError> {
        if repeats < 3 {
            return Err(RunError::argument(format!("--repeats {repeats}: at least 3 (a median and a spread)")));
        }
        let runner = CudaRunner::for_cubin(&setup.code, &setup.problem.cubin, &setup.values, setup.grid)?;
        if let Some(why) = runner.shortage() {
            return Err(RunError::other(format!("cuda: the kernel cannot launch: {why}")));
        }
        let device = runner.device().info().name.clone();
        let mut t = CudaTimer {
            runner,
            entry: setup.code.ptx.entry.clone(),
            warmup: CudaTimer::WARMUP,
            repeats,
            device,
            want: vec![],
            unstable: vec![],
            lost: None,
        };
        let first = t.outputs(&setup.problem.cubin)?;
        let second = t.outputs(&setup.problem.cubin)?;
        t.unstable = first.iter().zip(&second).map(|(a, b)| a != b).collect();
        t.want = first;
        Ok(t)
    }

    /// The arguments (by index) whose buffers two runs of the original left different: not
    /// compared bit for bit on the GPU (the SASS emulator's check still compares them).
    pub fn unstable(&self) -> Vec<usize> {
        self.unstable.iter().enumerate().filter(|(_, u)| **u).map(|(i, _)| i).collect()
    }

    /// The buffers after one launch of `cubin` from freshly uploaded arguments.
    fn outputs(&self, cubin: &[u8]) -> Result<Vec<Option<HostTensor>>, RunError> {
        let kernel = crate::gpu::cuda_load_cubin(self.runner.device(), cubin, &self.entry)?;
        self.runner.restore_all()?;
        self.runner.time_kernel(&kernel, 0, 1, false)?;
        self.runner.download()
    }
}

impl search::Reward for CudaTimer {
    fn describe(&self) -> String {
        format!(
            "measured time on {} (CUDA events, L2 flushed, median of {} launches after {} warm-up)",
            self.device, self.repeats, self.warmup
        )
    }

    fn unit(&self) -> &'static str {
        "ns"
    }

    fn exact(&self) -> bool {
        false
    }

    fn score(&mut self, c: &search::Candidate) -> Result<search::Measurement, String> {
        if let Some(why) = &self.lost {
            return Err(why.clone());
        }
        let bytes = c.bytes()?;
        let samples = crate::gpu::cuda_load_cubin(self.runner.device(), &bytes, &self.entry)
            .and_then(|kernel| self.runner.time_kernel(&kernel, self.warmup, self.repeats, true))
            .map_err(|e| self.fault(&bytes, e.text))?;
        search::Measurement::of_samples(&ns(&samples))
    }

    fn check(&mut self, c: &search::Candidate) -> Result<(), String> {
        if let Some(why) = &self.lost {
            return Err(why.clone());
        }
        let bytes = c.bytes()?;
        let got = self.outputs(&bytes).map_err(|e| self.fault(&bytes, e.text))?;
        match first_gpu_difference(&self.want, &got, &self.unstable) {
            Some(d) => Err(d),
            None => Ok(()),
        }
    }

    fn lost(&self) -> Option<String> {
        self.lost.clone()
    }
}

impl CudaTimer {
    /// `error`, from running candidate `cubin`; when it is one of CUDA's sticky errors the
    /// context is gone (every later launch would fail the same way), so the timer is marked
    /// lost and the cubin kept for a post-mortem (in `TRIDENT_SEARCH_FAILED`'s directory, else
    /// the temporary directory).
    fn fault(&mut self, cubin: &[u8], error: String) -> String {
        if !trident_cuda::names_sticky_error(&error) {
            return error;
        }
        let dir =
            std::env::var_os("TRIDENT_SEARCH_FAILED").map(std::path::PathBuf::from).unwrap_or_else(std::env::temp_dir);
        let path = dir.join(format!("{}-fault-{}.cubin", self.entry, std::process::id()));
        let kept = match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, cubin)) {
            Ok(()) => format!("the schedule is in {}", path.display()),
            Err(e) => format!("the schedule could not be kept: {e}"),
        };
        let why = format!("a candidate faulted on the GPU and the device context is lost ({kept}): {error}");
        self.lost = Some(why.clone());
        why
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trident_core::DType;

    #[test]
    fn gpu_difference_skips_unstable_buffers_and_scalars() {
        let t = |v: &[f64]| Some(HostTensor::from_f64(DType::F32, &[v.len()], v));
        let want = vec![t(&[1.0, 2.0]), None, t(&[3.0])];
        assert_eq!(first_gpu_difference(&want, &want.clone(), &[false; 3]), None);
        let got = vec![t(&[1.0, 2.5]), None, t(&[4.0])];
        let d = first_gpu_difference(&want, &got, &[false; 3]).unwrap();
        assert!(d.contains("argument 0 element 1"), "{d}");
        let d = first_gpu_difference(&want, &got, &[true, false, false]).unwrap();
        assert!(d.contains("argument 2 element 0"), "{d}");
        assert_eq!(first_gpu_difference(&want, &got, &[true, false, true]), None);
    }

    #[test]
    fn nanoseconds_of_samples() {
        assert_eq!(ns(&[Duration::from_micros(3), Duration::from_nanos(1500)]), vec![3000.0, 1500.0]);
    }
}
