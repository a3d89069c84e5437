//! Kernels of stage hc_post: folding the attention output back into the HC streams (swa.md §3.9).

use super::Builder;
use crate::plan::StagePlan;

pub(super) fn plan(b: &mut Builder, s: &StagePlan) {
    b.missing(s.kind);
}
