//! What a compilation produces: a [`CompiledKernel`] (tile IR, parameter bindings,
//! constexpr values) and, for GPU targets, its [`GpuCode`] (PTX, launch facts, cubin),
//! for a [`CodeTarget`].
//!
//! Plain data: made by [`crate::compile`], run by `crate::run`, kept by the
//! [`crate::session::Session`].

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use trident_front::ConstValue;
use trident_gpu::{PtxKernel, Target};
use trident_ir::Module;

use crate::autotune::TuneValue;
use crate::cache::CacheId;
use crate::error::RunError;

/// What compiled code is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CodeTarget {
    /// Tile IR only: the interpreter, `trident compile` (which lowers for the GPU itself).
    Tile,
    /// PTX for the emulator.
    Emu(Target),
    /// PTX and its cubin (`ptxas` at compile time, kept in the cache entry) for the SASS
    /// emulator, so a warm cache runs no `ptxas`.
    SassEmu(Target),
    /// PTX (and a cubin when `ptxas` is found) for a CUDA device.
    Cuda(Target),
}

impl CodeTarget {
    /// The target's name in cache keys and listings: `tile`, `emu-sm_80`, `cuda-sm_90`.
    pub fn name(self) -> String {
        match self {
            CodeTarget::Tile => "tile".to_string(),
            CodeTarget::Emu(t) => format!("emu-{}", t.arch()),
            CodeTarget::SassEmu(t) => format!("sass-emu-{}", t.arch()),
            CodeTarget::Cuda(t) => format!("cuda-{}", t.arch()),
        }
    }

    /// The GPU target, for GPU code.
    pub fn gpu(self) -> Option<Target> {
        match self {
            CodeTarget::Tile => None,
            CodeTarget::Emu(t) | CodeTarget::SassEmu(t) | CodeTarget::Cuda(t) => Some(t),
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
    /// A host tensor descriptor's hidden parameters' IR indices, in
    /// `DescriptorArg::parts` order (base, shape, strides but the last); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<usize>,
}

/// GPU code: PTX and how to launch it, and the cubin when `ptxas` made one.
#[derive(Clone)]
pub struct GpuCode {
    /// The PTX and its launch facts.
    pub ptx: PtxKernel,
    /// GPU IR (tile IR with layouts) as text.
    pub ttgir: String,
    /// Warps per program it was compiled for.
    pub num_warps: u32,
    /// Software-pipelining depth it was compiled with.
    pub num_stages: u32,
    /// The cubin `ptxas` assembled (CUDA targets, when `ptxas` is found).
    pub cubin: Option<Vec<u8>>,
    /// Registers per thread, when `ptxas` reported them.
    pub registers: Option<u32>,
    /// Bytes spilled (stores), when `ptxas` reported them.
    pub spills: Option<u32>,
    /// `nvdisasm -json`'s listing of the cubin (SASS-emulator targets: made at compile time
    /// and kept in the cache entry, so a warm cache runs neither `ptxas` nor `nvdisasm`).
    pub sass_json: Option<String>,
    /// For a profiled kernel, the compiler's meta (regions, buffer shape; the launch fills
    /// in the grid and the measured probe cost).
    pub profile: Option<trident_profile::ProfileMeta>,
    emu: OnceLock<Result<Arc<trident_emu::Module>, String>>,
    /// The module loaded on each CUDA device it ran on (by ordinal), once per loaded kernel.
    pub(crate) cuda: crate::gpu::CudaModules,
    /// The SASS emulator's decoded kernel (ptxas and nvdisasm run once per loaded kernel).
    sass: OnceLock<Result<Arc<trident_sass_emu::Program>, String>>,
}

/// What `ptxas` said about PTX it assembled into a cubin.
#[derive(Clone, Debug, Default)]
pub(crate) struct Assembled {
    pub cubin: Option<Vec<u8>>,
    pub sass_json: Option<String>,
    pub registers: Option<u32>,
    pub spills: Option<u32>,
}

impl GpuCode {
    pub(crate) fn new(
        ptx: PtxKernel,
        ttgir: String,
        num_warps: u32,
        num_stages: u32,
        asm: Assembled,
        profile: Option<trident_profile::ProfileMeta>,
    ) -> Self {
        GpuCode {
            ptx,
            ttgir,
            num_warps,
            num_stages,
            cubin: asm.cubin,
            registers: asm.registers,
            spills: asm.spills,
            sass_json: asm.sass_json,
            profile,
            emu: OnceLock::new(),
            cuda: Default::default(),
            sass: OnceLock::new(),
        }
    }

    /// The kernel's SASS decoded for the SASS emulator (once per loaded kernel).
    pub fn sass_program(&self) -> Result<Arc<trident_sass_emu::Program>, RunError> {
        self.sass
            .get_or_init(|| crate::sass_run::program(self).map(Arc::new).map_err(|e| e.text))
            .clone()
            .map_err(RunError::msg)
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
            .field("num_warps", &self.num_warps)
            .field("num_stages", &self.num_stages)
            .field("shared_bytes", &self.ptx.shared_bytes)
            .field("cubin_bytes", &self.cubin.as_ref().map(Vec::len))
            .field("profiled", &self.profile.is_some())
            .finish()
    }
}

/// A kernel compiled for one specialization (argument types and
/// specialization attributes, constexpr values, options, target).
///
/// Warps and stages belong to the GPU code ([`GpuCode::num_warps`]): tile IR does not
/// depend on them, so one tile-IR kernel serves every warps/stages choice.
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

impl CompiledKernel {
    /// The runtime parameters' names in IR parameter order (the order backends take arguments in).
    /// A descriptor's hidden parameters are named after it (`x.base`, `x.shape[0]`, ...).
    pub fn runtime_params(&self) -> Vec<String> {
        let mut runtime: Vec<(usize, String)> =
            self.params.iter().filter_map(|p| p.ir_index.map(|i| (i, p.name.clone()))).collect();
        for p in self.params.iter().filter(|p| !p.parts.is_empty()) {
            let rank = p.parts.len() / 2;
            let names = crate::args::DescriptorArg::part_names(&p.name, rank);
            runtime.extend(p.parts.iter().copied().zip(names));
        }
        runtime.sort_by_key(|(i, _)| *i);
        runtime.into_iter().map(|(_, n)| n).collect()
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_names() {
        assert_eq!(CodeTarget::Tile.name(), "tile");
        assert_eq!(CodeTarget::Emu(Target::Sm80).name(), "emu-sm_80");
        assert_eq!(CodeTarget::Cuda(Target::Sm90).name(), "cuda-sm_90");
    }
}
