//! The golden's own description of a layer variant: model dims, deployment
//! constants and TP degree, independent of the generator's plan (a later
//! issue maps the plan onto these). Presets follow the reference tables
//! (swa.md §1, hca_csa.md §1).

/// RoPE frequency profile of a layer (hca_csa.md §1.4).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RopeProfile {
    pub theta: f64,
    pub yarn: Option<Yarn>,
}

/// YaRN frequency blending (no mscale / temperature: the reference applies none).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Yarn {
    pub factor: f64,
    pub beta_fast: f64,
    pub beta_slow: f64,
    pub original_max_pos: usize,
}

impl RopeProfile {
    /// SWA layers: rope_theta 10000, no YaRN.
    pub const PLAIN: RopeProfile = RopeProfile {
        theta: 10_000.0,
        yarn: None,
    };
    /// Compressed layers: compress_rope_theta 160000 with YaRN (FLASH values).
    pub const COMPRESSED: RopeProfile = RopeProfile {
        theta: 160_000.0,
        yarn: Some(Yarn {
            factor: 16.0,
            beta_fast: 32.0,
            beta_slow: 1.0,
            original_max_pos: 65_536,
        }),
    };
}

/// Where the kernels' RoPE rows come from (hca_csa.md §2.3, pro.md §3 "RoPE").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeTable {
    /// Token-local `[t, rope_dim]` rows (and, for HCA, `cmp_freqs_*` rows per request).
    PerToken,
    /// The whole `[max_seq_len, rope_dim]` table; every row is gathered by position.
    Positions,
}

/// Dims shared by every layer family.
#[derive(Debug, Clone, PartialEq)]
pub struct Dims {
    pub hidden: usize,
    pub heads: usize,
    pub head_dim: usize,
    /// Rotary dims: the last `rope_dim` of every head.
    pub rope_dim: usize,
    pub q_lora: usize,
    pub o_lora: usize,
    pub o_groups: usize,
    pub hc_mult: usize,
    pub hc_sinkhorn_iters: usize,
    pub rms_eps: f32,
    pub hc_eps: f32,
    pub window: usize,
    /// Requests per DP group at TP 1 (the token capacity is `decode_batch · seq`).
    pub decode_batch: usize,
    /// Tokens per request per step (S).
    pub seq: usize,
    /// Rows per KV page.
    pub block_size: usize,
    /// Physical pages of the raw KV pool (per rank).
    pub kv_pool_blocks: usize,
    /// Layer-local position ceiling (start + S must not exceed it).
    pub max_seq_len: usize,
    /// Token RoPE profile.
    pub rope: RopeProfile,
    pub rope_table: RopeTable,
    pub tp: usize,
}

/// SWA's own constants: none (its window and pages are common dims); the type the SWA
/// family's golden, fixtures and checks hang on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SwaDims;

/// Ratio-128 compressor constants (HCA).
#[derive(Debug, Clone, PartialEq)]
pub struct HcaDims {
    pub ratio: usize,
    pub state_block: usize,
    pub state_pool_blocks: usize,
    pub cmp_pool_blocks: usize,
}

/// How CSA keeps its compressor state, and with it which reference CSA a layer follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CsaState {
    /// The reference snapshot (hca_csa.md): state rows by position through a
    /// `[B, max_seq_len / state_block]` table, a step pools its first boundary, RoPE rows
    /// gathered from the whole table (index queries at p0, index keys at p0).
    Paged,
    /// pypto-lib PR #1013 (csa_1m.md): an 8-row ring per request (`position mod 8`), every
    /// boundary pooled against the old ring plus the step's own rows before the ring is
    /// committed, token-local RoPE rows with `cmp_freqs_*` at `p − 3`, index queries at
    /// p_t, pools sized from the positions.
    Ring,
}

/// Ratio-4 compressor and lightning-indexer constants (CSA).
#[derive(Debug, Clone, PartialEq)]
pub struct CsaDims {
    pub state: CsaState,
    pub ratio: usize,
    pub state_block: usize,
    pub state_pool_blocks: usize,
    pub inner_state_pool_blocks: usize,
    pub cmp_pool_blocks: usize,
    pub idx_pool_blocks: usize,
    pub index_heads: usize,
    pub index_head_dim: usize,
    pub index_topk: usize,
}

