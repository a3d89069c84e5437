//! Stage compressor (HCA, ratio 128, hca_csa.md §4.1–4.3, §4.5) on the CPU model against
//! `golden::compressor` (projection, APE, state rows, softmax pooling, and the pooled
//! rows' RMSNorm, RoPE and cmp_kv write as the layer goldens make them).
//! compress_state within mapped_pool(state_slot_mapping, 1e-3, 1e-3, ratio 0) and cmp_kv
//! within mapped_pool(cmp_slot_mapping, 1e-4, 1/128, ratio 0) (hca_csa.md §8.3, standalone
//! compressor): mapped rows within tolerance, every other row bit-identical (no stray
//! writes). Inputs: the HCA fixture's weights, block tables, slot mappings and compressed
//! RoPE rows for starts that do and do not reach a boundary ((p+1) mod 128 == 0 at token
//! 0, 2, 5, 7 of a request, RoPE at window starts 0 and beyond, and none); the last
//! boundary with cmp slot −1 (row discarded) and one token with state slot −1 (not written). x_normed and the initial state are seeded
//! normals (a random history makes the pooling weights matter). Rows of x_normed past the
//! runtime count are NaN; workspaces are poisoned. Peak on-chip memory of every launch is
//! asserted within the plan's budget; GM traffic is printed.
//!
//! Cross-request aliasing (hca_csa.md §4.7): a bit-exact case whose requests pool pages
//! their neighbours write in the same step; it also shows that the other two plausible
//! orders (every write first, own writes only) would fail it.

mod stage_checks;
mod support;

use std::collections::BTreeMap;
use std::time::Instant;

use golden::LayerSpec;
use golden::arith::{narrow, widen};
use golden::compare::{MappedPool, mapped_pool};
use golden::compressor::{self, Geometry, StateTable, Weights};
use golden::fixtures::random::Draws;
use golden::fixtures::{self, FixtureOptions, StartPositions};
use golden::rope::RopeRows;
use golden::tensor::{Element, Tensor, TensorMap};
use half::bf16;
use kernelgen::plan::Plan;
use stage_checks::{assert_pass, check_launches, tensor, tiling};

const STAGE: &str = "compressor";
const SEED: u64 = 20_260_819;

/// Starts cycled over the requests, with the boundary token and the compressed row's
/// RoPE position (window start): 250 (5, 128), 8192 (none), 2045 (2, 1920), 127 (0, 0),
/// 10 (none), 1016 (7, 896), 255 (0, 128), 1000 (none).
const STARTS: [i64; 8] = [250, 8192, 2045, 127, 10, 1016, 255, 1000];

/// The golden's description of one rank of the plan: TP 1 with the rank's request count,
/// so the fixture's tensors have the rank's capacity shapes.
fn layer_spec(p: &Plan) -> LayerSpec {
    let mut spec = support::layer_spec(p);
    let d = &mut spec.dims;
    d.tp = 1;
    d.decode_batch = p.shape.b;
    // Not this stage's pool: room for every request's raw window pages.
    d.kv_pool_blocks = d.kv_pool_blocks.max(p.shape.b * 8);
    spec
}

/// The HCA fixture at capacity with STARTS cycled over the requests.
fn fixture(p: &Plan, spec: &LayerSpec) -> TensorMap {
    let starts = (0..p.shape.b).map(|b| STARTS[b % STARTS.len()]).collect();
    let opts = FixtureOptions {
        seed: SEED,
        starts: StartPositions::List(starts),
        tokens: None,
    };
    fixtures::build(spec, &opts)
        .unwrap_or_else(|e| panic!("{}: fixture: {e}", p.variant))
        .inputs
}

fn values<T: Element + Copy>(m: &TensorMap, name: &str) -> Vec<T> {
    m.values::<T>(name)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .to_vec()
}

