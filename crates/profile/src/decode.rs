//! Buffer bytes + meta → one event list per slot, oldest first, with 64-bit clocks.
//!
//! Each slot is checked on its own (magic, position, capacity, clock order); a slot that
//! fails is skipped with an [`Issue`] naming it, and the others are still decoded. Only
//! a meta that cannot be valid or a buffer of the wrong size fails the whole decode.
//! Nothing here panics on any input: every index is bounded by the checked layout and
//! every clock computation saturates or is checked.

use crate::format::{
    self, decode_tag, oldest_index, read_u64, read_word, record_offset, retained_and_dropped, Layout, MAGIC,
    W_CAPACITY, W_CLOCK_END_LO, W_CLOCK_START_LO, W_CTA, W_GROUP, W_GTIMER_END_LO, W_GTIMER_START_LO, W_MAGIC, W_SMID,
    W_TOTAL,
};
use crate::issue::{Issue, IssueKind, SlotRef};
use crate::meta::{MetaError, ProfileMeta};
use std::collections::BTreeSet;

/// A buffer that cannot be decoded at all.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    #[error(transparent)]
    Meta(#[from] MetaError),
    #[error(
        "profile buffer is {actual} bytes but the meta describes {expected} ({slots} slots of {slot_bytes} bytes)"
    )]
    Size { expected: usize, actual: usize, slots: usize, slot_bytes: usize },
    #[error("record cost {0} cycles is not a finite number >= 0")]
    RecordCost(f64),
}

/// One record, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Position in the group's full record sequence, counting dropped records: the
    /// number of records the group made before this one (what replay needs).
    pub seq: u32,
    pub region: u32,
    pub is_end: bool,
    /// The probe's `%clock64`, unwrapped from the stored low 32 bits.
    pub clock: u64,
}

/// One slot's header and its retained events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotTrace {
    /// Slot index in the buffer.
    pub index: usize,
    pub cta: u32,
    pub group: u32,
    pub sm_id: u32,
    pub clock_start: u64,
    pub clock_end: u64,
    pub globaltimer_start: u64,
    pub globaltimer_end: u64,
    /// Whether the globaltimer pair may be used (not both zero, not backwards).
    pub timer_usable: bool,
    /// Records the group made, dropped ones included.
    pub total: u32,
    /// Records the ring overwrote (the oldest ones).
    pub dropped: u32,
    /// Retained records of regions the meta lists, oldest first.
    pub events: Vec<Event>,
}

/// A decoded buffer: the slots that could be used, and everything worth reporting.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    pub slots: Vec<SlotTrace>,
    pub issues: Vec<Issue>,
}

/// Names slot `index` of a buffer in issues.
pub(crate) fn slot_ref(meta: &ProfileMeta, index: usize) -> SlotRef {
    let groups = meta.groups_per_cta.max(1) as usize;
    SlotRef {
        index,
        cta: (index / groups) as u32,
        group: (index % groups) as u32,
        group_noun: meta.granularity.group_noun(),
    }
}

/// Decodes a whole buffer against its meta.
pub fn decode(bytes: &[u8], meta: &ProfileMeta) -> Result<Decoded, DecodeError> {
    meta.validate()?;
    let layout = meta.layout()?;
    let expected = layout.buffer_bytes();
    if bytes.len() != expected {
        return Err(DecodeError::Size {
            expected,
            actual: bytes.len(),
            slots: layout.num_slots(),
            slot_bytes: layout.slot_bytes(),
        });
    }
    let known: BTreeSet<u32> = meta.regions.iter().map(|r| r.id).collect();
    let mut decoded = Decoded { slots: Vec::new(), issues: Vec::new() };
    for (index, slot) in bytes.chunks_exact(layout.slot_bytes()).enumerate() {
        let at = slot_ref(meta, index);
        let mut note = |kind| decoded.issues.push(Issue::new(Some(at), kind));
        if let Some(trace) = decode_slot(slot, &layout, &known, at, &mut note) {
            decoded.slots.push(trace);
        }
    }
    Ok(decoded)
}

