//! What a test case is: a kernel, its arguments, its grid, which arguments it
//! writes, how to compute what it should write, and how closely to compare.

use std::fmt;
use std::path::PathBuf;

use trident_core::{DType, HostTensor};
use trident_runtime::args::{materialize_all, parse_arg, Arg, ArgError, ArgSpec, ArgValue, Grid};

/// Computes the expected value of every output from the materialised inputs,
/// in f64 (floats) or exactly (integers). Each returned tensor has the shape of
/// the output it stands for; elements the kernel must not touch hold the
/// output's initial value (e.g. the NaN poison of an `empty` tensor).
pub type Reference = fn(&Inputs<'_>) -> Result<Vec<(String, HostTensor)>, RefError>;

/// One kernel launch with a known answer.
#[derive(Clone)]
pub struct Case {
    /// Unique, human-readable: `softmax/f16/5x100`.
    pub name: String,
    /// The kernel file, relative to the repository root: `kernels/softmax.py`.
    pub file: &'static str,
    /// The kernel file's text (embedded at build time, so a binary can compile
    /// the bundled kernels without the source tree).
    pub source: &'static str,
    /// The `@triton.jit` function to launch.
    pub kernel: &'static str,
    /// Every parameter as `NAME=VALUE`, the syntax of `trident run`.
    pub args: Vec<String>,
    /// The launch grid.
    pub grid: Grid,
    /// `--num-warps`, when the case wants a particular value.
    pub num_warps: Option<u32>,
    /// The arguments the kernel writes, and how each is compared.
    pub outputs: Vec<OutputCheck>,
    /// Computes the expected outputs from the inputs.
    pub reference: Reference,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case")
            .field("name", &self.name)
            .field("file", &self.file)
            .field("kernel", &self.kernel)
            .field("args", &self.args)
            .field("grid", &self.grid)
            .field("outputs", &self.outputs)
            .finish_non_exhaustive()
    }
}

impl Case {
    /// The kernel file's absolute path in this source tree.
    pub fn kernel_path(&self) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(self.file)
    }

    /// The arguments, parsed (nothing generated yet).
    pub fn arg_specs(&self) -> Result<Vec<ArgSpec>, ArgError> {
        self.args.iter().map(|a| parse_arg(a)).collect()
    }

    /// The arguments with their values: generated tensors are deterministic in `seed`,
    /// outputs given as `empty` are poisoned.
    pub fn materialize(&self, seed: u64) -> Result<Vec<Arg>, ArgError> {
        materialize_all(&self.arg_specs()?, seed)
    }

    /// The expected outputs for these inputs.
    pub fn expected(&self, inputs: &[Arg]) -> Result<Vec<(String, HostTensor)>, RefError> {
        (self.reference)(&Inputs { args: inputs, grid: self.grid })
    }

    /// The `trident run` / `triton-oracle` command line for this case (without the program name).
    pub fn command_line(&self) -> Vec<String> {
        let mut v = vec![format!("{}::{}", self.file, self.kernel), "--grid".into()];
        let g = self.grid;
        v.push(match (g.y, g.z) {
            (1, 1) => format!("{}", g.x),
            (_, 1) => format!("{},{}", g.x, g.y),
            _ => format!("{},{},{}", g.x, g.y, g.z),
        });
        if let Some(w) = self.num_warps {
            v.push("--num-warps".into());
            v.push(w.to_string());
        }
        v.extend(self.args.iter().cloned());
        v
    }
}

/// An output argument and how to compare it.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputCheck {
    /// The output argument's name.
    pub name: String,
    /// How it is compared.
    pub check: Check,
}

/// How an output is compared with its reference.
#[derive(Clone, Debug, PartialEq)]
pub enum Check {
    /// Bit-for-bit equal values (integers, bools; NaN matches NaN).
    Exact,
    /// `|got - want| <= atol + rtol * |want|` element-wise (NaN matches NaN, infinities must match).
    Close(Tolerance),
    /// Dropout of input tensor `input` with drop probability `p`: the kept/dropped
    /// structure, the keep rate, and element-wise agreement (within `tol`) with
    /// the reference, which uses Triton's Philox `tl.rand`.
    Dropout {
        /// The input tensor argument being dropped out.
        input: String,
        /// Drop probability.
        p: f64,
        /// Tolerance on kept values (`x / (1 - p)`).
        tol: Tolerance,
    },
}

impl Check {
    /// The default check for an output of `dtype`: exact for integers, [`Tolerance::for_dtype`] for floats.
    pub fn for_dtype(dtype: DType) -> Check {
        if dtype.is_int() {
            Check::Exact
        } else {
            Check::Close(Tolerance::for_dtype(dtype))
        }
    }
}

/// Absolute and relative tolerance.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Tolerance {
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance (a fraction of `|want|`).
    pub rtol: f64,
}

impl Tolerance {
    /// A tolerance of `atol + rtol * |want|`.
    pub const fn new(atol: f64, rtol: f64) -> Tolerance {
        Tolerance { atol, rtol }
    }

