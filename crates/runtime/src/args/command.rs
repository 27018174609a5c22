//! The command lines of `trident run` and `trident bench`, parsed here and only here.
//!
//! ```text
//! trident run FILE.py::KERNEL --grid X[,Y[,Z]]|EXPR [--backend auto|interp|emu|cuda|sass-emu] [--num-warps N]
//!     [--num-stages N] [--seed N] [--save NAME=PATH.npy]... [--debug] [--sanitize] [--print-ir-after-all]
//!     [--timeout SECS] NAME=VALUE...
//! trident run FILE.ptx[::ENTRY] --grid X[,Y[,Z]] --block T[,TY[,TZ]] [--shared BYTES]
//!     [--backend auto|emu|cuda|sass-emu] [--seed N] [--save I=PATH.npy]... VALUE...
//! trident run FILE.cubin[::KERNEL] (as a PTX run; on the SASS emulator)
//! trident bench (the words of a kernel run) [--warmup N] [--reps N] [--flops EXPR] [--bytes EXPR]
//!     [--json] [--flush-l2]
//! trident profile (the words of a kernel run) [--regions scopes,kernel,loops,dots,loads]
//!     [--granularity warp|warpgroup|cta] [--buffer-records N] [--markers] [--probe-cost per-site|in-kernel|calibrated]
//!     [--trace OUT.json] [--csv OUT.csv]
//! ```
//!
//! Every option is declared once, in [`FLAGS`] (its name, whether it takes a value, what it
//! does, which command lines take it); one scanner walks the words with that table, and the
//! parsers of the three lines ([`RunCommand::parse`], [`RunCommand::parse_bench`],
//! [`PtxCommand`] through [`RunLine::parse`]) read what it found. Options may be written
//! `--opt VALUE` or `--opt=VALUE` and may come anywhere among the other words. The first
//! word that is neither an option, an option's value, nor a `NAME=VALUE` is the kernel
//! (or PTX file). [`flags_help`] renders the table for `--help`.

use std::fmt;
use std::path::PathBuf;

use super::{is_identifier, materialize_all, parse_arg, Arg, ArgError, ArgSpec};
use crate::grid_expr::GridExpr;
use crate::profile::{validate_capacity, Granularity, ProbeMode, ProfileOptions, Regions};

/// Which command line an option belongs to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LineKind {
    /// `trident run FILE.py::KERNEL` (and `bench`, which takes the same words).
    Kernel,
    /// `trident run FILE.ptx::ENTRY`.
    Ptx,
    /// The options only `trident bench` adds.
    Bench,
    /// The options only `trident profile` adds.
    Profile,
}

/// One command-line option.
#[derive(Debug)]
pub struct Flag {
    /// Its name without the leading `--`.
    pub name: &'static str,
    /// How its value is written (`None`: a switch, which takes no value).
    pub value: Option<&'static str>,
    /// What it does, for `--help`.
    pub help: &'static str,
    /// The command lines that take it.
    pub lines: &'static [LineKind],
}

use LineKind::{Bench as B, Kernel as K, Profile as R, Ptx as P};

