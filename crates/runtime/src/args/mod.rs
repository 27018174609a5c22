//! Kernel arguments on the command line: `NAME=VALUE` words parsed into [`ArgSpec`]s
//! and materialised into [`Arg`]s (files read, tensors generated). The command lines
//! around them (`trident run`/`bench`: kernel, grid, options) are parsed by [`command`].
//!
//! Every kernel parameter, constexprs included, is given as `NAME=VALUE`:
//!
//! | VALUE | meaning |
//! |---|---|
//! | `@PATH.npy` | a tensor read from a `.npy` file, with the file's dtype and shape |
//! | `@PATH.npy:DTYPE` | the same, converted to DTYPE: how to pass a bf16 or fp8 tensor, which `.npy` files hold as f32 |
//! | `KIND:DTYPE:SHAPE` | a generated tensor; KIND is `zeros`, `ones`, `empty`, `rand` or `randn`; SHAPE is `128x64` (empty for a 0-d tensor) |
//! | `42`, `-3`, `0x1f` | an integer (Python's `int(v, 0)` syntax) |
//! | `0.5`, `1e-05`, `inf` | a float |
//! | `True`, `False` | a bool (`true`/`false` too) |
//! | `None` | Python's `None`: a compile-time value for any parameter (an absent optional pointer) |
//! | `f16`, `fp16`, `tl.float16` | a dtype, a compile-time value (for `x.to(OUT_DTYPE)`) |
//! | `'gelu'`, `"gelu"` | a string, for `tl.constexpr` parameters (the quotes are part of VALUE: `ACT="'gelu'"` in a shell) |
//!
//! In `@PATH:DTYPE` the suffix after the last `:` is taken as a dtype when it
//! contains neither `/` nor `.`; so `@x.npy:bf16` declares bf16, while
//! `@C:/data/x.npy` stays a path.
//!
//! Generated tensors (see [`crate::rng`] for the exact streams): `rand` and
//! `randn` are deterministic given `--seed` (default 0), each argument drawing
//! from its own stream named by the argument name; `empty` is *poisoned* so
//! that a kernel which reads memory it never wrote, or a check that looks at
//! elements the kernel should not touch, shows it: NaN for float dtypes and
//! bytes `0xAB` for integer dtypes (`0xABAB_ABAB` = -1414812757 as i32; bool
//! elements hold the byte 0xAB, which reads as true). This differs from the
//! Triton oracle, whose `empty` is zero-filled.
//!
//! Tensors are passed to kernels as pointers to their first element.

use std::fmt;
use std::path::{Path, PathBuf};

use trident_core::tensor::encode_f64;
use trident_core::{DType, HostTensor};

use crate::error::RunError;
use crate::npy;
use crate::rng::{generate, Distribution, SplitMix64};

pub mod command;

pub use command::{
    flags_help, parse_grid, parse_save, Backend, BenchOptions, Flag, Grid, LineKind, ProfileFlags, PtxCommand, PtxSave,
    RunCommand, RunLine, SaveSpec, FLAGS,
};

/// The value of one kernel argument, ready to launch with.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    /// A tensor: the kernel receives a pointer to its first element.
    Tensor(HostTensor),
    /// An integer scalar (Triton passes it as i32 when it fits, else i64).
    Int(i64),
    /// A float scalar (fp32 inside a Triton kernel).
    Float(f64),
    /// A bool scalar (`True`/`False`).
    Bool(bool),
    /// A string (`'gelu'`): for `tl.constexpr` parameters only.
    Str(String),
    /// A dtype (`fp16`, `tl.float16`): a compile-time value, as in Triton.
    DType(DType),
    /// `None`: a compile-time value for any parameter (e.g. an absent bias pointer), as in Triton.
    None,
    /// A tuple of compile-time values (`(2, 8)` for a `tl.constexpr` shape): from the Python
    /// package; `tl.constexpr` parameters only.
    Tuple(Vec<ArgValue>),
    /// Memory on a CUDA device that the caller owns (a torch CUDA tensor, an object with
    /// `__cuda_array_interface__`): the kernel receives its address and works on it in place.
    /// The CUDA backend only; from the Python package.
    Device(DeviceArray),
    /// A host-side tensor descriptor (Triton's `TensorDescriptor`): a tensor (host or
    /// device) read and written by the kernel in boxes of a fixed shape.
    Descriptor(Box<DescriptorArg>),
}