    /// Tolerances for a kernel that computes in fp32 and stores in `dtype`: a few
    /// units in the last place of `dtype`, plus fp32 accumulation error.
    pub fn for_dtype(dtype: DType) -> Tolerance {
        match dtype {
            DType::F64 => Tolerance::new(1e-10, 1e-9),
            DType::F32 => Tolerance::new(1e-5, 1e-4),
            DType::F16 => Tolerance::new(1e-3, 1e-2),
            // One bf16 ulp is 2^-7 relative; Triton's interpreter truncates where the GPU rounds.
            DType::BF16 => Tolerance::new(1e-2, 2e-2),
            DType::F8E4M3 | DType::F8E5M2 => Tolerance::new(1e-2, 0.13),
            _ => Tolerance::new(0.0, 0.0),
        }
    }
}

/// A reference could not be computed (a missing or mistyped argument, an index out of bounds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefError(pub String);

impl fmt::Display for RefError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "reference: {}", self.0)
    }
}

impl std::error::Error for RefError {}

/// The materialised arguments of a case, as its reference sees them.
#[derive(Copy, Clone, Debug)]
pub struct Inputs<'a> {
    /// The arguments as they were before the launch.
    pub args: &'a [Arg],
    /// The launch grid (references use it to know how many programs ran).
    pub grid: Grid,
}

impl<'a> Inputs<'a> {
    fn value(&self, name: &str) -> Result<&'a ArgValue, RefError> {
        self.args
            .iter()
            .find(|a| a.name == name)
            .map(|a| &a.value)
            .ok_or_else(|| RefError(format!("no argument `{name}`")))
    }

    /// Tensor argument `name`.
    pub fn tensor(&self, name: &str) -> Result<&'a HostTensor, RefError> {
        self.value(name)?.as_tensor().ok_or_else(|| RefError(format!("argument `{name}` is not a tensor")))
    }

    /// Integer argument `name`.
    pub fn int(&self, name: &str) -> Result<i64, RefError> {
        self.value(name)?.as_int().ok_or_else(|| RefError(format!("argument `{name}` is not an integer")))
    }

    /// Integer argument `name`, which must be non-negative (a size, a stride, a count).
    pub fn size(&self, name: &str) -> Result<usize, RefError> {
        let v = self.int(name)?;
        usize::try_from(v).map_err(|_| RefError(format!("argument `{name}` = {v} must not be negative")))
    }

    /// Float argument `name` (an integer is accepted and converted).
    pub fn float(&self, name: &str) -> Result<f64, RefError> {
        self.value(name)?.as_float().ok_or_else(|| RefError(format!("argument `{name}` is not a number")))
    }

    /// Bool argument `name`.
    pub fn flag(&self, name: &str) -> Result<bool, RefError> {
        self.value(name)?.as_bool().ok_or_else(|| RefError(format!("argument `{name}` is not True/False")))
    }
}

/// Read-and-write access to tensor elements by flat element offset (a pointer
/// plus an offset, as kernels address memory), with bounds checks that turn
/// into [`RefError`]s instead of panics.
pub trait Elements {
    /// Element at flat offset `off` as f64, or an error when it is out of bounds.
    fn at(&self, off: usize) -> Result<f64, RefError>;
}

impl Elements for HostTensor {
    fn at(&self, off: usize) -> Result<f64, RefError> {
        if off < self.numel() {
            Ok(self.get_f64(off))
        } else {
            Err(RefError(format!("offset {off} is outside a tensor of {} elements", self.numel())))
        }
    }
}

/// A copy of `t` as f64 values, to be overwritten where the kernel writes.
pub fn f64_copy(t: &HostTensor) -> HostTensor {
    HostTensor::from_f64(DType::F64, &t.shape, &t.to_f64_vec())
}

/// Stores `v` at flat offset `off` of an f64 tensor, with a bounds check.
pub fn put(t: &mut HostTensor, off: usize, v: f64) -> Result<(), RefError> {
    if off < t.numel() {
        t.set_f64(off, v);
        Ok(())
    } else {
        Err(RefError(format!("store to offset {off} is outside a tensor of {} elements", t.numel())))
    }
}

/// Wraps an exact integer result into integer `dtype` (two's complement, as a
/// GPU store of a wider integer truncates), returned as f64; bool is `v & 1`.
pub fn wrap_int(v: i128, dtype: DType) -> f64 {
    let bits = dtype.bits();
    if bits >= 128 {
        return v as f64;
    }
    let m = v & ((1i128 << bits) - 1);
    if dtype.is_signed_int() && m >= 1i128 << (bits - 1) {
        (m - (1i128 << bits)) as f64
    } else {
        m as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping() {
        assert_eq!(wrap_int(300, DType::I8), 44.0);
        assert_eq!(wrap_int(200, DType::I8), -56.0);
        assert_eq!(wrap_int(-1, DType::U8), 255.0);
        assert_eq!(wrap_int(-5, DType::I32), -5.0);
        assert_eq!(wrap_int(1 << 40, DType::I64), (1u64 << 40) as f64);
        assert_eq!(wrap_int(3, DType::I1), 1.0);
    }

    #[test]
    fn bounds_are_errors() {
        let t = HostTensor::zeros(DType::F32, &[3]);
        assert!(t.at(2).is_ok());
        assert!(t.at(3).unwrap_err().0.contains("outside"));
        let mut o = f64_copy(&t);
        assert!(put(&mut o, 5, 1.0).is_err());
    }
}
