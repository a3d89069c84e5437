//! The plan of a variant (one spec at one TP degree): the model, deployment and
//! per-rank shapes, the layer-level parameters of its compressor, indexer and attention,
//! and its host ABI, derived once from the validated spec and typed. Every stage reads
//! it; the stage list and the kernels are the later passes' output (`crate::variant`).

mod dims;
mod tensors;

use crate::chip::Chip;
use crate::spec::LayerKind;

pub use dims::{
    AttentionPlan, CompressorPlan, IndexerPlan, ModelDims, Pools, RopePlan, TpShape, YarnPlan,
};
pub use tensors::{AbiInput, Axis, TensorPlan, axes, tensors};

#[derive(Debug, Clone)]
pub struct Plan {
    /// `<spec name>_tp<N>`: module, namespace and directory name.
    pub variant: String,
    pub spec_name: String,
    pub spec_path: String,
    pub spec_hash: String,
    pub layer: LayerKind,
    pub chip: &'static Chip,
    pub model: ModelDims,
    pub rope: RopePlan,
    pub shape: TpShape,
    pub pools: Pools,
    pub compressor: Option<CompressorPlan>,
    pub indexer: Option<IndexerPlan>,
    pub attention: AttentionPlan,
    /// The host ABI in the reference's parameter order.
    pub tensors: Vec<TensorPlan>,
    /// Runtime axes of the ABI shapes and their capacities.
    pub axes: Vec<Axis>,
    /// Whether work that can share a kernel shares one (the spec's `fuse`, default true):
    /// the stages' own fused kernels and `kernel_plan::fuse`'s merges.
    pub fuse: bool,
}

impl Plan {
    /// An ABI tensor by name.
    pub fn tensor(&self, name: &str) -> Option<&TensorPlan> {
        self.tensors.iter().find(|t| t.name == name)
    }
}
