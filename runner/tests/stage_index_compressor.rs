//! Stage index_compressor on the CPU model against the golden's inner compressor
//! (`golden::compressor::update_and_pool` with the indexer's geometry, then
//! `golden::indexer::write_index_keys`, as the CSA layer golden calls them): projection,
//! APE, state rows, the overlapping ratio-4 pooling at the first boundary of a step
//! (hca_csa.md §4.1, §4.2, §4.4), RMSNorm and RoPE with the full table's row at the step's
//! first position p0 (not the window start, §4.5 end), bf16, the Hadamard product and the
//! int8 quant-on-write into idx_kv_cache / idx_kv_scale (§5.3).
//! inner_compress_state within mapped_pool(inner_state_slot_mapping, 1e-3, 1e-3, ratio 0),
//! idx_kv_cache within mapped_pool(idx_slot_mapping, atol 1, rtol 0, ratio 0.01) and
//! idx_kv_scale within mapped_pool(idx_slot_mapping, 1e-4, 1/128, ratio 0.01) (§8.3):
//! mapped rows within tolerance, every other row bit-identical (no stray writes).
//! Inputs: the CSA fixture's weights, tables, slot mappings and RoPE table for starts
//! with p0 mod 4 = 0, 1, 2, 3 (two boundaries in a step, only the first written), and
//! p0 < 4 (the first window without its previous one); the last written key's idx slot
//! −1 (nothing written) and one token with inner state slot −1 (no state row). x_normed
//! and the initial state are seeded normals (never-written rows keep their −inf scores).
//! Rows of x_normed past the runtime count are NaN; workspaces are poisoned. Peak on-chip
//! memory of every launch is asserted to be the plan's budget; GM traffic is printed.
//!
//! Cross-request aliasing (§4.7): the fixture's packed inner state tables let requests pool
//! rows other requests write in the same step; with exact values (and the identity as the
//! Hadamard matrix, so that the keys are exact too) the state, keys and scales are
//! bit-identical to the golden's sequential order, which the two other plausible orders
//! (every write first, own writes only) are not.

mod stage_checks;
mod support;

use std::collections::BTreeMap;
use std::time::Instant;

use golden::arith::{narrow, widen};
use golden::compare::{MappedPool, mapped_pool};
use golden::compressor::{self, Geometry, StateTable, Weights};
use golden::fixtures::collisions::cross_request_state_reads;
use golden::fixtures::random::Draws;
use golden::fixtures::{self, FixtureOptions, StartPositions};
use golden::indexer;
use golden::rope::RopeRows;
use golden::tensor::{Element, Tensor, TensorMap};
use golden::{LayerKind, LayerSpec};
use half::bf16;
use kernelgen::plan::{CompressorPlan, Plan};
use stage_checks::{assert_pass, check_launches, tensor, tiling};

const STAGE: &str = "index_compressor";
const SEED: u64 = 20_260_819;

/// Starts (every request reaches a boundary), with the first boundary token and the
/// step's RoPE row p0: 8 (3 and 7), 2 (1: no previous window), 1001 (2), 506 (1), 0 (3
/// and 7: no previous window), 4087 (0), 3 (0: no previous window), 100 (3 and 7). The
/// main compressor would rotate at the window start p0 − p0 mod 4 instead.
const STARTS: [i64; 8] = [8, 2, 1001, 506, 0, 4087, 3, 100];

fn inner(p: &Plan) -> &CompressorPlan {
    &p.indexer.as_ref().expect("a csa plan has an indexer").inner
}

