//! Which comparator and thresholds each layer output is judged by
//! (swa.md §5, hca_csa.md §8.3, device thresholds).

use super::mapped_pool::{MappedPool, mapped_pool};
use super::ratio_reldiff;
use super::report::{Report, Rule};
use super::{ratio_allclose, topk_rows};
use crate::signature::pool_mapping;
use crate::tensor::TensorMap;
use crate::{GoldenError, LayerKind, LayerSpec, Traced};

/// One output's comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub output: &'static str,
    pub rule: Rule,
}

fn reldiff(output: &'static str, diff_thd: f32) -> Check {
    Check {
        output,
        rule: Rule::RelDiff {
            diff_thd,
            pct_thd: 0.008,
            max_diff_hd: 1.0,
        },
    }
}

fn mapped(output: &'static str, atol: f32, rtol: f32, max_error_ratio: f64) -> Check {
    Check {
        output,
        rule: Rule::AllClose {
            atol,
            rtol,
            max_error_ratio,
        },
    }
}

/// The checks of a layer's outputs. The device thresholds throughout: CSA's
/// x_out uses ratio_reldiff(4e-3) (the reference only prints a diagnostic on
/// its simulators), HCA at TP > 1 keeps 3e-3 with cap 1 (the reference relaxes
/// it to 4e-3 / cap 2 on its a2a3 simulator only).
pub fn layer_checks(spec: &LayerSpec) -> Vec<Check> {
    let r128 = 1.0 / 128.0;
    match spec.kind {
        LayerKind::Swa => vec![
            reldiff("x_out", 3e-3),
            mapped("kv_cache", 1e-4, r128, 0.005),
        ],
        LayerKind::Hca(_) => vec![
            reldiff("x_out", 3e-3),
            mapped("compress_state", 1e-3, r128, 0.005),
            mapped("kv_cache", 1e-3, r128, 0.005),
            mapped("cmp_kv", 1e-3, r128, 0.005),
        ],
        LayerKind::Csa(_) => vec![
            reldiff("x_out", 4e-3),
            mapped("compress_state", 1e-3, 1e-3, 0.005),
            mapped("inner_compress_state", 1e-3, 1e-3, 0.005),
            mapped("kv_cache", 1e-4, r128, 0.005),
            mapped("cmp_kv", 1e-4, r128, 0.005),
            mapped("idx_kv_cache", 1.0, 0.0, 0.01),
            mapped("idx_kv_scale", 1e-4, r128, 0.01),
        ],
    }
}

/// Compares every output of a layer case: `got` against `want`, with the
/// slot mappings taken from `inputs`.
pub fn compare_layer(
    spec: &LayerSpec,
    inputs: &TensorMap,
    got: &TensorMap,
    want: &TensorMap,
) -> Vec<Report> {
    let tp = spec.dims.tp;
    layer_checks(spec)
        .into_iter()
        .map(|check| {
            let (g, w) = match (got.get(check.output), want.get(check.output)) {
                (Ok(g), Ok(w)) => (g, w),
                (g, _) => {
                    let side = if g.is_err() { "got" } else { "want" };
                    return Report::broken(
                        check.output,
                        check.rule,
                        format!("output missing on the {side} side"),
                    );
                }
            };
            match check.rule {
                Rule::RelDiff {
                    diff_thd,
                    pct_thd,
                    max_diff_hd,
                } => ratio_reldiff(check.output, g, w, diff_thd, pct_thd, max_diff_hd),
                Rule::AllClose {
                    atol,
                    rtol,
                    max_error_ratio,
                } => {
                    let (mapping_name, block_size) = pool_mapping(spec, check.output)
                        .expect("every pool check names a pool with a mapping");
                    let Ok(mapping) = inputs.get(mapping_name) else {
                        return Report::broken(
                            check.output,
                            check.rule,
                            format!("input `{mapping_name}` is missing"),
                        );
                    };
                    let x_hc = inputs
                        .get("x_hc")
                        .map(|t| t.shape().to_vec())
                        .unwrap_or_default();
                    let tokens = x_hc.get(usize::from(tp > 1)).copied().unwrap_or(0);
                    let mapping_shape: Vec<usize> = if tp > 1 {
                        vec![tp, tokens]
                    } else {
                        vec![tokens]
                    };
                    mapped_pool(
                        check.output,
                        g,
                        w,
                        MappedPool {
                            mapping,
                            mapping_name,
                            mapping_shape: &mapping_shape,
                            block_size,
                            rank_axis: tp > 1,
                            atol,
                            rtol,
                            max_error_ratio,
                        },
                    )
                }
                Rule::TopK { .. } => unreachable!("layer outputs have no top-k list"),
            }
        })
        .collect()
}

