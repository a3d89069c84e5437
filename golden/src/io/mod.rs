//! Save/replay of layer cases as safetensors files that load in torch/numpy
//! with the reference names, shapes and dtypes (`../shared/DESIGN.md` §8).

mod case_dir;
mod error;
mod safetensors_file;

pub use case_dir::{INPUTS_FILE, OUTPUTS_FILE, SavedCase, load_case, save_case};
pub use error::IoError;
pub use safetensors_file::{read_tensors, write_tensors};
