//! Per-region statistics over all groups: how often a region ran and how long it took.
//!
//! Only closed instances count (an instance open at its group's end has no length).
//! Median and p99 use the nearest-rank method: the smallest value with at least that
//! fraction of the instances at or below it — always a value that occurred. The share
//! of the kernel is the region's total over the sum of every group's observed window
//! (its life after replay, or from its oldest retained record when the ring dropped
//! older ones); nested regions are counted within their parents, so shares of nested
//! regions add up to more than 100%.

use crate::meta::{RegionKind, SourceLoc};
use crate::profile::Profile;

/// Total, mean, median and p99 of a set of durations.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Summary {
    pub total: f64,
    pub mean: f64,
    pub median: f64,
    pub p99: f64,
}

impl Summary {
    /// Of `values`, sorted ascending; all zero when empty.
    pub fn of_sorted(values: &[f64]) -> Summary {
        if values.is_empty() {
            return Summary::default();
        }
        let total: f64 = values.iter().sum();
        Summary {
            total,
            mean: total / values.len() as f64,
            median: nearest_rank(values, 0.5),
            p99: nearest_rank(values, 0.99),
        }
    }

    fn scaled(&self, factor: f64) -> Summary {
        Summary {
            total: self.total * factor,
            mean: self.mean * factor,
            median: self.median * factor,
            p99: self.p99 * factor,
        }
    }
}

/// The nearest-rank `q`-quantile of a non-empty ascending slice.
pub fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[derive(Debug, Clone, PartialEq)]
pub struct RegionStats {
    pub id: u32,
    pub name: String,
    pub kind: RegionKind,
    pub loc: Option<SourceLoc>,
    /// Closed instances.
    pub count: usize,
    /// Instances still open at their group's end (not in the numbers).
    pub open: usize,
    pub cycles: Summary,
    pub ns: Summary,
    /// `cycles.total` over the groups' observed cycles.
    pub share: f64,
}

/// One row per region of the meta (regions that never completed have count 0), largest
/// total first.
pub fn region_stats(profile: &Profile) -> Vec<RegionStats> {
    let observed: f64 = profile.slots.iter().map(|s| s.observed_cycles()).sum();
    let mut rows: Vec<RegionStats> = profile
        .meta
        .regions
        .iter()
        .map(|r| {
            let mut durations: Vec<f64> =
                profile.instances.iter().filter(|i| i.region == r.id && !i.open).map(|i| i.cycles()).collect();
            durations.sort_by(f64::total_cmp);
            let open = profile.instances.iter().filter(|i| i.region == r.id && i.open).count();
            let cycles = Summary::of_sorted(&durations);
            RegionStats {
                id: r.id,
                name: r.name.clone(),
                kind: r.kind,
                loc: r.loc.clone(),
                count: durations.len(),
                open,
                cycles,
                ns: cycles.scaled(1.0 / profile.clock.ghz),
                share: if observed > 0.0 { cycles.total / observed } else { 0.0 },
            }
        })
        .collect();
    rows.sort_by(|a, b| b.cycles.total.total_cmp(&a.cycles.total).then(a.id.cmp(&b.id)));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(nearest_rank(&v, 0.5), 50.0);
        assert_eq!(nearest_rank(&v, 0.99), 99.0);
        assert_eq!(nearest_rank(&[7.0], 0.99), 7.0);
        assert_eq!(nearest_rank(&[1.0, 2.0, 3.0], 0.5), 2.0);
        assert_eq!(nearest_rank(&[1.0, 2.0], 0.5), 1.0);
        let s = Summary::of_sorted(&[1.0, 2.0, 3.0, 10.0]);
        assert_eq!(s, Summary { total: 16.0, mean: 4.0, median: 2.0, p99: 10.0 });
        assert_eq!(Summary::of_sorted(&[]), Summary::default());
    }
}
