//! Running a whole layer: the golden's entry points. The inputs are checked against the
//! layer's signature here; the family runs its math. Two more for CSA's judge: the layer
//! with a given top-k, and the index scores of the device's own queries.

use crate::dims::{CsaDims, LayerKind, LayerSpec};
use crate::error::GoldenError;
use crate::layer;
use crate::signature::check_inputs;
use crate::tensor::TensorMap;

/// Runs the whole layer on `inputs` (reference names; `[tp]`-stacked at
/// TP > 1) and returns every output: `x_out` and the updated pools.
pub fn run(spec: &LayerSpec, inputs: &TensorMap) -> Result<TensorMap, GoldenError> {
    Ok(run_traced(spec, inputs)?.outputs)
}

/// A layer's outputs and its trace: the intermediates a comparator needs besides them
/// (CSA: the golden's index queries `idx_q`, `idx_q_scale`, head weights `idx_weights`
/// and own top-k lists `topk_idx`; nothing for SWA and HCA), stacked like the outputs.
pub struct Traced {
    pub outputs: TensorMap,
    pub trace: TensorMap,
}

/// [`run`], keeping the trace.
pub fn run_traced(spec: &LayerSpec, inputs: &TensorMap) -> Result<Traced, GoldenError> {
    spec.validate()?;
    let t = check_inputs(spec, inputs)?.tokens;
    let (outputs, trace) = spec.kind.family().run(&spec.dims, inputs, t)?;
    Ok(Traced { outputs, trace })
}

/// The outputs of a CSA layer whose attention reads the rows of `topk_idx` (`[t,
/// index_topk]` i32, stacked like the inputs) instead of the golden's own choice: where
/// the device picked another row among near-equal index scores, its output is judged
/// against the math of that choice. The caller first checks the lists are the device's
/// exact choice ([`csa_device_scores`], [`crate::compare::topk_sets`]).
pub fn run_given(
    spec: &LayerSpec,
    inputs: &TensorMap,
    topk_idx: &[i32],
) -> Result<TensorMap, GoldenError> {
    let c = indexed(spec)?;
    let t = check_inputs(spec, inputs)?.tokens;
    Ok(layer::csa::run(&spec.dims, c, inputs, t, Some(topk_idx))?.0)
}

/// The index scores a CSA device's top-k must select from: its own index queries and
/// head weights (`idx_q`, `idx_q_scale`, `idx_weights` in `queries`) against its own index
/// cache (`idx_kv_cache`, `idx_kv_scale` in `pools`), each stacked like the outputs; one
/// row per token (all ranks in order), over the token's visible compressed rows.
pub fn csa_device_scores(
    spec: &LayerSpec,
    inputs: &TensorMap,
    queries: &TensorMap,
    pools: &TensorMap,
) -> Result<Vec<Vec<f32>>, GoldenError> {
    let c = indexed(spec)?;
    layer::csa::device_scores(&spec.dims, c, inputs, queries, pools)
}

/// The constants of a layer that chooses rows by an indexer (CSA), or why not.
fn indexed(spec: &LayerSpec) -> Result<&CsaDims, GoldenError> {
    spec.validate()?;
    match &spec.kind {
        LayerKind::Csa(c) => Ok(c),
        _ => Err(GoldenError::Contract(format!(
            "only a CSA layer chooses rows (top-k) by an indexer; this is {}",
            spec.layer().name()
        ))),
    }
}
