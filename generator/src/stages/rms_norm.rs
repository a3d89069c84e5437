//! Stage rms_norm (swa.md §3.2), building block `dsv4/rms_norm.h`: x_mixed → x_normed
//! with attn_norm_w, 8-row groups split over the vector cores and moved in tiles of
//! `tokens` rows.

use abi::{DType, Dim};

use super::kind::{Data, Kind, Tile, TileCheck, Tiled, tiling};
use crate::budget::{Buffer, row};
use crate::chip::Mem::Ub;
use crate::diag::Diagnostics;
use crate::kernel_plan::{Builder, Cores, Kernel, Value, float_tag};

pub struct RmsNorm;

tiling! {
    /// `tokens` whole rows per tile; f32 work in `cols`-wide chunks.
    tokens, cols
}

impl Kind for RmsNorm {
    const NAME: &'static str = "rms_norm";
    const NEEDS: &'static [Data] = &[Data::XMixed];
    const PRODUCES: &'static [Data] = &[Data::XNormed];
    type Spec = Tiled<Tiling>;
    type Params = Tiling<Tile>;

    fn read(spec: &Tiled<Tiling>, d: &mut Diagnostics) -> Tiling<Tile> {
        spec.tiling.value.read(d)
    }

    fn check(t: &Tiling<Tile>, c: &mut TileCheck) {
        c.tokens(t.tokens);
        c.divides(t.cols, "cols", c.plan.model.hidden, "hidden");
    }

    fn plan(t: &Tiling<Tile>, b: &mut Builder) {
        let p = b.plan;
        let hidden = p.model.hidden;
        let (tokens, cols) = (t.tokens.value, t.cols.value);
        // The kernel moves whole 32-byte blocks (no DataCopyPad path): 16 bf16 per block.
        if cols % 16 != 0 {
            b.missing(format!(
                "tile cols {cols} is not a multiple of 16 (rms_norm.h moves whole 32-byte blocks of bf16)"
            ));
            return;
        }
        for name in ["x_mixed", "x_normed"] {
            b.workspace(name, vec![Dim::Var("t"), Dim::Const(hidden)], DType::Bf16);
        }
        let eps = p.model.rms_eps;
        let kernel = Kernel {
            name: format!("rms_norm_d{hidden}_t{tokens}_c{cols}_eps{}", float_tag(eps)),
            doc: "RMSNorm of bf16 rows with a bf16 weight, (x · inv) · w rounded once".into(),
            block: "rms_norm.h",
            class: "RmsNorm",
            cores: Cores::Aiv,
            params: vec![
                ("HIDDEN", Value::U32(hidden as u32)),
                ("TOKENS", Value::U32(tokens as u32)),
                ("COLS", Value::U32(cols as u32)),
                ("EPS", Value::F32(eps)),
            ],
            args: vec!["x", "weight", "y"],
            buffers: buffers(tokens, cols, hidden),
            parts: Vec::new(),
        };
        // Work items are groups of 8 rows (the runtime token granularity), cut into tiles of
        // `tokens` rows when groups are fewer than cores.
        let blocks = p.chip.aiv_cores.min(p.shape.local_t / tokens);
        b.launch(
            kernel,
            blocks as u32,
            &["x_mixed", "attn_norm_w", "x_normed"],
        );
    }
}

/// rms_norm.h's UB: tiles of `tokens` whole rows in and out, the widened weight, f32 work
/// in `cols`-wide chunks, and the row's inverse RMS beside a block of ones.
fn buffers(tokens: usize, cols: usize, hidden: usize) -> Vec<Buffer> {
    use DType::*;
    let (t, c, h) = (tokens, cols, hidden);
    vec![
        row("x_in", Ub, Bf16, t * h, 2, Some(h)),
        row("x_out", Ub, Bf16, t * h, 2, Some(h)),
        row("weight", Ub, F32, h, 1, None),
        row("x_f32", Ub, F32, c, 1, None),
        row("squares", Ub, F32, c, 1, None),
        row("square_sums", Ub, F32, c, 1, None),
        row("reduce_tmp", Ub, F32, c, 1, None),
        row("scalars", Ub, F32, 16, 1, None),
    ]
}
