//! Compile-time (constexpr) values and their Python semantics.
//!
//! Triton evaluates `tl.constexpr` arguments, literals and arithmetic on them in
//! Python at compile time. [`ConstValue`] models the values that can appear
//! there, and the operators here follow Python: `//` floors, `%` takes the
//! sign of the divisor, `/` always gives a float, `True + 1 == 2`.

use std::fmt;
use trident_core::DType;
use trident_ir::Elem;

/// A compile-time value: a Python literal, a `tl.constexpr`, a dtype.
///
/// Integers are Python integers; `i128` holds every value Triton can type
/// (`int64` and `uint64`) and intermediate results beyond them.
#[derive(Clone, Debug, PartialEq)]
pub enum ConstValue {
    None,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    /// A Triton dtype (`tl.float16`), or a pointer type (`x.dtype` of a pointer argument).
    DType(Elem),
    Tuple(Vec<ConstValue>),
}

impl ConstValue {
    pub fn int(v: i64) -> ConstValue {
        ConstValue::Int(v as i128)
    }

    pub fn dtype(d: DType) -> ConstValue {
        ConstValue::DType(Elem::Num(d))
    }

    /// Python truthiness; `None` for values whose truth Python would not define here.
    pub fn truthy(&self) -> Option<bool> {
        Some(match self {
            ConstValue::None => false,
            ConstValue::Bool(b) => *b,
            ConstValue::Int(v) => *v != 0,
            ConstValue::Float(v) => *v != 0.0,
            ConstValue::Str(s) => !s.is_empty(),
            ConstValue::Tuple(t) => !t.is_empty(),
            ConstValue::DType(_) => true,
        })
    }

    /// The Python type name, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            ConstValue::None => "NoneType",
            ConstValue::Bool(_) => "bool",
            ConstValue::Int(_) => "int",
            ConstValue::Float(_) => "float",
            ConstValue::Str(_) => "str",
            ConstValue::DType(_) => "dtype",
            ConstValue::Tuple(_) => "tuple",
        }
    }

    /// Integer value of an int or bool.
    pub fn as_int(&self) -> Option<i128> {
        match self {
            ConstValue::Int(v) => Some(*v),
            ConstValue::Bool(b) => Some(*b as i128),
            _ => None,
        }
    }

    /// Numeric value as a float (ints and bools convert).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            ConstValue::Int(v) => Some(*v as f64),
            ConstValue::Bool(b) => Some(*b as i64 as f64),
            ConstValue::Float(v) => Some(*v),
            _ => None,
        }
    }

    pub fn is_number(&self) -> bool {
        matches!(self, ConstValue::Int(_) | ConstValue::Bool(_) | ConstValue::Float(_))
    }
}

/// Triton's short dtype names (`fp16`, `int32`), as `str(dtype)` prints them.
pub(crate) fn elem_name(e: Elem) -> String {
    match e {
        Elem::Num(d) => dtype_name(d).to_string(),
        Elem::Ptr { pointee, .. } => format!("pointer<{}>", dtype_name(pointee)),
    }
}

pub(crate) fn dtype_name(d: DType) -> &'static str {
    use DType::*;
    match d {
        I1 => "int1",
        I8 => "int8",
        I16 => "int16",
        I32 => "int32",
        I64 => "int64",
        U8 => "uint8",
        U16 => "uint16",
        U32 => "uint32",
        U64 => "uint64",
        F8E4M3 => "fp8e4nv",
        F8E5M2 => "fp8e5",
        F16 => "fp16",
        BF16 => "bf16",
        F32 => "fp32",
        F64 => "fp64",
    }
}

