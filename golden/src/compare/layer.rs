//! Which comparator and thresholds each layer output is judged by
//! (swa.md §5, hca_csa.md §8.3, device thresholds): the family's checks, the pools
//! through their slot mappings, and the family's chain of intermediates first.

use super::check::Check;
use super::mapped_pool::{MappedPool, mapped_pool};
use super::ratio_reldiff;
use super::report::{Report, Rule};
use crate::family::Device;
use crate::signature::{check_inputs, pool_mapping};
use crate::tensor::TensorMap;
use crate::{GoldenError, LayerSpec, Traced};

/// The checks of a layer's outputs (device thresholds throughout).
pub fn layer_checks(spec: &LayerSpec) -> Vec<Check> {
    spec.kind.family().checks()
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

/// The workspaces a layer's comparison needs from the device besides its outputs (the
/// CSA's index queries, head weights and top-k lists).
pub fn layer_probes(spec: &LayerSpec) -> Vec<&'static str> {
    spec.kind.family().probes().to_vec()
}

/// A layer run judged: one report per compared output (and, for CSA, its index queries
/// and top-k), and notes on how the reference was formed.
#[derive(Debug, Clone)]
pub struct Judged {
    pub reports: Vec<Report>,
    pub notes: Vec<String>,
}

/// Compares a layer run — its `outputs` and the `probes` of [`layer_probes`] — with the
/// golden's `want` (a traced run; saved outputs come with an empty trace and are compared
/// as they are): first the family's chain of intermediates (see `Family::judge_chain`;
/// it may name another golden to judge the outputs against), then every output.
pub fn judge_layer(
    spec: &LayerSpec,
    inputs: &TensorMap,
    (outputs, probes): (&TensorMap, &TensorMap),
    want: &Traced,
) -> Result<Judged, GoldenError> {
    spec.validate()?;
    let t = check_inputs(spec, inputs)?.tokens;
    let device = Device { outputs, probes };
    let chain = spec
        .kind
        .family()
        .judge_chain(&spec.dims, inputs, t, device, &want.trace)?;
    let mut reports = compare_layer(
        spec,
        inputs,
        outputs,
        chain.followed.as_ref().unwrap_or(&want.outputs),
    );
    reports.extend(chain.reports);
    Ok(Judged {
        reports,
        notes: chain.notes,
    })
}
