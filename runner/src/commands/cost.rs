//! `cost`: one sim run's per-launch figures, roofline and modeled device time.

use std::path::PathBuf;

use clap::Args;
use harness::backend::BackendKind;
use harness::kernel_library::Checks;

use super::{devices, prepare, target};
use crate::cases::{self, Choice, Source};
use crate::layer::secs;
use crate::modeled::Timeline;
use crate::stop::Stop;
use crate::{launch_plot, trace};

#[derive(Args)]
pub struct CostArgs {
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

pub fn cost(a: CostArgs, verbose: bool) -> Result<u8, Stop> {
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
        ordered: true,
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
    crate::cost::print(&out.record, timeline.as_ref(), 0, c);
    println!("sim wall time {}", secs(out.record.total()));
    if let Some(path) = &a.report {
        crate::cost::write_report(path, plan.name(), &out.record, timeline.as_ref(), 0, c)?;
        println!("report: {}", path.display());
    }
    if let (Some(path), Some(t)) = (&a.trace, &timeline) {
        trace::write(path, plan.name(), t)?;
        println!("trace: {}", path.display());
    }
    if let Some(path) = &a.plot {
        launch_plot::write(path, plan.name(), &crate::cost::launches(&out.record, 0, c))
            .map_err(|e| Stop::usage(format!("--plot {e}")))?;
        println!("plot: {}", path.display());
    }
    Ok(0)
}
