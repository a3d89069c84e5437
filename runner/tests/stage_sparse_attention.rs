//! Stage sparse_attention on the CPU model against `golden::attention` (per-token
//! window gather, softmax with sink, P·V, inverse RoPE) and `pack_heads`: o_packed_heads
//! within ratio_allclose(1e-4, 1/128) on the valid rows of every group slab, padding rows
//! still poisoned, peak on-chip memory equal to each kernel's planned buffers.
//! Inputs come from the reference's fixture formulas (block tables with wrap into the
//! pool, window indices and lengths, RoPE rows, unit-RMS cache rows); q and attn_sink are
//! seeded normals. GM traffic per kernel is printed against its minimum.

mod attention_checks;
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use abi::plan::{Cores, Step};
use attention_checks::packed_heads;
use golden::LayerSpec;
use golden::attention::{KvSources, pack_heads, sparse_attention};
use golden::candidates;
use golden::fixtures::StartPositions;
use golden::fixtures::block_table::BlockTable;
use golden::fixtures::metadata::{positions, window_indices};
use golden::fixtures::random::Draws;
use golden::fixtures::rope_rows::rope_tables;
use golden::fixtures::weights::normalized_rows;
use golden::mask::sparse_bias;
use golden::rope::RopeRows;
use golden::tensor::Tensor;
use half::bf16;
use harness::backend::Tiling;
use harness::kernel_library::LaunchStats;
use kernelgen::plan::Plan;
use support::{plan, run};

const STAGE: &[&str] = &["sparse_attention"];
const SEED: u64 = 20_260_819;

/// The golden's description of a plan's layer.
fn layer_spec(p: &Plan) -> LayerSpec {
    support::layer_spec(p)
}

/// One rank's attention inputs for `requests` requests starting at `starts`.
struct Case {
    spec: LayerSpec,
    t: usize,
    q: Vec<bf16>,
    kv_cache: Vec<bf16>,
    indices: Vec<i32>,
    lens: Vec<i32>,
    sink: Vec<f32>,
    cos: Vec<bf16>,
    sin: Vec<bf16>,
}

impl Case {
    fn new(p: &Plan, starts: &StartPositions, requests: usize) -> Case {
        let spec = layer_spec(p);
        let d = &spec.dims;
        let draws = Draws::new(SEED);
        let starts = starts
            .resolve(&spec, requests)
            .unwrap_or_else(|e| panic!("{e}"));
        let pos = positions(&starts, d.seq);
        let table = BlockTable::interleaved(
            requests,
            d.max_seq_len.div_ceil(d.block_size),
            d.kv_pool_blocks,
        );
        let (indices, lens) = window_indices(&pos, d.seq, &table, d.block_size, d.window);
        let (cos, sin) = rope_tables(&d.rope, d.rope_dim, pos.iter().map(|&x| i64::from(x)));
        let t = pos.len();
        let q = draws
            .normal("q", t * d.heads * d.head_dim, 1.0)
            .into_iter()
            .map(bf16::from_f32)
            .collect();
        Case {
            t,
            q,
            kv_cache: normalized_rows(&draws, "kv_cache", d.kv_pool_rows(), d.head_dim, d.rms_eps),
            indices,
            lens,
            sink: draws.normal("attn_sink", d.heads, 1.0),
            cos,
            sin,
            spec,
        }
    }

    /// The golden o_packed_heads `[o_groups · t_pad, o_group_in]` (padding rows zero).
    fn expected(&self, t_pad: usize) -> Vec<bf16> {
        let d = &self.spec.dims;
        let bias = sparse_bias(&self.lens, d.window);
        let tiles = candidates::swa(&self.indices, &bias, d.window);
        let kv = KvSources {
            raw: &self.kv_cache,
            compressed: &[],
            width: d.head_dim,
        };
        let rope = RopeRows::from_tables(&self.cos, &self.sin, d.rope_dim, d.half_rope());
        let o = sparse_attention(d, &self.q, &tiles, kv, &self.sink, &rope);
        pack_heads(d, &o, t_pad)
    }

