//! One plan per TP degree: the TP rules, the per-rank shapes, tile checks and
//! the budget of every stage.

use crate::diag::{Diagnostics, Loc};
use crate::spec::Spec;

use super::abi::{self, AbiInput};
use super::budget;
use super::stages::{StageSpec, Tile, Tiling};
use super::validate::Base;
use super::{Plan, StageKind, StagePlan, TpShape};

pub(super) fn for_tp(
    spec: &Spec,
    base: &Base,
    &(tp, tp_loc): &(usize, Loc),
    d: &mut Diagnostics,
) -> Option<Plan> {
    let shape = tp_shape(base, tp, tp_loc, d)?;
    let dims = budget::Dims {
        model: &base.model,
        compressor: base.compressor.as_ref(),
        indexer: base.indexer.as_ref(),
        block_size: base.pools.block_size,
        chip: base.chip,
        window: base.attention.window,
        decode_seq: base.decode_seq,
        compressed_rows: base.attention.max_compressed_rows,
    };
    let mut stages = Vec::new();
    for st in &base.stages {
        // At TP 1 the exchanges are identity: nothing to run or allocate.
        if tp == 1 && st.kind.is_collective() {
            continue;
        }
        let buffers = budget::buffers(st.kind, &st.tiling, &dims);
        // Buffers sized from a broken tile would only repeat its error.
        if check_tiles(base, &shape, st, d) {
            for v in budget::check(st.kind.name(), &buffers, st.pad_unaligned, base.chip) {
                d.error(st.tiling_loc, v.message, v.rule);
            }
        }
        stages.push(StagePlan {
            kind: st.kind,
            tiles: st
                .tiling
                .named()
                .into_iter()
                .map(|(n, t)| (n, t.value))
                .collect(),
            pad_unaligned: st.pad_unaligned,
            buffers,
        });
    }
    let abi_input = AbiInput {
        model: &base.model,
        rope: &base.rope,
        shape: &shape,
        pools: &base.pools,
        window: base.attention.window,
        compressor: base.compressor.as_ref(),
        indexer: base.indexer.as_ref(),
    };
    Some(Plan {
        variant: format!("{}_tp{tp}", base.name),
        spec_name: base.name.clone(),
        spec_path: spec.path.clone(),
        spec_hash: spec.hash.clone(),
        layer: base.layer,
        chip: base.chip,
        model: base.model.clone(),
        rope: base.rope.clone(),
        pools: base.pools.clone(),
        compressor: base.compressor.clone(),
        indexer: base.indexer.clone(),
        attention: base.attention.clone(),
        stages,
        tensors: abi::tensors(&abi_input),
        axes: abi::axes(&abi_input),
        shape,
        kernels: Default::default(),
    })
}

fn tp_shape(base: &Base, tp: usize, loc: Loc, d: &mut Diagnostics) -> Option<TpShape> {
    let m = &base.model;
    let (batch, seq) = (base.decode_batch, base.decode_seq);
    let tokens = batch * seq;
    let before = d.errors.len();
    if !m.o_groups.is_multiple_of(tp) {
        d.error(
            loc,
            format!("o_groups {} is not divisible by tp {tp}", m.o_groups),
            "each TP degree must divide o_groups: the output projection is sharded by group",
        );
    }
    if tokens % tp != 0 {
        d.error(
            loc,
            format!(
                "token capacity {tokens} (decode_batch x decode_seq) is not divisible by tp {tp}"
            ),
            "each TP degree must divide the token capacity",
        );
    } else if batch % tp != 0 {
        d.error(
            loc,
            format!("decode_batch {batch} is not divisible by tp {tp}"),
            "each TP degree must divide decode_batch: a rank holds whole requests",
        );
    } else if !(tokens / tp).is_multiple_of(8) {
        d.error(
            loc,
            format!(
                "token capacity per rank {} at tp {tp} is not a multiple of 8",
                tokens / tp
            ),
            "the token capacity per rank is a multiple of 8: kernels move tokens in 8-row blocks",
        );
    }
    if d.errors.len() > before {
        return None;
    }
    let local_t = tokens / tp;
    let t_pad = local_t.next_multiple_of(16);
    let local_o_groups = m.o_groups / tp;
    Some(TpShape {
        tp,
        decode_batch: batch,
        decode_seq: seq,
        decode_tokens: tokens,
        b: batch / tp,
        local_t,
        t_pad,
        group_t: tp * local_t,
        group_t_pad: tp * t_pad,
        local_o_groups,
        local_o_width: local_o_groups * m.o_lora_rank,
        attention_window_rows: local_o_groups * tp * t_pad,
        o_window_rows: tp * t_pad,
    })
}

