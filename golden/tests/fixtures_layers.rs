//! HCA / CSA allocators, pool seeding, weights and distributions of the
//! fixtures, and their determinism.

use golden::fixtures::block_table::{BlockTable, compressed_pages, pack_active_rows, window_pages};
use golden::fixtures::metadata::positions;
use golden::fixtures::random::Draws;
use golden::fixtures::weights::{
    e4m3, hadamard, mxfp8_int8_weight, quantize_columns, quantize_rows,
};
use golden::fixtures::{self, DEFAULT_SEED, FixtureError, FixtureOptions};
use golden::quant::Rounding;
use golden::signature::{Ext, Role, signature};
use golden::{Layer, LayerKind, LayerSpec};
use half::bf16;
use std::collections::HashSet;

#[test]
fn fixtures_match_the_layer_signature_at_every_tp() {
    for layer in [Layer::Swa, Layer::Hca, Layer::Csa] {
        for tp in [1, 2, 4] {
            let spec = LayerSpec::small(layer, tp);
            let inputs = fixtures::build(&spec, &FixtureOptions::default())
                .unwrap()
                .inputs;
            let sigs: Vec<_> = signature(&spec, spec.dims.local_t())
                .into_iter()
                .filter(|s| s.role != Role::Out)
                .collect();
            assert_eq!(inputs.len(), sigs.len(), "{layer:?} tp{tp}");
            for s in sigs {
                let t = inputs.get(s.name).unwrap();
                assert_eq!(t.dtype(), s.dtype, "{}", s.name);
                let lead = usize::from(tp > 1);
                if tp > 1 {
                    assert_eq!(t.shape()[0], tp, "{}", s.name);
                }
                for (n, e) in t.shape()[lead..].iter().zip(&s.shape) {
                    if let Ext::Is(m) = e {
                        assert_eq!(n, m, "{layer:?} tp{tp} {} {:?}", s.name, t.shape());
                    }
                }
            }
        }
    }
}

#[test]
fn fixtures_are_deterministic_per_seed() {
    let spec = LayerSpec::small(Layer::Csa, 2);
    let a = fixtures::build(&spec, &FixtureOptions::default()).unwrap();
    let b = fixtures::build(&spec, &FixtureOptions::default()).unwrap();
    assert_eq!(a, b);
    let other = FixtureOptions {
        seed: DEFAULT_SEED + 1,
        ..FixtureOptions::default()
    };
    let c = fixtures::build(&spec, &other).unwrap();
    assert_ne!(a.inputs.get("x_hc").unwrap(), c.inputs.get("x_hc").unwrap());
    assert_eq!(
        a.inputs.get("position_ids").unwrap(),
        c.inputs.get("position_ids").unwrap()
    );
}

#[test]
fn swa_ranks_draw_their_own_tokens_and_share_replicated_weights() {
    let spec = LayerSpec::small(Layer::Swa, 2);
    let inputs = fixtures::build(&spec, &FixtureOptions::default())
        .unwrap()
        .inputs;
    let half = |name: &str, r: usize| {
        let b = inputs.get(name).unwrap().as_le_bytes();
        b[r * b.len() / 2..(r + 1) * b.len() / 2].to_vec()
    };
    assert_ne!(half("x_hc", 0), half("x_hc", 1));
    assert_ne!(half("kv_cache", 0), half("kv_cache", 1));
    assert_eq!(half("wq_a", 0), half("wq_a", 1));
    assert_eq!(half("freqs_cos", 0), half("freqs_cos", 1));
    // wo_a / wo_b are the two shards of one full weight.
    assert_eq!(inputs.get("wo_a").unwrap().shape(), [2, 2, 128, 256]);
    assert_eq!(inputs.get("wo_b").unwrap().shape(), [2, 512, 256]);
}

#[test]
fn hca_ranks_replicate_one_fixture_with_shifted_x_hc() {
    let spec = LayerSpec::small(Layer::Hca, 2);
    let inputs = fixtures::build(&spec, &FixtureOptions::default())
        .unwrap()
        .inputs;
    let x = inputs.values::<f32>("x_hc").unwrap();
    let n = x.len() / 2;
    assert!(x[..n].iter().zip(&x[n..]).all(|(a, b)| *b == *a + 0.015625));
    let kv = inputs.get("kv_cache").unwrap().as_le_bytes();
    assert_eq!(kv[..kv.len() / 2], kv[kv.len() / 2..]);
}

