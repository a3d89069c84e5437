//! The cases a command runs: seeded fixtures with the reference CLI's defaults
//! (swa.md §6), or the inputs and expected outputs of a saved case directory.
//! Everything the user chose is checked before anything expensive happens.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use abi::plan::VariantPlan;
use golden::LayerSpec;
use golden::fixtures::{self, DEFAULT_SEED, FixtureOptions, StartPositions};
use golden::io;
use golden::signature::check_inputs;
use golden::tensor::TensorMap;

use crate::stop::Stop;

/// Where a command's inputs come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// One seeded fixture per entry, each checked against the spec.
    Fixtures(Vec<FixtureOptions>),
    /// A saved case, loaded and checked: `in.safetensors` replayed, `out.safetensors`
    /// expected.
    Replay(Box<Case>),
}

/// What the user asked for on the command line.
#[derive(Debug, Clone, Default)]
pub struct Choice {
    pub start_pos: Option<String>,
    pub tokens: Option<usize>,
    pub seed: Option<u64>,
    pub golden_data: Option<PathBuf>,
}

impl Source {
    /// The runs of `choice`: with no start positions and no token count, TP 1 runs once at
    /// capacity and TP > 1 at capacity and capacity − 8 (the reference's defaults); a
    /// scalar start is one request, a list one request per entry; `--tokens` sets the
    /// token count with the default start set.
    pub fn choose(spec: &LayerSpec, plan: &VariantPlan, choice: &Choice) -> Result<Source, Stop> {
        if let Some(dir) = &choice.golden_data {
            if choice.start_pos.is_some() || choice.tokens.is_some() || choice.seed.is_some() {
                return Err(Stop::usage(
                    "--golden-data replays saved inputs: --start-pos, --tokens and --seed do not apply",
                ));
            }
            return Ok(Source::Replay(Box::new(replay(spec, plan, dir)?)));
        }
        let seed = choice.seed.unwrap_or(DEFAULT_SEED);
        let starts = match &choice.start_pos {
            Some(text) => {
                StartPositions::parse(text).map_err(|e| Stop::usage(format!("--start-pos: {e}")))?
            }
            None => StartPositions::Default,
        };
        let cap = plan.deployment.local_t;
        let token_counts: Vec<Option<usize>> = match (choice.tokens, &starts) {
            (Some(t), _) => vec![Some(t)],
            (None, StartPositions::Default) if plan.abi.tp > 1 && cap > 8 => {
                vec![Some(cap), Some(cap - 8)]
            }
            (None, StartPositions::Default) => vec![Some(cap)],
            (None, _) => vec![None],
        };
        let runs = token_counts
            .into_iter()
            .map(|tokens| FixtureOptions {
                seed,
                starts: starts.clone(),
                tokens,
            })
            .collect::<Vec<_>>();
        for opts in &runs {
            check(spec, opts)?;
        }
        Ok(Source::Fixtures(runs))
    }
}

/// The token count of `opts`, checked like the fixtures will (without building them).
fn check(spec: &LayerSpec, opts: &FixtureOptions) -> Result<usize, Stop> {
    let d = &spec.dims;
    let cap = d.local_t();
    let tokens = match (opts.tokens, opts.starts.implied_requests()) {
        (Some(t), Some(n)) if t != n * d.seq => {
            return Err(Stop::usage(format!(
                "--tokens {t} does not match {n} start position(s) × {} tokens",
                d.seq
            )));
        }
        (Some(t), _) => {
            if t == 0 || t % 8 != 0 || t % d.seq != 0 || t > cap {
                return Err(Stop::usage(format!(
                    "--tokens {t}: the token count per rank must be a positive multiple of 8 \
                     (and of decode_seq={}) at most the capacity {cap}",
                    d.seq
                )));
            }
            t
        }
        (None, Some(n)) => {
            let t = n * d.seq;
            if t > cap {
                return Err(Stop::usage(format!(
                    "--start-pos: {n} requests × {} tokens = {t} tokens exceed the per-rank capacity {cap} ({} requests)",
                    d.seq,
                    cap / d.seq
                )));
            }
            t
        }
        (None, None) => cap,
    };
    // Name where a bad start came from: the user's list, or the layer's default set.
    let source = match opts.starts {
        StartPositions::Default => "the default start set",
        _ => "--start-pos",
    };
    opts.starts
        .resolve(spec, tokens / d.seq)
        .map_err(|e| Stop::usage(format!("{source}: {e}")))?;
    Ok(tokens)
}

