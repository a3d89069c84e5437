//! Shared pieces of the compressor stage tests (compressor, index_compressor): the case
//! cut from the layer fixture (seeded x_normed and state, one token without a state row,
//! the last pooled row discarded, capacity tails that would write row 0), the golden's
//! state update and pooling, exact values for bit-exact cases, the runs at capacity and
//! capacity − 8 tokens judged with mapped_pool, and the sequential order of cross-request
//! aliasing told apart from the two other plausible ones (hca_csa.md §4.7).

use std::collections::BTreeMap;
use std::time::Instant;

use golden::LayerSpec;
use golden::arith::{narrow, widen};
use golden::compare::{MappedPool, mapped_pool};
use golden::compressor::{self, Geometry, Pooled, StateTable, Weights};
use golden::fixtures::collisions::cross_request_state_reads;
use golden::fixtures::random::Draws;
use golden::fixtures::{self, FixtureOptions, StartPositions};
use golden::tensor::{Element, Tensor, TensorMap};
use half::bf16;
use kernelgen::plan::{CompressorPlan, Plan};
use kernelgen::spec::StateLayout;

use crate::stage_checks::{assert_pass, check_launches, tensor, tiling};
use crate::support;

const SEED: u64 = 20_260_819;

/// The tensor names of one compressor (the main one or the indexer's inner one).
pub struct Names {
    pub wkv: &'static str,
    pub wgate: &'static str,
    pub ape: &'static str,
    pub norm_w: &'static str,
    pub state: &'static str,
    /// The draw stream of the seeded initial state.
    pub state_draws: &'static str,
    pub state_slots: &'static str,
    pub state_table: &'static str,
    /// The cache the pooled rows go to (a head_dim row each) and its slot mapping.
    pub rows: &'static str,
    pub row_slots: &'static str,
}

/// A mapped_pool check of one output.
pub struct Pool {
    pub out: &'static str,
    pub mapping: &'static str,
    pub block_size: usize,
    pub atol: f32,
    pub rtol: f32,
    pub max_error_ratio: f64,
}

/// What one compressor stage test states; the cases, runs and checks are shared.
pub trait Compressor {
    const STAGE: &'static str;
    const NAMES: Names;
    fn plan(p: &Plan) -> &CompressorPlan;
    /// The starts cycled over the requests.
    fn starts(p: &Plan) -> &'static [i64];
    /// Fixture tensors the stage reads as they are, besides the compressor's weights.
    fn fixed_inputs(p: &Plan) -> Vec<&'static str>;
    /// What a bit-exact case replaces besides x_normed, the weights, APE and the state.
    fn exact_inputs(_p: &Plan) -> Vec<(&'static str, Tensor)> {
        Vec::new()
    }
    /// The golden's outputs after `case`, by name.
    fn golden(p: &Plan, spec: &LayerSpec, case: &Case) -> BTreeMap<&'static str, Tensor>;
    /// The outputs compared, each with its mapping and tolerances.
    fn pools(p: &Plan) -> Vec<Pool>;
}

/// One case: the capacity fixture's tensors cut to `t` tokens (the tables keep the
/// capacity batch's pages), with the test's edits.
#[derive(Clone)]
pub struct Case {
    pub t: usize,
    pub inputs: BTreeMap<String, Tensor>,
    pub x_normed: Vec<bf16>,
}

impl Case {
    pub fn get<T: Element + Copy>(&self, name: &str) -> Vec<T> {
        self.inputs[name].values::<T>().unwrap().to_vec()
    }

    /// The first `t` entries of a per-token input.
    pub fn tokens<T: Element + Copy>(&self, name: &str) -> Vec<T> {
        self.inputs[name].values::<T>().unwrap()[..self.t].to_vec()
    }

