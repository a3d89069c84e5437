//! The stage list as written: each stage's kind, typed tiling and parameters,
//! read with their locations. Relations between them are checked elsewhere.

use crate::diag::{Diagnostics, Loc};
use crate::spec::{self as s, Int, KvSource, Sp, Stage};

use super::StageKind;
use super::validate::{positive, positive_large};

/// A tile size as written, with its location.
#[derive(Debug, Clone, Copy)]
pub(super) struct Tile {
    pub value: usize,
    pub loc: Loc,
}

/// The tiling of one stage, typed by stage shape.
#[derive(Debug, Clone, Copy)]
pub(super) enum Tiling {
    HcPre {
        m: Tile,
        k: Tile,
        tokens: Tile,
        cols: Tile,
    },
    Vector {
        tokens: Tile,
        cols: Tile,
    },
    Matmul {
        m: Tile,
        n: Tile,
        k: Tile,
        tokens: Tile,
    },
    Tokens {
        tokens: Tile,
    },
    Compressor {
        m: Tile,
        n: Tile,
        k: Tile,
        tokens: Tile,
        channels: Tile,
    },
    Indexer {
        m: Tile,
        n: Tile,
        k: Tile,
        tokens: Tile,
        key_rows: Tile,
    },
    Attention {
        heads: Tile,
        kv_rows: Tile,
        d: Tile,
    },
    Collective {
        rows: Tile,
        cols: Tile,
    },
}

impl Tiling {
    /// The tiles by their spec names, in spec order.
    pub fn named(&self) -> Vec<(&'static str, Tile)> {
        match *self {
            Tiling::HcPre { m, k, tokens, cols } => {
                vec![("m", m), ("k", k), ("tokens", tokens), ("cols", cols)]
            }
            Tiling::Vector { tokens, cols } => vec![("tokens", tokens), ("cols", cols)],
            Tiling::Matmul { m, n, k, tokens } => {
                vec![("m", m), ("n", n), ("k", k), ("tokens", tokens)]
            }
            Tiling::Tokens { tokens } => vec![("tokens", tokens)],
            Tiling::Compressor {
                m,
                n,
                k,
                tokens,
                channels,
            } => vec![
                ("m", m),
                ("n", n),
                ("k", k),
                ("tokens", tokens),
                ("channels", channels),
            ],
            Tiling::Indexer {
                m,
                n,
                k,
                tokens,
                key_rows,
            } => vec![
                ("m", m),
                ("n", n),
                ("k", k),
                ("tokens", tokens),
                ("key_rows", key_rows),
            ],
            Tiling::Attention { heads, kv_rows, d } => {
                vec![("heads", heads), ("kv_rows", kv_rows), ("d", d)]
            }
            Tiling::Collective { rows, cols } => vec![("rows", rows), ("cols", cols)],
        }
    }
}

#[derive(Debug)]
pub(super) struct StageSpec {
    pub kind: StageKind,
    /// Where the entry is written.
    pub loc: Loc,
    pub tiling: Tiling,
    pub tiling_loc: Loc,
    pub pad_unaligned: bool,
}

/// One entry of the stage list as the stage graph sees it.
pub(super) struct StageNode {
    pub kind: StageKind,
    /// Where the entry is written.
    pub loc: Loc,
    /// The KV sources, for sparse_attention.
    pub sources: Vec<(KvSource, Loc)>,
}

/// The stage list read with locations, before relations are checked.
pub(super) struct ReadStages<'a> {
    pub stages: Vec<StageSpec>,
    pub graph: Vec<StageNode>,
    pub compressor: Option<Compressor<'a>>,
    pub indexer: Option<Indexer<'a>>,
    pub attention: Option<Attention<'a>>,
}

pub(super) struct Compressor<'a> {
    pub ratio: &'a Int,
    pub overlap: bool,
    pub state_block_size: usize,
    pub state_pool_blocks: usize,
    pub cmp_pool_blocks: usize,
}

pub(super) struct Indexer<'a> {
    pub heads: usize,
    pub head_dim: &'a Int,
    pub topk: &'a Int,
    pub state_block_size: usize,
    pub state_pool_blocks: usize,
    pub key_pool_blocks: usize,
}

pub(super) struct Attention<'a> {
    pub window: &'a Int,
    pub sources: Vec<(KvSource, Loc)>,
    pub kv_rows: Tile,
}

