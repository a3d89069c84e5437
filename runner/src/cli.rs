//! The runner's command line: `run`, `cost` and `bench` (`../shared/DESIGN.md` §10; `cargo xtask run |
//! cost | bench` forward here). Bad arguments exit 2 with one line saying why; a failed
//! comparison exits 1.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use abi::plan::VariantPlan;
use clap::{Args, Parser, Subcommand};
use golden::compare::layer_probes;
use golden::io;
use golden::{self, LayerSpec};
use harness::backend::{BackendKind, BackendOptions, KernelSources, Progress};
use harness::kernel_library::Checks;
use harness::runtime::{Runtime, RuntimeError, RuntimeOptions};

use crate::cases::{self, Choice, Source};
use crate::layer::{self, CaseResult, secs};
use crate::modeled::Timeline;
use crate::stop::Stop;
use crate::{cost, launch_plot, measured, modeled, progress, report, trace, variant};

#[derive(Parser)]
#[command(
    name = "runner",
    bin_name = "cargo xtask",
    about = "Run generated decode layers on a backend and compare them with the golden"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Also a line per kernel launch per rank (progress is a bar in a terminal, a few plain
    /// lines per run otherwise).
    #[arg(short, long, global = true)]
    verbose: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Run a layer end to end and compare every output with the golden.
    ///
    /// Without --start-pos and --tokens: TP 1 runs once at capacity, TP > 1 at capacity
    /// and capacity − 8 tokens per rank (the reference's defaults). Exit codes: 0 every
    /// output passed, 1 a comparison or a kernel failed, 2 bad arguments.
    Run(RunArgs),
    /// One sim run (at capacity, default starts; or --start-pos): per kernel launch FLOPs,
    /// GM bytes moved against the minimum, scalar GM accesses, roofline time on the plan's
    /// chip, and the modeled device time of the sim's timeline with what bounds it (README
    /// "Modeled time": the model, its constants and their sources).
    Cost(CostArgs),
    /// Time the layer. On the sim (the default): sim wall time (not device time: see
    /// `cost`) with the ordering checker and timeline, with the checker only, and with
    /// neither, against the golden on the same inputs (medians). With --backend npu: the
    /// device's own time from events around every launch and collective, over --warmup
    /// untimed and --reps timed steps, per step of rank 0 and per layer (medians), next to
    /// the modeled time of a sim run of the same case and their ratio.
    Bench(BenchArgs),
}

#[derive(Args)]
struct RunArgs {
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

/// Where a layer runs.
#[derive(Args)]
struct Placement {
    /// sim (the CPU model) or npu (CANN; `bench` then measures the device's own time).
    #[arg(long, default_value = "sim")]
    backend: String,
    /// npu: device ids, one per rank (default 0,…,TP−1).
    #[arg(
        short = 'd',
        long = "devices",
        value_name = "0,1,…",
        allow_hyphen_values = true
    )]
    devices: Option<String>,
}

#[derive(Args)]
struct CostArgs {
    /// The layer kind of the spec: swa, hca or csa (the kinds the generated plans implement).
    #[arg(long)]
    layer: String,
    /// TP degree (the table shows rank 0).
    #[arg(long, default_value_t = 2)]
    tp: usize,
    /// The spec whose generated plan runs (default specs/<layer>.yaml).
    #[arg(long, value_name = "FILE")]
    spec: Option<PathBuf>,
    /// One start (batch 1) or one per request, instead of the capacity with default starts.
    #[arg(long = "start-pos", value_name = "N|N,N,…", allow_hyphen_values = true)]
    start_pos: Option<String>,
    /// Tokens per rank with the default starts (default: the capacity).
    #[arg(long, value_name = "N")]
    tokens: Option<usize>,
    /// Write rank 0's per-launch figures (stage, blocks, roofline µs, modeled µs, bound) and
    /// the layer totals as JSON.
    #[arg(long, value_name = "FILE.json")]
    report: Option<PathBuf>,
    /// Write the modeled timeline as a Chrome/Perfetto trace (see `run --trace`).
    #[arg(long, value_name = "FILE.json")]
    trace: Option<PathBuf>,
    /// Draw rank 0's modeled and roofline time per launch (SVG).
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

#[derive(Args)]
struct BenchArgs {
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

/// Runs the command line `args` (program name first); returns the exit code.
pub fn main(args: impl IntoIterator<Item = OsString>) -> u8 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            print!("{e}");
            return 0;
        }
        Err(e) => {
            eprintln!("{}", one_line(&e.render().to_string()));
            return 2;
        }
    };
    let v = cli.verbose;
    let outcome = match cli.command {
        Command::Run(a) => run(a, v),
        Command::Cost(a) => cost_command(a, v),
        Command::Bench(a) => bench(a, v),
    };
    match outcome {
        Ok(code) => code,
        Err(stop) => {
            eprintln!("error: {}", stop.message);
            stop.code
        }
    }
}