/// Every option of `trident run` and `trident bench`: the one table.
pub const FLAGS: &[Flag] = &[
    Flag {
        name: "grid",
        value: Some("X[,Y[,Z]]|EXPR"),
        help: "programs along each axis, or an expression over the scalar arguments and constexprs, e.g. 'cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)' (PTX: numbers only)",
        lines: &[K, P],
    },
    Flag {
        name: "backend",
        value: Some("auto|interp|emu|cuda|sass-emu"),
        help: "where to run; auto: the GPU when a CUDA driver and device are found, else the interpreter (PTX: emu, the default, cuda or sass-emu); sass-emu: the kernel's PTX through ptxas, the SASS run on the SASS emulator",
        lines: &[K, P],
    },
    Flag { name: "num-warps", value: Some("N"), help: "warps per program (overrides every autotune config's)", lines: &[K] },
    Flag { name: "num-stages", value: Some("N"), help: "software-pipelining depth (overrides every autotune config's)", lines: &[K] },
    Flag { name: "seed", value: Some("N"), help: "seed of the rand/randn tensors (default 0)", lines: &[K, P] },
    Flag {
        name: "save",
        value: Some("NAME=PATH.npy"),
        help: "write tensor argument NAME (PTX: parameter index I, I=PATH.npy) to a .npy file after the run",
        lines: &[K, P],
    },
    Flag { name: "debug", value: None, help: "keep and check tl.device_assert", lines: &[K] },
    Flag {
        name: "timeout",
        value: Some("SECS"),
        help: "stop a launch on the interpreter or the emulator that runs longer (an error; outputs untouched); also TRIDENT_TIMEOUT",
        lines: &[K],
    },
    Flag {
        name: "sanitize",
        value: None,
        help: "emu/cuda: check every global load, store and atomic against its buffer's bounds in the kernel; the first violation fails the launch with the interpreter's error (also TRIDENT_SANITIZE=1)",
        lines: &[K],
    },
    Flag {
        name: "sass-search",
        value: Some("BUDGET"),
        help: "sass-emu/cuda: run the schedule a search of the kernel's SASS finds (first launch searches for BUDGET, e.g. 30s or 500 evaluations, on the SASS emulator's estimate; kept in the cache directory); also TRIDENT_SASS_SEARCH",
        lines: &[K],
    },
    Flag { name: "print-ir-after-all", value: None, help: "print the IR after every pass to stderr", lines: &[K] },
    Flag { name: "block", value: Some("T[,TY[,TZ]]"), help: "threads per CTA (PTX only; required)", lines: &[P] },
    Flag { name: "shared", value: Some("BYTES"), help: "dynamic shared memory per CTA (PTX only)", lines: &[P] },
    Flag { name: "warmup", value: Some("N"), help: "untimed launches before timing (default 10)", lines: &[B] },
    Flag { name: "reps", value: Some("N"), help: "timed launches (default 50)", lines: &[B] },
    Flag { name: "flops", value: Some("EXPR"), help: "floating-point operations per launch, an expression over the arguments (e.g. 2*M*N*K)", lines: &[B] },
    Flag { name: "bytes", value: Some("EXPR"), help: "bytes moved per launch, an expression (e.g. nbytes(x)+nbytes(y))", lines: &[B] },
    Flag { name: "json", value: None, help: "print one JSON object instead of text", lines: &[B] },
    Flag {
        name: "flush-l2",
        value: None,
        help: "CUDA: overwrite 256 MiB before each timed launch so inputs are not in L2 (as triton.testing.do_bench does)",
        lines: &[B],
    },
    Flag {
        name: "regions",
        value: Some("LIST"),
        help: "regions to profile, comma-separated: scopes (the kernel's pl.scope), kernel, loops (each iteration), dots, loads (default scopes,kernel,loops)",
        lines: &[R],
    },
    Flag {
        name: "granularity",
        value: Some("warp|warpgroup|cta"),
        help: "which threads share a timeline (their first warp's lane 0 records; default warp)",
        lines: &[R],
    },
    Flag {
        name: "buffer-records",
        value: Some("N"),
        help: "ring capacity per group, a power of two (default 256); older records are dropped, and counted",
        lines: &[R],
    },
    Flag {
        name: "markers",
        value: None,
        help: "emulator only: zero-cost markers instead of probes, the unprobed kernel's true timeline to check probes against",
        lines: &[R],
    },
    Flag {
        name: "probe-cost",
        value: Some("per-site|in-kernel|calibrated"),
        help: "what replay subtracts per record: per site, from two more launches on copies of the arguments (every record doubled; the kernel region only) (default); one cost measured in this kernel by the second of them; or the calibration kernel's back-to-back cost",
        lines: &[R],
    },
    Flag { name: "trace", value: Some("OUT.json"), help: "write a Chrome/Perfetto trace (ui.perfetto.dev, chrome://tracing)", lines: &[R] },
    Flag { name: "csv", value: Some("OUT.csv"), help: "write the region table as CSV", lines: &[R] },
];

/// The options of `lines` that no line of `except` takes, as `--help` lists them, one per line.
pub fn flags_help(lines: &[LineKind], except: &[LineKind]) -> String {
    let shown: Vec<&Flag> = FLAGS
        .iter()
        .filter(|f| f.lines.iter().any(|l| lines.contains(l)) && !f.lines.iter().any(|l| except.contains(l)))
        .collect();
    let spell = |f: &Flag| match f.value {
        Some(v) => format!("--{} {v}", f.name),
        None => format!("--{}", f.name),
    };
    let width = shown.iter().map(|f| spell(f).len()).max().unwrap_or(0);
    shown.iter().map(|f| format!("  {:<width$}  {}\n", spell(f), f.help)).collect()
}

/// What [`scan`] found in the words of a command line.
struct Scanned<'w> {
    /// The kernel or PTX file word, if there is one.
    target: Option<&'w str>,
    /// The other words that are not options, in order.
    words: Vec<&'w str>,
    /// Options in order, with their values (`None` for switches).
    options: Vec<(&'static Flag, Option<&'w str>)>,
}

/// Walks `words` with the option table: options of any of `lines` with their values,
/// the target (the first word that is neither an option nor `NAME=VALUE`), the rest.
fn scan<'w, S: AsRef<str>>(words: &'w [S], lines: &[LineKind]) -> Result<Scanned<'w>, ArgError> {
    let mut out = Scanned { target: None, words: vec![], options: vec![] };
    let mut it = words.iter().map(AsRef::as_ref);
    while let Some(w) = it.next() {
        let Some(opt) = w.strip_prefix("--") else {
            if out.target.is_none() && !w.contains('=') {
                out.target = Some(w);
            } else {
                out.words.push(w);
            }
            continue;
        };
        let (name, inline) = match opt.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (opt, None),
        };
        let flag = format!("--{name}");
        let Some(f) = FLAGS.iter().find(|f| f.name == name && f.lines.iter().any(|l| lines.contains(l))) else {
            return Err(ArgError::new(flag, "unknown option"));
        };
        let value = match (f.value, inline) {
            (None, None) => None,
            (None, Some(_)) => return Err(ArgError::new(flag, "takes no value")),
            (Some(_), Some(v)) => Some(v),
            (Some(_), None) => Some(it.next().ok_or_else(|| ArgError::new(&flag, "needs a value"))?),
        };
        out.options.push((f, value));
    }
    Ok(out)
}