/// The first `rows` rows of `name` as a tensor of that many rows.
fn rows<T: Element + Copy>(m: &TensorMap, name: &str, rows: usize) -> Tensor {
    let t = m.get(name).expect("fixture tensor");
    let mut shape = t.shape().to_vec();
    let width: usize = shape[1..].iter().product();
    shape[0] = rows;
    tensor(shape, values::<T>(m, name)[..rows * width].to_vec())
}

/// One case: the capacity fixture's tensors cut to `t` tokens (the tables keep the
/// capacity batch's private pages), with the test's edits.
#[derive(Clone)]
struct Case {
    t: usize,
    inputs: BTreeMap<String, Tensor>,
    x_normed: Vec<bf16>,
}

fn case(p: &Plan, spec: &LayerSpec, fx: &TensorMap, draws: &Draws, t: usize) -> Case {
    let d = &spec.dims;
    let (cap, hidden, seq) = (p.shape.local_t, d.hidden, d.seq);
    let c = p.compressor.as_ref().unwrap();
    let mut x_normed = narrow(&draws.normal("x_normed", cap * hidden, 1.0));
    x_normed[t * hidden..].fill(bf16::NAN);
    let state_len = values::<f32>(fx, "compress_state").len();
    let (hd, width) = (c.head_dim, c.state_row_width);
    let state: Vec<f32> = draws
        .normal("state", state_len, 0.6)
        .into_iter()
        .enumerate()
        .map(|(i, v)| if i % width < hd { v } else { v * 1.2 })
        .collect();
    let positions = values::<i32>(fx, "position_ids");
    let mut state_slots = values::<i64>(fx, "state_slot_mapping");
    let mut cmp_slots = values::<i64>(fx, "cmp_slot_mapping");
    // A token that writes no state row, and the last boundary's row discarded.
    state_slots[3] = -1;
    let boundaries: Vec<usize> = (0..t).filter(|&i| cmp_slots[i] >= 0).collect();
    assert!(boundaries.len() >= 2, "the starts reach boundaries");
    cmp_slots[*boundaries.last().unwrap()] = -1;
    // Capacity tails: slot 0 and position 0, so reading them would write row 0.
    state_slots[t..].fill(0);
    cmp_slots[t..].fill(0);
    let mut pos = positions.clone();
    pos[t..].fill(0);
    let b = t / seq;
    let mut inputs = BTreeMap::new();
    let mut put = |name: &str, v: Tensor| {
        inputs.insert(name.to_string(), v);
    };
    put("x_normed", tensor(vec![cap, hidden], x_normed.clone()));
    for name in ["cmp_wkv", "cmp_wgate", "cmp_norm_w"] {
        put(name, fx.get(name).unwrap().clone());
    }
    put("cmp_ape", fx.get("cmp_ape").unwrap().clone());
    put("cmp_freqs_cos", fx.get("cmp_freqs_cos").unwrap().clone());
    put("cmp_freqs_sin", fx.get("cmp_freqs_sin").unwrap().clone());
    put("position_ids", tensor(vec![cap], pos));
    put("state_slot_mapping", tensor(vec![cap], state_slots));
    put("cmp_slot_mapping", tensor(vec![cap], cmp_slots));
    put(
        "compress_state_block_table",
        rows::<i32>(fx, "compress_state_block_table", b),
    );
    let state_shape = fx.get("compress_state").unwrap().shape().to_vec();
    put("compress_state", tensor(state_shape, state));
    put("cmp_kv", fx.get("cmp_kv").unwrap().clone());
    Case {
        t,
        inputs,
        x_normed,
    }
}

