//! A compiled kernel as a cache entry and back: `kernel.ttir`, `kernel.ttgir`,
//! `kernel.ptx`, `kernel.cubin` and `kernel.json` ([`KernelMeta`]: parameter bindings,
//! constexpr values, the source files other than the program's own, the PTX launch facts).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use trident_core::DType;
use trident_gpu::ptx::sanitize::{SanitizeInfo, SanitizeSite, SiteAccess};
use trident_gpu::ptx::tma::{MapField, TensorMapSpec};
use trident_gpu::{AbiParam, AbiType, PtxKernel, Target};
use trident_ir::print::{print_module, PrintOptions};
use trident_ir::SourceFile;

use crate::autotune::TuneValue;
use crate::cache::{BuildInfo, Entry, EntryData};
use crate::compiled::{Assembled, CodeTarget, CompiledKernel, GpuCode, ParamSlot};
use crate::program::KernelProgram;

const KERNEL_JSON: &str = "kernel.json";
/// `nvdisasm -json` of the cubin (SASS-emulator targets).
const SASS_JSON: &str = "kernel.sass.json";

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
    /// PTX launch facts, for GPU targets.
    pub gpu: Option<GpuMeta>,
}

/// The launch facts of PTX ([`PtxKernel`] without the text) and the options it was compiled with.
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
    /// Warps per program.
    pub num_warps: u32,
    /// Software-pipelining stages.
    pub num_stages: u32,
    /// Whether the PTX takes the profile buffer as a hidden last parameter.
    #[serde(default)]
    pub profile_buffer: bool,
    /// The profile meta of a profiled kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<trident_profile::ProfileMeta>,
    /// A sanitized kernel's hidden parameters and access sites.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sanitize: Option<SanitizeMeta>,
    /// The hidden tensor maps the launch builds (TMA), in parameter order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tensor_maps: Vec<TensorMapMeta>,
}

/// A [`TensorMapSpec`] as JSON: fields are `{"param": i}`, `{"const": v}` or
/// `{"product": {"factors": [...], "bits": 32}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorMapMeta {
    pub base_param: usize,
    pub dtype: String,
    pub shape: Vec<MapFieldMeta>,
    pub strides: Vec<MapFieldMeta>,
    pub block: Vec<u32>,
    pub swizzle: u32,
    pub nan: bool,
}

/// A [`MapField`] as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MapFieldMeta {
    Param(usize),
    Const(i64),
    Product { factors: Vec<MapFieldMeta>, bits: u32 },
}

impl MapFieldMeta {
    fn of(x: &MapField) -> MapFieldMeta {
        match x {
            MapField::Param(i) => MapFieldMeta::Param(*i),
            MapField::Const(c) => MapFieldMeta::Const(*c),
            MapField::Product { factors, bits } => {
                MapFieldMeta::Product { factors: factors.iter().map(MapFieldMeta::of).collect(), bits: *bits }
            }
        }
    }

    fn to_field(&self) -> MapField {
        match self {
            MapFieldMeta::Param(i) => MapField::Param(*i),
            MapFieldMeta::Const(c) => MapField::Const(*c),
            MapFieldMeta::Product { factors, bits } => {
                MapField::Product { factors: factors.iter().map(MapFieldMeta::to_field).collect(), bits: *bits }
            }
        }
    }
}

impl TensorMapMeta {
    fn of(s: &TensorMapSpec) -> TensorMapMeta {
        let fields = |v: &[MapField]| v.iter().map(MapFieldMeta::of).collect();
        TensorMapMeta {
            base_param: s.base_param,
            dtype: s.dtype.name().to_string(),
            shape: fields(&s.shape),
            strides: fields(&s.strides),
            block: s.block.clone(),
            swizzle: s.swizzle,
            nan: s.nan,
        }
    }

    fn to_spec(&self) -> Result<TensorMapSpec, String> {
        let fields = |v: &[MapFieldMeta]| v.iter().map(MapFieldMeta::to_field).collect();
        Ok(TensorMapSpec {
            base_param: self.base_param,
            dtype: DType::parse(&self.dtype).ok_or_else(|| format!("unknown dtype `{}`", self.dtype))?,
            shape: fields(&self.shape),
            strides: fields(&self.strides),
            block: self.block.clone(),
            swizzle: self.swizzle,
            nan: self.nan,
        })
    }
}

/// [`SanitizeInfo`] as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SanitizeMeta {
    /// IR indices of the pointer parameters, in the order their extents are passed.
    pub pointer_params: Vec<u32>,
    /// The access sites, by id.
    pub sites: Vec<SiteMeta>,
}

/// One access site of a sanitized kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SiteMeta {
    /// Source location: file index in the module, line, column.
    pub file: u32,
    pub line: u32,
    pub col: u32,
    /// `load`, `store` or `atomic`.
    pub access: String,
    /// The parameter the pointer came from (IR index), `None`: any.
    pub param: Option<u32>,
    pub dtype: String,
    pub shape: Vec<u32>,
}

impl SanitizeMeta {
    fn of(i: &SanitizeInfo) -> SanitizeMeta {
        SanitizeMeta {
            pointer_params: i.pointer_params.clone(),
            sites: i
                .sites
                .iter()
                .map(|s| SiteMeta {
                    file: s.loc.file,
                    line: s.loc.line,
                    col: s.loc.col,
                    access: s.access.name().to_string(),
                    param: s.param,
                    dtype: s.dtype.name().to_string(),
                    shape: s.shape.clone(),
                })
                .collect(),
        }
    }

