//! Kernels of stage qkv_proj_rope: LoRA q with int8 wq_b, kv latent, RMSNorm and RoPE (swa.md §3.3).

use super::Builder;
use crate::plan::StagePlan;

pub(super) fn plan(b: &mut Builder, s: &StagePlan) {
    b.missing(s.kind);
}
