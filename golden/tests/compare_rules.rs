//! The comparators' reference semantics, including the cases that must fail.

use golden::compare::{
    Judged, MappedPool, Report, Rule, allowance, compare_layer, judge_layer, mapped_pool,
    ratio_allclose, ratio_reldiff, topk_sets,
};
use golden::fixtures::{self, FixtureOptions};
use golden::tensor::{Tensor, TensorMap};
use golden::{self, Layer, LayerSpec};
use half::bf16;

fn f32_tensor(shape: &[usize], v: Vec<f32>) -> Tensor {
    Tensor::from_vec(shape.to_vec(), v).unwrap()
}

fn ramp(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 40.0)
        .collect()
}

#[test]
fn allowance_rounds_half_to_even_like_python() {
    assert_eq!(allowance(0.008, 8_388_608), 67_109);
    assert_eq!(allowance(0.5, 5), 2);
    assert_eq!(allowance(0.5, 7), 4);
    assert_eq!(allowance(0.0, 100), 0);
}

#[test]
fn reldiff_passes_identical_and_small_relative_errors() {
    let want = ramp(1000);
    let got: Vec<f32> = want.iter().map(|v| v * (1.0 + 1e-3)).collect();
    let r = ratio_reldiff(
        "x_out",
        &f32_tensor(&[10, 100], got),
        &f32_tensor(&[10, 100], want.clone()),
        3e-3,
        0.008,
        1.0,
    );
    assert!(r.pass && r.bad == 0, "{r}");
    assert!(r.max_abs > 0.0 && r.max_rel <= 3e-3);
    let same = ratio_reldiff(
        "x_out",
        &f32_tensor(&[1000], want.clone()),
        &f32_tensor(&[1000], want),
        3e-3,
        0.008,
        1.0,
    );
    assert_eq!((same.pass, same.max_abs), (true, 0.0));
}

#[test]
fn reldiff_fails_on_one_sign_flip_beyond_the_cap() {
    let want = ramp(1000);
    let mut got = want.clone();
    got[417] = -got[417]; // |value| > 0.02: rdiff = 2 ≥ cap 1
    let r = ratio_reldiff(
        "x_out",
        &f32_tensor(&[10, 100], got),
        &f32_tensor(&[10, 100], want.clone()),
        3e-3,
        0.008,
        1.0,
    );
    assert!(!r.pass, "{r}");
    assert_eq!(r.bad, 1);
    assert!(
        r.bad <= r.allowed,
        "the count alone is within the allowance; the cap fails it"
    );
    assert!(r.reason.as_deref().unwrap().contains("cap"));
    assert_eq!(r.worst[0].flat, 417);
    assert_eq!(r.worst[0].index, [4, 17]);
    assert_eq!(
        (r.worst[0].got, r.worst[0].want),
        (f64::from(-want[417]), f64::from(want[417]))
    );
}

#[test]
fn reldiff_fails_when_bad_points_exceed_the_allowance() {
    let want = ramp(1000);
    let got: Vec<f32> = want
        .iter()
        .enumerate()
        .map(|(i, v)| if i % 100 == 0 { v * 1.5 } else { *v })
        .collect();
    let r = ratio_reldiff(
        "x_out",
        &f32_tensor(&[1000], got),
        &f32_tensor(&[1000], want),
        3e-3,
        0.008,
        1.0,
    );
    // 10 bad points (rdiff ≈ 0.33 < cap) against round(0.008 · 1000) = 8 allowed.
    assert_eq!((r.pass, r.bad, r.allowed), (false, 10, 8), "{r}");
}

#[test]
fn a_nan_fails_every_comparator() {
    let want = ramp(100);
    let mut got = want.clone();
    got[3] = f32::NAN;
    let (g, w) = (f32_tensor(&[100], got), f32_tensor(&[100], want));
    let r = ratio_reldiff("x_out", &g, &w, 3e-3, 0.5, 1.0);
    assert!(
        !r.pass && r.reason.as_deref().unwrap().contains("NaN=1"),
        "{r}"
    );
    let a = ratio_allclose("o", &g, &w, 1.0, 1.0, 0.5);
    assert!(!a.pass, "{a}");
}

#[test]
fn allclose_with_a_zero_ratio_fails_on_one_bad_element() {
    let want = ramp(64);
    let mut got = want.clone();
    got[9] += 1e-4 + want[9].abs() / 128.0 + 1e-3;
    let r = ratio_allclose(
        "o",
        &f32_tensor(&[8, 8], got.clone()),
        &f32_tensor(&[8, 8], want.clone()),
        1e-4,
        1.0 / 128.0,
        0.0,
    );
    assert!(!r.pass && r.bad == 1, "{r}");
    assert_eq!(r.worst[0].index, [1, 1]);
    let ok = ratio_allclose(
        "o",
        &f32_tensor(&[8, 8], got),
        &f32_tensor(&[8, 8], want),
        1e-4,
        1.0 / 128.0,
        0.02,
    );
    assert!(ok.pass, "{ok}");
}

