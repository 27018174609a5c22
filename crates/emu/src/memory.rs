//! Memory of a launch: global buffers (bounds-checked, each at its own fake device
//! address), generic-address windows for shared and local memory, and the striped
//! locks that make global atomics atomic across CTAs running on different cores.
//!
//! Public so the SASS emulator (trident-sass-emu) runs on the same global memory: buffers
//! at the same fake addresses, the same bounds checks and fault messages.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

/// Global addresses start here. Region `i` (argument buffer `i`, or module variable
/// `MODULE_REGION0 + j`) starts at `GLOBAL_BASE + i << REGION_SHIFT`, so regions are
/// 64 GiB apart: a pointer that runs off one buffer never lands in another.
pub const GLOBAL_BASE: u64 = 1 << 44;
pub const REGION_SHIFT: u32 = 36;
pub const MAX_BUFFERS: usize = 256;
pub const MODULE_REGION0: usize = 256;
const MAX_REGIONS: usize = 512;
/// Generic addresses of the CTA's shared memory and the thread's local memory.
pub const SHARED_WINDOW: u64 = 0x0000_7000_0000_0000;
pub const LOCAL_WINDOW: u64 = 0x0000_7100_0000_0000;
/// Generic (and `.param`-space) addresses of the kernel parameters: `mov`/`cvta.param` of a
/// kernel parameter's name gives `PARAM_WINDOW + offset` (PTX lets kernels take parameters'
/// addresses, e.g. a tensor map passed as a `.param .align 64 .b8 [128]` parameter).
pub const PARAM_WINDOW: u64 = 0x0000_7200_0000_0000;
pub const WINDOW_SIZE: u64 = 1 << 32;

pub fn buffer_base(i: usize) -> u64 {
    GLOBAL_BASE + ((i as u64) << REGION_SHIFT)
}

pub fn module_global_base(j: usize) -> u64 {
    buffer_base(MODULE_REGION0 + j)
}

/// A bad global access, with what is known about it: the message, and for an access
/// outside a buffer argument, which argument and where relative to its start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemFault {
    pub message: String,
    pub access: Option<crate::error::Access>,
}

impl From<String> for MemFault {
    fn from(message: String) -> MemFault {
        MemFault { message, access: None }
    }
}

/// A state space an address resolved to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Place {
    Global(u64),
    /// The kernel parameter buffer (`ld.param`, or a generic address in `PARAM_WINDOW`): an offset.
    Param(u64),
    Shared(u64),
    Local(u64),
}

/// Classifies a generic address.
pub fn classify_generic(addr: u64) -> Place {
    if (SHARED_WINDOW..SHARED_WINDOW + WINDOW_SIZE).contains(&addr) {
        Place::Shared(addr - SHARED_WINDOW)
    } else if (LOCAL_WINDOW..LOCAL_WINDOW + WINDOW_SIZE).contains(&addr) {
        Place::Local(addr - LOCAL_WINDOW)
    } else if (PARAM_WINDOW..PARAM_WINDOW + WINDOW_SIZE).contains(&addr) {
        Place::Param(addr - PARAM_WINDOW)
    } else {
        Place::Global(addr)
    }
}

pub struct Region {
    pub name: String,
    pub data: Box<[AtomicU8]>,
    pub writable: bool,
}

/// Global memory of one launch. Bytes are atomics so CTAs on different threads may
/// touch the same buffer without undefined behaviour; racy kernels get racy results,
/// as on a GPU, but never memory unsafety here.
pub struct GlobalMem {
    regions: Vec<Option<Region>>,
    locks: Vec<Mutex<()>>,
}

impl GlobalMem {
    pub fn new() -> GlobalMem {
        let mut regions = Vec::with_capacity(MAX_REGIONS);
        regions.resize_with(MAX_REGIONS, || None);
        GlobalMem { regions, locks: (0..64).map(|_| Mutex::new(())).collect() }
    }

    pub fn set_region(&mut self, idx: usize, name: String, bytes: &[u8], writable: bool) {
        let data: Box<[AtomicU8]> = bytes.iter().map(|&b| AtomicU8::new(b)).collect();
        if let Some(slot) = self.regions.get_mut(idx) {
            *slot = Some(Region { name, data, writable });
        }
    }

    /// Byte length of every region slot (0 for empty ones), for the timing model's L2.
    pub fn region_lens(&self) -> Vec<usize> {
        let last = self.regions.iter().rposition(|r| r.is_some()).map_or(0, |i| i + 1);
        self.regions[..last].iter().map(|r| r.as_ref().map_or(0, |r| r.data.len())).collect()
    }

    pub fn region_bytes(&self, idx: usize) -> Option<Vec<u8>> {
        let r = self.regions.get(idx)?.as_ref()?;
        Some(r.data.iter().map(|b| b.load(Ordering::Relaxed)).collect())
    }

