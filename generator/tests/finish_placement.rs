//! Where the attention's finish runs (`stages::sparse_attention`): fused, in the launch that
//! completes the heads — the combine of a further source that splits over KV — on the
//! largest tile of heads whose buffers fit beside that launch's in UB; where none does, and
//! unfused, in a launch of its own.

mod common;

use common::{hca, replace, tp1_launches};

/// The sparse_attention kernels of the spec's TP 1 plan, in launch order.
fn attention_launches(text: &str) -> Vec<String> {
    let launches = tp1_launches(text, "sparse_attention");
    launches.into_iter().map(|(kernel, _)| kernel).collect()
}

fn has(launches: &[String], prefix: &str) -> bool {
    launches.iter().any(|k| k.starts_with(prefix))
}

#[test]
fn the_combine_finishes_where_the_finish_fits_beside_it() {
    // 1M positions: a request's compressed rows span chunks, so a combine follows.
    let fits = attention_launches(&hca());
    assert!(has(&fits, "attn_combine_finish_cmp"), "{fits:?}");
    assert!(!has(&fits, "attn_finish"), "{fits:?}");
    // Wide heads in 16-head tiles: the combine's rows and the finish's 16-head tiles overflow
    // UB together, while each fits alone; the finish then takes 8-head tiles beside it.
    let wide = replace(&hca(), "head_dim: 128", "head_dim: 768");
    let wide = attention_launches(&replace(
        &wide,
        "{ heads: 8, kv_rows",
        "{ heads: 16, kv_rows",
    ));
    let combine = wide
        .iter()
        .find(|k| k.starts_with("attn_combine_finish_cmp"))
        .unwrap_or_else(|| panic!("{wide:?}"));
    assert!(combine.contains("_ht8_"), "{combine}");
    assert!(!has(&wide, "attn_finish"), "{wide:?}");
    // Unfused: the combine and the finish launch as the stage planned them.
    let unfused = attention_launches(&replace(&hca(), "layer: hca", "layer: hca\nfuse: false"));
    assert!(
        has(&unfused, "attn_combine_cmp") && has(&unfused, "attn_finish"),
        "{unfused:?}"
    );
}