#[test]
fn the_report_line_has_the_documented_form() {
    let want = ramp(1000);
    let mut got = want.clone();
    got[0] += 0.01; // want[0] = −1.25: rdiff 0.01 / 1.25 = 8e-3
    let r = ratio_reldiff(
        "x_out",
        &f32_tensor(&[1000], got),
        &f32_tensor(&[1000], want),
        3e-3,
        0.008,
        1.0,
    );
    assert_eq!(
        r.to_string(),
        "x_out  PASS  bad 1/1000 (allowed 8)  max|d| 1.0e-2  max rel 8.0e-3 (cap 1)"
    );
    assert!(r.detail().contains("rule: ratio_reldiff(diff_thd=0.003"));
    assert!(r.worst.len() <= 5);
}

/// A `[pages 4, block 2, width 3]` bf16 pool and a mapping onto rows 1 and 6.
fn pool_case() -> (Tensor, Tensor, Tensor) {
    let v: Vec<bf16> = (0..24).map(|i| bf16::from_f32(i as f32 / 8.0)).collect();
    let pool = Tensor::from_vec(vec![4, 2, 3], v).unwrap();
    let mapping = Tensor::from_vec(vec![3], vec![1i64, -1, 6]).unwrap();
    (pool.clone(), pool, mapping)
}

fn mapped(got: &Tensor, want: &Tensor, mapping: &Tensor) -> golden::compare::Report {
    mapped_pool(
        "kv_cache",
        got,
        want,
        MappedPool {
            mapping,
            mapping_name: "slots",
            mapping_shape: &[3],
            block_size: 2,
            rank_axis: false,
            atol: 1e-4,
            rtol: 1.0 / 128.0,
            max_error_ratio: 0.0,
        },
    )
}

fn with(t: &Tensor, flat: usize, v: f32) -> Tensor {
    let mut vals = t.values::<bf16>().unwrap().to_vec();
    vals[flat] = bf16::from_f32(v);
    Tensor::from_vec(t.shape().to_vec(), vals).unwrap()
}

#[test]
fn mapped_pool_tolerates_mapped_rows_and_fails_on_a_changed_unmapped_row() {
    let (got, want, mapping) = pool_case();
    assert!(mapped(&got, &want, &mapping).pass);
    // Row 6 is mapped: a 1-ulp difference is within tolerance.
    let near = with(
        &got,
        6 * 3,
        f32::from(bf16::from_bits(
            want.values::<bf16>().unwrap()[18].to_bits() + 1,
        )),
    );
    let r = mapped(&near, &want, &mapping);
    assert!(r.pass && r.numel == 6, "{r}");
    // Row 6 off by far more: one bad point, ratio 0.
    assert!(!mapped(&with(&got, 6 * 3 + 1, 9.0), &want, &mapping).pass);
    // Row 2 is unmapped: any change fails, bit-exactly.
    let stray = with(
        &got,
        2 * 3 + 1,
        f32::from(want.values::<bf16>().unwrap()[7]) + 1.0 / 64.0,
    );
    let r = mapped(&stray, &want, &mapping);
    assert!(!r.pass, "{r}");
    assert!(
        r.reason.as_deref().unwrap().contains("unmapped row 2"),
        "{r}"
    );
    assert_eq!(r.worst[0].index, [1, 0, 1]);
    // −0 over +0 in an unmapped row is a stray write too.
    let signed = with(&got, 0, -0.0);
    assert!(!mapped(&signed, &want, &mapping).pass);
}

#[test]
fn mapped_pool_rejects_broken_mappings() {
    let (got, want, _) = pool_case();
    for (slots, needle) in [
        (vec![1i64, -2, 6], "only -1"),
        (vec![1, 8, 6], "outside physical row range [0, 8)"),
        (vec![1, 6, 6], "twice"),
    ] {
        let mapping = Tensor::from_vec(vec![3], slots).unwrap();
        let r = mapped(&got, &want, &mapping);
        assert!(
            !r.pass && r.reason.as_deref().unwrap().contains(needle),
            "{r}"
        );
    }
    let float_mapping = Tensor::from_vec(vec![3], vec![1.0f32, 2.0, 3.0]).unwrap();
    assert!(!mapped(&got, &want, &float_mapping).pass);
    let short = Tensor::from_vec(vec![2], vec![1i64, 2]).unwrap();
    assert!(!mapped(&got, &want, &short).pass);
}