/// The golden's state and cmp_kv for `case` (the HCA layer golden's compressor part).
fn golden(p: &Plan, spec: &LayerSpec, case: &Case) -> (Vec<f32>, Vec<bf16>) {
    let d = &spec.dims;
    let c = p.compressor.as_ref().unwrap();
    let t = case.t;
    let get = |name: &str| &case.inputs[name];
    let f32s = |name: &str| get(name).values::<f32>().unwrap().to_vec();
    let bf16s = |name: &str| get(name).values::<bf16>().unwrap().to_vec();
    let i64s = |name: &str| get(name).values::<i64>().unwrap()[..t].to_vec();
    let positions = get("position_ids").values::<i32>().unwrap()[..t].to_vec();
    let table = get("compress_state_block_table");
    let mut state = f32s("compress_state");
    let norm_w = bf16s("cmp_norm_w");
    let pooled = compressor::update_and_pool(
        Geometry {
            ratio: c.ratio,
            head_dim: c.head_dim,
            overlap: false,
            state_block: c.state_block_size,
        },
        &widen(&case.x_normed[..t * d.hidden]),
        d.hidden,
        d.seq,
        Weights {
            wkv: &bf16s("cmp_wkv"),
            wgate: &bf16s("cmp_wgate"),
            ape: &f32s("cmp_ape"),
            norm_w: &norm_w,
        },
        &positions,
        &i64s("state_slot_mapping"),
        StateTable {
            entries: table.values::<i32>().unwrap(),
            width: table.shape()[1],
        },
        &mut state,
        ("state_slot_mapping", "compress_state_block_table"),
    )
    .expect("golden compressor");
    let rope = RopeRows {
        half: d.rope_dim / 2,
        cos: f32s("cmp_freqs_cos"),
        sin: f32s("cmp_freqs_sin"),
    };
    let mut cmp_kv = bf16s("cmp_kv");
    assert!(
        pooled.len() >= 2,
        "{}: the case pools at least two rows",
        p.variant
    );
    compressor::insert_pooled(
        pooled,
        &norm_w,
        d.rms_eps,
        &rope,
        d.seq,
        &mut cmp_kv,
        &i64s("cmp_slot_mapping"),
    )
    .expect("golden cmp_kv write");
    (state, cmp_kv)
}

fn variant(name: &str) {
    let p = support::plan(name);
    let c = p.compressor.as_ref().expect("HCA plans a compressor");
    let rt = support::stages(name, &[STAGE]);
    let spec = layer_spec(p);
    let fx = fixture(p, &spec);
    let draws = Draws::new(SEED + p.shape.tp as u64);
    for t in [p.shape.local_t, p.shape.local_t - 8] {
        let case = case(p, &spec, &fx, &draws, t);
        let (want_state, want_cmp) = golden(p, &spec, &case);
        let mut tensors = case.inputs.clone();
        let clock = Instant::now();
        let stats = support::run(rt, &mut tensors, tiling(p, t));
        println!("{name} t={t}: sim {:.3} s", clock.elapsed().as_secs_f64());
        check_launches(p, &stats);
        let mapping = |n: &str| rows::<i64>(&case_map(&case), n, t);
        let state_shape = tensors["compress_state"].shape().to_vec();
        let state = mapped_pool(
            "compress_state",
            &tensors["compress_state"],
            &tensor(state_shape, want_state),
            MappedPool {
                mapping: &mapping("state_slot_mapping"),
                mapping_name: "state_slot_mapping",
                mapping_shape: &[t],
                block_size: c.state_block_size,
                rank_axis: false,
                atol: 1e-3,
                rtol: 1e-3,
                max_error_ratio: 0.0,
            },
        );
        println!("{name} t={t}: {}", state.detail());
        assert_pass(&state);
        let cmp_shape = tensors["cmp_kv"].shape().to_vec();
        let cmp = mapped_pool(
            "cmp_kv",
            &tensors["cmp_kv"],
            &tensor(cmp_shape, want_cmp),
            MappedPool {
                mapping: &mapping("cmp_slot_mapping"),
                mapping_name: "cmp_slot_mapping",
                mapping_shape: &[t],
                block_size: p.pools.block_size,
                rank_axis: false,
                atol: 1e-4,
                rtol: 1.0 / 128.0,
                max_error_ratio: 0.0,
            },
        );
        println!("{name} t={t}: {}", cmp.detail());
        assert_pass(&cmp);
    }
}