    /// Kernel inputs by name; q at capacity with NaN rows past t (never to be read).
    fn tensors(&self, p: &Plan) -> BTreeMap<String, Tensor> {
        let d = &self.spec.dims;
        let (h, hd, t, cap) = (d.heads, d.head_dim, self.t, p.shape.local_t);
        let mut q = self.q.clone();
        q.resize(cap * h * hd, bf16::NAN);
        let tensors = [
            ("q", Tensor::from_vec(vec![cap, h, hd], q)),
            (
                "kv_cache",
                Tensor::from_vec(
                    vec![d.kv_pool_blocks, d.block_size, 1, hd],
                    self.kv_cache.clone(),
                ),
            ),
            (
                "swa_indices",
                Tensor::from_vec(vec![t, d.window], self.indices.clone()),
            ),
            ("swa_lens", Tensor::from_vec(vec![t], self.lens.clone())),
            ("attn_sink", Tensor::from_vec(vec![h], self.sink.clone())),
            (
                "freqs_cos",
                Tensor::from_vec(vec![t, d.rope_dim], self.cos.clone()),
            ),
            (
                "freqs_sin",
                Tensor::from_vec(vec![t, d.rope_dim], self.sin.clone()),
            ),
        ];
        tensors
            .into_iter()
            .map(|(name, t)| (name.to_string(), t.expect("shapes match the values")))
            .collect()
    }

    fn tiling(&self) -> Tiling {
        let d = &self.spec.dims;
        support::tiling(&[
            ("t", self.t),
            ("b", self.t / d.seq),
            ("nb", d.kv_pool_blocks),
            ("group_t", self.t),
        ])
    }

    /// Distinct pool rows of all valid lanes: the cache bytes a kernel must read at least.
    fn distinct_rows(&self) -> usize {
        let w = self.spec.dims.window;
        let rows: BTreeSet<i32> = self
            .indices
            .chunks_exact(w)
            .zip(&self.lens)
            .flat_map(|(idx, &len)| idx[..len as usize].iter().copied())
            .collect();
        rows.len()
    }
}

/// Runs the stage and checks o_packed_heads, the poisoned padding and the peak memory.
fn check(variant: &str, case: &Case) {
    let p = plan(variant);
    let mut tensors = case.tensors(p);
    let start = Instant::now();
    let stats = run(support::stages(variant, STAGE), &mut tensors, case.tiling());
    let elapsed = start.elapsed();

    let want = case.expected(p.shape.t_pad);
    let got = tensors["o_packed_heads"].values::<bf16>().unwrap();
    packed_heads(variant, p, got, &want, case.t, 0.0);
    support::check_peaks(&p.variant, &stats);
    report_traffic(variant, case, &stats, elapsed);
}

/// GM bytes per kernel against the minimum: inputs read once (cache rows: each distinct
/// row once), outputs written once.
fn report_traffic(
    variant: &str,
    case: &Case,
    stats: &[(String, LaunchStats)],
    elapsed: std::time::Duration,
) {
    let d = &case.spec.dims;
    let (t, h, hd, w) = (case.t, d.heads, d.head_dim, d.window);
    let union = kernelgen::stages::sparse_attention::union_rows(w, d.seq);
    let q = t * h * hd * 2;
    let rows = case.distinct_rows() * hd * 2;
    let scores = t * h * union * 4;
    let probs = t * h * union * 2;
    let denom = t * h * 4;
    let o = t * h * hd * 4;
    let packed = t * h * hd * 2;
    let freqs = 2 * t * d.half_rope() * 2;
    let minima = [
        q + rows + scores,
        scores + t * w * 4 + h * 4 + probs + denom,
        probs + rows + o,
        o + denom + freqs + packed,
    ];
    println!("{variant}, t = {t}: stage {elapsed:.2?}");
    let mut total = 0;
    for ((kernel, s), min) in stats.iter().zip(minima) {
        total += s.gm_bytes();
        println!(
            "  {kernel}: GM {} B, minimum {min} B, ratio {:.3}, scalar GM reads {}",
            s.gm_bytes(),
            s.gm_bytes() as f64 / min as f64,
            s.scalar_gm_reads
        );
    }
    let stage_min = q + rows + t * w * 4 + h * 4 + freqs + packed;
    println!(
        "  stage: GM {total} B, minimum without workspaces {stage_min} B, ratio {:.3}",
        total as f64 / stage_min as f64
    );
}

#[test]
fn swa_small_default_starts_at_capacity() {
    // 8192 (full windows, pool wrap), 127 (full windows from position 0), 31 (partial).
    let p = plan("swa_small_tp1");
    let case = Case::new(p, &StartPositions::Default, p.shape.b);
    check("swa_small_tp1", &case);
}

#[test]
fn swa_mini_mixed_and_near_1m_starts_at_capacity() {
    let p = plan("swa_mini_tp1");
    let starts = StartPositions::List(vec![
        1_048_568, 0, 5, 127, 1_000_003, 31, 8192, 126, 128, 2, 1_048_000, 64, 300, 7, 999_999, 40,
    ]);
    let case = Case::new(p, &starts, p.shape.b);
    check("swa_mini_tp1", &case);
}