/// Which layer family, with its family constants.
#[derive(Debug, Clone, PartialEq)]
pub enum LayerKind {
    Swa,
    Hca(HcaDims),
    Csa(CsaDims),
}

/// Everything the golden and the fixtures need to know about a layer variant.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerSpec {
    pub dims: Dims,
    pub kind: LayerKind,
}

/// The three layer families by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layer {
    Swa,
    Hca,
    Csa,
}

impl Layer {
    pub fn name(self) -> &'static str {
        match self {
            Layer::Swa => "swa",
            Layer::Hca => "hca",
            Layer::Csa => "csa",
        }
    }
}

/// A dims combination the golden cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid layer dims: {0}")]
pub struct DimsError(pub String);

impl Dims {
    /// The DeepSeek-V4 Flash shared dims at the given TP (swa.md §1.1).
    pub fn flash(tp: usize) -> Dims {
        Dims {
            hidden: 4096,
            heads: 64,
            head_dim: 512,
            rope_dim: 64,
            q_lora: 1024,
            o_lora: 1024,
            o_groups: 8,
            hc_mult: 4,
            hc_sinkhorn_iters: 20,
            rms_eps: 1e-6,
            hc_eps: 1e-6,
            window: 128,
            decode_batch: 64,
            seq: 8,
            block_size: 32,
            kv_pool_blocks: 512,
            max_seq_len: 1 << 20,
            rope: RopeProfile::PLAIN,
            rope_table: RopeTable::PerToken,
            tp,
        }
    }

    pub fn nope_dim(&self) -> usize {
        self.head_dim - self.rope_dim
    }
    pub fn half_rope(&self) -> usize {
        self.rope_dim / 2
    }
    pub fn heads_per_group(&self) -> usize {
        self.heads / self.o_groups
    }
    /// Width of one output group's input: heads_per_group · head_dim.
    pub fn o_group_in(&self) -> usize {
        self.heads_per_group() * self.head_dim
    }
    pub fn hc_dim(&self) -> usize {
        self.hc_mult * self.hidden
    }
    /// (2 + hc) · hc logits: pre, post and the comb matrix.
    pub fn mix_hc(&self) -> usize {
        (2 + self.hc_mult) * self.hc_mult
    }
    /// head_dim^-0.5, computed in f64 then rounded once.
    pub fn softmax_scale(&self) -> f32 {
        (self.head_dim as f64).powf(-0.5) as f32
    }
    /// Requests per rank at capacity.
    pub fn local_batch(&self) -> usize {
        self.decode_batch / self.tp
    }
    /// Token capacity per rank (LOCAL_T).
    pub fn local_t(&self) -> usize {
        self.local_batch() * self.seq
    }
    /// LOCAL_T rounded up to 16 (the packed-heads capacity).
    pub fn local_t_pad(&self) -> usize {
        self.local_t().div_ceil(16) * 16
    }
    pub fn local_o_groups(&self) -> usize {
        self.o_groups / self.tp
    }
    pub fn local_o_width(&self) -> usize {
        self.local_o_groups() * self.o_lora
    }
    pub fn kv_pool_rows(&self) -> usize {
        self.kv_pool_blocks * self.block_size
    }
    /// Rows of the `freqs_cos`/`freqs_sin` tables for `t` tokens per rank.
    pub fn rope_table_rows(&self, t: usize) -> usize {
        match self.rope_table {
            RopeTable::PerToken => t,
            RopeTable::Positions => self.max_seq_len,
        }
    }