/// The case's inputs as a tensor map (for row cuts of its mappings).
fn case_map(case: &Case) -> TensorMap {
    let mut m = TensorMap::new();
    for (k, v) in &case.inputs {
        m.insert(k.clone(), v.clone());
    }
    m
}

#[test]
fn hca_small_tp1_matches_the_golden() {
    variant("hca_small_tp1");
}

#[test]
fn hca_small_tp2_matches_the_golden() {
    variant("hca_small_tp2");
}

#[test]
fn hca_small_tp4_matches_the_golden() {
    variant("hca_small_tp4");
}

/// Exactly representable values for a bit-exact case: x ternary, wkv ternary / 4 (so
/// every projection is exact in f32), old state kv in quarters; every score 0 (wgate,
/// APE and old scores zero), so the pooling weights are exactly 1/128 and the pooled row
/// is an exact mean. What differs between kernel and golden is then only which rows each
/// request sees.
fn exact_values(case: &mut Case, p: &Plan, draws: &Draws) {
    let c = p.compressor.as_ref().unwrap();
    let ternary = |v: f32| {
        if v > 0.7 {
            1.0
        } else if v < -0.7 {
            -1.0
        } else {
            0.0
        }
    };
    let hidden = p.model.hidden;
    let draws_x = draws.normal("exact_x", case.x_normed.len(), 1.0);
    for (x, v) in case.x_normed.iter_mut().zip(draws_x) {
        // rows past the runtime count stay NaN
        if !x.is_nan() {
            *x = bf16::from_f32(ternary(v));
        }
    }
    let cap = case.x_normed.len() / hidden;
    let x = case.x_normed.clone();
    let weights = |stream: &str, scale: f32| -> Vec<bf16> {
        draws
            .normal(stream, c.head_dim * hidden, 1.0)
            .into_iter()
            .map(|v| bf16::from_f32(ternary(v) * scale))
            .collect()
    };
    let put = |case: &mut Case, name: &str, v: Tensor| {
        case.inputs.insert(name.to_string(), v);
    };
    put(case, "x_normed", tensor(vec![cap, hidden], x));
    put(
        case,
        "cmp_wkv",
        tensor(vec![c.head_dim, hidden], weights("exact_wkv", 0.25)),
    );
    put(
        case,
        "cmp_wgate",
        tensor(vec![c.head_dim, hidden], weights("exact_wgate", 0.0)),
    );
    let ape_len = c.ratio * c.head_dim;
    put(
        case,
        "cmp_ape",
        tensor(vec![c.ratio, c.head_dim], vec![0.0f32; ape_len]),
    );
    let state = &case.inputs["compress_state"];
    let shape = state.shape().to_vec();
    let width = c.state_row_width;
    let old: Vec<f32> = draws
        .normal("exact_state", shape.iter().product(), 4.0)
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            if i % width < c.head_dim {
                (v.round() / 4.0).clamp(-4.0, 4.0)
            } else {
                0.0
            }
        })
        .collect();
    put(case, "compress_state", tensor(shape, old));
}

/// Points two history pages of request `b` (at a boundary) at the pages requests b − 1
/// and b + 1 write this step: by the sequential order, b pools b − 1's new rows and b + 1's
/// old ones.
fn alias_neighbours(case: &mut Case, p: &Plan, b: usize) {
    let c = p.compressor.as_ref().unwrap();
    let seq = p.shape.decode_seq;
    let slots = case.inputs["state_slot_mapping"]
        .values::<i64>()
        .unwrap()
        .to_vec();
    let positions = case.inputs["position_ids"]
        .values::<i32>()
        .unwrap()
        .to_vec();
    let written_page = |r: usize| {
        let slot = slots[r * seq + seq - 1];
        assert!(slot >= 0, "request {r} writes its last token's state row");
        slot as usize / c.state_block_size
    };
    let end = (0..seq)
        .map(|s| positions[b * seq + s] as usize)
        .find(|&pos| (pos + 1) % c.ratio == 0)
        .unwrap_or_else(|| panic!("request {b} reaches a boundary"));
    let table = case.inputs.get_mut("compress_state_block_table").unwrap();
    let width = table.shape()[1];
    let mut entries = table.values::<i32>().unwrap().to_vec();
    // History pages, well before the request's own first position (≥ end − 7).
    for (back, writer) in [(64, b - 1), (32, b + 1)] {
        entries[b * width + (end - back) / c.state_block_size] = written_page(writer) as i32;
    }
    *table = tensor(table.shape().to_vec(), entries);
}

