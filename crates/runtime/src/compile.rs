//! Compiling one specialization through the compile cache.
//!
//! A [`Request`] names what to compile: the kernel, its launch arguments as
//! the front end sees them, the constexprs a config adds, warps and stages,
//! and the [`CodeTarget`]. [`compile`] evaluates `@triton.heuristics`, then
//! looks the specialization up:
//!
//! 1. in the cache's in-process memo, under a [`MemoKey`] made of the
//!    program's source id (hashed once when the program was loaded), the
//!    kernel and the specialization text — no source is hashed and no file
//!    is read; the [`Session`] hands back the kernel already decoded;
//! 2. on disk, under a [`CacheKey`] of the source text, the compiler version,
//!    the signature with its specialization attributes, the constexprs, the
//!    options and the target; the entry is decoded (the tile IR re-parsed,
//!    its source files restored);
//! 3. otherwise it compiles and stores the entry.
//!
//! An entry holds `kernel.ttir` (tile IR after the tile passes, printed with
//! locations), for GPU targets `kernel.ttgir`, `kernel.ptx` and — for CUDA
//! when `ptxas` is found — `kernel.cubin`, plus `kernel.json`
//! ([`KernelMeta`]): parameter bindings, constexpr values, the source files
//! other than the kernel's own (the prelude), and the PTX launch facts.
//!
//! Compiling with IR dumps on (`print_ir_after_all`, `TRIDENT_DUMP_IR=1`)
//! bypasses the cache so that the dumps happen.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use trident_core::DType;
use trident_front::{ArgInfo, CompileOptions, ConstValue, KernelInfo, ParamBinding};
use trident_gpu::{AbiParam, AbiType, GpuOptions, PtxKernel, Target};
use trident_ir::print::{print_module, PrintOptions};
use trident_ir::{Module, SourceFile};

use crate::autotune::TuneValue;
use crate::cache::{BuildInfo, CacheId, CacheKey, Entry, EntryData, MemoKey, Outcome};
use crate::launch::{KernelProgram, RunError};
use crate::session::Session;

/// What compiled code is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CodeTarget {
    /// Tile IR only: the interpreter, `trident compile --emit ttir`.
    Tile,
    /// PTX for the emulator.
    Emu(Target),
    /// PTX (and a cubin when `ptxas` is found) for a CUDA device.
    Cuda(Target),
}

impl CodeTarget {
    /// The target's name in cache keys and listings: `tile`, `emu-sm_80`, `cuda-sm_90`.
    pub fn name(self) -> String {
        match self {
            CodeTarget::Tile => "tile".to_string(),
            CodeTarget::Emu(t) => format!("emu-{}", t.arch()),
            CodeTarget::Cuda(t) => format!("cuda-{}", t.arch()),
        }
    }

    /// The GPU target, for GPU code.
    pub fn gpu(self) -> Option<Target> {
        match self {
            CodeTarget::Tile => None,
            CodeTarget::Emu(t) | CodeTarget::Cuda(t) => Some(t),
        }
    }
}

/// A scalar value kept in an entry: a runtime parameter's default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ScalarDefault {
    /// An int.
    Int(i64),
    /// A float.
    Float(f64),
    /// A bool.
    Bool(bool),
}

/// One Python parameter of the kernel and how this compilation passes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParamSlot {
    /// The parameter's name.
    pub name: String,
    /// Its index among the IR function's parameters when it is passed at run
    /// time; `None` when it is folded into the code (constexpr, or an int specialized as 1).
    pub ir_index: Option<usize>,
    /// The value passed when the launch leaves it out (its default in the source).
    pub default: Option<ScalarDefault>,
}

