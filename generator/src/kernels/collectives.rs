//! Kernels of stage o_group_all_to_all / o_reduce_scatter: the TP exchanges around o_proj (swa.md §3.8).

use super::Builder;
use crate::plan::StagePlan;

pub(super) fn plan(b: &mut Builder, s: &StagePlan) {
    b.missing(s.kind);
}
