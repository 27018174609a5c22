//! Loads, stores and atomics on blocks of pointers.
//!
//! Every unmasked lane is bounds- and alignment-checked against the buffer its
//! pointer came from; masked-off lanes never touch memory. The lanes of one op
//! are processed in row-major index order.

use crate::error::Fault;
use crate::float::{self, fmax, fmin, round_f32};
use crate::memory::{Access, Memory};
use crate::value::{class_of, wrap, Class, Data, Tensor};
use trident_core::DType;
use trident_ir::{Elem, RmwOp};

fn pointee(p: &Tensor) -> Result<DType, Fault> {
    p.elem.pointee().ok_or_else(|| Fault::internal(format!("memory access through a non-pointer ({})", p.elem)))
}

fn lanes(ts: &[Option<&Tensor>]) -> usize {
    ts.iter().flatten().map(|t| t.len()).max().unwrap_or(1)
}

/// Decodes raw little-endian bits of `dt` to the storage class.
#[inline(always)]
fn decode_i(dt: DType, b: u64) -> i64 {
    if dt == DType::I1 {
        (b as u8 != 0) as i64
    } else {
        wrap(b as i64, dt)
    }
}

/// The bits of element `i` of `v` as a `dt` in memory.
fn encode(v: &Tensor, dt: DType, i: usize) -> u64 {
    let i = if v.len() == 1 { 0 } else { i };
    match &v.data {
        Data::I(x) if dt == DType::I1 => (x[i] != 0) as u64,
        Data::I(x) => x[i] as u64,
        Data::F(x) => float::f32_to_bits(dt, x[i]),
        Data::D(x) => x[i].to_bits(),
    }
}

fn check_value_type(v: &Tensor, dt: DType, what: &str) -> Result<(), Fault> {
    if class_of(Elem::Num(dt)) != v.data.class() || (v.elem.is_ptr()) {
        return Err(Fault::internal(format!("{what} of {} values through a pointer to {dt}", v.elem)));
    }
    Ok(())
}

pub(crate) fn load(
    mem: &Memory,
    p: &Tensor,
    mask: Option<&Tensor>,
    other: Option<&Tensor>,
    shape: &[u32],
) -> Result<Tensor, Fault> {
    let dt = pointee(p)?;
    let n = lanes(&[Some(p), mask, other]);
    let ptrs = p.ints()?;
    if let Some(o) = other {
        check_value_type(o, dt, "`other`")?;
    }
    let on = |i: usize| mask.is_none_or(|m| m.truth(i));
    let ptr = |i: usize| ptrs[if ptrs.len() == 1 { 0 } else { i }] as u64;
    macro_rules! fill {
        ($zero:expr, $other:expr, $dec:expr) => {{
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                if on(i) {
                    let (buf, off) = mem.resolve(ptr(i), dt, Access::Load).map_err(|f| f.at_element(i, shape))?;
                    out.push($dec(buf.load(off, dt.size_bytes())));
                } else {
                    out.push(match other {
                        Some(o) => $other(o, i),
                        None => $zero,
                    });
                }
            }
            out
        }};
    }
    let data = match class_of(Elem::Num(dt)) {
        Class::I => Data::I(fill!(0, |o: &Tensor, i| o.ints().map_or(0, |v| v[sel(v.len(), i)]), |b| decode_i(dt, b))),
        Class::F => Data::F(fill!(
            0.0,
            |o: &Tensor, i| match &o.data {
                Data::F(v) => v[sel(v.len(), i)],
                _ => 0.0,
            },
            |b| float::bits_to_f32(dt, b)
        )),
        Class::D => Data::D(fill!(
            0.0,
            |o: &Tensor, i| match &o.data {
                Data::D(v) => v[sel(v.len(), i)],
                _ => 0.0,
            },
            f64::from_bits
        )),
    };
    Ok(Tensor::new(Elem::Num(dt), shape, data))
}

#[inline(always)]
fn sel(len: usize, i: usize) -> usize {
    if len == 1 {
        0
    } else {
        i
    }
}

pub(crate) fn store(mem: &Memory, p: &Tensor, v: &Tensor, mask: Option<&Tensor>) -> Result<(), Fault> {
    let dt = pointee(p)?;
    check_value_type(v, dt, "store")?;
    let n = lanes(&[Some(p), Some(v), mask]);
    let shape = if p.len() >= v.len() { &p.shape } else { &v.shape };
    let ptrs = p.ints()?;
    let w = dt.size_bytes();
    for i in 0..n {
        if mask.is_none_or(|m| m.truth(i)) {
            let (buf, off) =
                mem.resolve(ptrs[sel(ptrs.len(), i)] as u64, dt, Access::Store).map_err(|f| f.at_element(i, shape))?;
            buf.store(off, w, encode(v, dt, i));
        }
    }
    Ok(())
}