/// GPU code: PTX and how to launch it, and the cubin when `ptxas` made one.
#[derive(Clone)]
pub struct GpuCode {
    /// The PTX and its launch facts.
    pub ptx: PtxKernel,
    /// GPU IR (tile IR with layouts) as text.
    pub ttgir: String,
    /// The cubin `ptxas` assembled (CUDA targets, when `ptxas` is found).
    pub cubin: Option<Vec<u8>>,
    /// Registers per thread, when `ptxas` reported them.
    pub registers: Option<u32>,
    /// Bytes spilled (stores), when `ptxas` reported them.
    pub spills: Option<u32>,
    emu: OnceLock<Result<Arc<trident_emu::Module>, String>>,
    /// The module loaded on CUDA device 0, once per loaded kernel.
    pub(crate) cuda: OnceLock<Result<crate::gpu::CudaLoaded, String>>,
}

impl GpuCode {
    fn new(ptx: PtxKernel, ttgir: String, cubin: Option<Vec<u8>>, registers: Option<u32>, spills: Option<u32>) -> Self {
        GpuCode { ptx, ttgir, cubin, registers, spills, emu: OnceLock::new(), cuda: OnceLock::new() }
    }

    /// The PTX parsed by the emulator (once per loaded kernel).
    pub fn emu_module(&self) -> Result<Arc<trident_emu::Module>, RunError> {
        self.emu
            .get_or_init(|| trident_emu::Module::parse(&self.ptx.ptx).map(Arc::new).map_err(|e| e.to_string()))
            .clone()
            .map_err(|e| RunError::msg(format!("emulator: {e}")))
    }
}

impl std::fmt::Debug for GpuCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuCode")
            .field("entry", &self.ptx.entry)
            .field("target", &self.ptx.target)
            .field("shared_bytes", &self.ptx.shared_bytes)
            .field("cubin_bytes", &self.cubin.as_ref().map(Vec::len))
            .finish()
    }
}

/// A kernel compiled for one specialization (argument types and
/// specialization attributes, constexpr values, options, target).
#[derive(Debug)]
pub struct CompiledKernel {
    /// Name of the kernel function in `module`.
    pub kernel: String,
    /// Tile IR after the tile passes; `module.files[0]` is the kernel's source file.
    pub module: Module,
    /// Every Python parameter, in order, and how it is passed.
    pub params: Vec<ParamSlot>,
    /// The value of every constexpr the code was compiled with (given,
    /// from an autotune config, or from `@triton.heuristics`), in parameter order.
    pub constexprs: Vec<(String, TuneValue)>,
    /// Warps per program for GPU targets.
    pub num_warps: u32,
    /// Software-pipelining depth for GPU targets.
    pub num_stages: u32,
    /// What the code is for.
    pub target: CodeTarget,
    /// PTX (and cubin) for GPU targets.
    pub gpu: Option<GpuCode>,
    /// What `tl.static_print` printed when this was compiled (empty when it came from the cache).
    pub static_prints: Vec<String>,
    /// The cache entry it was stored in or loaded from.
    pub cache_id: Option<CacheId>,
    /// How long compiling it took (when it was built, possibly by an earlier process).
    pub build_time: Duration,
    /// Problems met that did not stop compilation (e.g. `ptxas` rejected the PTX,
    /// so the driver's JIT will be used).
    pub notes: Vec<String>,
}

/// A failed compilation.
#[derive(Clone, Debug)]
pub struct CompileError {
    /// What went wrong, rendered.
    pub error: RunError,
    /// The kernel needs more than the target has (shared memory): the
    /// autotuner skips such configs as out of resources.
    pub out_of_resources: bool,
}

impl From<RunError> for CompileError {
    fn from(error: RunError) -> CompileError {
        CompileError { error, out_of_resources: false }
    }
}

/// Everything one compilation depends on besides the source.
pub(crate) struct Request<'a> {
    pub prog: &'a KernelProgram,
    pub kernel: &'a KernelInfo,
    /// Launch arguments and config constexprs; heuristics are added by [`compile`].
    pub infos: Vec<(String, ArgInfo)>,
    pub num_warps: u32,
    pub num_stages: u32,
    pub debug: bool,
    pub print_ir_after_all: bool,
    pub target: CodeTarget,
}