/// One case, ready to run.
#[derive(Debug, Clone)]
pub struct Case {
    /// e.g. `t=248 per rank (31 requests), default starts, seed 20260819`.
    pub label: String,
    pub inputs: TensorMap,
    /// Saved outputs of a replay; `None`: compute the golden.
    pub expected: Option<TensorMap>,
    /// Stored in a saved case's header.
    pub metadata: BTreeMap<String, String>,
    /// Things worth a line of output (window and state rows aliased by this step's writes).
    pub notes: Vec<String>,
}

/// The cases of `source`, built one at a time (FLASH fixtures are large).
pub fn cases<'a>(
    spec: &'a LayerSpec,
    plan: &'static VariantPlan,
    source: &'a Source,
) -> Box<dyn Iterator<Item = Result<Case, Stop>> + 'a> {
    match source {
        Source::Fixtures(runs) => Box::new(runs.iter().map(move |opts| fixture(spec, plan, opts))),
        Source::Replay(case) => Box::new(std::iter::once(Ok(case.as_ref().clone()))),
    }
}

/// How many cases `source` holds.
pub fn count(source: &Source) -> usize {
    match source {
        Source::Fixtures(runs) => runs.len(),
        Source::Replay(_) => 1,
    }
}

fn fixture(
    spec: &LayerSpec,
    plan: &'static VariantPlan,
    opts: &FixtureOptions,
) -> Result<Case, Stop> {
    let f = fixtures::build(spec, opts).map_err(|e| Stop::usage(e.to_string()))?;
    let tokens = opts
        .tokens
        .or(opts.starts.implied_requests().map(|n| n * spec.dims.seq))
        .unwrap_or(spec.dims.local_t());
    let starts = match &opts.starts {
        StartPositions::Default => "default starts".to_string(),
        StartPositions::Scalar(s) => format!("start {s}"),
        StartPositions::List(v) => format!(
            "starts {}",
            v.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
        ),
    };
    let label = format!(
        "t={tokens} per rank ({} requests), {starts}, seed {}",
        tokens / spec.dims.seq,
        opts.seed
    );
    let mut notes = Vec::new();
    if f.window_aliases > 0 {
        notes.push(format!(
            "{} window lanes read a pool row this step overwrote for another position (the reference aliases them the same way)",
            f.window_aliases
        ));
    }
    if f.state_aliases > 0 {
        notes.push(format!(
            "{} pooled state rows are written by another request in the same step (each request sees the writes of the requests before it, as the reference's sequential order does)",
            f.state_aliases
        ));
    }
    let metadata = BTreeMap::from([
        ("variant".to_string(), plan.name().to_string()),
        ("layer".to_string(), plan.abi.layer.to_string()),
        ("tp".to_string(), plan.abi.tp.to_string()),
        ("tokens".to_string(), tokens.to_string()),
        ("seed".to_string(), opts.seed.to_string()),
        ("starts".to_string(), starts),
    ]);
    Ok(Case {
        label,
        inputs: f.inputs,
        expected: None,
        metadata,
        notes,
    })
}

fn replay(spec: &LayerSpec, plan: &VariantPlan, dir: &Path) -> Result<Case, Stop> {
    let saved = io::load_case(dir)
        .map_err(|e| Stop::usage(format!("--golden-data {}: {e}", dir.display())))?;
    let extent = check_inputs(spec, &saved.inputs).map_err(|e| {
        Stop::usage(format!(
            "--golden-data {} does not match {} ({}): {e}",
            dir.display(),
            plan.name(),
            plan.spec.path
        ))
    })?;
    Ok(Case {
        label: format!(
            "t={} per rank ({} requests), replay of {}",
            extent.tokens,
            extent.requests,
            dir.display()
        ),
        inputs: saved.inputs,
        expected: Some(saved.outputs),
        metadata: saved.metadata,
        notes: Vec::new(),
    })
}
