//! The region table for a terminal, and the same numbers as CSV.

use crate::issue::Severity;
use crate::profile::Profile;
use crate::stats::{region_stats, RegionStats};
use std::fmt::Write;

const HEADERS: [&str; 12] = [
    "region",
    "source",
    "count",
    "total cyc",
    "mean cyc",
    "median cyc",
    "p99 cyc",
    "total ns",
    "mean ns",
    "median ns",
    "p99 ns",
    "share",
];

/// Readable magnitude: whole numbers from 1000 up, one decimal below.
fn num(x: f64) -> String {
    if x.abs() >= 1000.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

fn short_source(r: &RegionStats) -> String {
    match &r.loc {
        Some(l) => format!("{}:{}", l.file.rsplit(['/', '\\']).next().unwrap_or(&l.file), l.line),
        None => "-".into(),
    }
}

/// The launch in one line: kernel, shape, clock and replay cost.
pub fn summary_line(p: &Profile) -> String {
    let m = &p.meta;
    let ctas = m.num_ctas().unwrap_or(0);
    let clock = if p.clock.is_measured() {
        format!("measured over {} groups", p.clock.measured_slots)
    } else {
        "nominal".to_string()
    };
    let plural = |n: u64, noun: &str| format!("{n} {noun}{}", if n == 1 { "" } else { "s" });
    let cost = match &p.site_costs {
        Some(_) => format!("per site, mean {:.2}", p.record_cost),
        None => p.record_cost.to_string(),
    };
    let noun = m.granularity.group_noun();
    let groups = if m.producer_warps == 0 {
        plural(m.groups_per_cta as u64, noun)
    } else {
        // A warp-specialized kernel: its producer warps' groups apart.
        let consumers = m.consumer_groups() as u64;
        let producer = if m.granularity == crate::format::Granularity::Cta { "group" } else { noun };
        format!(
            "{} + {}",
            plural(consumers, noun),
            plural(m.groups_per_cta as u64 - consumers, &format!("producer {producer}"))
        )
    };
    format!(
        "kernel {} on {}: {} x {} ({} of {} slots decoded), clock {:.3} GHz ({clock}), replay cost {cost} cycles/record",
        m.kernel,
        m.target,
        plural(ctas as u64, "CTA"),
        groups,
        p.slots.len(),
        ctas as u64 * m.groups_per_cta as u64,
        p.clock.ghz,
    )
}

/// The region table with a summary line above and the drop and issue counts below.
pub fn render_table(p: &Profile) -> String {
    let rows: Vec<[String; 12]> = region_stats(p)
        .iter()
        .map(|r| {
            let count = if r.open > 0 { format!("{} (+{} open)", r.count, r.open) } else { r.count.to_string() };
            [
                r.name.clone(),
                short_source(r),
                count,
                num(r.cycles.total),
                num(r.cycles.mean),
                num(r.cycles.median),
                num(r.cycles.p99),
                num(r.ns.total),
                num(r.ns.mean),
                num(r.ns.median),
                num(r.ns.p99),
                format!("{:.1}%", 100.0 * r.share),
            ]
        })
        .collect();
    let mut widths = HEADERS.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = summary_line(p);
    out.push('\n');
    let mut line = |cells: &[String]| {
        let mut l = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i > 0 {
                l.push_str("  ");
            }
            // Names left-aligned, numbers right-aligned.
            if i < 2 {
                let _ = write!(l, "{cell:<w$}");
            } else {
                let _ = write!(l, "{cell:>w$}");
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&HEADERS.map(String::from));
    for row in &rows {
        line(row);
    }
    let count = |s| p.issues.iter().filter(|i| i.severity == s).count();
    let _ = writeln!(
        out,
        "records dropped by ring wrap: {}; issues: {} errors, {} warnings, {} notes",
        p.dropped_records(),
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Note)
    );
    out
}

/// The issues, worst first, one per line, at most `limit` of them (then a count of the
/// rest): what a command prints under the table.
pub fn render_issues(p: &Profile, limit: usize) -> String {
    let mut sorted: Vec<_> = p.issues.iter().collect();
    sorted.sort_by_key(|i| i.severity); // stable: buffer order within a severity
    let mut out = String::new();
    for i in sorted.iter().take(limit) {
        let _ = writeln!(out, "{i}");
    }
    if sorted.len() > limit {
        let _ = writeln!(out, "... and {} more", sorted.len() - limit);
    }
    out
}

/// One CSV field, quoted when it must be (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The table's numbers at full precision, one row per region, with a header row.
pub fn render_csv(p: &Profile) -> String {
    let mut out = String::from(
        "region_id,region,kind,source,count,open,total_cycles,mean_cycles,median_cycles,p99_cycles,\
         total_ns,mean_ns,median_ns,p99_ns,share\n",
    );
    for r in region_stats(p) {
        let source = r.loc.as_ref().map(|l| l.to_string()).unwrap_or_default();
        let (c, n) = (r.cycles, r.ns);
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.id,
            csv_field(&r.name),
            r.kind.as_str(),
            csv_field(&source),
            r.count,
            r.open,
            c.total,
            c.mean,
            c.median,
            c.p99,
            n.total,
            n.mean,
            n.median,
            n.p99,
            r.share
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quoting() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn numbers_keep_a_decimal_only_when_small() {
        assert_eq!(num(12345.6), "12346");
        assert_eq!(num(12.34), "12.3");
        assert_eq!(num(0.0), "0.0");
    }
}