/// `kernel.json`: what an entry needs besides its IR and PTX to be launched.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelMeta {
    /// The kernel function's name.
    pub kernel: String,
    /// Parameter bindings.
    pub params: Vec<ParamSlot>,
    /// Constexpr values.
    pub constexprs: Vec<(String, TuneValue)>,
    /// The module's source files by path; the text is kept only for files the
    /// program does not provide (`None`: the kernel file, the prelude and
    /// imported project files are restored from the program on a hit).
    pub files: Vec<(String, Option<String>)>,
    /// Warps and stages.
    pub num_warps: u32,
    /// Stages.
    pub num_stages: u32,
    /// PTX launch facts, for GPU targets.
    pub gpu: Option<GpuMeta>,
}

/// The launch facts of PTX ([`PtxKernel`] without the text).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuMeta {
    /// `.entry` name.
    pub entry: String,
    /// Threads per CTA.
    pub num_threads: u32,
    /// Dynamic shared memory, bytes.
    pub shared_bytes: u32,
    /// `sm_80`, `sm_90`.
    pub target: String,
    /// Parameters: name, `ptr` or `scalar`, dtype.
    pub params: Vec<(String, String, String)>,
}

impl GpuMeta {
    fn of(p: &PtxKernel) -> GpuMeta {
        GpuMeta {
            entry: p.entry.clone(),
            num_threads: p.num_threads,
            shared_bytes: p.shared_bytes,
            target: p.target.arch().to_string(),
            params: p
                .params
                .iter()
                .map(|a| match &a.ty {
                    AbiType::Pointer(d) => (a.name.clone(), "ptr".to_string(), d.name().to_string()),
                    AbiType::Scalar(d) => (a.name.clone(), "scalar".to_string(), d.name().to_string()),
                })
                .collect(),
        }
    }

    fn to_ptx(&self, ptx: String) -> Result<PtxKernel, String> {
        let target = Target::parse(&self.target).ok_or_else(|| format!("unknown target `{}`", self.target))?;
        let mut params = vec![];
        for (name, kind, dtype) in &self.params {
            let d = DType::parse(dtype).ok_or_else(|| format!("unknown dtype `{dtype}`"))?;
            let ty = match kind.as_str() {
                "ptr" => AbiType::Pointer(d),
                "scalar" => AbiType::Scalar(d),
                _ => return Err(format!("unknown parameter kind `{kind}`")),
            };
            params.push(AbiParam { name: name.clone(), ty });
        }
        Ok(PtxKernel {
            ptx,
            entry: self.entry.clone(),
            num_threads: self.num_threads,
            shared_bytes: self.shared_bytes,
            params,
            target,
        })
    }
}

const KERNEL_JSON: &str = "kernel.json";

/// A [`ConstValue`] as a [`TuneValue`] (ints beyond i64, dtypes and tuples as their text).
pub(crate) fn tune_value(c: &ConstValue) -> TuneValue {
    match c {
        ConstValue::Int(v) => i64::try_from(*v).map_or_else(|_| TuneValue::Str(v.to_string()), TuneValue::Int),
        ConstValue::Float(v) => TuneValue::Float(*v),
        ConstValue::Bool(v) => TuneValue::Bool(*v),
        ConstValue::Str(s) => TuneValue::Str(s.clone()),
        other => TuneValue::Str(format!("{other:?}")),
    }
}