/// A host-side tensor descriptor ([`ArgValue::Descriptor`]). The kernel receives the base's
/// address, the shape and the strides as hidden parameters (the compiled kernel's slot for
/// the parameter lists them, see `ParamSlot::parts`); the block shape and padding are part of
/// its specialization.
#[derive(Clone, Debug, PartialEq)]
pub struct DescriptorArg {
    /// The tensor: [`ArgValue::Tensor`] or [`ArgValue::Device`].
    pub base: ArgValue,
    /// Size of each dimension, outermost first.
    pub shape: Vec<i64>,
    /// Stride of each dimension in elements; the last must be 1.
    pub strides: Vec<i64>,
    /// The box shape of every access.
    pub block: Vec<u32>,
    /// Out-of-bounds elements read as NaN (`padding="nan"`), else 0.
    pub nan: bool,
}

impl DescriptorArg {
    /// The names of the hidden parameters after the descriptor's own (`x.base`,
    /// `x.shape[0]`.., `x.strides[0]`.. but the last), in the order [`DescriptorArg::parts`]
    /// gives their values.
    pub fn part_names(name: &str, rank: usize) -> Vec<String> {
        let mut v = vec![format!("{name}.base")];
        v.extend((0..rank).map(|d| format!("{name}.shape[{d}]")));
        v.extend((0..rank.saturating_sub(1)).map(|d| format!("{name}.strides[{d}]")));
        v
    }

    /// The values of the hidden parameters: the base, the shape, the strides but the last.
    pub fn parts(&self) -> Vec<ArgValue> {
        let mut v = vec![self.base.clone()];
        v.extend(self.shape.iter().map(|&d| ArgValue::Int(d)));
        v.extend(self.strides.iter().take(self.strides.len().saturating_sub(1)).map(|&d| ArgValue::Int(d)));
        v
    }

    /// Triton's rules for a host descriptor, plus one it leaves to the hardware: the
    /// described elements lie inside the base's memory. The message does not name the argument.
    pub fn check(&self) -> Result<(), String> {
        let rank = self.block.len();
        let Some((dtype, nbytes)) = self.base.array() else {
            return Err("a tensor descriptor's base must be a tensor".into());
        };
        if self.shape.len() != rank || self.strides.len() != rank {
            return Err(format!(
                "shape {:?}, strides {:?} and block shape {:?} of a tensor descriptor must have the same length",
                self.shape, self.strides, self.block
            ));
        }
        if !(1..=5).contains(&rank) {
            return Err(format!("a tensor descriptor has rank 1 to 5, not {rank}"));
        }
        if let Some(b) = self.block.iter().find(|b| !b.is_power_of_two()) {
            return Err(format!("block shape {:?} has {b}, not a power of 2", self.block));
        }
        let numel = self.block.iter().try_fold(1u64, |a, &b| a.checked_mul(b as u64));
        if numel.is_none_or(|n| n > 1 << 20) {
            return Err(format!("block shape {:?} has more than 2^20 elements", self.block));
        }
        // (int32, as Triton passes a descriptor's sizes.)
        if let Some(d) = self.shape.iter().find(|&&d| d <= 0 || d > i32::MAX as i64) {
            return Err(format!("shape {:?} has {d}; every dimension must be 1 to 2^31 - 1", self.shape));
        }
        if self.strides[rank - 1] != 1 {
            return Err(format!("strides {:?}: the last dimension must be contiguous (stride 1)", self.strides));
        }
        let esize = dtype.size_bytes().max(1) as i64;
        if let Some(s) =
            self.strides[..rank - 1].iter().find(|&&s| s <= 0 || s.checked_mul(esize).is_none_or(|b| b % 16 != 0))
        {
            return Err(format!(
                "strides {:?} has {s}: every stride but the last must be a positive multiple of 16 bytes ({} elements of {dtype})",
                self.strides,
                16 / esize.min(16)
            ));
        }
        if let ArgValue::Device(d) = &self.base {
            if d.address % 16 != 0 {
                return Err(format!("the base address {:#x} is not 16-byte aligned", d.address));
            }
        }
        // The last element described, in elements from the base (checked arithmetic: the
        // values come from the caller).
        let last = self
            .shape
            .iter()
            .zip(&self.strides)
            .try_fold(0i64, |acc, (&n, &s)| acc.checked_add((n - 1).checked_mul(s)?));
        let len = nbytes as i64 / esize;
        match last {
            Some(l) if l < len => Ok(()),
            _ => Err(format!(
                "shape {:?} with strides {:?} reaches beyond the base's {len} elements",
                self.shape, self.strides
            )),
        }
    }
}

/// A caller's array in device memory ([`ArgValue::Device`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceArray {
    /// The element type the kernel sees.
    pub dtype: DType,
    /// The first element's device address.
    pub address: u64,
    /// Bytes from the first element to the end of the last one the array reaches.
    pub nbytes: usize,
}

