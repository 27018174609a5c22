//! The device profile buffer: the one contract between the PTX lowering of record ops
//! (trident-gpu), the runtime that allocates the buffer, and this crate's decoder.
//!
//! # Byte-level specification (format version 1)
//!
//! Everything is little-endian. The runtime allocates one global buffer per launch,
//! passes its address as a hidden kernel argument, and **fills it with zero bytes
//! before the launch** (a slot still all zero afterwards was never written, which the
//! decoder reports instead of guessing).
//!
//! **Groups and slots.** The threads of a CTA are split into groups by the
//! [`Granularity`]: a warp, a warpgroup (4 consecutive warps; the last one may be
//! partial), or the whole CTA. Only the group's *leader* records — lane 0 of the group's
//! first warp — so a group's events are the timeline of its first warp. A warp-specialized
//! kernel's producer warps (the meta's `producer_warps`, numbered after its `warps_per_cta`)
//! are grouped apart, by the same granularity, into the groups after the others' (at CTA
//! granularity: group 1), so that each group runs one role's code
//! ([`Granularity::groups_with_producers`]). The buffer is an array of
//! `num_ctas * groups_per_cta` slots, with
//!
//! ```text
//! slot index      = cta_linear_id * groups_per_cta + group
//! cta_linear_id   = ctaid.x + ctaid.y * nctaid.x + ctaid.z * nctaid.x * nctaid.y
//! slot byte offset = slot index * slot_bytes(capacity)
//! slot_bytes(cap)  = 64 + 8 * cap           (a multiple of 16 for cap >= 2)
//! ```
//!
//! **Slot header** — 16 u32 words (64 bytes):
//!
//! | word | field | written |
//! |-----:|-------|---------|
//! | 0 | [`MAGIC`] (`b"TPF1"`, format version 1) | at exit, last (so a torn flush is visible) |
//! | 1 | CTA linear id | at exit |
//! | 2 | group index within the CTA | at exit |
//! | 3 | total records the group made, counting overwritten ones (u32) | at exit |
//! | 4, 5 | `%clock64` at the group's start (lo, hi) | at kernel entry, before any record |
//! | 6, 7 | `%globaltimer` (ns) at the group's start (lo, hi) | at kernel entry |
//! | 8, 9 | `%globaltimer` at the group's end (lo, hi) | at exit, after the last record |
//! | 10, 11 | `%clock64` at the group's end (lo, hi) | at exit, after the last record |
//! | 12 | `%smid` | at exit |
//! | 13 | ring capacity in records (must equal the meta's) | at exit |
//! | 14, 15 | reserved, written as zero, ignored by the decoder | |
//!
//! **Records** — `capacity` records of 8 bytes follow the header:
//!
//! | word | bits | field |
//! |-----:|------|-------|
//! | 0 | 0–30 | region id ([`MAX_REGION_ID`] at most) |
//! | 0 | 31 | 1 = region end, 0 = region start ([`END_BIT`]) |
//! | 1 | 0–31 | low 32 bits of `%clock64` read by the probe |
//!
//! **Ring.** Each group records into a circular buffer of `capacity` records in shared
//! memory; the leader keeps the running count `n` in a register and writes record `n`
//! at ring index `n & (capacity - 1)`, so the ring keeps the newest `capacity` records.
//! At exit the leader copies the header and the ring *as is* (not rotated) to its slot.
//! The decoder recovers the order from the total `n`: when `n <= capacity` the records
//! are indices `0..n`; otherwise the oldest retained record sits at `n % capacity`, and
//! `n - capacity` records were dropped — the decoder reports that number, never
//! hides it.
//!
//! **Clocks.** Records hold 32-bit clocks (4 bytes saved per record, and the store is
//! one 64-bit `st.shared.v2.u32`). The decoder unwraps them to 64 bits: forwards from
//! the 64-bit start clock when nothing was dropped, backwards from the 64-bit end clock
//! when records were dropped (the start clock no longer precedes the oldest retained
//! record by a known amount). The assumption is that fewer than 2^32 cycles (over two
//! seconds at 2 GHz) pass between two consecutive records of a group, and between the
//! group's start and its first record (or its last record and its end). The decoder
//! checks the result against the other 64-bit end point and warns when they disagree.
//!
//! # What the lowering emits (the device side of this contract)
//!
//! For each group, on its leader thread only:
//!
//! 1. **Entry**, before any record: read `%clock64` and `%globaltimer` (header words
//!    4–7, kept in registers until exit); `n = 0` in a register.
//! 2. **Each record op**: `c = %clock64` (low 32 bits suffice), then one
//!    `st.shared.v2.u32 [ring + 8 * (n & (capacity - 1))], {tag, c}` and `n += 1`. Every
//!    probe is the same instruction sequence, so each costs the same; that constant is
//!    the meta's `record_cost_cycles`, which replay subtracts.
//! 3. **Every exit** (all `ret`s the group's leader can reach): read `%globaltimer` and
//!    `%clock64`, copy the `capacity * 8` ring bytes as they are to the slot at offset
//!    64 (the group's warp may share the copy after a `bar.warp.sync`), then header words
//!    1–3 and 8–15, and word 0 (`MAGIC`) last. No fence is needed — the host reads after
//!    the kernel completes; "last" only matters when a trap cuts the flush short.
//!
//! The rings take `groups_per_cta * capacity * 8` bytes of shared memory per CTA
//! ([`Layout::shared_bytes_per_cta`]), each ring 8-byte aligned.
//!
//! # Changes from the first sketch, and why
//!
//! * **The capacity is a power of two** ([`validate_capacity`]): the probe's ring index
//!   becomes one `and` instead of a remainder by a constant (several instructions on the
//!   probe's critical path), and the slot size stays a multiple of 16 bytes so the exit
//!   copy can use 16-byte vector stores.
//! * **Word 13 holds the capacity** the kernel was compiled with, so a buffer decoded
//!   with the wrong meta is an error naming the slot rather than a garbled trace.
//! * **The magic carries the version** (`TPF1`) and is written last at exit, and the
//!   buffer starts zeroed, so an unwritten or half-written slot is told apart from a
//!   corrupt one.
//! * **Backward unwrapping** when the ring wrapped: forward unwrapping from the start
//!   clock would need the dropped records' clocks.