/// The text a launch argument contributes to the signature: its type and the
/// specialization attributes the front end looks at (`trident_front::compile`
/// binds ints by `fits in i32`, `== 1` and `% 16 == 0`, pointers by dtype and
/// 16-byte alignment; everything else about a parameter is in the source).
/// Two arguments with the same text compile to the same code.
pub(crate) fn signature_text(info: Option<&ArgInfo>) -> String {
    let flags = |one: bool, div16: bool| format!("{}{}", if one { ":1" } else { "" }, if div16 { ":16" } else { "" });
    match info {
        None => "default".to_string(),
        Some(ArgInfo::Pointer { dtype, aligned16 }) => {
            format!("*{}{}", dtype.name(), if *aligned16 { ":16" } else { "" })
        }
        Some(ArgInfo::Int(v)) => {
            let ty = if i32::try_from(*v).is_ok() { "i32" } else { "i64" };
            format!("{ty}{}", flags(*v == 1, v % 16 == 0))
        }
        Some(ArgInfo::UInt(v)) => {
            let ty = if *v > i64::MAX as u64 {
                "u64"
            } else if *v > i32::MAX as u64 {
                "i64"
            } else {
                "i32"
            };
            format!("{ty}{}", flags(*v == 1, v % 16 == 0))
        }
        Some(ArgInfo::Float(_)) => "fp32".to_string(),
        Some(ArgInfo::Bool(_)) => "i1".to_string(),
        // A faithful text: `Int(1)`, `Float(1.0)`, `Bool(true)`, `DType(..)` all differ.
        Some(ArgInfo::Constexpr(c)) => format!("constexpr={c:?}"),
    }
}

/// A constexpr's value as key text: readable and faithful (`128`, `128.0`,
/// `True`, `'s'` and anything else by its `Debug` form never coincide).
pub(crate) fn constexpr_text(a: &ArgInfo) -> String {
    match a {
        ArgInfo::Constexpr(ConstValue::Int(v)) => v.to_string(),
        ArgInfo::Constexpr(ConstValue::Float(v)) => format!("{v:?}"),
        ArgInfo::Constexpr(ConstValue::Bool(v)) => if *v { "True" } else { "False" }.to_string(),
        ArgInfo::Constexpr(ConstValue::Str(v)) => format!("{v:?}"),
        ArgInfo::Constexpr(ConstValue::None) => "None".to_string(),
        other => format!("{other:?}"),
    }
}

/// The parts of a key, computed once per lookup.
struct Described {
    target: String,
    signature: Vec<String>,
    constexprs: Vec<(String, String)>,
    options: Vec<(String, String)>,
}

impl Described {
    fn spec_text(&self, source_id: &str) -> String {
        format!("{source_id}|{}|{:?}|{:?}|{:?}", self.target, self.signature, self.constexprs, self.options)
    }
}

fn describe(req: &Request, infos: &[(String, ArgInfo)]) -> Described {
    let find = |name: &str| infos.iter().rev().find(|(n, _)| n == name).map(|(_, a)| a);
    let mut signature = vec![];
    let mut constexprs = vec![];
    for p in &req.kernel.params {
        let info = find(&p.name);
        if p.is_constexpr {
            // A constexpr left out takes its default from the source (part of the key already).
            if let Some(a) = info {
                constexprs.push((p.name.clone(), constexpr_text(a)));
            }
        } else {
            signature.push(signature_text(info));
        }
    }
    let mut options = vec![("debug".to_string(), req.debug.to_string())];
    if req.target != CodeTarget::Tile {
        options.push(("num_warps".to_string(), req.num_warps.to_string()));
        options.push(("num_stages".to_string(), req.num_stages.to_string()));
    }
    Described { target: req.target.name(), signature, constexprs, options }
}

fn cache_key(req: &Request, d: &Described) -> CacheKey {
    let file = &req.prog.file;
    let mut k = CacheKey::new(&req.kernel.name, &d.target).source(file.path(), file.text());
    // Helpers imported from other project files are part of the source too.
    for dep in file.dependencies() {
        k = k.source(dep.path(), dep.text());
    }
    for s in &d.signature {
        k = k.arg(s);
    }
    for (n, v) in &d.constexprs {
        k = k.constexpr(n, v);
    }
    for (n, v) in &d.options {
        k = k.option(n, v);
    }
    // Module-level code may read the environment (`os.environ.get("X", ...)`) and the front end
    // reads TRITON_F32_DEFAULT: their values change the output, so they are part of the key.
    let texts = std::iter::once(file.text()).chain(file.dependencies().map(|f| f.text()));
    let mut names: Vec<String> = texts.flat_map(env_names_read).collect();
    names.push("TRITON_F32_DEFAULT".into());
    names.sort();
    names.dedup();
    for n in names {
        k = k.option(format!("env:{n}"), std::env::var(&n).unwrap_or_else(|_| "<unset>".into()));
    }
    k
}