/// One request: its 16 head tiles (8 tokens × 32 heads / 16) on 16 blocks of each window
/// kernel, each softmax block checking the union up to its token.
#[test]
fn swa_small_one_request_spreads_its_head_tiles_over_the_blocks() {
    let p = plan("swa_small_tp1");
    let case = Case::new(p, &StartPositions::Scalar(1_048_560), 1);
    check("swa_small_tp1", &case);
}

#[test]
fn swa_mini_default_starts_below_capacity() {
    let p = plan("swa_mini_tp1");
    let case = Case::new(p, &StartPositions::Default, p.shape.b - 1);
    check("swa_mini_tp1", &case);
}

#[test]
fn swa_mini_tp2_rank_packs_with_its_own_t_pad() {
    let p = plan("swa_mini_tp2");
    let case = Case::new(p, &StartPositions::Scalar(1_048_560), p.shape.b);
    check("swa_mini_tp2", &case);
}

/// Runs a case expected to trap and returns the message.
fn trap(variant: &str, case: &Case) -> String {
    let p = plan(variant);
    let mut tensors = case.tensors(p);
    support::try_run(support::stages(variant, STAGE), &mut tensors, case.tiling())
        .expect_err("the launch must trap")
        .to_string()
}

#[test]
fn a_lane_outside_the_request_union_stops_the_softmax_kernel() {
    let p = plan("swa_mini_tp1");
    let mut case = Case::new(p, &StartPositions::Default, p.shape.b);
    // Request 1, token 3: one lane points at another (valid) pool row.
    let w = case.spec.dims.window;
    let lane = (8 + 3) * w + 5;
    case.indices[lane] ^= 1;
    let m = trap("swa_mini_tp1", &case);
    for part in [
        "attn_window_softmax",
        "request 1, token 3",
        "not the request's window union",
    ] {
        assert!(m.contains(part), "`{part}` missing from: {m}");
    }
}

#[test]
fn a_window_row_outside_the_pool_stops_the_scores_kernel() {
    let p = plan("swa_mini_tp1");
    let mut case = Case::new(p, &StartPositions::Default, p.shape.b);
    let rows = case.spec.dims.kv_pool_rows() as i32;
    case.indices[2 * case.spec.dims.window * 8] = rows;
    let m = trap("swa_mini_tp1", &case);
    for part in ["attn_window_scores", "request 2", "is not a row of the"] {
        assert!(m.contains(part), "`{part}` missing from: {m}");
    }
}

/// swa_small's 16-head tiles run the window as one mixed launch (scores, softmax, values and,
/// the window being the only source, the finish: `attn_window_finish_…`), which stops on the
/// same violations, naming itself.
#[test]
fn the_fused_window_kernel_stops_on_the_same_violations() {
    let variant = "swa_small_tp1";
    let p = plan(variant);
    let fused = support::host(variant).steps.iter().any(
        |s| matches!(s, Step::Launch(l) if l.kernel.starts_with("attn_window_finish_h") && l.cores == Cores::Mix),
    );
    assert!(fused, "{variant} runs the window in one mixed launch");
    let w = p.attention.window;
    let mut case = Case::new(p, &StartPositions::Default, p.shape.b);
    case.indices[(8 + 3) * w + 5] ^= 1;
    let m = trap(variant, &case);
    for part in [
        "attn_window_finish_h",
        "request 1, token 3",
        "not the request's window union",
    ] {
        assert!(m.contains(part), "`{part}` missing from: {m}");
    }
    // The row changes in every token of request 2 that reads it, so the union still agrees
    // and only the gather's pool check can stop the kernel (the two checks run at once).
    let mut case = Case::new(p, &StartPositions::Default, p.shape.b);
    let (seq, old) = (p.shape.decode_seq, case.indices[2 * w * 8]);
    let outside = case.spec.dims.kv_pool_rows() as i32;
    for lane in &mut case.indices[2 * seq * w..3 * seq * w] {
        if *lane == old {
            *lane = outside;
        }
    }
    let m = trap(variant, &case);
    for part in ["attn_window_finish_h", "request 2", "is not a row of the"] {
        assert!(m.contains(part), "`{part}` missing from: {m}");
    }
}

/// FLASH at 512 tokens: 64 requests on 24 core groups, so each group's cube gathers its next
/// request's union into the second union buffer while the current request's tiles run.
#[test]
fn swa_flash_gathers_the_next_union_under_the_tiles() {
    let p = plan("swa_tp1");
    let case = Case::new(p, &StartPositions::Default, p.shape.b);
    check("swa_tp1", &case);
}
