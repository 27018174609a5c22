//! Attribute values: the generic, printable form of every op's parameters.
//!
//! Each [`crate::OpKind`] variant converts to and from a name plus a list of
//! `key = Attr` pairs (see `ops.rs`), so the printer and parser stay generic
//! and adding an op touches exactly one place.

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    Int(i64),
    Float(f64),
    Bool(bool),
    /// A quoted string (print prefixes, assert messages, callee names).
    Str(String),
    /// A bare word naming an enum value (`cg`, `relaxed`, `tf32`).
    Ident(String),
    /// A list of integers (permutations, hint values).
    Ints(Vec<i64>),
}

impl Attr {
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Attr::Int(v) => Some(*v),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Attr::Bool(v) => Some(*v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Attr::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_ident(&self) -> Option<&str> {
        match self {
            Attr::Ident(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_ints(&self) -> Option<&[i64]> {
        match self {
            Attr::Ints(v) => Some(v),
            _ => None,
        }
    }
}

/// Writes a float so that parsing it gives the same bits back (`inf`, `-inf`, `nan` spelled out).
pub fn fmt_float(f: &mut fmt::Formatter<'_>, v: f64) -> fmt::Result {
    if v.is_nan() {
        if v.to_bits() == f64::NAN.to_bits() {
            f.write_str("nan")
        } else {
            write!(f, "0x{:016X}", v.to_bits())
        }
    } else if v.is_infinite() {
        f.write_str(if v > 0.0 { "inf" } else { "-inf" })
    } else {
        // Debug formatting of f64 is the shortest string that round-trips and always has a '.' or 'e'.
        write!(f, "{v:?}")
    }
}

impl fmt::Display for Attr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Attr::Int(v) => write!(f, "{v}"),
            Attr::Float(v) => fmt_float(f, *v),
            Attr::Bool(v) => write!(f, "{v}"),
            Attr::Str(s) => write!(f, "{s:?}"),
            Attr::Ident(s) => f.write_str(s),
            Attr::Ints(v) => {
                f.write_str("[")?;
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{x}")?;
                }
                f.write_str("]")
            }
        }
    }
}