/// Names of environment variables a Python source reads with a literal name:
/// `os.environ.get("X"...)`, `os.getenv("X"...)`, `os.environ["X"]`.
fn env_names_read(text: &str) -> Vec<String> {
    let mut out = vec![];
    for pat in ["environ.get(", "getenv(", "environ["] {
        for (i, _) in text.match_indices(pat) {
            let rest = text[i + pat.len()..].trim_start();
            let Some(q) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else { continue };
            if let Some(end) = rest[1..].find(q) {
                out.push(rest[1..1 + end].to_string());
            }
        }
    }
    out
}

/// Launch arguments plus the constexprs `@triton.heuristics` adds (names not already given).
fn with_heuristics(req: &Request) -> Result<Vec<(String, ArgInfo)>, RunError> {
    let mut infos = req.infos.clone();
    if !req.kernel.heuristics.is_empty() {
        let extra =
            req.kernel.eval_heuristics(&infos).map_err(|d| RunError::from_diags(&[d], &req.prog.source_files()))?;
        for (k, v) in extra {
            if !infos.iter().any(|(n, _)| *n == k) {
                infos.push((k, ArgInfo::Constexpr(v)));
            }
        }
    }
    Ok(infos)
}

/// Compiles (or fetches) the specialization `req` describes. The second
/// value is where it came from (`None`: the session has no cache, or IR
/// dumps bypassed it).
pub(crate) fn compile(
    session: &Session,
    req: &Request,
) -> Result<(Arc<CompiledKernel>, Option<Outcome>), CompileError> {
    let infos = with_heuristics(req)?;
    let dumping = req.print_ir_after_all || std::env::var("TRIDENT_DUMP_IR").is_ok_and(|v| v.trim() == "1");
    let Some(cache) = session.cache().filter(|_| !dumping) else {
        session.count_build();
        return Ok((Arc::new(build(req, &infos)?), None));
    };
    let d = describe(req, &infos);
    let memo = MemoKey::new(&req.kernel.name, d.spec_text(req.prog.source_id()));
    // A decoding failure (an entry that verifies but cannot be used, e.g.
    // written by an incompatible build) removes the entry and compiles again, once.
    for attempt in 0..2 {
        let mut built: Option<CompiledKernel> = None;
        let (entry, outcome) = cache.get_or_build_memo(
            &memo,
            || Ok::<_, CompileError>(cache_key(req, &d)),
            |_| {
                session.count_build();
                let ck = build(req, &infos)?;
                let data = encode(&ck, req.prog);
                built = Some(ck);
                Ok(data)
            },
        )?;
        if outcome != Outcome::Memo {
            // Disk traffic happened anyway; keep `trident cache stats` current.
            let _ = cache.flush_stats();
        }
        if let Some(mut ck) = built {
            ck.cache_id = Some(entry.id.clone());
            let ck = Arc::new(ck);
            if let Ok(mut l) = session.loaded.lock() {
                l.insert(entry.id.clone(), ck.clone());
            }
            return Ok((ck, Some(outcome)));
        }
        if let Some(ck) = session.loaded.lock().ok().and_then(|l| l.get(&entry.id).cloned()) {
            session.count_reuse();
            return Ok((ck, Some(outcome)));
        }
        match decode(&entry, req.prog) {
            Ok(ck) => {
                session.count_load();
                let ck = Arc::new(ck);
                if let Ok(mut l) = session.loaded.lock() {
                    l.insert(entry.id.clone(), ck.clone());
                }
                return Ok((ck, Some(outcome)));
            }
            Err(why) if attempt == 0 => {
                session.warn_once(
                    &format!("undecodable {}", entry.id),
                    &format!("cache entry {} could not be used ({why}); recompiling", entry.id),
                );
                cache.remove(&entry.id);
            }
            Err(why) => return Err(RunError::msg(format!("cache entry {} could not be used: {why}", entry.id)).into()),
        }
    }
    unreachable!("the loop returns on its second attempt")
}