/// clap's multi-line error as one line (without the usage and help pointers).
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn cwd() -> PathBuf {
    std::env::current_dir().unwrap_or_default()
}

/// The device ids of `-d` (default 0,…,tp−1): integers, no duplicates, one per rank.
pub fn devices(text: Option<&str>, tp: usize) -> Result<Vec<u32>, Stop> {
    let Some(text) = text else {
        return Ok((0..tp as u32).collect());
    };
    let mut ids = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let id: u32 = part.parse().map_err(|_| {
            Stop::usage(format!(
                "-d/--devices: `{part}` is not a device id (a non-negative integer)"
            ))
        })?;
        if ids.contains(&id) {
            return Err(Stop::usage(format!(
                "-d/--devices: device {id} is listed twice"
            )));
        }
        ids.push(id);
    }
    if ids.len() != tp {
        return Err(Stop::usage(format!(
            "-d/--devices lists {} device(s) but --tp {tp} needs one per rank",
            ids.len()
        )));
    }
    Ok(ids)
}

/// The plan's kernels built on `backend`, after checking the plan can run at all.
fn prepare(
    plan: &'static VariantPlan,
    backend: BackendKind,
    devices: &[u32],
    options: impl Into<BackendOptions>,
    verbose: bool,
) -> Result<Runtime, Stop> {
    let backend = backend.create(devices, options.into());
    let spec = variant::layer_spec(plan).map_err(Stop::usage)?;
    let options = RuntimeOptions {
        progress: Progress::to(progress::stderr(plan.name(), verbose)),
        probes: layer_probes(&spec),
    };
    let sources = KernelSources::in_repo(&variant::repo_root());
    Ok(Runtime::prepare(plan, backend.as_ref(), &sources, options)?)
}

/// Fails early (before fixtures and builds) when the plan has stages without kernels.
fn require_kernels(plan: &'static VariantPlan) -> Result<(), Stop> {
    if plan.missing.is_empty() {
        Ok(())
    } else {
        Err(RuntimeError::MissingStages {
            variant: plan.name(),
            stages: plan.missing.to_vec(),
        }
        .into())
    }
}

fn target(
    layer: &str,
    tp: usize,
    spec: Option<&Path>,
) -> Result<(&'static VariantPlan, LayerSpec), Stop> {
    let plan = variant::select(layer, tp, spec, &cwd()).map_err(Stop::usage)?;
    // A draft's stages without kernels first: its dims may be ones the golden refuses too.
    require_kernels(plan)?;
    let spec = variant::layer_spec(plan).map_err(Stop::fail)?;
    Ok((plan, spec))
}