/// Splits `FILE::NAME` (`::NAME` optional, an empty name is none).
fn split_target(target: &str) -> (&str, Option<String>) {
    match target.split_once("::") {
        Some((f, k)) if !k.is_empty() => (f, Some(k.to_string())),
        Some((f, _)) => (f, None),
        None => (target, None),
    }
}

fn parse_u64(flag: &str, v: &str) -> Result<u64, ArgError> {
    v.parse::<u64>().map_err(|_| ArgError::new(flag, format!("expected a non-negative integer, got `{v}`")))
}

fn parse_backend(flag: &str, v: &str) -> Result<Backend, ArgError> {
    Backend::parse(v)
        .ok_or_else(|| ArgError::new(flag, format!("unknown backend `{v}` (auto, interp, emu, sass-emu or cuda)")))
}

/// A launch grid: the number of programs along each axis (all ≥ 1).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Grid {
    /// Programs along axis 0 (`tl.program_id(0)`).
    pub x: u32,
    /// Programs along axis 1.
    pub y: u32,
    /// Programs along axis 2.
    pub z: u32,
}

impl Grid {
    /// The three dimensions, `[x, y, z]`.
    pub fn dims(self) -> [u32; 3] {
        [self.x, self.y, self.z]
    }

    /// Total number of programs.
    pub fn programs(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }
}

impl fmt::Display for Grid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{},{}", self.x, self.y, self.z)
    }
}

/// Parses `--grid X[,Y[,Z]]`: one to three positive integers; missing ones are 1.
pub fn parse_grid(s: &str) -> Result<Grid, ArgError> {
    parse_dims("--grid", "grid", s)
}

/// One to three positive integers for option `flag` (`what` names them in messages).
fn parse_dims(flag: &str, what: &str, s: &str) -> Result<Grid, ArgError> {
    let err = |m: String| ArgError::new(flag, m);
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.is_empty() || parts.len() > 3 || s.trim().is_empty() {
        return Err(err(format!("expected X[,Y[,Z]] with one to three dimensions, got `{s}`")));
    }
    let mut dims = [1u32; 3];
    for (i, p) in parts.iter().enumerate() {
        let v: i64 = p.parse().map_err(|_| err(format!("`{p}` in `{s}` is not an integer")))?;
        if v <= 0 {
            return Err(err(format!("{what} dimensions must be positive, got {v} in `{s}`")));
        }
        dims[i] = u32::try_from(v).map_err(|_| err(format!("{what} dimension {v} in `{s}` is too large")))?;
    }
    Ok(Grid { x: dims[0], y: dims[1], z: dims[2] })
}

/// `--save NAME=PATH`: write tensor argument NAME to PATH after the launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaveSpec {
    /// The tensor argument to save.
    pub name: String,
    /// Where to write it.
    pub path: PathBuf,
}

/// Parses the value of `--save NAME=PATH`.
pub fn parse_save(s: &str) -> Result<SaveSpec, ArgError> {
    match s.split_once('=') {
        Some((name, path)) if is_identifier(name) && !path.is_empty() => {
            Ok(SaveSpec { name: name.to_string(), path: PathBuf::from(path) })
        }
        _ => Err(ArgError::new("--save", format!("expected NAME=PATH.npy, got `{s}`"))),
    }
}

/// Which backend runs the kernel.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Backend {
    /// The best available: the GPU if there is one, else the interpreter.
    #[default]
    Auto,
    /// The CPU interpreter of the tile IR.
    Interp,
    /// The PTX emulator.
    Emu,
    /// A CUDA GPU.
    Cuda,
    /// The SASS emulator: the kernel's PTX through `ptxas`, the machine code run on the CPU.
    SassEmu,
}

impl Backend {
    /// Parses `auto`, `interp`, `emu`, `cuda` or `sass-emu`.
    pub fn parse(s: &str) -> Option<Backend> {
        Some(match s {
            "auto" => Backend::Auto,
            "interp" => Backend::Interp,
            "emu" => Backend::Emu,
            "cuda" => Backend::Cuda,
            "sass-emu" => Backend::SassEmu,
            _ => return None,
        })
    }
}

/// `trident bench`'s own options.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchOptions {
    /// `--warmup`: untimed launches before timing (default 10).
    pub warmup: usize,
    /// `--reps`: timed launches (default 50, at least 1).
    pub reps: usize,
    /// `--flops`: an expression over the arguments.
    pub flops: Option<String>,
    /// `--bytes`: an expression over the arguments.
    pub bytes: Option<String>,
    /// `--json`.
    pub json: bool,
    /// `--flush-l2`.
    pub flush_l2: bool,
}

