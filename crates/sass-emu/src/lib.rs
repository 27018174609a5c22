//! # trident-sass-emu: the SASS emulator
//!
//! Runs the machine code `ptxas` made — a kernel of a cubin, sm_80 or sm_90a — on the CPU:
//! the schedule prong's way to check rewritten SASS without a GPU, and to estimate its
//! cycles (issue 11).
//!
//! * **Instructions** come from `nvdisasm`'s text ([`decode`]), each executed for the lanes
//!   of its warp that are active ([`exec`]); an instruction or modifier not implemented is an
//!   `Unsupported` error with its text, never a guess.
//! * **Control flow**: each lane has its own program counter; a warp runs the lanes at the
//!   lowest one together, so lanes that branched apart run again as one at the join.
//!   `BSSY`/`BSYNC` wait for the lanes of their convergence barrier, `BAR.SYNC` for every
//!   live thread of the CTA, `EXIT` retires lanes.
//! * **Memory**: global memory is the PTX emulator's (trident-emu's `memory`: the same fake
//!   addresses, bounds checks and messages); shared memory per CTA (the first KiB reserved
//!   from sm_90 on, as on the hardware); constant bank 0 holds the block and grid sizes and
//!   the parameters where the cubin's `EIATTR_KPARAM_INFO` records put them.
//! * **Timing and hazards** ([`timing`]): every warp issues by its control bits; a read before
//!   the value is ready is a `Hazard` error naming both instructions. The warps' clocks give
//!   each CTA's cycle estimate, and [`grid`] the grid's: CTAs in waves over the SMs, those
//!   sharing an SM sharing its issue slots and pipes.
//! * **Asynchronous copies** ([`tma`], sm_90): mbarriers, tensor-map and bulk copies, with the
//!   PTX emulator's mbarrier state and box semantics; lanes parked at a failed wait run again
//!   once a barrier moves, copies land when nothing else can run, and a wait nothing can
//!   complete is a `Deadlock` error.

pub mod decode;
pub mod exec;
pub mod grid;
pub mod kernel;
pub mod tensor;
pub mod timing;
pub mod tma;

use trident_emu::memory::{buffer_base, GlobalMem, PARAM_WINDOW};
use trident_emu::{EmuError, ErrorKind, KernelArg};
use trident_sass::disasm::Text;
use trident_sass::operands::{operands, Operands};

pub use kernel::SassKernel;

use exec::{Ctx, Flow, Warp};
use timing::{op_text, WarpTiming};

/// A kernel ready to launch: decoded, with the registers each instruction reads and writes.
pub struct Program {
    pub kernel: SassKernel,
    regs: Vec<Operands>,
    /// Each instruction's source slots, where the bank model knows its form.
    slots: Vec<Option<trident_sass::banks::Slots>>,
    /// The pipe each instruction needs, where the pipe model assigns one.
    pipes: Vec<Option<trident_sass::pipes::PipeUse>>,
    /// Registers per thread (`EIATTR_REGCOUNT`), for the CTAs an SM holds at once.
    pub registers: Option<u32>,
}

impl Program {
    /// Kernel `name` of the cubin `bytes`, given `nvdisasm`'s text of its instructions.
    pub fn new(cubin: &trident_sass::Cubin, name: &str, text: &[Text]) -> Result<Program, EmuError> {
        let mut kernel = SassKernel::new(cubin, name, text)?;
        // Calls name their targets by symbol (`CALL.REL.NOINC $__internal_0_$...`).
        let k = cubin.kernel(name).map(|k| k.text_section);
        let symbols = cubin.elf.symbols().unwrap_or_default();
        for op in kernel.ops.iter_mut().filter(|o| o.root == "CALL") {
            for x in op.ops.iter_mut() {
                if let decode::Opnd::Other(s) = x {
                    if let Some(sym) = symbols.iter().find(|y| &y.name == s && Some(y.shndx as usize) == k) {
                        *x = decode::Opnd::Label((sym.value / 16) as usize);
                    }
                }
            }
        }
        let slots = text.iter().map(trident_sass::banks::source_slots).collect();
        let pipes = kernel.ops.iter().map(|op| trident_sass::pipes::pipe(kernel.sm, &op_text(op))).collect();
        let registers = cubin.kernel(name).and_then(|k| cubin.registers(k));
        Ok(Program { kernel, regs: text.iter().map(operands).collect(), slots, pipes, registers })
    }
}