#[test]
fn sentinel_rows_are_compared_bitwise_not_numerically() {
    // A state pool with −inf score halves: equal unmapped rows pass; a plain
    // allclose over the pool fails on the infinities.
    let mut v = vec![0.5f32; 4 * 2 * 4];
    v.chunks_exact_mut(4)
        .for_each(|r| r[2..].fill(f32::NEG_INFINITY));
    v[4..8].copy_from_slice(&[0.1, 0.2, 0.3, 0.4]); // row 1: written, finite
    let pool = Tensor::from_vec(vec![4, 2, 4], v).unwrap();
    let mapping = Tensor::from_vec(vec![3], vec![1i64, -1, -1]).unwrap();
    let r = mapped_pool(
        "compress_state",
        &pool,
        &pool,
        MappedPool {
            mapping: &mapping,
            mapping_name: "state_slot_mapping",
            mapping_shape: &[3],
            block_size: 2,
            rank_axis: false,
            atol: 1e-3,
            rtol: 1e-3,
            max_error_ratio: 0.005,
        },
    );
    assert!(r.pass, "{r}");
    assert!(!ratio_allclose("compress_state", &pool, &pool, 1e-3, 1e-3, 0.005).pass);
}

#[test]
fn topk_sets_tolerate_boundary_ties_only() {
    let scores = [5.0f32, 4.0, 3.0, 3.0, 1.0, 0.5];
    let k = 3;
    let want = [0, 1, 2];
    let check = |got: &[i32]| topk_sets("topk", got, &want, k, &scores, 1e-4, 1.0 / 128.0);
    assert!(check(&[0, 1, 2]).pass);
    let tie = check(&[0, 1, 3]);
    assert!(tie.pass, "index 3 ties with the boundary score: {tie}");
    assert!(
        !check(&[0, 1, 4]).pass,
        "a strictly worse candidate is a real miss"
    );
    assert!(!check(&[1, 0, 2]).pass, "descending order is required");
    assert!(!check(&[0, 0, 2]).pass, "no duplicates");
    assert!(!check(&[0, 1, -1]).pass, "the same number of selections");
    assert!(!check(&[0, 1, 9]).pass, "no out-of-range index");
    let r = topk_sets(
        "topk",
        &[0, 1, -1, 0, 1, 2],
        &[0, 1, -1, 0, 1, 2],
        3,
        &[scores, scores].concat(),
        1e-4,
        0.0,
    );
    assert!(r.pass && r.numel == 2, "{r}");
    assert!(matches!(r.rule, Rule::TopK { .. }));
}

#[test]
fn layer_comparison_passes_a_golden_against_itself_and_catches_a_stray_write() {
    let spec = LayerSpec::small(Layer::Hca, 2);
    let inputs = fixtures::build(&spec, &FixtureOptions::default())
        .unwrap()
        .inputs;
    let want = golden::run(&spec, &inputs).unwrap();
    let reports = compare_layer(&spec, &inputs, &want, &want);
    assert_eq!(reports.len(), 4);
    assert!(reports.iter().all(|r| r.pass && r.bad == 0), "{reports:?}");
    // A write to an unmapped cmp_kv row on rank 1 fails the pool check.
    let mut got = want.clone();
    let cmp = want.get("cmp_kv").unwrap();
    let mut v = cmp.values::<bf16>().unwrap().to_vec();
    let last = v.len() - 1;
    v[last] = bf16::from_f32(v[last].to_f32() + 1.0);
    got.insert("cmp_kv", Tensor::from_vec(cmp.shape().to_vec(), v).unwrap());
    let reports = compare_layer(&spec, &inputs, &got, &want);
    let cmp_report = reports.iter().find(|r| r.output == "cmp_kv").unwrap();
    assert!(
        !cmp_report.pass && cmp_report.reason.as_deref().unwrap().contains("rank 1"),
        "{cmp_report}"
    );
}

/// A CSA case's traced golden and its own top-k lists `[t, k]`.
fn csa_case() -> (LayerSpec, TensorMap, golden::Traced, Vec<i32>, usize) {
    let spec = LayerSpec::small(Layer::Csa, 1);
    let inputs = fixtures::build(&spec, &FixtureOptions::default())
        .unwrap()
        .inputs;
    let traced = golden::run_traced(&spec, &inputs).unwrap();
    let own = traced.trace.values::<i32>("topk_idx").unwrap().to_vec();
    let k = traced.trace.get("topk_idx").unwrap().shape()[1];
    (spec, inputs, traced, own, k)
}

fn named<'a>(judged: &'a Judged, output: &str) -> &'a Report {
    judged.reports.iter().find(|r| r.output == output).unwrap()
}