pub(super) fn read_stages<'a>(d: &mut Diagnostics, list: &'a [Sp<Stage>]) -> ReadStages<'a> {
    let mut out = ReadStages {
        stages: Vec::new(),
        graph: Vec::new(),
        compressor: None,
        indexer: None,
        attention: None,
    };
    for entry in list {
        let loc = Loc::of(entry);
        let mut sources = Vec::new();
        let (kind, tiling, tiling_loc, pad) = match &entry.value {
            Stage::HcPre(st) => {
                let t = &st.tiling.value;
                let tiling = Tiling::HcPre {
                    m: tile(d, &t.m, "m"),
                    k: tile(d, &t.k, "k"),
                    tokens: tile(d, &t.tokens, "tokens"),
                    cols: tile(d, &t.cols, "cols"),
                };
                (
                    StageKind::HcPre,
                    tiling,
                    Loc::of(&st.tiling),
                    &st.unaligned_rows,
                )
            }
            Stage::RmsNorm(st) => (
                StageKind::RmsNorm,
                vector(d, st),
                Loc::of(&st.tiling),
                &st.unaligned_rows,
            ),
            Stage::HcPost(st) => (
                StageKind::HcPost,
                vector(d, st),
                Loc::of(&st.tiling),
                &st.unaligned_rows,
            ),
            Stage::QkvProjRope(st) => (
                StageKind::QkvProjRope,
                matmul(d, st),
                Loc::of(&st.tiling),
                &st.unaligned_rows,
            ),
            Stage::OProj(st) => (
                StageKind::OProj,
                matmul(d, st),
                Loc::of(&st.tiling),
                &st.unaligned_rows,
            ),
            Stage::CacheInsert(st) => {
                let tiling = Tiling::Tokens {
                    tokens: tile(d, &st.tiling.value.tokens, "tokens"),
                };
                (
                    StageKind::CacheInsert,
                    tiling,
                    Loc::of(&st.tiling),
                    &st.unaligned_rows,
                )
            }
            Stage::Compressor(st) => {
                let t = &st.tiling.value;
                let tiling = Tiling::Compressor {
                    m: tile(d, &t.m, "m"),
                    n: tile(d, &t.n, "n"),
                    k: tile(d, &t.k, "k"),
                    tokens: tile(d, &t.tokens, "tokens"),
                    channels: tile(d, &t.channels, "channels"),
                };
                positive(d, &st.ratio, "compressor ratio");
                out.compressor = Some(Compressor {
                    ratio: &st.ratio,
                    overlap: st.overlap.value,
                    state_block_size: positive(d, &st.state_block_size, "state_block_size"),
                    state_pool_blocks: positive_large(
                        d,
                        &st.state_pool_blocks,
                        "state_pool_blocks",
                    ),
                    cmp_pool_blocks: positive_large(d, &st.cmp_pool_blocks, "cmp_pool_blocks"),
                });
                (
                    StageKind::Compressor,
                    tiling,
                    Loc::of(&st.tiling),
                    &st.unaligned_rows,
                )
            }
            Stage::Indexer(st) => {
                let t = &st.tiling.value;
                let tiling = Tiling::Indexer {
                    m: tile(d, &t.m, "m"),
                    n: tile(d, &t.n, "n"),
                    k: tile(d, &t.k, "k"),
                    tokens: tile(d, &t.tokens, "tokens"),
                    key_rows: tile(d, &t.key_rows, "key_rows"),
                };
                positive(d, &st.head_dim, "indexer head_dim");
                positive(d, &st.topk, "indexer topk");
                out.indexer = Some(Indexer {
                    heads: positive(d, &st.heads, "indexer heads"),
                    head_dim: &st.head_dim,
                    topk: &st.topk,
                    state_block_size: positive(d, &st.state_block_size, "state_block_size"),
                    state_pool_blocks: positive_large(
                        d,
                        &st.state_pool_blocks,
                        "state_pool_blocks",
                    ),
                    key_pool_blocks: positive_large(d, &st.key_pool_blocks, "key_pool_blocks"),
                });
                (
                    StageKind::Indexer,
                    tiling,
                    Loc::of(&st.tiling),
                    &st.unaligned_rows,
                )
            }
            Stage::SparseAttention(st) => {
                let t = &st.tiling.value;
                let kv_rows = tile(d, &t.kv_rows, "kv_rows");
                let tiling = Tiling::Attention {
                    heads: tile(d, &t.heads, "heads"),
                    kv_rows,
                    d: tile(d, &t.d, "d"),
                };
                positive(d, &st.window, "window");
                sources = st
                    .sources
                    .value
                    .iter()
                    .map(|s| (s.value, Loc::of(s)))
                    .collect();
                if sources.is_empty() {
                    d.error(
                        Loc::of(&st.sources),
                        "sparse_attention has no KV sources",
                        "sparse_attention lists at least one of window, compressed, indexed",
                    );
                }
                out.attention = Some(Attention {
                    window: &st.window,
                    sources: sources.clone(),
                    kv_rows,
                });
                (
                    StageKind::SparseAttention,
                    tiling,
                    Loc::of(&st.tiling),
                    &st.unaligned_rows,
                )
            }
            Stage::OGroupAllToAll(st) => (
                StageKind::OGroupAllToAll,
                collective(d, st),
                Loc::of(&st.tiling),
                &st.unaligned_rows,
            ),
            Stage::OReduceScatter(st) => (
                StageKind::OReduceScatter,
                collective(d, st),
                Loc::of(&st.tiling),
                &st.unaligned_rows,
            ),
        };
        out.graph.push(StageNode { kind, loc, sources });
        out.stages.push(StageSpec {
            kind,
            loc,
            tiling,
            tiling_loc,
            pad_unaligned: pad.is_some(),
        });
    }
    out
}

fn tile(d: &mut Diagnostics, v: &Int, name: &str) -> Tile {
    Tile {
        value: positive(d, v, &format!("tile {name}")),
        loc: Loc::of(v),
    }
}

fn vector(d: &mut Diagnostics, st: &s::VectorStage) -> Tiling {
    let t = &st.tiling.value;
    Tiling::Vector {
        tokens: tile(d, &t.tokens, "tokens"),
        cols: tile(d, &t.cols, "cols"),
    }
}

fn matmul(d: &mut Diagnostics, st: &s::MatmulStage) -> Tiling {
    let t = &st.tiling.value;
    Tiling::Matmul {
        m: tile(d, &t.m, "m"),
        n: tile(d, &t.n, "n"),
        k: tile(d, &t.k, "k"),
        tokens: tile(d, &t.tokens, "tokens"),
    }
}

fn collective(d: &mut Diagnostics, st: &s::CollectiveStage) -> Tiling {
    let t = &st.tiling.value;
    Tiling::Collective {
        rows: tile(d, &t.rows, "rows"),
        cols: tile(d, &t.cols, "cols"),
    }
}
