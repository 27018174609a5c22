//! The region table, CSV and statistics on a small launch whose true times are worked
//! out by hand: two warps on one SM, probes of 10 cycles, a 1 GHz clock.

use trident_profile::format::encode::{encode_buffer, RecordData, SlotData};
use trident_profile::format::FORMAT_VERSION;
use trident_profile::stats::region_stats;
use trident_profile::table::{render_csv, render_issues, render_table};
use trident_profile::trace::chrome_trace;
use trident_profile::{Granularity, Profile, ProfileMeta, Region, RegionKind, SourceLoc};

fn meta() -> ProfileMeta {
    let region = |id, name: &str, kind, line| Region {
        id,
        name: name.into(),
        kind,
        loc: Some(SourceLoc { file: "kernels/k.py".into(), line, col: 5 }),
    };
    ProfileMeta {
        format_version: FORMAT_VERSION,
        kernel: "k".into(),
        target: "emu".into(),
        grid: [1, 1, 1],
        warps_per_cta: 2,
        producer_warps: 0,
        granularity: Granularity::Warp,
        groups_per_cta: 2,
        capacity: 16,
        record_cost_cycles: 10.0,
        nominal_clock_ghz: 1.755,
        globaltimer_resolution_ns: 1,
        regions: vec![
            region(0, "kernel", RegionKind::Kernel, 10),
            region(1, "loop, body", RegionKind::Loop, 11),
            region(2, "dot", RegionKind::Dot, 12),
            region(3, "never", RegionKind::Scope, 13),
        ],
    }
}

/// Records at true times `t` (probe-free), each probe adding 10 cycles before the next.
fn group(group: u32, clock0: u64, timer0: u64, marks: &[(u32, bool, u64)], true_end: u64) -> SlotData {
    let records: Vec<RecordData> = marks
        .iter()
        .enumerate()
        .map(|(k, &(region, is_end, t))| RecordData { region, is_end, clock: clock0 + t + 10 * k as u64 })
        .collect();
    let end = true_end + 10 * records.len() as u64;
    SlotData {
        cta: 0,
        group,
        sm_id: 4,
        clock_start: clock0,
        clock_end: clock0 + end,
        globaltimer_start: timer0,
        globaltimer_end: timer0 + end, // 1 cycle per ns
        records,
    }
}

fn profile() -> Profile {
    const S: bool = false;
    const E: bool = true;
    // Warp 0: kernel [0, 1000], loop [100, 300] with dot [150, 250], loop [300, 600].
    let w0 = [(0, S, 0), (1, S, 100), (2, S, 150), (2, E, 250), (1, E, 300), (1, S, 300), (1, E, 600), (0, E, 1000)];
    // Warp 1, starting 50 cycles later: kernel [0, 500], loop [10, 110], loop [110, 410].
    let w1 = [(0, S, 0), (1, S, 10), (1, E, 110), (1, S, 110), (1, E, 410), (0, E, 500)];
    let m = meta();
    let slots = [group(0, 7_000, 1_000, &w0, 1100), group(1, 7_050, 1_050, &w1, 520)];
    Profile::from_buffer(&encode_buffer(&m.layout().unwrap(), &slots).unwrap(), &m).unwrap()
}

#[test]
fn statistics_match_the_hand_computed_ones() {
    let p = profile();
    assert_eq!(p.clock.ghz, 1.0);
    assert!(p.issues.is_empty(), "{:?}", p.issues);
    let rows = region_stats(&p);
    let got: Vec<(u32, usize, f64, f64, f64, f64)> =
        rows.iter().map(|r| (r.id, r.count, r.cycles.total, r.cycles.mean, r.cycles.median, r.cycles.p99)).collect();
    assert_eq!(
        got,
        [
            (0, 2, 1500.0, 750.0, 500.0, 1000.0),
            (1, 4, 900.0, 225.0, 200.0, 300.0),
            (2, 1, 100.0, 100.0, 100.0, 100.0),
            (3, 0, 0.0, 0.0, 0.0, 0.0),
        ]
    );
    // Observed: 1100 + 520 cycles.
    assert!((rows[0].share - 1500.0 / 1620.0).abs() < 1e-12);
    assert_eq!(rows[1].ns.total, 900.0);
}

#[test]
fn table_text() {
    let expected = "\
kernel k on emu: 1 CTA x 2 warps (2 of 2 slots decoded), clock 1.000 GHz (measured over 2 groups), replay cost 10 cycles/record
region      source   count  total cyc  mean cyc  median cyc  p99 cyc  total ns  mean ns  median ns  p99 ns  share
kernel      k.py:10      2       1500     750.0       500.0     1000      1500    750.0      500.0    1000  92.6%
loop, body  k.py:11      4      900.0     225.0       200.0    300.0     900.0    225.0      200.0   300.0  55.6%
dot         k.py:12      1      100.0     100.0       100.0    100.0     100.0    100.0      100.0   100.0   6.2%
never       k.py:13      0        0.0       0.0         0.0      0.0       0.0      0.0        0.0     0.0   0.0%
records dropped by ring wrap: 0; issues: 0 errors, 0 warnings, 0 notes
";
    assert_eq!(render_table(&profile()), expected);
}

#[test]
fn csv_text() {
    let expected = "\
region_id,region,kind,source,count,open,total_cycles,mean_cycles,median_cycles,p99_cycles,total_ns,mean_ns,median_ns,p99_ns,share
0,kernel,kernel,kernels/k.py:10:5,2,0,1500,750,500,1000,1500,750,500,1000,0.9259259259259259
1,\"loop, body\",loop,kernels/k.py:11:5,4,0,900,225,200,300,900,225,200,300,0.5555555555555556
2,dot,dot,kernels/k.py:12:5,1,0,100,100,100,100,100,100,100,100,0.06172839506172839
3,never,scope,kernels/k.py:13:5,0,0,0,0,0,0,0,0,0,0,0
";
    assert_eq!(render_csv(&profile()), expected);
}

#[test]
fn trace_places_the_second_warp_by_its_clock() {
    let t = chrome_trace(&profile());
    let kernels: Vec<(u64, f64, f64)> = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == "kernel")
        .map(|e| (e["tid"].as_u64().unwrap(), e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap()))
        .collect();
    assert_eq!(kernels, [(0, 0.0, 1.0), (1, 0.05, 0.5)]);
}

#[test]
fn issues_worst_first_with_a_limit() {
    let m = meta();
    let mut w0 = group(0, 7_000, 1_000, &[(1, false, 5), (2, true, 9)], 100);
    w0.globaltimer_end = 0; // unusable timer: a warning
    let mut bytes = encode_buffer(&m.layout().unwrap(), &[w0]).unwrap();
    bytes[m.layout().unwrap().slot_offset(0, 1)] = 1; // warp 1: damaged, an error
    let p = Profile::from_buffer(&bytes, &m).unwrap();
    let text = render_issues(&p, 3);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].starts_with("error: slot 1 (CTA 0, warp 1): bad magic"), "{text}");
    assert!(lines[1].starts_with("warning: slot 0 (CTA 0, warp 0): globaltimer pair unusable"), "{text}");
    assert!(
        lines[2].starts_with("warning: slot 0 (CTA 0, warp 0): end of region 2 (record 1) without a start"),
        "{text}"
    );
    assert_eq!(lines[3], "... and 2 more");
    assert!(render_issues(&p, 10).contains("note: clock rate 1.755 GHz from the meta: no group's globaltimer span"));
}
