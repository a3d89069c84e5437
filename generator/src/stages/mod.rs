//! The stage kinds. Each is one module that owns its spec entry (parameters and a typed
//! tiling), what it needs and produces, its tile rules, its on-chip buffers and its
//! kernel planning (the [`Kind`] contract); the registry below lists them, and the
//! spec's stage enum ([`Entry`]), the read form ([`Params`]) and the dispatch come from
//! it. Adding a kind is a module and a line here (README "Adding a stage kind").

pub mod kind;

pub mod cache_insert;
pub mod compressor;
pub mod graph;
pub mod hc_post;
pub mod hc_pre;
pub mod index_compressor;
pub mod index_query;
pub mod indexer;
pub mod o_group_all_to_all;
pub mod o_proj;
pub mod o_reduce_scatter;
pub mod qkv_proj_rope;
pub mod rms_norm;
pub mod sparse_attention;

use crate::diag::{Diagnostics, Loc};
use crate::kernel_plan::{Builder, KernelPlan};
use crate::plan::Plan;
use crate::spec::{self, KvSource};
use kind::{Data, Kind, LayerParts, TileCheck};

/// A spec whose stage list is read with this registry.
pub type Spec = spec::Spec<Entry>;

/// The registry: `Variant => module::Type` per kind, in the order the spec schema lists
/// them. The variant's snake_case name is the spec key and must equal `Kind::NAME`
/// (a unit test checks).
macro_rules! registry {
    ($($variant:ident => $module:ident :: $ty:ident),+ $(,)?) => {
        /// One entry of the ordered stage list as written: `- <kind>: { ...parameters }`.
        #[derive(Debug, serde::Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Entry {
            $($variant(<$module::$ty as Kind>::Spec)),+
        }

        /// A stage's parameters and tiling, read.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Params {
            $($variant(<$module::$ty as Kind>::Params)),+
        }

        impl Entry {
            /// Reads the entry (ranges only) with the locations later checks report at.
            pub fn read(&self, loc: Loc, d: &mut Diagnostics) -> StageSpec {
                let (params, tiling_loc, pad_unaligned) = match self {
                    $(Entry::$variant(s) => (
                        Params::$variant(<$module::$ty as Kind>::read(s, d)),
                        Loc::of(&s.tiling),
                        s.unaligned_rows.is_some(),
                    )),+
                };
                StageSpec { params, loc, tiling_loc, pad_unaligned }
            }
        }

        impl Params {
            pub fn name(&self) -> &'static str {
                match self { $(Params::$variant(_) => <$module::$ty as Kind>::NAME),+ }
            }

            pub fn needs(&self) -> &'static [Data] {
                match self { $(Params::$variant(_) => <$module::$ty as Kind>::NEEDS),+ }
            }

            pub fn produces(&self) -> &'static [Data] {
                match self { $(Params::$variant(_) => <$module::$ty as Kind>::PRODUCES),+ }
            }

            pub fn collective(&self) -> bool {
                match self { $(Params::$variant(_) => <$module::$ty as Kind>::COLLECTIVE),+ }
            }

            pub fn sources(&self) -> Vec<(KvSource, Loc)> {
                match self { $(Params::$variant(p) => <$module::$ty as Kind>::sources(p)),+ }
            }

            pub fn layer(&self, parts: &mut LayerParts, d: &mut Diagnostics) {
                match self { $(Params::$variant(p) => <$module::$ty as Kind>::layer(p, parts, d)),+ }
            }

            pub fn check(&self, c: &mut TileCheck) {
                match self { $(Params::$variant(p) => <$module::$ty as Kind>::check(p, c)),+ }
            }

            pub fn plan(&self, b: &mut Builder) {
                match self { $(Params::$variant(p) => <$module::$ty as Kind>::plan(p, b)),+ }
            }
        }

        /// The kind that produces `data` (each datum has one producer).
        pub fn producer(data: Data) -> &'static str {
            $(if <$module::$ty as Kind>::PRODUCES.contains(&data) {
                return <$module::$ty as Kind>::NAME;
            })+
            unreachable!("no stage kind produces {data:?}")
        }

        /// Every kind's name, in registry order.
        pub const NAMES: &[&str] = &[$(<$module::$ty as Kind>::NAME),+];
    };
}

registry! {
    HcPre => hc_pre::HcPre,
    RmsNorm => rms_norm::RmsNorm,
    QkvProjRope => qkv_proj_rope::QkvProjRope,
    CacheInsert => cache_insert::CacheInsert,
    Compressor => compressor::Compressor,
    IndexCompressor => index_compressor::IndexCompressor,
    IndexQuery => index_query::IndexQuery,
    Indexer => indexer::Indexer,
    SparseAttention => sparse_attention::SparseAttention,
    OGroupAllToAll => o_group_all_to_all::OGroupAllToAll,
    OProj => o_proj::OProj,
    OReduceScatter => o_reduce_scatter::OReduceScatter,
    HcPost => hc_post::HcPost,
}

/// One entry of a spec's stage list, read.
#[derive(Debug, Clone)]
pub struct StageSpec {
    pub params: Params,
    /// Where the entry is written.
    pub loc: Loc,
    pub tiling_loc: Loc,
    /// Unaligned GM rows are moved with DataCopyPad.
    pub pad_unaligned: bool,
}

/// A stage at one TP degree, its tiles checked.
#[derive(Debug, Clone, PartialEq)]
pub struct StagePlan {
    pub params: Params,
    pub pad_unaligned: bool,
}

impl StagePlan {
    pub fn name(&self) -> &'static str {
        self.params.name()
    }
}

/// The kernel plan of `plan`: each stage's launches, in stage order.
pub fn plan_kernels(plan: &Plan, stages: &[StagePlan]) -> KernelPlan {
    let mut b = Builder::new(plan);
    for s in stages {
        b.stage(s.name());
        s.params.plan(&mut b);
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::NAMES;

    /// The spec keys serde derives from the variant names are the kinds' names.
    #[test]
    fn entry_keys_are_the_kind_names() {
        for name in NAMES {
            let yaml = format!("{name}: {{}}");
            let err = serde_saphyr::from_str::<super::Entry>(&yaml)
                .expect_err("an empty entry misses its keys")
                .to_string();
            assert!(
                !err.contains("unknown variant"),
                "{name} is not a spec key: {err}"
            );
        }
    }
}