fn classify(e: trident_gpu::GpuError, files: &[SourceFile]) -> CompileError {
    let out_of_resources = e.is_out_of_resources();
    CompileError { error: RunError::from_diags(&[*e.diagnostic], files), out_of_resources }
}

/// Compiles from source.
fn build(req: &Request, infos: &[(String, ArgInfo)]) -> Result<CompiledKernel, CompileError> {
    let start = Instant::now();
    let files = req.prog.source_files();
    let copts = CompileOptions { debug: req.debug, ..CompileOptions::default() };
    let mut compiled = trident_front::compile(&req.prog.file, &req.kernel.name, infos, &copts)
        .map_err(|ds| RunError::from_diags(&ds, &files))?;
    let mut pm = trident_opt::default_tile_pipeline();
    if req.print_ir_after_all {
        pm.print_ir_after_all = true;
    }
    pm.run(&mut compiled.module).map_err(|ds| RunError::from_diags(&ds, &compiled.module.files))?;
    let params = compiled
        .param_names
        .iter()
        .zip(&compiled.params)
        .map(|(name, b)| ParamSlot {
            name: name.clone(),
            ir_index: match b {
                ParamBinding::Runtime { ir_index } => Some(*ir_index),
                _ => None,
            },
            default: req.kernel.param(name).and_then(|p| match &p.default {
                Some(ConstValue::Int(v)) => i64::try_from(*v).ok().map(ScalarDefault::Int),
                Some(ConstValue::Float(v)) => Some(ScalarDefault::Float(*v)),
                Some(ConstValue::Bool(v)) => Some(ScalarDefault::Bool(*v)),
                _ => None,
            }),
        })
        .collect();
    let constexprs = compiled
        .param_names
        .iter()
        .zip(&compiled.params)
        .filter_map(|(n, b)| match b {
            ParamBinding::Constexpr(c) => Some((n.clone(), tune_value(c))),
            _ => None,
        })
        .collect();
    let mut notes = vec![];
    let gpu = match req.target.gpu() {
        None => None,
        Some(target) => {
            let gopts =
                GpuOptions { target, num_warps: req.num_warps, num_stages: req.num_stages, ..GpuOptions::default() };
            let module = &compiled.module;
            let art = trident_gpu::GpuPipeline::new(&gopts)
                .print_ir_after_all(req.print_ir_after_all)
                .run(module, &compiled.kernel)
                .map_err(|e| classify(e, &module.files))?;
            let ttgir = print_module(&art.gpu_ir, &PrintOptions::with_locs());
            let ptx = art.ptx;
            let (mut cubin, mut registers, mut spills) = (None, None, None);
            if matches!(req.target, CodeTarget::Cuda(_))
                && trident_gpu::tools::find(trident_gpu::tools::Tool::Ptxas).is_ok()
            {
                match trident_gpu::tools::ptxas(&ptx.ptx, target.arch()) {
                    Ok(out) => {
                        let usage = out.usage.iter().find(|u| u.function == ptx.entry);
                        registers = usage.map(|u| u.registers);
                        spills = usage.map(|u| u.spill_stores);
                        cubin = Some(out.cubin);
                    }
                    Err(e) => notes.push(format!("ptxas: {e}; the driver will compile the PTX")),
                }
            }
            Some(GpuCode::new(ptx, ttgir, cubin, registers, spills))
        }
    };
    Ok(CompiledKernel {
        kernel: compiled.kernel,
        module: compiled.module,
        params,
        constexprs,
        num_warps: req.num_warps,
        num_stages: req.num_stages,
        target: req.target,
        gpu,
        static_prints: compiled.static_prints,
        cache_id: None,
        build_time: start.elapsed(),
        notes,
    })
}

