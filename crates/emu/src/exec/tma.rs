//! Tensor-map (TMA) instructions over the emulator's tensor-map encoding
//! (`crate::tensormap`): `cp.async.bulk.tensor` loads and stores in tile mode,
//! `tensormap.replace`, `tensormap.cp_fenceproxy`, and the prefetches.
//!
//! A load reads the box from global memory when it issues (out-of-bounds elements filled
//! with zeros or the OOB-NaN), lays it out densely, dimension 0 fastest, swizzles its 16-byte
//! chunks by shared address (`Swizzle::apply`), and lands like a bulk copy: at the cycle
//! the timing model says the data arrives, completing the full box's bytes (out-of-bounds
//! ones included, as on hardware) as transaction bytes on its mbarrier. A store reads the
//! box from shared memory through the same swizzle and writes its in-bounds elements at
//! issue; its bulk group's wait takes the modelled time. Reads and writes of the tensor are
//! bounds-checked against the buffers like every global access. The map checks and the box
//! semantics (runs in bounds, fill, swizzled chunks) are `TensorMap`'s, shared with the SASS
//! emulator.

use super::mbarrier::{log_chunks, BulkCopy};
use super::warp::{bad_operand, Ex, R};
use crate::error::{EmuError, ErrorKind};
use crate::ir::{Instr, Kind, Operand, Space, TmapField};
use crate::memory::{classify_generic, MemFault, Place};
use crate::tensormap::{offset, TensorMap, BYTES, MAGIC};

fn rt(msg: impl Into<String>) -> EmuError {
    EmuError::new(ErrorKind::Runtime, msg)
}

fn mem(msg: impl Into<String>) -> EmuError {
    EmuError::new(ErrorKind::Memory, msg)
}

fn fault(f: MemFault) -> EmuError {
    let mut e = EmuError::new(ErrorKind::Memory, f.message);
    e.access = f.access.map(Box::new);
    e
}

impl Ex<'_, '_> {
    /// The 128 bytes of the tensor map at `a` in `space` (`.param`, `.const`/`.global`, or
    /// generic), checked: 64-byte aligned, in parameter or global memory.
    fn map_bytes(&self, space: Space, a: u64) -> R<[u8; BYTES]> {
        if !a.is_multiple_of(64) {
            return Err(mem(format!(
                "tensor map address {a:#x} is not 64-byte aligned (a tensor map is a 128-byte object aligned to 64 bytes)"
            )));
        }
        let place = match space {
            Space::Generic => classify_generic(a),
            Space::Const | Space::Global => Place::Global(a),
            s => self.place(s, a),
        };
        let mut b = [0u8; BYTES];
        match place {
            Place::Param(off) => {
                let p = &self.l.params;
                let Some(src) = p.get(off as usize..off as usize + BYTES) else {
                    return Err(mem(format!(
                        "tensor map at parameter offset {off} runs past the {} bytes of kernel parameters",
                        p.len()
                    )));
                };
                b.copy_from_slice(src);
            }
            Place::Global(g) => self.l.global.read(g, &mut b).map_err(fault)?,
            Place::Shared(_) | Place::Local(_) => {
                return Err(mem(format!(
                    "tensor map at generic address {a:#x} is in {} memory: copies read tensor maps from .param, .const or .global memory (PTX ISA \"Tensor-map\"; copy it out with tensormap.cp_fenceproxy)",
                    if matches!(place, Place::Shared(_)) { "shared" } else { "local" }
                )))
            }
        }
        Ok(b)
    }

    /// The map a tensor copy of `dim` dimensions uses, decoded and validated
    /// ([`TensorMap::for_copy`], shared with the SASS emulator).
    fn use_map(&self, a: u64, dim: u8) -> R<TensorMap> {
        TensorMap::for_copy(&self.map_bytes(Space::Generic, a)?, a, dim as u32)
    }

    /// The box's coordinates for one lane (signed 32-bit).
    fn coords(&self, op: &Operand, lane: u32) -> R<[i64; 5]> {
        let Operand::Vec(v) = op else { return Err(bad_operand("tensor coordinates")) };
        let mut c = [0i64; 5];
        for (x, o) in c.iter_mut().zip(v) {
            *x = self.src1(o, lane)? as u32 as i32 as i64;
        }
        Ok(c)
    }

