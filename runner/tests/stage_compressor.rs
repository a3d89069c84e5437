//! Stage compressor on the CPU model against `golden::compressor` (projection, APE, state
//! rows, softmax pooling, and the pooled rows' RMSNorm, RoPE and cmp_kv write as the layer
//! goldens make them): HCA's ratio 128 (hca_csa.md §4.1–4.3, §4.5) and CSA's overlapping
//! ratio 4 (§4.4: front halves of the previous window, back halves of the current one;
//! only the first boundary of a step pooled, §11.1; RoPE row gathered from the full table
//! at the window start).
//! compress_state within mapped_pool(state_slot_mapping, 1e-3, 1e-3, ratio 0) and cmp_kv
//! within mapped_pool(cmp_slot_mapping, 1e-4, 1/128, ratio 0) (hca_csa.md §8.3, standalone
//! compressor): mapped rows within tolerance, every other row bit-identical (no stray
//! writes). Inputs: the layer fixture's weights, block tables, slot mappings and RoPE rows
//! for starts that do and do not reach a boundary (HCA: (p+1) mod 128 == 0 at token 0, 2,
//! 5, 7 of a request, RoPE at window starts 0 and beyond, and none; CSA: p0 mod 4 = 0, 1,
//! 2, 3, two boundaries in a step, and p0 < 4, the first window without its previous
//! one); the last pooling request's cmp slot −1 (row discarded) and one token with state
//! slot −1 (not written). x_normed and the initial state are seeded normals (a random
//! history makes the pooling weights matter; CSA's never-written rows keep their −inf
//! scores). Rows of x_normed past the runtime count are NaN; workspaces are poisoned. Peak
//! on-chip memory of every launch is asserted to be the plan's budget; GM traffic is
//! printed.
//!
//! Cross-request aliasing (hca_csa.md §4.7): bit-exact cases whose requests pool rows
//! other requests write in the same step (HCA: pages pointed at the neighbours' on
//! purpose; CSA: the fixture's packed state tables do it by themselves); each also shows
//! that the other two plausible orders (every write first, own writes only) would fail it.

mod stage_checks;
mod support;

use std::collections::BTreeMap;
use std::time::Instant;

use golden::LayerSpec;
use golden::arith::{narrow, widen};
use golden::compare::{MappedPool, mapped_pool};
use golden::compressor::{self, Geometry, StateTable, Weights};
use golden::fixtures::collisions::cross_request_state_reads;
use golden::fixtures::random::Draws;
use golden::fixtures::{self, FixtureOptions, StartPositions};
use golden::rope::RopeRows;
use golden::tensor::{Element, Tensor, TensorMap};
use half::bf16;
use kernelgen::plan::Plan;
use stage_checks::{assert_pass, check_launches, tensor, tiling};

const STAGE: &str = "compressor";
const SEED: u64 = 20_260_819;

/// HCA starts cycled over the requests, with the boundary token and the compressed row's
/// RoPE position (window start): 250 (5, 128), 8192 (none), 2045 (2, 1920), 127 (0, 0),
/// 10 (none), 1016 (7, 896), 255 (0, 128), 1000 (none).
const STARTS: [i64; 8] = [250, 8192, 2045, 127, 10, 1016, 255, 1000];

/// CSA starts (every request reaches a boundary), with the first boundary token and the
/// window start: 8 (3 and 7, 8), 2 (1, 0: no previous window), 1001 (2, 1000), 506 (1,
/// 504), 0 (3 and 7, 0: no previous window), 4087 (0, 4084), 3 (0, 0: no previous
/// window), 100 (3 and 7, 100).
const CSA_STARTS: [i64; 8] = [8, 2, 1001, 506, 0, 4087, 3, 100];

/// The starts of the plan's layer.
fn starts(p: &Plan) -> &'static [i64] {
    if p.compressor.as_ref().unwrap().overlap {
        &CSA_STARTS
    } else {
        &STARTS
    }
}

/// Whether the RoPE rows come from the full table (CSA) rather than per-request rows.
fn table_rope(p: &Plan) -> bool {
    p.tensor("cmp_freqs_cos").is_none()
}

/// The token of each request's first boundary, among the first `t` tokens.
fn first_boundaries(p: &Plan, positions: &[i32], t: usize) -> Vec<usize> {
    let (seq, ratio) = (p.shape.decode_seq, p.compressor.as_ref().unwrap().ratio);
    (0..t / seq)
        .filter_map(|b| {
            (b * seq..(b + 1) * seq)
                .find(|&tok| (positions[tok] as usize + 1).is_multiple_of(ratio))
        })
        .collect()
}

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

