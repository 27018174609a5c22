//! Built-in device functions reached by `call`: `vprintf` (CUDA's device printf:
//! a format string in global memory and a packed argument buffer) and
//! `__assertfail` (device-side assert).

use super::warp::{bad_operand, Ex, R};
use crate::error::{EmuError, ErrorKind};
use crate::ir::{ParamRef, Space};

impl Ex<'_, '_> {
    fn param_u64(&mut self, p: &ParamRef, lane: u32) -> R<u64> {
        let mut b = [0u8; 8];
        self.read_mem(Space::Local, p.offset as u64, &mut b, lane, 0)?;
        Ok(u64::from_le_bytes(b))
    }

    fn c_string(&mut self, addr: u64, lane: u32) -> R<String> {
        let mut out = Vec::new();
        let mut b = [0u8; 1];
        for i in 0..4096u64 {
            self.read_mem(Space::Generic, addr.wrapping_add(i), &mut b, lane, 0)?;
            if b[0] == 0 {
                return Ok(String::from_utf8_lossy(&out).into_owned());
            }
            out.push(b[0]);
        }
        Err(EmuError::new(ErrorKind::Runtime, "string longer than 4096 bytes (missing terminator?)"))
    }
}

pub fn builtin(ex: &mut Ex, name: &str, rets: &[ParamRef], args: &[ParamRef], mask: u32) -> R<()> {
    match name {
        "vprintf" => {
            if args.len() != 2 {
                return Err(bad_operand("vprintf takes (format, arguments)"));
            }
            for lane in 0..32u32 {
                if mask >> lane & 1 == 0 {
                    continue;
                }
                let fmt_ptr = ex.param_u64(&args[0], lane)?;
                let arg_ptr = ex.param_u64(&args[1], lane)?;
                let fmt = ex.c_string(fmt_ptr, lane)?;
                let text = format(ex, &fmt, arg_ptr, lane)?;
                ex.m.printf.push_str(&text);
                if let Some(r) = rets.first() {
                    let n = (text.len() as u32).to_le_bytes();
                    ex.write_mem(Space::Local, r.offset as u64, &n, lane, 0)?;
                }
            }
            Ok(())
        }
        "__assertfail" => {
            let lane = mask.trailing_zeros();
            let msg = match args.first() {
                Some(a) => {
                    let p = ex.param_u64(a, lane)?;
                    ex.c_string(p, lane).unwrap_or_default()
                }
                None => String::new(),
            };
            let file = match args.get(1) {
                Some(a) => {
                    let p = ex.param_u64(a, lane)?;
                    ex.c_string(p, lane).unwrap_or_default()
                }
                None => String::new(),
            };
            let line = match args.get(2) {
                Some(a) => ex.param_u64(a, lane)? as u32,
                None => 0,
            };
            Err(EmuError::new(ErrorKind::Runtime, format!("device assertion failed: {msg} ({file}:{line})")))
        }
        _ => Err(EmuError::new(ErrorKind::Unsupported, format!("call to undefined external function `{name}`"))),
    }
}

