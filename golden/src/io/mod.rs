//! Save/replay of layer cases as safetensors files that load in torch/numpy
//! with the reference names, shapes and dtypes (`../shared/DESIGN.md` §8).

mod case_dir;
mod safetensors_file;

pub use case_dir::{INPUTS_FILE, OUTPUTS_FILE, SavedCase, load_case, save_case};
pub use safetensors_file::{read_tensors, write_tensors};

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