pub mod encode;

use serde::{Deserialize, Serialize};
use std::fmt;

/// Word 0 of every written slot: the bytes `TPF1` ("Trident Profile Format, version 1").
pub const MAGIC: u32 = u32::from_le_bytes(*b"TPF1");
/// The version [`MAGIC`] encodes; the compiler's meta states the version it followed.
pub const FORMAT_VERSION: u32 = 1;

/// Header size in 32-bit words and in bytes.
pub const HEADER_WORDS: usize = 16;
pub const HEADER_BYTES: usize = HEADER_WORDS * 4;
/// One record: a tag word and a clock word.
pub const RECORD_BYTES: usize = 8;

/// Header word indices (multiply by 4 for the byte offset within the slot).
pub const W_MAGIC: usize = 0;
pub const W_CTA: usize = 1;
pub const W_GROUP: usize = 2;
pub const W_TOTAL: usize = 3;
pub const W_CLOCK_START_LO: usize = 4;
pub const W_CLOCK_START_HI: usize = 5;
pub const W_GTIMER_START_LO: usize = 6;
pub const W_GTIMER_START_HI: usize = 7;
pub const W_GTIMER_END_LO: usize = 8;
pub const W_GTIMER_END_HI: usize = 9;
pub const W_CLOCK_END_LO: usize = 10;
pub const W_CLOCK_END_HI: usize = 11;
pub const W_SMID: usize = 12;
pub const W_CAPACITY: usize = 13;
pub const W_RESERVED0: usize = 14;
pub const W_RESERVED1: usize = 15;

/// Bit 31 of a record's tag word: set on region ends.
pub const END_BIT: u32 = 1 << 31;
/// Region ids occupy the tag's low 31 bits.
pub const MAX_REGION_ID: u32 = END_BIT - 1;
/// The largest ring a group may have. Shared memory is at most 228 KiB per SM, so a
/// ring of 2^16 records (512 KiB) is already out of reach; the bound keeps a bogus meta
/// from asking for absurd allocations.
pub const MAX_CAPACITY: u32 = 1 << 16;
/// The largest buffer a layout may describe (256 GiB, beyond any GPU's memory): a
/// bogus grid or capacity fails here instead of in an allocation.
pub const MAX_BUFFER_BYTES: u64 = 1 << 38;
/// CUDA allows at most 1024 threads, i.e. 32 warps, per CTA.
pub const MAX_WARPS_PER_CTA: u32 = 32;
/// Warps per warpgroup (Hopper's `wgmma` unit).
pub const WARPS_PER_WARPGROUP: u32 = 4;

