//! What gen accepts runs: random tilings of the small specs, each either refused by the
//! generator with a located error or run as a whole layer on the sim and judged against
//! the golden (which does not depend on the tiling). A draw re-tiles one or two stages of
//! swa_mini, hca_small or csa_small at one of their TP degrees, every key of a stage's
//! tiling from a set of plausible values (see [`value`]); the run is seeded.
//!
//! `TILING_DRAWS` (default 30) and `TILING_SEED` (default [`SEED`]) set the run; the
//! summary (drawn, refused, run) prints with `--nocapture`. A failure lists each drawn
//! tiling as the YAML to paste into the spec, with what went wrong.

mod layer_checks;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use abi::TensorDecl;
use abi::plan::{Kernel, VariantPlan};
use golden::compare::judge_layer;
use golden::fixtures::{Fixture, StartPositions};
use golden::{LayerSpec, Traced};
use harness::backend::KernelSources;
use kernelgen::plan::TensorPlan;
use kernelgen::stages::Spec;
use kernelgen::variant::Variant;
use layer_checks::{prepare_from, seeded};
use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use runner::variant;

const SPECS: [&str; 3] = [
    "specs/test/swa_mini.yaml",
    "specs/test/hca_small.yaml",
    "specs/test/csa_small.yaml",
];

const SEED: u64 = 20_261_203;

/// The values a tiling key is drawn from: mostly the powers of two the specs use (which
/// divide their power-of-two dims), one draw in eight a neighbour that some rules refuse.
fn value(rng: &mut ChaCha8Rng, key: &str) -> usize {
    let (usual, unusual): (&[usize], &[usize]) = match key {
        "tokens" | "rows" => (&[1, 2, 4, 8], &[3, 16]),
        "m" | "n" | "k" | "kv_rows" | "key_rows" | "d" => (&[16, 32, 64, 128, 256], &[48, 96, 512]),
        "cols" => (&[16, 32, 64, 128, 256], &[8, 24, 512]),
        "channels" => (&[8, 16, 32, 64, 128], &[12, 256]),
        "heads" => (&[8, 16], &[4, 32]),
        other => panic!("tiling key `{other}` has no values to draw from: add them here"),
    };
    let from = if rng.random_ratio(1, 8) {
        unusual
    } else {
        usual
    };
    *from.choose(rng).unwrap()
}

/// One stage's `tiling: { … }` line in a spec's text.
struct TilingLine {
    stage: String,
    line: usize,
    keys: Vec<String>,
}

/// The tiling line of every stage of `text`, in order (each stage's `- <kind>:` entry is
/// followed by its one-line `tiling: { key: value, … }`).
fn tiling_lines(path: &str, text: &str) -> Vec<TilingLine> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(stage) = l
            .trim()
            .strip_prefix("- ")
            .and_then(|s| s.strip_suffix(':'))
        else {
            continue;
        };
        let (line, body) = lines[i + 1..]
            .iter()
            .enumerate()
            .find_map(|(j, l)| {
                let body = l.trim().strip_prefix("tiling: {")?.strip_suffix('}')?;
                Some((i + 1 + j, body))
            })
            .unwrap_or_else(|| panic!("{path}: stage {stage} has no one-line tiling"));
        let keys = body
            .split(',')
            .map(|kv| kv.split(':').next().unwrap().trim().to_string())
            .collect();
        out.push(TilingLine {
            stage: stage.to_string(),
            line,
            keys,
        });
    }
    out
}

/// A spec with one or two stages re-tiled.
struct Draw {
    path: &'static str,
    tp: usize,
    /// The drawn lines as written into the spec, e.g. `o_proj: tiling: { m: 16, … }`.
    lines: Vec<String>,
    text: String,
}

impl Draw {
    fn describe(&self) -> String {
        format!("{} tp {}: {}", self.path, self.tp, self.lines.join("; "))
    }
}

fn draw(rng: &mut ChaCha8Rng, root: &Path) -> Draw {
    let path = *SPECS.choose(rng).unwrap();
    let text = std::fs::read_to_string(root.join(path)).unwrap();
    let spec: Spec = kernelgen::read_spec(root, path).unwrap_or_else(|e| panic!("{e}"));
    let tps: Vec<usize> = spec
        .file
        .tp
        .value
        .iter()
        .map(|t| t.value as usize)
        .collect();
    let tp = *tps.choose(rng).unwrap();
    let tilings = tiling_lines(path, &text);
    let count = rng.random_range(1..=2);
    let chosen: Vec<&TilingLine> = tilings.sample(rng, count).collect();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut drawn = Vec::new();
    for t in chosen {
        let body: Vec<String> = t
            .keys
            .iter()
            .map(|k| format!("{k}: {}", value(rng, k)))
            .collect();
        let indent = &lines[t.line][..lines[t.line].len() - lines[t.line].trim_start().len()];
        let new = format!("tiling: {{ {} }}", body.join(", "));
        lines[t.line] = format!("{indent}{new}");
        drawn.push(format!("{}: {new}", t.stage));
    }
    Draw {
        path,
        tp,
        lines: drawn,
        text: lines.join("\n") + "\n",
    }
}