/// How to launch.
#[derive(Clone, Debug)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_shared_bytes: u32,
    /// Check the control bits as the hardware would use them (on by default).
    pub check_hazards: bool,
    /// A CTA stops with an error after this many warp-instructions.
    pub max_warp_instructions_per_cta: u64,
    /// The machine whose SM count, residency limits and memory bandwidths the grid's estimate
    /// takes; `None` (the default): the cubin's architecture's (A100 for sm_80, H100 for
    /// sm_90). The per-instruction latencies stay the architecture's.
    pub machine: Option<trident_emu::MachineModel>,
}

impl Default for LaunchConfig {
    fn default() -> Self {
        LaunchConfig {
            grid: [1, 1, 1],
            block: [32, 1, 1],
            dynamic_shared_bytes: 0,
            check_hazards: true,
            max_warp_instructions_per_cta: 50_000_000,
            machine: None,
        }
    }
}

/// What a launch reports.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The grid's estimated cycles ([`grid`]: its CTAs' in waves over the machine's SMs).
    pub cycles: u64,
    /// The slowest CTA's estimated cycles, alone on an SM (issue, stalls, waits, barriers).
    pub cta_cycles: u64,
    /// CTAs an SM holds at once, and the waves the grid takes.
    pub ctas_per_sm: u32,
    pub waves: u64,
    /// Global bytes moved, bytes fetched from L2 (each CTA's distinct sectors), distinct bytes
    /// touched (what DRAM supplies at least), and what bounds the estimate (`"SMs"`, `"L2"`,
    /// `"DRAM"`: [`grid::estimate`]).
    pub global_bytes: u64,
    pub l2_bytes: u64,
    pub dram_bytes: u64,
    pub bound: &'static str,
    /// Warp-instructions issued in all.
    pub instructions: u64,
}

/// Where thread `lane` of warp `w` is, for messages.
fn thread_of(first: u32, ntid: [u32; 3]) -> [u32; 3] {
    let (nx, ny) = (ntid[0].max(1), ntid[1].max(1));
    [first % nx, (first / nx) % ny, first / (nx * ny)]
}

/// Runs `p` on the grid, with `args` in parameter order (buffers written back after a
/// successful launch only).
pub fn launch(p: &Program, cfg: &LaunchConfig, args: &mut [KernelArg]) -> Result<Report, EmuError> {
    let k = &p.kernel;
    if args.len() != k.params.len() {
        return Err(EmuError::launch(format!(
            "kernel `{}` takes {} parameters, {} given",
            k.name,
            k.params.len(),
            args.len()
        )));
    }
    let threads = cfg.block.iter().map(|&x| x as u64).product::<u64>();
    if threads == 0 || threads > 1024 || cfg.grid.contains(&0) {
        return Err(EmuError::launch(format!("bad launch shape: grid {:?}, block {:?}", cfg.grid, cfg.block)));
    }
    let put = |cb: &mut Vec<u8>, at: usize, b: &[u8]| {
        if cb.len() < at + b.len() {
            cb.resize(at + b.len(), 0);
        }
        cb[at..at + b.len()].copy_from_slice(b);
    };
    let mut mem = GlobalMem::new();
    let mut params = vec![0u8; k.params.iter().map(|p| (p.offset + p.size) as usize).max().unwrap_or(0)];
    for (i, (a, prm)) in args.iter().zip(&k.params).enumerate() {
        let at = prm.offset as usize;
        let bits: u64 = match a {
            KernelArg::Buffer(t) => {
                mem.set_region(i, format!("argument {i}"), &t.data, true);
                buffer_base(i)
            }
            KernelArg::Null => 0,
            KernelArg::Scalar(b) => *b,
            KernelArg::Bytes(b) => {
                put(&mut params, at, b);
                continue;
            }
        };
        let n = prm.size.clamp(1, 8) as usize;
        put(&mut params, at, &bits.to_le_bytes()[..n]);
    }
    let report = run_on(p, cfg, &params, &mem)?;
    for (i, a) in args.iter_mut().enumerate() {
        if let KernelArg::Buffer(t) = a {
            if let Some(b) = mem.region_bytes(i) {
                t.data.copy_from_slice(&b);
            }
        }
    }
    Ok(report)
}