    fn validate(&self) -> Result<(), DimsError> {
        let fail = |m: String| Err(DimsError(m));
        if self.hc_mult != 4 {
            return fail(format!(
                "hc_mult must be 4 (hc_pre is specialised to it), got {}",
                self.hc_mult
            ));
        }
        if self.hc_sinkhorn_iters == 0 {
            return fail("hc_sinkhorn_iters must be at least 1".into());
        }
        if self.rope_dim == 0 || !self.rope_dim.is_multiple_of(2) || self.rope_dim > self.head_dim {
            return fail(format!(
                "rope_dim must be even and at most head_dim={}, got {}",
                self.head_dim, self.rope_dim
            ));
        }
        if self.o_groups == 0 || !self.heads.is_multiple_of(self.o_groups) {
            return fail(format!(
                "heads={} must be divisible by o_groups={}",
                self.heads, self.o_groups
            ));
        }
        if self.tp == 0 || !self.o_groups.is_multiple_of(self.tp) {
            return fail(format!(
                "tp={} must divide o_groups={}",
                self.tp, self.o_groups
            ));
        }
        if !self.decode_batch.is_multiple_of(self.tp) {
            return fail(format!(
                "tp={} must divide decode_batch={}",
                self.tp, self.decode_batch
            ));
        }
        if self.seq == 0 || self.block_size == 0 || self.window == 0 || self.kv_pool_blocks == 0 {
            return fail("seq, block_size, window and kv_pool_blocks must be positive".into());
        }
        if [self.hidden, self.heads, self.q_lora, self.o_lora].contains(&0) {
            return fail("hidden, heads, q_lora and o_lora must be positive".into());
        }
        if !self.hidden.is_multiple_of(4) || !(self.hc_dim() / 4).is_multiple_of(4) {
            return fail(format!(
                "hc_mult·hidden={} must split into 4 slabs of groups of 4 (hc_pre's cube order)",
                self.hc_dim()
            ));
        }
        Ok(())
    }
}

impl HcaDims {
    /// FLASH ratio-128 constants (hca_csa.md §1.2).
    pub fn flash() -> HcaDims {
        HcaDims {
            ratio: 128,
            state_block: 8,
            state_pool_blocks: 256,
            cmp_pool_blocks: 256,
        }
    }

    /// Per-request ceiling of compressed rows: max_seq_len / ratio.
    pub fn max_compressed_rows(&self, d: &Dims) -> usize {
        d.max_seq_len / self.ratio
    }
    /// Width of compress_state_block_table: ceil(max_seq_len / state_block).
    pub fn state_table_blocks(&self, d: &Dims) -> usize {
        d.max_seq_len.div_ceil(self.state_block)
    }
}

impl CsaDims {
    /// FLASH ratio-4 + indexer constants (hca_csa.md §1.2, §5).
    pub fn flash() -> CsaDims {
        CsaDims {
            state: CsaState::Paged,
            ratio: 4,
            state_block: 2,
            state_pool_blocks: 260,
            inner_state_pool_blocks: 260,
            cmp_pool_blocks: 256,
            idx_pool_blocks: 256,
            index_heads: 64,
            index_head_dim: 128,
            index_topk: 512,
        }
    }

    /// Indexer score row width: max_seq_len / ratio.
    pub fn score_len(&self, d: &Dims) -> usize {
        d.max_seq_len / self.ratio
    }
    /// cmp_block_table width: ceil(max_seq_len / ratio / block).
    pub fn cmp_table_blocks(&self, d: &Dims) -> usize {
        (d.max_seq_len / self.ratio).div_ceil(d.block_size)
    }
    /// idx_block_table width: the snapshot's is twice the cmp table (only the first half is
    /// reachable); the ring layer's equals it (csa_1m.md §1.1).
    pub fn idx_table_blocks(&self, d: &Dims) -> usize {
        match self.state {
            CsaState::Paged => 2 * self.cmp_table_blocks(d),
            CsaState::Ring => self.cmp_table_blocks(d),
        }
    }
    /// State block-table width: ceil(max_seq_len / state_block) pages by position, or the
    /// ring's 2 · ratio rows in pages.
    pub fn state_table_blocks(&self, d: &Dims) -> usize {
        match self.state {
            CsaState::Paged => d.max_seq_len.div_ceil(self.state_block),
            CsaState::Ring => self.ring_rows().div_ceil(self.state_block),
        }
    }
    /// Rows of a request's state ring (csa_1m.md §1.2): the 2 · ratio pooled positions.
    pub fn ring_rows(&self) -> usize {
        2 * self.ratio
    }
    /// Raw-KV block-table width: ceil(max_seq_len / block).
    pub fn raw_table_blocks(&self, d: &Dims) -> usize {
        d.max_seq_len.div_ceil(d.block_size)
    }
    /// index_head_dim^-0.5 · index_heads^-0.5, computed in f64 then rounded once.
    pub fn weights_scale(&self) -> f32 {
        ((self.index_head_dim as f64).powf(-0.5) * (self.index_heads as f64).powf(-0.5)) as f32
    }
    /// Attention candidates per token: window + index_topk.
    pub fn topk(&self, d: &Dims) -> usize {
        d.window + self.index_topk
    }
}