impl ArgValue {
    /// The tensor, if this is one, or the host tensor a descriptor describes.
    pub fn as_tensor(&self) -> Option<&HostTensor> {
        match self {
            ArgValue::Tensor(t) => Some(t),
            ArgValue::Descriptor(d) => d.base.as_tensor(),
            _ => None,
        }
    }

    /// An array's element type and length in bytes: host tensors and device arrays.
    pub fn array(&self) -> Option<(DType, usize)> {
        match self {
            ArgValue::Tensor(t) => Some((t.dtype, t.data.len())),
            ArgValue::Device(d) => Some((d.dtype, d.nbytes)),
            _ => None,
        }
    }

    /// The value as an integer: ints, and bools as 0/1.
    pub fn as_int(&self) -> Option<i64> {
        match *self {
            ArgValue::Int(v) => Some(v),
            ArgValue::Bool(b) => Some(b as i64),
            _ => None,
        }
    }

    /// The value as a float: floats, and ints converted.
    pub fn as_float(&self) -> Option<f64> {
        match *self {
            ArgValue::Float(v) => Some(v),
            ArgValue::Int(v) => Some(v as f64),
            _ => None,
        }
    }

    /// The value as a bool: bools only.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            ArgValue::Bool(b) => Some(b),
            _ => None,
        }
    }
}

/// A bad argument: which one, and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgError {
    /// The argument's name (`x`), the option (`--grid`), or the offending token when it has no name.
    pub arg: String,
    /// What is wrong, quoting the text given.
    pub message: String,
}

impl ArgError {
    /// An error about argument `arg`.
    pub fn new(arg: impl Into<String>, message: impl Into<String>) -> ArgError {
        ArgError { arg: arg.into(), message: message.into() }
    }
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "argument `{}`: {}", self.arg, self.message)
    }
}

impl std::error::Error for ArgError {}

impl From<ArgError> for RunError {
    /// A bad command-line word, as `trident run` reports it: `error: argument `x`: ...`.
    fn from(e: ArgError) -> RunError {
        RunError::argument(e.to_string())
    }
}

/// How a generated tensor is filled.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TensorKind {
    /// All zeros.
    Zeros,
    /// All ones.
    Ones,
    /// Poisoned: NaN for floats, 0xAB bytes for integers.
    Empty,
    /// Uniform: floats in [0, 1), integers in 0..100.
    Rand,
    /// Standard normal (integers: rounded toward zero).
    Randn,
}

impl TensorKind {
    /// Parses `zeros`, `ones`, `empty`, `rand` or `randn`.
    pub fn parse(s: &str) -> Option<TensorKind> {
        Some(match s {
            "zeros" => TensorKind::Zeros,
            "ones" => TensorKind::Ones,
            "empty" => TensorKind::Empty,
            "rand" => TensorKind::Rand,
            "randn" => TensorKind::Randn,
            _ => return None,
        })
    }

    /// The spelling on the command line.
    pub fn name(self) -> &'static str {
        match self {
            TensorKind::Zeros => "zeros",
            TensorKind::Ones => "ones",
            TensorKind::Empty => "empty",
            TensorKind::Rand => "rand",
            TensorKind::Randn => "randn",
        }
    }
}

/// A parsed but not yet materialised VALUE: nothing read, nothing generated.
#[derive(Clone, Debug, PartialEq)]
pub enum ValueSpec {
    /// `@PATH` or `@PATH:DTYPE`.
    File {
        /// The file to read.
        path: PathBuf,
        /// The dtype to convert to (`@PATH:DTYPE`); the file's own when `None`.
        dtype: Option<DType>,
    },
    /// `KIND:DTYPE:SHAPE`.
    Generated {
        /// How the elements are filled.
        kind: TensorKind,
        /// Element type.
        dtype: DType,
        /// Shape (empty for a 0-d tensor).
        shape: Vec<usize>,
    },
    /// An integer literal.
    Int(i64),
    /// A float literal.
    Float(f64),
    /// `True` or `False`.
    Bool(bool),
    /// `'text'` or `"text"`.
    Str(String),
    /// A dtype name: `f16`, `fp16`, `float16`, `tl.float16`.
    DType(DType),
    /// `None`.
    None,
    /// `desc[BLOCK]:TENSOR` or `desc[BLOCK,nan]:TENSOR`: a host tensor descriptor (Triton's
    /// `TensorDescriptor.from_tensor`) over a file or generated tensor, read in `BLOCK`
    /// boxes (`64x64`); out-of-bounds elements read 0, or NaN with `,nan`.
    Descriptor {
        /// The box shape.
        block: Vec<usize>,
        /// NaN padding.
        nan: bool,
        /// The tensor: a [`ValueSpec::File`] or [`ValueSpec::Generated`].
        tensor: Box<ValueSpec>,
    },
}

