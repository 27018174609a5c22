//! Lowering of `record` ops: the device side of `trident_profile::format` (the normative
//! byte layout is there; this module follows it step by step).
//!
//! **Probes** ([`ProbeMode::Probes`]). Each group of threads (warp, warpgroup or CTA) has a
//! ring of `capacity` 8-byte records in shared memory, where the shared-memory plan put the
//! rings (`smem_offset` on the records); only the group's *leader* (lane 0 of its first
//! warp) stores.
//!
//! * prologue: the group (`tid >> shift`; in a warp-specialized kernel the producer warps'
//!   threads count from the first of them, in the groups after the consumers'), the leader
//!   and leader-warp predicates, the
//!   group's ring address, the record count `n = 0`; right before the body, `%globaltimer`
//!   and `%clock64` (header words 6–7 and 4–5, kept in registers until the exit);
//! * each record, always the same six instructions, so every probe costs the same (the
//!   meta's `record_cost_cycles`, which replay subtracts): `%clock` (the low 32 bits of
//!   `%clock64`, as the PTX ISA defines it: no conversion), then, while that read
//!   completes, the ring address of record `n` (`and`, `mad`) and `n += 1`, the tag
//!   (`mov`), and one `st.shared.v2.u32` by the leader (with [`ProbeMode::Doubled`], each
//!   record is these six twice);
//! * exit (the kernel's one `ret`; structured IR has no other): `%clock64` and
//!   `%globaltimer`; then the leader's warp copies the ring as it is to its slot of the
//!   profile buffer (after `bar.warp.sync`, each lane copies records lane, lane + 32, ...;
//!   only the `min(n, capacity)` entries written), and the leader writes the header (16-byte
//!   vector stores: slots are 16-byte aligned for rings of two records or more) and the
//!   magic last. The buffer's address is the hidden last kernel parameter (see the ABI in
//!   [`super`]; it must be 16-byte aligned).
//!
//! **Markers** ([`ProbeMode::Markers`]). Each record is the comment line
//! `//@trident.mark <tag>`: no instruction, no ring, no parameter; `ptxas` ignores it and
//! the emulator records the warp's clock there at no cost (its ground truth).
//!
//! The tag of a record is `region id | end << 31`, ids from `trident_profile::regions_of`
//! (the same numbering the compiler's meta lists). Records never force a `wgmma` wait
//! (see `Emitter::op`), and no `.loc` is emitted for them.

use super::emitter::{Emitter, Res};
use super::regs::{Reg, RegClass};
use crate::machine::probe::ProbeGeometry;
use crate::options::ProbeMode;
use trident_ir::discardable::SMEM_OFFSET;
use trident_ir::{Function, Op, OpKind, SourceFile};
use trident_profile::format::{
    encode_tag, header_offset, HEADER_BYTES, MAGIC, RECORD_BYTES, W_CAPACITY, W_CLOCK_END_LO, W_CLOCK_START_LO, W_CTA,
    W_GROUP, W_GTIMER_END_LO, W_GTIMER_START_LO, W_MAGIC, W_RESERVED0, W_SMID, W_TOTAL,
};
use trident_profile::{regions_of, RegionTable};

/// How this kernel's records are lowered (present when `GpuOptions::profile` is set).
pub(crate) struct RecordLowering {
    regions: RegionTable,
    /// Probes per record (2 for [`ProbeMode::Doubled`]).
    repeat: u32,
    /// Registers of real probes; `None` with markers.
    probes: Option<Probes>,
}

/// The registers real probes share, set up in the prologue.
#[derive(Copy, Clone)]
struct Probes {
    geom: ProbeGeometry,
    /// The group's index in its CTA.
    group: Reg,
    /// True in the group's leader (the thread that records).
    leader: Reg,
    /// True in every lane of the leader's warp (they copy the ring out at the exit).
    leader_warp: Reg,
    /// Shared address of the group's ring; `None` when the kernel has no record.
    ring: Option<Reg>,
    /// Records made so far (the same in every thread of a group, and of its warp role).
    count: Reg,
    clock_start: Reg,
    timer_start: Reg,
    /// The profile buffer (the hidden parameter).
    buffer: Reg,
}

/// The records of `f`, for the lowering to number.
fn records(f: &Function) -> Vec<Op> {
    f.all_ops().into_iter().filter(|&o| matches!(f.ops[o].kind, OpKind::Record { .. })).collect()
}

