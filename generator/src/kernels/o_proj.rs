//! Kernels of stage o_proj: grouped wo_a, per-(token, group) int8 quantisation, int8 wo_b (swa.md §3.7–3.8).

use super::Builder;
use crate::plan::StagePlan;

pub(super) fn plan(b: &mut Builder, s: &StagePlan) {
    b.missing(s.kind);
}
