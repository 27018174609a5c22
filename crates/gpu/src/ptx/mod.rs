//! PTX emission from GPU IR (direct text, no LLVM).
//!
//! # Kernel ABI
//!
//! One `.param` per IR parameter, in order, named `<kernel>_param_<i>`:
//!
//! | IR type | PTX param | value passed |
//! |---|---|---|
//! | `ptr<T>` | `.u64` | the global address of element 0 |
//! | `i64`, `u64` | `.u64` | the integer |
//! | `f64` | `.f64` | the float |
//! | `f32` | `.f32` | the float |
//! | `i1`, `i8`, `i16`, `i32`, `u8`, `u16`, `u32`, `f16`, `bf16`, fp8 | `.u32` | the value's bits in the low bits (i1: 0 or 1) |
//!
//! **Hidden parameter.** A kernel compiled with real profiling probes
//! (`GpuOptions::profile`, [`ProbeMode::Probes`](crate::options::ProbeMode::Probes); [`PtxKernel::profile_buffer`]) takes one
//! more parameter after the IR's, `.param .u64 <kernel>_param_<n>` (`n` = the number of IR
//! parameters): the global address of the profile buffer, which the launcher allocates
//! (`ProfileMeta::layout()?.buffer_bytes()` bytes, 16-byte aligned), fills with zeros before
//! the launch and reads back after it (format: `trident_profile::format`). Markers and
//! unprofiled kernels have no hidden parameter.
//!
//! **Sanitize mode** (`GpuOptions::sanitize`, [`PtxKernel::sanitize`]) adds, after those, one
//! `.param .u64` per pointer parameter (its buffer's extent in bytes) and the address of a
//! 32-byte violation record the launcher zero-fills and reads back: see [`sanitize`].
//!
//! The CTA is one-dimensional with `32 * num_warps` threads (`.reqntid`); the grid is
//! up to three-dimensional (`program_id(axis)` is `%ctaid.{x,y,z}`). Shared memory is
//! dynamic (`.extern .shared global_smem[]`): launch with [`PtxKernel::shared_bytes`]
//! bytes (above 48 KiB a launcher must raise the function's dynamic shared memory limit);
//! the profile rings, when there are any, are part of it.

pub mod control;
pub mod convert;
pub mod dce;
pub mod debug;
pub mod dot;
pub mod elementwise;
pub mod emitter;
pub mod gather;
pub mod inline_asm;
pub mod math;
pub mod math_f64;
pub mod memory;
pub mod profile;
pub mod reduce;
pub mod regs;
pub mod sanitize;
pub mod shape;
pub mod smem_addr;
pub mod tma;
pub mod wgmma;

use crate::analysis::AxisAnalysis;
use crate::machine::probe::ProbeGeometry;
use crate::machine::Target;
use crate::options::GpuOptions;
use emitter::Emitter;
use regs::{class_of, RegClass};
use std::fmt::Write;
use trident_ir::discardable::SMEM_TOTAL;
use trident_ir::{DType, Diagnostic, Elem, Module, Type};

/// How a kernel parameter is passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AbiType {
    /// A global pointer to elements of this type.
    Pointer(DType),
    Scalar(DType),
}

