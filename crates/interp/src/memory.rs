//! Device memory of one launch: a copy of each tensor argument, and the pointer encoding.
//!
//! **Pointers** are 64-bit values `base(buffer) + byte offset`, where buffer `i`
//! has base `(i + 1) << 40`. Pointer arithmetic, `ptr_to_int` and `int_to_ptr`
//! are plain 64-bit integer arithmetic on that encoding; an access finds its
//! buffer as the one whose base is nearest (offsets within ±512 GiB of a base
//! belong to it), so a pointer that ran off either end of its buffer is still
//! reported as "index -3 of buffer `x`". Zone 0 (around address 0) is no buffer:
//! null pointers and small integers are invalid.
//!
//! **Buffers** are `Box<[AtomicU64]>` (8-byte aligned), copied in from the
//! caller's tensors at launch and copied back only when the launch succeeds, so
//! a failed launch leaves the caller's tensors as they were.
//!
//! **Data races.** Programs run concurrently on several threads and may touch
//! the same buffer, so every access is atomic: an element of width `w` at a
//! `w`-aligned offset is accessed through an `AtomicU{8,16,32,64}` view of the
//! buffer bytes (relaxed for loads and stores — plain `mov`s on x86-64 and
//! AArch64 —, sequentially consistent for atomics). Views of one width never
//! overlap partially. Accessing one buffer at two different widths (only
//! possible after a pointer bitcast or `int_to_ptr`) could make two atomics of
//! different sizes overlap; the launcher runs such kernels on one thread, so
//! those accesses never race.

use crate::error::{ErrorKind, Fault};
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};
use trident_core::DType;

const ZONE_BITS: u32 = 40;

/// The pointer value of byte 0 of buffer `id`.
pub(crate) fn base(id: usize) -> u64 {
    ((id as u64) + 1) << ZONE_BITS
}

#[derive(Debug)]
pub(crate) struct Buffer {
    /// The kernel parameter the buffer was passed as.
    pub name: String,
    pub dtype: DType,
    pub numel: usize,
    pub bytes: usize,
    words: Box<[AtomicU64]>,
}

impl Buffer {
    pub fn new(name: &str, dtype: DType, numel: usize, data: &[u8]) -> Buffer {
        // Zeroed words (calloc: pages are mapped lazily), then one memcpy of the bytes.
        let mut words: Box<[u64]> = vec![0u64; data.len().div_ceil(8)].into_boxed_slice();
        // SAFETY: `words` owns at least `data.len()` bytes; u8 has no alignment requirement.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), words.as_mut_ptr() as *mut u8, data.len()) };
        const { assert!(std::mem::align_of::<u64>() == std::mem::align_of::<AtomicU64>()) };
        // SAFETY: `AtomicU64` has the same size and bit validity as `u64`, and (asserted
        // above) the same alignment, so a boxed slice of one is a boxed slice of the other.
        let words = unsafe { Box::from_raw(Box::into_raw(words) as *mut [AtomicU64]) };
        Buffer { name: name.to_string(), dtype, numel, bytes: data.len(), words }
    }

    /// Copies the contents out. Call only when no program runs (after the launch's threads
    /// have joined, which orders all their writes before this read).
    pub fn copy_to(&self, out: &mut [u8]) {
        let n = out.len().min(self.bytes);
        // SAFETY: the buffer holds at least `bytes` bytes; nothing accesses it concurrently.
        unsafe { std::ptr::copy_nonoverlapping(self.words.as_ptr() as *const u8, out.as_mut_ptr(), n) };
    }

    fn describe(&self) -> String {
        format!("buffer `{}` ({} elements of {})", self.name, self.numel, self.dtype)
    }

    /// Pointer to byte `off`; the caller has checked `off + w <= bytes` and alignment to `w`.
    fn byte_ptr(&self, off: usize) -> *mut u8 {
        // SAFETY: `off` is within the allocation (checked by `resolve`). The memory is
        // made of `AtomicU64`s, i.e. `UnsafeCell`s, so writing through a pointer derived
        // from a shared reference is allowed.
        unsafe { (self.words.as_ptr() as *mut u8).add(off) }
    }