fn run(a: RunArgs, verbose: bool) -> Result<u8, Stop> {
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

fn cost_command(a: CostArgs, verbose: bool) -> Result<u8, Stop> {
    let (plan, spec) = target(&a.layer, a.tp, a.spec.as_deref())?;
    let source = Source::choose(
        &spec,
        plan,
        &Choice {
            tokens: a
                .tokens
                .or(a.start_pos.is_none().then_some(plan.deployment.local_t)),
            start_pos: a.start_pos,
            ..Choice::default()
        },
    )?;
    let checks = Checks {
        trace: a.trace.is_some(),
        ..Checks::default()
    };
    let runtime = prepare(
        plan,
        BackendKind::Sim,
        &devices(None, plan.abi.tp)?,
        checks,
        verbose,
    )?;
    let case = cases::cases(&spec, plan, &source)
        .next()
        .expect("one case")?;
    let out = runtime.run(&case.inputs)?;
    let c = &plan.chip;
    println!(
        "{} ({}): one sim run, {}; rank 0 of {}. Roofline on {}: cube bf16 {:.1} TFLOPS, int8 {:.1} TOPS, \
         fp32 {:.1} TFLOPS, vector {:.2} T op/s, HBM {:.2} TB/s",
        plan.name(),
        plan.spec.path,
        case.label,
        plan.abi.tp,
        c.name,
        c.cube_bf16_flops / 1e12,
        c.cube_int8_ops / 1e12,
        c.cube_f32_flops / 1e12,
        c.vector_elem_ops / 1e12,
        c.hbm_bytes_per_s / 1e12
    );
    let timeline = Timeline::of(&out.record);
    cost::print(&out.record, timeline.as_ref(), 0, c);
    println!("sim wall time {}", secs(out.record.total()));
    if let Some(path) = &a.report {
        cost::write_report(path, plan.name(), &out.record, timeline.as_ref(), 0, c)?;
        println!("report: {}", path.display());
    }
    if let (Some(path), Some(t)) = (&a.trace, &timeline) {
        trace::write(path, plan.name(), t)?;
        println!("trace: {}", path.display());
    }
    if let Some(path) = &a.plot {
        launch_plot::write(path, plan.name(), &cost::launches(&out.record, 0, c))
            .map_err(|e| Stop::usage(format!("--plot {e}")))?;
        println!("plot: {}", path.display());
    }
    Ok(0)
}

/// Refuses the npu backend's execution modes elsewhere and together.
fn npu_modes(backend: BackendKind, sync_each: bool, graph: bool) -> Result<(), Stop> {
    if sync_each && backend != BackendKind::Npu {
        return Err(Stop::usage(
            "--sync-each synchronises the npu backend's stream after every step; the sim has no stream",
        ));
    }
    if graph && backend != BackendKind::Npu {
        return Err(Stop::usage(
            "--graph replays a captured ACL graph on the npu backend; the sim runs each launch itself",
        ));
    }
    if graph && sync_each {
        return Err(Stop::usage(
            "--graph and --sync-each exclude each other: a replayed graph runs its steps without the host",
        ));
    }
    Ok(())
}

fn bench(a: BenchArgs, verbose: bool) -> Result<u8, Stop> {
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
    let source = Source::choose(
        &spec,
        plan,
        &Choice {
            tokens: Some(a.tokens.unwrap_or(plan.deployment.local_t)),
            ..Choice::default()
        },
    )?;
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
    let case = cases::cases(&spec, plan, &source)
        .next()
        .expect("one case")?;
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
    let verdict = verdict.expect("reps ≥ 1");
    println!("  verdict of repetition 1:");
    layer::print(&verdict);
    Ok(if verdict.pass() { 0 } else { 1 })
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
    let source = Source::choose(
        spec,
        plan,
        &Choice {
            tokens: Some(a.tokens.unwrap_or(plan.deployment.local_t)),
            ..Choice::default()
        },
    )?;
    let case = cases::cases(spec, plan, &source)
        .next()
        .expect("one case")?;
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
    let verdict = verdict.expect("reps ≥ 1");
    println!("  verdict of timed step 1:");
    layer::print(&verdict);
    Ok(if verdict.pass() { 0 } else { 1 })
}

/// `path` for run 1, and `path` with `.run<n>` before its extension for run n > 1.
fn nth_file(path: &Path, n: usize) -> PathBuf {
    if n == 1 {
        return path.to_path_buf();
    }
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.run{n}.{}", ext.to_string_lossy()),
        None => format!("{stem}.run{n}"),
    };
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_lists_follow_the_reference_cli_rules() {
        assert_eq!(devices(None, 2).unwrap(), [0, 1]);
        assert_eq!(devices(Some("3, 5"), 2).unwrap(), [3, 5]);
        for (text, why) in [
            ("0,x", "`x` is not a device id"),
            ("0,-1", "`-1` is not a device id"),
            ("1,1", "device 1 is listed twice"),
            ("0", "lists 1 device(s) but --tp 2"),
        ] {
            let e = devices(Some(text), 2).unwrap_err();
            assert_eq!(e.code, 2);
            assert!(e.message.contains(why), "{text}: {}", e.message);
        }
    }

    #[test]
    fn clap_errors_become_one_line() {
        let e = Cli::try_parse_from(["runner", "run", "--layer", "swa", "--bogus"])
            .err()
            .unwrap();
        let line = one_line(&e.render().to_string());
        assert!(!line.contains('\n'));
        assert!(line.contains("--bogus"), "{line}");
    }
}
