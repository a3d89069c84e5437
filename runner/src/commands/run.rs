//! `run`: a layer end to end on a backend, every output compared with the golden.

use std::path::PathBuf;

use clap::Args;
use golden::io;
use harness::backend::{BackendKind, BackendOptions};
use harness::kernel_library::Checks;
use harness::runtime::RuntimeError;

use super::{Placement, devices, npu_modes, nth_file, prepare, target};
use crate::cases::{self, Choice, Source};
use crate::layer;
use crate::modeled::{self, Timeline};
use crate::stop::Stop;
use crate::{report, trace, variant};

#[derive(Args)]
pub struct RunArgs {
    /// The layer kind of the spec: swa, hca or csa (the kinds the generated plans implement).
    #[arg(long)]
    layer: String,
    /// TP degree: one rank per device (threads on the sim).
    #[arg(long, default_value_t = 2)]
    tp: usize,
    /// The spec whose generated plan runs (default specs/<layer>.yaml).
    #[arg(long, value_name = "FILE")]
    spec: Option<PathBuf>,
    #[command(flatten)]
    placement: Placement,
    /// One start (batch 1) or one per request (every rank gets the list). Default: the
    /// reference's start set of the layer tiled over the requests, each start clipped to the
    /// spec's max_positions − decode_seq.
    #[arg(long = "start-pos", value_name = "N|N,N,…", allow_hyphen_values = true)]
    start_pos: Option<String>,
    /// Tokens per rank (a multiple of 8, at most the capacity) with the default starts.
    #[arg(long, value_name = "N")]
    tokens: Option<usize>,
    /// Fixture seed (rank r draws with seed + r).
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Write in.safetensors / out.safetensors (inputs and golden outputs) of the run
    /// (of each run in DIR/t<tokens>/ when there are several).
    #[arg(long = "save-data", value_name = "DIR")]
    save_data: Option<PathBuf>,
    /// Replay DIR/in.safetensors and compare with DIR/out.safetensors instead of the golden.
    #[arg(long = "golden-data", value_name = "DIR")]
    golden_data: Option<PathBuf>,
    /// Write failure pictures of every output into DIR (SVG heat-maps of the bad elements and
    /// histograms of the error against the threshold). Without it, a failing output's
    /// pictures go to target/failure-plots/<variant>/.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Write every figure, stage and launch timing and sim counter as JSON.
    #[arg(long, value_name = "FILE.json")]
    report: Option<PathBuf>,
    /// Turn off the sim's ordering checker (pipe hazards, cross-core races): faster, for
    /// speed measurements only; a run without it says nothing about synchronisation (nor
    /// models time: the timeline rides on the checker).
    #[arg(long = "no-hazard-check")]
    no_hazard_check: bool,
    /// Write the modeled timeline as a Chrome/Perfetto trace (open in ui.perfetto.dev): per
    /// rank a stream track and one track per core and pipe. With several runs, run i > 1
    /// goes to FILE with `.run<i>` before the extension.
    #[arg(long, value_name = "FILE.json")]
    trace: Option<PathBuf>,
    /// npu: synchronise the stream after every launch and collective (a failure then names
    /// its step at once) instead of once per run after the last step.
    #[arg(long = "sync-each")]
    sync_each: bool,
    /// npu: capture the first run's step as an ACL graph (aclmdlRICaptureBegin/End) and
    /// replay it (aclmdlRIExecuteAsync) for every later run, on the same device buffers,
    /// into which each run uploads its inputs first. Needs CANN 8.1.RC1 or later.
    #[arg(long)]
    graph: bool,
}

pub fn run(a: RunArgs, verbose: bool) -> Result<u8, Stop> {
    let (plan, spec) = target(&a.layer, a.tp, a.spec.as_deref())?;
    let backend: BackendKind = a.placement.backend.parse().map_err(Stop::usage)?;
    let devices = devices(a.placement.devices.as_deref(), plan.abi.tp)?;
    if a.no_hazard_check && backend != BackendKind::Sim {
        return Err(Stop::usage(
            "--no-hazard-check turns off a check of the sim; the npu backend has none",
        ));
    }
    if a.no_hazard_check && a.trace.is_some() {
        return Err(Stop::usage(
            "--trace draws the modeled timeline, which rides on the ordering checker that --no-hazard-check turns off",
        ));
    }
    let checks = if a.no_hazard_check {
        Checks::UNCHECKED
    } else {
        Checks {
            trace: a.trace.is_some(),
            ..Checks::default()
        }
    };
    npu_modes(backend, a.sync_each, a.graph)?;
    backend
        .create(&devices, BackendOptions::from(checks))
        .available()
        .map_err(|e| Stop::from(RuntimeError::from(e)))?;
    let choice = Choice {
        start_pos: a.start_pos,
        tokens: a.tokens,
        seed: a.seed,
        golden_data: a.golden_data,
    };
    let source = Source::choose(&spec, plan, &choice)?;
    let options = BackendOptions {
        checks,
        sync_each: a.sync_each,
        graph: a.graph,
    };
    let runtime = prepare(plan, backend, &devices, options, verbose)?;
    let total = cases::count(&source);
    let mut results = Vec::with_capacity(total);
    for (i, case) in cases::cases(&spec, plan, &source).enumerate() {
        let case = case?;
        println!(
            "{} ({}) on {backend}, run {}/{total}: {}",
            plan.name(),
            plan.spec.path,
            i + 1,
            case.label
        );
        let (want, golden) = layer::expected(&spec, &case)?;
        if let Some(dir) = &a.save_data {
            let dir = match case.metadata.get("tokens") {
                Some(t) if total > 1 => dir.join(format!("t{t}")),
                _ => dir.clone(),
            };
            io::save_case(&dir, &case.inputs, &want.outputs, &case.metadata)
                .map_err(|e| Stop::usage(format!("--save-data: {e}")))?;
            println!("  saved to {}", dir.display());
        }
        let result = layer::judge(&runtime, &spec, &case, &want, golden)?;
        layer::print(&result);
        if let Some(d) = result.record.device {
            println!(
                "  measured device time {:.1} µs (the device's events, slowest rank; `bench --backend npu` for each step)",
                modeled::us(d)
            );
        }
        if let Some(t) = Timeline::of(&result.record) {
            println!("  {}", t.summary());
            if let Some(path) = &a.trace {
                let path = nth_file(path, i + 1);
                trace::write(&path, plan.name(), &t)?;
                println!("  trace: {}", path.display());
            }
        }
        let stem = format!("{}_run{}", plan.name(), i + 1);
        match &a.plot {
            Some(dir) => layer::draw(&result, dir, &stem, true)?,
            None if !result.pass() => {
                let dir = variant::repo_root()
                    .join("target/failure-plots")
                    .join(plan.name());
                layer::draw(&result, &dir, &stem, false)?;
            }
            None => {}
        }
        results.push(result);
    }
    if let Some(path) = &a.report {
        report::write(path, plan, &backend.to_string(), &results)?;
    }
    let failed = results.iter().filter(|r| !r.pass()).count();
    if failed == 0 {
        println!("PASS: {total} run(s) of {}", plan.name());
        Ok(0)
    } else {
        println!("FAIL: {failed} of {total} run(s) of {}", plan.name());
        Ok(1)
    }
}
