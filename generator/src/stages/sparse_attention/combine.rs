//! A further source split over KV and its merge (`dsv4/attention_combine.h`): the planned
//! shape of the splits' scratch and the `attn_combine` launch both sources share.

use abi::{DType, Dim};

use super::window;
use crate::budget::row;
use crate::chip::Mem;
use crate::kernel_plan::{Builder, Cores, Kernel, Value};

/// f32 values per 32-byte block: the heads a vector tile of the split kernels holds.
pub(super) const VH: usize = 8;

/// How a source splits: `unit_rows` head rows per unit (a request's `seq · heads` or a
/// token's `heads`), units counted in tokens or requests, the mixed launch's `groups`, at
/// most `max_splits` per unit (its KV pieces).
pub(super) struct Split {
    /// The source, in the combine kernel's name; its scratch's workspaces.
    pub tag: &'static str,
    pub part: &'static str,
    pub stats: &'static str,
    pub unit_rows: usize,
    pub per_token: bool,
    pub groups: usize,
    pub max_splits: usize,
    /// Part slabs per group (`SplitSlots`' PARTS: two where the source alternates tiles).
    pub parts: usize,
}

impl Split {
    /// The split kernel's core groups: every one where a unit can have several pieces (a
    /// few units then spread over them), else one per unit part (`units` at capacity, each
    /// in at most `parts` parts: HCA's head parts) at most.
    pub fn groups(max_splits: usize, units: usize, parts: usize, aic_cores: usize) -> usize {
        if max_splits > 1 {
            aic_cores
        } else {
            aic_cores.min(units * parts)
        }
    }

    /// Units can split: more than one piece (`SplitSlots`' SPLITS in the kernels).
    pub fn can(&self) -> bool {
        self.max_splits > 1
    }

    /// The scratch of `SplitSlots`: per group the piece's parts (and, when units can split,
    /// the item's o), per group the item's max and denominators.
    pub fn workspaces(&self, b: &mut Builder, head_dim: usize) {
        let per_group = self.parts + usize::from(self.can());
        b.workspace(
            self.part,
            vec![
                Dim::Const(self.groups * per_group * self.unit_rows),
                Dim::Const(head_dim),
            ],
            DType::F32,
        );
        b.workspace(
            self.stats,
            vec![Dim::Const(self.groups * 2), Dim::Const(self.unit_rows)],
            DType::F32,
        );
    }

    /// The merge launch after the split kernel, when units can split, o's rows scaled by
    /// 2^-`shift` ([`window::o_shift`]); fused (and where the finish's buffers fit beside its
    /// own in UB), it also finishes every head (true: the layer needs no finish launch).
    pub fn combine(
        &self,
        b: &mut Builder,
        heads: usize,
        head_dim: usize,
        head_tile: usize,
        shift: usize,
    ) -> bool {
        if !self.can() {
            return false;
        }
        let p = b.plan;
        let u32 = |v: usize| Value::U32(v as u32);
        let sources = (self.max_splits.min(self.groups) + 1) * VH;
        let (half_cols, o_row) = window::part_rows(&p.model, shift);
        let kernel = Kernel {
            name: format!(
                "attn_combine_{}_h{heads}_d{head_dim}_u{}_g{}_s{}{}",
                self.tag,
                self.unit_rows,
                self.groups,
                self.max_splits,
                window::o_tag(shift)
            ),
            doc: "a further source's splits over KV merged with the window's o and denominators, in split order"
                .into(),
            block: "attention_combine.h",
            class: "AttentionCombine",
            cores: Cores::Aiv,
            params: vec![
                ("HEADS", u32(heads)),
                ("HEAD_DIM", u32(head_dim)),
                ("UNIT_ROWS", u32(self.unit_rows)),
                ("PER_TOKEN", Value::Bool(self.per_token)),
                ("GROUPS", u32(self.groups)),
                ("MAX_SPLITS", u32(self.max_splits)),
                ("PARTS", u32(self.parts)),
                ("O_SHIFT", u32(shift)),
                ("O_HALF_COLS", u32(half_cols)),
            ],
            args: vec!["row_max", "part", "stats", "o", "denom"],
            buffers: vec![
                row("acc", Mem::Ub, DType::F32, VH * head_dim, 1, Some(VH * head_dim)),
                row("part", Mem::Ub, DType::F32, VH * head_dim, 2, Some(VH * head_dim)),
                row("maxes", Mem::Ub, DType::F32, sources, 1, Some(VH)),
                row("denoms", Mem::Ub, DType::F32, sources, 1, Some(VH)),
                row("weights", Mem::Ub, DType::F32, sources, 1, None),
                row("max", Mem::Ub, DType::F32, VH, 1, None),
                row("rows", Mem::Ub, DType::F16, VH * o_row, 1, Some(VH * o_row)),
                row("spread", Mem::Ub, DType::F32, VH * 8, 1, None),
            ],
            parts: Vec::new(),
        };
        let blocks = |rows: usize| p.chip.aiv_cores.min(p.shape.local_t * heads / rows) as u32;
        let bind = ["attn_max", self.part, self.stats, "attn_o", "attn_denom"];
        let finish = window::finish_tiles(head_tile)
            .map(|tile| window::finish_part(p, tile, shift))
            .find(|finish| window::fits_beside(p, &kernel, finish));
        let Some(finish) = finish.filter(|_| p.fuse) else {
            b.launch(kernel, blocks(VH), &bind);
            return false;
        };
        let tile = finish
            .u32_param("HEAD_TILE")
            .expect("the finish has a HEAD_TILE");
        let name = format!(
            "{}_ht{tile}{}",
            kernel
                .name
                .replacen("attn_combine_", "attn_combine_finish_", 1),
            window::finish_tag(p)
        );
        let fused = window::finishing(kernel, finish, name, &window::finish_args(p));
        b.launch(
            fused,
            blocks(tile),
            &[&bind[..], &window::finish_binds(p)].concat(),
        );
        true
    }
}
