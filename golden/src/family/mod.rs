//! What a layer family brings to the reference side, behind one trait: its own tensors,
//! its fixtures, its math and how its outputs are judged. Each family implements
//! [`Family`] on its constants ([`SwaDims`], [`HcaDims`], [`CsaDims`], one module each);
//! [`LayerKind::family`] is the one place that tells the families apart. The shared
//! procedures (`golden::run`, `fixtures::build`, `signature`, `compare::judge_layer`)
//! do what every layer does and ask the family for the rest.

mod csa;
mod hca;
mod swa;

use crate::compare::{Check, Report};
use crate::dims::{CsaDims, Dims, HcaDims, LayerKind, LayerSpec, SwaDims};
use crate::error::GoldenError;
use crate::fixtures::{Fixture, FixtureError, FixtureOptions};
use crate::signature::Sig;
use crate::tensor::TensorMap;

/// One layer family (SWA, HCA, CSA).
pub trait Family {
    /// The family's tensors for `t` tokens per rank, in ABI order, between the ones every
    /// layer shares (the front: x_hc … gamma_ckv; the back: attn_sink … x_out).
    fn tensors(&self, d: &Dims, t: usize) -> Vec<Sig>;

    /// The slot mapping that names a pool's written rows, and its page size.
    fn pool_mapping(&self, d: &Dims, pool: &str) -> Option<(&'static str, usize)>;

    /// The reference's canonical start set (utils.py `*_decode_start_set`), unclipped.
    fn start_set(&self, d: &Dims) -> Vec<i64>;

    /// A seeded case of `batch` requests per rank.
    fn fixture(
        &self,
        spec: &LayerSpec,
        opts: &FixtureOptions,
        batch: usize,
    ) -> Result<Fixture, FixtureError>;

    /// The whole layer on checked inputs of `t` tokens per rank: its outputs and its
    /// trace (the intermediates its judging needs; see [`Family::probes`]).
    fn run(
        &self,
        d: &Dims,
        inputs: &TensorMap,
        t: usize,
    ) -> Result<(TensorMap, TensorMap), GoldenError>;

    /// Which comparator and thresholds judge each output.
    fn checks(&self) -> Vec<Check>;

    /// The workspaces a comparison needs from the device besides the outputs, by the
    /// names they have in the golden's trace.
    fn probes(&self) -> &'static [&'static str] {
        &[]
    }

    /// What the judge learns before it compares the outputs: reports on the probed
    /// intermediates, notes, and the golden to judge the outputs against where the
    /// device legitimately chose otherwise (nothing by default).
    fn judge_chain(
        &self,
        _d: &Dims,
        _inputs: &TensorMap,
        _t: usize,
        _device: Device<'_>,
        _trace: &TensorMap,
    ) -> Result<Chain, GoldenError> {
        Ok(Chain::default())
    }
}

/// A device run as the judge sees it: its outputs and its probed workspaces.
#[derive(Clone, Copy)]
pub struct Device<'a> {
    pub outputs: &'a TensorMap,
    pub probes: &'a TensorMap,
}

/// What [`Family::judge_chain`] found.
#[derive(Debug, Default)]
pub struct Chain {
    pub reports: Vec<Report>,
    pub notes: Vec<String>,
    /// The golden's outputs recomputed with the device's choices, when they differ.
    pub followed: Option<TensorMap>,
}

impl LayerKind {
    /// This layer's family.
    pub fn family(&self) -> &dyn Family {
        match self {
            LayerKind::Swa => &SwaDims,
            LayerKind::Hca(h) => h as &HcaDims,
            LayerKind::Csa(c) => c as &CsaDims,
        }
    }
}
