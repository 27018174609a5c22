//! `device_print` output, in the format compiled Triton's `printf` lowering uses:
//! `pid (x, y, z) idx (i, j)<prefix><value>`, one line per element, with `(operand n) `
//! before the value when several values are printed. Index fields are padded to the
//! digits of their dimension; floats print as C's `%f`, integers as `%i`/`%u`,
//! `hex=True` as `0x` and zero-padded hex digits of the element's width.

use crate::value::{unravel, Data, Tensor};
use std::fmt::Write;
use trident_ir::Elem;

/// Triton's front end adjusts the prefix so that it starts with a space and ends in `": "`.
/// Doing it again is harmless (the adjustment is idempotent).
pub(crate) fn normalize_prefix(prefix: &str, has_args: bool) -> String {
    let mut p = prefix.to_string();
    if has_args {
        if !p.ends_with(' ') {
            p.push(' ');
        }
        if !p.ends_with(": ") {
            p.pop();
            p.push_str(": ");
        }
    }
    if p.len() > 2 && !p.starts_with(' ') {
        p.insert(0, ' ');
    }
    p
}

fn fmt_float(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{x:.6}")
    }
}

fn fmt_elem(t: &Tensor, i: usize, hex: bool) -> String {
    let (bits, width) = match t.elem {
        Elem::Ptr { .. } => (64, 64),
        Elem::Num(d) => (d.bits(), d.bits()),
    };
    match &t.data {
        Data::I(v) => {
            let x = v[i];
            if hex || t.elem.is_ptr() {
                let m = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
                format!("0x{:0w$x}", x as u64 & m, w = (width / 4) as usize)
            } else if matches!(t.elem, Elem::Num(d) if d.is_signed_int()) {
                x.to_string()
            } else {
                (x as u64).to_string()
            }
        }
        Data::F(v) if hex => {
            let d = t.elem.num().unwrap_or(trident_core::DType::F32);
            format!("0x{:0w$x}", crate::float::f32_to_bits(d, v[i]), w = (width / 4) as usize)
        }
        Data::F(v) => fmt_float(v[i] as f64),
        Data::D(v) if hex => format!("0x{:016x}", v[i].to_bits()),
        Data::D(v) => fmt_float(v[i]),
    }
}

pub(crate) fn print(out: &mut String, pid: [u32; 3], prefix: &str, hex: bool, values: &[&Tensor]) {
    let prefix = normalize_prefix(prefix, !values.is_empty());
    if values.is_empty() {
        let _ = writeln!(out, "pid ({}, {}, {}){prefix}", pid[0], pid[1], pid[2]);
        return;
    }
    for (k, t) in values.iter().enumerate() {
        let widths: Vec<usize> =
            t.shape.iter().map(|&d| if d > 0 { (d as f64).log10().ceil() as usize } else { 0 }).collect();
        for i in 0..t.len() {
            let _ = write!(out, "pid ({}, {}, {}) idx (", pid[0], pid[1], pid[2]);
            for (d, (ix, w)) in unravel(i, &t.shape).iter().zip(&widths).enumerate() {
                if d > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{ix:>w$}");
            }
            out.push(')');
            out.push_str(&prefix);
            if values.len() > 1 {
                let _ = write!(out, "(operand {k}) ");
            }
            out.push_str(&fmt_elem(t, i, hex));
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_is_normalized_idempotently() {
        assert_eq!(normalize_prefix("x", true), " x: ");
        assert_eq!(normalize_prefix(" x: ", true), " x: ");
        assert_eq!(normalize_prefix("val:", true), " val: ");
        assert_eq!(normalize_prefix("", true), ": ");
    }
}
