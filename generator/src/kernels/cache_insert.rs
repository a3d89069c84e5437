//! Kernels of stage cache_insert: KV rows into the paged pool through the slot mapping (swa.md §3.4).

use super::Builder;
use crate::plan::StagePlan;

pub(super) fn plan(b: &mut Builder, s: &StagePlan) {
    b.missing(s.kind);
}