/// The first element at which `got` and `want` differ in bits, if any.
fn first_difference(got: &Tensor, want: &Tensor) -> Option<usize> {
    let size = got.dtype().size();
    let (g, w) = (got.as_le_bytes(), want.as_le_bytes());
    assert_eq!(g.len(), w.len());
    g.chunks(size).zip(w.chunks(size)).position(|(a, b)| a != b)
}

/// Request b pools the state as requests 0..=b left it, with rows b − 1 and b + 1 write in
/// the same step aliased into its window (STARTS: requests 2 and 5 reach boundaries,
/// their neighbours write whole pages): compress_state and cmp_kv bit-identical to the
/// golden. The golden with every write visible first, or with only each request's own
/// writes visible, differs: the case tells the orders apart.
#[test]
fn requests_see_the_writes_of_earlier_requests_only() {
    let name = "hca_small_tp1";
    let p = support::plan(name);
    let rt = support::stages(name, &[STAGE]);
    let spec = layer_spec(p);
    let fx = fixture(p, &spec);
    let draws = Draws::new(SEED);
    let mut case = case(p, &spec, &fx, &draws, p.shape.local_t);
    exact_values(&mut case, p, &draws);
    for b in [2, 5] {
        alias_neighbours(&mut case, p, b);
    }
    let (want_state, want_cmp) = golden(p, &spec, &case);
    let mut tensors = case.inputs.clone();
    let stats = support::run(rt, &mut tensors, tiling(p, case.t));
    check_launches(p, &stats);
    let state_shape = tensors["compress_state"].shape().to_vec();
    assert_eq!(
        first_difference(&tensors["compress_state"], &tensor(state_shape, want_state)),
        None,
        "compress_state differs from the golden"
    );
    let cmp_shape = tensors["cmp_kv"].shape().to_vec();
    let got_cmp = &tensors["cmp_kv"];
    assert_eq!(
        first_difference(got_cmp, &tensor(cmp_shape.clone(), want_cmp)),
        None,
        "cmp_kv differs from the golden"
    );

    // Every write visible before any pooling: run the golden again on its own output state.
    let mut all_first = case.clone();
    all_first
        .inputs
        .insert("compress_state".into(), tensors["compress_state"].clone());
    let (_, later_cmp) = golden(p, &spec, &all_first);
    // Own writes only: every other request's state rows dropped.
    let seq = p.shape.decode_seq;
    let mut own_only = case.clone();
    let mut slots = case.inputs["state_slot_mapping"]
        .values::<i64>()
        .unwrap()
        .to_vec();
    for (tok, slot) in slots.iter_mut().enumerate().take(case.t) {
        if ![2, 5].contains(&(tok / seq)) {
            *slot = -1;
        }
    }
    own_only.inputs.insert(
        "state_slot_mapping".into(),
        tensor(vec![slots.len()], slots),
    );
    let (_, own_cmp) = golden(p, &spec, &own_only);
    for (what, other) in [
        ("every write first", later_cmp),
        ("own writes only", own_cmp),
    ] {
        assert!(
            first_difference(got_cmp, &tensor(cmp_shape.clone(), other)).is_some(),
            "the golden with {what} agrees too: the case does not tell the orders apart"
        );
    }
}