/// One slot; `None` when it cannot be used (the reason went to `note`).
fn decode_slot(
    slot: &[u8],
    layout: &Layout,
    known: &BTreeSet<u32>,
    at: SlotRef,
    note: &mut impl FnMut(IssueKind),
) -> Option<SlotTrace> {
    let magic = read_word(slot, W_MAGIC);
    if magic != MAGIC {
        note(if slot.iter().all(|&b| b == 0) { IssueKind::NotWritten } else { IssueKind::BadMagic { found: magic } });
        return None;
    }
    let (cta, group) = (read_word(slot, W_CTA), read_word(slot, W_GROUP));
    if (cta, group) != (at.cta, at.group) {
        note(IssueKind::WrongSlot { cta, group });
        return None;
    }
    let capacity = read_word(slot, W_CAPACITY);
    if capacity != layout.capacity() {
        note(IssueKind::CapacityMismatch { header: capacity, meta: layout.capacity() });
        return None;
    }
    let clock_start = read_u64(slot, W_CLOCK_START_LO);
    let clock_end = read_u64(slot, W_CLOCK_END_LO);
    if clock_end < clock_start {
        note(IssueKind::ClockBackwards { start: clock_start, end: clock_end });
        return None;
    }
    let globaltimer_start = read_u64(slot, W_GTIMER_START_LO);
    let globaltimer_end = read_u64(slot, W_GTIMER_END_LO);
    let timer_usable = globaltimer_end >= globaltimer_start && globaltimer_end != 0;
    if !timer_usable {
        note(IssueKind::TimerUnusable { start: globaltimer_start, end: globaltimer_end });
    }
    let total = read_word(slot, W_TOTAL);
    let (retained, dropped) = retained_and_dropped(total, capacity);
    if dropped > 0 {
        note(IssueKind::Dropped { dropped, total });
    }

    // Ring entries oldest first.
    let first = oldest_index(total, capacity);
    let raw: Vec<(u32, u32)> = (0..retained)
        .map(|k| {
            let o = record_offset(format::ring_index(first.wrapping_add(k), capacity));
            let word = |o: usize| u32::from_le_bytes([slot[o], slot[o + 1], slot[o + 2], slot[o + 3]]);
            (word(o), word(o + 4))
        })
        .collect();
    let lows: Vec<u32> = raw.iter().map(|&(_, clock)| clock).collect();
    let clocks = unwrap_clocks(&lows, clock_start, clock_end, dropped > 0, note);

    let mut events = Vec::with_capacity(raw.len());
    let (mut unknown, mut unknown_ids) = (0u32, BTreeSet::new());
    for (k, (&(tag, _), &clock)) in raw.iter().zip(&clocks).enumerate() {
        let (region, is_end) = decode_tag(tag);
        if !known.contains(&region) {
            unknown += 1;
            if unknown_ids.len() < 8 {
                unknown_ids.insert(region);
            }
            continue;
        }
        events.push(Event { seq: dropped + k as u32, region, is_end, clock });
    }
    if unknown > 0 {
        note(IssueKind::UnknownRegions { ids: unknown_ids.into_iter().collect(), count: unknown });
    }
    Some(SlotTrace {
        index: at.index,
        cta,
        group,
        sm_id: read_word(slot, W_SMID),
        clock_start,
        clock_end,
        globaltimer_start,
        globaltimer_end,
        timer_usable,
        total,
        dropped,
        events,
    })
}

