//! One candidate configuration of an autotuned kernel (a `triton.Config`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// A constexpr value a config sets.
///
/// The front end's `ConstValue` has more variants (dtypes, tuples); configs
/// in practice set numbers and flags, and this type is what the autotuner
/// stores on disk, so it stays small and serializable. Anything else can be
/// carried as [`TuneValue::Str`] holding the value's source text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TuneValue {
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A bool.
    Bool(bool),
    /// A string, or the source text of a value of another kind.
    Str(String),
}

impl fmt::Display for TuneValue {
    /// Python's `repr`-like spelling: `64`, `0.5`, `True`, `'x'`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TuneValue::Int(v) => write!(f, "{v}"),
            TuneValue::Float(v) if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e16 => write!(f, "{v:.1}"),
            TuneValue::Float(v) => write!(f, "{v}"),
            TuneValue::Bool(true) => f.write_str("True"),
            TuneValue::Bool(false) => f.write_str("False"),
            TuneValue::Str(s) => write!(f, "'{s}'"),
        }
    }
}

impl From<i64> for TuneValue {
    fn from(v: i64) -> TuneValue {
        TuneValue::Int(v)
    }
}

impl From<i32> for TuneValue {
    fn from(v: i32) -> TuneValue {
        TuneValue::Int(v.into())
    }
}

impl From<f64> for TuneValue {
    fn from(v: f64) -> TuneValue {
        TuneValue::Float(v)
    }
}

impl From<bool> for TuneValue {
    fn from(v: bool) -> TuneValue {
        TuneValue::Bool(v)
    }
}

impl From<&str> for TuneValue {
    fn from(v: &str) -> TuneValue {
        TuneValue::Str(v.to_string())
    }
}

/// A `triton.Config`: constexpr values plus launch options. Field for field
/// the data of `trident_front::Config` (`kwargs` → `constexprs`), minus
/// `pre_hook`, which is host code.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuneConfig {
    /// The constexprs it sets, in the order written.
    pub constexprs: Vec<(String, TuneValue)>,
    /// Warps per CTA.
    pub num_warps: u32,
    /// Software-pipelining stages.
    pub num_stages: u32,
    /// CTAs per cluster.
    pub num_ctas: u32,
    /// Register cap per thread.
    pub maxnreg: Option<u32>,
}

impl Default for TuneConfig {
    /// Triton's defaults: 4 warps, 3 stages, 1 CTA, no register cap.
    fn default() -> TuneConfig {
        TuneConfig { constexprs: vec![], num_warps: 4, num_stages: 3, num_ctas: 1, maxnreg: None }
    }
}

impl TuneConfig {
    /// A config with the given warps and stages and no constexprs.
    pub fn new(num_warps: u32, num_stages: u32) -> TuneConfig {
        TuneConfig { num_warps, num_stages, ..TuneConfig::default() }
    }

    /// Sets a constexpr (replacing an earlier value of the same name).
    pub fn with(mut self, name: impl Into<String>, value: impl Into<TuneValue>) -> TuneConfig {
        self.set(name, value);
        self
    }

    /// Sets a constexpr (replacing an earlier value of the same name, in place).
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<TuneValue>) {
        let (name, value) = (name.into(), value.into());
        match self.constexprs.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.constexprs.push((name, value)),
        }
    }

    /// The value of a constexpr.
    pub fn get(&self, name: &str) -> Option<&TuneValue> {
        self.constexprs.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

impl fmt::Display for TuneConfig {
    /// `BLOCK_M: 64, BLOCK_N: 32, num_warps: 4, num_stages: 3` (plus
    /// `num_ctas` and `maxnreg` when they are not the defaults).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, value) in &self.constexprs {
            write!(f, "{name}: {value}, ")?;
        }
        write!(f, "num_warps: {}, num_stages: {}", self.num_warps, self.num_stages)?;
        if self.num_ctas != 1 {
            write!(f, ", num_ctas: {}", self.num_ctas)?;
        }
        if let Some(r) = self.maxnreg {
            write!(f, ", maxnreg: {r}")?;
        }
        Ok(())
    }
}
