//! Every environment variable the runtime reads, read here and nowhere else in the crate,
//! so that what changes a compilation is visible in one place and the cache key is built
//! from the very values the compilation uses.
//!
//! | variable | effect | how it reaches the cache key |
//! |---|---|---|
//! | `TRITON_F32_DEFAULT` | `ieee`, `tf32` or `tf32x3`: the precision of `tl.dot` on fp32 inputs that do not say (Triton's variable; default tf32) | [`compile_options`] → the `default_dot_precision` option |
//! | `TRIDENT_EMU_TARGET` | the architecture the emulator backend compiles for: `sm_80` (default), `sm_90`, `sm_90a` | the target (`emu-sm_90a`) |
//! | `TRIDENT_EMU_MACHINE` | the GPU whose timing the emulators model: `h100` (the PTX emulator's default; the SASS emulator's for sm_90), `h200` (the H100's SMs, the H200's measured DRAM bandwidth), `a100` (the SASS emulator's default for sm_80) — modelled times, autotuning on the emulators, and `trident bench` follow it | the autotuner's choices (its tuner id) |
//! | `TRIDENT_NO_WGMMA` | set (to anything): on compute capability 9.0, compile for sm_90 (`mma.sync`) instead of sm_90a (`wgmma`) | the target (`cuda-sm_90`) |
//! | `TRIDENT_DUMP_IR` | `1`: print the IR after every pass (also read by trident-opt and trident-gpu); compiles bypass the cache so the dumps happen | not keyed: nothing is cached |
//! | any `X` a kernel file reads at module level (`os.environ.get("X")`, `os.getenv("X")`, `os.environ["X"]`) | whatever the kernel does with it (the front end evaluates that code) | `env:X` options ([`crate::cache::key`]) |
//! | `TRIDENT_CACHE` | `0`: no compile cache (every launch compiles; tuning choices stay in memory) | — |
//! | `TRIDENT_CACHE_DIR` | the cache directory (default `$XDG_CACHE_HOME/trident`, else `~/.cache/trident`; `~/Library/Caches/trident` on macOS, `%LOCALAPPDATA%\trident` on Windows) | — |
//! | `TRIDENT_CACHE_MAX_BYTES` | the cache's size limit (default 1 GiB; `512M`, `2GiB`) | — |
//! | `TRIDENT_AUTOTUNE_CACHE` | `0`: tuning choices are not saved to (or read from) disk | — |
//! | `TRIDENT_AUTOTUNE_INTERP` | `1`: tune on the interpreter too (wall clock) | — |
//! | `TRIDENT_PRINT_AUTOTUNING` | `1`: print the chosen config after each tuning, on stderr | — |
//! | `TRIDENT_SASS_SHUFFLE` | `SEED:MOVES` (e.g. `7:50`): on a CUDA device, load each kernel's cubin after that many random legal SASS moves (`trident sass shuffle`, repaired and verified) — the schedule prong's check that moved code computes the same; an error if there is no cubin or the shuffle fails | — (applied at load, after the cache) |
//! | `TRIDENT_SASS_SHUFFLE_KEEP` | a directory: with `TRIDENT_SASS_SHUFFLE`, each shuffled cubin is also written there (`ENTRY-HASH-SEED-MOVES.cubin`, the hash the original cubin's) for a post-mortem (`scripts/gpu-sass-bisect`) | — |
//! | `TRIDENT_SASS_SEARCH` | a budget (`30s`, `500`): every launch on the SASS emulator or CUDA runs the schedule a search of its SASS found (as `--sass-search`; searched once, kept in the cache directory's `schedules/`) | the cubin's hash |
//! | `TRIDENT_SANITIZE` | `1`: sanitize mode for every launch on the emulator or CUDA (as `--sanitize`, `sanitize=True`): bounds checks of every global access in the kernel | `sanitize=true` |
//! | `TRIDENT_PINGPONG` | `0`: no ping-pong turns between the two consumer warpgroups of a warp-specialized attention loop on sm_90a (`trident_gpu::passes::pingpong`; on by default), to compare | `pingpong=false` |
//! | `TRIDENT_SETMAXNREG` | `1`: a warp-specialized kernel with two consumer warpgroups on sm_90a gets a producer warpgroup that gives its registers to the consumers (`setmaxnreg`; off by default) | `setmaxnreg=true` |
//! | `TRIDENT_SPLIT_LOOPS` | `1`: the tile pass `split-loops` (`trident_opt::split_loops`: a loop's iterations where a bounds or causal mask is all-true run in a copy without it; off by default: on an H200 it made attention 1.18-1.41× slower, `bench/RESULTS.md`) | `split_loops=true` |
//! | `TRIDENT_TIMEOUT` | seconds a launch on the interpreter or the emulator may run before it is stopped with an error (as `--timeout`; default none) | — |
//!
//! Switches read `1`, `true`, `on` or `yes` as on and `0`, `false`, `off` or `no` as off
//! (any case, surrounding spaces ignored). Values are read when they are needed, not once
//! per process, so a test may change them between launches.
//!
//! Read by the crates below, not here: `TRIDENT_PTXAS` and `TRIDENT_NVDISASM` (where
//! trident-gpu finds the tools), `TRIDENT_CUDA_DRIVER` (trident-cuda's driver library).

