//! What stops the golden.

use crate::dims::DimsError;
use crate::tensor::TensorError;

/// Why the golden could not run a case.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GoldenError {
    #[error(transparent)]
    Dims(#[from] DimsError),
    #[error(transparent)]
    Tensor(#[from] TensorError),
    /// Metadata that breaks the reference's contract (slots out of range, …).
    #[error("{0}")]
    Contract(String),
}