/// Which threads share one ring and one slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    Warp,
    Warpgroup,
    Cta,
}

impl Granularity {
    /// Groups in a CTA of `warps_per_cta` warps (a trailing partial warpgroup counts).
    pub fn groups_per_cta(self, warps_per_cta: u32) -> u32 {
        match self {
            Granularity::Warp => warps_per_cta,
            Granularity::Warpgroup => warps_per_cta.div_ceil(WARPS_PER_WARPGROUP),
            Granularity::Cta => 1,
        }
    }

    /// The word for one group, as in "warp 3".
    pub fn group_noun(self) -> &'static str {
        match self {
            Granularity::Warp => "warp",
            Granularity::Warpgroup => "warpgroup",
            Granularity::Cta => "cta",
        }
    }

    /// Groups in a CTA of `warps_per_cta` warps plus `producer_warps` of a warp-specialized
    /// kernel: the producer warps form groups of their own, after the others' (one more
    /// group at CTA granularity, so a producer's timeline is never merged into the others').
    pub fn groups_with_producers(self, warps_per_cta: u32, producer_warps: u32) -> u32 {
        let producers = if producer_warps == 0 { 0 } else { self.groups_per_cta(producer_warps) };
        self.groups_per_cta(warps_per_cta) + producers
    }

    /// The first warp of `group`: the warp whose lane 0 is the group's leader.
    pub fn leader_warp(self, group: u32) -> u32 {
        match self {
            Granularity::Warp => group,
            Granularity::Warpgroup => group * WARPS_PER_WARPGROUP,
            Granularity::Cta => 0,
        }
    }
}

impl fmt::Display for Granularity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.group_noun())
    }
}

/// A layout that cannot exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("ring capacity {0} is not a power of two between 1 and {MAX_CAPACITY}")]
    Capacity(u32),
    #[error("a profile buffer of {ctas} CTAs x {groups} groups x {slot_bytes} bytes does not fit in memory")]
    TooLarge { ctas: u64, groups: u32, slot_bytes: usize },
    #[error("region id {0} does not fit in 31 bits")]
    RegionId(u32),
    #[error("slot (CTA {cta}, group {group}) is outside a buffer of {ctas} CTAs x {groups} groups")]
    SlotOutOfRange { cta: u32, group: u32, ctas: u32, groups: u32 },
    #[error("slot (CTA {cta}, group {group}) is given twice")]
    DuplicateSlot { cta: u32, group: u32 },
    #[error("records of slot (CTA {cta}, group {group}) go back in time or past its end clock")]
    ClockOrder { cta: u32, group: u32 },
    #[error("an output of {actual} bytes is not one slot of {expected} bytes")]
    SlotSize { expected: usize, actual: usize },
    #[error("slot (CTA {cta}, group {group}) made more than 2^32 - 1 records")]
    TooManyRecords { cta: u32, group: u32 },
}

/// Checks the rule the device relies on: a power of two, at most [`MAX_CAPACITY`].
pub fn validate_capacity(capacity: u32) -> Result<(), FormatError> {
    if capacity.is_power_of_two() && capacity <= MAX_CAPACITY {
        Ok(())
    } else {
        Err(FormatError::Capacity(capacity))
    }
}

/// Bytes of one slot: the header and `capacity` records.
pub const fn slot_bytes(capacity: u32) -> usize {
    HEADER_BYTES + RECORD_BYTES * capacity as usize
}

/// Byte offset, within a slot, of ring entry `index`.
pub const fn record_offset(index: u32) -> usize {
    HEADER_BYTES + RECORD_BYTES * index as usize
}

/// Byte offset, within a slot, of header word `word`.
pub const fn header_offset(word: usize) -> usize {
    word * 4
}

