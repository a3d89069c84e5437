//! Stage hc_post (swa.md §3.9) on the CPU model against `harness::golden::hc_post`.
//! The stage is f32 in a fixed order with no reduction, so the kernel must match the
//! golden bit for bit, at capacity and capacity − 8 tokens. Input rows past the
//! runtime count are NaN and x_out starts poisoned; its rows past the count must stay so.

mod support;
mod vector_stage;

use std::collections::BTreeMap;

use half::bf16;
use harness::fixtures::random::Draws;
use harness::golden::arith::narrow;
use harness::golden::hc_post::hc_post;
use harness::tensor::Tensor;
use kernelgen::plan::{Plan, StageKind};
use vector_stage::{assert_unwritten, check_launches, dims, tensor, tiling};

const SEED: u64 = 20_260_819;
const STAGE: StageKind = StageKind::HcPost;

/// Capacity-sized inputs, rows ≥ t NaN.
struct Inputs {
    attn_out: Vec<bf16>,
    x_hc: Vec<f32>,
    post: Vec<f32>,
    comb: Vec<f32>,
}

impl Inputs {
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

fn variant(name: &str) {
    let p = support::plan(name);
    let lib = support::library(p, &[STAGE]);
    let draws = Draws::new(SEED + p.shape.tp as u64);
    for t in [p.shape.local_t, p.shape.local_t - 8] {
        let inputs = Inputs::new(p, &draws, t);
        let mut tensors = inputs.tensors(p);
        let stats = support::run(&lib, p, &[STAGE], &mut tensors, tiling(p, t));
        check_launches(p, STAGE, &stats);
        compare(p, &inputs, &tensors, t);
    }
}

#[test]
fn swa_small_tp1_is_bit_exact() {
    variant("swa_small_tp1");
}

#[test]
fn swa_mini_tp1_is_bit_exact() {
    variant("swa_mini_tp1");
}

#[test]
fn swa_mini_tp4_is_bit_exact() {
    variant("swa_mini_tp4");
}

/// FLASH dims, t = 256 (swa_tp2's capacity): wall time and GM traffic.
#[test]
#[ignore = "FLASH-size timing run: cargo test -p runner --test stage_hc_post -- --ignored --nocapture"]
fn flash_timing() {
    let p = support::plan("swa_tp2");
    let lib = support::library(p, &[STAGE]);
    let t = p.shape.local_t;
    let inputs = Inputs::new(p, &Draws::new(SEED), t);
    let mut tensors = inputs.tensors(p);
    let runs = vector_stage::timed_run(&lib, p, STAGE, &mut tensors, tiling(p, t));
    for (kernel, time, st) in &runs {
        println!(
            "{kernel}: {:.3} s, {} vector lanes",
            time.as_secs_f64(),
            st.vec_elem_ops
        );
    }
    let stats: Vec<_> = runs.into_iter().map(|(k, _, s)| (k, s)).collect();
    check_launches(p, STAGE, &stats);
    compare(p, &inputs, &tensors, t);
}