#[test]
fn hca_window_and_compressed_pages_are_consecutive() {
    let starts = [8192, 127, 10];
    let raw = window_pages(&starts, 8, 128, 32, 32768, 512).unwrap();
    // 8192: positions 8065..8199 → logical pages 252..=256 → physical 0..=4.
    assert_eq!(
        (252..=256)
            .map(|c| raw.get(0, c).unwrap())
            .collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    assert_eq!(raw.get(0, 251), Some(-1));
    // 127: positions 0..134 → pages 0..=4 → 5..=9; 10: positions 0..17 → page 0 → 10.
    assert_eq!(raw.get(1, 0), Some(5));
    assert_eq!(raw.get(2, 0), Some(10));
    assert!(matches!(
        window_pages(&starts, 8, 128, 32, 32768, 10),
        Err(FixtureError::Capacity(_))
    ));

    let cmp = compressed_pages(&[8192, 127, 10], 8, 128, 8192, 32, 256).unwrap();
    // (8192 + 8) / 128 = 64 rows → 2 pages; (127 + 8) / 128 = 1 row → 1 page; 0 rows → none.
    assert_eq!(cmp.width, 2);
    assert_eq!(cmp.entries, [0, 1, 2, -1, -1, -1]);
}

#[test]
fn packed_state_rows_are_distinct_and_share_pages_at_disjoint_rows() {
    // Two requests whose active rows collide in the default table.
    let starts = [4, 4 + 8 * 256];
    let pos = positions(&starts, 8);
    let mut table = BlockTable::interleaved(2, 1024, 4);
    pack_active_rows(&mut table, &pos, 8, 8, 4).unwrap();
    let rows: HashSet<i64> = pos
        .iter()
        .enumerate()
        .map(|(t, &p)| table.row(t / 8, i64::from(p), 8))
        .collect();
    assert_eq!(rows.len(), 16);
    // Request 0's logical pages 0 (rows 4..7) and 1 (rows 0..3) share physical
    // page 0 at disjoint rows; request 1 does the same on page 1.
    assert_eq!((table.get(0, 0), table.get(0, 1)), (Some(0), Some(0)));
    assert_eq!((table.get(1, 256), table.get(1, 257)), (Some(1), Some(1)));
}

#[test]
fn csa_state_pools_hold_history_below_each_start_and_minus_inf_elsewhere() {
    let spec = LayerSpec::small(Layer::Csa, 1);
    let LayerKind::Csa(c) = &spec.kind else {
        unreachable!()
    };
    let inputs = fixtures::build(&spec, &FixtureOptions::default())
        .unwrap()
        .inputs;
    let state = inputs.values::<f32>("compress_state").unwrap();
    let width = 4 * spec.dims.head_dim;
    let table = inputs.values::<i32>("compress_state_block_table").unwrap();
    let table_width = c.state_table_blocks(&spec.dims);
    let starts: Vec<i32> = inputs
        .values::<i32>("position_ids")
        .unwrap()
        .iter()
        .step_by(8)
        .copied()
        .collect();
    // Request 0 starts at 8192: its row of position 8191 is history (finite).
    let row = |b: usize, p: usize| table[b * table_width + p / 2] as usize * 2 + p % 2;
    let r = row(0, 8191);
    assert!(
        state[r * width..(r + 1) * width]
            .iter()
            .all(|v| v.is_finite())
    );
    // Request 1 starts at 0: no history; an unwritten row keeps the −inf score half.
    assert_eq!(starts[1], 0);
    let unused = (0..state.len() / width)
        .find(|&r| {
            state[r * width..r * width + width / 2]
                .iter()
                .all(|&v| v == 0.0)
        })
        .unwrap();
    assert!(
        state[unused * width + width / 2..(unused + 1) * width]
            .iter()
            .all(|&v| v == f32::NEG_INFINITY)
    );
}

/// hca_csa.md §4.7: in CSA the reference's tables make requests pool state rows another
/// request writes in the same step at every TP degree, capacity included (FLASH dims).
#[test]
fn csa_requests_pool_rows_other_requests_write_at_every_tp() {
    for tp in [1, 2, 4] {
        let spec = LayerSpec::flash(Layer::Csa, tp);
        let f = fixtures::build(&spec, &FixtureOptions::default()).unwrap();
        assert!(f.state_aliases > 0, "tp {tp}: no cross-request state reads");
    }
}

#[test]
fn csa_default_starts_tile_the_global_batch_across_ranks() {
    let spec = LayerSpec::small(Layer::Csa, 2);
    let inputs = fixtures::build(&spec, &FixtureOptions::default())
        .unwrap()
        .inputs;
    let pos = inputs.values::<i32>("position_ids").unwrap();
    let starts: Vec<i32> = pos.iter().step_by(8).copied().collect();
    // 16 requests over 2 ranks: rank 1 continues the pattern at request 8.
    assert_eq!(
        starts,
        [
            8192, 0, 2, 3, 7, 127, 128, 63, 255, 511, 8192, 0, 2, 3, 7, 127
        ]
    );
}

#[test]
fn weight_quantisation_round_trips_within_half_a_step() {
    let w = Draws::new(1).normal("w", 64 * 48, 0.05);
    let cols = quantize_columns(&w, 48, Rounding::HalfEven);
    for (i, &x) in w.iter().enumerate() {
        let s = cols.scale[i % 48];
        assert!((x - f32::from(cols.values[i]) * s).abs() <= 0.5 * s + 1e-7);
    }
    assert!((0..48).all(|j| (0..64).any(|i| cols.values[i * 48 + j].abs() == 127)));
    let rows = quantize_rows(&w, 48, Rounding::HalfAwayFromZero);
    assert_eq!(rows.scale.len(), 64);
    for (i, &x) in w.iter().enumerate() {
        let s = rows.scale[i / 48];
        assert!((x - f32::from(rows.values[i]) * s).abs() <= 0.5 * s + 1e-7);
    }
}

#[test]
fn e4m3_grid_and_mxfp8_weights() {
    assert_eq!(e4m3(448.0), 448.0);
    assert_eq!(e4m3(-0.3), -0.3125); // 1.25 · 2^-2
    assert_eq!(e4m3(2f32.powi(-9) * 0.6), 2f32.powi(-9)); // subnormal step
    assert_eq!(e4m3(1.0625), 1.0); // tie to even mantissa
    let w = mxfp8_int8_weight(&Draws::new(2), "w", 256, 256, 0.108, 0.56);
    let deq: Vec<f64> = w
        .values
        .iter()
        .enumerate()
        .map(|(i, &q)| f64::from(q) * f64::from(w.scale[i / 256]))
        .collect();
    let mean = deq.iter().sum::<f64>() / deq.len() as f64;
    let std = (deq.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (deq.len() - 1) as f64).sqrt();
    assert!((std - 0.108).abs() < 1e-4, "{std}");
    let levels: HashSet<i8> = w.values.iter().copied().collect();
    assert!(levels.len() < 256 && levels.contains(&127));
}

#[test]
fn hadamard_is_orthogonal_up_to_bf16() {
    let h: Vec<f32> = hadamard(128).iter().map(|v| v.to_f32()).collect();
    assert!(
        h.iter()
            .all(|&v| v.abs() == bf16::from_f32(1.0 / 128f32.sqrt()).to_f32())
    );
    for i in [0, 5, 127] {
        for j in [0, 5, 64, 127] {
            let dot: f32 = (0..128).map(|k| h[i * 128 + k] * h[j * 128 + k]).sum();
            let want = if i == j { 1.0 } else { 0.0 };
            assert!((dot - want).abs() < 1e-3, "({i},{j}) {dot}");
        }
    }
}

#[test]
fn distributions_follow_the_reference_tables() {
    let spec = LayerSpec::small(Layer::Swa, 1);
    let inputs = fixtures::build(&spec, &FixtureOptions::default())
        .unwrap()
        .inputs;
    let x = inputs.values::<f32>("x_hc").unwrap();
    assert!(x.iter().all(|&v| (-1.0..1.0).contains(&v)));
    let kv = inputs.values::<bf16>("kv_cache").unwrap();
    for row in kv.chunks_exact(128).take(50) {
        let ms: f32 = row.iter().map(|v| v.to_f32().powi(2)).sum::<f32>() / 128.0;
        assert!((ms - 1.0).abs() < 0.01, "unit-RMS rows: {ms}");
    }
    let base = inputs.values::<f32>("hc_attn_base").unwrap();
    assert_eq!((base[0], base[23]), (3.9083, -1.2413));
    let fn_std = {
        let v = inputs.values::<f32>("hc_attn_fn").unwrap();
        (v.iter().map(|x| x * x).sum::<f32>() / v.len() as f32).sqrt()
    };
    assert!((fn_std - 0.039).abs() < 0.001, "{fn_std}");
    let csa = fixtures::build(&LayerSpec::small(Layer::Csa, 1), &FixtureOptions::default())
        .unwrap()
        .inputs;
    assert!(
        csa.values::<f32>("attn_sink")
            .unwrap()
            .iter()
            .all(|&s| s == 4.0)
    );
    let xc = csa.values::<f32>("x_hc").unwrap();
    assert!(
        xc.iter().all(|&v| bf16::from_f32(v).to_f32() == v),
        "CSA x_hc is bf16-valued"
    );
}
