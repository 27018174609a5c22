//! Attribute values: the generic, printable form of every op's parameters.
//!
//! Each [`crate::OpKind`] variant converts to and from a name plus a list of
//! `key = Attr` pairs (see `ops.rs`), so the printer and parser stay generic
//! and adding an op touches exactly one place.

use std::collections::BTreeMap;
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

/// *Discardable attributes* of an op ([`crate::OpData::attrs`]) or a function
/// ([`crate::Function::attrs`]): facts a pass records for later passes and backends, on top
/// of what the op kind says (MLIR's discardable attributes, e.g. `allocation.offset`).
/// The names the IR knows, and where each may appear, are listed in
/// [`crate::ops::discardable`]; the verifier rejects others.
///
/// Kept in name order, so the text form is deterministic: `{name = value, ...}` after an op's
/// own `[...]` attributes, `attributes {name = value, ...}` in a function header. Empty maps
/// print nothing, so IR without them prints as it always did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AttrMap(BTreeMap<String, Attr>);

impl AttrMap {
    pub fn get(&self, name: &str) -> Option<&Attr> {
        self.0.get(name)
    }

    /// The attribute `name` if it is an integer.
    pub fn int(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(Attr::as_int)
    }

    /// Whether `name` is present and `true`.
    pub fn flag(&self, name: &str) -> bool {
        self.get(name).and_then(Attr::as_bool) == Some(true)
    }

    /// Sets `name`, replacing any earlier value.
    pub fn set(&mut self, name: &str, value: Attr) {
        self.0.insert(name.to_string(), value);
    }

    pub fn remove(&mut self, name: &str) -> Option<Attr> {
        self.0.remove(name)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The attributes in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Attr)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }
}

impl fmt::Display for AttrMap {
    /// `{a = 1, b = true}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, (k, v)) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{k} = {v}")?;
        }
        f.write_str("}")
    }
}
