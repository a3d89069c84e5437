//! One entry of a layer's signature: its name, dtype, per-rank shape and direction, and
//! the constructors the families list their tensors with.

use abi::DType;

/// One axis of a signature shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ext {
    Is(usize),
    /// A runtime extent the golden reads from the tensor (pool pages, the HCA
    /// cmp table width).
    Any,
}

/// Direction as the golden sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    In,
    /// A pool: an input whose updated value is an output.
    InOut,
    Out,
}

/// One tensor of a layer case.
#[derive(Debug, Clone, PartialEq)]
pub struct Sig {
    pub name: &'static str,
    pub dtype: DType,
    /// Per-rank shape (without the `[tp]` axis).
    pub shape: Vec<Ext>,
    pub role: Role,
}

pub(crate) fn sig(name: &'static str, dtype: DType, shape: &[usize], role: Role) -> Sig {
    Sig {
        name,
        dtype,
        shape: shape.iter().map(|&n| Ext::Is(n)).collect(),
        role,
    }
}

pub(crate) fn pool(name: &'static str, dtype: DType, block: usize, rest: &[usize]) -> Sig {
    let mut shape = vec![Ext::Any, Ext::Is(block)];
    shape.extend(rest.iter().map(|&n| Ext::Is(n)));
    Sig {
        name,
        dtype,
        shape,
        role: Role::InOut,
    }
}