/// The token of each request's first boundary, among the first `t` tokens.
fn first_boundaries(p: &Plan, positions: &[i32], t: usize) -> Vec<usize> {
    let (seq, ratio) = (p.shape.decode_seq, inner(p).ratio);
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

/// The layer's fixture at capacity with the starts cycled over the requests.
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
/// capacity batch's pages), with the test's edits.
#[derive(Clone)]
struct Case {
    t: usize,
    inputs: BTreeMap<String, Tensor>,
    x_normed: Vec<bf16>,
}

fn case(p: &Plan, spec: &LayerSpec, fx: &TensorMap, draws: &Draws, t: usize) -> Case {
    let d = &spec.dims;
    let (cap, hidden, seq) = (p.shape.local_t, d.hidden, d.seq);
    let c = inner(p);
    let mut x_normed = narrow(&draws.normal("x_normed", cap * hidden, 1.0));
    x_normed[t * hidden..].fill(bf16::NAN);
    let old = values::<f32>(fx, "inner_compress_state");
    let (out, width) = (c.out_width, c.state_row_width);
    // Rows no history reached keep their −inf scores (the fixture's).
    let state: Vec<f32> = draws
        .normal("inner_state", old.len(), 0.6)
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
    let mut state_slots = values::<i64>(fx, "inner_state_slot_mapping");
    let mut idx_slots = values::<i64>(fx, "idx_slot_mapping");
    // A token that writes no state row, and the last key row dropped.
    state_slots[3] = -1;
    let boundaries: Vec<usize> = first_boundaries(p, &positions, t)
        .into_iter()
        .filter(|&i| idx_slots[i] >= 0)
        .collect();
    assert!(boundaries.len() >= 2, "the starts reach boundaries");
    idx_slots[*boundaries.last().unwrap()] = -1;
    // Capacity tails: slot 0 and position 0, so reading them would write row 0.
    state_slots[t..].fill(0);
    idx_slots[t..].fill(0);
    let mut pos = positions.clone();
    pos[t..].fill(0);
    let b = t / seq;
    let mut inputs = BTreeMap::new();
    let mut put = |name: &str, v: Tensor| {
        inputs.insert(name.to_string(), v);
    };
    put("x_normed", tensor(vec![cap, hidden], x_normed.clone()));
    for name in [
        "inner_wkv",
        "inner_wgate",
        "inner_ape",
        "inner_norm_w",
        "hadamard_idx",
        "freqs_cos",
        "freqs_sin",
        "idx_kv_cache",
        "idx_kv_scale",
    ] {
        put(name, fx.get(name).unwrap().clone());
    }
    put("position_ids", tensor(vec![cap], pos));
    put("inner_state_slot_mapping", tensor(vec![cap], state_slots));
    put("idx_slot_mapping", tensor(vec![cap], idx_slots));
    put(
        "inner_compress_state_block_table",
        rows::<i32>(fx, "inner_compress_state_block_table", b),
    );
    let state_shape = fx.get("inner_compress_state").unwrap().shape().to_vec();
    put("inner_compress_state", tensor(state_shape, state));
    Case {
        t,
        inputs,
        x_normed,
    }
}

/// The golden's pools after `case`.
struct Want {
    state: Vec<f32>,
    keys: Vec<i8>,
    scales: Vec<f32>,
}

/// The golden's inner state, index keys and scales for `case` (the CSA layer golden's
/// inner compressor).
fn golden(p: &Plan, spec: &LayerSpec, case: &Case) -> Want {
    let d = &spec.dims;
    let LayerKind::Csa(csa) = &spec.kind else {
        panic!("{}: not a csa layer", p.variant)
    };
    let c = inner(p);
    let t = case.t;
    let get = |name: &str| &case.inputs[name];
    let f32s = |name: &str| get(name).values::<f32>().unwrap().to_vec();
    let bf16s = |name: &str| get(name).values::<bf16>().unwrap().to_vec();
    let i64s = |name: &str| get(name).values::<i64>().unwrap()[..t].to_vec();
    let positions = get("position_ids").values::<i32>().unwrap()[..t].to_vec();
    let table = get("inner_compress_state_block_table");
    let mut state = f32s("inner_compress_state");
    let norm_w = bf16s("inner_norm_w");
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
            wkv: &bf16s("inner_wkv"),
            wgate: &bf16s("inner_wgate"),
            ape: &f32s("inner_ape"),
            norm_w: &norm_w,
        },
        &positions,
        &i64s("inner_state_slot_mapping"),
        StateTable {
            entries: table.values::<i32>().unwrap(),
            width: table.shape()[1],
        },
        &mut state,
        (
            "inner_state_slot_mapping",
            "inner_compress_state_block_table",
        ),
    )
    .expect("golden inner compressor");
    assert!(
        pooled.len() >= 2,
        "{}: the case pools at least two rows",
        p.variant
    );
    // The step rows: each request's first position (hca_csa.md §4.5 end).
    let firsts: Vec<usize> = positions
        .iter()
        .step_by(d.seq)
        .map(|&p0| p0 as usize)
        .collect();
    let step = RopeRows::gather(
        &bf16s("freqs_cos"),
        &bf16s("freqs_sin"),
        d.rope_dim,
        d.rope_dim / 2,
        &firsts,
    );
    let mut keys = get("idx_kv_cache").values::<i8>().unwrap().to_vec();
    let mut scales = f32s("idx_kv_scale");
    indexer::write_index_keys(
        d,
        csa,
        pooled,
        &norm_w,
        &bf16s("hadamard_idx"),
        &step,
        &i64s("idx_slot_mapping"),
        &mut keys,
        &mut scales,
    )
    .expect("golden index-key write");
    Want {
        state,
        keys,
        scales,
    }
}

