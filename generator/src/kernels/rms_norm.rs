//! Kernels of stage rms_norm (swa.md §3.2), building block `dsv4/rms_norm.h`:
//! x_mixed → x_normed with attn_norm_w, 8-row groups split over the vector cores
//! and moved in tiles of `tokens` rows.

use super::{Builder, Cores, Kernel, Value, float_tag};
use crate::plan::{DType, Dim, StagePlan};

pub(super) fn plan(b: &mut Builder, s: &StagePlan) {
    let p = b.plan;
    let hidden = p.model.hidden;
    let [("tokens", tokens), ("cols", cols)] = s.tiles[..] else {
        unreachable!("rms_norm tiling is tokens, cols")
    };
    // The kernel moves whole 32-byte blocks (no DataCopyPad path): 16 bf16 per block.
    if cols % 16 != 0 {
        b.missing(
            s.kind,
            format!("tile cols {cols} is not a multiple of 16 (rms_norm.h moves whole 32-byte blocks of bf16)"),
        );
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
    };
    // Work items are groups of 8 rows, the runtime token granularity.
    let blocks = p.chip.aiv_cores.min(p.shape.local_t / 8);
    b.launch(
        s.kind,
        kernel,
        blocks as u32,
        &["x_mixed", "attn_norm_w", "x_normed"],
    );
}