impl Default for BenchOptions {
    fn default() -> BenchOptions {
        BenchOptions { warmup: 10, reps: 50, flops: None, bytes: None, json: false, flush_l2: false }
    }
}

/// `trident profile`'s own options.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileFlags {
    /// `--regions` (default scopes, kernel, loops).
    pub regions: Regions,
    /// `--granularity` (default warp).
    pub granularity: Granularity,
    /// `--buffer-records`: ring capacity per group (default 256).
    pub buffer_records: u32,
    /// `--trace`: where to write the Chrome/Perfetto trace.
    pub trace: Option<PathBuf>,
    /// `--csv`: where to write the region table as CSV.
    pub csv: Option<PathBuf>,
    /// `--markers`: zero-cost markers (emulator) instead of probes.
    pub markers: bool,
    /// `--probe-cost`: how replay learns the probes' cost (default: per site, in the kernel).
    pub probe_cost: crate::profile::ProbeCost,
}

impl Default for ProfileFlags {
    fn default() -> ProfileFlags {
        let d = ProfileOptions::default();
        ProfileFlags {
            regions: d.regions,
            granularity: d.granularity,
            buffer_records: d.capacity,
            trace: None,
            csv: None,
            markers: false,
            probe_cost: crate::profile::ProbeCost::PerSite,
        }
    }
}

impl ProfileFlags {
    /// The compile options these flags ask for.
    pub fn options(&self) -> ProfileOptions {
        ProfileOptions {
            regions: self.regions,
            granularity: self.granularity,
            capacity: self.buffer_records,
            mode: if self.markers { ProbeMode::Markers } else { ProbeMode::Probes },
        }
    }
}

/// A kernel run's command line, parsed (arguments not yet materialised).
#[derive(Clone, Debug, PartialEq)]
pub struct RunCommand {
    /// The kernel file.
    pub file: PathBuf,
    /// The kernel's name (`None` when `::KERNEL` was omitted: the file must then hold exactly one kernel).
    pub kernel: Option<String>,
    /// `--grid` (all ones when `--grid` is an expression: see `grid_expr`).
    pub grid: Grid,
    /// `--grid` given as an expression over the scalar arguments and constexprs
    /// (`'cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)'`), evaluated at launch once the
    /// autotuner has chosen the config (see [`crate::grid_expr`]).
    pub grid_expr: Option<GridExpr>,
    /// `--backend` (default `auto`).
    pub backend: Backend,
    /// `--num-warps`, if given.
    pub num_warps: Option<u32>,
    /// `--num-stages`, if given.
    pub num_stages: Option<u32>,
    /// `--timeout`, if given.
    pub timeout: Option<std::time::Duration>,
    /// `--sass-search BUDGET`, if given.
    pub sass_search: Option<String>,
    /// `--seed` (default 0).
    pub seed: u64,
    /// Every `--save`, in order.
    pub saves: Vec<SaveSpec>,
    /// `--debug`.
    pub debug: bool,
    /// `--sanitize`.
    pub sanitize: bool,
    /// `--print-ir-after-all`.
    pub print_ir_after_all: bool,
    /// `trident bench`'s options (their defaults for `trident run`).
    pub bench: BenchOptions,
    /// `trident profile`'s options (`None` for `run` and `bench`).
    pub profile: Option<ProfileFlags>,
    /// The `NAME=VALUE` arguments, in the order given.
    pub args: Vec<ArgSpec>,
}

impl RunCommand {
    /// Parses the words after `trident run` for a kernel.
    pub fn parse<S: AsRef<str>>(words: &[S]) -> Result<RunCommand, ArgError> {
        RunCommand::from_scan(scan(words, &[LineKind::Kernel])?)
    }

    /// Parses the words after `trident bench`: a kernel run's, and the bench options.
    pub fn parse_bench<S: AsRef<str>>(words: &[S]) -> Result<RunCommand, ArgError> {
        RunCommand::from_scan(scan(words, &[LineKind::Kernel, LineKind::Bench])?)
    }

    /// Parses the words after `trident profile`: a kernel run's, and the profiling options.
    /// Profiles need a clock: `--backend interp` is refused here.
    pub fn parse_profile<S: AsRef<str>>(words: &[S]) -> Result<RunCommand, ArgError> {
        let s = scan(words, &[LineKind::Kernel, LineKind::Profile])?;
        let mut cmd = RunCommand::from_scan(s)?;
        if cmd.backend == Backend::Interp {
            return Err(ArgError::new(
                "--backend",
                "profiling runs on emu, sass-emu or cuda: the interpreter runs tile IR, which has no clock",
            ));
        }
        cmd.profile.get_or_insert_with(ProfileFlags::default);
        Ok(cmd)
    }

