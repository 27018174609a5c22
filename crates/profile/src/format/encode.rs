//! The host-side writer of a profile buffer: given what each group recorded, produce
//! the bytes the device would leave behind, ring wrap included. Tests use it to build
//! buffers whose true contents are known, and the emulator's ground-truth comparison
//! uses it to turn a probe-free timeline into a buffer the same decoder reads.

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