impl AbiType {
    /// The `.param` type.
    pub fn ptx_type(&self) -> &'static str {
        match self {
            AbiType::Pointer(_) => "u64",
            AbiType::Scalar(d) => match d {
                DType::I64 | DType::U64 => "u64",
                DType::F64 => "f64",
                DType::F32 => "f32",
                _ => "u32",
            },
        }
    }

    /// Bytes of the parameter.
    pub fn size(&self) -> u32 {
        match self.ptx_type() {
            "u64" | "f64" => 8,
            _ => 4,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AbiParam {
    /// Source name of the parameter.
    pub name: String,
    pub ty: AbiType,
}

/// A compiled kernel.
#[derive(Clone, Debug)]
pub struct PtxKernel {
    pub ptx: String,
    /// The `.entry` name.
    pub entry: String,
    /// Threads per CTA (`32 * num_warps`).
    pub num_threads: u32,
    /// Dynamic shared memory to launch with, in bytes.
    pub shared_bytes: u32,
    /// The IR's parameters (the hidden profile buffer is not listed: see
    /// [`PtxKernel::profile_buffer`]).
    pub params: Vec<AbiParam>,
    pub target: Target,
    /// Whether the kernel takes the profile buffer's address as a hidden last `.param .u64`
    /// (compiled with real profiling probes; see the module's ABI notes).
    pub profile_buffer: bool,
    /// Compiled in sanitize mode: its hidden parameters (after the profile buffer) and
    /// access sites (see [`sanitize`]).
    pub sanitize: Option<sanitize::SanitizeInfo>,
    /// The tensor maps the launch builds and passes by value, as hidden 128-byte parameters
    /// after every other one, in this order (see [`tma`]).
    pub tensor_maps: Vec<tma::TensorMapSpec>,
}

fn abi_of(t: &Type) -> Result<AbiType, String> {
    match t {
        Type::Scalar(Elem::Ptr { pointee, .. }) => Ok(AbiType::Pointer(*pointee)),
        Type::Scalar(Elem::Num(d)) => Ok(AbiType::Scalar(*d)),
        Type::Tensor { .. } => Err(format!("kernel parameters must be scalars or pointers, not `{t}`")),
    }
}

/// Emits PTX for `kernel`, a function of `m` already lowered to GPU IR by the GPU passes
/// (every tensor has a layout; shared memory is planned: see
/// [`crate::GpuPipeline::lower`]). Emission decides nothing the IR states: it reads the
/// shared-memory offsets, the total and the wgmma shared operands recorded there.
pub fn emit_gpu_ir(m: &Module, kernel: &str, opts: &GpuOptions) -> Result<PtxKernel, Diagnostic> {
    let f = m.func(kernel).ok_or_else(|| Diagnostic::error(format!("no kernel named `{kernel}` in the module")))?;
    let shared_bytes = match f.attrs.int(SMEM_TOTAL).map(u32::try_from) {
        Some(Ok(n)) => n,
        _ => {
            return Err(Diagnostic::error(format!(
                "kernel `{kernel}` has no shared-memory plan (`{SMEM_TOTAL}`): run the GPU pipeline first"
            )))
        }
    };
    let axis = AxisAnalysis::run(f);
    let mut e = Emitter::new(f, &m.files, opts, &axis);
    let entry = ptx_ident(&f.name);
    let mut params = vec![];
    let mut param_text = String::new();
    let mut loads = String::new();
    // Pointer parameters' registers (sanitize mode checks accesses against their buffers).
    let mut bases: Vec<Option<regs::Reg>> = vec![None; f.params.len()];
    for (i, p) in f.params.iter().enumerate() {
        let t = f.ty(p.value);
        let abi = abi_of(t).map_err(|m| Diagnostic::error(m).at(f.loc, 1))?;
        let pname = format!("{entry}_param_{i}");
        let _ = write!(param_text, "{}\t.param .{} {pname}", if i > 0 { ",\n" } else { "" }, abi.ptx_type());
        let class = class_of(t.elem());
        let r = e.new_reg(class);
        match (&abi, class) {
            (AbiType::Pointer(_), _) => {
                let _ = writeln!(loads, "\tld.param.u64 {r}, [{pname}];");
                bases[i] = Some(r);
            }
            (AbiType::Scalar(_), RegClass::B64) => {
                let _ = writeln!(loads, "\tld.param.{} {r}, [{pname}];", abi.ptx_type());
            }
            (AbiType::Scalar(DType::F32), _) => {
                let _ = writeln!(loads, "\tld.param.f32 {r}, [{pname}];");
            }
            (AbiType::Scalar(d), RegClass::B32) => {
                let _ = (d, writeln!(loads, "\tld.param.u32 {r}, [{pname}];"));
            }
            (AbiType::Scalar(d), RegClass::B16) => {
                let w = e.new_reg(RegClass::B32);
                let _ = writeln!(loads, "\tld.param.u32 {w}, [{pname}];\n\tcvt.u16.u32 {r}, {w};");
                match d {
                    DType::I8 => {
                        let _ = writeln!(loads, "\tcvt.s16.s8 {r}, {r};");
                    }
                    DType::U8 | DType::F8E4M3 | DType::F8E5M2 => {
                        let _ = writeln!(loads, "\tand.b16 {r}, {r}, 255;");
                    }
                    _ => {}
                }
            }
            (AbiType::Scalar(_), RegClass::Pred) => {
                let w = e.new_reg(RegClass::B32);
                let _ = writeln!(loads, "\tld.param.u32 {w}, [{pname}];\n\tsetp.ne.u32 {r}, {w}, 0;");
            }
        }
        e.set(p.value, vec![r]);
        params.push(AbiParam { name: p.name.clone(), ty: abi });
    }
    e.records = profile::RecordLowering::new(f, &m.files, opts.profile.map(|p| p.mode))?;
    let probes = ProbeGeometry::of(opts, crate::machine::probe::producer_warps(f));
    if let Some(geom) = probes {
        let pname = format!("{entry}_param_{}", f.params.len());
        let _ = write!(param_text, "{}\t.param .u64 {pname}", if f.params.is_empty() { "" } else { ",\n" });
        let buffer = e.new_reg(RegClass::B64);
        let _ = writeln!(loads, "\tld.param.u64 {buffer}, [{pname}];");
        e.setup_probes(geom, buffer)?;
    }
    debug_assert_eq!(probes.is_some(), opts.profile.is_some_and(|p| p.mode.has_probes()));
    if opts.sanitize {
        if f.params.len() > 255 {
            return Err(
                Diagnostic::error("sanitize: kernels with more than 255 parameters are not supported").at(f.loc, 1)
            );
        }
        let first = f.params.len() + probes.is_some() as usize;
        let (ptrs, record) = sanitize::load_hidden(&mut e, &entry, first, &bases, &mut param_text, &mut loads);
        let (key, seq) = e.sanitize_prologue();
        e.san = Some(sanitize::Sanitizer::new(f, ptrs, record, key, seq));
    }
    let first_map =
        f.params.len() + probes.is_some() as usize + e.san.as_ref().map_or(0, |s| s.info.pointer_params.len() + 1);
    let tensor_maps = e.declare_tensor_maps(&entry, first_map, &mut param_text)?;
    e.block(f.body)?;
    if !e.pending_wgmma.is_empty() {
        e.ins("wgmma.wait_group.sync.aligned 0");
    }
    e.probes_exit()?;
    let entry_reads = e.probes_entry();
    let (pro, body) = e.take_text();
    // A warp-specialized kernel's producer warps come after the `num_warps` the layouts describe.
    let producer_warps = crate::machine::probe::producer_warps(f);
    let threads = 32 * (opts.num_warps + producer_warps);
    let mut out = String::new();
    let _ =
        writeln!(out, "//\n// Generated by Trident (trident-gpu) for {}, {} warps\n//\n", opts.target, opts.num_warps);
    let _ = writeln!(
        out,
        ".version {}.{}\n.target {}\n.address_size 64\n",
        e.ptx_version / 10,
        e.ptx_version % 10,
        opts.target.arch()
    );
    if e.uses_vprintf {
        out.push_str(".extern .func (.param .b32 func_retval0) vprintf\n(\n\t.param .b64 vprintf_param_0,\n\t.param .b64 vprintf_param_1\n);\n\n");
    }
    for (name, bytes) in &e.strings {
        let list: Vec<String> = bytes.iter().map(|b| b.to_string()).collect();
        let _ = writeln!(out, ".global .align 1 .b8 {name}[{}] = {{{}}};", bytes.len(), list.join(", "));
    }
    if opts.line_info {
        for (i, file) in m.files.iter().enumerate() {
            let _ = writeln!(out, ".file {} \"{}\"", i + 1, file.path.replace('\\', "\\\\").replace('"', "\\\""));
        }
    }
    if shared_bytes > 0 {
        // wgmma's swizzled tiles repeat every 1024 bytes from an aligned address.
        let align = if opts.target.has_wgmma() { 1024 } else { 16 };
        let _ = writeln!(out, ".extern .shared .align {align} .b8 global_smem[];");
    }
    let _ = writeln!(out, "\n.visible .entry {entry}(\n{param_text}\n)\n.reqntid {threads}");
    // Warpgroups that move registers (`setmaxnreg`): the count at entry, so that ptxas
    // honours the moves, and they must fit in it.
    if let Some((producer_regs, consumer_regs)) = f.all_ops().into_iter().find_map(|o| match f.ops[o].kind {
        trident_ir::OpKind::WarpSpecialize { producer_regs, consumer_regs, .. } if producer_regs > 0 => {
            Some((producer_regs, consumer_regs))
        }
        _ => None,
    }) {
        let entry_regs = crate::machine::regs::entry_registers(threads);
        let need = 32 * opts.num_warps * consumer_regs + 32 * producer_warps * producer_regs;
        if need > threads * entry_regs {
            return Err(Diagnostic::error(format!(
                "internal: {consumer_regs} registers for {} consumer threads and {producer_regs} for {} producer \
                 threads need {need}, more than the {} of {threads} threads at {entry_regs}",
                32 * opts.num_warps,
                32 * producer_warps,
                threads * entry_regs
            )));
        }
        let _ = writeln!(out, ".maxnreg {entry_regs}");
    }
    out.push_str("{\n");
    out.push_str(&e.reg_decls());
    if e.printf_buffer > 0 {
        let _ = writeln!(out, "\t.local .align 8 .b8 __printf_buf[{}];", e.printf_buffer);
    }
    // Parameter loads and the prologue go through the same elimination as the body.
    let code = dce::eliminate(&format!("{loads}{pro}{entry_reads}{body}"));
    out.push_str(&code);
    out.push_str("\tret;\n}\n");
    Ok(PtxKernel {
        ptx: out,
        entry,
        num_threads: threads,
        shared_bytes,
        params,
        target: opts.target,
        profile_buffer: probes.is_some(),
        sanitize: e.san.take().map(|s| s.info),
        tensor_maps,
    })
}

/// A PTX identifier for a kernel name.
fn ptx_ident(name: &str) -> String {
    let mut s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '$' { c } else { '_' }).collect();
    if s.is_empty() || s.as_bytes()[0].is_ascii_digit() {
        s.insert(0, '_');
    }
    s
}