    /// Atomically reads `W` bytes at `off` (relaxed), little-endian, zero-extended.
    /// The caller has checked `off + W <= bytes` and `off % W == 0`.
    #[inline(always)]
    pub fn load_w<const W: usize>(&self, off: usize) -> u64 {
        let p = self.byte_ptr(off);
        // SAFETY (all arms): `p` is aligned to `W` (offsets are multiples of `W`, buffers are
        // 8-aligned) and valid for the buffer's lifetime; all accesses to buffer memory are
        // atomic (see the module docs for the mixed-width argument).
        unsafe {
            match W {
                1 => AtomicU8::from_ptr(p).load(Ordering::Relaxed) as u64,
                2 => AtomicU16::from_ptr(p as *mut u16).load(Ordering::Relaxed) as u64,
                4 => AtomicU32::from_ptr(p as *mut u32).load(Ordering::Relaxed) as u64,
                _ => AtomicU64::from_ptr(p as *mut u64).load(Ordering::Relaxed),
            }
        }
    }

    #[inline(always)]
    pub fn store_w<const W: usize>(&self, off: usize, v: u64) {
        let p = self.byte_ptr(off);
        // SAFETY: as in `load_w`.
        unsafe {
            match W {
                1 => AtomicU8::from_ptr(p).store(v as u8, Ordering::Relaxed),
                2 => AtomicU16::from_ptr(p as *mut u16).store(v as u16, Ordering::Relaxed),
                4 => AtomicU32::from_ptr(p as *mut u32).store(v as u32, Ordering::Relaxed),
                _ => AtomicU64::from_ptr(p as *mut u64).store(v, Ordering::Relaxed),
            }
        }
    }

    /// Atomic read-modify-write: replaces the old bits `o` by `f(o)`; returns `o`.
    pub fn rmw(&self, off: usize, w: usize, f: impl Fn(u64) -> u64) -> u64 {
        let p = self.byte_ptr(off);
        macro_rules! cas_loop {
            ($A:ty, $t:ty) => {{
                // SAFETY: as in `load_w`.
                let a = unsafe { <$A>::from_ptr(p as *mut $t) };
                let mut old = a.load(Ordering::Relaxed);
                loop {
                    let new = f(old as u64) as $t;
                    match a.compare_exchange_weak(old, new, Ordering::SeqCst, Ordering::Relaxed) {
                        Ok(_) => return old as u64,
                        Err(cur) => old = cur,
                    }
                }
            }};
        }
        match w {
            1 => cas_loop!(AtomicU8, u8),
            2 => cas_loop!(AtomicU16, u16),
            4 => cas_loop!(AtomicU32, u32),
            _ => cas_loop!(AtomicU64, u64),
        }
    }

    /// Atomic compare-and-swap of the bits; returns the old bits.
    pub fn cas(&self, off: usize, w: usize, cmp: u64, new: u64) -> u64 {
        let p = self.byte_ptr(off);
        macro_rules! cas {
            ($A:ty, $t:ty) => {{
                // SAFETY: as in `load_w`.
                let a = unsafe { <$A>::from_ptr(p as *mut $t) };
                match a.compare_exchange(cmp as $t, new as $t, Ordering::SeqCst, Ordering::SeqCst) {
                    Ok(o) | Err(o) => o as u64,
                }
            }};
        }
        match w {
            1 => cas!(AtomicU8, u8),
            2 => cas!(AtomicU16, u16),
            4 => cas!(AtomicU32, u32),
            _ => cas!(AtomicU64, u64),
        }
    }
}

/// What an access is, for error messages.
#[derive(Copy, Clone)]
pub(crate) enum Access {
    Load,
    Store,
    Atomic,
}

impl Access {
    fn name(self) -> &'static str {
        match self {
            Access::Load => "load",
            Access::Store => "store",
            Access::Atomic => "atomic",
        }
    }
}

pub(crate) struct Memory {
    pub bufs: Vec<Buffer>,
}

