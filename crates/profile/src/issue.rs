//! What the decoder and the analysis found wrong or worth saying about a buffer, each
//! naming the slot it concerns. A damaged slot is skipped with an error; the rest of
//! the buffer is still decoded, so one bad warp does not hide the others.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The slot (or the whole buffer) could not be used.
    Error,
    /// Data was lost or the numbers may mislead; what remains is still used.
    Warning,
    /// Worth knowing, nothing lost (e.g. the clock rate fell back to the nominal one).
    Note,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        })
    }
}

/// Which slot an issue is about, in the user's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SlotRef {
    pub index: usize,
    pub cta: u32,
    pub group: u32,
    /// "warp", "warpgroup" or "cta".
    pub group_noun: &'static str,
}

impl fmt::Display for SlotRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "slot {} (CTA {}, {} {})", self.index, self.cta, self.group_noun, self.group)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum IssueKind {
    /// Still all zero: the group never flushed (a trapped CTA, or a group with no warp).
    NotWritten,
    /// Word 0 is neither the magic nor zero.
    BadMagic { found: u32 },
    /// The header names another (CTA, group) than the slot's position.
    WrongSlot { cta: u32, group: u32 },
    /// The header's capacity differs from the meta's: decoded with the wrong meta.
    CapacityMismatch { header: u32, meta: u32 },
    /// The end clock precedes the start clock.
    ClockBackwards { start: u64, end: u64 },
    /// The globaltimer pair runs backwards or is zero; the slot's clock rate and its
    /// placement across CTAs are not used.
    TimerUnusable { start: u64, end: u64 },
    /// The ring wrapped: the oldest `dropped` of `total` records were overwritten.
    Dropped { dropped: u32, total: u32 },
    /// `count` records carry ids the meta does not list (`ids`: the first few distinct
    /// ones); they are left out.
    UnknownRegions { ids: Vec<u32>, count: u32 },
    /// The 32-bit clocks unwrapped from one 64-bit end point do not meet the other:
    /// more than 2^32 cycles passed between two records, or the data is damaged.
    UnwrapMismatch { unwrapped: u64, header: u64 },
    /// An end with no open start of its region. `explained` when the ring dropped records
    /// (the start was overwritten), which is expected at the head of a wrapped ring.
    EndWithoutStart { region: u32, seq: u64, explained: bool },
    /// An end that closes a region which is not the innermost open one: the inner ones
    /// are abandoned (not reported as instances) to keep nesting proper.
    Misnested { region: u32, seq: u64, abandoned: Vec<u32> },
    /// A start never closed before the group's end; shown up to the group's end, left
    /// out of the statistics.
    OpenAtEnd { region: u32, seq: u64 },
    /// Replay made `count` events run backwards (gaps shorter than the per-record cost):
    /// they were clamped, and the record cost is probably set too high.
    /// Replayed events that would have run backwards, moved forward: how many, the largest
    /// per-record cost replayed (per site: the largest step's), and the largest move in cycles.
    ReplayClamped { count: u32, cost: f64, worst: f64 },
    /// Groups of one CTA report different SMs.
    SmMismatch { first: u32, other: u32 },
    /// A group's start clock, against its CTA's first group, disagrees with their
    /// globaltimer readings (groups of a CTA share one SM clock, so this means damaged
    /// data): the group is placed by the globaltimer instead.
    ClockSkew { by_clock_ns: f64, by_timer_ns: f64 },
    /// The clock rate comes from the meta, not from the globaltimer.
    NominalClock { ghz: f64, reason: String },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Issue {
    pub severity: Severity,
    /// `None` for issues about the whole buffer.
    pub slot: Option<SlotRef>,
    pub kind: IssueKind,
}

impl Issue {
    pub fn new(slot: Option<SlotRef>, kind: IssueKind) -> Issue {
        Issue { severity: kind.severity(), slot, kind }
    }
}

impl IssueKind {
    pub fn severity(&self) -> Severity {
        use IssueKind::*;
        match self {
            BadMagic { .. } | WrongSlot { .. } | CapacityMismatch { .. } | ClockBackwards { .. } => Severity::Error,
            EndWithoutStart { explained: true, .. } | NominalClock { .. } => Severity::Note,
            // Within one probe's cost: a short or empty region's own jitter.
            ReplayClamped { cost, worst, .. } if worst <= cost => Severity::Note,
            NotWritten
            | TimerUnusable { .. }
            | Dropped { .. }
            | UnknownRegions { .. }
            | UnwrapMismatch { .. }
            | EndWithoutStart { .. }
            | Misnested { .. }
            | OpenAtEnd { .. }
            | ReplayClamped { .. }
            | SmMismatch { .. }
            | ClockSkew { .. } => Severity::Warning,
        }
    }
}

impl fmt::Display for IssueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use IssueKind::*;
        match self {
            NotWritten => write!(f, "never written (still zero): the group did not reach the kernel's exit"),
            BadMagic { found } => write!(f, "bad magic {found:#010x} (expected \"TPF1\"): slot skipped"),
            WrongSlot { cta, group } => {
                write!(f, "header says CTA {cta}, group {group}: written to the wrong place; slot skipped")
            }
            CapacityMismatch { header, meta } => write!(
                f,
                "header capacity {header} but the meta says {meta}: decoded with the wrong meta? slot skipped"
            ),
            ClockBackwards { start, end } => write!(f, "end clock {end} precedes start clock {start}: slot skipped"),
            TimerUnusable { start, end } => {
                write!(f, "globaltimer pair unusable (start {start} ns, end {end} ns); not used for this slot")
            }
            Dropped { dropped, total } => write!(
                f,
                "ring wrapped: the oldest {dropped} of {total} records were dropped (raise the buffer capacity to keep them)"
            ),
            UnknownRegions { ids, count } => {
                write!(f, "{count} record(s) with region ids the meta does not list (such as {ids:?}): left out")
            }
            UnwrapMismatch { unwrapped, header } => write!(
                f,
                "32-bit clocks unwrap to {unwrapped} but the header clock is {header}: over 2^32 cycles between records, or damaged data"
            ),
            EndWithoutStart { region, seq, explained: true } => {
                write!(f, "end of region {region} (record {seq}) whose start was dropped by the ring")
            }
            EndWithoutStart { region, seq, explained: false } => {
                write!(f, "end of region {region} (record {seq}) without a start: ignored")
            }
            Misnested { region, seq, abandoned } => write!(
                f,
                "end of region {region} (record {seq}) while inner region(s) {abandoned:?} are open: those are abandoned"
            ),
            OpenAtEnd { region, seq } => {
                write!(f, "region {region} started (record {seq}) but still open at the group's end")
            }
            ReplayClamped { count, cost, worst } if worst <= cost => write!(
                f,
                "{count} event(s) closer together than a record's cost (up to {cost:.2} cycles): clamped by at most \
                 {worst:.1} cycles (within one probe's cost: a short or empty region)"
            ),
            ReplayClamped { count, cost, worst } => write!(
                f,
                "{count} event(s) closer together than a record's cost (up to {cost:.2} cycles): clamped by up to \
                 {worst:.1} cycles (cost set too high?)"
            ),
            SmMismatch { first, other } => write!(f, "groups of one CTA report SM {first} and SM {other}"),
            ClockSkew { by_clock_ns, by_timer_ns } => write!(
                f,
                "starts {by_clock_ns:.0} ns after its CTA's first group by the clock but {by_timer_ns:.0} ns by the globaltimer: placed by the globaltimer"
            ),
            NominalClock { ghz, reason } => write!(f, "clock rate {ghz} GHz from the meta: {reason}"),
        }
    }
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.slot {
            Some(s) => write!(f, "{}: {}: {}", self.severity, s, self.kind),
            None => write!(f, "{}: {}", self.severity, self.kind),
        }
    }
}
