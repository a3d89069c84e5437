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
use golden::tensor::{Element, Tensor};
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
/// as bytes moved against distinct bytes touched (reads and writes of each byte once).
pub fn check_launches(p: &Plan, stats: &[(String, LaunchStats)]) {
    support::check_peaks(&p.variant, stats);
    for (kernel, st) in stats {
        println!(
            "{} {kernel}: GM {} B moved, {} B distinct (ratio {:.3}); {} scalar GM reads",
            p.variant,
            st.gm_bytes(),
            st.gm_distinct_bytes(),
            st.gm_bytes() as f64 / st.gm_distinct_bytes().max(1) as f64,
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
