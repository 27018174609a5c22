//! Where profiling probes keep their records on the machine: the groups of a CTA, their
//! leaders and their rings in shared memory (the device side of
//! `trident_profile::format`). Shared-memory planning sizes the rings from here, and
//! emission addresses them from here.

use crate::options::{GpuOptions, ProfileOptions};
use trident_ir::{Function, OpKind};
use trident_profile::format::{Granularity, RECORD_BYTES};

/// The probes' geometry for one kernel compiled with real probes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ProbeGeometry {
    pub granularity: Granularity,
    /// Records per ring (a power of two).
    pub capacity: u32,
    /// Groups (rings, buffer slots) per CTA, the producer warps' included.
    pub groups_per_cta: u32,
    /// log2 of the threads of one group: within a role, `tid >> shift` is the group, and
    /// the leader is the thread whose low `shift` bits are zero. A group of a whole CTA is
    /// shifted past every thread id (1024 threads at most).
    pub group_shift: u32,
    /// Threads of the warps the layouts describe (`32 * num_warps`): in a warp-specialized
    /// kernel the producer warps' threads come after them.
    pub consumer_threads: u32,
    /// Groups of those warps; the producer warps' groups are numbered from here.
    pub consumer_groups: u32,
    /// A warp-specialized kernel's producer warps (0 for every other kernel).
    pub producer_warps: u32,
}

/// The producer warps of a kernel in GPU IR: those its `warp_specialize` adds after the
/// `num_warps` its layouts describe (0 without one).
pub fn producer_warps(f: &Function) -> u32 {
    f.all_ops()
        .into_iter()
        .map(|o| match f.ops[o].kind {
            OpKind::WarpSpecialize { producer_warps, .. } => producer_warps,
            _ => 0,
        })
        .sum()
}

impl ProbeGeometry {
    /// The geometry of `opts` for a kernel with `producer_warps` producer warps (see
    /// [`producer_warps`]), when it profiles with real probes
    /// (markers need none).
    pub fn of(opts: &GpuOptions, producer_warps: u32) -> Option<ProbeGeometry> {
        let p: &ProfileOptions = opts.profile.as_ref()?;
        if !p.mode.has_probes() {
            return None;
        }
        let group_shift = match p.granularity {
            Granularity::Warp => 5,
            Granularity::Warpgroup => 7,
            Granularity::Cta => 10,
        };
        Some(ProbeGeometry {
            granularity: p.granularity,
            capacity: p.capacity,
            groups_per_cta: p.granularity.groups_with_producers(opts.num_warps, producer_warps),
            group_shift,
            consumer_threads: 32 * opts.num_warps,
            consumer_groups: p.granularity.groups_per_cta(opts.num_warps),
            producer_warps,
        })
    }

    /// Bytes of one ring.
    pub fn ring_bytes(&self) -> u32 {
        self.capacity * RECORD_BYTES as u32
    }

    /// Shared memory the rings of one CTA take (`Layout::shared_bytes_per_cta`), as a u64
    /// so that an absurd capacity cannot overflow before the planner rejects it.
    pub fn shared_bytes_per_cta(&self) -> u64 {
        self.groups_per_cta as u64 * self.capacity as u64 * RECORD_BYTES as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::ProbeMode;

    #[test]
    fn rings_per_granularity() {
        let opts = |granularity, num_warps| GpuOptions {
            num_warps,
            profile: Some(ProfileOptions { granularity, capacity: 64, ..ProfileOptions::default() }),
            ..GpuOptions::default()
        };
        let g = ProbeGeometry::of(&opts(Granularity::Warp, 8), 0).unwrap();
        assert_eq!((g.groups_per_cta, g.group_shift, g.ring_bytes(), g.shared_bytes_per_cta()), (8, 5, 512, 4096));
        let g = ProbeGeometry::of(&opts(Granularity::Warpgroup, 8), 0).unwrap();
        assert_eq!((g.groups_per_cta, g.shared_bytes_per_cta()), (2, 1024));
        let g = ProbeGeometry::of(&opts(Granularity::Cta, 2), 0).unwrap();
        assert_eq!((g.groups_per_cta, g.group_shift), (1, 10));
        // A warp-specialized kernel's producer warp has a group (and a ring) of its own.
        let g = ProbeGeometry::of(&opts(Granularity::Warpgroup, 8), 1).unwrap();
        assert_eq!(
            (g.groups_per_cta, g.consumer_groups, g.consumer_threads, g.shared_bytes_per_cta()),
            (3, 2, 256, 1536)
        );
        let g = ProbeGeometry::of(&opts(Granularity::Cta, 4), 1).unwrap();
        assert_eq!((g.groups_per_cta, g.consumer_groups), (2, 1));
        let mut markers = opts(Granularity::Warp, 4);
        markers.profile.as_mut().unwrap().mode = ProbeMode::Markers;
        assert_eq!(ProbeGeometry::of(&markers, 0), None);
        assert_eq!(ProbeGeometry::of(&GpuOptions::default(), 0), None);
    }
}
