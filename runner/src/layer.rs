//! One case of a layer, judged: the plan on its backend and the golden (or the saved
//! outputs) on the same inputs, every output compared with its reference comparator.

use std::path::Path;
use std::time::{Duration, Instant};

use golden::compare::{Report, judge_layer};
use golden::tensor::TensorMap;
use golden::{self, LayerSpec, Traced};
use harness::runtime::{RunOutput, RunRecord, Runtime};

use crate::cases::Case;
use crate::plots;
use crate::stop::Stop;

/// The outcome of one case.
#[derive(Debug, Clone)]
pub struct CaseResult {
    pub label: String,
    /// One per compared output (x_out, then the pools).
    pub reports: Vec<Report>,
    /// Outputs written beyond their runtime extent.
    pub stray: Vec<String>,
    pub record: RunRecord,
    /// Time of the golden; `None` when the expected outputs were loaded.
    pub golden: Option<Duration>,
    pub notes: Vec<String>,
}

impl CaseResult {
    pub fn pass(&self) -> bool {
        self.reports.iter().all(|r| r.pass) && self.stray.is_empty()
    }
}

/// The expected outputs of `case`: saved (with no trace), or the golden's (timed).
pub fn expected(spec: &LayerSpec, case: &Case) -> Result<(Traced, Option<Duration>), Stop> {
    match &case.expected {
        Some(saved) => Ok((
            Traced {
                outputs: saved.clone(),
                trace: TensorMap::new(),
            },
            None,
        )),
        None => {
            let start = Instant::now();
            let out = golden::run_traced(spec, &case.inputs).map_err(golden_failed)?;
            Ok((out, Some(start.elapsed())))
        }
    }
}

fn golden_failed(e: golden::GoldenError) -> Stop {
    Stop::fail(format!("golden: {e}"))
}

/// Runs `case` on `runtime` and compares with `want`.
pub fn judge(
    runtime: &Runtime,
    spec: &LayerSpec,
    case: &Case,
    want: &Traced,
    golden: Option<Duration>,
) -> Result<CaseResult, Stop> {
    verdict(spec, case, runtime.run(&case.inputs)?, want, golden)
}

/// The judgement of one run of `case` against `want`.
pub fn verdict(
    spec: &LayerSpec,
    case: &Case,
    out: RunOutput,
    want: &Traced,
    golden: Option<Duration>,
) -> Result<CaseResult, Stop> {
    let judged = judge_layer(spec, &case.inputs, (&out.outputs, &out.probes), want)
        .map_err(golden_failed)?;
    Ok(CaseResult {
        label: case.label.clone(),
        reports: judged.reports,
        stray: out.stray,
        record: out.record,
        golden,
        notes: [case.notes.clone(), judged.notes].concat(),
    })
}

/// Seconds, to the millisecond.
pub fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

/// The lines of a case for people: one per output (with the worst elements on failure),
/// stray writes, per-stage wall times, totals.
pub fn print(result: &CaseResult) {
    for n in &result.notes {
        println!("  note: {n}");
    }
    for r in &result.reports {
        if r.pass {
            println!("  {r}");
        } else {
            println!("  {}", r.detail().replace('\n', "\n  "));
            if let Some(s) = &r.spread {
                println!("    where: {}", s.describe());
            }
        }
    }
    for s in &result.stray {
        println!("  FAIL  {s}");
    }
    let stages: Vec<String> = result
        .record
        .stage_times()
        .iter()
        .map(|s| format!("{} {}", s.stage, secs(s.wall)))
        .collect();
    println!("  stages: {}", stages.join(" · "));
    let r = &result.record;
    let golden = match result.golden {
        Some(g) => format!("; golden {}", secs(g)),
        None => String::new(),
    };
    println!(
        "  total {} (setup {}, steps {}, read-back {}){golden}",
        secs(r.total()),
        secs(r.setup),
        secs(r.execute),
        secs(r.readback)
    );
}

/// Writes the failure pictures of `result` into `dir` (every output with `all`, else the
/// failing ones), named `<stem>_<output>.{heatmap,histogram}.svg`; prints their names.
pub fn draw(result: &CaseResult, dir: &Path, stem: &str, all: bool) -> Result<(), Stop> {
    for r in result.reports.iter().filter(|r| all || !r.pass) {
        let written = plots::write(dir, &format!("{stem}_{}", r.output), r)
            .map_err(|e| Stop::fail(format!("failure pictures: {e}")))?;
        if let Some(p) = written {
            println!(
                "  pictures of {}: {} {}",
                r.output,
                p.heatmap.display(),
                p.histogram.display()
            );
        }
    }
    Ok(())
}
