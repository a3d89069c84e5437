//! Stage hc_post (swa.md §3.9) on the CPU model against `golden::hc_post`.
//! The stage is f32 in a fixed order with no reduction, so the kernel must match the
//! golden bit for bit, at capacity and capacity − 8 tokens. Input rows past the
//! runtime count are NaN and x_out starts poisoned; its rows past the count must stay so.
//! The launch of hc_post alone: a plan without fusion (with it, hc_post takes o_proj's group
//! sum at TP 1 and the reduce-scatter's sum at TP > 1 as its prologue; stage_o_proj runs
//! those kernels).

mod stage_checks;
mod support;

use std::collections::BTreeMap;

use golden::arith::narrow;
use golden::fixtures::random::Draws;
use golden::tensor::Tensor;
use half::bf16;
use kernelgen::plan::Plan;
use stage_checks::{HcStreams, StageCase, dims, run_variant, tensor};

const SEED: u64 = 20_260_819;
const STAGE: &str = "hc_post";

/// Capacity-sized inputs, rows ≥ t NaN.
struct Inputs {
    attn_out: Vec<bf16>,
    streams: HcStreams,
}

impl StageCase for Inputs {
    const STAGE: &'static str = STAGE;

    fn new(p: &Plan, draws: &Draws, t: usize) -> Inputs {
        let (cap, hidden) = (p.shape.local_t, p.model.hidden);
        let mut attn_out = narrow(&draws.normal("attn_out", cap * hidden, 0.5));
        attn_out[t * hidden..].fill(bf16::NAN);
        Inputs {
            attn_out,
            streams: HcStreams::new(draws, &dims(p), cap, t),
        }
    }

    fn tensors(&self, p: &Plan) -> BTreeMap<String, Tensor> {
        let (cap, hidden) = (p.shape.local_t, p.model.hidden);
        let mut tensors = BTreeMap::from([(
            "attn_out".into(),
            tensor(vec![cap, hidden], self.attn_out.clone()),
        )]);
        self.streams.insert(&dims(p), cap, &mut tensors);
        tensors
    }

    fn judge(&self, p: &Plan, got: &BTreeMap<String, Tensor>, t: usize) {
        let d = dims(p);
        self.streams
            .assert_x_out(&p.variant, &d, &self.attn_out, &got["x_out"], t);
    }
}

#[test]
fn swa_small_unfused_tp1_is_bit_exact() {
    run_variant::<Inputs>("swa_small_unfused_tp1", SEED);
}

#[test]
fn swa_small_unfused_tp2_is_bit_exact() {
    run_variant::<Inputs>("swa_small_unfused_tp2", SEED);
}
