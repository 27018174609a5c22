//! The `sass-emu` backend: a kernel's PTX through `ptxas`, and the SASS it made run on the
//! SASS emulator (trident-sass-emu) — the schedule prong's CPU check of machine code.
//!
//! The cubin and its `nvdisasm` listing are the ones the compile made for the SASS-emulator
//! target (`CodeTarget::SassEmu`, kept in the cache entry: a warm cache runs neither tool);
//! otherwise `ptxas`/`nvdisasm` run here once per loaded kernel ([`GpuCode::sass_program`]).
//! Configs are tuned on the PTX emulator's model.

use std::time::Duration;

use trident_sass::Cubin;

use crate::args::ArgValue;
use crate::compiled::GpuCode;
use crate::error::RunError;
use crate::gpu::GpuRun;

/// `code`'s cubin: the compile's, else assembled here.
pub(crate) fn cubin_of(code: &GpuCode) -> Result<Vec<u8>, RunError> {
    match &code.cubin {
        Some(c) => Ok(c.clone()),
        None => Ok(trident_gpu::tools::ptxas(&code.ptx.ptx, code.ptx.target.arch())
            .map_err(|e| RunError::msg(format!("error: running SASS needs ptxas: {e}")))?
            .cubin),
    }
}

/// The SASS emulator's launch of `ptx` on `grid`.
pub(crate) fn launch_config(ptx: &trident_gpu::PtxKernel, grid: [u32; 3]) -> trident_sass_emu::LaunchConfig {
    trident_sass_emu::LaunchConfig {
        grid,
        block: [ptx.num_threads, 1, 1],
        dynamic_shared_bytes: ptx.shared_bytes,
        // An unknown name is refused where the launch reads it (`run_emu_module`'s twin below).
        machine: crate::env::emu_machine().ok().flatten(),
        ..Default::default()
    }
}

/// The SASS emulator's kernel for `code`: its cubin (assembled here if need be) decoded.
pub fn program(code: &GpuCode) -> Result<trident_sass_emu::Program, RunError> {
    let cubin = cubin_of(code)?;
    match &code.sass_json {
        // The listing the compile kept (a cache hit runs no tool).
        Some(json) if code.cubin.is_some() => program_of_listing(&cubin, json, &code.ptx.entry),
        _ => program_of_cubin(&cubin, &code.ptx.entry),
    }
}

/// Kernel `entry` of the cubin `bytes` whose `nvdisasm -json` listing is `json`.
fn program_of_listing(bytes: &[u8], json: &str, entry: &str) -> Result<trident_sass_emu::Program, RunError> {
    let cubin = Cubin::parse(bytes).map_err(|e| RunError::msg(format!("error: the cubin: {e}")))?;
    let texts = crate::sass::kernel_texts_of(json, &cubin)?;
    program_in(&cubin, &texts, entry)
}

/// Kernel `entry` of `cubin`, given every kernel's text, decoded for the SASS emulator.
fn program_in(
    cubin: &Cubin,
    texts: &[Vec<trident_sass::disasm::Text>],
    entry: &str,
) -> Result<trident_sass_emu::Program, RunError> {
    let k = cubin
        .kernels
        .iter()
        .position(|k| k.name == entry)
        .ok_or_else(|| RunError::argument(format!("no kernel `{entry}` in the cubin")))?;
    trident_sass_emu::Program::new(cubin, entry, &texts[k]).map_err(|e| RunError::msg(format!("error: sass-emu: {e}")))
}

/// Kernel `entry` of the cubin `bytes`, decoded for the SASS emulator.
pub fn program_of_cubin(bytes: &[u8], entry: &str) -> Result<trident_sass_emu::Program, RunError> {
    let cubin = Cubin::parse(bytes).map_err(|e| RunError::msg(format!("error: the cubin: {e}")))?;
    let texts = crate::sass::kernel_texts(bytes, &cubin)?;
    program_in(&cubin, &texts, entry)
}

