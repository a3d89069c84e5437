//! Why a case could not be saved or loaded.

use std::path::PathBuf;

/// Why a case could not be saved or loaded.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    #[error("{path}: {source}")]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a valid safetensors file: {message}")]
    Format { path: PathBuf, message: String },
    #[error(
        "{path}: tensor `{name}` has dtype {dtype}, which layer cases do not use (BF16, F32, I8, I32, I64)"
    )]
    Dtype {
        path: PathBuf,
        name: String,
        dtype: String,
    },
}
