//! Stage rms_norm (swa.md §3.2) on the CPU model against `golden::rms_norm`
//! within (1e-4, 1/128) (0.5 % bad points), at capacity and capacity − 8 tokens.
//! The weight is drawn around 1 rather than the fixture's ones, so a kernel that
//! skipped or misplaced it fails. x_mixed rows past the runtime count are NaN and
//! x_normed starts poisoned; its rows past the count must stay so.

mod stage_checks;
mod support;

use std::collections::BTreeMap;

use golden::arith::narrow;
use golden::compare::ratio_allclose;
use golden::fixtures::random::Draws;
use golden::rms_norm::rms_norm;
use golden::tensor::Tensor;
use half::bf16;
use kernelgen::plan::Plan;
use stage_checks::{StageCase, assert_pass, assert_unwritten, head, run_variant, tensor};

const SEED: u64 = 20_260_819;
const STAGE: &str = "rms_norm";

struct Inputs {
    /// `[capacity, hidden]`, rows ≥ t NaN.
    x: Vec<bf16>,
    weight: Vec<bf16>,
}

impl StageCase for Inputs {
    const STAGE: &'static str = STAGE;

    fn new(p: &Plan, draws: &Draws, t: usize) -> Inputs {
        let hidden = p.model.hidden;
        let mut x = narrow(&draws.normal("x_mixed", p.shape.local_t * hidden, 1.0));
        x[t * hidden..].fill(bf16::NAN);
        Inputs {
            x,
            weight: narrow(&draws.normal_around("attn_norm_w", hidden, 1.0, 0.1)),
        }
    }

    fn tensors(&self, p: &Plan) -> BTreeMap<String, Tensor> {
        let hidden = p.model.hidden;
        BTreeMap::from([
            (
                "x_mixed".into(),
                tensor(vec![p.shape.local_t, hidden], self.x.clone()),
            ),
            (
                "attn_norm_w".into(),
                tensor(vec![hidden], self.weight.clone()),
            ),
        ])
    }

    fn judge(&self, p: &Plan, got: &BTreeMap<String, Tensor>, t: usize) {
        compare(p, self, got, t);
    }
}

fn compare(p: &Plan, inputs: &Inputs, tensors: &BTreeMap<String, Tensor>, t: usize) {
    let hidden = p.model.hidden;
    let want = rms_norm(&inputs.x[..t * hidden], &inputs.weight, p.model.rms_eps);
    let got = &tensors["x_normed"];
    assert_pass(&ratio_allclose(
        &format!("{} t={t} x_normed", p.variant),
        &head::<bf16>(got, t, hidden),
        &tensor(vec![t, hidden], want),
        1e-4,
        1.0 / 128.0,
        0.005,
    ));
    assert_unwritten("x_normed", got, t * hidden);
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