    fn from_scan(s: Scanned) -> Result<RunCommand, ArgError> {
        let (mut grid, mut grid_expr) = (None, None);
        let mut cmd = RunCommand {
            file: PathBuf::new(),
            kernel: None,
            grid: Grid { x: 1, y: 1, z: 1 },
            grid_expr: None,
            backend: Backend::Auto,
            num_warps: None,
            num_stages: None,
            timeout: None,
            sass_search: None,
            seed: 0,
            saves: vec![],
            debug: false,
            sanitize: false,
            print_ir_after_all: false,
            bench: BenchOptions::default(),
            profile: None,
            args: vec![],
        };
        for (f, value) in s.options {
            let flag = format!("--{}", f.name);
            let v = value.unwrap_or("");
            match f.name {
                // Names make it an expression (`cdiv(n, BLOCK)`); numbers alone are a fixed grid.
                "grid" if v.contains(|c: char| c.is_ascii_alphabetic()) => {
                    grid_expr = Some(GridExpr::parse(v).map_err(|m| ArgError::new(&flag, m))?);
                    grid = Some(Grid { x: 1, y: 1, z: 1 });
                }
                "grid" => grid = Some(parse_grid(v)?),
                "backend" => cmd.backend = parse_backend(&flag, v)?,
                "num-warps" => {
                    let n = parse_u64(&flag, v)?;
                    // 32 warps: 1024 threads, the most a CTA may have.
                    if !n.is_power_of_two() || n > 32 {
                        return Err(ArgError::new(&flag, format!("must be a power of two from 1 to 32, got {n}")));
                    }
                    cmd.num_warps = Some(n as u32);
                }
                "num-stages" => {
                    let n = parse_u64(&flag, v)?;
                    cmd.num_stages = Some(u32::try_from(n).map_err(|_| ArgError::new(&flag, "too large"))?);
                }
                "timeout" => {
                    let secs = v.trim().parse::<f64>().ok().filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9);
                    let secs = secs.ok_or_else(|| {
                        ArgError::new(&flag, format!("expected a positive number of seconds, got `{v}`"))
                    })?;
                    cmd.timeout = Some(std::time::Duration::from_secs_f64(secs));
                }
                "seed" => cmd.seed = parse_u64(&flag, v)?,
                "sass-search" => cmd.sass_search = Some(v.to_string()),
                "save" => cmd.saves.push(parse_save(v)?),
                "debug" => cmd.debug = true,
                "sanitize" => cmd.sanitize = true,
                "print-ir-after-all" => cmd.print_ir_after_all = true,
                "warmup" => cmd.bench.warmup = parse_count(&flag, v)?,
                "reps" => cmd.bench.reps = parse_count(&flag, v)?.max(1),
                "flops" => cmd.bench.flops = Some(v.to_string()),
                "bytes" => cmd.bench.bytes = Some(v.to_string()),
                "json" => cmd.bench.json = true,
                "flush-l2" => cmd.bench.flush_l2 = true,
                "regions" => {
                    let p = cmd.profile.get_or_insert_with(ProfileFlags::default);
                    p.regions = Regions::parse(v).map_err(|m| ArgError::new(&flag, m))?;
                }
                "granularity" => {
                    let p = cmd.profile.get_or_insert_with(ProfileFlags::default);
                    p.granularity = trident_gpu::options::parse_granularity(v).map_err(|m| ArgError::new(&flag, m))?;
                }
                "buffer-records" => {
                    let n = parse_u64(&flag, v)?;
                    let n = u32::try_from(n).ok().filter(|&n| validate_capacity(n).is_ok()).ok_or_else(|| {
                        ArgError::new(&flag, format!("must be a power of two from 1 to 65536 records, got {v}"))
                    })?;
                    cmd.profile.get_or_insert_with(ProfileFlags::default).buffer_records = n;
                }
                "trace" => cmd.profile.get_or_insert_with(ProfileFlags::default).trace = Some(PathBuf::from(v)),
                "csv" => cmd.profile.get_or_insert_with(ProfileFlags::default).csv = Some(PathBuf::from(v)),
                "markers" => cmd.profile.get_or_insert_with(ProfileFlags::default).markers = true,
                "probe-cost" => {
                    cmd.profile.get_or_insert_with(ProfileFlags::default).probe_cost =
                        crate::profile::ProbeCost::parse(v).ok_or_else(|| {
                            ArgError::new(&flag, format!("expected per-site, in-kernel or calibrated, got `{v}`"))
                        })?;
                }
                _ => return Err(ArgError::new(&flag, "unknown option")),
            }
        }
        for w in s.words {
            if !w.contains('=') {
                return Err(ArgError::new(w, "unexpected word: arguments are NAME=VALUE"));
            }
            let spec = parse_arg(w)?;
            if cmd.args.iter().any(|a| a.name == spec.name) {
                return Err(ArgError::new(&spec.name, format!("given twice (again in `{w}`)")));
            }
            cmd.args.push(spec);
        }
        let target = s.target.ok_or_else(|| ArgError::new("FILE.py::KERNEL", "no kernel given"))?;
        let (file, kernel) = split_target(target);
        if file.is_empty() {
            return Err(ArgError::new(target, "no kernel file given"));
        }
        cmd.file = PathBuf::from(file);
        cmd.kernel = kernel;
        cmd.grid = grid.ok_or_else(|| ArgError::new("--grid", "is required"))?;
        cmd.grid_expr = grid_expr;
        for sv in &cmd.saves {
            if !cmd.args.iter().any(|a| a.name == sv.name) {
                return Err(ArgError::new("--save", format!("`{}` is not one of the arguments given", sv.name)));
            }
        }
        Ok(cmd)
    }

    /// Materialises every argument with this command's seed.
    pub fn materialize(&self) -> Result<Vec<Arg>, ArgError> {
        materialize_all(&self.args, self.seed)
    }
}

