//! Shared pieces of the stage tests (hc_pre, rms_norm, cache_insert, hc_post,
//! compressor, o_proj, qkv_proj_rope, index_query): the golden dims of a plan, the runtime tiling of a token count,
//! typed tensors, and the checks every stage test makes — peak on-chip use
//! within the plan's budget, GM traffic printed, rows past the runtime extent
//! still poisoned — and the run of one case at capacity and capacity − 8 tokens.

#![allow(dead_code)] // each test binary uses part of this module

use std::collections::BTreeMap;

use golden::Dims;
use golden::compare::Report;
use golden::fixtures::random::Draws;
use golden::hc_post::hc_post;
use golden::tensor::{Element, Tensor};
use half::bf16;
use harness::backend::{Tiling, poison};
use harness::kernel_library::LaunchStats;
use kernelgen::plan::Plan;

use super::support;

/// The golden's description of a plan's dims (what the vector stages read).
pub fn dims(p: &Plan) -> Dims {
    support::layer_spec(p).dims
}

/// Runtime extents of `t` tokens on rank 0.
pub fn tiling(p: &Plan, t: usize) -> Tiling {
    support::tiling(&[
        ("t", t),
        ("b", t / p.shape.decode_seq),
        ("nb", p.pools.kv_pool_blocks),
        ("group_t", t * p.shape.tp),
    ])
}

pub fn tensor<T: Element>(shape: Vec<usize>, values: Vec<T>) -> Tensor {
    Tensor::from_vec(shape, values).expect("values fill the shape")
}

/// The first `rows` rows of a `[.., width]` tensor, as a `[rows, width]` tensor.
pub fn head<T: Element + Copy>(t: &Tensor, rows: usize, width: usize) -> Tensor {
    let v = t.values::<T>().expect("dtype as expected");
    tensor(vec![rows, width], v[..rows * width].to_vec())
}

/// Every byte from element `from` on is still the poison pattern.
pub fn assert_unwritten(what: &str, t: &Tensor, from: usize) {
    let tail = &t.as_le_bytes()[from * t.dtype().size()..];
    assert!(
        tail.iter().all(|&b| b == poison(t.dtype())),
        "{what}: elements from {from} on were written"
    );
}

/// hc_post's stream inputs at capacity `cap`, rows ≥ `t` NaN: x_hc uniform on ±1, post on
/// [0, 2) (2·sigmoid), comb on [0, 1) (about doubly stochastic).
pub struct HcStreams {
    pub x_hc: Vec<f32>,
    pub post: Vec<f32>,
    pub comb: Vec<f32>,
}

impl HcStreams {
    pub fn new(draws: &Draws, d: &Dims, cap: usize, t: usize) -> HcStreams {
        let (hc, hidden) = (d.hc_mult, d.hidden);
        let rows = |mut v: Vec<f32>, width: usize| {
            v[t * width..].fill(f32::NAN);
            v
        };
        HcStreams {
            x_hc: rows(
                draws.uniform("x_hc", cap * hc * hidden, -1.0, 1.0),
                hc * hidden,
            ),
            post: rows(draws.uniform("post", cap * hc, 0.0, 2.0), hc),
            comb: rows(draws.uniform("comb", cap * hc * hc, 0.0, 1.0), hc * hc),
        }
    }

    /// The three as the stage's input tensors.
    pub fn insert(&self, d: &Dims, cap: usize, tensors: &mut BTreeMap<String, Tensor>) {
        let hc = d.hc_mult;
        tensors.insert(
            "x_hc".into(),
            tensor(vec![cap, hc, d.hidden], self.x_hc.clone()),
        );
        tensors.insert("post".into(), tensor(vec![cap, hc], self.post.clone()));
        tensors.insert("comb".into(), tensor(vec![cap, hc * hc], self.comb.clone()));
    }

    /// x_out of `t` tokens is `golden::hc_post` of `attn` (bf16 rows) and these, bit for bit,
    /// and its rows past `t` are unwritten.
    pub fn assert_x_out(&self, what: &str, d: &Dims, attn: &[bf16], x_out: &Tensor, t: usize) {
        let (hc, hidden) = (d.hc_mult, d.hidden);
        let want = hc_post(
            d,
            &attn[..t * hidden],
            &self.x_hc[..t * hc * hidden],
            &self.post[..t * hc],
            &self.comb[..t * hc * hc],
        );
        let got = x_out.values::<f32>().expect("x_out is f32");
        if let Some(i) = (0..want.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
            let (row, rest) = (i / (hc * hidden), i % (hc * hidden));
            panic!(
                "{what} t={t} x_out[{row}, {}, {}] = {}, golden {} (bit-exact expected)",
                rest / hidden,
                rest % hidden,
                got[i],
                want[i]
            );
        }
        assert_unwritten("x_out", x_out, t * hc * hidden);
    }
}

pub fn assert_pass(r: &Report) {
    assert!(r.pass, "{}", r.detail());
}

/// Prints `report` and requires it to pass.
pub fn expect(report: Report) {
    println!("  {report}");
    assert_pass(&report);
}

/// The first `rows` rows of a capacity-sized output as a `[rows, width]` tensor; the
/// rest must still be poisoned.
pub fn valid_rows(name: &str, t: &Tensor, rows: usize) -> Tensor {
    let width = t.numel() / t.shape()[0];
    assert_unwritten(name, t, rows * width);
    let cut = rows * width * t.dtype().size();
    Tensor::from_le_bytes(t.dtype(), vec![rows, width], &t.as_le_bytes()[..cut]).unwrap()
}

/// Peak on-chip use of every launch exactly its kernel's budget; GM traffic printed
/// as bytes moved against the minimum (each value read once and written once).
pub fn check_launches(p: &Plan, stats: &[(String, LaunchStats)]) {
    support::check_peaks(&p.variant, stats);
    for (kernel, st) in stats {
        println!(
            "{} {kernel}: GM {} B moved, {} B minimum (ratio {:.3}); {} scalar GM reads",
            p.variant,
            st.gm_bytes(),
            st.gm_min_bytes(),
            st.gm_bytes() as f64 / st.gm_min_bytes().max(1) as f64,
            st.scalar_gm_reads,
        );
    }
}

/// One stage test: its inputs at `t` tokens and its judgement of the outputs.
pub trait StageCase: Sized {
    const STAGE: &'static str;
    fn new(p: &Plan, draws: &Draws, t: usize) -> Self;
    fn tensors(&self, p: &Plan) -> BTreeMap<String, Tensor>;
    fn judge(&self, p: &Plan, got: &BTreeMap<String, Tensor>, t: usize);
}

/// Runs the stage's kernels of variant `name` at capacity and capacity − 8 tokens
/// (outputs poisoned), checks every launch's on-chip peaks and judges the outputs.
pub fn run_variant<C: StageCase>(name: &str, seed: u64) {
    let p = support::plan(name);
    let rt = support::stages(name, &[C::STAGE]);
    let draws = Draws::new(seed + p.shape.tp as u64);
    for t in [p.shape.local_t, p.shape.local_t - 8] {
        let case = C::new(p, &draws, t);
        let mut tensors = case.tensors(p);
        let stats = support::run(rt, &mut tensors, tiling(p, t));
        check_launches(p, &stats);
        case.judge(p, &tensors, t);
    }
}