/// One `NAME=VALUE`, parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct ArgSpec {
    /// The parameter name.
    pub name: String,
    /// The text as given, `NAME=VALUE`, for messages.
    pub text: String,
    /// The parsed value.
    pub spec: ValueSpec,
}

/// One argument with its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    /// The parameter name.
    pub name: String,
    /// The text as given, `NAME=VALUE`, for messages.
    pub text: String,
    /// The value.
    pub value: ArgValue,
}

/// Parses `NAME=VALUE` (syntax only: files are not read, tensors not generated).
pub fn parse_arg(text: &str) -> Result<ArgSpec, ArgError> {
    let Some((name, value)) = text.split_once('=') else {
        return Err(ArgError::new(text, "expected NAME=VALUE"));
    };
    if !is_identifier(name) {
        return Err(ArgError::new(text, format!("`{name}` is not a parameter name")));
    }
    let spec = parse_value(value).map_err(|m| ArgError::new(name, format!("{m} (in `{text}`)")))?;
    Ok(ArgSpec { name: name.to_string(), text: text.to_string(), spec })
}

/// Parses and materialises `NAME=VALUE` in one step (see [`ArgSpec::materialize`]).
pub fn parse_and_materialize(text: &str, seed: u64) -> Result<Arg, ArgError> {
    parse_arg(text)?.materialize(seed)
}

impl ArgSpec {
    /// Reads the file or generates the tensor; `seed` is the run's `--seed`.
    pub fn materialize(&self, seed: u64) -> Result<Arg, ArgError> {
        let err = |m: String| ArgError::new(&self.name, format!("{m} (in `{}`)", self.text));
        let value = match &self.spec {
            ValueSpec::File { path, dtype } => {
                let t = match dtype {
                    Some(dt) => npy::read_as(path, *dt),
                    None => npy::read(path),
                }
                .map_err(|e| err(e.to_string()))?;
                ArgValue::Tensor(t)
            }
            ValueSpec::Generated { kind, dtype, shape } => {
                check_size(*dtype, shape).map_err(err)?;
                ArgValue::Tensor(generate_tensor(*kind, *dtype, shape, seed, &self.name))
            }
            ValueSpec::Int(v) => ArgValue::Int(*v),
            ValueSpec::Float(v) => ArgValue::Float(*v),
            ValueSpec::Bool(v) => ArgValue::Bool(*v),
            ValueSpec::Str(s) => ArgValue::Str(s.clone()),
            ValueSpec::DType(d) => ArgValue::DType(*d),
            ValueSpec::None => ArgValue::None,
            ValueSpec::Descriptor { block, nan, tensor } => {
                let inner = ArgSpec { spec: (**tensor).clone(), ..self.clone() }.materialize(seed)?;
                let ArgValue::Tensor(t) = inner.value else {
                    return Err(err("a descriptor describes a tensor".into()));
                };
                if t.shape.is_empty() {
                    return Err(err("a descriptor needs a tensor of rank 1 or more, not a 0-d one".into()));
                }
                // Row-major strides, as `TensorDescriptor.from_tensor` reads them off a contiguous tensor.
                let mut strides = vec![1i64; t.shape.len()];
                for d in (0..t.shape.len() - 1).rev() {
                    strides[d] = strides[d + 1] * t.shape[d + 1] as i64;
                }
                let d = DescriptorArg {
                    shape: t.shape.iter().map(|&n| n as i64).collect(),
                    strides,
                    block: block
                        .iter()
                        .map(|&b| u32::try_from(b).map_err(|_| err(format!("a block dimension of {b}"))))
                        .collect::<Result<_, _>>()?,
                    nan: *nan,
                    base: ArgValue::Tensor(t),
                };
                d.check().map_err(err)?;
                ArgValue::Descriptor(Box::new(d))
            }
        };
        Ok(Arg { name: self.name.clone(), text: self.text.clone(), value })
    }

