//! TP > 1 goldens move data like the collectives (all-to-all of group slabs,
//! sharded o_proj, reduce-scatter) instead of re-running TP 1 per rank; the
//! two must agree within the x_out comparator, and the per-rank fronts
//! (pools) must be identical.

use golden::compare::ratio_reldiff;
use golden::fixtures::{self, FixtureOptions};
use golden::tensor::{Tensor, TensorMap};
use golden::{self, Layer, LayerSpec};

/// Rank `rank` of a `[tp]`-stacked case as a TP 1 case: the rank's slices,
/// with wo_a / wo_b reassembled from every rank's shard (the reference's
/// TP > 1 golden).
fn as_tp1_case(spec: &LayerSpec, stacked: &TensorMap, rank: usize) -> TensorMap {
    let d = &spec.dims;
    let tp1 = spec.with_tp(1).dims;
    stacked
        .iter()
        .map(|(name, t)| {
            let tensor = match name {
                "wo_a" => Tensor::from_le_bytes(
                    t.dtype(),
                    vec![d.o_groups, d.o_lora, d.o_group_in()],
                    t.as_le_bytes(),
                )
                .unwrap(),
                "wo_b" => {
                    let v = t.values::<i8>().unwrap();
                    let (w, full) = (d.local_o_width(), d.o_groups * d.o_lora);
                    let mut out = vec![0i8; d.hidden * full];
                    for r in 0..d.tp {
                        for n in 0..d.hidden {
                            out[n * full + r * w..n * full + (r + 1) * w].copy_from_slice(
                                &v[(r * d.hidden + n) * w..(r * d.hidden + n + 1) * w],
                            );
                        }
                    }
                    Tensor::from_vec(vec![d.hidden, full], out).unwrap()
                }
                _ => {
                    let n = t.as_le_bytes().len() / d.tp;
                    let mut bytes = t.as_le_bytes()[rank * n..(rank + 1) * n].to_vec();
                    let mut shape = t.shape()[1..].to_vec();
                    // HCA's cmp_freqs rows are sized by the per-rank request capacity.
                    if name.starts_with("cmp_freqs") {
                        shape[0] = tp1.local_batch();
                        bytes.resize(shape.iter().product::<usize>() * 4, 0);
                    }
                    Tensor::from_le_bytes(t.dtype(), shape, &bytes).unwrap()
                }
            };
            (name.to_string(), tensor)
        })
        .collect()
}

fn agree(layer: Layer, tp: usize, diff_thd: f32) {
    let spec = LayerSpec::small(layer, tp);
    let case = fixtures::build(&spec, &FixtureOptions::default()).unwrap();
    let out = golden::run(&spec, &case.inputs).unwrap();
    let tp1_spec = spec.with_tp(1);
    for rank in 0..tp {
        let rank_case = as_tp1_case(&spec, &case.inputs, rank);
        let want = golden::run(&tp1_spec, &rank_case).unwrap();
        for (name, t) in out.iter() {
            let n = t.as_le_bytes().len() / tp;
            let got_bytes = &t.as_le_bytes()[rank * n..(rank + 1) * n];
            let want_t = want.get(name).unwrap();
            if name == "x_out" {
                let got =
                    Tensor::from_le_bytes(t.dtype(), want_t.shape().to_vec(), got_bytes).unwrap();
                let report = ratio_reldiff("x_out", &got, want_t, diff_thd, 0.008, 1.0);
                println!("{layer:?} tp{tp} rank {rank}: {report}");
                assert!(report.pass, "{}", report.detail());
            } else {
                assert_eq!(
                    got_bytes,
                    want_t.as_le_bytes(),
                    "{layer:?} tp{tp} rank {rank}: pool {name}"
                );
            }
        }
    }
}

#[test]
fn swa_tp2_and_tp4_agree_with_tp1_per_rank() {
    agree(Layer::Swa, 2, 3e-3);
    agree(Layer::Swa, 4, 3e-3);
}

#[test]
fn hca_tp2_and_tp4_agree_with_tp1_per_rank() {
    agree(Layer::Hca, 2, 3e-3);
    agree(Layer::Hca, 4, 3e-3);
}

#[test]
fn csa_tp2_and_tp4_agree_with_tp1_per_rank() {
    agree(Layer::Csa, 2, 4e-3);
    agree(Layer::Csa, 4, 4e-3);
}
