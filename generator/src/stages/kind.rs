//! What a stage kind is: the [`Kind`] contract every module under `stages/` fulfils,
//! and the vocabulary those modules share (located tiles, the dataflow [`Data`], the
//! per-TP [`TileCheck`], the layer-level parts a stage contributes).

use std::fmt::Debug;

use serde::de::DeserializeOwned;

use crate::diag::{Diagnostics, Loc};
use crate::kernel_plan::Builder;
use crate::plan::{AttentionPlan, CompressorPlan, IndexerPlan, ModelDims, Plan, Pools};
use crate::spec::range::positive;
use crate::spec::{Int, KvSource, LayerKind, PadPolicy, RopeTable, Sp};

/// A stage kind. One module implements it on a unit struct and lists it in the registry
/// (`stages/mod.rs`); the spec's stage enum, names, graph checks and dispatch come from
/// there. The passes call it in this order: [`Kind::read`] (ranges, once per spec),
/// [`Kind::layer`] (relations, once), then per TP degree [`Kind::check`] and
/// [`Kind::plan`] (whose kernels carry their on-chip buffers, `Kernel::buffers`).
pub trait Kind {
    /// The key in the spec's stage list, and the stage's name in launches.
    const NAME: &'static str;
    /// What it uses from earlier stages.
    const NEEDS: &'static [Data];
    /// What later stages may use.
    const PRODUCES: &'static [Data];
    /// A data movement between ranks: identity at TP 1, where it is left out.
    const COLLECTIVE: bool = false;

    /// The entry as written: parameters and a `tiling`, `unaligned_rows` optional.
    type Spec: DeserializeOwned + Debug;
    /// Its parameters and tiling with their ranges checked.
    type Params: Clone + Debug + PartialEq;

    /// Reads the entry, reporting every value out of range.
    fn read(spec: &Self::Spec, d: &mut Diagnostics) -> Self::Params;

    /// The KV sources it reads, for the graph check (sparse_attention).
    fn sources(_: &Self::Params) -> Vec<(KvSource, Loc)> {
        Vec::new()
    }

    /// Derives its layer-level part (compressor, indexer, attention), checking the
    /// relations to the model and to the parts of earlier stages.
    fn layer(_: &Self::Params, _: &mut LayerParts, _: &mut Diagnostics) {}

    /// The tile rules at one TP degree.
    fn check(p: &Self::Params, c: &mut TileCheck);

    /// Its launches, workspaces and steps; or [`Builder::missing`] with the reason.
    fn plan(p: &Self::Params, b: &mut Builder);
}

/// The layer-level parameters that stages contribute and other stages and the ABI read.
pub struct LayerParts<'a> {
    pub layer: LayerKind,
    pub model: &'a ModelDims,
    pub pools: &'a Pools,
    /// The spec's `rope.table` and where it is written.
    pub rope_table: (RopeTable, Loc),
    /// Requests at TP 1 (the most a rank holds).
    pub decode_batch: usize,
    pub compressor: Option<CompressorPlan>,
    pub indexer: Option<IndexerPlan>,
    pub attention: Option<AttentionPlan>,
}

/// Where the model dims that a stage's kernel limits depend on are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelLocs {
    pub hidden: Loc,
}

/// What flows between stages; a stage may only use what an earlier stage made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Data {
    XMixed,
    XNormed,
    Q,
    Kv,
    KvCache,
    Compressed,
    IndexQuery,
    IndexKeys,
    TopK,
    Attention,
    Grouped,
    OPartial,
    AttnOut,
    XOut,
}

impl Data {
    /// What it is called in messages.
    pub fn describe(self) -> &'static str {
        match self {
            Data::XMixed => "x_mixed",
            Data::XNormed => "x_normed",
            Data::Q => "q",
            Data::Kv => "kv",
            Data::KvCache => "the window's KV rows",
            Data::Compressed => "compressed rows",
            Data::IndexQuery => "index queries",
            Data::IndexKeys => "index keys",
            Data::TopK => "top-k indices",
            Data::Attention => "attention rows",
            Data::Grouped => "group-ordered attention rows",
            Data::OPartial => "o_proj partials",
            Data::AttnOut => "attn_out",
            Data::XOut => "x_out",
        }
    }
}

/// The spec entry of a kind whose parameters are its tiling alone.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tiled<T> {
    pub tiling: Sp<T>,
    #[serde(default)]
    pub unaligned_rows: Option<Sp<PadPolicy>>,
}

/// A tile size as written, with its location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tile {
    pub value: usize,
    pub loc: Loc,
}

impl Tile {
    /// Reads tile `name`, reporting a value out of range.
    pub fn read(d: &mut Diagnostics, v: &Int, name: &str) -> Tile {
        Tile {
            value: positive(d, v, &format!("tile {name}")),
            loc: Loc::of(v),
        }
    }
}