    /// For generated tensors, their dtype and shape (known without materialising).
    pub fn generated_layout(&self) -> Option<(DType, &[usize])> {
        match &self.spec {
            ValueSpec::Generated { dtype, shape, .. } => Some((*dtype, shape)),
            ValueSpec::Descriptor { tensor, .. } => match &**tensor {
                ValueSpec::Generated { dtype, shape, .. } => Some((*dtype, shape)),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Materialises every spec, rejecting a name given twice.
pub fn materialize_all(specs: &[ArgSpec], seed: u64) -> Result<Vec<Arg>, ArgError> {
    let mut out: Vec<Arg> = Vec::with_capacity(specs.len());
    for s in specs {
        if out.iter().any(|a| a.name == s.name) {
            return Err(ArgError::new(&s.name, format!("given twice (again in `{}`)", s.text)));
        }
        out.push(s.materialize(seed)?);
    }
    Ok(out)
}

/// Builds a generated tensor; `name` picks the random stream (see [`crate::rng`]).
pub fn generate_tensor(kind: TensorKind, dtype: DType, shape: &[usize], seed: u64, name: &str) -> HostTensor {
    match kind {
        TensorKind::Zeros => HostTensor::zeros(dtype, shape),
        TensorKind::Ones => {
            let mut t = HostTensor::zeros(dtype, shape);
            let w = dtype.size_bytes();
            let mut one = [0u8; 8];
            encode_f64(dtype, 1.0, &mut one[..w]);
            for e in t.data.chunks_exact_mut(w) {
                e.copy_from_slice(&one[..w]);
            }
            t
        }
        TensorKind::Empty => poisoned(dtype, shape),
        TensorKind::Rand => generate(&mut SplitMix64::for_argument(seed, name), Distribution::Uniform, dtype, shape),
        TensorKind::Randn => generate(&mut SplitMix64::for_argument(seed, name), Distribution::Normal, dtype, shape),
    }
}

/// The byte every element of a poisoned integer tensor is filled with.
pub const POISON_BYTE: u8 = 0xAB;

/// A tensor filled with the `empty` poison: NaN for floats, [`POISON_BYTE`] for integers and bool.
pub fn poisoned(dtype: DType, shape: &[usize]) -> HostTensor {
    let mut t = HostTensor::zeros(dtype, shape);
    if dtype.is_float() {
        let w = dtype.size_bytes();
        let mut nan = [0u8; 8];
        encode_f64(dtype, f64::NAN, &mut nan[..w]);
        for e in t.data.chunks_exact_mut(w) {
            e.copy_from_slice(&nan[..w]);
        }
    } else {
        t.data.fill(POISON_BYTE);
    }
    t
}

fn check_size(dtype: DType, shape: &[usize]) -> Result<(), String> {
    let bytes = shape.iter().try_fold(dtype.size_bytes(), |a, &d| a.checked_mul(d));
    match bytes {
        Some(b) if b <= npy::MAX_BYTES => Ok(()),
        _ => Err(format!("a {dtype} tensor of shape {shape:?} is larger than {} bytes", npy::MAX_BYTES)),
    }
}

pub(crate) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_alphabetic() || c == '_') && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// Parses a VALUE (the part after `NAME=`).
pub fn parse_value(v: &str) -> Result<ValueSpec, String> {
    if let Some(rest) = v.strip_prefix("desc[") {
        return parse_descriptor(rest);
    }
    if let Some(rest) = v.strip_prefix('@') {
        return parse_file(rest);
    }
    let head = v.split(':').next().unwrap_or("");
    if let Some(kind) = TensorKind::parse(head) {
        return parse_generated(kind, v);
    }
    parse_scalar(v)
}

/// `desc[BLOCK]:TENSOR` after `desc[`.
fn parse_descriptor(rest: &str) -> Result<ValueSpec, String> {
    const FORM: &str = "expected desc[BLOCK]:TENSOR or desc[BLOCK,nan]:TENSOR, e.g. desc[64x64]:randn:f16:256x128";
    let Some((inside, tensor)) = rest.split_once("]:") else { return Err(FORM.into()) };
    let (block, nan) = match inside.split_once(',') {
        Some((b, "nan")) => (b, true),
        Some((b, "zero")) => (b, false),
        Some((_, other)) => return Err(format!("unknown padding `{other}` in a descriptor (zero or nan)")),
        None => (inside, false),
    };
    let block = parse_shape(block)?;
    let tensor = match parse_value(tensor)? {
        t @ (ValueSpec::File { .. } | ValueSpec::Generated { .. }) => t,
        _ => {
            return Err(format!("a descriptor describes a tensor (a file or a generated one), not `{tensor}`; {FORM}"))
        }
    };
    Ok(ValueSpec::Descriptor { block, nan, tensor: Box::new(tensor) })
}

fn parse_file(rest: &str) -> Result<ValueSpec, String> {
    if let Some((path, suffix)) = rest.rsplit_once(':') {
        if !suffix.is_empty() && !suffix.contains(['/', '\\', '.']) {
            let dtype = DType::parse(suffix).ok_or_else(|| format!("unknown dtype `{suffix}` after the file name"))?;
            if path.is_empty() {
                return Err("missing file name after `@`".into());
            }
            return Ok(ValueSpec::File { path: PathBuf::from(path), dtype: Some(dtype) });
        }
    }
    if rest.is_empty() {
        return Err("missing file name after `@`".into());
    }
    Ok(ValueSpec::File { path: Path::new(rest).to_path_buf(), dtype: None })
}

fn parse_generated(kind: TensorKind, v: &str) -> Result<ValueSpec, String> {
    let parts: Vec<&str> = v.split(':').collect();
    if parts.len() < 2 || parts.len() > 3 {
        return Err(format!("expected {}:DTYPE:SHAPE, e.g. {}:f32:128x64", kind.name(), kind.name()));
    }
    let dtype = DType::parse(parts[1]).ok_or_else(|| format!("unknown dtype `{}`", parts[1]))?;
    let shape = match parts.get(2) {
        None | Some(&"") => Vec::new(),
        Some(s) => parse_shape(s)?,
    };
    Ok(ValueSpec::Generated { kind, dtype, shape })
}

/// Parses `128x64` into `[128, 64]` (dimensions may be 0).
pub fn parse_shape(s: &str) -> Result<Vec<usize>, String> {
    s.split('x')
        .map(|d| {
            if d.is_empty() || !d.bytes().all(|b| b.is_ascii_digit()) {
                Err(format!("bad shape `{s}`: dimensions are non-negative integers separated by `x`"))
            } else {
                d.parse::<usize>().map_err(|_| format!("bad shape `{s}`: dimension `{d}` is too large"))
            }
        })
        .collect()
}

/// Parses a scalar literal: bool, then integer (Python `int(v, 0)` rules), then float.
pub fn parse_scalar(v: &str) -> Result<ValueSpec, String> {
    match v {
        "True" | "true" => return Ok(ValueSpec::Bool(true)),
        "False" | "false" => return Ok(ValueSpec::Bool(false)),
        "None" => return Ok(ValueSpec::None),
        _ => {}
    }
    // A quoted string (the quotes survive the shell when written `NAME="'gelu'"` or `NAME=\'gelu\'`).
    for q in ['\'', '"'] {
        if let Some(inner) = v.strip_prefix(q) {
            return match inner.strip_suffix(q) {
                Some(s) if !s.contains(q) => Ok(ValueSpec::Str(s.to_string())),
                _ => Err(format!("`{v}` is not a string: expected {q}text{q}")),
            };
        }
    }
    if let Some(d) = DType::parse(v.strip_prefix("tl.").unwrap_or(v)) {
        return Ok(ValueSpec::DType(d));
    }
    match parse_python_int(v) {
        Some(Ok(i)) => return Ok(ValueSpec::Int(i)),
        Some(Err(m)) => return Err(m),
        None => {}
    }
    let cleaned = strip_digit_underscores(v).ok_or_else(|| not_a_value(v))?;
    match cleaned.parse::<f64>() {
        Ok(f) => Ok(ValueSpec::Float(f)),
        Err(_) => Err(not_a_value(v)),
    }
}

fn not_a_value(v: &str) -> String {
    format!(
        "`{v}` is not a value: expected @FILE.npy, zeros|ones|empty|rand|randn:DTYPE:SHAPE, an integer, a float, True/False, None, a dtype or a 'string'"
    )
}

/// `None` if `v` is not integer syntax at all; `Some(Err)` if it is but does not fit in i64.
fn parse_python_int(v: &str) -> Option<Result<i64, String>> {
    let (neg, body) = match v.as_bytes().first()? {
        b'-' => (true, &v[1..]),
        b'+' => (false, &v[1..]),
        _ => (false, v),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d.trim_start_matches('_'))
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d.trim_start_matches('_'))
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d.trim_start_matches('_'))
    } else {
        // Python rejects decimal integers with leading zeros (`010`), except zero itself;
        // such text then parses as a float, as in the oracle.
        if body.len() > 1 && body.starts_with('0') && body.bytes().any(|b| b != b'0' && b != b'_') {
            return None;
        }
        (10, lower.as_str())
    };
    let digits = strip_digit_underscores(digits)?;
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = match u128::from_str_radix(&digits, radix) {
        Ok(m) => m,
        Err(_) => return Some(Err(format!("integer `{v}` does not fit in 64 bits"))),
    };
    let value = if neg { -(magnitude as i128) } else { magnitude as i128 };
    Some(i64::try_from(value).map_err(|_| format!("integer `{v}` does not fit in a signed 64-bit integer")))
}

