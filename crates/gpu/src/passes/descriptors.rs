//! Tensor-descriptor loads (pass `gpu-descriptors`, the first GPU pass).
//!
//! The front end lowers `desc.load(offsets)` to a `desc_load`: the element pointers and
//! bounds mask of the window (what every backend without a tensor-memory accelerator runs)
//! plus the window itself as scalars (base, shape, strides, offsets). This pass decides, per
//! load, how the GPU runs it. Today every descriptor load becomes the plain masked `load`
//! its first three operands describe — the window operands are dropped and whatever only
//! they used is left to DCE — so the later passes (layouts, coalescing, `cp.async`
//! pipelining) see the loads they have always seen.

use trident_ir::{CacheModifier, EvictionPolicy, Function, OpKind};

/// Turns every `desc_load` of `f` into a `load`; returns how many.
pub fn lower_descriptors(f: &mut Function) -> usize {
    let mut n = 0;
    for op in f.all_ops() {
        if let OpKind::DescLoad { .. } = f.ops[op].kind {
            let od = &mut f.ops[op];
            od.kind = OpKind::Load { cache: CacheModifier::None, evict: EvictionPolicy::Normal, volatile: false };
            od.operands.truncate(3);
            n += 1;
        }
    }
    n
}