    /// The shared offset of a tensor copy's shared operand: 128-byte aligned, the swizzled box
    /// inside shared memory ([`TensorMap::shared_chunks`]). Returns the offset and the chunk
    /// addresses (empty: contiguous).
    fn tensor_smem(&self, op: &Operand, lane: u32, m: &TensorMap, what: &str) -> R<(u32, Vec<u32>)> {
        let a = self.addr(op, lane)?;
        let off = match self.place(Space::Shared, a) {
            Place::Shared(o) => o,
            _ => return Err(bad_operand("tensor copy shared address")),
        };
        let chunks = m.shared_chunks(off, self.m.shared.len() as u64, what)?;
        Ok((off as u32, chunks))
    }

    /// Logs a global row run for the timing model in 128-byte pieces.
    fn log_global(&mut self, a: u64, len: u64) {
        log_chunks(self, Place::Global(a), len);
    }
}

pub fn exec(ex: &mut Ex, ins: &Instr, mask: u32) -> R<()> {
    let o = &ins.ops;
    let dim = ins.m.count;
    match ins.kind {
        Kind::TensorLoad => {
            for lane in 0..32 {
                if mask >> lane & 1 == 0 {
                    continue;
                }
                let map_at = ex.addr(&o[1], lane)?;
                let m = ex.use_map(map_at, dim)?;
                let coords = ex.coords(&o[2], lane)?;
                let bytes = m.box_bytes();
                let (dst, chunks) = ex.tensor_smem(&o[0], lane, &m, "destination")?;
                let bar = ex.mbar_addr(ins, &o[3], lane)?;
                if chunks.is_empty() {
                    ex.m.check_not_barrier(dst as u64, bytes as usize)?;
                }
                for &c in &chunks {
                    ex.m.check_not_barrier(c as u64, 16)?;
                }
                let bar_id = ex.m.mbar(bar)?.id;
                // Out-of-bounds elements keep the fill; in-bounds runs are read over it.
                let mut data = m.filled_box();
                for r in m.box_runs(&coords)? {
                    let (at, len) = (r.at as usize, r.len as usize);
                    ex.l.global.read(r.addr, &mut data[at..at + len]).map_err(fault)?;
                    ex.log_global(r.addr, r.len);
                }
                log_chunks(ex, Place::Shared(dst as u64), bytes);
                // From issue until the phase it completes is observed, the destination
                // belongs to the copy (as for bulk copies).
                let tag = match ex.m.race.as_mut() {
                    Some(r) => {
                        let tag = ex.m.landings.len() as u32;
                        ex.m.landings.push((bar_id, u64::MAX));
                        if chunks.is_empty() {
                            r.async_write(dst as usize, bytes as usize, tag, ins.line);
                        }
                        for &c in &chunks {
                            r.async_write(c as usize, 16, tag, ins.line);
                        }
                        Some(tag)
                    }
                    None => None,
                };
                let (line, warp) = (ins.line, ex.w.id);
                ex.m.bulk.push(BulkCopy { dst, data, bar, bar_id, done: u64::MAX, line, warp, lane, tag, chunks });
            }
            Ok(())
        }
        Kind::TensorStore => {
            for lane in 0..32 {
                if mask >> lane & 1 == 0 {
                    continue;
                }
                let map_at = ex.addr(&o[0], lane)?;
                let m = ex.use_map(map_at, dim)?;
                let coords = ex.coords(&o[1], lane)?;
                let bytes = m.box_bytes();
                let (src, chunks) = ex.tensor_smem(&o[2], lane, &m, "source")?;
                // The async proxy reads shared memory as the issuing warp would.
                let mut data = vec![0u8; bytes as usize];
                if chunks.is_empty() {
                    ex.read_mem_aligned(Space::Shared, src as u64, &mut data, lane, ins.line, 16)?;
                    super::mbarrier::store_reads(ex, src as u64, bytes, ins.line);
                } else {
                    for (k, &c) in chunks.iter().enumerate() {
                        ex.read_mem(Space::Shared, c as u64, &mut data[16 * k..16 * k + 16], lane, ins.line)?;
                    }
                    // A swizzled box's chunks are a permutation within its span.
                    let lo = chunks.iter().min().copied().unwrap_or(0) as u64;
                    let hi = chunks.iter().max().copied().unwrap_or(0) as u64 + 16;
                    super::mbarrier::store_reads(ex, lo, hi - lo, ins.line);
                }
                for r in m.box_runs(&coords)? {
                    let (at, len) = (r.at as usize, r.len as usize);
                    ex.l.global.write(r.addr, &data[at..at + len]).map_err(fault)?;
                    ex.log_global(r.addr, r.len);
                }
            }
            Ok(())
        }
        Kind::TensorPrefetch => {
            // Hints: only the map's address is checked (a prefetch of a map does not use it).
            let space = ins.m.space.unwrap_or(Space::Generic);
            for lane in 0..32 {
                if mask >> lane & 1 != 0 {
                    let a = ex.addr(&o[0], lane)?;
                    ex.map_bytes(space, a)?;
                }
            }
            Ok(())
        }
        Kind::TmapReplace => {
            let field = ins.m.tmap.ok_or_else(|| bad_operand("tensormap.replace without a field"))?;
            let space = ins.m.space.unwrap_or(Space::Generic);
            for lane in 0..32 {
                if mask >> lane & 1 == 0 {
                    continue;
                }
                let a = ex.addr(&o[0], lane)?;
                match ex.place(space, a) {
                    Place::Global(_) | Place::Shared(_) => {}
                    _ => {
                        return Err(mem(format!(
                        "tensormap.replace of the tensor map at {a:#x}: it must be in .global or .shared::cta memory"
                    )))
                    }
                }
                if !a.is_multiple_of(64) {
                    return Err(mem(format!(
                        "tensor map address {a:#x} is not 64-byte aligned (a tensor map is a 128-byte object aligned to 64 bytes)"
                    )));
                }
                let k = ex.src1(&o[1], lane)? as usize;
                let v = ex.src1(&o[2], lane)?;
                let w32 = (v as u32).to_le_bytes();
                let w64 = v.to_le_bytes();
                let (at, bytes): (usize, &[u8]) = match field {
                    TmapField::GlobalAddress => (offset::GLOBAL_ADDRESS, &w64),
                    TmapField::Rank => (offset::RANK, &w32),
                    TmapField::BoxDim => (offset::BOX_DIM + 4 * k, &w32),
                    TmapField::GlobalDim => (offset::GLOBAL_DIM + 4 * k, &w32),
                    TmapField::GlobalStride => (offset::GLOBAL_STRIDE + 8 * k, &w64),
                    TmapField::ElementStride => (offset::ELEMENT_STRIDE + 4 * k, &w32),
                    TmapField::ElemType => (offset::ELEMTYPE, &w32[..1]),
                    TmapField::Interleave => (offset::INTERLEAVE, &w32[..1]),
                    TmapField::SwizzleMode => (offset::SWIZZLE, &w32[..1]),
                    TmapField::SwizzleAtomicity => (offset::ATOMICITY, &w32[..1]),
                    TmapField::FillMode => (offset::FILL, &w32[..1]),
                };
                ex.write_mem(space, a + at as u64, bytes, lane, ins.line)?;
                ex.write_mem(space, a, &MAGIC, lane, ins.line)?;
            }
            Ok(())
        }
        Kind::TmapCopy => {
            let live = ex.w.lanes & !ex.w.exited;
            if mask != live {
                return Err(rt(
                    "tensormap.cp_fenceproxy.sync.aligned executed by part of a warp (every thread of the warp must execute it)",
                ));
            }
            for lane in 0..32 {
                if mask >> lane & 1 == 0 {
                    continue;
                }
                let dst = ex.addr(&o[0], lane)?;
                let src = ex.addr(&o[1], lane)?;
                for (what, a) in [("destination", dst), ("source", src)] {
                    if !a.is_multiple_of(64) {
                        return Err(mem(format!(
                            "tensormap.cp_fenceproxy {what} {a:#x} is not 64-byte aligned (a tensor map is a 128-byte object aligned to 64 bytes)"
                        )));
                    }
                }
                let mut b = [0u8; 16];
                for piece in 0..(BYTES as u64 / 16) {
                    ex.read_mem(Space::Shared, src + 16 * piece, &mut b, lane, ins.line)?;
                    ex.write_mem(Space::Global, dst + 16 * piece, &b, lane, ins.line)?;
                }
            }
            Ok(())
        }
        _ => Err(bad_operand("not a tensor-map instruction")),
    }
}