/// Runs `code` on the SASS emulator with `args` (IR parameter order), `reps` times.
pub fn run_sass_emu_code(code: &GpuCode, args: &[ArgValue], grid: [u32; 3], reps: usize) -> Result<GpuRun, RunError> {
    let profile_bytes = crate::profile::buffer_bytes(code, grid)?;
    if code.profile.is_some() && profile_bytes.is_none() {
        return Err(RunError::msg(
            "error: zero-cost markers are the PTX emulator's (--backend emu); on sass-emu a profile records into a buffer",
        ));
    }
    let p = code.sass_program()?;
    let ptx = &code.ptx;
    let mut samples = vec![];
    let mut last = None;
    let clock_ghz = trident_sass_emu::timing::model(p.kernel.sm).clock_ghz;
    let mut estimate = None;
    for _ in 0..reps.max(1) {
        let mut kargs = crate::gpu::emulator_args(ptx, args);
        if let Some(n) = profile_bytes {
            kargs.push(trident_emu::KernelArg::Buffer(trident_core::HostTensor::zeros(trident_core::DType::U8, &[n])));
        }
        kargs.extend(crate::tma::emulator_maps(ptx, args)?);
        // Parameters the PTX declares past the arguments (Triton's scratch pointers): null.
        while kargs.len() < p.kernel.params.len() {
            kargs.push(trident_emu::KernelArg::Null);
        }
        let cfg = launch_config(ptx, grid);
        let report = trident_sass_emu::launch(&p, &cfg, &mut kargs).map_err(|e| {
            let place = match (e.cta, e.thread) {
                (Some(c), Some(t)) => {
                    format!(", CTA ({},{},{}), thread ({},{},{})", c[0], c[1], c[2], t[0], t[1], t[2])
                }
                _ => String::new(),
            };
            RunError::msg(format!("error: sass-emu: {}{place}", e.message))
        })?;
        // The estimate in cycles, at the clock of the machine the model imitates (the PTX
        // emulator's: H100 SXM 1.83 GHz for sm_90, A100 SXM 1.41 GHz for sm_80).
        samples.push(Duration::from_secs_f64(report.cycles as f64 / (clock_ghz * 1e9)));
        estimate = Some(describe(&report, clock_ghz, trident_sass_emu::timing::model(p.kernel.sm).sms));
        last = Some(kargs);
    }
    let kargs = last.ok_or_else(|| RunError::msg("internal: no sass-emu run"))?;
    // The profile buffer is the parameter right after the kernel's own.
    let profile = match (profile_bytes, kargs.get(ptx.params.len())) {
        (Some(_), Some(trident_emu::KernelArg::Buffer(t))) => Some(crate::profile::Collected::Buffer(t.data.clone())),
        (Some(_), _) => return Err(RunError::msg("internal: the profile buffer did not come back")),
        (None, _) => None,
    };
    let tensors = crate::gpu::emulator_tensors(kargs.into_iter().take(ptx.params.len()).collect());
    let kernel_time = samples.last().copied().unwrap_or_default();
    Ok(GpuRun {
        tensors,
        printed: String::new(),
        kernel_time,
        samples,
        profile,
        clock_ghz: Some(clock_ghz),
        sanitize: None,
        estimate,
    })
}

/// How the estimate came about, in a line: its cycles and time, what bounds it, the waves
/// and the traffic (`trident_sass_emu::grid`).
fn describe(r: &trident_sass_emu::Report, clock_ghz: f64, sms: u32) -> String {
    let mb = |b: u64| b as f64 / 1e6;
    let plural = |n: u64| if n == 1 { "" } else { "s" };
    let bound = match r.bound {
        "SMs" => "the SMs",
        "L2" => "L2 bandwidth",
        _ => "DRAM bandwidth",
    };
    format!(
        "estimate: {} cycles, {:.2} µs at {clock_ghz} GHz, bound by {bound}; {} wave{} of up to {} CTA{} per SM on \
         {sms} SMs, the slowest CTA {} cycles alone; {:.1} MB moved, {:.1} MB from L2, {:.1} MB distinct",
        r.cycles,
        r.cycles as f64 / (clock_ghz * 1e3),
        r.waves,
        plural(r.waves),
        r.ctas_per_sm,
        plural(r.ctas_per_sm as u64),
        r.cta_cycles,
        mb(r.global_bytes),
        mb(r.l2_bytes),
        mb(r.dram_bytes)
    )
}
