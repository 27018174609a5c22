//! Loads, stores and atomics on blocks of pointers.
//!
//! Every unmasked lane is bounds- and alignment-checked against the buffer its
//! pointer came from; masked-off lanes never touch memory. The lanes of one op
//! are processed in row-major index order.

use crate::error::Fault;
use crate::float::{self, fmax, fmin, round_f32};
use crate::memory::{Access, Cursor, Memory};
use crate::value::{class_of, wrap, Class, Data, Tensor};
use trident_core::DType;
use trident_ir::{Elem, RmwOp};

fn pointee(p: &Tensor) -> Result<DType, Fault> {
    p.elem.pointee().ok_or_else(|| Fault::internal(format!("memory access through a non-pointer ({})", p.elem)))
}

/// The number of lanes of a memory op: its longest operand; the others must be as long or scalars.
fn lanes(ts: &[Option<&Tensor>]) -> Result<usize, Fault> {
    let n = ts.iter().flatten().map(|t| t.len()).max().unwrap_or(1);
    if ts.iter().flatten().any(|t| t.len() != 1 && t.len() != n) {
        return Err(Fault::internal("memory op operands of different shapes".into()));
    }
    Ok(n)
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

/// The elements of an optional one-class operand as a slice.
trait Slice: Sized + Copy {
    fn of(t: &Tensor) -> Option<&[Self]>;
}
impl Slice for i64 {
    fn of(t: &Tensor) -> Option<&[i64]> {
        match &t.data {
            Data::I(v) => Some(v),
            _ => None,
        }
    }
}
impl Slice for f32 {
    fn of(t: &Tensor) -> Option<&[f32]> {
        match &t.data {
            Data::F(v) => Some(v),
            _ => None,
        }
    }
}
impl Slice for f64 {
    fn of(t: &Tensor) -> Option<&[f64]> {
        match &t.data {
            Data::D(v) => Some(v),
            _ => None,
        }
    }
}

/// Which lanes are on: a mask's elements, or every lane.
struct Mask<'a>(Option<&'a [i64]>);

impl Mask<'_> {
    #[inline(always)]
    fn on(&self, i: usize) -> bool {
        self.0.is_none_or(|m| m[sel(m.len(), i)] != 0)
    }
}

fn mask_of(mask: Option<&Tensor>) -> Result<Mask<'_>, Fault> {
    Ok(Mask(match mask {
        Some(m) => Some(m.ints()?),
        None => None,
    }))
}

/// The hot loop of a load of `W`-byte elements decoded by `dec`.
#[allow(clippy::too_many_arguments)]
fn load_lanes<T: Slice, const W: usize>(
    mem: &Memory,
    dt: DType,
    ptrs: &[i64],
    mask: &Mask,
    other: Option<&Tensor>,
    n: usize,
    shape: &[u32],
    zero: T,
    dec: impl Fn(u64) -> T,
) -> Result<Vec<T>, Fault> {
    let other: Option<&[T]> = match other {
        Some(o) => {
            Some(T::of(o).ok_or_else(|| Fault::internal(format!("`other` of type {} for a load of {dt}", o.elem)))?)
        }
        None => None,
    };
    let mut cur = Cursor::new(mem, dt, Access::Load);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        if mask.on(i) {
            let (buf, off) = cur.at(ptrs[sel(ptrs.len(), i)] as u64).map_err(|f| f.at_element(i, shape))?;
            out.push(dec(buf.load_w::<W>(off)));
        } else {
            out.push(other.map_or(zero, |o| o[sel(o.len(), i)]));
        }
    }
    Ok(out)
}

