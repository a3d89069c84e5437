//! Stage hc_post (swa.md §3.9) on the CPU model against `golden::hc_post`.
//! The stage is f32 in a fixed order with no reduction, so the kernel must match the
//! golden bit for bit, at capacity and capacity − 8 tokens. Input rows past the
//! runtime count are NaN and x_out starts poisoned; its rows past the count must stay so.
//! The launch of hc_post alone: a plan without fusion at TP 1, or at TP > 1.

mod stage_checks;
mod support;

use std::collections::BTreeMap;

use golden::arith::narrow;
use golden::fixtures::random::Draws;
use golden::hc_post::hc_post;
use golden::tensor::Tensor;
use half::bf16;
use kernelgen::plan::Plan;
use stage_checks::{StageCase, assert_unwritten, dims, run_variant, tensor};

const SEED: u64 = 20_260_819;
const STAGE: &str = "hc_post";

/// Capacity-sized inputs, rows ≥ t NaN.
struct Inputs {
    attn_out: Vec<bf16>,
    x_hc: Vec<f32>,
    post: Vec<f32>,
    comb: Vec<f32>,
}

impl StageCase for Inputs {
    const STAGE: &'static str = STAGE;

    fn new(p: &Plan, draws: &Draws, t: usize) -> Inputs {
        let (cap, hc, hidden) = (p.shape.local_t, p.model.hc_mult, p.model.hidden);
        let rows = |mut v: Vec<f32>, width: usize| {
            v[t * width..].fill(f32::NAN);
            v
        };
        let mut attn_out = narrow(&draws.normal("attn_out", cap * hidden, 0.5));
        attn_out[t * hidden..].fill(bf16::NAN);
        Inputs {
            attn_out,
            x_hc: rows(
                draws.uniform("x_hc", cap * hc * hidden, -1.0, 1.0),
                hc * hidden,
            ),
            // post = 2·sigmoid, comb ≈ doubly stochastic.
            post: rows(draws.uniform("post", cap * hc, 0.0, 2.0), hc),
            comb: rows(draws.uniform("comb", cap * hc * hc, 0.0, 1.0), hc * hc),
        }
    }

    fn tensors(&self, p: &Plan) -> BTreeMap<String, Tensor> {
        let (cap, hc, hidden) = (p.shape.local_t, p.model.hc_mult, p.model.hidden);
        BTreeMap::from([
            (
                "attn_out".into(),
                tensor(vec![cap, hidden], self.attn_out.clone()),
            ),
            (
                "x_hc".into(),
                tensor(vec![cap, hc, hidden], self.x_hc.clone()),
            ),
            ("post".into(), tensor(vec![cap, hc], self.post.clone())),
            ("comb".into(), tensor(vec![cap, hc * hc], self.comb.clone())),
        ])
    }

    fn judge(&self, p: &Plan, got: &BTreeMap<String, Tensor>, t: usize) {
        compare(p, self, got, t);
    }
}

fn compare(p: &Plan, inputs: &Inputs, tensors: &BTreeMap<String, Tensor>, t: usize) {
    let (hc, hidden) = (p.model.hc_mult, p.model.hidden);
    let want = hc_post(
        &dims(p),
        &inputs.attn_out[..t * hidden],
        &inputs.x_hc[..t * hc * hidden],
        &inputs.post[..t * hc],
        &inputs.comb[..t * hc * hc],
    );
    let got = &tensors["x_out"];
    let values = got.values::<f32>().expect("x_out is f32");
    if let Some((i, (g, w))) = values
        .iter()
        .zip(&want)
        .enumerate()
        .find(|(_, (g, w))| g.to_bits() != w.to_bits())
    {
        let (row, rest) = (i / (hc * hidden), i % (hc * hidden));
        panic!(
            "{} t={t} x_out[{row}, {}, {}] = {g}, golden {w} (bit-exact expected)",
            p.variant,
            rest / hidden,
            rest % hidden
        );
    }
    assert_unwritten("x_out", got, t * hc * hidden);
}

/// Fusion off: at TP 1 with fusion on, hc_post's launch takes o_proj's group sum as its
/// prologue (stage_o_proj runs that kernel).
#[test]
fn swa_small_unfused_tp1_is_bit_exact() {
    run_variant::<Inputs>("swa_small_unfused_tp1", SEED);
}

#[test]
fn swa_mini_tp4_is_bit_exact() {
    run_variant::<Inputs>("swa_mini_tp4", SEED);
}