/// Compiles GPU code for an already compiled tile-IR kernel (not cached: the
/// cached path compiles for the launch's backend from the start).
pub(crate) fn gpu_code_uncached(ck: &CompiledKernel, target: Target) -> Result<GpuCode, RunError> {
    let gopts = GpuOptions { target, num_warps: ck.num_warps, num_stages: ck.num_stages, ..GpuOptions::default() };
    let art = trident_gpu::compile(&ck.module, &ck.kernel, &gopts)
        .map_err(|e| RunError::from_diags(&[*e.diagnostic], &ck.module.files))?;
    let ttgir = print_module(&art.gpu_ir, &PrintOptions::with_locs());
    Ok(GpuCode::new(art.ptx, ttgir, None, None, None))
}

fn encode(ck: &CompiledKernel, prog: &KernelProgram) -> EntryData {
    let own = prog.source_files();
    let meta = KernelMeta {
        kernel: ck.kernel.clone(),
        params: ck.params.clone(),
        constexprs: ck.constexprs.clone(),
        // Files the program provides again on a hit (it is keyed by their texts) are kept by path only.
        files: ck.module.files.iter().map(|f| (f.path.clone(), (!own.contains(f)).then(|| f.text.clone()))).collect(),
        num_warps: ck.num_warps,
        num_stages: ck.num_stages,
        gpu: ck.gpu.as_ref().map(|g| GpuMeta::of(&g.ptx)),
    };
    EntryData {
        ttir: Some(print_module(&ck.module, &PrintOptions::with_locs())),
        ttgir: ck.gpu.as_ref().map(|g| g.ttgir.clone()),
        ptx: ck.gpu.as_ref().map(|g| g.ptx.ptx.clone()),
        cubin: ck.gpu.as_ref().and_then(|g| g.cubin.clone()),
        extra: vec![(KERNEL_JSON.to_string(), serde_json::to_vec_pretty(&meta).unwrap_or_default())],
        info: BuildInfo {
            shared_mem_bytes: ck.gpu.as_ref().map_or(0, |g| g.ptx.shared_bytes as u64),
            num_warps: ck.num_warps,
            num_stages: ck.num_stages,
            registers: ck.gpu.as_ref().and_then(|g| g.registers),
            spills: ck.gpu.as_ref().and_then(|g| g.spills),
            compile_secs: 0.0,
        },
    }
}

/// Rebuilds a kernel from a cache entry: parses the tile IR and restores its
/// source files (the kernel's own from `prog`), so that diagnostics point at the source.
fn decode(entry: &Entry, prog: &KernelProgram) -> Result<CompiledKernel, String> {
    let json = entry.extra.iter().find(|(n, _)| n == KERNEL_JSON).ok_or("no kernel.json")?;
    let meta: KernelMeta = serde_json::from_slice(&json.1).map_err(|e| format!("bad kernel.json: {e}"))?;
    let ttir = entry.ttir.as_deref().ok_or("no tile IR")?;
    let mut module =
        trident_ir::parse::parse_module(ttir).map_err(|d| format!("tile IR does not parse: {}", d.message))?;
    let own = prog.source_files();
    let mut files = vec![];
    for (path, text) in &meta.files {
        match (text, own.iter().find(|f| f.path == *path)) {
            (Some(t), _) => files.push(SourceFile { path: path.clone(), text: t.clone() }),
            (None, Some(f)) => files.push(f.clone()),
            (None, None) => return Err(format!("source file `{path}` is not one of the program's")),
        }
    }
    module.files = files;
    if module.func(&meta.kernel).is_none() {
        return Err(format!("tile IR lacks the kernel `{}`", meta.kernel));
    }
    let gpu = match &meta.gpu {
        None => None,
        Some(g) => {
            let ptx = entry.ptx.clone().ok_or("no PTX")?;
            Some(GpuCode::new(
                g.to_ptx(ptx)?,
                entry.ttgir.clone().unwrap_or_default(),
                entry.cubin.clone(),
                entry.metadata.build.registers,
                entry.metadata.build.spills,
            ))
        }
    };
    let target = match (&gpu, entry.metadata.key.target.split_once('-')) {
        (None, _) => CodeTarget::Tile,
        (Some(g), Some(("cuda", _))) => CodeTarget::Cuda(g.ptx.target),
        (Some(g), _) => CodeTarget::Emu(g.ptx.target),
    };
    Ok(CompiledKernel {
        kernel: meta.kernel,
        module,
        params: meta.params,
        constexprs: meta.constexprs,
        num_warps: meta.num_warps,
        num_stages: meta.num_stages,
        target,
        gpu,
        static_prints: vec![],
        cache_id: Some(entry.id.clone()),
        build_time: Duration::from_secs_f64(entry.metadata.build.compile_secs.max(0.0)),
        notes: vec![],
    })
}

