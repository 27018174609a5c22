//! The host-side writer of a profile buffer: given what each group recorded, produce
//! the bytes the device would leave behind, ring wrap included. Tests use it to build
//! buffers whose true contents are known, and the emulator's ground-truth comparison
//! uses it to turn a probe-free timeline into a buffer the same decoder reads
//! ([`slots_from_marks`]: the markers a kernel compiled with zero-cost markers passed).

use super::{
    encode_tag, header_offset, record_offset, ring_index, FormatError, Layout, MAGIC, W_CAPACITY, W_CLOCK_END_LO,
    W_CLOCK_START_LO, W_CTA, W_GROUP, W_GTIMER_END_LO, W_GTIMER_START_LO, W_MAGIC, W_SMID, W_TOTAL,
};

/// One record as a probe makes it: the full 64-bit clock (the encoder keeps the low 32
/// bits, as the device does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordData {
    pub region: u32,
    pub is_end: bool,
    pub clock: u64,
}

impl RecordData {
    pub fn start(region: u32, clock: u64) -> RecordData {
        RecordData { region, is_end: false, clock }
    }

    pub fn end(region: u32, clock: u64) -> RecordData {
        RecordData { region, is_end: true, clock }
    }
}

/// Everything one group (one slot) produces in a launch, every record it made in order,
/// including those its ring will overwrite.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SlotData {
    pub cta: u32,
    pub group: u32,
    pub sm_id: u32,
    pub clock_start: u64,
    pub clock_end: u64,
    pub globaltimer_start: u64,
    pub globaltimer_end: u64,
    pub records: Vec<RecordData>,
}

fn put_word(slot: &mut [u8], word: usize, value: u32) {
    let o = header_offset(word);
    slot[o..o + 4].copy_from_slice(&value.to_le_bytes());
}

fn put_u64(slot: &mut [u8], lo_word: usize, value: u64) {
    put_word(slot, lo_word, value as u32);
    put_word(slot, lo_word + 1, (value >> 32) as u32);
}

/// One zero-cost marker a warp passed: a record of a kernel compiled with markers
/// (`//@trident.mark <tag>` in its PTX) as the emulator reports it — the CTA's linear id,
/// the warp in the CTA, the tag (`region id | end << 31`, as in a ring entry) and the
/// warp's clock there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub cta: u32,
    pub warp: u32,
    pub tag: u32,
    pub clock: u64,
}

/// The slots a probed launch would have written had its probes cost nothing: each group's
/// records are the marks of its leader warp (the first warp of the group, as with probes),
/// in the order given (per warp, the order they were passed). The markers' kernel reads no
/// clock at entry or exit, so a group's start and end clocks are its first and last
/// mark's; its globaltimer follows its clock at the meta's nominal rate (the emulator's
/// clocks count from the launch, so CTAs are placed on one timeline). Marks of other warps,
/// or outside the meta's grid and warps, are ignored.
pub fn slots_from_marks(meta: &crate::ProfileMeta, marks: &[Mark]) -> Vec<SlotData> {
    use std::collections::BTreeMap;
    let ctas = meta.num_ctas().unwrap_or(0);
    let mut groups: BTreeMap<(u32, u32), Vec<RecordData>> = BTreeMap::new();
    for m in marks {
        let Some(group) = meta.group_of_warp(m.warp) else { continue };
        if m.cta >= ctas || meta.leader_warp(group) != m.warp {
            continue;
        }
        let (region, is_end) = super::decode_tag(m.tag);
        groups.entry((m.cta, group)).or_default().push(RecordData { region, is_end, clock: m.clock });
    }
    let ns = |clock: u64| (clock as f64 / meta.nominal_clock_ghz) as u64;
    groups
        .into_iter()
        .map(|((cta, group), records)| {
            let (first, last) = (records[0].clock, records[records.len() - 1].clock);
            SlotData {
                cta,
                group,
                sm_id: 0,
                clock_start: first,
                clock_end: last,
                globaltimer_start: ns(first),
                globaltimer_end: ns(last),
                records,
            }
        })
        .collect()
}