/// Removes `_` between digits (Python's digit grouping); `None` if one is misplaced.
fn strip_digit_underscores(s: &str) -> Option<String> {
    let b = s.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'_' {
            let ok = i > 0 && i + 1 < b.len() && b[i - 1].is_ascii_alphanumeric() && b[i + 1].is_ascii_alphanumeric();
            if !ok {
                return None;
            }
        }
    }
    Some(s.replace('_', ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> ArgValue {
        parse_and_materialize(text, 0).unwrap().value
    }

    #[test]
    fn scalars() {
        assert_eq!(value("n=42"), ArgValue::Int(42));
        assert_eq!(value("n=-3"), ArgValue::Int(-3));
        assert_eq!(value("n=0x1F"), ArgValue::Int(31));
        assert_eq!(value("n=1_000"), ArgValue::Int(1000));
        assert_eq!(value("n=-9223372036854775808"), ArgValue::Int(i64::MIN));
        assert_eq!(value("eps=1e-05"), ArgValue::Float(1e-5));
        assert_eq!(value("p=0.5"), ArgValue::Float(0.5));
        assert_eq!(value("p=-inf"), ArgValue::Float(f64::NEG_INFINITY));
        // Python: int("010", 0) fails, float("010") is 10.0.
        assert_eq!(value("p=010"), ArgValue::Float(10.0));
        assert_eq!(value("c=True"), ArgValue::Bool(true));
        assert_eq!(value("c=false"), ArgValue::Bool(false));
    }

    #[test]
    fn compile_time_values() {
        assert_eq!(value("b=None"), ArgValue::None);
        assert_eq!(value("ACT='gelu'"), ArgValue::Str("gelu".into()));
        assert_eq!(value("ACT=\"tanh\""), ArgValue::Str("tanh".into()));
        assert_eq!(value("ACT=''"), ArgValue::Str(String::new()));
        assert_eq!(value("D=f16"), ArgValue::DType(DType::F16));
        assert_eq!(value("D=tl.bfloat16"), ArgValue::DType(DType::BF16));
        assert_eq!(value("D=int32"), ArgValue::DType(DType::I32));
        for bad in ["ACT='gelu", "ACT=\"a\"b\"", "ACT=gelu", "D=tl.float17"] {
            assert!(parse_and_materialize(bad, 0).is_err(), "{bad}");
        }
    }

    #[test]
    fn generated_tensors() {
        let ArgValue::Tensor(t) = value("x=randn:f16:128x64") else { panic!() };
        assert_eq!((t.dtype, t.shape.as_slice()), (DType::F16, &[128usize, 64][..]));
        let v = t.to_f64_vec();
        assert!(v.iter().any(|&x| x < -1.0) && v.iter().any(|&x| x > 1.0));

        let ArgValue::Tensor(t) = value("x=ones:bfloat16:3") else { panic!() };
        assert_eq!(t.to_f64_vec(), vec![1.0; 3]);
        let ArgValue::Tensor(t) = value("x=zeros:int32:2x0") else { panic!() };
        assert_eq!(t.numel(), 0);
        let ArgValue::Tensor(t) = value("x=rand:f32") else { panic!() };
        assert!(t.shape.is_empty() && t.numel() == 1);
    }

    #[test]
    fn empty_is_poisoned() {
        let ArgValue::Tensor(t) = value("y=empty:f16:4") else { panic!() };
        assert!(t.to_f64_vec().iter().all(|x| x.is_nan()));
        let ArgValue::Tensor(t) = value("y=empty:i32:2") else { panic!() };
        assert_eq!(t.to_f64_vec(), vec![0xABAB_ABABu32 as i32 as f64; 2]);
        let ArgValue::Tensor(t) = value("y=empty:bool:2") else { panic!() };
        assert_eq!(t.data, vec![0xAB, 0xAB]);
    }

    #[test]
    fn seeds_and_names_pick_streams() {
        let a = parse_and_materialize("x=rand:f32:16", 0).unwrap().value;
        let b = parse_and_materialize("y=rand:f32:16", 0).unwrap().value;
        let c = parse_and_materialize("x=rand:f32:16", 1).unwrap().value;
        assert_ne!(a, b);
        assert_ne!(a, c);
        assert_eq!(a, parse_and_materialize("x=rand:f32:16", 0).unwrap().value);
    }

    #[test]
    fn file_values() {
        assert_eq!(
            parse_value("@x.npy:bf16").unwrap(),
            ValueSpec::File { path: "x.npy".into(), dtype: Some(DType::BF16) }
        );
        assert_eq!(parse_value("@dir/x.npy").unwrap(), ValueSpec::File { path: "dir/x.npy".into(), dtype: None });
        assert_eq!(parse_value("@C:/d/x.npy").unwrap(), ValueSpec::File { path: "C:/d/x.npy".into(), dtype: None });
        assert!(parse_value("@x.npy:f99").unwrap_err().contains("f99"));

        let dir = std::env::temp_dir().join(format!("trident-args-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("w.npy");
        let t = generate_tensor(TensorKind::Randn, DType::BF16, &[3, 2], 4, "w");
        npy::write(&p, &t).unwrap();
        let got = parse_and_materialize(&format!("w=@{}:bf16", p.display()), 0).unwrap().value;
        assert_eq!(got, ArgValue::Tensor(t));
        let err = parse_and_materialize(&format!("w=@{}", dir.join("nope.npy").display()), 0).unwrap_err();
        assert_eq!(err.arg, "w");
        assert!(err.to_string().contains("nope.npy"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn errors_name_the_argument() {
        for (text, arg, needle) in [
            ("x=randn:f99:4", "x", "f99"),
            ("x=randn:f32:4xq", "x", "bad shape"),
            ("x=randn:f32:-4", "x", "bad shape"),
            ("x=randn", "x", "DTYPE:SHAPE"),
            ("x=rand:f32:4:5", "x", "DTYPE:SHAPE"),
            ("n=12abc", "n", "not a value"),
            ("n=99999999999999999999", "n", "64"),
            ("n=", "n", "not a value"),
            ("x", "x", "NAME=VALUE"),
            ("1x=3", "1x=3", "parameter name"),
            ("x=zeros:f64:4294967296x4294967296", "x", "larger"),
        ] {
            let err = parse_and_materialize(text, 0).unwrap_err();
            assert_eq!(err.arg, arg, "{text}");
            assert!(err.to_string().contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn descriptors_over_generated_tensors() {
        let a = parse_and_materialize("d=desc[16x32]:randn:f16:40x64", 3).unwrap();
        let ArgValue::Descriptor(d) = &a.value else { panic!("{:?}", a.value) };
        assert_eq!(
            (d.shape.as_slice(), d.strides.as_slice(), d.block.as_slice(), d.nan),
            (&[40, 64][..], &[64, 1][..], &[16, 32][..], false)
        );
        // The tensor is what the same generated tensor would be (its name picks the stream).
        let plain = parse_and_materialize("d=randn:f16:40x64", 3).unwrap();
        assert_eq!(a.value.as_tensor(), plain.value.as_tensor());
        // Hidden parameters: the base, the shape, the strides but the last.
        assert_eq!(DescriptorArg::part_names("d", 2), ["d.base", "d.shape[0]", "d.shape[1]", "d.strides[0]"]);
        assert_eq!(d.parts()[1..], [ArgValue::Int(40), ArgValue::Int(64), ArgValue::Int(64)]);
        let n = parse_and_materialize("d=desc[8x8x16,nan]:zeros:f32:3x8x20", 0).unwrap();
        let ArgValue::Descriptor(n) = &n.value else { panic!() };
        assert_eq!((n.strides.as_slice(), n.nan), (&[160, 20, 1][..], true));
    }

    #[test]
    fn descriptors_breaking_the_rules_name_the_argument() {
        for (text, needle) in [
            ("d=desc[16x32]:randn:f16:40x60", "multiple of 16 bytes"),
            ("d=desc[16x24]:randn:f32:40x64", "not a power of 2"),
            ("d=desc[16]:randn:f32:40x64", "same length"),
            ("d=desc[16x32,inf]:randn:f32:40x64", "padding"),
            ("d=desc[16x32]:3", "describes a tensor"),
            ("d=desc[16x32:randn:f32:40x64", "desc[BLOCK]"),
            ("d=desc[4096x4096]:randn:f32:40x64", "2^20"),
        ] {
            let err = parse_and_materialize(text, 0).unwrap_err();
            assert_eq!(err.arg, "d", "{text}");
            assert!(err.to_string().contains(needle), "{text}: {err}");
        }
        // Fields set by hand (the Python package's path): the extent and the base's alignment.
        let t = HostTensor::zeros(DType::F32, &[8, 8]);
        let mut d = DescriptorArg {
            base: ArgValue::Tensor(t),
            shape: vec![8, 8],
            strides: vec![8, 1],
            block: vec![8, 8],
            nan: false,
        };
        assert_eq!(d.check(), Ok(()));
        d.shape = vec![9, 8];
        assert!(d.check().unwrap_err().contains("beyond"));
        d.shape = vec![8, 8];
        d.shape = vec![9, 8];
        d.strides = vec![1 << 60, 1]; // a multiple of 16 bytes whose extent overflows
        assert!(d.check().unwrap_err().contains("beyond"));
        d.shape = vec![8, 8];
        d.strides = vec![i64::MAX / 4 + 1, 1]; // its byte count overflows
        assert!(d.check().unwrap_err().contains("16 bytes"));
        d.strides = vec![8, 1];
        d.base = ArgValue::Device(DeviceArray { dtype: DType::F32, address: 0x1004, nbytes: 256 });
        assert!(d.check().unwrap_err().contains("16-byte aligned"));
        d.base = ArgValue::Int(3);
        assert!(d.check().unwrap_err().contains("must be a tensor"));
    }
}