/// A device's probes: the golden's index queries with `weights` as head weights, and
/// `lists` as top-k.
fn probes(traced: &golden::Traced, weights: Vec<f32>, lists: Vec<i32>, k: usize) -> TensorMap {
    let mut m = TensorMap::new();
    for name in ["idx_q", "idx_q_scale"] {
        m.insert(name, traced.trace.get(name).unwrap().clone());
    }
    let shape = traced.trace.get("idx_weights").unwrap().shape().to_vec();
    m.insert("idx_weights", Tensor::from_vec(shape, weights).unwrap());
    m.insert(
        "topk_idx",
        Tensor::from_vec(vec![lists.len() / k, k], lists).unwrap(),
    );
    m
}

#[test]
fn a_csa_layer_is_judged_by_the_devices_exact_top_k_of_its_own_queries() {
    let (spec, inputs, traced, own, k) = csa_case();
    let golden::LayerKind::Csa(c) = &spec.kind else {
        unreachable!()
    };
    // A device whose head weights differ from the golden's in one element by 0.1 %
    // (within idx_weights' thresholds) selects another row for some token, one that
    // changes its x_out (not an order swap, not a key duplicated on an aliased page).
    let weights = traced.trace.values::<f32>("idx_weights").unwrap().to_vec();
    let (weights, choice) = (0..weights.len())
        .flat_map(|i| [1.001f32, 0.999].map(|f| (i, f)))
        .find_map(|(i, f)| {
            let mut w = weights.clone();
            w[i] *= f;
            let device = probes(&traced, w.clone(), Vec::new(), k);
            let rows = golden::csa_device_scores(&spec, &inputs, &device, &traced.outputs).unwrap();
            let choice = golden::indexer::top_k_rows(c, &rows);
            let sets = |l: &[i32]| -> Vec<Vec<i32>> {
                l.chunks_exact(k)
                    .map(|r| {
                        let mut r = r.to_vec();
                        r.sort();
                        r
                    })
                    .collect()
            };
            if sets(&choice) == sets(&own) {
                return None;
            }
            let device = golden::run_given(&spec, &inputs, &choice).unwrap();
            compare_layer(&spec, &inputs, &device, &traced.outputs)
                .iter()
                .any(|r| r.output == "x_out" && r.max_abs > 0.0)
                .then_some((w, choice))
        })
        .expect("some head weight moves a boundary row");
    let differ = choice
        .chunks_exact(k)
        .zip(own.chunks_exact(k))
        .filter(|(a, b)| a != b)
        .count();
    let device = golden::run_given(&spec, &inputs, &choice).unwrap();
    let judged = judge_layer(
        &spec,
        &inputs,
        (
            &device,
            &probes(&traced, weights.clone(), choice.clone(), k),
        ),
        &traced,
    )
    .unwrap();
    assert!(
        judged.reports.iter().all(|r| r.pass),
        "{:?}",
        judged.reports
    );
    let names: Vec<&str> = judged.reports.iter().map(|r| r.output.as_str()).collect();
    assert_eq!(
        names[names.len() - 4..],
        ["idx_q", "idx_q_scale", "idx_weights", "topk_idx"]
    );
    assert!(
        judged
            .notes
            .iter()
            .any(|n| n.contains(&format!("{differ} of"))),
        "{:?}",
        judged.notes
    );
    // The device's choice with the golden's own weights is not the exact top-k.
    let judged = judge_layer(
        &spec,
        &inputs,
        (
            &device,
            &probes(
                &traced,
                traced.trace.values::<f32>("idx_weights").unwrap().to_vec(),
                choice,
                k,
            ),
        ),
        &traced,
    )
    .unwrap();
    let topk = named(&judged, "topk_idx");
    assert!(!topk.pass, "{}", topk.detail());
}

#[test]
fn a_csa_layer_fails_on_a_top_k_that_is_not_its_exact_choice() {
    let (spec, inputs, traced, own, k) = csa_case();
    let weights = traced.trace.values::<f32>("idx_weights").unwrap().to_vec();
    // Token 0's best row replaced by a visible row it did not select.
    let other = (0..).find(|j| !own[..k].contains(j)).unwrap();
    let mut choice = own.clone();
    choice[0] = other;
    let device = golden::run_given(&spec, &inputs, &choice).unwrap();
    let judged = judge_layer(
        &spec,
        &inputs,
        (&device, &probes(&traced, weights, choice, k)),
        &traced,
    )
    .unwrap();
    let topk = named(&judged, "topk_idx");
    assert!(!topk.pass, "{}", topk.detail());
    assert!(judged.notes.is_empty(), "{:?}", judged.notes);
    // Without its intermediates probed, a CSA run cannot pass.
    let judged = judge_layer(
        &spec,
        &inputs,
        (&traced.outputs, &TensorMap::new()),
        &traced,
    )
    .unwrap();
    for name in ["idx_q", "idx_q_scale", "idx_weights", "topk_idx"] {
        let r = named(&judged, name);
        assert!(!r.pass, "{}", r.detail());
    }
}
