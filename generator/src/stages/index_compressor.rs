//! Stage index_compressor: the lightning indexer's own ratio-4 overlapping compressor
//! (hca_csa.md §4.4, §4.5 end, §5.3), the main compressor's building blocks with the
//! geometry of the layer's indexer (`IndexerPlan.inner`): its pooled row rotates at the
//! step's first position p0_b (the ring CSA's, every boundary's, at e − 3 with the
//! boundary token's `cmp_freqs_*` row), is rounded to bf16, multiplied by the Hadamard matrix and
//! quantised to int8 on its write into `idx_kv_cache` / `idx_kv_scale`.
//!
//! ```text
//! x_normed ·inner_wkvᵀ  → inner_kv f32   ─┐
//! x_normed ·inner_wgateᵀ→ inner_score f32 ┴─CompressorPool→ inner_pooled f32
//!     ─CompressorFinishToToken→ idx_rows bf16 (row b·SEQ; ring: every boundary token's row)
//!     (one tile a row: CompressorPoolFinishToToken);  then CompressorCommit→ inner_compress_state
//! idx_rows ·hadamard_idx→ idx_kf f32 ─IndexKeyWrite→ idx_kv_cache i8, idx_kv_scale f32
//! ```
//!
//! The pooling, finish and commit are the main compressor's (`compressor::plan_instance`);
//! the pooled row of request b goes to workspace row b·SEQ, so the Hadamard product is
//! one token-row matmul whose other rows are never written nor read. `IndexKeyWrite`
//! (`dsv4/index_key.h`) rounds kf to bf16 and quantises it into the cache row of the
//! boundary token's idx slot.

use abi::{DType, Dim};

use super::compressor::{Instance, Tiling, plan_instance};
use super::kind::{Data, Kind, Tile, TileCheck, Tiled};
use crate::budget::{Buffer, reduce_tmp, row};
use crate::chip::Mem::Ub;
use crate::diag::Diagnostics;
use crate::kernel_plan::gemm::{self, BLayout, Matmul, Operands, Rows};
use crate::kernel_plan::{Builder, Cores, Kernel, Value};
use crate::plan::CompressorPlan;
use crate::spec::StateLayout;

pub struct IndexCompressor;

impl Kind for IndexCompressor {
    const NAME: &'static str = "index_compressor";
    const NEEDS: &'static [Data] = &[Data::XNormed];
    const PRODUCES: &'static [Data] = &[Data::IndexKeys];
    type Spec = Tiled<Tiling>;
    type Params = Tiling<Tile>;

    fn read(spec: &Tiled<Tiling>, d: &mut Diagnostics) -> Tiling<Tile> {
        spec.tiling.value.read(d)
    }

    fn check(t: &Tiling<Tile>, c: &mut TileCheck) {
        let Some(i) = c.plan.indexer.clone() else {
            return; // the graph check reports index_compressor without an indexer
        };
        let hidden = c.plan.model.hidden;
        let (out, hd) = (i.inner.out_width, i.inner.head_dim);
        let ns = [(out, "the projected width"), (hd, "indexer head_dim")];
        let ks = [(hidden, "hidden"), (hd, "indexer head_dim")];
        c.products([t.m, t.n, t.k, t.tokens], &ns, &ks);
        c.divides(t.channels, "channels", hd, "indexer head_dim");
    }

    fn plan(t: &Tiling<Tile>, b: &mut Builder) {
        let p = b.plan;
        let Some(ix) = &p.indexer else {
            unreachable!("the graph check puts an indexer beside index_compressor")
        };
        let c = &ix.inner;
        let inner = Instance {
            plan: c,
            projections: ["inner_kv", "inner_score"],
            weights: ["inner_wkv", "inner_wgate", "inner_ape", "inner_norm_w"],
            state: [
                "inner_state_slot_mapping",
                "inner_compress_state_block_table",
                "inner_compress_state",
            ],
            rows: ["idx_slot_mapping", "idx_rows"],
            pooled: "inner_pooled",
            to_token: true,
            // The ring layer's: the main compressor's rows at e − 3 (csa_1m.md §1.4).
            per_token_rope: ["cmp_freqs_cos", "cmp_freqs_sin"],
            // The snapshot's: the step's first position p0_b, not the window start (§4.5).
            rope_align: 1,
        };
        if !plan_instance(b, &inner, t) {
            return;
        }
        let hd = c.head_dim;
        b.workspace("idx_kf", vec![Dim::Var("t"), Dim::Const(hd)], DType::F32);
        let tiles = [t.m.value, t.n.value, t.k.value];
        let hadamard = Matmul::new(
            Operands::Bf16,
            BLayout::Kn,
            Rows::Tokens,
            p.shape.local_t,
            hd,
            hd,
        );
        if gemm::launch(b, tiles, &hadamard, ["idx_rows", "hadamard_idx", "idx_kf"]).is_none() {
            return;
        }
        b.launch_spreading(
            key_write(c, p.shape.decode_seq),
            p.chip.aiv_cores.min(p.shape.b) as u32,
            &[
                "idx_kf",
                "position_ids",
                "idx_slot_mapping",
                "idx_kv_cache",
                "idx_kv_scale",
            ],
        );
    }
}

fn key_write(c: &CompressorPlan, seq: usize) -> Kernel {
    let hd = c.head_dim;
    let ring = c.state == StateLayout::Ring;
    Kernel {
        name: format!(
            "index_key_write_r{}_hd{hd}_s{seq}{}",
            c.ratio,
            if ring { "_ring" } else { "" }
        ),
        doc: format!(
            "the Hadamard row of {} rounded to bf16, quantised to int8 into idx_kv_cache with \
             its scale in idx_kv_scale",
            if ring {
                "every boundary token"
            } else {
                "each request's first boundary"
            }
        ),
        block: "index_key.h",
        class: "IndexKeyWrite",
        cores: Cores::Aiv,
        params: vec![
            ("HD", Value::u32(hd)),
            ("RATIO", Value::u32(c.ratio)),
            ("SEQ", Value::u32(seq)),
            ("RING", Value::Bool(ring)),
        ],
        args: vec!["kf", "positions", "idx_slots", "keys", "scales"],
        buffers: key_write_buffers(hd),
        parts: Vec::new(),
    }
}

/// IndexKeyWrite's UB: a kf row in (f32) and its bf16 rounding, quant.h's row scratch
/// (f32, f16), ReduceMax's result block and scratch, the int8 row out and a block holding
/// its scale (moved with DataCopyPad).
fn key_write_buffers(hd: usize) -> Vec<Buffer> {
    use DType::*;
    vec![
        row("kf", Ub, F32, hd, 1, Some(hd)),
        row("kf_bf16", Ub, Bf16, hd, 1, None),
        row("work", Ub, F32, hd, 1, None),
        // f16 staging of the int8 quantisation (2 bytes, sized as bf16)
        row("f16", Ub, Bf16, hd, 1, None),
        row("slot", Ub, F32, 8, 1, None),
        row("reduce_tmp", Ub, F32, reduce_tmp(hd), 1, None),
        row("key_out", Ub, I8, hd, 1, Some(hd)),
        row("scale_out", Ub, F32, 8, 1, None),
    ]
}
