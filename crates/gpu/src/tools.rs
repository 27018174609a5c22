//! NVIDIA's command-line tools: finding `ptxas`/`nvdisasm`, running them, and reading
//! `ptxas -v`'s resource report (registers, shared memory, spills).
//!
//! Lookup order for each tool: the environment variable (`TRIDENT_PTXAS`,
//! `TRIDENT_NVDISASM`, written to `.tools/env` by `scripts/install-tools`), then
//! `.tools/py/nvidia/*/bin/<tool>` in the current directory or any parent (and in this
//! source tree's workspace), then `PATH`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// A tool could not be found or run, or rejected its input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError(pub String);

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ToolError {}

/// Which tool.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Tool {
    Ptxas,
    Nvdisasm,
    /// Reads a rewritten cubin back (the schedule prong's check that it is still valid).
    Cuobjdump,
}

impl Tool {
    pub fn exe(self) -> &'static str {
        match self {
            Tool::Ptxas => "ptxas",
            Tool::Nvdisasm => "nvdisasm",
            Tool::Cuobjdump => "cuobjdump",
        }
    }

    fn env_var(self) -> &'static str {
        match self {
            Tool::Ptxas => "TRIDENT_PTXAS",
            Tool::Nvdisasm => "TRIDENT_NVDISASM",
            Tool::Cuobjdump => "TRIDENT_CUOBJDUMP",
        }
    }
}

fn is_executable(p: &Path) -> bool {
    p.is_file()
}

/// `.tools/py/nvidia/*/bin/<exe>` under `root`.
fn in_tools_dir(root: &Path, exe: &str) -> Option<PathBuf> {
    let nvidia = root.join(".tools").join("py").join("nvidia");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&nvidia).ok()?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    dirs.sort();
    dirs.into_iter().map(|d| d.join("bin").join(exe)).find(|p| is_executable(p))
}

