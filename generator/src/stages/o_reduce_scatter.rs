//! Stage o_reduce_scatter (swa.md §3.8 step 3), present only at TP > 1: the token
//! scatter moves rows `[o · t, o · t + t)` of every rank's `o_partial` to owner o's
//! `o_window` at rows `r · t`, then `dsv4/rank_sum.h` sums the tp source blocks in
//! ascending rank order and rounds once to bf16 (`attn_out`). `o_window` keeps the
//! reference's name and shape.

use abi::{DType, Dim};

use super::kind::{Data, Kind, Tile, TileCheck, Tiled, tiling};
use crate::budget::{Buffer, row};
use crate::chip::Mem::Ub;
use crate::diag::Diagnostics;
use crate::kernel_plan::{Builder, Cores, Kernel, Step, Value};

pub struct OReduceScatter;

tiling! {
    /// `rows` token rows × `cols` columns per tile of the sum.
    rows, cols
}

impl Kind for OReduceScatter {
    const NAME: &'static str = abi::plan::TOKEN_SCATTER;
    const NEEDS: &'static [Data] = &[Data::OPartial];
    const PRODUCES: &'static [Data] = &[Data::AttnOut];
    const COLLECTIVE: bool = true;
    type Spec = Tiled<Tiling>;
    type Params = Tiling<Tile>;

    fn read(spec: &Tiled<Tiling>, d: &mut Diagnostics) -> Tiling<Tile> {
        spec.tiling.value.read(d)
    }

    fn check(t: &Tiling<Tile>, c: &mut TileCheck) {
        c.tokens(t.rows);
        c.divides(t.cols, "cols", c.plan.model.hidden, "hidden");
    }

    fn plan(t: &Tiling<Tile>, b: &mut Builder) {
        let p = b.plan;
        let (m, sh) = (&p.model, &p.shape);
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
            src: "o_partial",
            dst: "o_window",
        });
        let (tile_rows, tile_n) = (t.rows.value, t.cols.value);
        let tiles = sh.local_t / tile_rows * (m.hidden / tile_n);
        b.launch(
            rank_sum(sh.tp, m.hidden, tile_rows, tile_n),
            p.chip.aiv_cores.min(tiles) as u32,
            &["o_window", "attn_out"],
        );
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
        buffers: buffers(tile_rows, tile_n),
        parts: Vec::new(),
    }
}

/// rank_sum.h's UB: a `rows` × `cols` tile of each source rank in (double buffered), the
/// bf16 sum out (double buffered), and the f32 sum.
fn buffers(rows: usize, cols: usize) -> Vec<Buffer> {
    use DType::*;
    let tile = rows * cols;
    vec![
        row("rows_in", Ub, F32, tile, 2, Some(cols)),
        row("rows_out", Ub, Bf16, tile, 2, Some(cols)),
        row("acc", Ub, F32, tile, 1, None),
    ]
}