/// Writes one slot (`out` is exactly `slot_bytes(capacity)` long) the way the device
/// does: each record into ring entry `n & (capacity - 1)`, then the header.
pub fn encode_slot(capacity: u32, slot: &SlotData, out: &mut [u8]) -> Result<(), FormatError> {
    super::validate_capacity(capacity)?;
    if out.len() != super::slot_bytes(capacity) {
        return Err(FormatError::SlotSize { expected: super::slot_bytes(capacity), actual: out.len() });
    }
    let (cta, group) = (slot.cta, slot.group);
    let total = u32::try_from(slot.records.len()).map_err(|_| FormatError::TooManyRecords { cta, group })?;
    let mut previous = slot.clock_start;
    for r in &slot.records {
        if r.clock < previous {
            return Err(FormatError::ClockOrder { cta, group });
        }
        previous = r.clock;
    }
    if slot.clock_end < previous {
        return Err(FormatError::ClockOrder { cta, group });
    }
    for (n, r) in slot.records.iter().enumerate() {
        let o = record_offset(ring_index(n as u32, capacity));
        out[o..o + 4].copy_from_slice(&encode_tag(r.region, r.is_end)?.to_le_bytes());
        out[o + 4..o + 8].copy_from_slice(&(r.clock as u32).to_le_bytes());
    }
    put_word(out, W_CTA, cta);
    put_word(out, W_GROUP, group);
    put_word(out, W_TOTAL, total);
    put_u64(out, W_CLOCK_START_LO, slot.clock_start);
    put_u64(out, W_GTIMER_START_LO, slot.globaltimer_start);
    put_u64(out, W_GTIMER_END_LO, slot.globaltimer_end);
    put_u64(out, W_CLOCK_END_LO, slot.clock_end);
    put_word(out, W_SMID, slot.sm_id);
    put_word(out, W_CAPACITY, capacity);
    put_word(out, W_MAGIC, MAGIC);
    Ok(())
}

