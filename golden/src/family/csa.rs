//! CSA: the window plus a ratio-4 overlapping compressor, and a lightning indexer whose
//! exact top-k picks the compressed rows attention reads (hca_csa.md).

use super::{Chain, Device, Family};
use crate::compare::{Check, Report, Rule, topk_rows};
use crate::dims::{CsaDims, CsaState, Dims, LayerSpec};
use crate::error::GoldenError;
use crate::fixtures::start_pos::LONG_START;
use crate::fixtures::{self, Fixture, FixtureError, FixtureOptions};
use crate::indexer;
use crate::layer;
use crate::signature::Sig;
use crate::signature::entry::{Role::In, pool, sig};
use crate::tensor::TensorMap;
use abi::DType::*;

/// Score ties of the device's top-k against the top-k of its own scores: the scores are
/// recomputed exactly but for the order of the f32 head sum (as in the stage test).
const TOPK_TOL: f32 = 1e-5;

impl Family for CsaDims {
    fn tensors(&self, d: &Dims, t: usize) -> Vec<Sig> {
        let (b, bs, hd, rope) = (t / d.seq, d.block_size, d.head_dim, d.rope_dim);
        let (ih, id) = (self.index_heads, self.index_head_dim);
        let rows = d.rope_table_rows(t);
        let mut rope_rows = vec![
            sig("freqs_cos", Bf16, &[rows, rope], In),
            sig("freqs_sin", Bf16, &[rows, rope], In),
        ];
        if self.state == CsaState::Ring {
            // Row t at p_t − 3 for boundary tokens (csa_1m.md §1.4).
            rope_rows.push(sig("cmp_freqs_cos", Bf16, &[t, rope], In));
            rope_rows.push(sig("cmp_freqs_sin", Bf16, &[t, rope], In));
        }
        rope_rows.extend([
            sig("cmp_wkv", Bf16, &[2 * hd, d.hidden], In),
            sig("cmp_wgate", Bf16, &[2 * hd, d.hidden], In),
            sig("cmp_ape", F32, &[self.ratio, 2 * hd], In),
            sig("cmp_norm_w", Bf16, &[hd], In),
            pool("compress_state", F32, self.state_block, &[4 * hd]),
            sig(
                "compress_state_block_table",
                I32,
                &[b, self.state_table_blocks(d)],
                In,
            ),
            sig("idx_wq_b", I8, &[d.q_lora, ih * id], In),
            sig("idx_wq_b_scale", F32, &[ih * id], In),
            sig("weights_proj", Bf16, &[d.hidden, ih], In),
            sig("hadamard_idx", Bf16, &[id, id], In),
            sig("inner_wkv", Bf16, &[2 * id, d.hidden], In),
            sig("inner_wgate", Bf16, &[2 * id, d.hidden], In),
            sig("inner_ape", F32, &[self.ratio, 2 * id], In),
            sig("inner_norm_w", Bf16, &[id], In),
            pool("inner_compress_state", F32, self.state_block, &[4 * id]),
            sig(
                "inner_compress_state_block_table",
                I32,
                &[b, self.state_table_blocks(d)],
                In,
            ),
            pool("kv_cache", Bf16, bs, &[1, hd]),
            pool("cmp_kv", Bf16, bs, &[1, hd]),
            sig("cmp_block_table", I32, &[b, self.cmp_table_blocks(d)], In),
            pool("idx_kv_cache", I8, bs, &[1, id]),
            pool("idx_kv_scale", F32, bs, &[1, 1]),
            sig("idx_block_table", I32, &[b, self.idx_table_blocks(d)], In),
            sig("ori_slot_mapping", I64, &[t], In),
            sig("window_swa_indices", I32, &[t, d.window], In),
            sig("window_swa_lens", I32, &[t], In),
            sig("cmp_slot_mapping", I64, &[t], In),
            sig("idx_slot_mapping", I64, &[t], In),
            sig("state_slot_mapping", I64, &[t], In),
            sig("inner_state_slot_mapping", I64, &[t], In),
            sig("position_ids", I32, &[t], In),
            sig("kv_seq_lens", I32, &[b], In),
        ]);
        rope_rows
    }

    fn pool_mapping(&self, d: &Dims, pool: &str) -> Option<(&'static str, usize)> {
        let bs = d.block_size;
        match pool {
            "kv_cache" => Some(("ori_slot_mapping", bs)),
            "compress_state" => Some(("state_slot_mapping", self.state_block)),
            "inner_compress_state" => Some(("inner_state_slot_mapping", self.state_block)),
            "cmp_kv" => Some(("cmp_slot_mapping", bs)),
            "idx_kv_cache" | "idx_kv_scale" => Some(("idx_slot_mapping", bs)),
            _ => None,
        }
    }