    fn put(&mut self, name: &str, v: Tensor) {
        self.inputs.insert(name.to_string(), v);
    }
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

/// Variant `name`'s plan, layer spec and fixture at capacity with the starts cycled over
/// the requests.
fn layer<C: Compressor>(name: &str) -> (&'static Plan, LayerSpec, TensorMap) {
    let p = support::plan(name);
    let spec = layer_spec(p);
    let list = C::starts(p);
    let starts = (0..p.shape.b).map(|b| list[b % list.len()]).collect();
    let opts = FixtureOptions {
        seed: SEED,
        starts: StartPositions::List(starts),
        tokens: None,
    };
    let fx = fixtures::build(&spec, &opts)
        .unwrap_or_else(|e| panic!("{name}: fixture: {e}"))
        .inputs;
    (p, spec, fx)
}

fn values<T: Element + Copy>(m: &TensorMap, name: &str) -> Vec<T> {
    m.values::<T>(name)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .to_vec()
}

/// The token of each request's first boundary, among the first `t` tokens.
fn first_boundaries<C: Compressor>(p: &Plan, positions: &[i32], t: usize) -> Vec<usize> {
    let (seq, ratio) = (p.shape.decode_seq, C::plan(p).ratio);
    (0..t / seq)
        .filter_map(|b| {
            (b * seq..(b + 1) * seq)
                .find(|&tok| (positions[tok] as usize + 1).is_multiple_of(ratio))
        })
        .collect()
}

fn case<C: Compressor>(
    p: &Plan,
    spec: &LayerSpec,
    fx: &TensorMap,
    draws: &Draws,
    t: usize,
) -> Case {
    let (d, c, n) = (&spec.dims, C::plan(p), &C::NAMES);
    let (cap, hidden, seq) = (p.shape.local_t, d.hidden, d.seq);
    let mut x_normed = narrow(&draws.normal("x_normed", cap * hidden, 1.0));
    x_normed[t * hidden..].fill(bf16::NAN);
    let old = values::<f32>(fx, n.state);
    let (out, width) = (c.out_width, c.state_row_width);
    // Rows no history reached keep their −inf scores (CSA's fixture).
    let state: Vec<f32> = draws
        .normal(n.state_draws, old.len(), 0.6)
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
    let mut state_slots = values::<i64>(fx, n.state_slots);
    let mut row_slots = values::<i64>(fx, n.row_slots);
    // A token that writes no state row, and the last pooled row discarded.
    state_slots[3] = -1;
    let boundaries: Vec<usize> = first_boundaries::<C>(p, &positions, t)
        .into_iter()
        .filter(|&i| row_slots[i] >= 0)
        .collect();
    assert!(boundaries.len() >= 2, "the starts reach boundaries");
    row_slots[*boundaries.last().unwrap()] = -1;
    // Capacity tails: slot 0 and position 0, so reading them would write row 0.
    state_slots[t..].fill(0);
    row_slots[t..].fill(0);
    let mut pos = positions;
    pos[t..].fill(0);
    // The requests' table rows.
    let table = fx.get(n.state_table).expect("fixture tensor");
    let table_width = table.shape()[1];
    let table_rows = values::<i32>(fx, n.state_table)[..t / seq * table_width].to_vec();
    let mut case = Case {
        t,
        inputs: BTreeMap::new(),
        x_normed,
    };
    case.put("x_normed", tensor(vec![cap, hidden], case.x_normed.clone()));
    let fixed = [n.wkv, n.wgate, n.ape, n.norm_w].into_iter();
    for name in fixed.chain(C::fixed_inputs(p)) {
        case.put(name, fx.get(name).unwrap().clone());
    }
    case.put("position_ids", tensor(vec![cap], pos));
    case.put(n.state_slots, tensor(vec![cap], state_slots));
    case.put(n.row_slots, tensor(vec![cap], row_slots));
    case.put(
        n.state_table,
        tensor(vec![t / seq, table_width], table_rows),
    );
    let state_shape = fx.get(n.state).unwrap().shape().to_vec();
    case.put(n.state, tensor(state_shape, state));
    case
}

/// The golden's state update and pooling of `case` (hca_csa.md §4.1–4.4; with the ring
/// state, csa_1m.md §4.2–4.4): the new state and the pooled rows, at least two.
pub fn update_and_pool<C: Compressor>(
    p: &Plan,
    spec: &LayerSpec,
    case: &Case,
) -> (Vec<f32>, Vec<Pooled>) {
    let (d, c, n) = (&spec.dims, C::plan(p), &C::NAMES);
    let table = &case.inputs[n.state_table];
    let mut state = case.get::<f32>(n.state);
    let compress = if is_ring::<C>(p) {
        compressor::pool_every_boundary
    } else {
        compressor::update_and_pool
    };
    let pooled = compress(
        Geometry {
            ratio: c.ratio,
            head_dim: c.head_dim,
            overlap: c.overlap,
            state_block: c.state_block_size,
        },
        &widen(&case.x_normed[..case.t * d.hidden]),
        d.hidden,
        d.seq,
        Weights {
            wkv: &case.get::<bf16>(n.wkv),
            wgate: &case.get::<bf16>(n.wgate),
            ape: &case.get::<f32>(n.ape),
            norm_w: &case.get::<bf16>(n.norm_w),
        },
        &case.tokens::<i32>("position_ids"),
        &case.tokens::<i64>(n.state_slots),
        StateTable {
            entries: table.values::<i32>().unwrap(),
            width: table.shape()[1],
        },
        &mut state,
        (n.state_slots, n.state_table),
    )
    .unwrap_or_else(|e| panic!("golden {}: {e}", C::STAGE));
    assert!(
        pooled.len() >= 2,
        "{}: the case pools at least two rows",
        p.variant
    );
    (state, pooled)
}

/// Whether the compressor keeps its state in rings (the 1M CSA).
pub fn is_ring<C: Compressor>(p: &Plan) -> bool {
    C::plan(p).state == StateLayout::Ring
}

/// Runs the stage on `case` (workspaces poisoned) and checks every launch's on-chip peaks;
/// returns the tensors after the run.
pub fn run<C: Compressor>(p: &Plan, case: &Case) -> BTreeMap<String, Tensor> {
    let rt = support::stages(&p.variant, &[C::STAGE]);
    let mut tensors = case.inputs.clone();
    let clock = Instant::now();
    let stats = support::run(rt, &mut tensors, tiling(p, case.t));
    let secs = clock.elapsed().as_secs_f64();
    println!("{} t={}: sim {secs:.3} s", p.variant, case.t);
    check_launches(p, &stats);
    tensors
}

/// Variant `name` at capacity and capacity − 8 tokens: every output within its mapped_pool
/// tolerances of the golden.
pub fn variant<C: Compressor>(name: &str) {
    let (p, spec, fx) = layer::<C>(name);
    let draws = Draws::new(SEED + p.shape.tp as u64);
    // (a capacity of 8 tokens has no smaller count of whole 8-row units)
    for t in [p.shape.local_t, p.shape.local_t - 8]
        .into_iter()
        .filter(|&t| t > 0)
    {
        let case = case::<C>(p, &spec, &fx, &draws, t);
        let want = C::golden(p, &spec, &case);
        let got = run::<C>(p, &case);
        for pool in C::pools(p) {
            let mapping = &case.inputs[pool.mapping].values::<i64>().unwrap()[..t];
            let report = mapped_pool(
                pool.out,
                &got[pool.out],
                &want[pool.out],
                MappedPool {
                    mapping: &tensor(vec![t], mapping.to_vec()),
                    mapping_name: pool.mapping,
                    mapping_shape: &[t],
                    block_size: pool.block_size,
                    rank_axis: false,
                    atol: pool.atol,
                    rtol: pool.rtol,
                    max_error_ratio: pool.max_error_ratio,
                },
            );
            println!("{name} t={t}: {}", report.detail());
            assert_pass(&report);
        }
    }
}

/// Variant `name`'s case at capacity with exactly representable values: x ternary, wkv
/// ternary / 4 (so every projection is exact in f32), old state kv in quarters; every
/// score 0 (wgate, APE and old scores zero), so the pooling weights are exactly 1/128
/// (HCA; CSA 1/8, or 1/4 in a first window) and the pooled row is an exact mean. What differs
/// between kernel and golden is then only which rows each request sees.
pub fn exact_case<C: Compressor>(name: &str) -> (&'static Plan, LayerSpec, Case) {
    let (p, spec, fx) = layer::<C>(name);
    let draws = Draws::new(SEED);
    let mut case = case::<C>(p, &spec, &fx, &draws, p.shape.local_t);
    let (c, n) = (C::plan(p), &C::NAMES);
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
    let out = c.out_width;
    let weights = |stream: &str, scale: f32| -> Vec<bf16> {
        draws
            .normal(stream, out * hidden, 1.0)
            .into_iter()
            .map(|v| bf16::from_f32(ternary(v) * scale))
            .collect()
    };
    let shape = case.inputs[n.state].shape().to_vec();
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
    let exact = [
        ("x_normed", tensor(vec![cap, hidden], case.x_normed.clone())),
        (n.wkv, tensor(vec![out, hidden], weights("exact_wkv", 0.25))),
        (
            n.wgate,
            tensor(vec![out, hidden], weights("exact_wgate", 0.0)),
        ),
        (
            n.ape,
            tensor(vec![c.ratio, out], vec![0.0f32; c.ratio * out]),
        ),
        (n.state, tensor(shape, old)),
    ];
    for (name, v) in exact.into_iter().chain(C::exact_inputs(p)) {
        case.put(name, v);
    }
    (p, spec, case)
}

/// The first element at which `got` and `want` differ in bits, if any.
fn first_difference(got: &Tensor, want: &Tensor) -> Option<usize> {
    let size = got.dtype().size();
    let (g, w) = (got.as_le_bytes(), want.as_le_bytes());
    assert_eq!(g.len(), w.len());
    g.chunks(size).zip(w.chunks(size)).position(|(a, b)| a != b)
}

/// Runs the stage on a bit-exact `case`: every compared output bit-identical to the
/// golden's; returns the tensors after the run.
pub fn run_bit_exact<C: Compressor>(
    p: &Plan,
    spec: &LayerSpec,
    case: &Case,
) -> BTreeMap<String, Tensor> {
    let want = C::golden(p, spec, case);
    let got = run::<C>(p, case);
    for Pool { out, .. } in C::pools(p) {
        assert_eq!(
            first_difference(&got[out], &want[out]),
            None,
            "{out} differs from the golden"
        );
    }
    got
}

/// The golden's pooled rows with every write of the step visible before any pooling: the
/// golden again on the state `got` ends with.
pub fn every_write_first<C: Compressor>(
    p: &Plan,
    spec: &LayerSpec,
    case: &Case,
    got: &BTreeMap<String, Tensor>,
) -> Tensor {
    let state = C::NAMES.state;
    let mut all_first = case.clone();
    all_first.put(state, got[state].clone());
    C::golden(p, spec, &all_first)
        .remove(C::NAMES.rows)
        .unwrap()
}

/// The golden's pooled rows with only each request's own writes visible: each request's
/// row from a golden run without the other requests' state writes.
fn own_writes_only<C: Compressor>(p: &Plan, spec: &LayerSpec, case: &Case) -> Tensor {
    let (n, seq) = (&C::NAMES, p.shape.decode_seq);
    let slots = case.get::<i64>(n.state_slots);
    let row_slots = case.get::<i64>(n.row_slots);
    let mut own_rows = case.inputs[n.rows].clone();
    let row_bytes = own_rows.dtype().size() * C::plan(p).head_dim;
    let positions = case.get::<i32>("position_ids");
    for tok in first_boundaries::<C>(p, &positions, case.t) {
        let Ok(row) = usize::try_from(row_slots[tok]) else {
            continue;
        };
        let b = tok / seq;
        let mut own = case.clone();
        let only: Vec<i64> = (0..slots.len())
            .map(|i| if i / seq == b { slots[i] } else { -1 })
            .collect();
        own.put(n.state_slots, tensor(vec![only.len()], only));
        let rows = &C::golden(p, spec, &own)[n.rows];
        let at = row * row_bytes..(row + 1) * row_bytes;
        own_rows.as_le_bytes_mut()[at.clone()].copy_from_slice(&rows.as_le_bytes()[at]);
    }
    own_rows
}

/// The pooled rows `got` differ from each of the other orders' `others`: the case tells
/// the orders apart.
pub fn assert_orders_differ(got: &Tensor, others: [(&str, Tensor); 2]) {
    for (what, other) in others {
        assert!(
            first_difference(got, &other).is_some(),
            "the golden with {what} agrees too: the case does not tell the orders apart"
        );
    }
}

/// hca_csa.md §4.4, §4.7 on variant `name`'s exact case: every request pools at its first
/// boundary, and the fixture's packed state tables let requests pool rows that other
/// requests write in the same step (counted here); every output is bit-identical to the
/// golden's sequential order, and the golden with every write visible first, or with only
/// each request's own writes visible, differs.
pub fn sequential_order<C: Compressor>(name: &str) {
    let (p, spec, case) = exact_case::<C>(name);
    let (c, n) = (C::plan(p), &C::NAMES);
    let table = &case.inputs[n.state_table];
    let aliased = cross_request_state_reads(
        &case.get::<i32>("position_ids"),
        p.shape.decode_seq,
        &case.get::<i64>(n.state_slots),
        &case.get::<i64>(n.row_slots),
        table.values::<i32>().unwrap(),
        table.shape()[1],
        c.state_block_size,
        c.ratio,
        c.pool_entries,
    );
    println!("{name}: {aliased} pooled rows written by another request this step");
    assert!(aliased > 0, "the fixture's requests pool each other's rows");
    let got = run_bit_exact::<C>(p, &spec, &case);
    assert_orders_differ(
        &got[n.rows],
        [
            (
                "every write first",
                every_write_first::<C>(p, &spec, &case, &got),
            ),
            ("own writes only", own_writes_only::<C>(p, &spec, &case)),
        ],
    );
}
