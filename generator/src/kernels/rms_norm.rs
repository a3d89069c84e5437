//! Kernels of stage rms_norm: the attention RMSNorm (swa.md §3.2).

use super::Builder;
use crate::plan::StagePlan;

pub(super) fn plan(b: &mut Builder, s: &StagePlan) {
    b.missing(s.kind);
}