impl LayerSpec {
    /// FLASH SWA layer (plain RoPE, 1M positions).
    pub fn flash_swa(tp: usize) -> LayerSpec {
        LayerSpec {
            dims: Dims::flash(tp),
            kind: LayerKind::Swa,
        }
    }

    /// FLASH HCA layer (ratio 128, YaRN RoPE, 1M positions).
    pub fn flash_hca(tp: usize) -> LayerSpec {
        LayerSpec {
            dims: Dims {
                rope: RopeProfile::COMPRESSED,
                ..Dims::flash(tp)
            },
            kind: LayerKind::Hca(HcaDims::flash()),
        }
    }

    /// FLASH CSA layer (ratio 4 + indexer, YaRN RoPE, 16384 positions in this snapshot).
    pub fn flash_csa(tp: usize) -> LayerSpec {
        LayerSpec {
            dims: Dims {
                rope: RopeProfile::COMPRESSED,
                rope_table: RopeTable::Positions,
                max_seq_len: 16_384,
                ..Dims::flash(tp)
            },
            kind: LayerKind::Csa(CsaDims::flash()),
        }
    }

    pub fn flash(layer: Layer, tp: usize) -> LayerSpec {
        match layer {
            Layer::Swa => LayerSpec::flash_swa(tp),
            Layer::Hca => LayerSpec::flash_hca(tp),
            Layer::Csa => LayerSpec::flash_csa(tp),
        }
    }

    /// A CI-size variant of each family (hidden 512, 8 heads × 128, 4 output
    /// groups, 16 requests × 8 tokens at TP 1, FLASH compressor constants,
    /// 8 index heads): every stage and TP 1/2/4 run in well under a second.
    pub fn small(layer: Layer, tp: usize) -> LayerSpec {
        let dims = Dims {
            hidden: 512,
            heads: 8,
            head_dim: 128,
            q_lora: 128,
            o_lora: 128,
            o_groups: 4,
            decode_batch: 16,
            kv_pool_blocks: 128,
            ..Dims::flash(tp)
        };
        match layer {
            Layer::Swa => LayerSpec {
                dims,
                kind: LayerKind::Swa,
            },
            Layer::Hca => LayerSpec {
                dims: Dims {
                    rope: RopeProfile::COMPRESSED,
                    ..dims
                },
                kind: LayerKind::Hca(HcaDims::flash()),
            },
            Layer::Csa => LayerSpec {
                dims: Dims {
                    rope: RopeProfile::COMPRESSED,
                    rope_table: RopeTable::Positions,
                    max_seq_len: 16_384,
                    ..dims
                },
                kind: LayerKind::Csa(CsaDims {
                    index_heads: 8,
                    ..CsaDims::flash()
                }),
            },
        }
    }

    pub fn layer(&self) -> Layer {
        match self.kind {
            LayerKind::Swa => Layer::Swa,
            LayerKind::Hca(_) => Layer::Hca,
            LayerKind::Csa(_) => Layer::Csa,
        }
    }

    /// The same variant at another TP degree.
    pub fn with_tp(&self, tp: usize) -> LayerSpec {
        let mut spec = self.clone();
        spec.dims.tp = tp;
        spec
    }

