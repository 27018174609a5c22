//! A checker for the trace-event format's rules: the JSON Object Format (`traceEvents`
//! array, optional `displayTimeUnit` of "ms" or "ns"), the fields every event needs and
//! their types, what `X` (complete) and `M` (metadata) events need in particular,
//! non-negative finite times, a name for every process and thread used, and slices on
//! one thread properly nested (a slice that starts inside another ends inside it),
//! which the viewers need to draw one track per thread.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// A slice: start and end in µs, and its name.
type Slice = (f64, f64, String);

const METADATA_NAMES: [&str; 5] =
    ["process_name", "process_labels", "process_sort_index", "thread_name", "thread_sort_index"];

/// Every rule broken, as text; empty when the trace is valid.
pub fn violations(trace: &Value) -> Vec<String> {
    let mut bad = Vec::new();
    let Some(top) = trace.as_object() else { return vec!["top level is not an object".into()] };
    if let Some(unit) = top.get("displayTimeUnit") {
        if !matches!(unit.as_str(), Some("ms" | "ns")) {
            bad.push(format!("displayTimeUnit {unit}"));
        }
    }
    let Some(events) = top.get("traceEvents").and_then(Value::as_array) else {
        return vec!["no traceEvents array".into()];
    };
    let mut named_processes = BTreeSet::new();
    let mut named_threads = BTreeSet::new();
    let mut slices: BTreeMap<(u64, u64), Vec<Slice>> = BTreeMap::new();
    for (n, e) in events.iter().enumerate() {
        let Some(e) = e.as_object() else {
            bad.push(format!("event {n} is not an object"));
            continue;
        };
        let text = |k: &str| e.get(k).and_then(Value::as_str);
        let uint = |k: &str| e.get(k).and_then(Value::as_u64);
        let number = |k: &str| e.get(k).and_then(Value::as_f64);
        let (Some(ph), Some(name), Some(pid), Some(tid)) = (text("ph"), text("name"), uint("pid"), uint("tid")) else {
            bad.push(format!("event {n}: needs string ph and name, integer pid and tid: {e:?}"));
            continue;
        };
        if let Some(cat) = e.get("cat") {
            if !cat.is_string() {
                bad.push(format!("event {n}: cat must be a string"));
            }
        }
        if let Some(args) = e.get("args") {
            if !args.is_object() {
                bad.push(format!("event {n}: args must be an object"));
            }
        }
        let args = e.get("args").and_then(Value::as_object);
        match ph {
            "X" => {
                let (Some(ts), Some(dur)) = (number("ts"), number("dur")) else {
                    bad.push(format!("event {n}: X needs numeric ts and dur"));
                    continue;
                };
                if !(ts.is_finite() && dur.is_finite() && ts >= 0.0 && dur >= 0.0) {
                    bad.push(format!("event {n}: ts {ts} dur {dur}"));
                }
                slices.entry((pid, tid)).or_default().push((ts, ts + dur, name.to_string()));
            }
            "M" => {
                if !METADATA_NAMES.contains(&name) {
                    bad.push(format!("event {n}: unknown metadata {name}"));
                }
                let arg = |k: &str| args.and_then(|a| a.get(k));
                match name {
                    "process_name" | "thread_name" if !arg("name").is_some_and(Value::is_string) => {
                        bad.push(format!("event {n}: {name} needs args.name"))
                    }
                    "process_sort_index" | "thread_sort_index" if !arg("sort_index").is_some_and(Value::is_i64) => {
                        bad.push(format!("event {n}: {name} needs integer args.sort_index"))
                    }
                    "process_name" => {
                        named_processes.insert(pid);
                    }
                    "thread_name" => {
                        named_threads.insert((pid, tid));
                    }
                    _ => {}
                }
            }
            other => bad.push(format!("event {n}: phase {other} is not one this trace should contain")),
        }
    }
    for ((pid, tid), mut v) in slices {
        if !named_processes.contains(&pid) {
            bad.push(format!("pid {pid} has slices but no process_name"));
        }
        if !named_threads.contains(&(pid, tid)) {
            bad.push(format!("pid {pid} tid {tid} has slices but no thread_name"));
        }
        // Parents first: by start, longer first.
        v.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut open: Vec<(f64, String)> = Vec::new();
        for (start, end, name) in v {
            // ts + dur is a sum of two rounded numbers: allow its rounding.
            let eps = 1e-9 * end.abs().max(1.0);
            while open.last().is_some_and(|&(e, _)| e <= start + eps) {
                open.pop();
            }
            if let Some((parent_end, parent)) = open.last() {
                if end > parent_end + eps {
                    bad.push(format!(
                        "pid {pid} tid {tid}: {name} [{start}, {end}] overlaps {parent} ending {parent_end}"
                    ));
                }
            }
            open.push((end, name));
        }
    }
    bad
}