use std::path::PathBuf;

use trident_front::CompileOptions;
use trident_gpu::Target;

fn value(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Whether switch `name` is on (unset: off).
fn on(name: &str) -> bool {
    value(name).is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "on" | "yes"))
}

/// Whether switch `name` is off (unset: on).
fn off(name: &str) -> bool {
    value(name).is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "0" | "false" | "off" | "no"))
}

/// The front end's options for a compilation: Triton's defaults as the environment changes
/// them (`TRITON_F32_DEFAULT`), with `debug` and `profile_scopes` (Proton's `pl.scope`s
/// become `record` ops) as the launch asks.
pub fn compile_options(debug: bool, profile_scopes: bool) -> CompileOptions {
    CompileOptions { debug, profile_scopes, ..CompileOptions::from_env() }
}

/// The architecture the emulator backend compiles for: `TRIDENT_EMU_TARGET`, else sm_80.
pub fn emu_target() -> Result<Target, String> {
    match value("TRIDENT_EMU_TARGET") {
        None => Ok(Target::Sm80),
        Some(s) => Target::parse(s.trim())
            .ok_or_else(|| format!("TRIDENT_EMU_TARGET=`{s}` is not a target (sm_80, sm_90 or sm_90a)")),
    }
}

/// `TRIDENT_EMU_MACHINE`: the machine the emulators' timing models, when set.
pub fn emu_machine() -> Result<Option<trident_emu::MachineModel>, String> {
    match value("TRIDENT_EMU_MACHINE") {
        None => Ok(None),
        Some(v) if v.trim().is_empty() => Ok(None),
        Some(v) => trident_emu::MachineModel::named(&v)
            .map(Some)
            .ok_or_else(|| format!("TRIDENT_EMU_MACHINE={v:?}: expected h100, h200 or a100")),
    }
}

/// Whether compute capability 9.0 gets sm_90a's warpgroup MMA: yes unless `TRIDENT_NO_WGMMA` is set.
pub fn wgmma_allowed() -> bool {
    std::env::var_os("TRIDENT_NO_WGMMA").is_none()
}

/// `TRIDENT_SASS_SHUFFLE=SEED:MOVES`, when set.
pub fn sass_shuffle() -> Result<Option<(u64, usize)>, String> {
    let Some(v) = value("TRIDENT_SASS_SHUFFLE").filter(|v| !v.trim().is_empty()) else { return Ok(None) };
    let parsed = v.trim().split_once(':').and_then(|(s, m)| Some((s.trim().parse().ok()?, m.trim().parse().ok()?)));
    parsed.map(Some).ok_or_else(|| format!("TRIDENT_SASS_SHUFFLE={v:?}: expected SEED:MOVES, e.g. 7:50"))
}

/// `TRIDENT_SASS_SHUFFLE_KEEP`: where shuffled cubins are kept, when set.
pub fn sass_shuffle_keep() -> Option<String> {
    value("TRIDENT_SASS_SHUFFLE_KEEP").filter(|v| !v.trim().is_empty())
}

