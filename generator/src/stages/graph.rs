//! The stage graph: each stage uses only what earlier stages produce, runs at
//! most once, and the layer kind has the stages it needs.

use super::kind::Data;
use super::{StageSpec, producer};
use crate::diag::{Diagnostics, Loc};
use crate::spec::{self as s, KvSource, LayerKind};

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
pub fn check<E>(d: &mut Diagnostics, f: &s::SpecFile<E>, stages: &[StageSpec]) {
    let mut available: Vec<Data> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for st in stages {
        let (name, loc) = (st.params.name(), st.loc);
        if seen.contains(&name) {
            d.error(
                loc,
                format!("stage {name} appears twice"),
                "each stage kind runs at most once per layer",
            );
            continue;
        }
        seen.push(name);
        for need in st.params.needs() {
            if !available.contains(need) {
                let (what, producer) = (need.describe(), producer(*need));
                d.error(
                    loc,
                    format!("{name} needs {what}, which no earlier stage produces"),
                    format!("{DATAFLOW} ({what} come from {producer})"),
                );
            }
        }
        let mut listed: Vec<KvSource> = Vec::new();
        for (source, sloc) in st.params.sources() {
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
                let (what, producer) = (need.describe(), producer(need));
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
        available.extend_from_slice(st.params.produces());
    }
    if !seen.is_empty() && !available.contains(&Data::XOut) {
        d.error(
            Loc::of(&f.stages),
            "the stage list never produces x_out",
            "a layer ends with hc_post, which writes x_out",
        );
    }

    let layer = f.layer.value;
    let has = |name: &str| seen.contains(&name);
    let stage_loc = |name: &str| {
        stages
            .iter()
            .find(|s| s.params.name() == name)
            .map(|s| s.loc)
    };
    match layer {
        LayerKind::Swa => {
            if let Some(loc) = stage_loc("compressor") {
                d.error(
                    loc,
                    "compressor stage in a swa layer (compress ratio 0)",
                    "only hca and csa layers compress; a swa layer has ratio 0",
                );
            }
        }
        LayerKind::Hca | LayerKind::Csa => {
            if !has("compressor") {
                d.error(
                    Loc::of(&f.layer),
                    format!("{} layer without a compressor stage", layer.name()),
                    "hca and csa layers compress their KV with a compressor stage",
                );
            }
        }
    }
    match (layer, stage_loc("indexer")) {
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
    if let (Some(loc), false) = (stage_loc("index_query"), has("indexer")) {
        d.error(
            loc,
            "index_query stage without an indexer stage",
            "index queries take their heads and head_dim from the layer's indexer stage",
        );
    }
    if let (Some(loc), false) = (stage_loc("index_compressor"), has("indexer")) {
        d.error(
            loc,
            "index_compressor stage without an indexer stage",
            "index keys take their head_dim and pools from the layer's indexer stage",
        );
    }
    if !has("sparse_attention") && !seen.is_empty() && d.is_clean() {
        d.error(
            Loc::of(&f.stages),
            "the stage list has no sparse_attention stage",
            "a layer attends with one sparse_attention stage",
        );
    }
}