    /// Finds the region and offset of `[addr, addr+len)`, or says why there is none. An
    /// address past a buffer's end but nearer the next region's start counts as a negative
    /// offset into that next buffer (`out - 1`), which is what such a pointer was made from.
    pub fn locate(&self, addr: u64, len: usize, write: bool) -> Result<(&Region, usize), MemFault> {
        if addr < GLOBAL_BASE {
            return Err(MemFault::from(if addr < 4096 {
                format!("global access to address {addr:#x} (a null pointer?)")
            } else {
                format!("global access to address {addr:#x}, which is in no buffer")
            }));
        }
        let idx = ((addr - GLOBAL_BASE) >> REGION_SHIFT) as usize;
        let here = self.regions.get(idx).and_then(|r| r.as_ref());
        let next = self.regions.get(idx + 1).and_then(|r| r.as_ref());
        let off = addr - buffer_base(idx);
        let beyond = here.map_or(u64::MAX, |r| off.saturating_sub(r.data.len() as u64));
        let before_next = buffer_base(idx + 1) - addr;
        if let (Some(n), true) = (next, before_next < beyond) {
            let offset = -(before_next as i64);
            return Err(self.outside(idx + 1, n, offset, len, write, addr));
        }
        let Some(r) = here else {
            return Err(MemFault::from(format!("global access to address {addr:#x}, which is in no buffer")));
        };
        let end = off + len as u64;
        if end > r.data.len() as u64 {
            return Err(self.outside(idx, r, off as i64, len, write, addr));
        }
        if write && !r.writable {
            return Err(MemFault::from(format!("write to read-only {} at offset {off}", r.name)));
        }
        Ok((r, off as usize))
    }

    fn outside(&self, idx: usize, r: &Region, offset: i64, len: usize, write: bool, addr: u64) -> MemFault {
        MemFault {
            message: format!(
                "out-of-bounds access of {len} bytes at offset {offset} of {} ({} bytes long, address {addr:#x})",
                r.name,
                r.data.len()
            ),
            access: (idx < MAX_BUFFERS).then_some(crate::error::Access {
                param: idx,
                offset,
                len,
                write,
                region_bytes: r.data.len(),
            }),
        }
    }

    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), MemFault> {
        let (r, off) = self.locate(addr, out.len(), false)?;
        for (i, o) in out.iter_mut().enumerate() {
            *o = r.data[off + i].load(Ordering::Relaxed);
        }
        Ok(())
    }

    pub fn write(&self, addr: u64, src: &[u8]) -> Result<(), MemFault> {
        let (r, off) = self.locate(addr, src.len(), true)?;
        for (i, &b) in src.iter().enumerate() {
            r.data[off + i].store(b, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Read-modify-write of `len` bytes under the address's lock: atomic with respect
    /// to every other `rmw` on the same address.
    pub fn rmw(&self, addr: u64, len: usize, f: impl FnOnce(u64) -> u64) -> Result<u64, MemFault> {
        let (r, off) = self.locate(addr, len, true)?;
        let _g = self.locks[((addr >> 3) & 63) as usize].lock().unwrap_or_else(|p| p.into_inner());
        let mut b = [0u8; 8];
        for i in 0..len {
            b[i] = r.data[off + i].load(Ordering::Relaxed);
        }
        let old = u64::from_le_bytes(b);
        let new = f(old).to_le_bytes();
        for i in 0..len {
            r.data[off + i].store(new[i], Ordering::Relaxed);
        }
        Ok(old)
    }
}

impl Default for GlobalMem {
    fn default() -> Self {
        GlobalMem::new()
    }
}

pub fn check_align(addr: u64, size: u64) -> Result<(), String> {
    if size > 1 && !addr.is_multiple_of(size) {
        Err(format!("misaligned access of {size} bytes at address {addr:#x}"))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_just_before_a_buffer_is_a_negative_offset_into_it() {
        let mut m = GlobalMem::new();
        m.set_region(0, "a".into(), &[0; 16], true);
        m.set_region(1, "b".into(), &[0; 8], true);
        let Err(e) = m.locate(buffer_base(1) - 4, 4, true) else { panic!("out of bounds") };
        let a = e.access.expect("attributed to a buffer");
        assert_eq!((a.param, a.offset, a.write), (1, -4, true), "{}", e.message);
        // Just past the end of `a` is still `a`, at a positive offset.
        let Err(e) = m.locate(buffer_base(0) + 16, 4, false) else { panic!("out of bounds") };
        assert_eq!(e.access.map(|a| (a.param, a.offset)), Some((0, 16)));
        assert!(m.locate(buffer_base(1) + 4, 4, false).is_ok());
    }
}