/// The case's `name` mapping cut to its `t` tokens.
fn mapping(case: &Case, name: &str) -> Tensor {
    let v = case.inputs[name].values::<i64>().unwrap();
    tensor(vec![case.t], v[..case.t].to_vec())
}

fn variant(name: &str) {
    let p = support::plan(name);
    let c = inner(p);
    let rt = support::stages(name, &[STAGE]);
    let spec = layer_spec(p);
    let fx = fixture(p, &spec);
    let draws = Draws::new(SEED + p.shape.tp as u64);
    for t in [p.shape.local_t, p.shape.local_t - 8] {
        let case = case(p, &spec, &fx, &draws, t);
        let want = golden(p, &spec, &case);
        let mut tensors = case.inputs.clone();
        let clock = Instant::now();
        let stats = support::run(rt, &mut tensors, tiling(p, t));
        println!("{name} t={t}: sim {:.3} s", clock.elapsed().as_secs_f64());
        check_launches(p, &stats);
        let pool = |out: &str, want: Tensor, map: &str, block_size, tol: (f32, f32, f64)| {
            let report = mapped_pool(
                out,
                &tensors[out],
                &want,
                MappedPool {
                    mapping: &mapping(&case, map),
                    mapping_name: map,
                    mapping_shape: &[t],
                    block_size,
                    rank_axis: false,
                    atol: tol.0,
                    rtol: tol.1,
                    max_error_ratio: tol.2,
                },
            );
            println!("{name} t={t}: {}", report.detail());
            assert_pass(&report);
        };
        let shape = |out: &str| tensors[out].shape().to_vec();
        let bs = p.pools.block_size;
        pool(
            "inner_compress_state",
            tensor(shape("inner_compress_state"), want.state),
            "inner_state_slot_mapping",
            c.state_block_size,
            (1e-3, 1e-3, 0.0),
        );
        pool(
            "idx_kv_cache",
            tensor(shape("idx_kv_cache"), want.keys),
            "idx_slot_mapping",
            bs,
            (1.0, 0.0, 0.01),
        );
        pool(
            "idx_kv_scale",
            tensor(shape("idx_kv_scale"), want.scales),
            "idx_slot_mapping",
            bs,
            (1e-4, 1.0 / 128.0, 0.01),
        );
    }
}

#[test]
fn csa_small_tp1_matches_the_golden() {
    variant("csa_small_tp1");
}

#[test]
fn csa_small_tp2_matches_the_golden() {
    variant("csa_small_tp2");
}

/// Exactly representable values for a bit-exact case: x ternary, inner_wkv ternary / 4
/// (every projection exact in f32), old state kv in quarters; every score 0 (inner_wgate,
/// APE and old scores zero), so the pooling weights are exactly 1/8 (1/4 in a first
/// window) and the pooled row an exact mean; the identity as hadamard_idx, so that a key
/// is its bf16 row quantised. What differs between kernel and golden is then only which
/// rows each request sees.
fn exact_values(case: &mut Case, p: &Plan, draws: &Draws) {
    let c = inner(p);
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
    let (out, hd) = (c.out_width, c.head_dim);
    let weights = |stream: &str, scale: f32| -> Vec<bf16> {
        draws
            .normal(stream, out * hidden, 1.0)
            .into_iter()
            .map(|v| bf16::from_f32(ternary(v) * scale))
            .collect()
    };
    let identity: Vec<bf16> = (0..hd * hd)
        .map(|i| bf16::from_f32(if i / hd == i % hd { 1.0 } else { 0.0 }))
        .collect();
    let state = &case.inputs["inner_compress_state"];
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
    for (name, v) in [
        ("x_normed", tensor(vec![cap, hidden], case.x_normed.clone())),
        (
            "inner_wkv",
            tensor(vec![out, hidden], weights("exact_wkv", 0.25)),
        ),
        (
            "inner_wgate",
            tensor(vec![out, hidden], weights("exact_wgate", 0.0)),
        ),
        (
            "inner_ape",
            tensor(vec![c.ratio, out], vec![0.0f32; c.ratio * out]),
        ),
        ("hadamard_idx", tensor(vec![hd, hd], identity)),
        ("inner_compress_state", tensor(shape, old)),
    ] {
        case.inputs.insert(name.to_string(), v);
    }
}