/// Ring index of the `n`-th record (counting from 0) a group makes.
pub const fn ring_index(n: u32, capacity: u32) -> u32 {
    n & (capacity - 1)
}

/// Tag word of a record.
pub fn encode_tag(region: u32, is_end: bool) -> Result<u32, FormatError> {
    if region > MAX_REGION_ID {
        return Err(FormatError::RegionId(region));
    }
    Ok(region | if is_end { END_BIT } else { 0 })
}

/// (region id, is_end) of a tag word. Every u32 is a valid tag.
pub const fn decode_tag(tag: u32) -> (u32, bool) {
    (tag & MAX_REGION_ID, tag & END_BIT != 0)
}

/// How many of `total` records a ring of `capacity` still holds, and how many it lost.
pub const fn retained_and_dropped(total: u32, capacity: u32) -> (u32, u32) {
    if total <= capacity {
        (total, 0)
    } else {
        (capacity, total - capacity)
    }
}

/// Ring index of the oldest retained record.
pub const fn oldest_index(total: u32, capacity: u32) -> u32 {
    if total <= capacity {
        0
    } else {
        ring_index(total, capacity)
    }
}

/// The shape of one launch's profile buffer: what the runtime allocates and the
/// lowering indexes. Only [`Layout::new`] makes one, so every layout is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    num_ctas: u32,
    groups_per_cta: u32,
    capacity: u32,
}

impl Layout {
    /// A layout, checked: a valid capacity and a size that fits in memory.
    pub fn new(num_ctas: u32, groups_per_cta: u32, capacity: u32) -> Result<Layout, FormatError> {
        validate_capacity(capacity)?;
        let layout = Layout { num_ctas, groups_per_cta, capacity };
        layout.checked_buffer_bytes().ok_or(FormatError::TooLarge {
            ctas: num_ctas as u64,
            groups: groups_per_cta,
            slot_bytes: slot_bytes(capacity),
        })?;
        Ok(layout)
    }

    pub fn num_ctas(&self) -> u32 {
        self.num_ctas
    }

    pub fn groups_per_cta(&self) -> u32 {
        self.groups_per_cta
    }

    /// Ring capacity in records per group.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    pub fn num_slots(&self) -> usize {
        self.num_ctas as usize * self.groups_per_cta as usize
    }

    pub fn slot_bytes(&self) -> usize {
        slot_bytes(self.capacity)
    }

    /// Total buffer size; `None` when larger than [`MAX_BUFFER_BYTES`].
    fn checked_buffer_bytes(&self) -> Option<usize> {
        let bytes =
            (self.num_ctas as u64).checked_mul(self.groups_per_cta as u64)?.checked_mul(self.slot_bytes() as u64)?;
        if bytes > MAX_BUFFER_BYTES {
            return None;
        }
        usize::try_from(bytes).ok()
    }

    /// Total buffer size in bytes (the runtime's allocation).
    pub fn buffer_bytes(&self) -> usize {
        self.checked_buffer_bytes().expect("Layout::new checked the size")
    }

    /// Slot index of (CTA, group).
    pub fn slot_index(&self, cta: u32, group: u32) -> usize {
        cta as usize * self.groups_per_cta as usize + group as usize
    }

    /// Byte offset of the slot of (CTA, group) in the buffer.
    pub fn slot_offset(&self, cta: u32, group: u32) -> usize {
        self.slot_index(cta, group) * self.slot_bytes()
    }

    /// Shared memory one CTA needs for its rings (the counters live in registers).
    pub fn shared_bytes_per_cta(&self) -> usize {
        self.groups_per_cta as usize * self.capacity as usize * RECORD_BYTES
    }
}

/// Reads little-endian u32 word `word` of a header.
pub(crate) fn read_word(slot: &[u8], word: usize) -> u32 {
    let o = header_offset(word);
    u32::from_le_bytes([slot[o], slot[o + 1], slot[o + 2], slot[o + 3]])
}

