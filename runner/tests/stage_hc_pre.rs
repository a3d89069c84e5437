//! Stage hc_pre (swa.md §3.1) on the CPU model against `golden::hc_pre`:
//! x_mixed within (1e-4, 1/128) and post/comb within (2.5e-5, 5e-3) (the
//! reference's sub-kernel thresholds, 0.5 % bad points), at capacity and
//! capacity − 8 tokens. x_hc rows past the runtime count are NaN, so a kernel
//! reading them fails; every output and workspace starts poisoned, and output
//! rows past the count must stay so.

mod stage_checks;
mod support;

use std::collections::BTreeMap;

use golden::compare::ratio_allclose;
use golden::fixtures::random::Draws;
use golden::hc_pre::{HcWeights, hc_pre};
use golden::tensor::Tensor;
use half::bf16;
use kernelgen::plan::Plan;
use stage_checks::{StageCase, assert_pass, assert_unwritten, dims, head, run_variant, tensor};

const SEED: u64 = 20_260_819;
const STAGE: &str = "hc_pre";
/// The SWA layer-0 scales and biases (swa.md §4.4).
const SCALE: [f32; 3] = [2.076026, 0.018729, 0.245936];
const BASE: [f32; 24] = [
    3.9083, -2.0399, -2.2033, -2.017, -2.4443, -10.3158, -8.9943, -6.3581, 9.8577, -9.5177,
    -24.8724, -22.8929, -21.545, 0.7791, -3.386, 1.1948, -20.9605, -0.7702, 1.4218, -4.8994,
    1.5177, -29.7663, -30.1413, -1.2413,
];

struct Inputs {
    /// `[capacity, hc, hidden]`, rows ≥ t NaN.
    x_hc: Vec<f32>,
    hc_attn_fn: Vec<f32>,
}

impl StageCase for Inputs {
    const STAGE: &'static str = STAGE;

    fn new(p: &Plan, draws: &Draws, t: usize) -> Inputs {
        let m = &p.model;
        let row = m.hc_dim;
        let mut x_hc = draws.uniform("x_hc", p.shape.local_t * row, -1.0, 1.0);
        x_hc[t * row..].fill(f32::NAN);
        Inputs {
            x_hc,
            hc_attn_fn: draws.normal("hc_attn_fn", m.mix_hc * row, 0.039),
        }
    }

    fn tensors(&self, p: &Plan) -> BTreeMap<String, Tensor> {
        let m = &p.model;
        BTreeMap::from([
            (
                "x_hc".into(),
                tensor(
                    vec![p.shape.local_t, m.hc_mult, m.hidden],
                    self.x_hc.clone(),
                ),
            ),
            (
                "hc_attn_fn".into(),
                tensor(vec![m.mix_hc, m.hc_dim], self.hc_attn_fn.clone()),
            ),
            ("hc_attn_scale".into(), tensor(vec![3], SCALE.to_vec())),
            ("hc_attn_base".into(), tensor(vec![m.mix_hc], BASE.to_vec())),
        ])
    }

    fn judge(&self, p: &Plan, got: &BTreeMap<String, Tensor>, t: usize) {
        compare(p, self, got, t);
    }
}

/// Every output of a run on `t` tokens against the golden; rows ≥ t unwritten.
fn compare(p: &Plan, inputs: &Inputs, tensors: &BTreeMap<String, Tensor>, t: usize) {
    let (m, d) = (&p.model, dims(p));
    let want = hc_pre(
        &d,
        &inputs.x_hc[..t * m.hc_dim],
        HcWeights {
            proj: &inputs.hc_attn_fn,
            scale: &SCALE,
            base: &BASE,
        },
    );
    let name = |o: &str| format!("{} t={t} {o}", p.variant);
    let (hc, hidden) = (m.hc_mult, m.hidden);
    assert_pass(&ratio_allclose(
        &name("x_mixed"),
        &head::<bf16>(&tensors["x_mixed"], t, hidden),
        &tensor(vec![t, hidden], want.x_mixed),
        1e-4,
        1.0 / 128.0,
        0.005,
    ));
    assert_pass(&ratio_allclose(
        &name("post"),
        &head::<f32>(&tensors["post"], t, hc),
        &tensor(vec![t, hc], want.post),
        2.5e-5,
        5e-3,
        0.005,
    ));
    assert_pass(&ratio_allclose(
        &name("comb"),
        &head::<f32>(&tensors["comb"], t, hc * hc),
        &tensor(vec![t, hc * hc], want.comb),
        2.5e-5,
        5e-3,
        0.005,
    ));
    for (out, width) in [("x_mixed", hidden), ("post", hc), ("comb", hc * hc)] {
        assert_unwritten(&name(out), &tensors[out], t * width);
    }
}

#[test]
fn swa_small_tp1_matches_the_golden() {
    run_variant::<Inputs>("swa_small_tp1", SEED);
}

#[test]
fn swa_mini_tp1_matches_the_golden() {
    run_variant::<Inputs>("swa_mini_tp1", SEED);
}

#[test]
fn swa_mini_tp4_matches_the_golden() {
    run_variant::<Inputs>("swa_mini_tp4", SEED);
}

#[test]
fn swa_small_unfused_tp1_matches_the_golden() {
    run_variant::<Inputs>("swa_small_unfused_tp1", SEED);
}

/// FLASH at 512 tokens: 32 projection tiles, and a vector core's flag counter holds 15 sets,
/// so the fused launch's cube cores signal every third tile; a vector core that waits for
/// the wrong number of sets reads partials before they land (the hazard checker traps).
#[test]
fn swa_tp1_signals_every_third_tile_and_matches_the_golden() {
    run_variant::<Inputs>("swa_tp1", SEED);
}