/// The first element at which `got` and `want` differ in bits, if any.
fn first_difference(got: &Tensor, want: &Tensor) -> Option<usize> {
    let size = got.dtype().size();
    let (g, w) = (got.as_le_bytes(), want.as_le_bytes());
    assert_eq!(g.len(), w.len());
    g.chunks(size).zip(w.chunks(size)).position(|(a, b)| a != b)
}

/// hca_csa.md §4.4, §4.7: every request pools at its first boundary, and the fixture's
/// packed inner state tables let requests pool rows that other requests write in the same
/// step (counted here); with exact values inner_compress_state, idx_kv_cache and
/// idx_kv_scale are bit-identical to the golden's sequential order. The golden with every
/// write visible first, or with only each request's own writes visible, differs.
#[test]
fn csa_index_keys_see_the_writes_of_earlier_requests_only() {
    let name = "csa_small_tp1";
    let p = support::plan(name);
    let c = inner(p);
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
    let table = &case.inputs["inner_compress_state_block_table"];
    let aliased = cross_request_state_reads(
        &positions,
        seq,
        &ints("inner_state_slot_mapping"),
        &ints("idx_slot_mapping"),
        table.values::<i32>().unwrap(),
        table.shape()[1],
        c.state_block_size,
        c.ratio,
        c.pool_entries,
    );
    println!("{name}: {aliased} pooled rows written by another request this step");
    assert!(aliased > 0, "the fixture's requests pool each other's rows");
    let want = golden(p, &spec, &case);
    let mut tensors = case.inputs.clone();
    let stats = support::run(rt, &mut tensors, tiling(p, case.t));
    check_launches(p, &stats);
    let shape = |out: &str| tensors[out].shape().to_vec();
    for (out, want) in [
        (
            "inner_compress_state",
            tensor(shape("inner_compress_state"), want.state),
        ),
        ("idx_kv_cache", tensor(shape("idx_kv_cache"), want.keys)),
        ("idx_kv_scale", tensor(shape("idx_kv_scale"), want.scales)),
    ] {
        assert_eq!(
            first_difference(&tensors[out], &want),
            None,
            "{out} differs from the golden"
        );
    }

    // Every write visible before any pooling: the golden again on its own output state.
    let mut all_first = case.clone();
    all_first.inputs.insert(
        "inner_compress_state".into(),
        tensors["inner_compress_state"].clone(),
    );
    let later = golden(p, &spec, &all_first).keys;
    // Own writes only: each request's key row from a golden run without the others' writes.
    let slots = ints("inner_state_slot_mapping");
    let idx_slots = ints("idx_slot_mapping");
    let hd = c.head_dim;
    let mut own_keys = case.inputs["idx_kv_cache"].values::<i8>().unwrap().to_vec();
    for tok in first_boundaries(p, &positions, case.t) {
        let Ok(row) = usize::try_from(idx_slots[tok]) else {
            continue;
        };
        let b = tok / seq;
        let mut own = case.clone();
        let only: Vec<i64> = (0..slots.len())
            .map(|i| if i / seq == b { slots[i] } else { -1 })
            .collect();
        own.inputs.insert(
            "inner_state_slot_mapping".into(),
            tensor(vec![only.len()], only),
        );
        let keys = golden(p, &spec, &own).keys;
        own_keys[row * hd..(row + 1) * hd].copy_from_slice(&keys[row * hd..(row + 1) * hd]);
    }
    let got = &tensors["idx_kv_cache"];
    for (what, other) in [("every write first", later), ("own writes only", own_keys)] {
        assert!(
            first_difference(got, &tensor(shape("idx_kv_cache"), other)).is_some(),
            "the golden with {what} agrees too: the case does not tell the orders apart"
        );
    }
}
