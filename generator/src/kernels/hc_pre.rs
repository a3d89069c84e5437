//! Kernels of stage hc_pre: HC projection, gates, Sinkhorn and stream mixing (swa.md §3.1).

use super::Builder;
use crate::plan::StagePlan;

pub(super) fn plan(b: &mut Builder, s: &StagePlan) {
    b.missing(s.kind);
}
