//! The Chrome / Perfetto trace-event JSON (the "JSON Object Format" that
//! chrome://tracing and ui.perfetto.dev both load).
//!
//! One process per CTA (`pid` = CTA linear id), one thread per group (`tid` = group
//! index), named by `"M"` metadata events; one complete (`"X"`) event per region
//! instance with `ts` and `dur` in microseconds on the launch's shared timeline (see
//! `Profile::from_decoded`). `args` carry the region id, its source location, its
//! replayed length in cycles, and `open: true` for an instance still open at its
//! group's end. Slices on one thread are properly nested: pairing guarantees it, and
//! times are rounded to whole nanoseconds (monotonically) so rounding cannot break it.

use crate::profile::Profile;
use serde_json::{json, Map, Value};

/// Nanoseconds on the timeline, rounded to whole ns; `ts`/`dur` are this over 1000.
fn ns_grid(x: f64) -> f64 {
    x.round().max(0.0)
}

/// The trace as a JSON value.
pub fn chrome_trace(p: &Profile) -> Value {
    let meta = &p.meta;
    let noun = meta.granularity.group_noun();
    let mut events = Vec::new();
    let mut named_cta = std::collections::BTreeSet::new();
    for s in &p.slots {
        let t = &s.trace;
        if named_cta.insert(t.cta) {
            let (x, y, z) = meta.cta_coords(t.cta);
            events.push(json!({"name": "process_name", "ph": "M", "ts": 0, "pid": t.cta, "tid": 0,
                "args": {"name": format!("CTA {} ({x},{y},{z}) SM {}", t.cta, t.sm_id)}}));
            events.push(json!({"name": "process_sort_index", "ph": "M", "ts": 0, "pid": t.cta, "tid": 0,
                "args": {"sort_index": t.cta}}));
        }
        let mut name = meta.group_name(t.group);
        if t.dropped > 0 {
            name.push_str(&format!(" ({} records dropped)", t.dropped));
        }
        events.push(json!({"name": "thread_name", "ph": "M", "ts": 0, "pid": t.cta, "tid": t.group,
            "args": {"name": name}}));
        events.push(json!({"name": "thread_sort_index", "ph": "M", "ts": 0, "pid": t.cta, "tid": t.group,
            "args": {"sort_index": t.group}}));
    }
    let regions = meta.region_index();
    for i in &p.instances {
        let s = &p.slots[i.slot];
        let region = regions.get(&i.region).map(|&r| &meta.regions[r]);
        let start = ns_grid(s.offset_ns + p.cycles_to_ns(i.start));
        let end = ns_grid(s.offset_ns + p.cycles_to_ns(i.end)).max(start);
        let mut args = Map::new();
        args.insert("region_id".into(), json!(i.region));
        if let Some(loc) = region.and_then(|r| r.loc.as_ref()) {
            args.insert("source".into(), json!(loc.to_string()));
        }
        args.insert("cycles".into(), json!(i.cycles()));
        if i.open {
            args.insert("open".into(), json!(true));
        }
        events.push(json!({
            "name": region.map_or_else(|| format!("region {}", i.region), |r| r.name.clone()),
            "cat": region.map_or("region", |r| r.kind.as_str()),
            "ph": "X",
            "ts": start / 1000.0,
            "dur": (end - start) / 1000.0,
            "pid": s.trace.cta,
            "tid": s.trace.group,
            "args": Value::Object(args),
        }));
    }
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "kernel": meta.kernel,
            "target": meta.target,
            "granularity": noun,
            "clock_ghz": format!("{:.6}", p.clock.ghz),
            "clock_source": if p.clock.is_measured() { "globaltimer" } else { "nominal" },
            "record_cost_cycles": p.record_cost.to_string(),
            "record_cost_per_site": p.site_costs.is_some().to_string(),
            "dropped_records": p.dropped_records().to_string(),
        },
    })
}

/// The trace as JSON text, ready to write to `trace.json`.
pub fn chrome_trace_json(p: &Profile) -> String {
    serde_json::to_string(&chrome_trace(p)).expect("a JSON value always serializes")
}
