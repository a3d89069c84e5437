//! The vocabulary generated host harnesses are written in: every tensor a layer
//! variant exchanges with its kernels, described as data, its launch [`plan`] and the
//! [`tiling`] words every kernel receives. `generated/host/*.rs` renders `&'static`
//! tables of these types; the harness's runtime interprets them.

pub mod plan;
pub mod tiling;

use sha2::{Digest, Sha256};

/// The short content hash generated files and plans carry (of a spec, a building block, a
/// kernel): the first 6 bytes of SHA-256, hex. `gen` writes it, `run` checks a spec with it.
pub fn short_hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Element type of a tensor, as the reference ABI names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bf16,
    /// IEEE half: an int8 product's C as the cube writes it (`dsv4/matmul.h`).
    F16,
    F32,
    I8,
    I32,
    I64,
}

impl DType {
    pub const fn size(self) -> usize {
        match self {
            DType::I8 => 1,
            DType::Bf16 | DType::F16 => 2,
            DType::F32 | DType::I32 => 4,
            DType::I64 => 8,
        }
    }

    /// The dtype name used by safetensors / torch.
    pub const fn name(self) -> &'static str {
        match self {
            DType::Bf16 => "bfloat16",
            DType::F16 => "float16",
            DType::F32 => "float32",
            DType::I8 => "int8",
            DType::I32 => "int32",
            DType::I64 => "int64",
        }
    }
}

/// One axis of a shape: a compile-time extent from the plan, or a runtime
/// variable bound when the layer runs (`"t"` tokens on this rank, `"b"` requests,
/// `"nb"` KV pool blocks, ...), optionally scaled (`t·S`-style formulas are not
/// needed: a scaled variable covers every shape in the references).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dim {
    Const(usize),
    Var(&'static str),
}

/// Data direction as seen by the kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    In,
    Out,
    InOut,
}

/// How a tensor is laid out across TP ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Identical on every rank (rank 0's copy cloned).
    Replicated,
    /// Each rank holds its own content (tokens, metadata, pools).
    PerRank,
    /// Each rank holds slice `rank` of the full tensor along `axis`.
    Sharded { axis: usize },
}

/// One ABI tensor, in the reference's parameter order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TensorDecl {
    pub name: &'static str,
    /// Per-rank shape.
    pub shape: &'static [Dim],
    pub dtype: DType,
    pub dir: Dir,
    pub placement: Placement,
}

/// A runtime axis of the ABI shapes (`Dim::Var`) and its capacity from the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AxisBound {
    pub name: &'static str,
    pub max: usize,
}

/// The host ABI of a generated layer variant (`generated/host/<variant>.rs`); its
/// launch plan ([`crate::plan::VariantPlan`]) holds this and the per-rank workspaces.
#[derive(Debug, Clone, Copy)]
pub struct VariantAbi {
    /// `<spec name>_tp<N>`.
    pub name: &'static str,
    /// `swa`, `hca` or `csa`.
    pub layer: &'static str,
    pub tp: usize,
    /// The host ABI in the reference's parameter order.
    pub tensors: &'static [TensorDecl],
    pub axes: &'static [AxisBound],
}