fn parse_count(flag: &str, v: &str) -> Result<usize, ArgError> {
    v.parse::<usize>().map_err(|_| ArgError::new(flag, format!("expected a count, got `{v}`")))
}

/// `--save I=PATH` of a PTX run: write the tensor given as parameter I (0-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxSave {
    /// The parameter's index.
    pub index: usize,
    /// Where to write it.
    pub path: PathBuf,
}

/// A PTX run's command line, parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct PtxCommand {
    /// The PTX file.
    pub file: PathBuf,
    /// The `.entry` to run (`None`: the file's only one).
    pub entry: Option<String>,
    /// `--grid`.
    pub grid: Grid,
    /// `--block`.
    pub block: Grid,
    /// `--shared`: dynamic shared memory, bytes.
    pub shared: u32,
    /// `--backend`: `Emu` (the default for PTX), `SassEmu` (the default for a cubin), `Cuda`, or
    /// `Auto` (CUDA when there is a device, else the emulator).
    pub backend: Backend,
    /// `--seed`.
    pub seed: u64,
    /// Every `--save`.
    pub saves: Vec<PtxSave>,
    /// The positional VALUEs, one per `.entry` parameter.
    pub values: Vec<String>,
}

impl PtxCommand {
    fn from_scan(s: Scanned) -> Result<PtxCommand, ArgError> {
        let target = s.target.unwrap_or_default();
        let (file, entry) = split_target(target);
        let mut cmd = PtxCommand {
            file: PathBuf::from(file),
            entry,
            grid: Grid { x: 1, y: 1, z: 1 },
            block: Grid { x: 1, y: 1, z: 1 },
            shared: 0,
            // A cubin is machine code: the SASS emulator runs it unless told otherwise.
            backend: if file.ends_with(".cubin") { Backend::SassEmu } else { Backend::Emu },
            seed: 0,
            saves: vec![],
            values: vec![],
        };
        let (mut grid, mut block) = (None, None);
        for (f, value) in s.options {
            let flag = format!("--{}", f.name);
            let v = value.unwrap_or("");
            match f.name {
                "grid" => grid = Some(parse_dims("--grid", "grid", v)?),
                "block" => block = Some(parse_dims("--block", "block", v)?),
                "shared" => {
                    cmd.shared = v.parse().map_err(|_| ArgError::new(&flag, format!("expected bytes, got `{v}`")))?
                }
                "seed" => cmd.seed = parse_u64(&flag, v)?,
                "backend" => {
                    cmd.backend = match parse_backend(&flag, v)? {
                        Backend::Interp => {
                            return Err(ArgError::new(&flag, "PTX runs on emu or cuda, not `interp`"));
                        }
                        b => b,
                    }
                }
                "save" => {
                    let bad = || ArgError::new(&flag, format!("expected I=PATH.npy, got `{v}`"));
                    let (i, p) = v.split_once('=').filter(|(_, p)| !p.is_empty()).ok_or_else(bad)?;
                    let index =
                        i.parse().map_err(|_| ArgError::new(&flag, format!("`{i}` is not a parameter index")))?;
                    cmd.saves.push(PtxSave { index, path: PathBuf::from(p) });
                }
                _ => return Err(ArgError::new(&flag, "unknown option")),
            }
        }
        for w in s.words {
            if w.contains('=') {
                return Err(ArgError::new(w, "PTX parameters are positional VALUEs, not NAME=VALUE"));
            }
            cmd.values.push(w.to_string());
        }
        cmd.grid = grid.ok_or_else(|| ArgError::new("--grid", "is required"))?;
        cmd.block = block.ok_or_else(|| ArgError::new("--block", "is required for PTX"))?;
        Ok(cmd)
    }
}

/// What `trident run` was given: a kernel in a Python file, or PTX.
#[derive(Clone, Debug, PartialEq)]
// One per command line, moved once: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum RunLine {
    /// `FILE.py::KERNEL ...`.
    Kernel(RunCommand),
    /// `FILE.ptx::ENTRY ...`.
    Ptx(PtxCommand),
}

