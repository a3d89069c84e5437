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
mod error;
pub mod family;
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
mod run;
pub mod signature;
pub mod topk;

pub use tensor;

pub use dims::{
    CsaDims, CsaState, Dims, DimsError, HcaDims, Layer, LayerKind, LayerSpec, RopeProfile,
    RopeTable, SwaDims, Yarn,
};
pub use error::GoldenError;
pub use family::Family;
pub use run::{Traced, csa_device_scores, run, run_given, run_traced};