/// Declares a stage's `Tiling<T = Int>`: the keys as written (`Tiling`, deserialised with
/// unknown keys refused) and, read, as located [`Tile`]s (`Tiling<Tile>`).
macro_rules! tiling {
    ($(#[$doc:meta])* $($field:ident),+ $(,)?) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct Tiling<T = $crate::spec::Int> {
            $(pub $field: T),+
        }

        impl Tiling {
            pub fn read(&self, d: &mut $crate::diag::Diagnostics) -> Tiling<$crate::stages::kind::Tile> {
                Tiling {
                    $($field: $crate::stages::kind::Tile::read(d, &self.$field, stringify!($field))),+
                }
            }
        }
    };
}
pub(crate) use tiling;

/// The tile rules of one stage at one TP degree. Vector tiles divide what they tile; a
/// matmul tile may also cover its dimension whole (small N such as 24 mixing logits);
/// cube tiles are whole 16-row fractals; token tiles divide 8, the granularity of the
/// runtime count. A tile with an error is not checked again (one report per value).
pub struct TileCheck<'a, 'd> {
    pub d: &'a mut Diagnostics<'d>,
    pub plan: &'a Plan,
    /// Where the model dims are written, for limits a dim exceeds.
    pub model: &'a ModelLocs,
    pub stage: &'static str,
}

impl<'a, 'd> TileCheck<'a, 'd> {
    pub fn new(
        d: &'a mut Diagnostics<'d>,
        plan: &'a Plan,
        model: &'a ModelLocs,
        stage: &'static str,
    ) -> Self {
        TileCheck {
            d,
            plan,
            model,
            stage,
        }
    }

    /// A value at `loc` that exceeds a field of the Ascend C API a kernel of this stage
    /// sets from it; reported once per value (not again at another TP degree).
    pub fn limit(&mut self, loc: Loc, message: String, rule: &'static str) {
        if !self.d.has_error_at(loc) {
            self.d
                .error(loc, format!("{}: {message}", self.stage), rule);
        }
    }

    /// Whether `t` is still unreported (at this or another TP degree).
    fn fresh(&self, t: Tile) -> bool {
        !self.d.has_error_at(t.loc)
    }

    pub fn divides(&mut self, t: Tile, name: &str, dim: usize, dim_name: &str) {
        if self.fresh(t) && !dim.is_multiple_of(t.value) {
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

    pub fn fits(&mut self, t: Tile, name: &str, dim: usize, dim_name: &str) {
        if self.fresh(t) && t.value < dim && !dim.is_multiple_of(t.value) {
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
    pub fn rows(&mut self, t: Tile, name: &str) {
        let (t_pad, tp) = (self.plan.shape.t_pad, self.plan.shape.tp);
        if self.fresh(t) && t.value < t_pad && !t_pad.is_multiple_of(t.value) {
            self.d.error(
                t.loc,
                format!(
                    "{} tile {name} {} does not divide T_PAD {t_pad} at tp {tp}",
                    self.stage, t.value
                ),
                "a matmul tile must divide the dimension it tiles or cover it whole",
            );
        }
    }

    pub fn cube(&mut self, t: Tile, name: &str) {
        if self.fresh(t) && !t.value.is_multiple_of(16) {
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

    /// The cube tiles `m × n × k` of a matmul stage with `tokens` rows per vector pass:
    /// fractals, token tiles, and `m` against the padded token capacity.
    pub fn matmul(&mut self, m: Tile, n: Tile, k: Tile, tokens: Tile) {
        self.cube(m, "m");
        self.cube(n, "n");
        self.cube(k, "k");
        self.tokens(tokens);
        self.rows(m, "m");
    }

    /// [`TileCheck::matmul`] for a stage whose products have the N extents `ns` and the K
    /// extents `ks`, each of which `n` and `k` must divide or cover.
    pub fn products(
        &mut self,
        [m, n, k, tokens]: [Tile; 4],
        ns: &[(usize, &str)],
        ks: &[(usize, &str)],
    ) {
        self.matmul(m, n, k, tokens);
        for &(dim, name) in ns {
            self.fits(n, "n", dim, name);
        }
        for &(dim, name) in ks {
            self.fits(k, "k", dim, name);
        }
    }

    pub fn multiple(&mut self, t: Tile, name: &str, of: usize, rule: &'static str) {
        if self.fresh(t) && !t.value.is_multiple_of(of) {
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

    pub fn equals(&mut self, t: Tile, name: &str, want: usize) {
        if self.fresh(t) && t.value != want {
            self.d.error(
                t.loc,
                format!("{} tile {name} {} is not {want}", self.stage, t.value),
                "this tile is fixed by the kernel's lane layout",
            );
        }
    }

    pub fn tokens(&mut self, t: Tile) {
        if self.fresh(t) && 8 % t.value != 0 {
            self.d.error(
                t.loc,
                format!("{} token tile {} does not divide 8", self.stage, t.value),
                "token tiles divide 8: the runtime token count is any multiple of 8",
            );
        }
    }
}
