//! Kernels of stage hc_post (swa.md §3.9), building block `dsv4/hc_post.h`: the
//! attention output folded back into the HC streams, f32 in the reference order.

use super::{Builder, Cores, Kernel, Value};
use crate::plan::{DType, Dim, StagePlan};

pub(super) fn plan(b: &mut Builder, s: &StagePlan) {
    let p = b.plan;
    let (hidden, hc) = (p.model.hidden, p.model.hc_mult);
    let [("tokens", tokens), ("cols", cols)] = s.tiles[..] else {
        unreachable!("hc_post tiling is tokens, cols")
    };
    // The kernel moves whole 32-byte blocks (no DataCopyPad path): 16 bf16 per block.
    if cols % 16 != 0 {
        b.missing(
            s.kind,
            format!("tile cols {cols} is not a multiple of 16 (hc_post.h moves whole 32-byte blocks of bf16)"),
        );
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
    };
    let items = p.shape.local_t / tokens * (hidden / cols);
    b.launch(
        s.kind,
        kernel,
        p.chip.aiv_cores.min(items) as u32,
        &["attn_out", "x_hc", "post", "comb", "x_out"],
    );
}
