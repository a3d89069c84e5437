//! `bench`: the layer timed on the sim (wall clock, against the golden) or on the npu
//! backend (the device's events, against the modeled time).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use abi::plan::VariantPlan;
use clap::Args;
use golden::LayerSpec;
use harness::backend::{BackendKind, BackendOptions};
use harness::kernel_library::Checks;
use harness::runtime::RuntimeError;

use super::{Placement, devices, npu_modes, prepare, target};
use crate::cases::{self, Case, Choice, Source};
use crate::layer::{self, CaseResult, secs};
use crate::modeled::Timeline;
use crate::stop::Stop;
use crate::{measured, trace};

#[derive(Args)]
pub struct BenchArgs {
    /// The layer kind of the spec: swa, hca or csa.
    #[arg(long, default_value = "swa")]
    layer: String,
    /// TP degree: one rank per device.
    #[arg(long, default_value_t = 2)]
    tp: usize,
    /// The spec whose generated plan runs (default specs/<layer>.yaml).
    #[arg(long, value_name = "FILE")]
    spec: Option<PathBuf>,
    #[command(flatten)]
    placement: Placement,
    /// sim: repetitions of each side. npu: timed steps.
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// npu: untimed steps first (kernel loading, caches, the graph's capture); default 2.
    #[arg(long, value_name = "N")]
    warmup: Option<usize>,
    /// npu: replay a captured graph (see `run --graph`); the device then times the layer
    /// as a whole, not each step.
    #[arg(long)]
    graph: bool,
    /// npu: write the last timed step's measured launches and collectives as a
    /// Chrome/Perfetto trace, on the modeled trace's track layout (a stream track per rank).
    #[arg(long, value_name = "FILE.json")]
    trace: Option<PathBuf>,
    /// Tokens per rank (default: the capacity).
    #[arg(long, value_name = "N")]
    tokens: Option<usize>,
}