/// Finds a tool, or explains how to install it.
pub fn find(tool: Tool) -> Result<PathBuf, ToolError> {
    if let Some(p) = std::env::var_os(tool.env_var()) {
        let p = PathBuf::from(p);
        if is_executable(&p) {
            return Ok(p);
        }
        return Err(ToolError(format!(
            "{} is set to {}, which is not a file; run scripts/install-tools (and source .tools/env)",
            tool.env_var(),
            p.display()
        )));
    }
    let mut roots: Vec<PathBuf> = vec![];
    if let Ok(cwd) = std::env::current_dir() {
        roots.extend(cwd.ancestors().map(Path::to_path_buf));
    }
    // The workspace this crate was built from (crates/gpu/../..).
    roots.extend(Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().map(Path::to_path_buf));
    for r in &roots {
        if let Some(p) = in_tools_dir(r, tool.exe()) {
            return Ok(p);
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(tool.exe());
            if is_executable(&p) {
                return Ok(p);
            }
        }
    }
    Err(ToolError(format!(
        "`{}` not found: run scripts/install-tools (it installs ptxas and nvdisasm into .tools/), \
         or set {} to the tool's path",
        tool.exe(),
        tool.env_var()
    )))
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, ToolError> {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let dir = std::env::temp_dir().join(format!("trident-{}-{n}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| ToolError(format!("cannot create {}: {e}", dir.display())))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What `ptxas -v` says about one entry function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceUsage {
    pub function: String,
    pub registers: u32,
    /// Static shared memory (dynamic shared memory is not counted by ptxas).
    pub shared_bytes: u32,
    pub stack_bytes: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
}

/// The result of assembling PTX.
#[derive(Clone, Debug, Default)]
pub struct PtxasOutput {
    pub cubin: Vec<u8>,
    /// One entry per function `ptxas -v` reported on.
    pub usage: Vec<ResourceUsage>,
    /// `ptxas warning` lines (our PTX should produce none).
    pub warnings: Vec<String>,
    /// Everything ptxas printed.
    pub log: String,
}

/// Assembles `ptx` for `arch` (`sm_80`, `sm_90`, `sm_90a`) with `-v`.
pub fn ptxas(ptx: &str, arch: &str) -> Result<PtxasOutput, ToolError> {
    ptxas_with(ptx, arch, &[])
}

/// [`ptxas`] with extra command-line options (e.g. `-lineinfo`, `-O0`).
pub fn ptxas_with(ptx: &str, arch: &str, extra: &[&str]) -> Result<PtxasOutput, ToolError> {
    let exe = find(Tool::Ptxas)?;
    let dir = Scratch::new()?;
    let input = dir.0.join("kernel.ptx");
    let output = dir.0.join("kernel.cubin");
    std::fs::write(&input, ptx).map_err(|e| ToolError(format!("cannot write {}: {e}", input.display())))?;
    let out = Command::new(&exe)
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .args(extra)
        .arg("-o")
        .arg(&output)
        .arg(&input)
        .output()
        .map_err(|e| ToolError(format!("cannot run {}: {e}", exe.display())))?;
    let log = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        return Err(ToolError(format!("ptxas rejected the PTX ({}):\n{log}", out.status)));
    }
    let cubin = std::fs::read(&output).map_err(|e| ToolError(format!("cannot read {}: {e}", output.display())))?;
    let warnings = log.lines().filter(|l| l.contains("warning")).map(str::to_string).collect();
    Ok(PtxasOutput { cubin, usage: parse_usage(&log), warnings, log })
}

/// Disassembles a cubin with `nvdisasm` (SASS text).
pub fn nvdisasm(cubin: &[u8], extra: &[&str]) -> Result<String, ToolError> {
    let exe = find(Tool::Nvdisasm)?;
    let dir = Scratch::new()?;
    let input = dir.0.join("kernel.cubin");
    std::fs::write(&input, cubin).map_err(|e| ToolError(format!("cannot write {}: {e}", input.display())))?;
    let out = Command::new(&exe)
        .args(extra)
        .arg(&input)
        .output()
        .map_err(|e| ToolError(format!("cannot run {}: {e}", exe.display())))?;
    if !out.status.success() {
        return Err(ToolError(format!("nvdisasm failed: {}", String::from_utf8_lossy(&out.stderr))));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn number_before(line: &str, unit: &str) -> Option<u32> {
    let i = line.find(unit)?;
    line[..i].split(|c: char| !c.is_ascii_digit()).rfind(|s| !s.is_empty())?.parse().ok()
}

/// Parses `ptxas -v` output: per function, registers, shared memory, stack and spills.
pub fn parse_usage(log: &str) -> Vec<ResourceUsage> {
    let mut out: Vec<ResourceUsage> = vec![];
    for line in log.lines() {
        if let Some(rest) = line.split("Function properties for ").nth(1) {
            let name = rest.trim().to_string();
            if out.last().is_none_or(|u| u.function != name) {
                out.push(ResourceUsage { function: name, ..Default::default() });
            }
        } else if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or("").to_string();
            if !out.iter().any(|u| u.function == name) {
                out.push(ResourceUsage { function: name, ..Default::default() });
            }
        } else if let Some(u) = out.last_mut() {
            if line.contains("bytes stack frame") {
                u.stack_bytes = number_before(line, "bytes stack frame").unwrap_or(0);
                u.spill_stores = number_before(line, "bytes spill stores").unwrap_or(0);
                u.spill_loads = number_before(line, "bytes spill loads").unwrap_or(0);
            } else if line.contains("Used") && line.contains("registers") {
                u.registers = number_before(line, "registers").unwrap_or(0);
                u.shared_bytes = number_before(line, "bytes smem").unwrap_or(0);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ptxas_verbose_output() {
        let log = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'matmul' for 'sm_80'\n\
ptxas info    : Function properties for matmul\n\
    0 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n\
ptxas info    : Used 168 registers, used 1 barriers, 16384 bytes smem, 412 bytes cmem[0]\n";
        let u = parse_usage(log);
        assert_eq!(u.len(), 1);
        assert_eq!(
            u[0],
            ResourceUsage {
                function: "matmul".into(),
                registers: 168,
                shared_bytes: 16384,
                stack_bytes: 0,
                spill_stores: 8,
                spill_loads: 12
            }
        );
    }
}