/// Python's `repr`-like text (what `tl.static_print` shows).
impl fmt::Display for ConstValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConstValue::None => f.write_str("None"),
            ConstValue::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
            ConstValue::Int(v) => write!(f, "{v}"),
            ConstValue::Float(v) => write!(f, "{}", py_float_repr(*v)),
            ConstValue::Str(s) => write!(f, "{s}"),
            ConstValue::DType(e) => write!(f, "{}", elem_name(*e)),
            ConstValue::Tuple(t) => {
                f.write_str("(")?;
                for (i, x) in t.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{x}")?;
                }
                if t.len() == 1 {
                    f.write_str(",")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// Python's float repr: `1.0`, `0.5`, `inf`, `nan`, `1e-300`.
pub(crate) fn py_float_repr(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else if v == v.trunc() && v.abs() < 1e16 {
        format!("{v:.1}")
    } else {
        format!("{v:?}")
    }
}

/// Python binary operators on constants.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum PyBinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    LShift,
    RShift,
    BitAnd,
    BitOr,
    BitXor,
}

impl PyBinOp {
    pub(crate) fn symbol(self) -> &'static str {
        use PyBinOp::*;
        match self {
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            FloorDiv => "//",
            Mod => "%",
            Pow => "**",
            LShift => "<<",
            RShift => ">>",
            BitAnd => "&",
            BitOr => "|",
            BitXor => "^",
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum PyCmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl PyCmp {
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            PyCmp::Eq => "==",
            PyCmp::Ne => "!=",
            PyCmp::Lt => "<",
            PyCmp::Le => "<=",
            PyCmp::Gt => ">",
            PyCmp::Ge => ">=",
        }
    }
}

fn int_result(v: Option<i128>) -> Result<ConstValue, String> {
    v.map(ConstValue::Int).ok_or_else(|| "integer overflow in compile-time arithmetic".to_string())
}

fn py_floordiv(a: i128, b: i128) -> Option<i128> {
    let q = a.checked_div(b)?;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        Some(q - 1)
    } else {
        Some(q)
    }
}

fn py_mod(a: i128, b: i128) -> Option<i128> {
    let r = a.checked_rem(b)?;
    if r != 0 && ((r < 0) != (b < 0)) {
        Some(r + b)
    } else {
        Some(r)
    }
}

fn py_fmod(a: f64, b: f64) -> f64 {
    let r = a % b;
    if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
        r + b
    } else {
        r
    }
}