impl RunLine {
    /// Parses the words after `trident run`: a `.ptx` file is run as PTX, anything else as a kernel.
    pub fn parse<S: AsRef<str>>(words: &[S]) -> Result<RunLine, ArgError> {
        let s = scan(words, &[LineKind::Kernel, LineKind::Ptx])?;
        // A cubin runs as machine code the same way (its parameters from the cubin).
        let is_ptx = s.target.is_some_and(|t| {
            let f = split_target(t).0;
            f.ends_with(".ptx") || f.ends_with(".cubin")
        });
        let line = if is_ptx { LineKind::Ptx } else { LineKind::Kernel };
        // Scanned with both lines' options (a word's meaning must not depend on the file
        // named after it); an option of the other line is unknown to this one.
        if let Some((f, _)) = s.options.iter().find(|(f, _)| !f.lines.contains(&line)) {
            return Err(ArgError::new(format!("--{}", f.name), "unknown option"));
        }
        Ok(if is_ptx { RunLine::Ptx(PtxCommand::from_scan(s)?) } else { RunLine::Kernel(RunCommand::from_scan(s)?) })
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::ArgValue;

    #[test]
    fn grids() {
        assert_eq!(parse_grid("64").unwrap().dims(), [64, 1, 1]);
        assert_eq!(parse_grid("2,3").unwrap().dims(), [2, 3, 1]);
        assert_eq!(parse_grid("2,3,4").unwrap().programs(), 24);
        for bad in ["", "0", "-1", "1,2,3,4", "a", "1,,2", "5000000000"] {
            let e = parse_grid(bad).unwrap_err();
            assert_eq!(e.arg, "--grid", "{bad}");
        }
    }

    #[test]
    fn saves() {
        assert_eq!(parse_save("y=out/y.npy").unwrap(), SaveSpec { name: "y".into(), path: "out/y.npy".into() });
        assert!(parse_save("y").is_err());
        assert!(parse_save("=a.npy").is_err());
        assert!(parse_save("y=").is_err());
    }

    #[test]
    fn run_command() {
        let words = "kernels/softmax.py::softmax_kernel --grid 4 --backend=interp --num-warps 8 --seed 7 \
                     --save y=/tmp/y.npy x=randn:f32:4x33 y=empty:f32:4x33 n_cols=33 BLOCK=64";
        let words: Vec<&str> = words.split_whitespace().collect();
        let cmd = RunCommand::parse(&words).unwrap();
        assert_eq!(cmd.file, PathBuf::from("kernels/softmax.py"));
        assert_eq!(cmd.kernel.as_deref(), Some("softmax_kernel"));
        assert_eq!(cmd.grid.dims(), [4, 1, 1]);
        assert_eq!(cmd.backend, Backend::Interp);
        assert_eq!((cmd.num_warps, cmd.num_stages, cmd.seed), (Some(8), None, 7));
        assert_eq!(cmd.args.len(), 4);
        let args = cmd.materialize().unwrap();
        assert_eq!(args[2].value, ArgValue::Int(33));

        let bad = |s: &str| RunCommand::parse(&s.split_whitespace().collect::<Vec<_>>()).unwrap_err();
        assert_eq!(bad("k.py::f n=1").arg, "--grid");
        assert_eq!(bad("k.py::f --grid 1 n=1 n=2").arg, "n");
        assert_eq!(bad("k.py::f --grid 1 --num-warps 3").arg, "--num-warps");
        assert_eq!(bad("k.py::f --grid 1 --backend tpu").arg, "--backend");
        assert_eq!(bad("k.py::f --grid 1 --frobnicate 1").arg, "--frobnicate");
        assert_eq!(bad("k.py::f --grid 1 --save y=y.npy x=1").arg, "--save");
        assert_eq!(bad("k.py::f --grid").arg, "--grid");
        assert_eq!(bad("k.py::f other --grid 1").arg, "other");
        assert_eq!(bad("--grid 1").arg, "FILE.py::KERNEL");
        assert_eq!(bad("k.py::f --grid 1 --block 32").arg, "--block");
        assert_eq!(bad("k.py::f --grid 1 --debug=yes").arg, "--debug");
    }

    #[test]
    fn options_come_anywhere_and_switches_take_no_value() {
        let words = ["--debug", "k.py::f", "n=1", "--grid", "2", "--print-ir-after-all"];
        let cmd = RunCommand::parse(&words).unwrap();
        assert!(cmd.debug && cmd.print_ir_after_all);
        assert_eq!((cmd.file, cmd.grid.dims()), (PathBuf::from("k.py"), [2, 1, 1]));
        // A bench option is unknown to `run`, known to `bench`.
        let words = ["k.py::f", "--grid", "1", "--reps=7", "--json", "--warmup", "0", "--flops", "2*n"];
        assert_eq!(RunCommand::parse(&words).unwrap_err().arg, "--reps");
        let b = RunCommand::parse_bench(&words).unwrap().bench;
        assert_eq!((b.reps, b.warmup, b.json, b.flops.as_deref()), (7, 0, true, Some("2*n")));
        assert_eq!(RunCommand::parse_bench(&["k.py", "--grid", "1", "--reps", "x"]).unwrap_err().arg, "--reps");
    }

    #[test]
    fn ptx_lines() {
        let words =
            "--grid 4 crates/emu/tests/data/vadd.ptx --block 128,1 ones:f32:500 500 -3 --save 2=o.npy --shared=64";
        let words: Vec<&str> = words.split_whitespace().collect();
        let RunLine::Ptx(p) = RunLine::parse(&words).unwrap() else { panic!("not a PTX line") };
        assert_eq!((p.grid.dims(), p.block.dims(), p.shared), ([4, 1, 1], [128, 1, 1], 64));
        assert_eq!(
            (p.backend, p.entry, p.values),
            (Backend::Emu, None, vec!["ones:f32:500".to_string(), "500".into(), "-3".into()])
        );
        assert_eq!(p.saves, vec![PtxSave { index: 2, path: "o.npy".into() }]);
        let bad = |s: &str| RunLine::parse(&s.split_whitespace().collect::<Vec<_>>()).unwrap_err();
        assert_eq!(bad("v.ptx --grid 1").arg, "--block");
        assert_eq!(bad("v.ptx::e --block 1").arg, "--grid");
        assert_eq!(bad("v.ptx --grid 1 --block 0").arg, "--block");
        assert_eq!(bad("v.ptx --grid 1 --block 1 --num-warps 4").arg, "--num-warps");
        assert_eq!(bad("v.ptx --grid 1 --block 1 --backend interp").arg, "--backend");
        assert_eq!(bad("v.ptx --grid 1 --block 1 --save x=o.npy").arg, "--save");
        assert_eq!(bad("v.ptx --grid 1 --block 1 n=3").arg, "n=3");
        assert!(matches!(RunLine::parse(&["k.py::f", "--grid", "1"]).unwrap(), RunLine::Kernel(_)));
    }

    #[test]
    fn profile_lines() {
        let words = "kernels/softmax.py::softmax_kernel --grid 4 --backend emu --regions kernel,loads \
                     --granularity warpgroup --buffer-records=64 --trace t.json --csv t.csv x=randn:f32:4x33 n_cols=33";
        let words: Vec<&str> = words.split_whitespace().collect();
        let cmd = RunCommand::parse_profile(&words).unwrap();
        let p = cmd.profile.clone().unwrap();
        assert_eq!(
            (p.regions.words(), p.granularity, p.buffer_records),
            ("kernel,loads".into(), Granularity::Warpgroup, 64)
        );
        assert_eq!((&p.trace, &p.csv), (&Some(PathBuf::from("t.json")), &Some(PathBuf::from("t.csv"))));
        assert_eq!((p.options().capacity, p.options().mode), (64, ProbeMode::Probes));
        let m = RunCommand::parse_profile(&["k.py::f", "--grid", "1", "--markers"]).unwrap().profile.unwrap();
        assert_eq!(m.options().mode, ProbeMode::Markers);
        // Defaults: scopes, the kernel and loops, per warp, 256 records.
        let d = RunCommand::parse_profile(&["k.py::f", "--grid", "1"]).unwrap().profile.unwrap();
        assert_eq!(
            (d.regions.words(), d.granularity, d.buffer_records),
            ("scopes,kernel,loops".into(), Granularity::Warp, 256)
        );
        let bad = |s: &str| RunCommand::parse_profile(&s.split_whitespace().collect::<Vec<_>>()).unwrap_err();
        assert_eq!(bad("k.py::f --grid 1 --regions frames").arg, "--regions");
        assert!(bad("k.py::f --grid 1 --regions frames").to_string().contains("unknown region kind `frames`"));
        assert_eq!(bad("k.py::f --grid 1 --buffer-records 100").arg, "--buffer-records");
        assert!(bad("k.py::f --grid 1 --buffer-records 100").to_string().contains("power of two"));
        assert_eq!(bad("k.py::f --grid 1 --buffer-records 0").arg, "--buffer-records");
        assert_eq!(bad("k.py::f --grid 1 --granularity thread").arg, "--granularity");
        assert_eq!(bad("k.py::f --grid 1 --backend interp").arg, "--backend");
        assert_eq!(bad("k.py::f --grid 1 --reps 3").arg, "--reps");
        // `run` does not take profiling options.
        assert_eq!(RunCommand::parse(&["k.py::f", "--grid", "1", "--regions", "kernel"]).unwrap_err().arg, "--regions");
        assert_eq!(RunCommand::parse(&["k.py::f", "--grid", "1"]).unwrap().profile, None);
    }

    #[test]
    fn help_lists_each_lines_options() {
        let run = flags_help(&[LineKind::Kernel], &[]);
        assert!(run.contains("--num-warps N") && run.contains("--debug ") && !run.contains("--block"), "{run}");
        let ptx_only = flags_help(&[LineKind::Ptx], &[LineKind::Kernel]);
        assert!(ptx_only.contains("--block") && !ptx_only.contains("--grid"), "{ptx_only}");
        let bench = flags_help(&[LineKind::Bench], &[]);
        assert!(bench.contains("--flush-l2") && !bench.contains("--grid"), "{bench}");
    }
}
