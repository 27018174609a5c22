//! Running a launch: the grid of CTAs (in parallel with rayon), each CTA's warps
//! (see `cta`), and per-class instruction semantics (`int`, `float`, `convert`,
//! `compare`, `memory_ops`, `collective`, `tensor`, `printf`).

mod collective;
mod compare;
mod convert;
mod cta;
mod float;
mod grid;
mod int;
mod mbarrier;
mod memory_ops;
mod printf;
mod race;
mod tensor;
mod tma;
mod validate;
mod warp;
pub(crate) mod wgmma;

use trident_core::HostTensor;

use crate::error::EmuError;
use crate::machine::MachineModel;
use crate::memory::{buffer_base, GlobalMem, MAX_BUFFERS, MODULE_REGION0};
use crate::parse::Module;
use crate::timing::sm::Costs;
pub(crate) use validate::validate;

/// One kernel argument.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelArg {
    /// A buffer in global memory; the kernel receives a pointer to its first element.
    Buffer(HostTensor),
    /// A null pointer.
    Null,
    /// A scalar, as raw bits (the low bytes are used, as many as the parameter is wide).
    Scalar(u64),
    /// The bytes of a byte-array parameter, exactly as long as it (e.g. a tensor map,
    /// `.param .align 64 .b8 desc[128]`, from `TensorMap::encode`).
    Bytes(Vec<u8>),
}

/// How to launch.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory (`.extern .shared` arrays). Triton kernels need
    /// the `shared` value from their compile metadata here.
    pub dynamic_shared_bytes: u32,
    /// Report shared-memory data races between barriers as errors.
    pub check_races: bool,
    /// Run CTAs on all cores (rayon). `false` runs them one after another, in order,
    /// which makes global atomics' order (and float atomic sums) deterministic.
    pub parallel: bool,
    /// Also print device `printf` output to stdout (it is always collected in the report).
    pub print_stdout: bool,
    /// A CTA stops with an error after this many warp-instructions (guards against hangs).
    pub max_warp_instructions_per_cta: u64,
    /// The GPU the timing model imitates (default: H100 SXM).
    pub machine: MachineModel,
    /// Registers per thread as `ptxas` allocates them, which limit how many CTAs fit on
    /// an SM; 0 (the default) means unknown, and then registers do not limit residency.
    pub registers_per_thread: u32,
    /// **Timing only.** Run just the first N CTAs (in launch order) and extrapolate the
    /// duration to the whole grid: the grid's CTAs, CTA `i` taking as long as sampled
    /// CTA `i mod N`, list-scheduled onto the SMs' slots (see `timing::extrapolate`).
    /// Sample at least one full wave (SMs × CTAs per SM) so the sampled CTAs saw a full
    /// machine. 0 (the default) runs all.
    /// Outputs of the CTAs not run are not computed: never use it to check results.
    /// The report says so (`LaunchReport::ctas_run`).
    pub timing_sample_ctas: u64,
    /// Stop the launch (an error, buffers untouched) if it is still running at this
    /// instant, checked at every epoch: huge grids end with a message.
    pub deadline: Option<std::time::Instant>,
}

impl Default for LaunchConfig {
    fn default() -> Self {
        LaunchConfig {
            grid: [1, 1, 1],
            block: [32, 1, 1],
            dynamic_shared_bytes: 0,
            check_races: true,
            parallel: true,
            print_stdout: false,
            max_warp_instructions_per_cta: 1 << 30,
            machine: MachineModel::default(),
            registers_per_thread: 0,
            timing_sample_ctas: 0,
            deadline: None,
        }
    }
}

/// A `//@trident.mark` a warp passed: which, where and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marker {
    /// The CTA's linear index (x fastest) and its `%ctaid`.
    pub cta: u32,
    pub ctaid: [u32; 3],
    pub warp: u32,
    pub id: u32,
    /// The warp's modelled clock there (cycles since the launch started, as `%clock64`
    /// reads them): when its next instruction could issue at the earliest.
    pub clock: u64,
}

/// What a successful launch reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LaunchReport {
    /// Modelled kernel duration in cycles, as CUDA events would time it: from launch to
    /// the last CTA's end plus the machine's launch overhead (see `crate::timing`).
    /// With `timing_sample_ctas` it is extrapolated to the whole grid.
    pub cycles: u64,
    /// The clock cycles are counted at: seconds = cycles / (clock_ghz · 1e9).
    pub clock_ghz: f64,
    /// Modelled cycles of each CTA that ran (start to end), in linear CTA order.
    pub cta_cycles: Vec<u64>,
    /// CTAs run; less than the grid only with `LaunchConfig::timing_sample_ctas`.
    pub ctas_run: u64,
    /// CTAs resident per SM at once.
    pub ctas_per_sm: u32,
    /// Markers passed, ordered by CTA, then warp, then program order.
    pub markers: Vec<Marker>,
    /// Modelled DRAM and L2 traffic, bytes.
    pub dram_bytes: u64,
    pub l2_bytes: u64,
    /// Sum over executed warp instructions of the number of active lanes.
    pub lane_instructions: u64,
    /// Warp instructions issued.
    pub warp_instructions: u64,
    /// Device `printf` output, CTA by CTA in linear order, lanes in order.
    pub printf: String,
}