impl Memory {
    /// Finds the buffer and byte offset of an access of `dt` at pointer `p`, or says why it is invalid.
    #[inline]
    pub fn resolve(&self, p: u64, dt: DType, access: Access) -> Result<(&Buffer, usize), Fault> {
        let w = dt.size_bytes();
        let zone = (p.wrapping_add(1 << (ZONE_BITS - 1))) >> ZONE_BITS;
        let buf = match zone.checked_sub(1).and_then(|i| self.bufs.get(i as usize)) {
            Some(b) => b,
            None => {
                return Err(Fault::new(
                    ErrorKind::InvalidPointer,
                    format!("{} through an invalid pointer {p:#x} (not inside any buffer)", access.name()),
                ))
            }
        };
        let off = p.wrapping_sub(base((zone - 1) as usize)) as i64;
        if off < 0 || off as u64 + w as u64 > buf.bytes as u64 {
            let index = off.div_euclid(w as i64);
            let of = if buf.dtype == dt { String::new() } else { format!(" (as {dt})") };
            return Err(Fault::new(
                ErrorKind::OutOfBounds,
                format!("out-of-bounds {}: index {index}{of} of {}", access.name(), buf.describe()),
            ));
        }
        if !(off as usize).is_multiple_of(w) {
            return Err(Fault::new(
                ErrorKind::Misaligned,
                format!(
                    "misaligned {}: byte offset {off} of {} is not a multiple of {w} (the size of {dt})",
                    access.name(),
                    buf.describe()
                ),
            ));
        }
        Ok((buf, off as usize))
    }
}

/// Resolves the lanes of one memory op, remembering the last buffer hit so that
/// lanes in the same buffer skip the lookup; anything else (another buffer, an
/// error) goes through [`Memory::resolve`].
pub(crate) struct Cursor<'m> {
    mem: &'m Memory,
    dt: DType,
    access: Access,
    /// The buffer, the pointer value of its byte 0, and the largest valid offset.
    hit: Option<(&'m Buffer, u64, u64)>,
}

impl<'m> Cursor<'m> {
    pub fn new(mem: &'m Memory, dt: DType, access: Access) -> Cursor<'m> {
        Cursor { mem, dt, access, hit: None }
    }

    #[inline(always)]
    pub fn at(&mut self, p: u64) -> Result<(&'m Buffer, usize), Fault> {
        if let Some((b, base, max)) = self.hit {
            let off = p.wrapping_sub(base);
            if off <= max && off & (self.dt.size_bytes() as u64 - 1) == 0 {
                return Ok((b, off as usize));
            }
        }
        self.miss(p)
    }

    #[cold]
    fn miss(&mut self, p: u64) -> Result<(&'m Buffer, usize), Fault> {
        let (b, off) = self.mem.resolve(p, self.dt, self.access)?;
        self.hit = Some((b, p - off as u64, (b.bytes - self.dt.size_bytes()) as u64));
        Ok((b, off))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_names_buffer_and_index() {
        let data: Vec<u8> = (0..16).collect();
        let mem = Memory { bufs: vec![Buffer::new("x", DType::F32, 4, &data)] };
        let (b, off) = mem.resolve(base(0) + 12, DType::F32, Access::Load).unwrap();
        assert_eq!(off, 12);
        assert_eq!(b.load_w::<4>(off), u32::from_le_bytes([12, 13, 14, 15]) as u64);
        let e = mem.resolve(base(0) + 16, DType::F32, Access::Load).unwrap_err();
        assert_eq!(e.kind, ErrorKind::OutOfBounds);
        assert!(e.msg.contains("index 4 of buffer `x` (4 elements of f32)"), "{}", e.msg);
        let e = mem.resolve(base(0).wrapping_sub(4), DType::F32, Access::Store).unwrap_err();
        assert!(e.msg.contains("index -1"), "{}", e.msg);
        assert_eq!(mem.resolve(0, DType::F32, Access::Load).unwrap_err().kind, ErrorKind::InvalidPointer);
        assert_eq!(mem.resolve(base(0) + 2, DType::F32, Access::Load).unwrap_err().kind, ErrorKind::Misaligned);
    }

    #[test]
    fn narrow_stores_keep_neighbours() {
        let mem = Memory { bufs: vec![Buffer::new("h", DType::F16, 5, &[0xAA; 10])] };
        mem.bufs[0].store_w::<2>(2, 0x1234);
        let old = mem.bufs[0].rmw(8, 2, |o| o + 1);
        assert_eq!(old, 0xAAAA);
        let mut out = vec![0u8; 10];
        mem.bufs[0].copy_to(&mut out);
        assert_eq!(out, vec![0xAA, 0xAA, 0x34, 0x12, 0xAA, 0xAA, 0xAA, 0xAA, 0xAB, 0xAA]);
    }
}
