//! Whole-layer goldens on seeded fixtures: outputs follow the signature, pools
//! change only at mapped rows, runs are deterministic, and bad inputs are
//! refused with a message instead of a panic.

use abi::DType;
use golden::fixtures::StartPositions;
use golden::fixtures::{self, FixtureOptions};
use golden::signature::{Ext, Role, pool_mapping, signature};
use golden::tensor::{Tensor, TensorError, TensorMap};
use golden::{self, GoldenError, Layer, LayerSpec, RopeTable};

fn case(layer: Layer, tp: usize) -> (LayerSpec, TensorMap) {
    let spec = LayerSpec::small(layer, tp);
    let f = fixtures::build(&spec, &FixtureOptions::default()).unwrap();
    (spec, f.inputs)
}

/// Rows of a pool `[(tp,) pages, block, …]` as byte slices, per rank.
fn rows(t: &Tensor, tp: usize, block: usize) -> Vec<&[u8]> {
    let lead = usize::from(tp > 1);
    let n = tp * t.shape()[lead] * block;
    let width = t.as_le_bytes().len() / n;
    t.as_le_bytes().chunks_exact(width).collect()
}

fn check_layer(layer: Layer, tp: usize) {
    let (spec, inputs) = case(layer, tp);
    let out = golden::run(&spec, &inputs).unwrap();
    let t = LayerSpec::small(layer, tp).dims.local_t();
    let outputs: Vec<_> = signature(&spec, t)
        .into_iter()
        .filter(|s| s.role != Role::In)
        .collect();
    assert_eq!(out.len(), outputs.len());
    for s in &outputs {
        let got = out.get(s.name).unwrap();
        assert_eq!(got.dtype(), s.dtype, "{}", s.name);
        let shape: Vec<usize> = got.shape()[usize::from(tp > 1)..].to_vec();
        for (n, e) in shape.iter().zip(&s.shape) {
            if let Ext::Is(m) = e {
                assert_eq!(n, m, "{} shape {:?}", s.name, got.shape());
            }
        }
        if s.role == Role::Out {
            assert!(
                got.values::<f32>().unwrap().iter().all(|v| v.is_finite()),
                "{}",
                s.name
            );
            continue;
        }
        // Pools: unmapped rows untouched, at least one mapped row rewritten.
        let (mapping, block) = pool_mapping(&spec, s.name).unwrap();
        let slots = inputs.values::<i64>(mapping).unwrap();
        let (before, after) = (
            rows(inputs.get(s.name).unwrap(), tp, block),
            rows(got, tp, block),
        );
        let per_rank = before.len() / tp;
        let mut mapped = vec![false; before.len()];
        let tokens = slots.len() / tp;
        for (i, &r) in slots.iter().enumerate() {
            if r >= 0 {
                mapped[(i / tokens) * per_rank + r as usize] = true;
            }
        }
        let mut rewritten = 0;
        for (r, (b, a)) in before.iter().zip(&after).enumerate() {
            if !mapped[r] {
                assert_eq!(
                    b, a,
                    "{layer:?} tp{tp}: unmapped row {r} of {} changed",
                    s.name
                );
            } else if b != a {
                rewritten += 1;
            }
        }
        assert!(
            rewritten > 0,
            "{layer:?} tp{tp}: no mapped row of {} was written",
            s.name
        );
        if matches!(
            s.name,
            "kv_cache" | "compress_state" | "inner_compress_state"
        ) {
            let n_mapped = mapped.iter().filter(|&&m| m).count();
            assert_eq!(
                rewritten, n_mapped,
                "{layer:?} tp{tp}: every token writes {}",
                s.name
            );
        }
    }
}

#[test]
fn swa_outputs_and_pools() {
    check_layer(Layer::Swa, 1);
    check_layer(Layer::Swa, 2);
}

#[test]
fn hca_outputs_and_pools() {
    check_layer(Layer::Hca, 1);
    check_layer(Layer::Hca, 4);
}

#[test]
fn csa_outputs_and_pools() {
    check_layer(Layer::Csa, 1);
    check_layer(Layer::Csa, 2);
}

#[test]
fn goldens_are_deterministic() {
    for layer in [Layer::Swa, Layer::Hca, Layer::Csa] {
        let (spec, inputs) = case(layer, 2);
        assert_eq!(
            golden::run(&spec, &inputs).unwrap(),
            golden::run(&spec, &inputs).unwrap(),
            "{layer:?}"
        );
    }
}

#[test]
fn swa_does_not_read_position_ids() {
    let (spec, mut inputs) = case(Layer::Swa, 1);
    let want = golden::run(&spec, &inputs).unwrap();
    let n = inputs.get("position_ids").unwrap().numel();
    inputs.insert(
        "position_ids",
        Tensor::from_vec(vec![n], vec![-7i32; n]).unwrap(),
    );
    assert_eq!(golden::run(&spec, &inputs).unwrap(), want);
}