/// `a op b` with Python semantics.
pub(crate) fn binop(op: PyBinOp, a: &ConstValue, b: &ConstValue) -> Result<ConstValue, String> {
    use ConstValue as C;
    use PyBinOp::*;
    let unsupported =
        || Err(format!("unsupported operand types for {}: '{}' and '{}'", op.symbol(), a.type_name(), b.type_name()));
    // Bitwise ops on two bools stay bools.
    if let (C::Bool(x), C::Bool(y)) = (a, b) {
        match op {
            BitAnd => return Ok(C::Bool(x & y)),
            BitOr => return Ok(C::Bool(x | y)),
            BitXor => return Ok(C::Bool(x ^ y)),
            _ => {}
        }
    }
    match (a, b) {
        (C::Str(x), C::Str(y)) if op == Add => return Ok(C::Str(format!("{x}{y}"))),
        (C::Tuple(x), C::Tuple(y)) if op == Add => return Ok(C::Tuple(x.iter().chain(y).cloned().collect())),
        (C::Tuple(x), n) | (n, C::Tuple(x)) if op == Mul && n.as_int().is_some() => {
            let n = n.as_int().unwrap_or(0).max(0) as usize;
            if n.saturating_mul(x.len()) > 1 << 20 {
                return Err("tuple repetition too large".into());
            }
            return Ok(C::Tuple(x.iter().cloned().cycle().take(x.len() * n).collect()));
        }
        (C::Str(x), n) if op == Mul && n.as_int().is_some() => {
            let n = n.as_int().unwrap_or(0).max(0) as usize;
            if n.saturating_mul(x.len()) > 1 << 20 {
                return Err("string repetition too large".into());
            }
            return Ok(C::Str(x.repeat(n)));
        }
        _ => {}
    }
    if let (Some(x), Some(y)) = (a.as_int(), b.as_int()) {
        return match op {
            Add => int_result(x.checked_add(y)),
            Sub => int_result(x.checked_sub(y)),
            Mul => int_result(x.checked_mul(y)),
            Div => {
                if y == 0 {
                    Err("division by zero".into())
                } else {
                    Ok(C::Float(x as f64 / y as f64))
                }
            }
            FloorDiv => {
                if y == 0 {
                    Err("integer division or modulo by zero".into())
                } else {
                    int_result(py_floordiv(x, y))
                }
            }
            Mod => {
                if y == 0 {
                    Err("integer division or modulo by zero".into())
                } else {
                    int_result(py_mod(x, y))
                }
            }
            Pow => {
                if y < 0 {
                    Ok(C::Float((x as f64).powf(y as f64)))
                } else {
                    let e = u32::try_from(y).map_err(|_| "exponent too large".to_string())?;
                    int_result(x.checked_pow(e))
                }
            }
            LShift => {
                if y < 0 {
                    Err("negative shift count".into())
                } else if y >= 127 {
                    if x == 0 {
                        Ok(C::Int(0))
                    } else {
                        Err("integer overflow in compile-time arithmetic".into())
                    }
                } else {
                    let r = x.checked_shl(y as u32).filter(|r| (r >> y) == x);
                    int_result(r)
                }
            }
            RShift => {
                if y < 0 {
                    Err("negative shift count".into())
                } else {
                    Ok(C::Int(x >> y.min(127)))
                }
            }
            BitAnd => Ok(C::Int(x & y)),
            BitOr => Ok(C::Int(x | y)),
            BitXor => Ok(C::Int(x ^ y)),
        };
    }
    if let (Some(x), Some(y)) = (a.as_f64(), b.as_f64()) {
        return match op {
            Add => Ok(C::Float(x + y)),
            Sub => Ok(C::Float(x - y)),
            Mul => Ok(C::Float(x * y)),
            Div => {
                if y == 0.0 {
                    Err("float division by zero".into())
                } else {
                    Ok(C::Float(x / y))
                }
            }
            FloorDiv => {
                if y == 0.0 {
                    Err("float floor division by zero".into())
                } else {
                    Ok(C::Float((x / y).floor()))
                }
            }
            Mod => {
                if y == 0.0 {
                    Err("float modulo by zero".into())
                } else {
                    Ok(C::Float(py_fmod(x, y)))
                }
            }
            Pow => Ok(C::Float(x.powf(y))),
            _ => unsupported(),
        };
    }
    unsupported()
}

/// `a op b` for comparisons, with Python semantics.
pub(crate) fn compare(op: PyCmp, a: &ConstValue, b: &ConstValue) -> Result<bool, String> {
    use std::cmp::Ordering;
    let ord: Option<Ordering> = match (a, b) {
        _ if a.as_int().is_some() && b.as_int().is_some() => a.as_int().partial_cmp(&b.as_int()),
        _ if a.is_number() && b.is_number() => a.as_f64().and_then(|x| b.as_f64().and_then(|y| x.partial_cmp(&y))),
        (ConstValue::Str(x), ConstValue::Str(y)) => Some(x.cmp(y)),
        (ConstValue::Tuple(_), ConstValue::Tuple(_)) if matches!(op, PyCmp::Eq | PyCmp::Ne) => {
            return Ok((a == b) == (op == PyCmp::Eq));
        }
        // Lexicographic, as Python orders tuples (version tuples: `(3, 9, 0) >= (3, 0)`).
        (ConstValue::Tuple(x), ConstValue::Tuple(y)) => {
            for (p, q) in x.iter().zip(y) {
                if !compare(PyCmp::Eq, p, q)? {
                    return compare(op, p, q);
                }
            }
            x.len().partial_cmp(&y.len())
        }
        _ => {
            if matches!(op, PyCmp::Eq | PyCmp::Ne) {
                return Ok((a == b) == (op == PyCmp::Eq));
            }
            return Err(format!(
                "'{}' not supported between instances of '{}' and '{}'",
                op.symbol(),
                a.type_name(),
                b.type_name()
            ));
        }
    };
    Ok(match ord {
        // NaN: every ordered comparison is false, != is true.
        None => op == PyCmp::Ne,
        Some(o) => match op {
            PyCmp::Eq => o == Ordering::Equal,
            PyCmp::Ne => o != Ordering::Equal,
            PyCmp::Lt => o == Ordering::Less,
            PyCmp::Le => o != Ordering::Greater,
            PyCmp::Gt => o == Ordering::Greater,
            PyCmp::Ge => o != Ordering::Less,
        },
    })
}