/// Named extents a tile must fit.
type Extents = Vec<(usize, &'static str)>;

/// Tile rules. Vector tiles divide what they tile; a matmul tile may also cover
/// its dimension whole (small N such as 24 mixing logits); cube tiles are whole
/// 16-row fractals; token tiles divide 8, the granularity of the runtime count.
/// Returns whether every tile of the stage is valid.
fn check_tiles(base: &Base, s: &TpShape, st: &StageSpec, d: &mut Diagnostics) -> bool {
    let m = &base.model;
    let mut c = TileCheck {
        d,
        stage: st.kind.name(),
        tp: s.tp,
    };
    match st.tiling {
        Tiling::HcPre {
            m: mt,
            k,
            tokens,
            cols,
        } => {
            c.cube(mt, "m");
            c.cube(k, "k");
            c.rows(mt, "m", s.t_pad);
            c.divides(k, "k", m.hc_dim, "hc_mult x hidden");
            // The gates run with one f32 lane per token in a 32-byte block.
            c.equals(tokens, "tokens", 8);
            c.divides(cols, "cols", m.hidden, "hidden");
        }
        Tiling::Vector { tokens, cols } => {
            c.tokens(tokens);
            c.divides(cols, "cols", m.hidden, "hidden");
        }
        Tiling::Matmul {
            m: mt,
            n,
            k,
            tokens,
        } => {
            c.cube(mt, "m");
            c.cube(n, "n");
            c.cube(k, "k");
            c.tokens(tokens);
            c.rows(mt, "m", s.t_pad);
            // The N and K extents of the stage's matmuls.
            let (ns, ks): (Extents, Extents) = match st.kind {
                StageKind::QkvProjRope => (
                    vec![
                        (m.q_lora_rank, "q_lora_rank"),
                        (m.heads * m.head_dim, "heads x head_dim"),
                        (m.head_dim, "head_dim"),
                    ],
                    vec![(m.hidden, "hidden"), (m.q_lora_rank, "q_lora_rank")],
                ),
                _ => (
                    vec![(m.o_lora_rank, "o_lora_rank"), (m.hidden, "hidden")],
                    vec![
                        (m.o_group_in, "o_group_in"),
                        (s.local_o_width, "local_o_width"),
                    ],
                ),
            };
            for (dim, name) in ns {
                c.fits(n, "n", dim, name);
            }
            for (dim, name) in ks {
                c.fits(k, "k", dim, name);
            }
        }
        Tiling::Tokens { tokens } => c.tokens(tokens),
        Tiling::Compressor {
            m: mt,
            n,
            k,
            tokens,
            channels,
        } => {
            c.cube(mt, "m");
            c.cube(n, "n");
            c.cube(k, "k");
            c.tokens(tokens);
            c.rows(mt, "m", s.t_pad);
            if let Some(cp) = &base.compressor {
                c.fits(n, "n", cp.out_width, "the projected width");
                c.divides(channels, "channels", cp.head_dim, "head_dim");
            }
            c.fits(k, "k", m.hidden, "hidden");
        }
        Tiling::Indexer {
            m: mt,
            n,
            k,
            tokens,
            key_rows,
        } => {
            c.cube(mt, "m");
            c.cube(n, "n");
            c.cube(k, "k");
            c.tokens(tokens);
            c.rows(mt, "m", s.t_pad);
            if let Some(i) = &base.indexer {
                c.fits(n, "n", i.q_width, "indexer heads x head_dim");
                c.fits(n, "n", i.heads, "indexer heads");
                c.fits(n, "n", i.inner.out_width, "the index-key projected width");
                c.fits(k, "k", m.q_lora_rank, "q_lora_rank");
                c.fits(k, "k", i.head_dim, "indexer head_dim");
                c.divides(key_rows, "key_rows", i.candidates, "the candidate count");
            }
            c.fits(k, "k", m.hidden, "hidden");
        }
        Tiling::Attention {
            heads,
            kv_rows,
            d: dk,
        } => {
            // kv_rows against the window is checked with the window itself.
            c.divides(heads, "heads", m.heads, "heads");
            c.divides(dk, "d", m.head_dim, "head_dim");
            c.cube(kv_rows, "kv_rows");
            c.cube(dk, "d");
            // Per-head f32 values (row maxima, sums, denominators) in whole 32-byte blocks.
            c.multiple(
                heads,
                "heads",
                8,
                "attention head tiles are whole 32-byte blocks of f32",
            );
        }
        Tiling::Collective { rows, cols } => {
            c.tokens(rows);
            let (dim, name) = match st.kind {
                StageKind::OGroupAllToAll => (m.o_group_in, "o_group_in"),
                _ => (m.hidden, "hidden"),
            };
            c.divides(cols, "cols", dim, name);
        }
    }
    // Errors found at another TP degree count too.
    !st.tiling
        .named()
        .iter()
        .any(|(_, t)| c.d.has_error_at(t.loc))
}

struct TileCheck<'a, 'b> {
    d: &'a mut Diagnostics<'b>,
    stage: &'static str,
    tp: usize,
}

impl TileCheck<'_, '_> {
    /// A tile that already has an error is not checked again (one report per value).
    fn reported(&self, t: Tile) -> bool {
        self.d.has_error_at(t.loc)
    }

    fn divides(&mut self, t: Tile, name: &str, dim: usize, dim_name: &str) {
        if !self.reported(t) && !dim.is_multiple_of(t.value) {
            self.d.error(
                t.loc,
                format!(
                    "{} tile {name} {} does not divide {dim_name} {dim}",
                    self.stage, t.value
                ),
                "a tile must divide the dimension it tiles",
            );
        }
    }

    fn fits(&mut self, t: Tile, name: &str, dim: usize, dim_name: &str) {
        if !self.reported(t) && t.value < dim && !dim.is_multiple_of(t.value) {
            self.d.error(
                t.loc,
                format!(
                    "{} tile {name} {} does not divide {dim_name} {dim}",
                    self.stage, t.value
                ),
                "a matmul tile must divide the dimension it tiles or cover it whole",
            );
        }
    }

    /// Cube rows against the padded token capacity of this TP degree.
    fn rows(&mut self, t: Tile, name: &str, t_pad: usize) {
        if !self.reported(t) && t.value < t_pad && !t_pad.is_multiple_of(t.value) {
            self.d.error(
                t.loc,
                format!(
                    "{} tile {name} {} does not divide T_PAD {t_pad} at tp {}",
                    self.stage, t.value, self.tp
                ),
                "a matmul tile must divide the dimension it tiles or cover it whole",
            );
        }
    }

    fn cube(&mut self, t: Tile, name: &str) {
        if !self.reported(t) && !t.value.is_multiple_of(16) {
            self.d.error(
                t.loc,
                format!(
                    "{} tile {name} {} is not a multiple of 16",
                    self.stage, t.value
                ),
                "cube tiles are whole 16x16 fractals",
            );
        }
    }

    fn multiple(&mut self, t: Tile, name: &str, of: usize, rule: &'static str) {
        if !self.reported(t) && !t.value.is_multiple_of(of) {
            self.d.error(
                t.loc,
                format!(
                    "{} tile {name} {} is not a multiple of {of}",
                    self.stage, t.value
                ),
                rule,
            );
        }
    }

    fn equals(&mut self, t: Tile, name: &str, want: usize) {
        if !self.reported(t) && t.value != want {
            self.d.error(
                t.loc,
                format!("{} tile {name} {} is not {want}", self.stage, t.value),
                "this tile is fixed by the kernel's lane layout",
            );
        }
    }

    fn tokens(&mut self, t: Tile) {
        if !self.reported(t) && 8 % t.value != 0 {
            self.d.error(
                t.loc,
                format!("{} token tile {} does not divide 8", self.stage, t.value),
                "token tiles divide 8: the runtime token count is any multiple of 8",
            );
        }
    }
}