/// The whole RoPE table (rows gathered by position, as Pro passes them) and token-local
/// rows are two forms of one input: SWA and HCA give identical bits with either; a
/// position moved off its row changes the result.
#[test]
fn the_whole_rope_table_gives_the_token_rows_results() {
    for layer in [Layer::Swa, Layer::Hca] {
        for tp in [1, 2] {
            let spec = LayerSpec::small(layer, tp);
            let mut table = spec.clone();
            table.dims.rope_table = RopeTable::Positions;
            table.dims.max_seq_len = 1 << 14;
            let opts = FixtureOptions {
                starts: StartPositions::List(vec![8000, 127, 31, 255, 0, 16375, 128, 9]),
                tokens: Some(64),
                ..FixtureOptions::default()
            };
            let per_token = {
                let mut s = spec.clone();
                s.dims.max_seq_len = 1 << 14;
                s
            };
            let a = fixtures::build(&per_token, &opts).unwrap().inputs;
            let mut b = fixtures::build(&table, &opts).unwrap().inputs;
            assert_eq!(
                b.get("freqs_cos").unwrap().shape()[usize::from(tp > 1)],
                1 << 14
            );
            assert!(
                b.get("cmp_freqs_cos").is_err(),
                "{layer:?}: rows come from the table"
            );
            let got = golden::run(&table, &b).unwrap();
            assert_eq!(
                got,
                golden::run(&per_token, &a).unwrap(),
                "{layer:?} tp {tp}"
            );
            // Position 8000 of request 0 read as 8001: its rows rotate differently.
            let pos = b.values::<i32>("position_ids").unwrap().to_vec();
            let moved: Vec<i32> = pos
                .iter()
                .map(|&p| if p == 8000 { 8001 } else { p })
                .collect();
            let shape = b.get("position_ids").unwrap().shape().to_vec();
            b.insert("position_ids", Tensor::from_vec(shape, moved).unwrap());
            assert_ne!(
                golden::run(&table, &b).unwrap().get("x_out"),
                got.get("x_out")
            );
        }
    }
}

#[test]
fn compressed_layers_see_the_rows_they_compress() {
    // Scaling cmp_kv changes HCA's x_out: attention reads the compressed pool.
    let (spec, inputs) = case(Layer::Hca, 1);
    let base = golden::run(&spec, &inputs).unwrap();
    let mut scaled = inputs.clone();
    let cmp = inputs.get("cmp_kv").unwrap();
    let v: Vec<half::bf16> = cmp
        .values::<half::bf16>()
        .unwrap()
        .iter()
        .map(|x| -*x)
        .collect();
    scaled.insert("cmp_kv", Tensor::from_vec(cmp.shape().to_vec(), v).unwrap());
    let other = golden::run(&spec, &scaled).unwrap();
    assert_ne!(base.get("x_out").unwrap(), other.get("x_out").unwrap());
}

#[test]
fn bad_inputs_are_refused_with_a_message() {
    let (spec, inputs) = case(Layer::Swa, 1);
    let mut missing = inputs.clone();
    missing.remove("wkv");
    let err = golden::run(&spec, &missing).unwrap_err();
    assert_eq!(
        err,
        GoldenError::Tensor(TensorError::Missing { name: "wkv".into() })
    );

    let mut wrong_dtype = inputs.clone();
    wrong_dtype.insert("swa_lens", Tensor::zeros(DType::I64, vec![128]));
    let msg = golden::run(&spec, &wrong_dtype).unwrap_err().to_string();
    assert!(
        msg.contains("swa_lens") && msg.contains("int32") && msg.contains("int64"),
        "{msg}"
    );

    let mut wrong_shape = inputs.clone();
    wrong_shape.insert("attn_sink", Tensor::zeros(DType::F32, vec![7]));
    let msg = golden::run(&spec, &wrong_shape).unwrap_err().to_string();
    assert!(msg.contains("attn_sink") && msg.contains("[8]"), "{msg}");

    let mut bad_slot = inputs.clone();
    let mut slots = inputs.values::<i64>("swa_slot_mapping").unwrap().to_vec();
    slots[3] = 1 << 40;
    bad_slot.insert(
        "swa_slot_mapping",
        Tensor::from_vec(vec![slots.len()], slots).unwrap(),
    );
    let msg = golden::run(&spec, &bad_slot).unwrap_err().to_string();
    assert!(msg.contains("swa_slot_mapping[3]"), "{msg}");

    let mut bad_index = inputs;
    let mut idx = bad_index.values::<i32>("swa_indices").unwrap().to_vec();
    idx[0] = -5;
    bad_index.insert(
        "swa_indices",
        Tensor::from_vec(vec![128, 128], idx).unwrap(),
    );
    let msg = golden::run(&spec, &bad_index).unwrap_err().to_string();
    assert!(msg.contains("swa_indices"), "{msg}");
}

#[test]
fn token_counts_must_follow_the_contract() {
    let spec = LayerSpec::small(Layer::Swa, 1);
    let mut inputs = fixtures::build(&spec, &FixtureOptions::default())
        .unwrap()
        .inputs;
    // 12 tokens: not a multiple of seq = 8.
    inputs.insert("x_hc", Tensor::zeros(DType::F32, vec![12, 4, 512]));
    let msg = golden::run(&spec, &inputs).unwrap_err().to_string();
    assert!(msg.contains("x_hc") && msg.contains("multiple"), "{msg}");
}
