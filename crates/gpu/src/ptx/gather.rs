//! `gather` through shared memory: every thread stores its source elements at their flat
//! (row-major) index, a CTA barrier, then each result element loads the source element its
//! index names — the flat index of its own coordinates with the axis coordinate replaced by
//! the index value. The part of that address without the index is a linear function of the
//! element's coordinates (a bit projection: the shapes are powers of two), so it comes from
//! the same tile addressing as any exchange; the index adds `value × stride × bytes` at run
//! time. An index outside the axis gives 0, as the interpreter does.

use std::rc::Rc;

use super::emitter::{Emitter, Res};
use super::regs::RegClass;
use crate::layout::linear::LinearLayout;
use crate::machine::regs::scratch_elem_bytes;
use trident_ir::{DType, Op, OpKind, Rounding};

/// For each bit of the result's flat index: the bit of the source's flat index it becomes
/// (`None` for the bits of `axis`, which the index value replaces). Dims are powers of two.
fn bit_targets(src: &[u32], res: &[u32], axis: usize) -> Vec<Option<u32>> {
    let log = |n: u32| n.trailing_zeros();
    let mut out = vec![];
    // Row-major: the last dim holds the lowest bits.
    let mut src_shift = 0;
    for d in (0..res.len()).rev() {
        for b in 0..log(res[d]) {
            out.push(if d == axis { None } else { Some(src_shift + b) });
        }
        src_shift += log(src[d]);
    }
    out
}

impl Emitter<'_> {
    pub(crate) fn emit_gather(&mut self, op: Op) -> Res<()> {
        let f = self.f;
        let d = &f.ops[op];
        let OpKind::Gather { axis } = d.kind else { return Err(self.err("internal: not a gather")) };
        let (src, index, res) = (d.operands[0], d.operands[1], d.results[0]);
        let (Some(sl), Some(il), Some(rl)) = (self.ll(src)?, self.ll(index)?, self.ll(res)?) else {
            return Err(self.err("gather needs tensors"));
        };
        if il.reg != rl.reg || il.lane != rl.lane || il.warp != rl.warp {
            return Err(self.err("internal: gather's result is not in its index's layout"));
        }
        for s in [&sl.shape, &rl.shape] {
            if s.iter().any(|n| !n.is_power_of_two()) {
                return Err(self.err("gather needs power-of-two shapes"));
            }
        }
        let sregs = self.regs(src)?;
        let iregs = self.regs(index)?;
        let Some(idt) = f.ty(index).elem().num() else { return Err(self.err("gather index must be integers")) };
        let class = sregs.first().map_or(RegClass::B32, |r| r.class);
        let eb = scratch_elem_bytes(class) as u64;
        let off = self.smem_offset(op)? as u64;
        let base = self.smem_base();
        // Store the source at its flat index.
        let owner = self.owner_pred(&sl);
        let mut ta = self.tile_addr(&sl, eb as u32, base, off);
        for (r, &v) in sregs.iter().enumerate().take(sl.num_regs()) {
            let c = sl.reg_part(r as u64);
            let addr = self.tile_elem_addr(&mut ta, c);
            self.st_shared(owner, &addr, v);
        }
        self.cta_barrier();
        // The address of each result element without its index.
        let ax = axis as usize;
        let targets = bit_targets(&sl.shape, &rl.shape, ax);
        let project = |c: u64| -> u64 {
            targets.iter().enumerate().filter(|(i, _)| c >> i & 1 == 1).fold(0, |a, (_, t)| a | t.map_or(0, |t| 1 << t))
        };
        let lt = Rc::new(LinearLayout {
            shape: sl.shape.clone(),
            reg: vec![],
            lane: rl.lane.iter().map(|&b| project(b)).collect(),
            warp: rl.warp.iter().map(|&b| project(b)).collect(),
        });
        let mut ta = self.tile_addr(&lt, eb as u32, base, off);
        let stride: u64 = sl.shape[ax + 1..].iter().map(|&n| n as u64).product();
        let n = sl.shape[ax] as u64;
        let mut out = vec![];
        for (r, &ix) in iregs.iter().enumerate().take(rl.num_regs()) {
            let c = project(rl.reg_part(r as u64));
            let addr = self.tile_elem_addr(&mut ta, c);
            let (breg, imm) = match addr.split_once('+') {
                Some((b, i)) => (b.to_string(), format!("+{i}")),
                None => (addr.clone(), String::new()),
            };
            // The index as a 64-bit value: a negative one is a huge unsigned one.
            let v = if idt == DType::I64 || idt == DType::U64 {
                ix
            } else {
                self.convert(idt, if idt.is_signed_int() { DType::I64 } else { DType::U64 }, Rounding::Rtne, ix)?
            };
            let inb = self.new_reg(RegClass::Pred);
            self.ins(format!("setp.lt.u64 {inb}, {v}, {n}"));
            let v32 = self.new_reg(RegClass::B32);
            self.ins(format!("cvt.u32.u64 {v32}, {v}"));
            let a = self.new_reg(RegClass::B32);
            self.ins(format!("mad.lo.u32 {a}, {v32}, {}, {breg}", stride * eb));
            let out_r = self.new_reg(class);
            self.ins(format!("mov.b{} {out_r}, 0", eb * 8));
            self.ins(format!("@{inb} ld.shared.{} {out_r}, [{a}{imm}]", class.btype()));
            out.push(out_r);
        }
        self.set(res, out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::bit_targets;

    #[test]
    fn result_bits_land_on_the_source_bits_of_their_dim() {
        // src 128x64, index 256x64 along axis 0: the column bits (0..6) stay, the row bits go.
        let t = bit_targets(&[128, 64], &[256, 64], 0);
        assert_eq!(t.len(), 14);
        assert!(t[..6].iter().enumerate().all(|(i, &b)| b == Some(i as u32)));
        assert!(t[6..].iter().all(Option::is_none));
        // src 128x64, index 128x128 along axis 1: the row bits move up by the source's 6.
        let t = bit_targets(&[128, 64], &[128, 128], 1);
        assert!(t[..7].iter().all(Option::is_none));
        assert!(t[7..].iter().enumerate().all(|(i, &b)| b == Some(6 + i as u32)));
    }
}