pub fn bench(a: BenchArgs, verbose: bool) -> Result<u8, Stop> {
    if a.reps == 0 {
        return Err(Stop::usage("--reps must be at least 1"));
    }
    let backend: BackendKind = a.placement.backend.parse().map_err(Stop::usage)?;
    npu_modes(backend, false, a.graph)?;
    if backend == BackendKind::Sim {
        let npu_only = [
            ("-d/--devices", a.placement.devices.is_some()),
            ("--trace", a.trace.is_some()),
            ("--warmup", a.warmup.is_some()),
        ];
        if let Some((flag, _)) = npu_only.iter().find(|(_, given)| *given) {
            return Err(Stop::usage(format!(
                "{flag} is an option of bench --backend npu (the sim's bench times wall clock; `cost --trace` draws the modeled timeline)"
            )));
        }
    }
    let (plan, spec) = target(&a.layer, a.tp, a.spec.as_deref())?;
    if backend == BackendKind::Npu {
        return bench_npu(a, plan, &spec, verbose);
    }
    let built = Instant::now();
    let ranks = devices(None, plan.abi.tp)?;
    let checked = prepare(plan, BackendKind::Sim, &ranks, Checks::default(), verbose)?;
    let untimed = Checks {
        timeline: false,
        ..Checks::default()
    };
    let untimed = prepare(plan, BackendKind::Sim, &ranks, untimed, verbose)?;
    let unchecked = prepare(plan, BackendKind::Sim, &ranks, Checks::UNCHECKED, verbose)?;
    let built = built.elapsed();
    let case = bench_case(&spec, plan, a.tokens)?;
    println!(
        "bench {} ({}): {}, {} repetition(s); kernels built or found in {}",
        plan.name(),
        plan.spec.path,
        case.label,
        a.reps,
        secs(built)
    );
    // Each repetition times the checked sim (with its timeline), the checked sim without
    // the timeline (the baseline of the timeline's overhead), the unchecked sim (the
    // baseline of the checker's) and the golden, in that order, on the same inputs.
    let (mut sim, mut plain, mut bare, mut gold) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut stage_walls: Vec<Vec<(&'static str, Duration)>> = Vec::new();
    let mut verdict: Option<CaseResult> = None;
    for rep in 0..a.reps {
        let start = Instant::now();
        let out = checked.run(&case.inputs)?;
        sim.push(start.elapsed());
        stage_walls.push(
            out.record
                .stage_times()
                .iter()
                .map(|s| (s.stage, s.wall))
                .collect(),
        );
        let start = Instant::now();
        untimed.run(&case.inputs)?;
        plain.push(start.elapsed());
        let start = Instant::now();
        unchecked.run(&case.inputs)?;
        bare.push(start.elapsed());
        let (want, golden) = layer::expected(&spec, &case)?;
        gold.push(golden.expect("a bench case is a fixture: the golden runs"));
        if rep == 0 {
            verdict = Some(layer::verdict(&spec, &case, out, &want, golden)?);
        }
    }
    let line = |name: &str, v: &[Duration]| {
        println!(
            "  {name} median {}  (min {}, max {})",
            secs(measured::median(v)),
            secs(*v.iter().min().expect("reps ≥ 1")),
            secs(*v.iter().max().expect("reps ≥ 1"))
        );
    };
    line("sim (checked, timeline)", &sim);
    line("sim (checked)          ", &plain);
    line("sim (unchecked)        ", &bare);
    line("golden                 ", &gold);
    let ratio = |x: &[Duration], y: &[Duration]| {
        measured::median(x).as_secs_f64() / measured::median(y).as_secs_f64().max(1e-9)
    };
    println!(
        "  timeline overhead: {:.2}× · checker overhead: {:.2}× · sim / golden: {:.2}×",
        ratio(&sim, &plain),
        ratio(&plain, &bare),
        ratio(&sim, &gold)
    );
    let stages: Vec<String> = stage_walls[0]
        .iter()
        .map(|(stage, _)| {
            let walls: Vec<Duration> = stage_walls
                .iter()
                .filter_map(|r| r.iter().find(|(s, _)| s == stage).map(|(_, w)| *w))
                .collect();
            format!("{stage} {}", secs(measured::median(&walls)))
        })
        .collect();
    println!("  stage medians (checked): {}", stages.join(" · "));
    Ok(print_verdict("repetition 1", verdict))
}

/// The one case a bench times: default starts at `tokens` per rank (default the capacity).
fn bench_case(
    spec: &LayerSpec,
    plan: &'static VariantPlan,
    tokens: Option<usize>,
) -> Result<Case, Stop> {
    let choice = Choice {
        tokens: Some(tokens.unwrap_or(plan.deployment.local_t)),
        ..Choice::default()
    };
    let source = Source::choose(spec, plan, &choice)?;
    cases::cases(spec, plan, &source).next().expect("one case")
}

/// Prints the golden's verdict on `which` run and returns the exit code.
fn print_verdict(which: &str, verdict: Option<CaseResult>) -> u8 {
    let verdict = verdict.expect("reps ≥ 1");
    println!("  verdict of {which}:");
    layer::print(&verdict);
    if verdict.pass() { 0 } else { 1 }
}

/// `bench --backend npu`: warm-up and timed steps on the device, against the modeled time.
fn bench_npu(
    a: BenchArgs,
    plan: &'static VariantPlan,
    spec: &LayerSpec,
    verbose: bool,
) -> Result<u8, Stop> {
    let devices = devices(a.placement.devices.as_deref(), plan.abi.tp)?;
    let options = BackendOptions {
        graph: a.graph,
        ..BackendOptions::default()
    };
    BackendKind::Npu
        .create(&devices, options)
        .available()
        .map_err(|e| Stop::from(RuntimeError::from(e)))?;
    let case = bench_case(spec, plan, a.tokens)?;
    let warmup = a.warmup.unwrap_or(2);
    let built = Instant::now();
    let npu = prepare(plan, BackendKind::Npu, &devices, options, verbose)?;
    let built = built.elapsed();
    let mode = if a.graph {
        "graph replay"
    } else {
        "stream order"
    };
    println!(
        "bench {} ({}) on npu ({mode}, devices {devices:?}): {}, {} warm-up + {} timed step(s); kernels built or found in {}",
        plan.name(),
        plan.spec.path,
        case.label,
        warmup,
        a.reps,
        secs(built)
    );
    // The modeled side: one sim run of the same case with its timeline.
    let sim = prepare(plan, BackendKind::Sim, &devices, Checks::default(), verbose)?;
    let modeled_run = sim.run(&case.inputs)?;
    let modeled = Timeline::of(&modeled_run.record);
    for _ in 0..warmup {
        npu.run(&case.inputs)?;
    }
    let mut timed = Vec::with_capacity(a.reps);
    let mut verdict = None;
    for rep in 0..a.reps {
        let out = npu.run(&case.inputs)?;
        timed.push(out.record.clone());
        if rep == 0 {
            let (want, golden) = layer::expected(spec, &case)?;
            verdict = Some(layer::verdict(spec, &case, out, &want, golden)?);
        }
    }
    let rows = measured::rows(&timed, modeled.as_ref());
    measured::print(&rows, measured::layer(&timed), modeled.as_ref());
    if a.graph {
        println!(
            "  (a replayed graph is timed as a whole: run without --graph for each step's time)"
        );
    }
    if let Some(path) = &a.trace {
        let last = timed.last().expect("reps ≥ 1");
        trace::write_measured(path, plan.name(), last)?;
        println!("  trace: {}", path.display());
    }
    Ok(print_verdict("timed step 1", verdict))
}