/// `TRIDENT_TIMEOUT`: the time limit of a CPU launch, when set to a positive number of seconds.
pub fn timeout() -> Result<Option<std::time::Duration>, String> {
    match value("TRIDENT_TIMEOUT") {
        None => Ok(None),
        Some(v) if v.trim().is_empty() => Ok(None),
        Some(v) => match v.trim().parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Some(std::time::Duration::from_secs_f64(s))),
            _ => Err(format!("TRIDENT_TIMEOUT={v:?}: expected a positive number of seconds")),
        },
    }
}

/// Whether `TRIDENT_SANITIZE` asks for sanitize mode.
pub fn sanitize() -> bool {
    on("TRIDENT_SANITIZE")
}

/// `TRIDENT_SASS_SEARCH`: the budget of a schedule search for every launch on the SASS
/// emulator or CUDA (as `--sass-search`), when set and not blank.
pub fn sass_search() -> Option<String> {
    value("TRIDENT_SASS_SEARCH").filter(|v| !v.trim().is_empty())
}

/// Whether `TRIDENT_DUMP_IR` asks for the IR after every pass.
pub fn dump_ir() -> bool {
    on("TRIDENT_DUMP_IR")
}

/// The value of a variable a kernel file reads at module level, as its cache key records it.
pub fn source_variable(name: &str) -> String {
    value(name).unwrap_or_else(|| "<unset>".into())
}

/// `TRIDENT_PINGPONG`: ping-pong turns where they apply (unset: on).
pub fn pingpong() -> bool {
    !off("TRIDENT_PINGPONG")
}

/// `TRIDENT_SPLIT_LOOPS`: the tile pass `split-loops` (unset: off).
pub fn split_loops() -> bool {
    on("TRIDENT_SPLIT_LOOPS")
}

/// `TRIDENT_SETMAXNREG`: producer warpgroups that give registers to the consumers (unset: off).
pub fn setmaxnreg() -> bool {
    on("TRIDENT_SETMAXNREG")
}

/// Whether the compile cache is used (`TRIDENT_CACHE` is not off).
pub fn cache_enabled() -> bool {
    !off("TRIDENT_CACHE")
}

/// `TRIDENT_CACHE_DIR`, when set and not empty.
pub fn cache_dir() -> Option<PathBuf> {
    path("TRIDENT_CACHE_DIR")
}

/// Whether `TRIDENT_CACHE_DIR` is set but empty (an error, not the default directory).
pub fn cache_dir_is_empty() -> bool {
    std::env::var_os("TRIDENT_CACHE_DIR").is_some_and(|v| v.is_empty())
}

/// The platform's per-user cache directory, where the compile cache goes by default:
/// `%LOCALAPPDATA%` on Windows, `~/Library/Caches` on macOS, else `$XDG_CACHE_HOME`
/// (when absolute) or `~/.cache`.
pub fn user_cache_dir() -> Option<PathBuf> {
    if cfg!(windows) {
        path("LOCALAPPDATA")
    } else if cfg!(target_os = "macos") {
        path("HOME").map(|h| h.join("Library").join("Caches"))
    } else {
        path("XDG_CACHE_HOME").filter(|p| p.is_absolute()).or_else(|| path("HOME").map(|h| h.join(".cache")))
    }
}

fn path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// `TRIDENT_CACHE_MAX_BYTES` as written, when set and not blank (the cache parses it).
pub fn cache_max_bytes() -> Option<String> {
    value("TRIDENT_CACHE_MAX_BYTES").filter(|v| !v.trim().is_empty())
}

/// Whether autotuning choices persist on disk (`TRIDENT_AUTOTUNE_CACHE` is not off).
pub fn autotune_cache() -> bool {
    !off("TRIDENT_AUTOTUNE_CACHE")
}

/// Whether launches on the interpreter tune too (`TRIDENT_AUTOTUNE_INTERP` is on).
pub fn autotune_interp() -> bool {
    on("TRIDENT_AUTOTUNE_INTERP")
}

/// Whether the autotuner prints its choice (`TRIDENT_PRINT_AUTOTUNING` is on).
pub fn print_autotuning() -> bool {
    on("TRIDENT_PRINT_AUTOTUNING")
}