/// The drawn variant as a runtime plan: its generated host plan (whose ABI, dims and chip
/// no tiling changes; asserted) with the drawn kernels, steps and workspaces.
fn runtime_plan(v: &Variant) -> &'static VariantPlan {
    let host = variant::by_name(&v.plan.variant)
        .unwrap_or_else(|| panic!("no generated plan {}", v.plan.variant));
    let decl = |t: &TensorPlan| TensorDecl {
        name: t.name,
        shape: t.shape.clone().leak(),
        dtype: t.dtype,
        dir: t.dir,
        placement: t.placement,
    };
    let tensors: Vec<TensorDecl> = v.plan.tensors.iter().map(decl).collect();
    assert_eq!(
        tensors, host.abi.tensors,
        "{}: a tiling changed the ABI (or generated/ is stale)",
        v.plan.variant
    );
    let kernels: Vec<Kernel> = v
        .kernels
        .kernels
        .iter()
        .map(|k| Kernel {
            name: k.name.clone().leak(),
            cores: k.cores,
            args: k.args.clone().leak(),
        })
        .collect();
    Box::leak(Box::new(VariantPlan {
        kernels: kernels.leak(),
        steps: v.kernels.steps.clone().leak(),
        workspaces: v
            .kernels
            .workspaces
            .iter()
            .map(decl)
            .collect::<Vec<_>>()
            .leak(),
        missing: &[],
        ..*host
    }))
}

/// Renders the kernels of `v` that `generated/` lacks into `dir`; the sources search `dir`
/// first, then `generated/ascendc/kernels` (whose objects the other tests have cached).
fn kernel_sources(root: &Path, v: &Variant, dir: &Path) -> KernelSources {
    let repo = KernelSources::in_repo(root);
    let files = kernelgen::render::render(std::slice::from_ref(v), &[]).expect("kernels render");
    std::fs::create_dir_all(dir).unwrap();
    for f in files {
        let Some(name) = f.path.strip_prefix("generated/ascendc/kernels/") else {
            continue;
        };
        if std::fs::read_to_string(root.join(&f.path)).ok().as_deref() != Some(&f.content) {
            std::fs::write(dir.join(name), f.content).unwrap();
        }
    }
    repo.searching_first(dir.to_path_buf())
}

/// The layer's golden case at the default starts and full capacity, once per variant.
fn golden_case<'a>(
    cases: &'a mut BTreeMap<String, (LayerSpec, Fixture, Traced)>,
    name: &str,
) -> &'a (LayerSpec, Fixture, Traced) {
    cases.entry(name.to_string()).or_insert_with(|| {
        let host = variant::by_name(name).unwrap();
        let spec = variant::layer_spec(host).unwrap();
        let (f, want) = seeded(
            &spec,
            StartPositions::Default,
            Some(host.deployment.local_t),
        );
        (spec, f, want)
    })
}

/// Runs the drawn variant and judges it; `Err` says what failed.
fn run(
    root: &Path,
    v: &Variant,
    case: &(LayerSpec, Fixture, Traced),
    dir: &Path,
) -> Result<(), String> {
    let (spec, f, want) = case;
    let sources = kernel_sources(root, v, dir);
    let rt = prepare_from(runtime_plan(v), &sources).map_err(|e| e.to_string())?;
    let out = rt.run(&f.inputs).map_err(|e| e.to_string())?;
    let judged = judge_layer(spec, &f.inputs, (&out.outputs, &out.probes), want)
        .map_err(|e| e.to_string())?;
    let mut bad: Vec<String> = judged
        .reports
        .iter()
        .filter(|r| !r.pass)
        .map(|r| r.detail())
        .collect();
    bad.extend(out.stray.iter().map(|s| format!("stray write: {s}")));
    if bad.is_empty() && !judged.reports.is_empty() {
        Ok(())
    } else {
        Err(bad.join("\n"))
    }
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}={v} is not a number"))
        })
        .unwrap_or(default)
}

#[test]
fn a_drawn_tiling_is_refused_with_a_location_or_passes_the_golden() {
    let root = variant::repo_root();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tiling_draws");
    let (draws, seed) = (env("TILING_DRAWS", 30), env("TILING_SEED", SEED));
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut cases = BTreeMap::new();
    let mut rules: BTreeMap<String, usize> = BTreeMap::new();
    let (mut refused, mut passed) = (0, 0);
    let mut failures = Vec::new();
    for i in 0..draws {
        let d = draw(&mut rng, &root);
        let what = format!("draw {i}: {}", d.describe());
        let built = kernelgen::spec::parse(d.path, &d.text)
            .map_err(|e| vec![e])
            .and_then(|s| kernelgen::variant::build(&s));
        match built {
            Err(errors) => {
                refused += 1;
                for e in &errors {
                    if e.loc.is_none() || e.file != d.path {
                        failures.push(format!("{what}\n  refused without a location: {e}"));
                    }
                    *rules.entry(e.rule.clone()).or_default() += 1;
                }
            }
            Ok(variants) => {
                let v = variants
                    .iter()
                    .find(|v| v.plan.shape.tp == d.tp)
                    .expect("a variant per TP degree");
                let case = golden_case(&mut cases, &v.plan.variant);
                match run(&root, v, case, &dir) {
                    Ok(()) => passed += 1,
                    Err(e) => failures.push(format!("{what}\n  {}", e.replace('\n', "\n  "))),
                }
            }
        }
    }
    eprintln!(
        "tiling draws (seed {seed}): {draws} drawn, {refused} refused at gen, {} run, {passed} passed",
        draws as usize - refused
    );
    for (rule, n) in &rules {
        eprintln!("  {n:4} × refused: {rule}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Refusing everything would pass vacuously: the draw must reach the sim.
    assert!(
        passed * 4 >= draws as usize,
        "only {passed} of {draws} drawn tilings were accepted and run"
    );
}