/// Parses the text of a Python integer literal (`123`, `0x9E37_79B9`, `0o17`, `0b101`).
pub(crate) fn parse_py_int(text: &str) -> Option<i128> {
    let t: String = text.chars().filter(|&c| c != '_').collect();
    let lower = t.to_ascii_lowercase();
    let (digits, radix) = if let Some(d) = lower.strip_prefix("0x") {
        (d, 16)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (d, 8)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (d, 2)
    } else {
        (lower.as_str(), 10)
    };
    i128::from_str_radix(digits, radix).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ConstValue as C;

    #[test]
    fn integer_ops_follow_python() {
        assert_eq!(binop(PyBinOp::FloorDiv, &C::Int(-7), &C::Int(2)).unwrap(), C::Int(-4));
        assert_eq!(binop(PyBinOp::Mod, &C::Int(-7), &C::Int(2)).unwrap(), C::Int(1));
        assert_eq!(binop(PyBinOp::Mod, &C::Int(7), &C::Int(-2)).unwrap(), C::Int(-1));
        assert_eq!(binop(PyBinOp::Div, &C::Int(7), &C::Int(2)).unwrap(), C::Float(3.5));
        assert_eq!(binop(PyBinOp::Add, &C::Bool(true), &C::Int(1)).unwrap(), C::Int(2));
        assert_eq!(binop(PyBinOp::BitAnd, &C::Bool(true), &C::Bool(false)).unwrap(), C::Bool(false));
        assert_eq!(binop(PyBinOp::Pow, &C::Int(2), &C::Int(-1)).unwrap(), C::Float(0.5));
        assert_eq!(binop(PyBinOp::LShift, &C::Int(1), &C::Int(40)).unwrap(), C::Int(1 << 40));
        assert!(binop(PyBinOp::FloorDiv, &C::Int(1), &C::Int(0)).is_err());
        assert!(binop(PyBinOp::Mul, &C::Int(i128::MAX), &C::Int(2)).is_err());
        assert_eq!(binop(PyBinOp::Mod, &C::Float(-1.0), &C::Float(3.0)).unwrap(), C::Float(2.0));
    }

    #[test]
    fn comparisons_and_literals() {
        assert!(compare(PyCmp::Lt, &C::Int(1), &C::Float(1.5)).unwrap());
        assert!(compare(PyCmp::Ne, &C::Float(f64::NAN), &C::Float(f64::NAN)).unwrap());
        assert!(compare(PyCmp::Eq, &C::dtype(DType::F16), &C::dtype(DType::F16)).unwrap());
        assert!(compare(PyCmp::Lt, &C::Str("a".into()), &C::Int(1)).is_err());
        assert_eq!(parse_py_int("0x9E37_79B9"), Some(0x9E3779B9));
        assert_eq!(parse_py_int("0xD2E7470EE14C6C93"), Some(0xD2E7470EE14C6C93));
        assert_eq!(parse_py_int("0b101"), Some(5));
        assert_eq!(C::Tuple(vec![C::Int(1)]).to_string(), "(1,)");
        assert_eq!(C::Float(2.0).to_string(), "2.0");
    }
}