pub(crate) fn load(
    mem: &Memory,
    p: &Tensor,
    mask: Option<&Tensor>,
    other: Option<&Tensor>,
    shape: &[u32],
) -> Result<Tensor, Fault> {
    let dt = pointee(p)?;
    let n = lanes(&[Some(p), mask, other])?;
    let ptrs = p.ints()?;
    let m = mask_of(mask)?;
    use DType::*;
    macro_rules! ints {
        ($w:literal, $dec:expr) => {
            Data::I(load_lanes::<i64, $w>(mem, dt, ptrs, &m, other, n, shape, 0, $dec)?)
        };
    }
    let data = match dt {
        F32 => Data::F(load_lanes::<f32, 4>(mem, dt, ptrs, &m, other, n, shape, 0.0, |b| f32::from_bits(b as u32))?),
        F16 => Data::F(load_lanes::<f32, 2>(mem, dt, ptrs, &m, other, n, shape, 0.0, |b| {
            float::f16_bits_to_f32(b as u16)
        })?),
        BF16 => Data::F(load_lanes::<f32, 2>(mem, dt, ptrs, &m, other, n, shape, 0.0, |b| {
            f32::from_bits((b as u32) << 16)
        })?),
        F8E4M3 | F8E5M2 => {
            Data::F(load_lanes::<f32, 1>(mem, dt, ptrs, &m, other, n, shape, 0.0, |b| float::fp8_decode(dt, b as u8))?)
        }
        F64 => Data::D(load_lanes::<f64, 8>(mem, dt, ptrs, &m, other, n, shape, 0.0, f64::from_bits)?),
        I1 => ints!(1, |b| (b as u8 != 0) as i64),
        I8 => ints!(1, |b| b as u8 as i8 as i64),
        U8 => ints!(1, |b| b as u8 as i64),
        I16 => ints!(2, |b| b as u16 as i16 as i64),
        U16 => ints!(2, |b| b as u16 as i64),
        I32 => ints!(4, |b| b as u32 as i32 as i64),
        U32 => ints!(4, |b| b as u32 as i64),
        I64 | U64 => ints!(8, |b| b as i64),
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

/// The hot loop of a store of `W`-byte elements encoded by `enc`.
#[allow(clippy::too_many_arguments)]
fn store_lanes<T: Slice, const W: usize>(
    mem: &Memory,
    dt: DType,
    ptrs: &[i64],
    vals: &[T],
    mask: &Mask,
    n: usize,
    shape: &[u32],
    enc: impl Fn(T) -> u64,
) -> Result<(), Fault> {
    let mut cur = Cursor::new(mem, dt, Access::Store);
    for i in 0..n {
        if mask.on(i) {
            let (buf, off) = cur.at(ptrs[sel(ptrs.len(), i)] as u64).map_err(|f| f.at_element(i, shape))?;
            buf.store_w::<W>(off, enc(vals[sel(vals.len(), i)]));
        }
    }
    Ok(())
}

pub(crate) fn store(mem: &Memory, p: &Tensor, v: &Tensor, mask: Option<&Tensor>) -> Result<(), Fault> {
    let dt = pointee(p)?;
    check_value_type(v, dt, "store")?;
    let n = lanes(&[Some(p), Some(v), mask])?;
    let shape = if p.len() >= v.len() { &p.shape } else { &v.shape };
    let ptrs = p.ints()?;
    let m = mask_of(mask)?;
    use DType::*;
    match (&v.data, dt) {
        (Data::F(x), F32) => store_lanes::<f32, 4>(mem, dt, ptrs, x, &m, n, shape, |x| x.to_bits() as u64),
        (Data::F(x), F16) => {
            store_lanes::<f32, 2>(mem, dt, ptrs, x, &m, n, shape, |x| float::f32_to_f16_bits(x) as u64)
        }
        (Data::F(x), BF16) => store_lanes::<f32, 2>(mem, dt, ptrs, x, &m, n, shape, |x| (x.to_bits() >> 16) as u64),
        (Data::F(x), _) => store_lanes::<f32, 1>(mem, dt, ptrs, x, &m, n, shape, |x| float::f32_to_bits(dt, x)),
        (Data::D(x), _) => store_lanes::<f64, 8>(mem, dt, ptrs, x, &m, n, shape, f64::to_bits),
        (Data::I(x), I1) => store_lanes::<i64, 1>(mem, dt, ptrs, x, &m, n, shape, |x| (x != 0) as u64),
        (Data::I(x), I8 | U8) => store_lanes::<i64, 1>(mem, dt, ptrs, x, &m, n, shape, |x| x as u64),
        (Data::I(x), I16 | U16) => store_lanes::<i64, 2>(mem, dt, ptrs, x, &m, n, shape, |x| x as u64),
        (Data::I(x), I32 | U32) => store_lanes::<i64, 4>(mem, dt, ptrs, x, &m, n, shape, |x| x as u64),
        (Data::I(x), _) => store_lanes::<i64, 8>(mem, dt, ptrs, x, &m, n, shape, |x| x as u64),
    }
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
    let n = lanes(&[Some(p), Some(v), mask])?;
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
    let n = lanes(&[Some(p), Some(cmp), Some(v)])?;
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
