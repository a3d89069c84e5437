//! The TP exchanges around the group-sharded o_proj (swa.md §3.8), present only at TP > 1.
//!
//! o_group_all_to_all: a data-movement step (the runtime moves rows between ranks) from
//! every rank's `o_packed_heads` to the owner's `attention_local`, rank-major with compact
//! stride t. o_reduce_scatter: the token scatter moves rows `[o · t, o · t + t)` of every
//! rank's `o_partial` to owner o's `o_window` at rows `r · t`, then a kernel sums the tp
//! source blocks in ascending rank order and rounds once to bf16 (`attn_out`).
//!
//! These workspaces stand in for the reference's symmetric exchange windows: its
//! `attention_window` is `attention_local` here (same shape), its `o_window` keeps its name
//! and shape, and its signal arrays have no counterpart (the runtime's steps are barriers).

use super::o_proj::tile;
use super::{Builder, Cores, Kernel, Step, Value};
use crate::plan::{DType, Dim, StageKind, StagePlan};

pub(super) fn plan(b: &mut Builder, s: &StagePlan) {
    let p = b.plan;
    let (m, sh) = (&p.model, &p.shape);
    match s.kind {
        StageKind::OGroupAllToAll => {
            b.workspace(
                "o_packed_heads",
                vec![Dim::Const(m.o_groups * sh.t_pad), Dim::Const(m.o_group_in)],
                DType::Bf16,
            );
            b.workspace(
                "attention_local",
                vec![
                    Dim::Const(sh.attention_window_rows),
                    Dim::Const(m.o_group_in),
                ],
                DType::Bf16,
            );
            b.step(Step::GroupAllToAll {
                src: "o_packed_heads".into(),
                dst: "attention_local".into(),
            });
        }
        StageKind::OReduceScatter => {
            b.workspace(
                "o_window",
                vec![Dim::Const(sh.o_window_rows), Dim::Const(m.hidden)],
                DType::F32,
            );
            b.workspace(
                "attn_out",
                vec![Dim::Var("t"), Dim::Const(m.hidden)],
                DType::Bf16,
            );
            b.step(Step::TokenScatter {
                src: "o_partial".into(),
                dst: "o_window".into(),
            });
            let (tile_rows, tile_n) = (tile(s, "rows"), tile(s, "cols"));
            let tiles = sh.local_t / tile_rows * (m.hidden / tile_n);
            b.launch(
                s.kind,
                rank_sum(sh.tp, m.hidden, tile_rows, tile_n),
                p.chip.aiv_cores.min(tiles) as u32,
                &["o_window", "attn_out"],
            );
        }
        _ => unreachable!("stage {} is not a collective", s.name()),
    }
}

/// `dsv4/rank_sum.h`: bf16(Σ_r window[r · t + j]) in ascending r.
fn rank_sum(tp: usize, n: usize, tile_rows: usize, tile_n: usize) -> Kernel {
    Kernel {
        name: format!("rank_sum_tp{tp}_n{n}_t{tile_rows}x{tile_n}"),
        doc: "reduce-scatter sum of the ranks' f32 o_proj partials, ascending ranks, bf16 once"
            .into(),
        block: "rank_sum.h",
        class: "RankSum",
        cores: Cores::Aiv,
        params: vec![
            ("TP", Value::U32(tp as u32)),
            ("N", Value::U32(n as u32)),
            ("TILE_ROWS", Value::U32(tile_rows as u32)),
            ("TILE_N", Value::U32(tile_n as u32)),
        ],
        args: vec!["window", "out"],
    }
}
