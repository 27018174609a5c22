//! Pairs one group's starts and ends into region instances.
//!
//! Records are stored unpaired (as KPerfIR does); pairing is by order, with a stack:
//! an end closes the innermost open start of the same region, so nested regions and
//! loop iterations (the same region again and again) pair naturally. What does not fit
//! that shape is reported, never guessed at, and the instances kept are always properly
//! nested — which the trace format requires of the slices on one thread.

use crate::decode::SlotTrace;
use crate::issue::IssueKind;

/// A region instance by event indices into its slot's `events`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub region: u32,
    /// Index of the start event.
    pub start: usize,
    /// Index of the end event; `None` when still open at the group's end.
    pub end: Option<usize>,
    /// Open regions enclosing this one when it started.
    pub depth: u32,
}

/// Spans of one slot, in order of their start events (so enclosing spans come first),
/// and what did not pair.
pub fn pair_slot(slot: &SlotTrace) -> (Vec<Span>, Vec<IssueKind>) {
    let mut spans: Vec<Option<Span>> = Vec::new();
    let mut stack: Vec<usize> = Vec::new(); // indices into `spans`
    let mut issues = Vec::new();
    for (i, e) in slot.events.iter().enumerate() {
        if !e.is_end {
            stack.push(spans.len());
            spans.push(Some(Span { region: e.region, start: i, end: None, depth: stack.len() as u32 - 1 }));
            continue;
        }
        let open = stack.iter().rposition(|&s| spans[s].is_some_and(|s| s.region == e.region));
        match open {
            Some(pos) => {
                if pos + 1 < stack.len() {
                    let abandoned: Vec<u32> =
                        stack[pos + 1..].iter().filter_map(|&s| spans[s].take()).map(|s| s.region).collect();
                    issues.push(IssueKind::Misnested { region: e.region, seq: e.seq as u64, abandoned });
                    stack.truncate(pos + 1);
                }
                let s = stack.pop().expect("pos is within the stack");
                if let Some(span) = spans[s].as_mut() {
                    span.end = Some(i);
                }
            }
            None => issues.push(IssueKind::EndWithoutStart {
                region: e.region,
                seq: e.seq as u64,
                // With a wrapped ring and nothing open, the start was among the dropped records.
                explained: slot.dropped > 0 && stack.is_empty(),
            }),
        }
    }
    for &s in &stack {
        if let Some(span) = spans[s] {
            issues.push(IssueKind::OpenAtEnd { region: span.region, seq: slot.events[span.start].seq as u64 });
        }
    }
    (spans.into_iter().flatten().collect(), issues)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::Event;

    fn slot(dropped: u32, seq: &[(u32, bool)]) -> SlotTrace {
        SlotTrace {
            index: 0,
            cta: 0,
            group: 0,
            sm_id: 0,
            clock_start: 0,
            clock_end: 1000,
            globaltimer_start: 0,
            globaltimer_end: 1,
            timer_usable: true,
            total: dropped + seq.len() as u32,
            dropped,
            events: seq
                .iter()
                .enumerate()
                .map(|(i, &(region, is_end))| Event { seq: dropped + i as u32, region, is_end, clock: 10 * i as u64 })
                .collect(),
        }
    }
    const S: bool = false;
    const E: bool = true;

    fn spans(v: &[Span]) -> Vec<(u32, usize, Option<usize>, u32)> {
        v.iter().map(|s| (s.region, s.start, s.end, s.depth)).collect()
    }

    #[test]
    fn nested_and_repeated_regions_pair() {
        // kernel { loop { dot } loop { dot } }
        let t = slot(0, &[(0, S), (1, S), (2, S), (2, E), (1, E), (1, S), (2, S), (2, E), (1, E), (0, E)]);
        let (v, issues) = pair_slot(&t);
        assert!(issues.is_empty(), "{issues:?}");
        assert_eq!(
            spans(&v),
            [(0, 0, Some(9), 0), (1, 1, Some(4), 1), (2, 2, Some(3), 2), (1, 5, Some(8), 1), (2, 6, Some(7), 2)]
        );
    }

    #[test]
    fn recursion_of_one_region_closes_the_innermost() {
        let (v, issues) = pair_slot(&slot(0, &[(3, S), (3, S), (3, E), (3, E)]));
        assert!(issues.is_empty());
        assert_eq!(spans(&v), [(3, 0, Some(3), 0), (3, 1, Some(2), 1)]);
    }

    #[test]
    fn misnesting_abandons_the_inner_region() {
        let (v, issues) = pair_slot(&slot(0, &[(1, S), (2, S), (1, E), (2, E)]));
        assert_eq!(spans(&v), [(1, 0, Some(2), 0)]);
        assert_eq!(
            issues,
            [
                IssueKind::Misnested { region: 1, seq: 2, abandoned: vec![2] },
                IssueKind::EndWithoutStart { region: 2, seq: 3, explained: false },
            ]
        );
    }

    #[test]
    fn open_at_end_and_ends_whose_start_was_dropped() {
        let (v, issues) = pair_slot(&slot(4, &[(2, E), (1, E), (1, S), (2, S), (2, E)]));
        assert_eq!(spans(&v), [(1, 2, None, 0), (2, 3, Some(4), 1)]);
        assert_eq!(
            issues,
            [
                IssueKind::EndWithoutStart { region: 2, seq: 4, explained: true },
                IssueKind::EndWithoutStart { region: 1, seq: 5, explained: true },
                IssueKind::OpenAtEnd { region: 1, seq: 6 },
            ]
        );
        // Without drops the same end is unexplained: a warning, not a note.
        let (_, issues) = pair_slot(&slot(0, &[(2, E)]));
        assert_eq!(issues, [IssueKind::EndWithoutStart { region: 2, seq: 0, explained: false }]);
    }
}