/// Decoded old bits of `dt` as a one-element value of its class (for building results).
fn push_old(out: &mut Data, dt: DType, b: u64) {
    match out {
        Data::I(v) => v.push(decode_i(dt, b)),
        Data::F(v) => v.push(float::bits_to_f32(dt, b)),
        Data::D(v) => v.push(f64::from_bits(b)),
    }
}

fn empty(dt: DType, n: usize) -> Data {
    match class_of(Elem::Num(dt)) {
        Class::I => Data::I(Vec::with_capacity(n)),
        Class::F => Data::F(Vec::with_capacity(n)),
        Class::D => Data::D(Vec::with_capacity(n)),
    }
}

/// The new bits of an atomic read-modify-write of `dt` given the old and operand bits.
fn rmw_bits(op: RmwOp, dt: DType, old: u64, val: u64) -> u64 {
    let m = if dt.bits() >= 64 { u64::MAX } else { (1u64 << dt.bits()) - 1 };
    match class_of(Elem::Num(dt)) {
        Class::I => {
            let (o, v) = (wrap(old as i64, dt), wrap(val as i64, dt));
            let uns = !dt.is_signed_int();
            let r = match op {
                RmwOp::Add => o.wrapping_add(v),
                RmwOp::Max if uns => (o as u64).max(v as u64) as i64,
                RmwOp::Min if uns => (o as u64).min(v as u64) as i64,
                RmwOp::Max => o.max(v),
                RmwOp::Min => o.min(v),
                RmwOp::And => o & v,
                RmwOp::Or => o | v,
                RmwOp::Xor => o ^ v,
                RmwOp::Xchg => v,
            };
            r as u64 & m
        }
        Class::F => {
            let (o, v) = (float::bits_to_f32(dt, old), float::bits_to_f32(dt, val));
            let r = match op {
                RmwOp::Add => round_f32(dt, o + v),
                RmwOp::Max => fmax(o, v),
                RmwOp::Min => fmin(o, v),
                _ => v,
            };
            float::f32_to_bits(dt, r)
        }
        Class::D => {
            let (o, v) = (f64::from_bits(old), f64::from_bits(val));
            match op {
                RmwOp::Add => (o + v).to_bits(),
                RmwOp::Max => fmax(o, v).to_bits(),
                RmwOp::Min => fmin(o, v).to_bits(),
                _ => val,
            }
        }
    }
}

pub(crate) fn atomic_rmw(
    mem: &Memory,
    op: RmwOp,
    p: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
) -> Result<Tensor, Fault> {
    let dt = pointee(p)?;
    check_value_type(v, dt, "atomic")?;
    if dt.is_float() && matches!(op, RmwOp::And | RmwOp::Or | RmwOp::Xor) {
        return Err(Fault::internal(format!("atomic `{}` on {dt}", op.name())));
    }
    let n = lanes(&[Some(p), Some(v), mask]);
    let shape = if p.len() >= v.len() { p.shape.clone() } else { v.shape.clone() };
    let ptrs = p.ints()?;
    let w = dt.size_bytes();
    let mut out = empty(dt, n);
    for i in 0..n {
        if mask.is_none_or(|m| m.truth(i)) {
            let (buf, off) = mem
                .resolve(ptrs[sel(ptrs.len(), i)] as u64, dt, Access::Atomic)
                .map_err(|f| f.at_element(i, &shape))?;
            let val = encode(v, dt, i);
            let old = buf.rmw(off, w, |o| rmw_bits(op, dt, o, val));
            push_old(&mut out, dt, old);
        } else {
            push_old(&mut out, dt, 0);
        }
    }
    Ok(Tensor::new(Elem::Num(dt), &shape, out))
}

/// Compares the bits at each pointer with `cmp` and writes `v` where equal; returns the old values.
pub(crate) fn atomic_cas(mem: &Memory, p: &Tensor, cmp: &Tensor, v: &Tensor) -> Result<Tensor, Fault> {
    let dt = pointee(p)?;
    check_value_type(v, dt, "atomic_cas")?;
    check_value_type(cmp, dt, "atomic_cas")?;
    let n = lanes(&[Some(p), Some(cmp), Some(v)]);
    let shape = if p.len() >= v.len() { p.shape.clone() } else { v.shape.clone() };
    let ptrs = p.ints()?;
    let w = dt.size_bytes();
    let mut out = empty(dt, n);
    for i in 0..n {
        let (buf, off) =
            mem.resolve(ptrs[sel(ptrs.len(), i)] as u64, dt, Access::Atomic).map_err(|f| f.at_element(i, &shape))?;
        let old = buf.cas(off, w, encode(cmp, dt, i), encode(v, dt, i));
        push_old(&mut out, dt, old);
    }
    Ok(Tensor::new(Elem::Num(dt), &shape, out))
}