/// Unwraps 32-bit clocks (oldest first) to 64 bits, assuming fewer than 2^32 cycles
/// between consecutive readings.
///
/// Without drops the chain starts at the 64-bit start clock and runs forwards; with
/// drops the oldest retained record's distance from the start is unknown, so the chain
/// starts at the 64-bit end clock and runs backwards. Either way the far end point is
/// then checked: a mismatch means the assumption broke (or the data is damaged) and is
/// reported. The result never leaves `[clock_start, u64::MAX]` and never decreases.
pub fn unwrap_clocks(
    lows: &[u32],
    clock_start: u64,
    clock_end: u64,
    backwards: bool,
    note: &mut impl FnMut(IssueKind),
) -> Vec<u64> {
    if lows.is_empty() {
        return Vec::new();
    }
    if backwards {
        let mut out = vec![0u64; lows.len()];
        let (mut t, mut next) = (Some(clock_end), clock_end as u32);
        for (slot, &low) in out.iter_mut().zip(lows).rev() {
            t = t.and_then(|t| t.checked_sub(next.wrapping_sub(low) as u64));
            next = low;
            *slot = t.unwrap_or(0);
        }
        match t {
            Some(first) if first >= clock_start => return out,
            _ => note(IssueKind::UnwrapMismatch { unwrapped: t.unwrap_or(0), header: clock_start }),
        }
        // The backward chain ran past the start: fall through to the forward chain, which
        // at least keeps every clock within the group's life.
    }
    let (mut t, mut previous) = (clock_start, clock_start as u32);
    let out: Vec<u64> = lows
        .iter()
        .map(|&low| {
            t = t.saturating_add(low.wrapping_sub(previous) as u64);
            previous = low;
            t
        })
        .collect();
    let last = out[out.len() - 1];
    if !backwards && (last > clock_end || clock_end - last != (clock_end as u32).wrapping_sub(previous) as u64) {
        note(IssueKind::UnwrapMismatch { unwrapped: last, header: clock_end });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::encode::{encode_buffer, RecordData, SlotData};
    use crate::issue::Severity;
    use crate::meta::tests::sample;

    fn no_notes() -> impl FnMut(IssueKind) {
        |k| panic!("unexpected issue {k}")
    }

    #[test]
    fn forward_unwrap_crosses_32_bit_wraps() {
        let start = 0x7_FFFF_FF00u64;
        let truth = [start + 0x10, start + 0x200, start + 0x1_0000_0005, start + 0x1_8000_0000];
        let lows: Vec<u32> = truth.iter().map(|&t| t as u32).collect();
        assert_eq!(unwrap_clocks(&lows, start, start + 0x2_0000_0000, false, &mut no_notes()), truth);
    }

    #[test]
    fn backward_unwrap_when_the_oldest_record_is_far_from_the_start() {
        // The retained records begin 3 * 2^32 cycles after the start: only the end clock
        // can place them.
        let start = 1000u64;
        let truth = [start + (3 << 32) + 77, start + (3 << 32) + 0xFFFF_0000, start + (4 << 32) + 5];
        let end = truth[2] + 12;
        let lows: Vec<u32> = truth.iter().map(|&t| t as u32).collect();
        assert_eq!(unwrap_clocks(&lows, start, end, true, &mut no_notes()), truth);
    }

    #[test]
    fn unwrap_reports_a_gap_of_more_than_2_to_the_32() {
        let mut notes = vec![];
        // The end is 2^32 + 10 after the only record: forwards cannot see that.
        let out = unwrap_clocks(&[50], 0, (1 << 32) + 60, false, &mut |k| notes.push(k));
        assert_eq!(out, [50]);
        assert_eq!(notes, [IssueKind::UnwrapMismatch { unwrapped: 50, header: (1 << 32) + 60 }]);
        // Backwards from an end too close to the start: falls back to forwards, reported.
        notes.clear();
        let out = unwrap_clocks(&[0xFFFF_FFF0, 5], 100, 200, true, &mut |k| notes.push(k));
        assert!(out.iter().all(|&t| t >= 100) && out[0] <= out[1], "{out:?}");
        assert_eq!(notes.len(), 1);
    }

    fn slot(cta: u32, group: u32, records: Vec<RecordData>) -> SlotData {
        let end = records.last().map_or(500, |r| r.clock + 100);
        SlotData {
            cta,
            group,
            sm_id: 3,
            clock_start: 100,
            clock_end: end,
            globaltimer_start: 1_000,
            globaltimer_end: 2_000,
            records,
        }
    }

    #[test]
    fn decodes_events_in_order_with_sequence_numbers() {
        let meta = sample();
        let recs = vec![
            RecordData::start(0, 110),
            RecordData::start(1, 120),
            RecordData::end(1, 150),
            RecordData::end(0, 160),
        ];
        let bytes = encode_buffer(&meta.layout().unwrap(), &[slot(1, 2, recs.clone())]).unwrap();
        let d = decode(&bytes, &meta).unwrap();
        assert_eq!(d.slots.len(), 1);
        let s = &d.slots[0];
        assert_eq!((s.index, s.cta, s.group, s.sm_id, s.total, s.dropped), (6, 1, 2, 3, 4, 0));
        let got: Vec<(u32, u32, bool, u64)> = s.events.iter().map(|e| (e.seq, e.region, e.is_end, e.clock)).collect();
        assert_eq!(got, [(0, 0, false, 110), (1, 1, false, 120), (2, 1, true, 150), (3, 0, true, 160)]);
        // Seven slots never written: each named, as warnings.
        let unwritten: Vec<usize> =
            d.issues.iter().filter(|i| i.kind == IssueKind::NotWritten).map(|i| i.slot.unwrap().index).collect();
        assert_eq!(unwritten, [0, 1, 2, 3, 4, 5, 7]);
        assert!(d.issues.iter().all(|i| i.severity == Severity::Warning));
    }

    #[test]
    fn a_wrapped_ring_reports_drops_and_keeps_true_sequence_numbers() {
        let meta = sample(); // capacity 8
        let recs: Vec<RecordData> =
            (0..13u64).map(|i| RecordData { region: 1, is_end: i % 2 == 1, clock: 200 + 10 * i }).collect();
        let bytes = encode_buffer(&meta.layout().unwrap(), &[slot(0, 0, recs)]).unwrap();
        let d = decode(&bytes, &meta).unwrap();
        let s = &d.slots[0];
        assert_eq!((s.total, s.dropped), (13, 5));
        assert_eq!(s.events.iter().map(|e| e.seq).collect::<Vec<_>>(), (5..13).collect::<Vec<_>>());
        assert_eq!(
            s.events.iter().map(|e| e.clock).collect::<Vec<_>>(),
            (5..13).map(|i| 200 + 10 * i).collect::<Vec<_>>()
        );
        let at = d.issues.iter().find(|i| matches!(i.kind, IssueKind::Dropped { .. })).unwrap();
        assert_eq!(at.kind, IssueKind::Dropped { dropped: 5, total: 13 });
        assert_eq!(at.to_string(), "warning: slot 0 (CTA 0, warp 0): ring wrapped: the oldest 5 of 13 records were dropped (raise the buffer capacity to keep them)");
    }

    #[test]
    fn damaged_slots_are_skipped_with_the_slot_named() {
        let meta = sample();
        let layout = meta.layout().unwrap();
        let good = |cta, group| slot(cta, group, vec![RecordData::start(2, 150), RecordData::end(2, 190)]);
        let slots: Vec<SlotData> = (0..2).flat_map(|c| (0..4).map(move |g| good(c, g))).collect();
        let mut bytes = encode_buffer(&layout, &slots).unwrap();
        let word = |slot: usize, w: usize| layout.slot_bytes() * slot + 4 * w;
        let mut put = |slot, w, v: u32| {
            let o = word(slot, w);
            bytes[o..o + 4].copy_from_slice(&v.to_le_bytes());
        };
        put(1, W_MAGIC, 0xDEAD_BEEF);
        put(2, W_GROUP, 3);
        put(3, W_CAPACITY, 16);
        put(4, W_CLOCK_END_LO, 0);
        put(4, W_CLOCK_END_LO + 1, 0);
        put(5, 16, 9); // region id 9 is not in the meta
        put(6, W_GTIMER_END_LO, 0);
        put(6, W_GTIMER_START_LO, 5);
        let d = decode(&bytes, &meta).unwrap();
        assert_eq!(d.slots.iter().map(|s| s.index).collect::<Vec<_>>(), [0, 5, 6, 7]);
        let issue = |slot: usize| d.issues.iter().find(|i| i.slot.unwrap().index == slot).unwrap().to_string();
        assert_eq!(issue(1), "error: slot 1 (CTA 0, warp 1): bad magic 0xdeadbeef (expected \"TPF1\"): slot skipped");
        assert!(issue(2).contains("header says CTA 0, group 3"), "{}", issue(2));
        assert!(issue(3).contains("header capacity 16 but the meta says 8"), "{}", issue(3));
        assert!(issue(4).contains("slot 4 (CTA 1, warp 0): end clock 0 precedes"), "{}", issue(4));
        assert!(issue(5).contains("1 record(s) with region ids the meta does not list (such as [9])"), "{}", issue(5));
        assert!(issue(6).starts_with("warning: slot 6 (CTA 1, warp 2): globaltimer pair unusable"), "{}", issue(6));
        assert_eq!(d.slots[1].events.len(), 1);
        assert!(!d.slots[2].timer_usable);
    }

    #[test]
    fn wrong_sizes_and_bad_metas_fail_the_whole_decode() {
        let meta = sample();
        let n = meta.layout().unwrap().buffer_bytes();
        let err = decode(&vec![0; n - 8], &meta).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("profile buffer is {} bytes but the meta describes {n} (8 slots of 128 bytes)", n - 8)
        );
        let mut bad = meta.clone();
        bad.capacity = 3;
        assert!(matches!(decode(&vec![0; n], &bad), Err(DecodeError::Meta(_))));
    }
}