/// The workspaces a layer's comparison needs from the device besides its outputs: the
/// CSA's index queries, head weights and top-k lists.
pub fn layer_probes(spec: &LayerSpec) -> Vec<&'static str> {
    match spec.kind {
        LayerKind::Csa(_) => vec!["idx_q", "idx_q_scale", "idx_weights", "topk_idx"],
        LayerKind::Swa | LayerKind::Hca(_) => Vec::new(),
    }
}

/// The CSA's intermediates against the golden's: the int8 index queries and their scales
/// by the index cache's own rules (the same quantiser, hca_csa.md §8.3), the head weights
/// (an f32 GEMM of the normed x) by the compressor state's.
fn index_checks() -> [Check; 3] {
    [
        mapped("idx_q", 1.0, 0.0, 0.01),
        mapped("idx_q_scale", 1e-4, 1.0 / 128.0, 0.01),
        mapped("idx_weights", 1e-3, 1e-3, 0.005),
    ]
}

/// Score ties of the device's top-k against the top-k of its own scores: the scores are
/// recomputed exactly but for the order of the f32 head sum (as in the stage test).
const TOPK_TOL: f32 = 1e-5;

/// A layer run judged: one report per compared output (and, for CSA, its index queries
/// and top-k), and notes on how the reference was formed.
#[derive(Debug, Clone)]
pub struct Judged {
    pub reports: Vec<Report>,
    pub notes: Vec<String>,
}

/// Compares a layer run — its `outputs` and the `probes` of [`layer_probes`] — with the
/// golden's `want` (a traced run; saved outputs come with an empty trace and are compared
/// as they are).
///
/// CSA selects rows: an index query that rounds to another int8 step (within the
/// thresholds) can rank a row k-th instead of (k+1)-th, and swapping one row moves that
/// token's attention output far past x_out's cap. So the chain is judged link by link:
/// the device's index queries and head weights against the golden's; its top-k lists
/// against the exact top-k of the scores its own queries and index cache give
/// ([`crate::csa_device_scores`], [`topk_rows`]); and, where a token chose other rows
/// than the golden did, x_out against the golden recomputed with the device's choice
/// ([`crate::run_given`]).
pub fn judge_layer(
    spec: &LayerSpec,
    inputs: &TensorMap,
    (outputs, probes): (&TensorMap, &TensorMap),
    want: &Traced,
) -> Result<Judged, GoldenError> {
    let mut notes = Vec::new();
    let mut extra = Vec::new();
    let mut followed = None;
    if let (LayerKind::Csa(c), Ok(own)) = (&spec.kind, want.trace.values::<i32>("topk_idx")) {
        for check in index_checks() {
            extra.push(compare_plain(&check, probes, &want.trace));
        }
        let rule = Rule::TopK {
            atol: 0.0,
            rtol: TOPK_TOL,
        };
        let topk = match (
            probes.values::<i32>("topk_idx"),
            crate::csa_device_scores(spec, inputs, probes, outputs),
        ) {
            (Ok(got), Ok(rows)) => {
                let k = c.index_topk;
                let exact = crate::indexer::top_k_rows(c, &rows);
                let report = topk_rows("topk_idx", got, &exact, k, &rows, TOPK_TOL);
                let differ = got
                    .chunks_exact(k)
                    .zip(own.chunks_exact(k))
                    .filter(|(g, w)| g != w)
                    .count();
                if report.pass && differ > 0 {
                    followed = Some(crate::run_given(spec, inputs, got)?);
                    notes.push(format!(
                        "x_out is judged against the golden recomputed with the kernel's top-k: \
                         {differ} of {} token rows chose other rows than the golden's (index \
                         queries within their thresholds rank near-equal rows differently)",
                        report.numel
                    ));
                }
                report
            }
            (Err(e), _) => Report::broken("topk_idx", rule, format!("not probed: {e}")),
            (_, Err(e)) => Report::broken(
                "topk_idx",
                rule,
                format!("the device's index scores cannot be formed: {e}"),
            ),
        };
        extra.push(topk);
    }
    let mut reports = compare_layer(
        spec,
        inputs,
        outputs,
        followed.as_ref().unwrap_or(&want.outputs),
    );
    reports.extend(extra);
    Ok(Judged { reports, notes })
}

/// `check` (an all-close rule) on a whole tensor of `got` against `want`.
fn compare_plain(check: &Check, got: &TensorMap, want: &TensorMap) -> Report {
    let Rule::AllClose {
        atol,
        rtol,
        max_error_ratio,
    } = check.rule
    else {
        unreachable!("intermediates are compared element by element")
    };
    match (got.get(check.output), want.get(check.output)) {
        (Ok(g), Ok(w)) => ratio_allclose(check.output, g, w, atol, rtol, max_error_ratio),
        _ => Report::broken(
            check.output,
            check.rule.clone(),
            "not probed from the run".into(),
        ),
    }
}
