//! `--trace FILE.json`: the modeled timeline as a Chrome / Perfetto trace (the JSON trace
//! event format: complete events `ph: "X"` with `ts` / `dur` in µs). One process per rank;
//! in it a `stream` track (one slice per launch and collective) and one track per (core,
//! pipe) with every call of the sim — the swimlane msprof and pypto draw. A measured run
//! (`bench --backend npu --trace`) fills the same stream tracks from the device's events.

use std::collections::HashSet;
use std::path::Path;

use serde_json::{Value, json};

use harness::runtime::RunRecord;

use crate::modeled::Timeline;
use crate::stop::Stop;

/// The stream track's id; core c's pipes are tracks `base + 8 · c + pipe`.
const STREAM: u64 = 1;
const AIC_BASE: u64 = 1000;
const AIV_BASE: u64 = 2000;

/// Writes `timeline` (traced: with the calls) to `path`.
pub fn write(path: &Path, title: &str, timeline: &Timeline) -> Result<(), Stop> {
    save(path, &document(title, timeline))
}

fn save(path: &Path, doc: &Value) -> Result<(), Stop> {
    let text = serde_json::to_string(doc).expect("JSON serialises");
    std::fs::write(path, text).map_err(|e| Stop::usage(format!("--trace {}: {e}", path.display())))
}

/// The trace document.
pub fn document(title: &str, timeline: &Timeline) -> Value {
    let clock = timeline.chip.clock_hz;
    let mut events: Vec<Value> = Vec::new();
    // Each track is named once, when its first event comes (the name built only then).
    let mut named: HashSet<(u64, u64)> = HashSet::new();
    let mut name_track =
        |events: &mut Vec<Value>, pid: u64, tid: u64, name: &dyn Fn() -> String| {
            if named.insert((pid, tid)) {
                let name = name();
                events.push(
                    json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                               "args": {"name": name}}),
                );
                events.push(
                    json!({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                               "args": {"sort_index": tid}}),
                );
            }
        };
    let ranks: Vec<usize> = {
        let mut r: Vec<usize> = timeline.spans.iter().map(|s| s.rank).collect();
        r.sort_unstable();
        r.dedup();
        r
    };
    for rank in ranks {
        let pid = rank as u64;
        events.push(json!({"ph": "M", "name": "process_name", "pid": pid,
                           "args": {"name": format!("{title} rank {rank}")}}));
        name_track(&mut events, pid, STREAM, &|| "stream".into());
        for s in timeline.rank(rank) {
            let start_ps = ps(s.start.as_secs_f64());
            events.push(slice(
                s.name,
                "launch",
                pid,
                STREAM,
                start_ps,
                ps((s.start + s.time).as_secs_f64()) - start_ps,
                json!({"stage": s.stage, "step": s.step, "bound": s.bound}),
            ));
            let Some(k) = &s.kernel else { continue };
            // the kernel's cores start after its op head
            let origin = s.start.as_secs_f64() + k.chip.op_head_cycles / clock;
            let labels = core_labels(k.cores.iter().map(|c| c.aic));
            for c in &k.calls {
                let (base, label) = &labels[c.core as usize];
                let tid = base + c.pipe as u64;
                name_track(&mut events, pid, tid, &|| {
                    format!("{label} · {}", c.pipe.name())
                });
                let a = ps(origin + f64::from(c.start) / clock);
                let b = ps(origin + f64::from(c.start + c.cycles) / clock);
                events.push(slice(
                    c.api,
                    c.pipe.resource(),
                    pid,
                    tid,
                    a,
                    b - a,
                    json!({}),
                ));
            }
        }
    }
    json!({"traceEvents": events, "displayTimeUnit": "ns"})
}

/// Writes the device's measured steps of `record` (the npu backend's events) to `path`: per
/// rank the stream track of the modeled trace, a slice per launch and collective (one
/// slice of the layer per rank when a replayed graph was timed as a whole).
pub fn write_measured(path: &Path, title: &str, record: &RunRecord) -> Result<(), Stop> {
    save(path, &measured_document(title, record))
}

pub fn measured_document(title: &str, record: &RunRecord) -> Value {
    let mut events: Vec<Value> = Vec::new();
    for rank in 0..record.tp {
        let pid = rank as u64;
        events.push(json!({"ph": "M", "name": "process_name", "pid": pid,
                           "args": {"name": format!("{title} rank {rank} (measured)")}}));
        events.push(
            json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": STREAM,
                           "args": {"name": "stream"}}),
        );
        let mut timed = false;
        for s in record.rank(rank) {
            let Some(d) = s.device else { continue };
            timed = true;
            let start = ps(d.start.as_secs_f64());
            events.push(slice(
                s.kind.name(),
                "launch",
                pid,
                STREAM,
                start,
                ps((d.start + d.time).as_secs_f64()) - start,
                json!({"stage": s.stage, "step": s.step}),
            ));
        }
        if let (false, Some(total)) = (timed, record.device) {
            events.push(slice(
                "graph replay (slowest rank)",
                "launch",
                pid,
                STREAM,
                0,
                ps(total.as_secs_f64()),
                json!({}),
            ));
        }
    }
    json!({"traceEvents": events, "displayTimeUnit": "ns"})
}

/// Whole picoseconds: adjacent intervals in cycles stay adjacent after rounding.
fn ps(secs: f64) -> u64 {
    (secs * 1e12).round() as u64
}

fn slice(
    name: &str,
    cat: &str,
    pid: u64,
    tid: u64,
    start_ps: u64,
    dur_ps: u64,
    args: Value,
) -> Value {
    json!({"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid,
           "ts": start_ps as f64 / 1e6, "dur": dur_ps as f64 / 1e6, "args": args})
}

/// Each core of a launch as a physical core, numbered per kind in launch order (MIX block
/// b: AIC b, AIV 2b and 2b + 1): its first track id and its name.
fn core_labels(aic: impl Iterator<Item = bool>) -> Vec<(u64, String)> {
    let (mut n_aic, mut n_aiv) = (0u64, 0u64);
    aic.map(|is_aic| {
        let (base, n, kind) = if is_aic {
            (AIC_BASE, &mut n_aic, "AIC")
        } else {
            (AIV_BASE, &mut n_aiv, "AIV")
        };
        *n += 1;
        (base + 8 * (*n - 1), format!("{kind} {}", *n - 1))
    })
    .collect()
}
