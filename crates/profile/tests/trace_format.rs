//! The Chrome/Perfetto output checked against the trace-event format's rules (the
//! checker is `common/trace_check.rs`; the first test shows it catches each kind of
//! breakage).

mod common;

use common::trace_check::violations;
use common::{meta, synthetic_cta, Rng};
use serde_json::Value;
use trident_profile::format::encode::{encode_buffer, RecordData, SlotData};
use trident_profile::trace::{chrome_trace, chrome_trace_json};
use trident_profile::{Granularity, Profile};

#[test]
fn the_checker_catches_broken_traces() {
    let ok = serde_json::json!({"traceEvents": [
        {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "p"}},
        {"name": "thread_name", "ph": "M", "pid": 1, "tid": 2, "args": {"name": "t"}},
        {"name": "a", "ph": "X", "ts": 1.0, "dur": 5.0, "pid": 1, "tid": 2},
        {"name": "b", "ph": "X", "ts": 2.0, "dur": 1.0, "pid": 1, "tid": 2},
    ]});
    assert_eq!(violations(&ok), Vec::<String>::new());
    let broken = |f: &dyn Fn(&mut Value)| {
        let mut t = ok.clone();
        f(&mut t);
        violations(&t)
    };
    assert!(!broken(&|t| t["traceEvents"][3]["dur"] = 9.0.into()).is_empty(), "overlap");
    assert!(!broken(&|t| t["traceEvents"][3]["dur"] = (-1.0).into()).is_empty(), "negative");
    assert!(!broken(&|t| t["traceEvents"][2].as_object_mut().unwrap().clear()).is_empty(), "fields");
    assert!(!broken(&|t| t["traceEvents"][1]["args"] = serde_json::json!({})).is_empty(), "thread name");
    assert!(!broken(&|t| t["traceEvents"][2]["pid"] = "1".into()).is_empty(), "pid type");
    assert!(!broken(&|t| t["displayTimeUnit"] = "s".into()).is_empty(), "unit");
}

#[test]
fn random_launches_give_valid_traces() {
    let mut rng = Rng::from_env("random_launches_give_valid_traces");
    for round in 0..20 {
        let granularity = [Granularity::Warp, Granularity::Warpgroup, Granularity::Cta][round % 3];
        let m = meta([rng.range(1, 4) as u32, 2, 1], 8, granularity, 1 << rng.range(2, 7), rng.range(0, 40) as f64, 5);
        let layout = m.layout().unwrap();
        let mut slots = Vec::new();
        for cta in 0..layout.num_ctas() {
            for (mut slot, _) in synthetic_cta(&mut rng, cta, layout.groups_per_cta(), 5, 80, 30, 1 << 20) {
                // Now and then a region left open at the end.
                if rng.chance(20) {
                    let clock = slot.records.last().map_or(slot.clock_start, |r| r.clock) + 5;
                    slot.records.push(RecordData::start(1, clock));
                    slot.clock_end = slot.clock_end.max(clock + 100);
                }
                slots.push(slot);
            }
        }
        let p = Profile::from_buffer(&encode_buffer(&layout, &slots).unwrap(), &m).unwrap();
        let trace = chrome_trace(&p);
        assert_eq!(violations(&trace), Vec::<String>::new(), "round {round}");
        let text = chrome_trace_json(&p);
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), trace);
        assert!(p.issues.iter().all(|i| i.severity != trident_profile::Severity::Error), "{:?}", p.issues);
        let xs = trace["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").count();
        assert_eq!(xs, p.instances.len());
    }
}

#[test]
fn trace_names_ctas_and_groups_and_carries_source_lines() {
    let m = meta([2, 1, 1], 8, Granularity::Warpgroup, 8, 10.0, 3);
    let slot = |cta, group, gt| SlotData {
        cta,
        group,
        sm_id: 40 + cta,
        clock_start: 1_000,
        clock_end: 4_000,
        globaltimer_start: gt,
        globaltimer_end: gt + 2_000,
        records: vec![RecordData::start(2, 1_300), RecordData::end(2, 2_810)],
    };
    let bytes = encode_buffer(&m.layout().unwrap(), &[slot(0, 1, 10_000), slot(1, 0, 13_000)]).unwrap();
    let p = Profile::from_buffer(&bytes, &m).unwrap();
    let t = chrome_trace(&p);
    let events = t["traceEvents"].as_array().unwrap();
    let find = |ph: &str, name: &str, pid: u64| {
        events
            .iter()
            .find(|e| e["ph"] == ph && e["name"] == name && e["pid"] == pid)
            .unwrap_or_else(|| panic!("{name}"))
    };
    assert_eq!(find("M", "process_name", 1)["args"]["name"], "CTA 1 (1,0,0) SM 41");
    assert_eq!(find("M", "thread_name", 0)["args"]["name"], "warpgroup 1");
    assert_eq!(find("M", "thread_name", 0)["tid"], 1);
    let x = find("X", "region_2", 1);
    // 1.5 GHz measured (3000 cycles in 2000 ns); region from 300 to 1800 replayed cycles
    // (1810 - 10), i.e. 200 ns to 1200 ns, CTA 1 placed 3000 ns after CTA 0.
    assert_eq!(x["ts"], 3.2);
    assert_eq!(x["dur"], 1.0);
    assert_eq!(x["cat"], "dot");
    assert_eq!(x["args"]["source"], "kernels/synthetic.py:12:9");
    assert_eq!(x["args"]["cycles"], 1500.0);
    assert_eq!(t["displayTimeUnit"], "ns");
    assert_eq!(t["otherData"]["clock_source"], "globaltimer");
}