/// Launch-wide read-only state shared by all CTAs.
pub(crate) struct Launch<'a> {
    pub module: &'a Module,
    pub func: u32,
    pub global: GlobalMem,
    pub params: Vec<u8>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub nthreads: u32,
    pub nwarps: u32,
    pub dyn_smem: u32,
    pub total_smem: u32,
    pub check_races: bool,
    pub max_steps: u64,
    pub costs: Costs,
    pub regs_per_thread: u32,
    /// `TRIDENT_EMU_STATS` is set: collect and print per-SM stall and utilization totals.
    pub stats: bool,
    pub deadline: Option<std::time::Instant>,
}

/// Largest shared memory a CTA may use (sm_90's limit).
const MAX_SHARED: u32 = 227 * 1024;

/// Runs `entry` of `module` over the grid. Buffers in `args` are updated only if the
/// launch succeeds; on error they are left exactly as they were.
pub fn launch(
    module: &Module,
    entry: &str,
    cfg: &LaunchConfig,
    args: &mut [KernelArg],
) -> Result<LaunchReport, EmuError> {
    let func = module.entry(entry)?;
    let func_idx = module.funcs.iter().position(|f| std::ptr::eq(f, func)).unwrap_or(0) as u32;
    if args.len() != func.params.len() {
        let names: Vec<String> = module.entry_params(entry)?.iter().map(|p| p.name()).collect();
        return Err(EmuError::launch(format!(
            "`{entry}` takes {} arguments ({}), got {}",
            func.params.len(),
            names.join(", "),
            args.len()
        )));
    }
    if args.len() > MAX_BUFFERS {
        return Err(EmuError::launch("too many arguments"));
    }
    // Parameter buffer and global memory (copies of the caller's buffers).
    let mut global = GlobalMem::new();
    let psize = func.params.iter().map(|p| p.offset + p.size).max().unwrap_or(0) as usize;
    if psize > 32 * 1024 {
        return Err(EmuError::launch(format!("kernel parameters take {psize} bytes, more than 32 KiB")));
    }
    let mut params = vec![0u8; psize];
    for (i, (arg, p)) in args.iter().zip(&func.params).enumerate() {
        let bits: u64 = match arg {
            KernelArg::Buffer(t) => {
                if p.size != 8 {
                    return Err(EmuError::launch(format!(
                        "argument {i} is a buffer, but parameter `{}` is {} bytes, not a 64-bit pointer",
                        p.name, p.size
                    )));
                }
                let name = format!("buffer argument {i} ({} {:?})", t.dtype, t.shape);
                global.set_region(i, name, &t.data, true);
                buffer_base(i)
            }
            KernelArg::Null => 0,
            KernelArg::Scalar(v) => *v,
            KernelArg::Bytes(b) => {
                if b.len() != p.size as usize {
                    return Err(EmuError::launch(format!(
                        "argument {i} has {} bytes, but parameter `{}` is {} bytes long",
                        b.len(),
                        p.name,
                        p.size
                    )));
                }
                let at = p.offset as usize;
                params[at..at + b.len()].copy_from_slice(b);
                continue;
            }
        };
        let at = p.offset as usize;
        let n = (p.size as usize).min(8);
        params[at..at + n].copy_from_slice(&bits.to_le_bytes()[..n]);
    }
    let report = run_on(module, func_idx, cfg, params, &mut global)?;
    // Success: hand the buffers back.
    for (i, arg) in args.iter_mut().enumerate() {
        if let KernelArg::Buffer(t) = arg {
            if let Some(bytes) = global.region_bytes(i) {
                t.data = bytes;
            }
        }
    }
    Ok(report)
}

/// Runs `entry` of `module` on global memory the caller laid out: `params` is the kernel's
/// parameter space as bytes (at least as long as the entry's parameters; pointers are
/// addresses in `global`, [`buffer_base`]`(i)` plus an offset for region `i`), and `global`
/// holds regions `0..MAX_BUFFERS` (the module's variables are added after them). A driver
/// emulating `cuLaunchKernel` on its own allocations uses this (trident-emu-driver). On
/// success `global` holds the results; on error its contents are unspecified (a fault
/// stops the launch partway, as on a GPU).
pub fn launch_on(
    module: &Module,
    entry: &str,
    cfg: &LaunchConfig,
    params: &[u8],
    global: &mut GlobalMem,
) -> Result<LaunchReport, EmuError> {
    let func = module.entry(entry)?;
    let func_idx = module.funcs.iter().position(|f| std::ptr::eq(f, func)).unwrap_or(0) as u32;
    let psize = func.params.iter().map(|p| p.offset + p.size).max().unwrap_or(0) as usize;
    if params.len() < psize {
        return Err(EmuError::launch(format!(
            "`{entry}` takes {psize} bytes of parameters, {} were given",
            params.len()
        )));
    }
    run_on(module, func_idx, cfg, params[..psize].to_vec(), global)
}