/// The layer's fixture at capacity with its starts cycled over the requests.
fn fixture(p: &Plan, spec: &LayerSpec) -> TensorMap {
    let list = starts(p);
    let starts = (0..p.shape.b).map(|b| list[b % list.len()]).collect();
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
    let old = values::<f32>(fx, "compress_state");
    let (out, width) = (c.out_width, c.state_row_width);
    // Rows no history reached keep their −inf scores (CSA's fixture).
    let state: Vec<f32> = draws
        .normal("state", old.len(), 0.6)
        .into_iter()
        .zip(&old)
        .enumerate()
        .map(|(i, (v, &o))| match () {
            _ if o.is_infinite() => o,
            _ if i % width < out => v,
            _ => v * 1.2,
        })
        .collect();
    let positions = values::<i32>(fx, "position_ids");
    let mut state_slots = values::<i64>(fx, "state_slot_mapping");
    let mut cmp_slots = values::<i64>(fx, "cmp_slot_mapping");
    // A token that writes no state row, and the last pooled row discarded.
    state_slots[3] = -1;
    let boundaries: Vec<usize> = first_boundaries(p, &positions, t)
        .into_iter()
        .filter(|&i| cmp_slots[i] >= 0)
        .collect();
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
    let rope = if table_rope(p) {
        ["freqs_cos", "freqs_sin"]
    } else {
        ["cmp_freqs_cos", "cmp_freqs_sin"]
    };
    for name in rope {
        put(name, fx.get(name).unwrap().clone());
    }
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

/// The golden's state and cmp_kv for `case` (the layer goldens' compressor part).
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
            overlap: c.overlap,
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
    let half = d.rope_dim / 2;
    let rope = if table_rope(p) {
        // The full table's row at each request's window start (hca_csa.md §4.5).
        let window_starts: Vec<usize> = positions
            .iter()
            .step_by(d.seq)
            .map(|&p0| p0 as usize - p0 as usize % c.ratio)
            .collect();
        RopeRows::gather(
            &bf16s("freqs_cos"),
            &bf16s("freqs_sin"),
            d.rope_dim,
            half,
            &window_starts,
        )
    } else {
        RopeRows {
            half,
            cos: f32s("cmp_freqs_cos"),
            sin: f32s("cmp_freqs_sin"),
        }
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
    let c = p.compressor.as_ref().expect("the layer plans a compressor");
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

#[test]
fn csa_small_tp1_matches_the_golden() {
    variant("csa_small_tp1");
}

#[test]
fn csa_small_tp2_matches_the_golden() {
    variant("csa_small_tp2");
}

/// Exactly representable values for a bit-exact case: x ternary, wkv ternary / 4 (so
/// every projection is exact in f32), old state kv in quarters; every score 0 (wgate,
/// APE and old scores zero), so the pooling weights are exactly 1/128 (HCA; CSA 1/8, or
/// 1/4 in a first window) and the pooled row is an exact mean. What differs between kernel and golden is then only which rows each
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
    let out = c.out_width;
    let weights = |stream: &str, scale: f32| -> Vec<bf16> {
        draws
            .normal(stream, out * hidden, 1.0)
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
        tensor(vec![out, hidden], weights("exact_wkv", 0.25)),
    );
    put(
        case,
        "cmp_wgate",
        tensor(vec![out, hidden], weights("exact_wgate", 0.0)),
    );
    put(
        case,
        "cmp_ape",
        tensor(vec![c.ratio, out], vec![0.0f32; c.ratio * out]),
    );
    let state = &case.inputs["compress_state"];
    let shape = state.shape().to_vec();
    let width = c.state_row_width;
    let old: Vec<f32> = draws
        .normal("exact_state", shape.iter().product(), 4.0)
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            if i % width < out {
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

/// CSA (hca_csa.md §4.4, §4.7): every request pools at its first boundary, and the
/// fixture's packed state tables let requests pool rows that other requests write in the
/// same step (counted here); with exact values compress_state and cmp_kv are
/// bit-identical to the golden's sequential order. The golden with every write visible
/// first, or with only each request's own writes visible, differs.
#[test]
fn csa_requests_see_the_writes_of_earlier_requests_only() {
    let name = "csa_small_tp1";
    let p = support::plan(name);
    let c = p.compressor.as_ref().unwrap();
    let seq = p.shape.decode_seq;
    let rt = support::stages(name, &[STAGE]);
    let spec = layer_spec(p);
    let fx = fixture(p, &spec);
    let draws = Draws::new(SEED);
    let mut case = case(p, &spec, &fx, &draws, p.shape.local_t);
    exact_values(&mut case, p, &draws);
    let ints = |name: &str| case.inputs[name].values::<i64>().unwrap().to_vec();
    let positions = case.inputs["position_ids"]
        .values::<i32>()
        .unwrap()
        .to_vec();
    let table = &case.inputs["compress_state_block_table"];
    let aliased = cross_request_state_reads(
        &positions,
        seq,
        &ints("state_slot_mapping"),
        &ints("cmp_slot_mapping"),
        table.values::<i32>().unwrap(),
        table.shape()[1],
        c.state_block_size,
        c.ratio,
        c.pool_entries,
    );
    println!("{name}: {aliased} pooled rows written by another request this step");
    assert!(aliased > 0, "the fixture's requests pool each other's rows");
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

    // Every write visible before any pooling: the golden again on its own output state.
    let mut all_first = case.clone();
    all_first
        .inputs
        .insert("compress_state".into(), tensors["compress_state"].clone());
    let (_, later_cmp) = golden(p, &spec, &all_first);
    // Own writes only: each request's row from a golden run without the others' writes.
    let slots = ints("state_slot_mapping");
    let cmp_slots = ints("cmp_slot_mapping");
    let hd = c.head_dim;
    let mut own_cmp = case.inputs["cmp_kv"].values::<bf16>().unwrap().to_vec();
    for tok in first_boundaries(p, &positions, case.t) {
        let Ok(row) = usize::try_from(cmp_slots[tok]) else {
            continue;
        };
        let b = tok / seq;
        let mut own = case.clone();
        let only: Vec<i64> = (0..slots.len())
            .map(|i| if i / seq == b { slots[i] } else { -1 })
            .collect();
        own.inputs
            .insert("state_slot_mapping".into(), tensor(vec![only.len()], only));
        let (_, cmp) = golden(p, &spec, &own);
        own_cmp[row * hd..(row + 1) * hd].copy_from_slice(&cmp[row * hd..(row + 1) * hd]);
    }
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