/// Runs `p` on global memory the caller laid out: `params` is the kernel's parameter space
/// as bytes (at least as long as the cubin's parameter records say; pointers are addresses
/// in `mem`, `trident_emu::buffer_base(i)` plus an offset for region `i`). A driver emulating
/// `cuLaunchKernel` on its own allocations uses this (trident-emu-driver). On success `mem`
/// holds the results; on error its contents are unspecified.
pub fn launch_on(p: &Program, cfg: &LaunchConfig, params: &[u8], mem: &GlobalMem) -> Result<Report, EmuError> {
    let k = &p.kernel;
    let need = k.params.iter().map(|p| (p.offset + p.size) as usize).max().unwrap_or(0);
    if params.len() < need {
        return Err(EmuError::launch(format!(
            "kernel `{}` takes {need} bytes of parameters, {} were given",
            k.name,
            params.len()
        )));
    }
    let threads = cfg.block.iter().map(|&x| x as u64).product::<u64>();
    if threads == 0 || threads > 1024 || cfg.grid.contains(&0) {
        return Err(EmuError::launch(format!("bad launch shape: grid {:?}, block {:?}", cfg.grid, cfg.block)));
    }
    run_on(p, cfg, &params[..need], mem)
}

/// Constant bank 0 (launch shape, stack, the parameters' generic address, `params` at the
/// cubin's parameter base) and the grid, shared by [`launch`] and [`launch_on`].
fn run_on(p: &Program, cfg: &LaunchConfig, params: &[u8], mem: &GlobalMem) -> Result<Report, EmuError> {
    let k = &p.kernel;
    let mut cbank = vec![0u8; k.cbank0_bytes.max(0x30) as usize];
    let put = |cb: &mut Vec<u8>, at: usize, b: &[u8]| {
        if cb.len() < at + b.len() {
            cb.resize(at + b.len(), 0);
        }
        cb[at..at + b.len()].copy_from_slice(b);
    };
    for (i, v) in cfg.block.iter().chain(&cfg.grid).enumerate() {
        put(&mut cbank, 4 * i, &v.to_le_bytes());
    }
    // The initial stack pointer (`c[0x0][0x28]`): the top of each thread's local window
    // (`kernel::SassKernel::local_bytes`); the stack grows down to 0.
    put(&mut cbank, 0x28, &k.local_bytes.to_le_bytes());
    // The parameters' generic address (`cvta.param`, a tensor map passed by value): sm_90's
    // `c[0x0][0x198]` holds that of the first parameter, sm_80's `c[0x0][0x40]` that of the
    // bank (experiment: `ptxas` adds the parameter's offset, respectively its offset in the
    // bank). Here constant bank 0 sits at the parameter window's start, so byte `x` of the
    // bank is at `PARAM_WINDOW + x` (`tma` reads maps there) and a parameter keeps the
    // bank's alignment (a tensor map is 64-byte aligned in the bank: 0x240 on sm_90).
    let generic = if k.sm >= 90 { (0x198, PARAM_WINDOW + k.param_base as u64) } else { (0x40, PARAM_WINDOW) };
    put(&mut cbank, generic.0, &generic.1.to_le_bytes());
    put(&mut cbank, k.param_base as usize, params);
    // CTAs run on all cores (they share only global memory, whose bytes are atomics); the
    // first error in launch order is the one reported.
    let ids: Vec<[u32; 3]> = (0..cfg.grid[2])
        .flat_map(|z| (0..cfg.grid[1]).flat_map(move |y| (0..cfg.grid[0]).map(move |x| [x, y, z])))
        .collect();
    let results: Vec<Result<(grid::Cta, u64), EmuError>> = {
        use rayon::prelude::*;
        ids.par_iter().map(|&ctaid| run_cta(p, cfg, mem, &cbank, ctaid)).collect()
    };
    let mut report = Report::default();
    let mut ctas = Vec::with_capacity(results.len());
    for r in results {
        let (cta, n) = r?;
        report.cta_cycles = report.cta_cycles.max(cta.cycles);
        report.instructions += n;
        ctas.push(cta);
    }
    let m = cfg.machine.as_ref().unwrap_or_else(|| timing::model(k.sm));
    let shared = k.shared_reserved() + k.shared_bytes + cfg.dynamic_shared_bytes;
    let threads: u32 = cfg.block.iter().product();
    report.ctas_per_sm = m.ctas_per_sm(threads, shared, p.registers.unwrap_or(0));
    let e = grid::estimate(&ctas, m, report.ctas_per_sm);
    (report.cycles, report.waves, report.bound) = (e.cycles, e.waves, e.bound);
    (report.global_bytes, report.l2_bytes, report.dram_bytes) = (e.global_bytes, e.l2_bytes, e.dram_bytes);
    Ok(report)
}