    fn to_info(&self) -> Result<SanitizeInfo, String> {
        let mut sites = vec![];
        for s in &self.sites {
            sites.push(SanitizeSite {
                loc: trident_ir::Loc { file: s.file, line: s.line, col: s.col },
                access: SiteAccess::parse(&s.access).ok_or_else(|| format!("unknown access `{}`", s.access))?,
                param: s.param,
                dtype: DType::parse(&s.dtype).ok_or_else(|| format!("unknown dtype `{}`", s.dtype))?,
                shape: s.shape.clone(),
            });
        }
        Ok(SanitizeInfo { sites, pointer_params: self.pointer_params.clone() })
    }
}

impl GpuMeta {
    fn of(g: &GpuCode) -> GpuMeta {
        let p = &g.ptx;
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
            num_warps: g.num_warps,
            num_stages: g.num_stages,
            profile_buffer: p.profile_buffer,
            profile: g.profile.clone(),
            sanitize: p.sanitize.as_ref().map(SanitizeMeta::of),
            tensor_maps: p.tensor_maps.iter().map(TensorMapMeta::of).collect(),
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
            profile_buffer: self.profile_buffer,
            sanitize: self.sanitize.as_ref().map(SanitizeMeta::to_info).transpose()?,
            tensor_maps: self.tensor_maps.iter().map(TensorMapMeta::to_spec).collect::<Result<_, _>>()?,
        })
    }
}

/// The entry to store for `ck`.
pub(super) fn encode(ck: &CompiledKernel, prog: &KernelProgram) -> EntryData {
    let own = prog.source_files();
    let meta = KernelMeta {
        kernel: ck.kernel.clone(),
        params: ck.params.clone(),
        constexprs: ck.constexprs.clone(),
        // Files the program provides again on a hit (it is keyed by their texts) are kept by path only.
        files: ck.module.files.iter().map(|f| (f.path.clone(), (!own.contains(f)).then(|| f.text.clone()))).collect(),
        gpu: ck.gpu.as_ref().map(GpuMeta::of),
    };
    let gpu = ck.gpu.as_ref();
    EntryData {
        ttir: Some(print_module(&ck.module, &PrintOptions::with_locs())),
        ttgir: gpu.map(|g| g.ttgir.clone()),
        ptx: gpu.map(|g| g.ptx.ptx.clone()),
        cubin: gpu.and_then(|g| g.cubin.clone()),
        extra: std::iter::once((KERNEL_JSON.to_string(), serde_json::to_vec_pretty(&meta).unwrap_or_default()))
            .chain(gpu.and_then(|g| g.sass_json.clone()).map(|j| (SASS_JSON.to_string(), j.into_bytes())))
            .collect(),
        info: BuildInfo {
            shared_mem_bytes: gpu.map_or(0, |g| g.ptx.shared_bytes as u64),
            // Tile IR has no warps or stages: 0 in a tile-IR entry's metadata.
            num_warps: gpu.map_or(0, |g| g.num_warps),
            num_stages: gpu.map_or(0, |g| g.num_stages),
            registers: gpu.and_then(|g| g.registers),
            spills: gpu.and_then(|g| g.spills),
            compile_secs: 0.0,
        },
    }
}

/// Rebuilds a kernel from a cache entry: parses the tile IR and restores its
/// source files (the kernel's own from `prog`), so that diagnostics point at the source.
pub(super) fn decode(entry: &Entry, prog: &KernelProgram) -> Result<CompiledKernel, String> {
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
            let sass_json = entry
                .extra
                .iter()
                .find(|(n, _)| n == SASS_JSON)
                .map(|(_, b)| String::from_utf8(b.clone()).map_err(|_| "kernel.sass.json is not UTF-8"))
                .transpose()?;
            let asm = Assembled {
                cubin: entry.cubin.clone(),
                sass_json,
                registers: entry.metadata.build.registers,
                spills: entry.metadata.build.spills,
            };
            if let Some(meta) = &g.profile {
                meta.validate().map_err(|e| format!("bad profile meta: {e}"))?;
            }
            let ttgir = entry.ttgir.clone().unwrap_or_default();
            Some(GpuCode::new(g.to_ptx(ptx)?, ttgir, g.num_warps, g.num_stages, asm, g.profile.clone()))
        }
    };
    let target = match (&gpu, entry.metadata.key.target.split_once('-')) {
        (None, _) => CodeTarget::Tile,
        (Some(g), Some(("cuda", _))) => CodeTarget::Cuda(g.ptx.target),
        (Some(g), Some(("sass", _))) => CodeTarget::SassEmu(g.ptx.target),
        (Some(g), _) => CodeTarget::Emu(g.ptx.target),
    };
    Ok(CompiledKernel {
        kernel: meta.kernel,
        module,
        params: meta.params,
        constexprs: meta.constexprs,
        target,
        gpu,
        static_prints: vec![],
        cache_id: Some(entry.id.clone()),
        build_time: Duration::from_secs_f64(entry.metadata.build.compile_secs.max(0.0)),
        notes: vec![],
    })
}
