//! Kernels of stage sparse_attention: window gather, scores, sink softmax, P·V, inverse RoPE, packing (swa.md §3.5–3.6).

use super::Builder;
use crate::plan::StagePlan;

pub(super) fn plan(b: &mut Builder, s: &StagePlan) {
    b.missing(s.kind);
}