/// A whole buffer: each slot at the place its (CTA, group) names; slots not given stay
/// zero, as slots the device never wrote do.
pub fn encode_buffer(layout: &Layout, slots: &[SlotData]) -> Result<Vec<u8>, FormatError> {
    let (num_ctas, groups_per_cta, capacity) = (layout.num_ctas(), layout.groups_per_cta(), layout.capacity());
    let mut bytes = vec![0u8; layout.buffer_bytes()];
    let mut seen = vec![false; layout.num_slots()];
    for slot in slots {
        let (cta, group) = (slot.cta, slot.group);
        if cta >= num_ctas || group >= groups_per_cta {
            return Err(FormatError::SlotOutOfRange { cta, group, ctas: num_ctas, groups: groups_per_cta });
        }
        let index = layout.slot_index(cta, group);
        if std::mem::replace(&mut seen[index], true) {
            return Err(FormatError::DuplicateSlot { cta, group });
        }
        let o = layout.slot_offset(cta, group);
        encode_slot(capacity, slot, &mut bytes[o..o + layout.slot_bytes()])?;
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::super::{decode_tag, read_u64, read_word, slot_bytes, W_RESERVED0, W_RESERVED1};
    use super::*;

    fn slot(records: Vec<RecordData>) -> SlotData {
        SlotData {
            cta: 1,
            group: 0,
            sm_id: 7,
            clock_start: 0x1_FFFF_FF00,
            clock_end: 0x2_0000_1000,
            globaltimer_start: 5_000,
            globaltimer_end: 9_000,
            records,
        }
    }

    #[test]
    fn header_and_ring_bytes_as_specified() {
        let layout = Layout::new(2, 1, 4).unwrap();
        let recs: Vec<RecordData> =
            (0..6u64).map(|i| RecordData { region: 3, is_end: i % 2 == 1, clock: 0x1_FFFF_FF10 + i * 0x40 }).collect();
        let bytes = encode_buffer(&layout, &[slot(recs.clone())]).unwrap();
        assert!(bytes[..layout.slot_bytes()].iter().all(|&b| b == 0), "slot 0 was not given: stays zero");
        let s = &bytes[layout.slot_offset(1, 0)..];
        assert_eq!(&s[0..4], b"TPF1");
        assert_eq!(read_word(s, W_CTA), 1);
        assert_eq!(read_word(s, W_TOTAL), 6);
        assert_eq!(read_u64(s, W_CLOCK_START_LO), 0x1_FFFF_FF00);
        assert_eq!(read_u64(s, W_CLOCK_END_LO), 0x2_0000_1000);
        assert_eq!(read_u64(s, W_GTIMER_END_LO), 9_000);
        assert_eq!(read_word(s, W_SMID), 7);
        assert_eq!(read_word(s, W_CAPACITY), 4);
        assert_eq!((read_word(s, W_RESERVED0), read_word(s, W_RESERVED1)), (0, 0));
        // Six records in a ring of four: entries 0 and 1 hold records 4 and 5.
        for (entry, n) in [(0u32, 4usize), (1, 5), (2, 2), (3, 3)] {
            let o = record_offset(entry);
            let tag = u32::from_le_bytes(s[o..o + 4].try_into().unwrap());
            let clock = u32::from_le_bytes(s[o + 4..o + 8].try_into().unwrap());
            assert_eq!(decode_tag(tag), (3, n % 2 == 1));
            assert_eq!(clock, recs[n].clock as u32);
        }
    }

    #[test]
    fn marks_become_the_leaders_slots() {
        let mut meta = crate::meta::tests::sample(); // 2 CTAs x 4 warps, per warp, ring of 8
        meta.granularity = crate::Granularity::Warpgroup;
        meta.groups_per_cta = 1;
        let mark = |cta, warp, tag, clock| Mark { cta, warp, tag, clock };
        let end = |id: u32| id | (1 << 31);
        let marks = [
            mark(1, 0, 0, 100),
            mark(1, 1, 0, 105), // not a leader: warpgroup 0 is led by warp 0
            mark(1, 0, 2, 150),
            mark(1, 0, end(2), 400),
            mark(1, 0, end(0), 500),
            mark(0, 0, 0, 30),
            mark(0, 0, end(0), 90),
            mark(7, 0, 0, 1), // no such CTA
        ];
        let slots = slots_from_marks(&meta, &marks);
        assert_eq!(slots.len(), 2);
        assert_eq!((slots[0].cta, slots[0].clock_start, slots[0].clock_end, slots[0].records.len()), (0, 30, 90, 2));
        let s = &slots[1];
        assert_eq!((s.cta, s.group, s.clock_start, s.clock_end), (1, 0, 100, 500));
        assert_eq!(
            s.records.iter().map(|r| (r.region, r.is_end)).collect::<Vec<_>>(),
            [(0, false), (2, false), (2, true), (0, true)]
        );
        assert_eq!(s.globaltimer_end, (500.0 / meta.nominal_clock_ghz) as u64);
        // The decoder reads them like any buffer: no probe, so nothing to replay.
        let bytes = encode_buffer(&meta.layout().unwrap(), &slots).unwrap();
        let p = crate::Profile::from_buffer_with_cost(&bytes, &meta, 0.0).unwrap();
        let dot = p.instances.iter().find(|i| i.slot == 1 && i.region == 2).unwrap();
        assert_eq!(dot.cycles(), 250.0);
    }

    #[test]
    fn encoder_rejects_what_a_device_cannot_produce() {
        let layout = Layout::new(2, 1, 4).unwrap();
        let back = vec![RecordData::start(0, 0x1_FFFF_FF50), RecordData::end(0, 0x1_FFFF_FF40)];
        assert_eq!(encode_buffer(&layout, &[slot(back)]), Err(FormatError::ClockOrder { cta: 1, group: 0 }));
        let wide = vec![RecordData::start(1 << 31, 0x1_FFFF_FF50)];
        assert_eq!(encode_buffer(&layout, &[slot(wide)]), Err(FormatError::RegionId(1 << 31)));
        let mut outside = slot(vec![]);
        outside.group = 1;
        assert!(matches!(encode_buffer(&layout, &[outside]), Err(FormatError::SlotOutOfRange { .. })));
        assert_eq!(
            encode_buffer(&layout, &[slot(vec![]), slot(vec![])]),
            Err(FormatError::DuplicateSlot { cta: 1, group: 0 })
        );
        let mut short = vec![0; slot_bytes(4) - 1];
        assert!(matches!(encode_slot(4, &slot(vec![]), &mut short), Err(FormatError::SlotSize { .. })));
    }
}