#[cfg(test)]
mod env_tests {
    #[test]
    fn finds_literal_environment_reads() {
        let src = "import os\nA = os.environ.get('FLA_FAST', '0')\nB = os.getenv(\"X_Y\")\nC = os.environ[\"Z\"]\nD = os.environ.get(name)\n";
        assert_eq!(super::env_names_read(src), vec!["FLA_FAST", "X_Y", "Z"]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_texts_follow_the_front_ends_specialization() {
        let s = |a: ArgInfo| signature_text(Some(&a));
        assert_eq!(s(ArgInfo::Int(1)), "i32:1");
        assert_eq!(s(ArgInfo::Int(32)), "i32:16");
        assert_eq!(s(ArgInfo::Int(0)), "i32:16");
        assert_eq!(s(ArgInfo::Int(33)), "i32");
        assert_eq!(s(ArgInfo::Int(1 << 40)), "i64:16");
        assert_eq!(s(ArgInfo::UInt(u64::MAX)), "u64");
        assert_eq!(s(ArgInfo::Pointer { dtype: DType::F16, aligned16: true }), "*f16:16");
        assert_eq!(s(ArgInfo::Pointer { dtype: DType::F16, aligned16: false }), "*f16");
        assert_eq!(s(ArgInfo::Float(0.5)), "fp32");
        assert_eq!(s(ArgInfo::Bool(true)), "i1");
        assert_ne!(s(ArgInfo::Constexpr(ConstValue::Int(1))), s(ArgInfo::Constexpr(ConstValue::Float(1.0))));
        assert_ne!(s(ArgInfo::Constexpr(ConstValue::Int(1))), s(ArgInfo::Constexpr(ConstValue::Bool(true))));
        assert_eq!(signature_text(None), "default");
        let c = |v: ConstValue| constexpr_text(&ArgInfo::Constexpr(v));
        let texts = [
            c(ConstValue::Int(1)),
            c(ConstValue::Float(1.0)),
            c(ConstValue::Float(1e300)),
            c(ConstValue::Bool(true)),
            c(ConstValue::Str("1".into())),
            c(ConstValue::None),
            constexpr_text(&ArgInfo::Int(1)),
        ];
        for (i, a) in texts.iter().enumerate() {
            assert!(texts[i + 1..].iter().all(|b| a != b), "{texts:?}");
        }
        assert_eq!(texts[..4], ["1", "1.0", "1e300", "True"]);
    }

    #[test]
    fn target_names() {
        assert_eq!(CodeTarget::Tile.name(), "tile");
        assert_eq!(CodeTarget::Emu(Target::Sm80).name(), "emu-sm_80");
        assert_eq!(CodeTarget::Cuda(Target::Sm90).name(), "cuda-sm_90");
    }
}