impl RecordLowering {
    /// Numbers `f`'s regions when profiling (`mode`); real probes are set up afterwards
    /// ([`Emitter::setup_probes`]). Without profiling, a record is an error: the GPU
    /// pipeline strips them, so one here means the IR did not come through it.
    pub(crate) fn new(f: &Function, files: &[SourceFile], mode: Option<ProbeMode>) -> Res<Option<RecordLowering>> {
        if mode.is_none() {
            return match records(f).first() {
                Some(&r) => Err(trident_ir::Diagnostic::error(
                    "a `record` op needs profiling options to be lowered (GpuOptions::profile); without them the \
                     GPU pipeline strips records",
                )
                .at(f.ops[r].loc, 1)),
                None => Ok(None),
            };
        }
        let repeat = mode.map_or(1, ProbeMode::probes_per_record);
        Ok(Some(RecordLowering { regions: regions_of(f, files)?, repeat, probes: None }))
    }
}

impl Emitter<'_> {
    /// Sets up real probes: the prologue part and the registers every probe uses. `buffer`
    /// holds the profile buffer's address (the hidden parameter).
    pub(crate) fn setup_probes(&mut self, geom: ProbeGeometry, buffer: Reg) -> Res<()> {
        let recs = records(self.f);
        let ring_offset = match recs.first() {
            None => None,
            Some(&r) => match self.f.ops[r].attrs.int(SMEM_OFFSET).map(u32::try_from) {
                Some(Ok(off)) => Some(off),
                _ => {
                    return Err(trident_ir::Diagnostic::error(format!(
                        "`record` needs its ring's `{SMEM_OFFSET}`: run the GPU pipeline (gpu-alloc-shared) with the \
                         same profiling options first"
                    ))
                    .at(self.f.ops[r].loc, 1))
                }
            },
        };
        let (group, t, leader, leader_warp, count) = (
            self.new_reg(RegClass::B32),
            self.new_reg(RegClass::B32),
            self.new_reg(RegClass::Pred),
            self.new_reg(RegClass::Pred),
            self.new_reg(RegClass::B32),
        );
        let tid = self.tid;
        let shift = geom.group_shift;
        if geom.producer_warps == 0 {
            self.pro_ins(format!("shr.u32 {group}, {tid}, {shift}"));
            self.pro_ins(format!("and.b32 {t}, {tid}, {}", (1u32 << shift) - 1));
        } else {
            // A warp-specialized kernel: the producer warps (threads from `consumer_threads`
            // on) are grouped on their own, in the groups after the consumers'.
            let (producer, base, rel, more) = (
                self.new_reg(RegClass::Pred),
                self.new_reg(RegClass::B32),
                self.new_reg(RegClass::B32),
                self.new_reg(RegClass::B32),
            );
            let (threads, groups) = (geom.consumer_threads, geom.consumer_groups);
            self.pro_ins(format!("setp.ge.u32 {producer}, {tid}, {threads}"));
            self.pro_ins(format!("selp.u32 {base}, {threads}, 0, {producer}"));
            self.pro_ins(format!("sub.u32 {rel}, {tid}, {base}"));
            self.pro_ins(format!("shr.u32 {group}, {rel}, {shift}"));
            self.pro_ins(format!("selp.u32 {more}, {groups}, 0, {producer}"));
            self.pro_ins(format!("add.u32 {group}, {group}, {more}"));
            self.pro_ins(format!("and.b32 {t}, {rel}, {}", (1u32 << shift) - 1));
        }
        self.pro_ins(format!("setp.eq.u32 {leader}, {t}, 0"));
        self.pro_ins(format!("setp.lt.u32 {leader_warp}, {t}, 32"));
        let ring = match ring_offset {
            None => None,
            Some(off) => {
                let base = self.smem_base();
                let ring = self.new_reg(RegClass::B32);
                self.pro_ins(format!("mad.lo.u32 {ring}, {group}, {}, {base}", geom.ring_bytes()));
                if off > 0 {
                    self.pro_ins(format!("add.u32 {ring}, {ring}, {off}"));
                }
                Some(ring)
            }
        };
        self.pro_ins(format!("mov.u32 {count}, 0"));
        let (clock_start, timer_start) = (self.new_reg(RegClass::B64), self.new_reg(RegClass::B64));
        let lowering = self.records.as_mut().ok_or_else(|| trident_ir::Diagnostic::error("internal: no records"))?;
        lowering.probes =
            Some(Probes { geom, group, leader, leader_warp, ring, count, clock_start, timer_start, buffer });
        Ok(())
    }

    /// The group's start time, read right before the kernel body (after the prologue).
    pub(crate) fn probes_entry(&self) -> String {
        match self.records.as_ref().and_then(|l| l.probes.as_ref()) {
            Some(p) => format!("\tmov.u64 {}, %globaltimer;\n\tmov.u64 {}, %clock64;\n", p.timer_start, p.clock_start),
            None => String::new(),
        }
    }

    /// One `record` op: a probe, or a marker.
    pub(crate) fn emit_record(&mut self, op: Op) -> Res<()> {
        let OpKind::Record { end, .. } = &self.f.ops[op].kind else {
            return Err(self.err("internal: not a record"));
        };
        let end = *end;
        let Some(lowering) = self.records.as_ref() else {
            return Err(self.err("a `record` op needs profiling options to be lowered (GpuOptions::profile)"));
        };
        let id = lowering.regions.id_of(op).ok_or_else(|| self.err("internal: a record without a region id"))?;
        let tag = encode_tag(id, end).map_err(|e| self.err(e.to_string()))?;
        let Some(p) = lowering.probes.as_ref() else {
            self.raw(format!("\t//@trident.mark {tag}\n"));
            return Ok(());
        };
        let (ring, count, leader, cap, repeat) = (p.ring, p.count, p.leader, p.geom.capacity, lowering.repeat);
        let ring = ring.ok_or_else(|| self.err("internal: a record but no ring"))?;
        for _ in 0..repeat {
            let (addr, tagr, low) =
                (self.new_reg(RegClass::B32), self.new_reg(RegClass::B32), self.new_reg(RegClass::B32));
            // The clock first: the ring address is computed while its read completes.
            self.ins(format!("mov.u32 {low}, %clock"));
            self.ins(format!("and.b32 {addr}, {count}, {}", cap - 1));
            self.ins(format!("add.u32 {count}, {count}, 1"));
            self.ins(format!("mad.lo.u32 {addr}, {addr}, {RECORD_BYTES}, {ring}"));
            self.ins(format!("mov.b32 {tagr}, {tag}"));
            self.ins(format!("@{leader} st.shared.v2.u32 [{addr}], {{{tagr}, {low}}}"));
        }
        Ok(())
    }

    /// The flush at the kernel's exit (after its last op, before `ret`).
    pub(crate) fn probes_exit(&mut self) -> Res<()> {
        let Some(p) = self.records.as_ref().and_then(|l| l.probes.as_ref()) else { return Ok(()) };
        let Probes { geom, group, leader, leader_warp, ring, count, clock_start, timer_start, buffer } = *p;
        let b32 = |e: &mut Self| e.new_reg(RegClass::B32);
        let (clock_end, timer_end) = (self.new_reg(RegClass::B64), self.new_reg(RegClass::B64));
        self.ins(format!("mov.u64 {clock_end}, %clock64"));
        self.ins(format!("mov.u64 {timer_end}, %globaltimer"));
        let done = self.new_label("profile_done");
        let not_leader_warp = self.new_reg(RegClass::Pred);
        self.ins(format!("not.pred {not_leader_warp}, {leader_warp}"));
        self.ins(format!("@{not_leader_warp} bra {done}"));
        // The ring's records were stored by lane 0; the warp's other lanes read them after this.
        self.ins("bar.warp.sync -1");
        // Slot: (CTA linear id * groups + group) * slot bytes into the buffer.
        let (x, y, z, nx, ny, cta, slot_index) =
            (b32(self), b32(self), b32(self), b32(self), b32(self), b32(self), b32(self));
        self.ins(format!("mov.u32 {x}, %ctaid.x"));
        self.ins(format!("mov.u32 {y}, %ctaid.y"));
        self.ins(format!("mov.u32 {z}, %ctaid.z"));
        self.ins(format!("mov.u32 {nx}, %nctaid.x"));
        self.ins(format!("mov.u32 {ny}, %nctaid.y"));
        self.ins(format!("mad.lo.u32 {cta}, {z}, {ny}, {y}"));
        self.ins(format!("mad.lo.u32 {cta}, {cta}, {nx}, {x}"));
        self.ins(format!("mad.lo.u32 {slot_index}, {cta}, {}, {group}", geom.groups_per_cta));
        let (offset, slot) = (self.new_reg(RegClass::B64), self.new_reg(RegClass::B64));
        let slot_bytes = HEADER_BYTES as u32 + geom.ring_bytes();
        self.ins(format!("mul.wide.u32 {offset}, {slot_index}, {slot_bytes}"));
        self.ins(format!("add.u64 {slot}, {buffer}, {offset}"));
        if let Some(ring) = ring {
            // Lane i copies records i, i + 32, ... (8 bytes each) to the slot's ring: the
            // records made, as they are (all `capacity` once the ring wrapped; the buffer
            // was zeroed and the decoder reads entries 0..n only when n < capacity).
            let (at, from, lo, hi, made) = (b32(self), b32(self), b32(self), b32(self), b32(self));
            let (wide, to) = (self.new_reg(RegClass::B64), self.new_reg(RegClass::B64));
            let past = self.new_reg(RegClass::Pred);
            let (head, copied) = (self.new_label("profile_ring"), self.new_label("profile_ring_done"));
            let lane = self.lane;
            self.ins(format!("min.u32 {made}, {count}, {}", geom.capacity));
            self.ins(format!("shl.b32 {made}, {made}, 3"));
            self.ins(format!("shl.b32 {at}, {lane}, 3"));
            self.label(&head);
            self.ins(format!("setp.ge.u32 {past}, {at}, {made}"));
            self.ins(format!("@{past} bra {copied}"));
            self.ins(format!("add.u32 {from}, {ring}, {at}"));
            self.ins(format!("ld.shared.v2.u32 {{{lo}, {hi}}}, [{from}]"));
            self.ins(format!("cvt.u64.u32 {wide}, {at}"));
            self.ins(format!("add.u64 {to}, {slot}, {wide}"));
            self.ins(format!("st.global.v2.u32 [{to}+{HEADER_BYTES}], {{{lo}, {hi}}}"));
            self.ins(format!("add.u32 {at}, {at}, {}", 32 * RECORD_BYTES));
            self.ins(format!("bra {head}"));
            self.label(&copied);
        }
        // The header, by the leader; the magic last (a torn flush stays visible).
        let (smid, cap, magic, zero) = (b32(self), b32(self), b32(self), b32(self));
        self.ins(format!("mov.u32 {smid}, %smid"));
        self.ins(format!("mov.u32 {cap}, {}", geom.capacity));
        self.ins(format!("mov.u32 {magic}, {MAGIC}"));
        self.ins(format!("mov.u32 {zero}, 0"));
        let at = |w: usize| header_offset(w);
        debug_assert_eq!((at(W_CTA), at(W_GROUP), at(W_TOTAL)), (4, 8, 12));
        debug_assert_eq!((at(W_GTIMER_START_LO), at(W_CLOCK_END_LO), at(W_CAPACITY)), (24, 40, 52));
        if slot_bytes.is_multiple_of(16) {
            // Slots are 16-byte aligned (the buffer is): five vector stores.
            self.ins(format!("@{leader} st.global.v4.u32 [{slot}], {{{zero}, {cta}, {group}, {count}}}"));
            self.ins(format!(
                "@{leader} st.global.v2.u64 [{slot}+{}], {{{clock_start}, {timer_start}}}",
                at(W_CLOCK_START_LO)
            ));
            self.ins(format!(
                "@{leader} st.global.v2.u64 [{slot}+{}], {{{timer_end}, {clock_end}}}",
                at(W_GTIMER_END_LO)
            ));
            self.ins(format!("@{leader} st.global.v4.u32 [{slot}+{}], {{{smid}, {cap}, {zero}, {zero}}}", at(W_SMID)));
        } else {
            // A ring of one record: slots are only 8-byte aligned.
            self.ins(format!("@{leader} st.global.v2.u32 [{slot}], {{{zero}, {cta}}}"));
            self.ins(format!("@{leader} st.global.v2.u32 [{slot}+{}], {{{group}, {count}}}", at(W_GROUP)));
            for (w, r) in [(W_CLOCK_START_LO, clock_start), (W_GTIMER_START_LO, timer_start)] {
                self.ins(format!("@{leader} st.global.u64 [{slot}+{}], {r}", at(w)));
            }
            for (w, r) in [(W_GTIMER_END_LO, timer_end), (W_CLOCK_END_LO, clock_end)] {
                self.ins(format!("@{leader} st.global.u64 [{slot}+{}], {r}", at(w)));
            }
            self.ins(format!("@{leader} st.global.v2.u32 [{slot}+{}], {{{smid}, {cap}}}", at(W_SMID)));
            self.ins(format!("@{leader} st.global.v2.u32 [{slot}+{}], {{{zero}, {zero}}}", at(W_RESERVED0)));
        }
        self.ins(format!("@{leader} st.global.u32 [{slot}+{}], {magic}", at(W_MAGIC)));
        self.label(&done);
        Ok(())
    }
}