/// Releases every CTA barrier whose warps have all arrived: barrier `n` with a thread count
/// once that many threads' warps wait at it, a barrier without one once every warp that has
/// not exited does. Says whether one was released.
fn release_barriers(
    warps: &mut [exec::Warp],
    clocks: &mut [timing::WarpTiming],
    states: &[State],
    arrivals: &mut [(u32, u64); 16],
) -> bool {
    let at = |i: usize| matches!(states[i], State::AtBar);
    let mut released = false;
    let ids: std::collections::BTreeSet<u32> = (0..warps.len()).filter(|&i| at(i)).map(|i| warps[i].bar_id).collect();
    for id in ids {
        let members: Vec<usize> = (0..warps.len()).filter(|&i| at(i) && warps[i].bar_id == id).collect();
        let count = warps[members[0]].bar_count;
        let waiting = 32 * members.len() as u32;
        let arrived = arrivals.get(id as usize).copied().unwrap_or_default();
        let complete = if count == 0 {
            (0..warps.len()).all(|i| matches!(states[i], State::Done) || members.contains(&i))
        } else {
            waiting + arrived.0 >= count
        };
        if !complete {
            continue;
        }
        // The phase completes with its last thread, waiting or only arriving.
        let mut t = members.iter().map(|&i| clocks[i].clock).max().unwrap_or(0);
        if count > 0 {
            if let Some(a) = arrivals.get_mut(id as usize) {
                if a.0 > 0 {
                    t = t.max(a.1);
                }
                a.0 -= count.saturating_sub(waiting).min(a.0);
                if a.0 == 0 {
                    a.1 = 0;
                }
            }
        }
        let t = t + trident_sass::latency::BARRIER_MIN_CYCLES as u64;
        for &i in &members {
            let w = &mut warps[i];
            for l in 0..32 {
                if w.at_bar >> l & 1 == 1 {
                    w.pc[l] += 1;
                }
            }
            w.at_bar = 0;
            clocks[i].clock = t;
        }
        released = true;
    }
    released
}

enum State {
    AtBar,
    Done,
    /// Lanes parked at a failed mbarrier wait, none runnable.
    Blocked,
}

