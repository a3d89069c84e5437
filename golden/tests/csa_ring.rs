//! The ring CSA of pypto-lib PR #1013 (csa_1m.md) on the golden's own fixtures at small
//! dims: the layer's signature at every TP, both boundaries of a step written at 1M and on
//! both sides of the snapshot's 16,384 ceiling, the whole ring committed, pools sized from
//! the positions, identical bits run to run. (The reference's own 1M vectors replay in
//! golden_reference_vectors.rs.)

use golden::fixtures::{self, FixtureOptions, StartPositions};
use golden::signature::{Ext, Role, signature};
use golden::tensor::TensorMap;
use golden::{CsaState, Layer, LayerKind, LayerSpec, RopeTable};

fn ring(tp: usize) -> LayerSpec {
    let mut spec = LayerSpec::small(Layer::Csa, tp);
    spec.dims.rope_table = RopeTable::PerToken;
    spec.dims.max_seq_len = 1 << 20;
    let LayerKind::Csa(c) = &mut spec.kind else {
        unreachable!()
    };
    c.state = CsaState::Ring;
    spec
}

fn case(spec: &LayerSpec, starts: &[i64]) -> TensorMap {
    let opts = FixtureOptions {
        starts: StartPositions::List(starts.to_vec()),
        ..FixtureOptions::default()
    };
    fixtures::build(spec, &opts).unwrap().inputs
}

#[test]
fn ring_fixtures_match_the_signature_at_every_tp() {
    for tp in [1, 2, 4] {
        let spec = ring(tp);
        // The full 1M pools at TP 1; a quarter of them replicated at TP 2 and 4.
        let starts: &[i64] = if tp == 1 {
            &[3, 16376, 262_140, 1_048_568]
        } else {
            &[3, 262_140]
        };
        let inputs = case(&spec, starts);
        let sigs: Vec<_> = signature(&spec, starts.len() * 8)
            .into_iter()
            .filter(|s| s.role != Role::Out)
            .collect();
        assert_eq!(inputs.len(), sigs.len(), "tp{tp}");
        for s in sigs {
            let t = inputs.get(s.name).unwrap();
            assert_eq!(t.dtype(), s.dtype, "{}", s.name);
            let lead = usize::from(tp > 1);
            for (n, e) in t.shape()[lead..].iter().zip(&s.shape) {
                if let Ext::Is(m) = e {
                    assert_eq!(n, m, "tp{tp} {} {:?}", s.name, t.shape());
                }
            }
        }
        // Pools sized from the positions: each request's compressed rows in pages of 32,
        // and a ring of 4 pages per request.
        let b = starts.len();
        let need: usize = starts
            .iter()
            .map(|&s| ((s as usize + 8) / 4).div_ceil(32).max(1))
            .sum();
        let pages = |name: &str| inputs.get(name).unwrap().shape()[lead(tp)];
        assert_eq!(pages("cmp_kv"), need);
        assert_eq!(pages("idx_kv_cache"), need);
        assert_eq!(pages("compress_state"), b * 4);
        assert_eq!(
            inputs.get("compress_state_block_table").unwrap().shape()[lead(tp)..],
            [b, 4]
        );
    }
}

fn lead(tp: usize) -> usize {
    usize::from(tp > 1)
}

/// Rows of `pool` (`[rows, width]` flat) that differ between the inputs and the outputs.
fn changed<T: golden::tensor::Element + PartialEq>(
    inputs: &TensorMap,
    outputs: &TensorMap,
    pool: &str,
    width: usize,
) -> Vec<usize> {
    let (a, b) = (
        inputs.values::<T>(pool).unwrap(),
        outputs.values::<T>(pool).unwrap(),
    );
    (0..a.len() / width)
        .filter(|&r| a[r * width..(r + 1) * width] != b[r * width..(r + 1) * width])
        .collect()
}

#[test]
fn every_boundary_is_written_and_the_whole_ring_committed() {
    // At 1M, below and at the snapshot's ceiling, and at a position 0 start.
    for starts in [vec![1_048_568], vec![16_376, 16_377, 0, 2]] {
        let spec = ring(1);
        let inputs = case(&spec, &starts);
        let out = golden::run(&spec, &inputs).unwrap();
        assert_eq!(out, golden::run(&spec, &inputs).unwrap(), "identical bits");
        // Each request of 8 consecutive positions has exactly two boundaries (p + 1) % 4 == 0.
        let written = changed::<half::bf16>(&inputs, &out, "cmp_kv", spec.dims.head_dim);
        let slots = inputs.values::<i64>("cmp_slot_mapping").unwrap();
        let mut want: Vec<usize> = slots
            .iter()
            .filter(|&&s| s >= 0)
            .map(|&s| s as usize)
            .collect();
        want.sort_unstable();
        assert_eq!(
            want.len(),
            2 * starts.len(),
            "{starts:?}: two boundaries a request"
        );
        assert_eq!(written, want, "{starts:?}: cmp_kv rows written");
        let idx = changed::<f32>(&inputs, &out, "idx_kv_scale", 1);
        assert_eq!(idx, want, "{starts:?}: index-key rows written");
        // Every row of every request's ring takes this step's row.
        let width = 4 * spec.dims.head_dim;
        let state = changed::<f32>(&inputs, &out, "compress_state", width);
        assert_eq!(state.len(), 8 * starts.len(), "{starts:?}: the whole ring");
    }
}
