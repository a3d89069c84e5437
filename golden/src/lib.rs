//! The CPU reference every kernel is judged by: an independent second
//! implementation of the reference system's layers (swa.md, hca_csa.md), with
//! its dtypes and rounding points. It shares no code with the templates, the
//! CPU model of Ascend C or the generator.
//!
//! Stage functions take plain slices and [`Dims`]; [`run`] validates a case's
//! named inputs against the layer [`signature`] and returns the named outputs.
//!
//! Beside the golden: [`tensor`] (named host tensors), [`fixtures`] (the reference's
//! inputs, seeded), [`compare`] (its comparators) and [`io`] (cases on disk). This crate
//! depends on no part of the execution side, so sharing code with what it checks is not
//! possible rather than merely not done.

pub mod arith;
pub mod attention;
pub mod cache_insert;
pub mod candidates;
pub mod collectives;
pub mod compare;
pub mod compressor;
pub mod dims;
pub mod fixtures;
pub mod gemm;
pub mod hc_post;
pub mod hc_pre;
pub mod indexer;
pub mod io;
mod layer;
pub mod mask;
pub mod o_proj;
pub mod qkv;
pub mod quant;
pub mod rms_norm;
pub mod rope;
pub mod signature;
pub mod tensor;
pub mod topk;

pub use dims::{
    CsaDims, Dims, DimsError, HcaDims, Layer, LayerKind, LayerSpec, RopeProfile, RopeTable, Yarn,
};

use crate::tensor::{TensorError, TensorMap};

/// Why the golden could not run a case.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GoldenError {
    #[error(transparent)]
    Dims(#[from] DimsError),
    #[error(transparent)]
    Tensor(#[from] TensorError),
    /// Metadata that breaks the reference's contract (slots out of range, …).
    #[error("{0}")]
    Contract(String),
}

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
    let (outputs, trace) = match spec.kind {
        LayerKind::Swa => (layer::swa::run(spec, inputs)?, TensorMap::new()),
        LayerKind::Hca(_) => (layer::hca::run(spec, inputs)?, TensorMap::new()),
        LayerKind::Csa(_) => layer::csa::run(spec, inputs, None)?,
    };
    Ok(Traced { outputs, trace })
}

/// The outputs of a CSA layer whose attention reads the rows of `topk_idx` (`[t,
/// index_topk]` i32, stacked like the inputs) instead of the golden's own choice: where
/// the device picked another row among near-equal index scores, its output is judged
/// against the math of that choice. The caller first checks the lists are the device's
/// exact choice ([`csa_device_scores`], [`compare::topk_sets`]).
pub fn run_given(
    spec: &LayerSpec,
    inputs: &TensorMap,
    topk_idx: &[i32],
) -> Result<TensorMap, GoldenError> {
    spec.validate()?;
    match spec.kind {
        LayerKind::Csa(_) => Ok(layer::csa::run(spec, inputs, Some(topk_idx))?.0),
        _ => Err(GoldenError::Contract(
            "only a CSA layer chooses rows (top-k) the golden can follow".into(),
        )),
    }
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
    spec.validate()?;
    layer::csa::device_scores(spec, inputs, queries, pools)
}