/// The launch proper, shared by [`launch`] and [`launch_on`]: checks the shape, adds the
/// module's variables to `global`, runs the grid. `global` is handed back whatever happens.
fn run_on(
    module: &Module,
    func_idx: u32,
    cfg: &LaunchConfig,
    params: Vec<u8>,
    global: &mut GlobalMem,
) -> Result<LaunchReport, EmuError> {
    let nthreads = cfg.block.iter().map(|&b| b as u64).product::<u64>();
    if cfg.block.contains(&0) || cfg.grid.contains(&0) {
        return Err(EmuError::launch(format!("empty grid {:?} or block {:?}", cfg.grid, cfg.block)));
    }
    if nthreads > 1024 || cfg.block[2] > 64 {
        return Err(EmuError::launch(format!("block {:?} has more than 1024 threads (or z > 64)", cfg.block)));
    }
    if cfg.grid[1] > 65535 || cfg.grid[2] > 65535 {
        return Err(EmuError::launch(format!("grid {:?}: y and z must be at most 65535", cfg.grid)));
    }
    let total_smem = module.dyn_shared_base.max(module.shared_static) as u64 + cfg.dynamic_shared_bytes as u64;
    if total_smem > MAX_SHARED as u64 {
        return Err(EmuError::launch(format!(
            "CTA needs {total_smem} bytes of shared memory, more than the {MAX_SHARED} available"
        )));
    }

    for (j, g) in module.globals.iter().enumerate() {
        let writable = g.space != crate::ir::Space::Const;
        global.set_region(MODULE_REGION0 + j, format!("module variable `{}`", g.name), &g.data, writable);
    }

    let launch = Launch {
        module,
        func: func_idx,
        global: std::mem::take(global),
        params,
        grid: cfg.grid,
        block: cfg.block,
        nthreads: nthreads as u32,
        nwarps: (nthreads as u32).div_ceil(32),
        dyn_smem: cfg.dynamic_shared_bytes,
        total_smem: total_smem as u32,
        check_races: cfg.check_races,
        max_steps: cfg.max_warp_instructions_per_cta,
        costs: Costs::new(&cfg.machine),
        regs_per_thread: cfg.registers_per_thread,
        stats: std::env::var_os("TRIDENT_EMU_STATS").is_some(),
        deadline: cfg.deadline,
    };
    let ncta = cfg.grid.iter().map(|&g| g as u64).product::<u64>();
    let nrun = if cfg.timing_sample_ctas > 0 { cfg.timing_sample_ctas.min(ncta) } else { ncta };
    let g = grid::run(&launch, nrun, &launch.global.region_lens(), cfg.parallel);
    *global = launch.global;
    let g = g?;
    let mut report = LaunchReport {
        clock_ghz: cfg.machine.clock_ghz,
        ctas_run: nrun,
        ctas_per_sm: g.ctas_per_sm,
        dram_bytes: g.dram_bytes,
        l2_bytes: g.l2_bytes,
        ..LaunchReport::default()
    };
    let mut last_end = 0u64;
    for c in g.ctas {
        report.cta_cycles.push(c.end - c.start);
        last_end = last_end.max(c.end);
        report.lane_instructions += c.lane_instrs;
        report.warp_instructions += c.warp_instrs;
        report.printf.push_str(&c.printf);
        let mut marks = c.marks;
        // Stable: program order within each warp is kept.
        marks.sort_by_key(|m| m.0);
        report.markers.extend(marks.into_iter().map(|(warp, id, clock)| Marker {
            cta: c.linear,
            ctaid: c.ctaid,
            warp,
            id,
            clock,
        }));
    }
    if report.cta_cycles.len() as u64 != nrun {
        return Err(EmuError::launch("launch aborted"));
    }
    let ran = if nrun < ncta {
        let slots = g.ctas_per_sm as u64 * cfg.machine.sms as u64;
        crate::timing::extrapolate(&report.cta_cycles, ncta, slots)
    } else {
        last_end
    };
    report.cycles = ran + (cfg.machine.launch_overhead_ns * cfg.machine.clock_ghz) as u64;
    if cfg.print_stdout {
        print!("{}", report.printf);
    }
    Ok(report)
}