    fn start_set(&self, d: &Dims) -> Vec<i64> {
        let (r, seq, win) = (self.ratio as i64, d.seq as i64, d.window as i64);
        vec![
            LONG_START,
            0,
            (r - seq.min(2)) % r,
            r - 1,
            2 * r - 1,
            win - 1,
            win,
            self.state_block as i64 * 32 - 1,
            r * 64 - 1,
            r * 128 - 1,
        ]
    }

    fn fixture(
        &self,
        spec: &LayerSpec,
        opts: &FixtureOptions,
        batch: usize,
    ) -> Result<Fixture, FixtureError> {
        fixtures::csa::build(spec, self, opts, batch)
    }

    fn run(
        &self,
        d: &Dims,
        inputs: &TensorMap,
        t: usize,
    ) -> Result<(TensorMap, TensorMap), GoldenError> {
        layer::csa::run(d, self, inputs, t, None)
    }

    /// x_out by ratio_reldiff(4e-3): the device threshold (the reference only prints a
    /// diagnostic on its simulators).
    fn checks(&self) -> Vec<Check> {
        let r128 = 1.0 / 128.0;
        vec![
            Check::reldiff("x_out", 4e-3),
            Check::all_close("compress_state", 1e-3, 1e-3, 0.005),
            Check::all_close("inner_compress_state", 1e-3, 1e-3, 0.005),
            Check::all_close("kv_cache", 1e-4, r128, 0.005),
            Check::all_close("cmp_kv", 1e-4, r128, 0.005),
            Check::all_close("idx_kv_cache", 1.0, 0.0, 0.01),
            Check::all_close("idx_kv_scale", 1e-4, r128, 0.01),
        ]
    }

    fn probes(&self) -> &'static [&'static str] {
        &["idx_q", "idx_q_scale", "idx_weights", "topk_idx"]
    }

    /// CSA selects rows: an index query that rounds to another int8 step (within the
    /// thresholds) can rank a row k-th instead of (k+1)-th, and swapping one row moves that
    /// token's attention output far past x_out's cap. So the chain is judged link by link:
    /// the device's index queries and head weights against the golden's (the int8 queries
    /// and their scales by the index cache's own rules, the f32 head weights by the
    /// compressor state's); its top-k lists against the exact top-k of the scores its own
    /// queries and index cache give; and, where a token chose other rows than the golden
    /// did, x_out against the golden recomputed with the device's choice.
    fn judge_chain(
        &self,
        d: &Dims,
        inputs: &TensorMap,
        t: usize,
        device: Device<'_>,
        trace: &TensorMap,
    ) -> Result<Chain, GoldenError> {
        let mut chain = Chain::default();
        let Ok(own) = trace.values::<i32>("topk_idx") else {
            return Ok(chain); // saved outputs come without the golden's trace
        };
        for check in [
            Check::all_close("idx_q", 1.0, 0.0, 0.01),
            Check::all_close("idx_q_scale", 1e-4, 1.0 / 128.0, 0.01),
            Check::all_close("idx_weights", 1e-3, 1e-3, 0.005),
        ] {
            chain.reports.push(check.whole(device.probes, trace));
        }
        let rule = Rule::TopK {
            atol: 0.0,
            rtol: TOPK_TOL,
        };
        let k = self.index_topk;
        let topk = match (
            device.probes.values::<i32>("topk_idx"),
            layer::csa::device_scores(d, self, inputs, device.probes, device.outputs),
        ) {
            (Ok(got), Ok(rows)) => {
                let exact = indexer::top_k_rows(self, &rows);
                let report = topk_rows("topk_idx", got, &exact, k, &rows, TOPK_TOL);
                let differ = got
                    .chunks_exact(k)
                    .zip(own.chunks_exact(k))
                    .filter(|(g, w)| g != w)
                    .count();
                if report.pass && differ > 0 {
                    chain.followed = Some(layer::csa::run(d, self, inputs, t, Some(got))?.0);
                    chain.notes.push(format!(
                        "x_out is judged against the golden recomputed with the kernel's top-k: \
                         {differ} of {} token rows chose other rows than the golden's (index \
                         queries within their thresholds rank near-equal rows differently)",
                        report.numel
                    ));
                }
                report
            }
            (Err(e), _) => Report::broken("topk_idx", rule, format!("not probed: {e}")),
            (_, Err(e)) => Report::broken(
                "topk_idx",
                rule,
                format!("the device's index scores cannot be formed: {e}"),
            ),
        };
        chain.reports.push(topk);
        Ok(chain)
    }
}
