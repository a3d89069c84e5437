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
    spec.validate()?;
    match spec.kind {
        LayerKind::Swa => layer::swa::run(spec, inputs),
        LayerKind::Hca(_) => layer::hca::run(spec, inputs),
        LayerKind::Csa(_) => layer::csa::run(spec, inputs),
    }
}
