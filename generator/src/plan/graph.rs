//! The stage graph: each stage uses only what earlier stages produce, runs at
//! most once, and the layer kind has the stages it needs.

use crate::diag::{Diagnostics, Loc};
use crate::spec::{self as s, KvSource, LayerKind};

use super::StageKind;
use super::stages::StageNode;

/// What flows between stages; a stage may only use what an earlier stage made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Data {
    XMixed,
    XNormed,
    Q,
    Kv,
    KvCache,
    Compressed,
    TopK,
    Attention,
    Grouped,
    OPartial,
    AttnOut,
    XOut,
}

impl Data {
    fn describe(self) -> (&'static str, &'static str) {
        match self {
            Data::XMixed => ("x_mixed", "hc_pre"),
            Data::XNormed => ("x_normed", "rms_norm"),
            Data::Q => ("q", "qkv_proj_rope"),
            Data::Kv => ("kv", "qkv_proj_rope"),
            Data::KvCache => ("the window's KV rows", "cache_insert"),
            Data::Compressed => ("compressed rows", "compressor"),
            Data::TopK => ("top-k indices", "indexer"),
            Data::Attention => ("attention rows", "sparse_attention"),
            Data::Grouped => ("group-ordered attention rows", "o_group_all_to_all"),
            Data::OPartial => ("o_proj partials", "o_proj"),
            Data::AttnOut => ("attn_out", "o_reduce_scatter"),
            Data::XOut => ("x_out", "hc_post"),
        }
    }
}

fn needs(kind: StageKind) -> &'static [Data] {
    match kind {
        StageKind::HcPre => &[],
        StageKind::RmsNorm => &[Data::XMixed],
        StageKind::QkvProjRope => &[Data::XNormed],
        StageKind::CacheInsert => &[Data::Kv],
        StageKind::Compressor => &[Data::XNormed],
        StageKind::Indexer => &[Data::XNormed, Data::Q, Data::Compressed],
        StageKind::SparseAttention => &[Data::Q],
        StageKind::OGroupAllToAll => &[Data::Attention],
        StageKind::OProj => &[Data::Grouped],
        StageKind::OReduceScatter => &[Data::OPartial],
        StageKind::HcPost => &[Data::AttnOut, Data::XMixed],
    }
}

fn produces(kind: StageKind) -> &'static [Data] {
    match kind {
        StageKind::HcPre => &[Data::XMixed],
        StageKind::RmsNorm => &[Data::XNormed],
        StageKind::QkvProjRope => &[Data::Q, Data::Kv],
        StageKind::CacheInsert => &[Data::KvCache],
        StageKind::Compressor => &[Data::Compressed],
        StageKind::Indexer => &[Data::TopK],
        StageKind::SparseAttention => &[Data::Attention],
        StageKind::OGroupAllToAll => &[Data::Grouped],
        StageKind::OProj => &[Data::OPartial],
        StageKind::OReduceScatter => &[Data::AttnOut],
        StageKind::HcPost => &[Data::XOut],
    }
}

fn source_needs(source: KvSource) -> Data {
    match source {
        KvSource::Window => Data::KvCache,
        KvSource::Compressed => Data::Compressed,
        KvSource::Indexed => Data::TopK,
    }
}

fn source_name(source: KvSource) -> &'static str {
    match source {
        KvSource::Window => "window",
        KvSource::Compressed => "compressed",
        KvSource::Indexed => "indexed",
    }
}

const DATAFLOW: &str = "a stage only uses what an earlier stage produces";

/// Stage order (dataflow), duplicates, and which stages each layer kind needs.
pub(super) fn check_stage_graph(d: &mut Diagnostics, f: &s::SpecFile, graph: &[StageNode]) {
    let mut available: Vec<Data> = Vec::new();
    let mut seen: Vec<StageKind> = Vec::new();
    for StageNode { kind, loc, sources } in graph {
        if seen.contains(kind) {
            d.error(
                *loc,
                format!("stage {} appears twice", kind.name()),
                "each stage kind runs at most once per layer",
            );
            continue;
        }
        seen.push(*kind);
        for need in needs(*kind) {
            if !available.contains(need) {
                let (what, producer) = need.describe();
                d.error(
                    *loc,
                    format!(
                        "{} needs {what}, which no earlier stage produces",
                        kind.name()
                    ),
                    format!("{DATAFLOW} ({what} come from {producer})"),
                );
            }
        }
        let mut listed: Vec<KvSource> = Vec::new();
        for &(source, sloc) in sources {
            if listed.contains(&source) {
                d.error(
                    sloc,
                    format!("KV source {} is listed twice", source_name(source)),
                    "each KV source appears once",
                );
                continue;
            }
            listed.push(source);
            let need = source_needs(source);
            if !available.contains(&need) {
                let (what, producer) = need.describe();
                d.error(
                    sloc,
                    format!(
                        "KV source {} needs {what}, which no earlier stage produces",
                        source_name(source)
                    ),
                    format!("{DATAFLOW} ({what} come from {producer})"),
                );
            }
        }
        available.extend_from_slice(produces(*kind));
    }
    if !seen.is_empty() && !available.contains(&Data::XOut) {
        d.error(
            Loc::of(&f.stages),
            "the stage list never produces x_out",
            "a layer ends with hc_post, which writes x_out",
        );
    }

    let layer = f.layer.value;
    let has = |k: StageKind| seen.contains(&k);
    let stage_loc = |k: StageKind| graph.iter().find(|g| g.kind == k).map(|g| g.loc);
    match layer {
        LayerKind::Swa => {
            if let Some(loc) = stage_loc(StageKind::Compressor) {
                d.error(
                    loc,
                    "compressor stage in a swa layer (compress ratio 0)",
                    "only hca and csa layers compress; a swa layer has ratio 0",
                );
            }
        }
        LayerKind::Hca | LayerKind::Csa => {
            if !has(StageKind::Compressor) {
                d.error(
                    Loc::of(&f.layer),
                    format!("{} layer without a compressor stage", layer.name()),
                    "hca and csa layers compress their KV with a compressor stage",
                );
            }
        }
    }
    match (layer, stage_loc(StageKind::Indexer)) {
        (LayerKind::Csa, None) => d.error(
            Loc::of(&f.layer),
            "csa layer without an indexer stage",
            "a csa layer selects compressed rows with an indexer",
        ),
        (LayerKind::Swa | LayerKind::Hca, Some(loc)) => d.error(
            loc,
            format!("indexer stage in a {} layer", layer.name()),
            "only csa layers select compressed rows with an indexer",
        ),
        _ => {}
    }
    if !has(StageKind::SparseAttention) && !seen.is_empty() && d.is_clean() {
        d.error(
            Loc::of(&f.stages),
            "the stage list has no sparse_attention stage",
            "a layer attends with one sparse_attention stage",
        );
    }
}