    /// Checks that the golden can run these dims.
    pub fn validate(&self) -> Result<(), DimsError> {
        self.dims.validate()?;
        let d = &self.dims;
        let fail = |m: String| Err(DimsError(m));
        match &self.kind {
            LayerKind::Swa => {}
            LayerKind::Hca(h) => {
                if h.ratio == 0
                    || h.state_block == 0
                    || h.state_pool_blocks == 0
                    || h.cmp_pool_blocks == 0
                {
                    return fail("HCA ratio, state block and pool sizes must be positive".into());
                }
                if h.ratio < d.seq {
                    return fail(format!(
                        "HCA ratio={} must be at least seq={} (one boundary per step)",
                        h.ratio, d.seq
                    ));
                }
            }
            LayerKind::Csa(c) => {
                if c.ratio == 0 || c.state_block == 0 || c.index_topk == 0 {
                    return fail("CSA ratio, state block and index_topk must be positive".into());
                }
                if !c.index_head_dim.is_power_of_two() || c.index_head_dim < d.rope_dim {
                    return fail(format!(
                        "index_head_dim={} must be a power of two (Hadamard) and at least rope_dim={}",
                        c.index_head_dim, d.rope_dim
                    ));
                }
                if c.index_heads == 0
                    || [c.state_pool_blocks, c.inner_state_pool_blocks].contains(&0)
                {
                    return fail("index_heads and state pools must be positive".into());
                }
                if [c.cmp_pool_blocks, c.idx_pool_blocks].contains(&0) {
                    return fail("cmp and idx pools must be positive".into());
                }
                match (c.state, d.rope_table) {
                    (CsaState::Paged, RopeTable::Positions) => {}
                    (CsaState::Ring, RopeTable::PerToken) => {
                        if c.ratio * 2 % c.state_block != 0 || c.ring_rows() < d.seq {
                            return fail(format!(
                                "the {}-row state ring must be whole pages of {} rows and hold a step's {} tokens",
                                c.ring_rows(),
                                c.state_block,
                                d.seq
                            ));
                        }
                    }
                    (CsaState::Paged, RopeTable::PerToken) => {
                        return fail(
                            "the snapshot CSA (paged state) gathers its RoPE rows from the whole table \
                             (rope table: positions); token-local rows go with the state ring"
                                .into(),
                        );
                    }
                    (CsaState::Ring, RopeTable::Positions) => {
                        return fail(
                            "the ring CSA (pypto-lib PR #1013) takes token-local RoPE rows \
                             (rope table: per_token), not the whole table"
                                .into(),
                        );
                    }
                }
            }
        }
        Ok(())
    }