/// Reads a (lo, hi) pair of header words as a u64.
pub(crate) fn read_u64(slot: &[u8], lo_word: usize) -> u64 {
    read_word(slot, lo_word) as u64 | (read_word(slot, lo_word + 1) as u64) << 32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields_are_where_the_spec_says() {
        assert_eq!(HEADER_BYTES, 64);
        assert_eq!(header_offset(W_CLOCK_START_LO), 16);
        assert_eq!(header_offset(W_GTIMER_START_LO), 24);
        assert_eq!(header_offset(W_GTIMER_END_LO), 32);
        assert_eq!(header_offset(W_CLOCK_END_LO), 40);
        assert_eq!(header_offset(W_SMID), 48);
        assert_eq!(header_offset(W_CAPACITY), 52);
        assert_eq!(W_RESERVED1, HEADER_WORDS - 1);
        assert_eq!(&MAGIC.to_le_bytes(), b"TPF1");
        assert_eq!(slot_bytes(4), 96);
        assert_eq!(record_offset(3), 64 + 24);
    }

    #[test]
    fn capacity_must_be_a_power_of_two_in_range() {
        for ok in [1, 2, 64, 1024, MAX_CAPACITY] {
            assert_eq!(validate_capacity(ok), Ok(()));
            assert_eq!(slot_bytes(ok) % if ok >= 2 { 16 } else { 8 }, 0);
        }
        for bad in [0, 3, 48, 1000, MAX_CAPACITY * 2, u32::MAX] {
            assert_eq!(validate_capacity(bad), Err(FormatError::Capacity(bad)));
        }
    }

    #[test]
    fn tags_round_trip_and_reject_wide_ids() {
        for (id, end) in [(0, false), (0, true), (7, true), (MAX_REGION_ID, false), (MAX_REGION_ID, true)] {
            let tag = encode_tag(id, end).unwrap();
            assert_eq!(decode_tag(tag), (id, end));
        }
        assert_eq!(encode_tag(END_BIT, false), Err(FormatError::RegionId(END_BIT)));
        assert_eq!(encode_tag(5, true).unwrap(), 0x8000_0005);
    }

    #[test]
    fn ring_bookkeeping() {
        assert_eq!(retained_and_dropped(3, 8), (3, 0));
        assert_eq!(retained_and_dropped(8, 8), (8, 0));
        assert_eq!(retained_and_dropped(11, 8), (8, 3));
        assert_eq!(oldest_index(8, 8), 0);
        assert_eq!(oldest_index(11, 8), 3);
        assert_eq!(oldest_index(16, 8), 0);
        assert_eq!(ring_index(13, 8), 5);
    }

    #[test]
    fn groups_per_cta_by_granularity() {
        assert_eq!(Granularity::Warp.groups_per_cta(8), 8);
        assert_eq!(Granularity::Warpgroup.groups_per_cta(8), 2);
        assert_eq!(Granularity::Warpgroup.groups_per_cta(6), 2);
        assert_eq!(Granularity::Warpgroup.groups_per_cta(1), 1);
        assert_eq!(Granularity::Cta.groups_per_cta(8), 1);
        assert_eq!(Granularity::Warp.groups_with_producers(8, 1), 9);
        assert_eq!(Granularity::Warpgroup.groups_with_producers(8, 1), 3);
        assert_eq!(Granularity::Warpgroup.groups_with_producers(8, 4), 3);
        assert_eq!(Granularity::Warpgroup.groups_with_producers(6, 0), 2);
        assert_eq!(Granularity::Cta.groups_with_producers(8, 1), 2);
        assert_eq!(Granularity::Cta.groups_with_producers(8, 0), 1);
        assert_eq!(Granularity::Warpgroup.leader_warp(1), 4);
    }

    #[test]
    fn layout_offsets_and_sizes() {
        let l = Layout::new(3, 2, 4).unwrap();
        assert_eq!(l.num_slots(), 6);
        assert_eq!(l.buffer_bytes(), 6 * 96);
        assert_eq!(l.slot_offset(1, 1), 3 * 96);
        assert_eq!(l.shared_bytes_per_cta(), 2 * 4 * 8);
        assert!(matches!(Layout::new(1, 1, 6), Err(FormatError::Capacity(6))));
        assert!(matches!(Layout::new(u32::MAX, 32, MAX_CAPACITY), Err(FormatError::TooLarge { .. })));
        assert!(Layout::new(132 * 16, 8, 256).is_ok());
    }
}