fn run_cta(
    p: &Program,
    cfg: &LaunchConfig,
    mem: &GlobalMem,
    cbank: &[u8],
    ctaid: [u32; 3],
) -> Result<(grid::Cta, u64), EmuError> {
    let k = &p.kernel;
    let threads: u32 = cfg.block.iter().product();
    let nwarps = threads.div_ceil(32);
    let mut warps: Vec<Warp> = (0..nwarps).map(|w| Warp::new(32 * w, (threads - 32 * w).min(32))).collect();
    let issue = std::rc::Rc::new(std::cell::RefCell::new(timing::IssueSlots::default()));
    let mut clocks: Vec<WarpTiming> = (0..nwarps as usize)
        .map(|w| {
            let mut t = WarpTiming::default();
            t.slots = Some((issue.clone(), w % 4));
            t
        })
        .collect();
    let mut shared = vec![0u8; (k.shared_reserved() + k.shared_bytes + cfg.dynamic_shared_bytes) as usize];
    let mut bars = tma::Barriers::default();
    // Threads that arrived (`BAR.ARV`) at each named barrier without waiting, and the
    // latest clock of those arrivals: they count towards the barrier's next completion.
    let mut arrivals = [(0u32, 0u64); 16];
    // The barriers' epoch at which parked lanes were last let go without a barrier moving.
    let mut forced_at: Option<u64> = None;
    let mut issued = 0u64;
    let mut traffic = exec::Traffic::default();
    let name_of = |i: usize| op_text(&k.ops[i]);
    loop {
        let mut states = vec![];
        for wi in 0..nwarps as usize {
            let w = &mut warps[wi];
            let t = &mut clocks[wi];
            let state = loop {
                if w.live == 0 {
                    break State::Done;
                }
                // Lanes parked at a failed wait run again once a barrier has moved.
                if w.parked != 0 && bars.epoch != w.park_epoch {
                    w.parked = 0;
                    // (Its clock moves when its wait passes: `Ctx::waited_until`.)
                }
                w.parked &= w.live;
                let waiting = w.at_bar | w.at_bsync.iter().fold(0, |a, b| a | b) | w.parked;
                let runnable = w.live & !waiting;
                if runnable == 0 {
                    if w.parked != 0 {
                        break State::Blocked;
                    }
                    if w.at_bar & w.live == w.live {
                        break State::AtBar;
                    }
                    return Err(EmuError::new(
                        ErrorKind::Deadlock,
                        format!("warp {wi}'s lanes wait at convergence barriers that can never complete"),
                    )
                    .at_thread(ctaid, thread_of(w.first_thread, cfg.block)));
                }
                let pc = (0..32).filter(|l| runnable >> l & 1 == 1).map(|l| w.pc[l]).min().unwrap_or(0);
                let active = (0..32).filter(|&l| runnable >> l & 1 == 1 && w.pc[l] == pc).fold(0u32, |m, l| m | 1 << l);
                let lane0 = active.trailing_zeros();
                let at = |e: EmuError| e.at_thread(ctaid, thread_of(w.first_thread + lane0, cfg.block));
                let Some(op) = k.ops.get(pc) else {
                    return Err(at(EmuError::new(
                        ErrorKind::Runtime,
                        format!("ran past the kernel's last instruction ({pc})"),
                    )));
                };
                let slots = p.slots.get(pc).and_then(Option::as_ref);
                let pipe = p.pipes.get(pc).copied().flatten();
                if cfg.check_hazards {
                    t.issue(k.sm, pc, active, op, &p.regs[pc], slots, pipe, k.controls[pc], &name_of).map_err(|e| {
                        let mut e = e;
                        e.thread = None;
                        e.at_thread(ctaid, thread_of(w.first_thread + lane0, cfg.block))
                    })?;
                } else {
                    t.issue_unchecked(k.sm, op, slots, pipe, k.controls[pc]);
                }
                issued += 1;
                if issued > cfg.max_warp_instructions_per_cta {
                    return Err(at(EmuError::new(
                        ErrorKind::Runtime,
                        format!("CTA ran more than {} warp-instructions (a hang?)", cfg.max_warp_instructions_per_cta),
                    )));
                }
                let mut ctx = Ctx {
                    k,
                    mem,
                    cbank,
                    shared: &mut shared,
                    ctaid,
                    ntid: cfg.block,
                    nctaid: cfg.grid,
                    warp_id: wi as u32,
                    clock: t.clock,
                    pc,
                    bars: &mut bars,
                    waited_until: 0,
                    shared_access: Vec::new(),
                    traffic: &mut traffic,
                };
                let flow = ctx.exec(w, op, active).map_err(|e| {
                    if e.thread.is_some() {
                        e
                    } else {
                        e.at_thread(ctaid, thread_of(w.first_thread + lane0, cfg.block))
                    }
                })?;
                let waited = ctx.waited_until;
                t.clock = t.clock.max(waited);
                if !ctx.shared_access.is_empty() {
                    let mut words = vec![];
                    let mut bytes = 0u64;
                    for &(a, n) in &ctx.shared_access {
                        bytes += n as u64;
                        words.extend((a / 4..=(a + n.max(1) as u64 - 1) / 4).map(|w| w as u32));
                    }
                    let waves = trident_emu::timing::access::wavefronts(&mut words, bytes) as u64;
                    t.shared_pipe(k.sm, pc, waves, matches!(op.root.as_str(), "LDS" | "LDSM"));
                }
                let step = |w: &mut Warp, m: u32| {
                    for l in 0..32 {
                        if m >> l & 1 == 1 {
                            w.pc[l] += 1;
                        }
                    }
                };
                match flow {
                    Flow::Next => step(w, active),
                    Flow::Branch(take, target) => {
                        for l in 0..32 {
                            if active >> l & 1 == 1 {
                                w.pc[l] = if take >> l & 1 == 1 { target } else { w.pc[l] + 1 };
                            }
                        }
                    }
                    Flow::Exit(m) => {
                        w.live &= !m;
                        step(w, active & !m);
                    }
                    Flow::Bar(id, count) => {
                        w.at_bar |= active;
                        w.bar_id = id;
                        w.bar_count = count;
                    }
                    Flow::Arrive(id, _) => {
                        let a = &mut arrivals[id as usize];
                        a.0 += active.count_ones();
                        a.1 = a.1.max(t.clock);
                        step(w, active);
                    }
                    Flow::Bsync(n) => w.at_bsync[n as usize] |= active,
                    Flow::JumpEach(m, to) => {
                        for (l, (pc, t)) in w.pc.iter_mut().zip(to.iter()).enumerate() {
                            if active >> l & 1 == 1 {
                                *pc = if m >> l & 1 == 1 { *t } else { *pc + 1 };
                            }
                        }
                    }
                    Flow::Park(m, bar) => {
                        step(w, active);
                        w.parked |= m;
                        w.park_epoch = bars.epoch;
                        w.park_bar = bar;
                    }
                }
                // Convergence barriers whose lanes have all arrived (or exited) release.
                for n in 0..16 {
                    let waiting = w.at_bsync[n];
                    if waiting != 0 && w.breg[n] & w.live & !waiting == 0 {
                        step(w, waiting);
                        w.at_bsync[n] = 0;
                    }
                }
            };
            states.push(state);
        }
        if states.iter().all(|s| matches!(s, State::Done)) {
            break;
        }
        // No running warp can issue before the lowest of their clocks again.
        if let Some(low) = warps.iter().zip(&clocks).filter(|(w, _)| w.live != 0).map(|(_, c)| c.clock).min() {
            issue.borrow_mut().forget_before(low);
        }
        if release_barriers(&mut warps, &mut clocks, &states, &mut arrivals) {
            continue;
        }
        // Some lanes are parked at mbarrier waits and nothing else can run: the copies in
        // flight land (`tma`), and lanes whose barriers moved since they parked run on.
        if bars.land(&mut shared).map_err(|e| e.at_thread(ctaid, [0, 0, 0]))? {
            continue;
        }
        if warps.iter().any(|w| w.parked != 0 && w.park_epoch != bars.epoch) {
            continue;
        }
        // Nothing can move a barrier any more. A wait may give up (`try_wait` returns false
        // when its time limit passes): the lanes go on once, past their failed wait; if that
        // moves no barrier either, they can never complete.
        if forced_at != Some(bars.epoch) {
            forced_at = Some(bars.epoch);
            for w in warps.iter_mut() {
                w.parked = 0;
            }
            continue;
        }
        let mut stuck = vec![];
        for (wi, w) in warps.iter().enumerate() {
            if w.parked != 0 {
                stuck.push(format!("warp {wi} waits on {}", bars.describe(w.park_bar)));
            } else if w.at_bar & w.live != 0 {
                stuck.push(format!("warp {wi} waits at BAR.SYNC"));
            }
        }
        return Err(EmuError::new(
            ErrorKind::Deadlock,
            format!("deadlock: an mbarrier phase can never complete ({})", stuck.join("; ")),
        )
        .at_thread(ctaid, [0, 0, 0]));
    }
    let cycles = clocks.iter().map(|c| c.clock).max().unwrap_or(0);
    let mut demand = issue.borrow().demand.clone();
    demand.l2_port = traffic.l2_bytes().div_ceil(timing::model(k.sm).l2_port_bytes_per_clk.max(1) as u64);
    Ok((grid::Cta { cycles, demand, traffic }, issued))
}
