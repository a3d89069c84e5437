//! Kernels of stage hc_post (swa.md §3.9), building block `dsv4/hc_post.h`: the
//! attention output folded back into the HC streams, f32 in the reference order.

use abi::{DType, Dim};

use super::kind::{Data, Kind, Tile, TileCheck, Tiled, tiling};
use crate::budget::{Buffer, row};
use crate::chip::Mem::Ub;
use crate::diag::Diagnostics;
use crate::kernel_plan::{Builder, Cores, Kernel, Value};

pub struct HcPost;

tiling! {
    /// An item of `tokens` tokens × `cols` columns.
    tokens, cols
}

impl Kind for HcPost {
    const NAME: &'static str = "hc_post";
    const NEEDS: &'static [Data] = &[Data::AttnOut, Data::XMixed];
    const PRODUCES: &'static [Data] = &[Data::XOut];
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
        let (hidden, hc) = (p.model.hidden, p.model.hc_mult);
        let (tokens, cols) = (t.tokens.value, t.cols.value);
        // The kernel moves whole 32-byte blocks (no DataCopyPad path): 16 bf16 per block.
        if cols % 16 != 0 {
            b.missing(format!(
                "tile cols {cols} is not a multiple of 16 (hc_post.h moves whole 32-byte blocks of bf16)"
            ));
            return;
        }
        let per_token = |n: usize| vec![Dim::Var("t"), Dim::Const(n)];
        b.workspace("attn_out", per_token(hidden), DType::Bf16);
        b.workspace("post", per_token(hc), DType::F32);
        b.workspace("comb", per_token(hc * hc), DType::F32);
        let kernel = Kernel {
            name: format!("hc_post_hc{hc}_d{hidden}_t{tokens}_c{cols}"),
            doc: "hc_post: x_out[o] = ((a·post[o] + x0·comb[0][o]) + …) + x3·comb[3][o], all f32"
                .into(),
            block: "hc_post.h",
            class: "HcPost",
            cores: Cores::Aiv,
            params: vec![
                ("HC", Value::U32(hc as u32)),
                ("HIDDEN", Value::U32(hidden as u32)),
                ("TOKENS", Value::U32(tokens as u32)),
                ("COLS", Value::U32(cols as u32)),
            ],
            args: vec!["attn_out", "x_hc", "post", "comb", "x_out"],
            buffers: buffers(tokens, cols, hc),
            parts: Vec::new(),
        };
        let items = p.shape.local_t / tokens * (hidden / cols);
        b.launch(
            kernel,
            p.chip.aiv_cores.min(items) as u32,
            &["attn_out", "x_hc", "post", "comb", "x_out"],
        );
    }
}

/// hc_post.h's UB: an item of `tokens` tokens × `cols` columns (attn_out, the x_hc rows and
/// the x_out rows, double buffered), attn_out widened, a product row, and the group's post
/// and comb (moved with DataCopyPad), each starting on a block.
fn buffers(tokens: usize, cols: usize, hc: usize) -> Vec<Buffer> {
    use DType::*;
    let (t, c) = (tokens, cols);
    vec![
        row("attn_out", Ub, Bf16, t * c, 2, Some(c)),
        row("x_hc", Ub, F32, t * hc * c, 2, Some(c)),
        row("x_out", Ub, F32, t * hc * c, 2, Some(c)),
        row("attn_f32", Ub, F32, t * c, 1, None),
        row("product", Ub, F32, c, 1, None),
        row(
            "weights",
            Ub,
            F32,
            (t * hc).next_multiple_of(8) + (t * hc * hc).next_multiple_of(8),
            1,
            None,
        ),
    ]
}