    /// Dims from a reference `meta.json` (the golden-vectors format: `dims`,
    /// `deployment`, `tp`, `layer`).
    pub fn from_reference_meta(meta: &serde_json::Value) -> Result<LayerSpec, DimsError> {
        let num = |section: &str, key: &str| -> Result<f64, DimsError> {
            meta.get(section)
                .and_then(|s| s.get(key))
                .and_then(serde_json::Value::as_f64)
                .ok_or_else(|| DimsError(format!("meta.json: missing number {section}.{key}")))
        };
        let int = |section: &str, key: &str| -> Result<usize, DimsError> {
            let v = num(section, key)?;
            if v < 0.0 || v.fract() != 0.0 {
                return Err(DimsError(format!(
                    "meta.json: {section}.{key}={v} is not a count"
                )));
            }
            Ok(v as usize)
        };
        let layer = meta
            .get("layer")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("");
        if !["swa", "hca", "csa"].contains(&layer) {
            return Err(DimsError(format!(
                "meta.json: layer `{layer}` is none of swa, hca, csa"
            )));
        }
        let tp = meta
            .get("tp")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| DimsError("meta.json: missing tp".into()))? as usize;
        let dims = Dims {
            hidden: int("dims", "hidden_size")?,
            heads: int("dims", "num_attention_heads")?,
            head_dim: int("dims", "head_dim")?,
            rope_dim: int("dims", "qk_rope_head_dim")?,
            q_lora: int("dims", "q_lora_rank")?,
            o_lora: int("dims", "o_lora_rank")?,
            o_groups: int("dims", "o_groups")?,
            hc_mult: int("dims", "hc_mult")?,
            hc_sinkhorn_iters: int("dims", "hc_sinkhorn_iters")?,
            rms_eps: num("dims", "rms_norm_eps")? as f32,
            hc_eps: num("dims", "hc_eps")? as f32,
            window: int("dims", "sliding_window")?,
            decode_batch: int("deployment", "DECODE_BATCH")?,
            seq: int("deployment", "DECODE_SEQ")?,
            block_size: int("deployment", "BLOCK_SIZE")?,
            kv_pool_blocks: int("deployment", "KV_ORI_BLOCK_NUM")?,
            max_seq_len: 1 << 20,
            rope: RopeProfile {
                theta: num("dims", "rope_theta")?,
                yarn: None,
            },
            rope_table: RopeTable::PerToken,
            tp,
        };
        // PR #1013's CSA names its ring length (csa_1m.md §1.2).
        let ring = meta
            .get("module_constants")
            .and_then(|m| m.get("MAIN_STATE_LEN"))
            .is_some();
        let spec = if layer == "swa" {
            LayerSpec {
                dims,
                kind: LayerKind::Swa,
            }
        } else {
            // A compressed layer's RoPE (its tables are inputs; the profile builds fixtures).
            let rope = RopeProfile {
                theta: num("dims", "compress_rope_theta")?,
                yarn: Some(Yarn {
                    factor: num("dims", "rope_factor")?,
                    beta_fast: num("dims", "beta_fast")?,
                    beta_slow: num("dims", "beta_slow")?,
                    original_max_pos: int("dims", "original_max_position_embeddings")?,
                }),
            };
            let kind = if layer == "hca" {
                LayerKind::Hca(HcaDims {
                    ratio: int("module_constants", "COMPRESS_RATIO")?,
                    state_block: int("module_constants", "COMPRESS_STATE_BLOCK_SIZE")?,
                    state_pool_blocks: int("deployment", "HCA_STATE_PHYSICAL_BLOCKS")?,
                    cmp_pool_blocks: int("deployment", "KV_CMP_BLOCK_NUM")?,
                })
            } else if ring {
                // PR #1013's meta: rings of MAIN_STATE_LEN rows, pools sized by the fixture.
                LayerKind::Csa(CsaDims {
                    state: CsaState::Ring,
                    ratio: int("module_constants", "COMPRESS_RATIO")?,
                    state_block: int("module_constants", "C4A_COMPRESSOR_BLOCK_SIZE")?,
                    state_pool_blocks: int("module_constants", "MAIN_STATE_MAX_BLOCKS")?
                        * int("deployment", "DECODE_BATCH")?,
                    inner_state_pool_blocks: int("module_constants", "INNER_STATE_MAX_BLOCKS")?
                        * int("deployment", "DECODE_BATCH")?,
                    cmp_pool_blocks: int("deployment", "CMP_POOL_PAGES")?,
                    idx_pool_blocks: int("deployment", "IDX_POOL_PAGES")?,
                    index_heads: int("dims", "index_n_heads")?,
                    index_head_dim: int("dims", "index_head_dim")?,
                    index_topk: int("dims", "index_topk")?,
                })
            } else {
                LayerKind::Csa(CsaDims {
                    state: CsaState::Paged,
                    ratio: int("module_constants", "COMPRESS_RATIO")?,
                    state_block: int("module_constants", "C4A_COMPRESSOR_BLOCK_SIZE")?,
                    state_pool_blocks: int("deployment", "CSA_STATE_PHYSICAL_BLOCKS")?,
                    inner_state_pool_blocks: int("deployment", "CSA_INNER_STATE_PHYSICAL_BLOCKS")?,
                    cmp_pool_blocks: int("deployment", "KV_CMP_BLOCK_NUM")?,
                    idx_pool_blocks: int("deployment", "IDX_CACHE_BLOCK_NUM")?,
                    index_heads: int("dims", "index_n_heads")?,
                    index_head_dim: int("dims", "index_head_dim")?,
                    index_topk: int("dims", "index_topk")?,
                })
            };
            LayerSpec {
                dims: Dims {
                    max_seq_len: int("module_constants", "MAX_SEQ_LEN")?,
                    rope,
                    // The snapshot CSA passes the whole table (hca_csa.md §2.3).
                    rope_table: if layer == "csa" && !ring {
                        RopeTable::Positions
                    } else {
                        RopeTable::PerToken
                    },
                    ..dims
                },
                kind,
            }
        };
        spec.validate()?;
        Ok(spec)
    }
}