/// Formats a C printf string with arguments packed as vprintf lays them out:
/// each argument aligned to its size, floats promoted to double.
fn format(ex: &mut Ex, fmt: &str, mut ap: u64, lane: u32) -> R<String> {
    let mut out = String::new();
    let b = fmt.as_bytes();
    let mut i = 0;
    let mut next = |ex: &mut Ex, size: u64| -> R<u64> {
        ap = ap.div_ceil(size).wrapping_mul(size);
        let mut v = [0u8; 8];
        ex.read_mem(Space::Generic, ap, &mut v[..size as usize], lane, 0)?;
        ap += size;
        Ok(u64::from_le_bytes(v))
    };
    while i < b.len() {
        if b[i] != b'%' {
            let start = i;
            while i < b.len() && b[i] != b'%' {
                i += 1;
            }
            out.push_str(&fmt[start..i]);
            continue;
        }
        i += 1;
        if i < b.len() && b[i] == b'%' {
            out.push('%');
            i += 1;
            continue;
        }
        let mut flags = String::new();
        while i < b.len() && b"-+ #0".contains(&b[i]) {
            flags.push(b[i] as char);
            i += 1;
        }
        let mut width = String::new();
        while i < b.len() && b[i].is_ascii_digit() {
            width.push(b[i] as char);
            i += 1;
        }
        let mut prec: Option<usize> = None;
        if i < b.len() && b[i] == b'.' {
            i += 1;
            let mut p = String::new();
            while i < b.len() && b[i].is_ascii_digit() {
                p.push(b[i] as char);
                i += 1;
            }
            prec = Some(p.parse().unwrap_or(0));
        }
        let mut long = 0;
        while i < b.len() && matches!(b[i], b'l' | b'h' | b'z' | b'j' | b't') {
            if b[i] == b'l' || b[i] == b'z' || b[i] == b'j' || b[i] == b't' {
                long += 1;
            }
            i += 1;
        }
        let Some(&conv) = b.get(i) else { break };
        i += 1;
        let size = if long > 0 { 8 } else { 4 };
        let s = match conv {
            b'd' | b'i' => {
                let v = next(ex, size)?;
                let v = if size == 8 { v as i64 } else { v as u32 as i32 as i64 };
                v.to_string()
            }
            b'u' => {
                let v = next(ex, size)?;
                (if size == 8 { v } else { v as u32 as u64 }).to_string()
            }
            b'x' => format!("{:x}", next(ex, size)? & if size == 8 { u64::MAX } else { 0xffff_ffff }),
            b'X' => format!("{:X}", next(ex, size)? & if size == 8 { u64::MAX } else { 0xffff_ffff }),
            b'o' => format!("{:o}", next(ex, size)? & if size == 8 { u64::MAX } else { 0xffff_ffff }),
            b'c' => ((next(ex, 4)? as u8) as char).to_string(),
            b'p' => format!("{:#x}", next(ex, 8)?),
            b's' => {
                let p = next(ex, 8)?;
                ex.c_string(p, lane)?
            }
            b'f' | b'F' => format!("{:.*}", prec.unwrap_or(6), f64::from_bits(next(ex, 8)?)),
            b'e' | b'E' => {
                let s = c_exp(f64::from_bits(next(ex, 8)?), prec.unwrap_or(6));
                if conv == b'E' {
                    s.to_uppercase()
                } else {
                    s
                }
            }
            b'g' | b'G' | b'a' => {
                let v = f64::from_bits(next(ex, 8)?);
                let p = prec.unwrap_or(6).max(1);
                let exp = if v == 0.0 { 0 } else { v.abs().log10().floor() as i32 };
                if exp < -4 || exp >= p as i32 {
                    c_exp(v, p - 1)
                } else {
                    let s = format!("{:.*}", (p as i32 - 1 - exp).max(0) as usize, v);
                    if s.contains('.') {
                        s.trim_end_matches('0').trim_end_matches('.').to_string()
                    } else {
                        s
                    }
                }
            }
            _ => return Err(EmuError::new(ErrorKind::Unsupported, format!("printf conversion `%{}`", conv as char))),
        };
        let w: usize = width.parse().unwrap_or(0);
        let s = if flags.contains('+') && matches!(conv, b'd' | b'i' | b'f' | b'e' | b'g') && !s.starts_with('-') {
            format!("+{s}")
        } else {
            s
        };
        if s.len() < w {
            let pad = w - s.len();
            if flags.contains('-') {
                out.push_str(&s);
                out.push_str(&" ".repeat(pad));
            } else if flags.contains('0') && !matches!(conv, b's' | b'c') {
                let (sign, digits) =
                    if s.starts_with('-') || s.starts_with('+') { s.split_at(1) } else { ("", &s[..]) };
                out.push_str(sign);
                out.push_str(&"0".repeat(pad));
                out.push_str(digits);
            } else {
                out.push_str(&" ".repeat(pad));
                out.push_str(&s);
            }
        } else {
            out.push_str(&s);
        }
    }
    Ok(out)
}

/// C's `%e`: mantissa, `e`, sign, at least two exponent digits.
fn c_exp(v: f64, prec: usize) -> String {
    let s = format!("{:.*e}", prec, v);
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = if let Some(d) = e.strip_prefix('-') { ('-', d) } else { ('+', e) };
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}
