//! `--report FILE.json`: every run's output figures, per-stage and per-step timings and
//! the sim's counters, for scripts and dashboards.

use std::path::Path;

use abi::plan::VariantPlan;
use golden::compare::Report;
use harness::backend::LaunchCounters;
use harness::runtime::{StepKind, StepRecord};
use serde_json::{Value, json};

use crate::layer::CaseResult;
use crate::stop::Stop;

pub fn write(
    path: &Path,
    plan: &VariantPlan,
    backend: &str,
    results: &[CaseResult],
) -> Result<(), Stop> {
    let doc = json!({
        "variant": plan.name(),
        "spec": plan.spec.path,
        "layer": plan.abi.layer,
        "tp": plan.abi.tp,
        "backend": backend,
        "pass": results.iter().all(CaseResult::pass),
        "runs": results.iter().map(run).collect::<Vec<_>>(),
    });
    let text = serde_json::to_string_pretty(&doc).expect("a JSON value serialises");
    std::fs::write(path, text + "\n")
        .map_err(|e| Stop::usage(format!("--report {}: {e}", path.display())))
}

fn run(r: &CaseResult) -> Value {
    let rec = &r.record;
    json!({
        "label": r.label,
        "pass": r.pass(),
        "outputs": r.reports.iter().map(output).collect::<Vec<_>>(),
        "stray_writes": r.stray,
        "stages": rec.stage_times().iter().map(|s| json!({
            "stage": s.stage,
            "wall_s": s.wall.as_secs_f64(),
        })).collect::<Vec<_>>(),
        "steps": rec.steps.iter().map(step).collect::<Vec<_>>(),
        "setup_s": rec.setup.as_secs_f64(),
        "execute_s": rec.execute.as_secs_f64(),
        "readback_s": rec.readback.as_secs_f64(),
        "total_s": rec.total().as_secs_f64(),
        "golden_s": r.golden.map(|g| g.as_secs_f64()),
    })
}

fn output(r: &Report) -> Value {
    json!({
        "output": r.output,
        "pass": r.pass,
        "rule": r.rule.to_string(),
        "numel": r.numel,
        "bad": r.bad,
        "allowed": r.allowed,
        "max_abs": r.max_abs,
        "max_rel": r.max_rel,
        "reason": r.reason,
        "worst": r.worst.iter().map(|w| json!({
            "index": w.index,
            "got": w.got,
            "want": w.want,
        })).collect::<Vec<_>>(),
    })
}

fn step(s: &StepRecord) -> Value {
    let mut v = json!({
        "rank": s.rank,
        "step": s.step,
        "stage": s.stage,
        "start_s": s.start.as_secs_f64(),
        "wall_s": s.wall().as_secs_f64(),
    });
    let extra = match &s.kind {
        StepKind::Launch {
            kernel,
            block_dim,
            counters,
        } => json!({
            "kind": "launch",
            "kernel": kernel,
            "block_dim": block_dim,
            "counters": counters.as_ref().map(counters_json),
        }),
        StepKind::Exchange {
            bytes,
            cross_rank_bytes,
        } => json!({
            "kind": "exchange",
            "bytes": bytes,
            "cross_rank_bytes": cross_rank_bytes,
        }),
    };
    if let (Value::Object(a), Value::Object(b)) = (&mut v, extra) {
        a.extend(b);
    }
    v
}

fn counters_json(c: &LaunchCounters) -> Value {
    let s = &c.stats;
    json!({
        "gm_read_bytes": s.gm_read_bytes,
        "gm_write_bytes": s.gm_write_bytes,
        "gm_distinct_read_bytes": s.gm_distinct_read_bytes,
        "gm_distinct_write_bytes": s.gm_distinct_write_bytes,
        "gm_min_read_bytes": s.gm_min_read_bytes,
        "gm_min_write_bytes": s.gm_min_write_bytes,
        "scalar_gm_reads": s.scalar_gm_reads,
        "scalar_gm_writes": s.scalar_gm_writes,
        "mac_bf16": s.mac_bf16,
        "mac_f16": s.mac_f16,
        "mac_f32": s.mac_f32,
        "mac_i8": s.mac_i8,
        "vec_elem_ops": s.vec_elem_ops,
        "peak_ub": s.peak_ub,
        "peak_l1": s.peak_l1,
        "peak_l0a": s.peak_l0a,
        "peak_l0b": s.peak_l0b,
        "peak_l0c": s.peak_l0c,
        "args": c.args.iter().map(|a| json!({
            "name": a.name,
            "read_bytes": a.read_bytes,
            "write_bytes": a.write_bytes,
            "distinct_read_bytes": a.distinct_read_bytes,
            "distinct_write_bytes": a.distinct_write_bytes,
            "min_read_bytes": a.min_read_bytes,
            "min_write_bytes": a.min_write_bytes,
        })).collect::<Vec<_>>(),
    })
}
