//! A saved case directory: `in.safetensors` (every input, `[tp]`-stacked at
//! TP > 1 like the reference's L3 entries) and `out.safetensors` (the golden
//! outputs). The reference's own golden-vector directories have the same two
//! files.

use super::error::IoError;
use super::safetensors_file::{read_tensors, write_tensors};
use crate::tensor::TensorMap;
use std::collections::BTreeMap;
use std::path::Path;

pub const INPUTS_FILE: &str = "in.safetensors";
pub const OUTPUTS_FILE: &str = "out.safetensors";

/// A case read back from disk.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedCase {
    pub inputs: TensorMap,
    pub outputs: TensorMap,
    /// `__metadata__` of in.safetensors (empty for the reference's files).
    pub metadata: BTreeMap<String, String>,
}

/// Writes `dir/in.safetensors` and `dir/out.safetensors`, creating `dir`.
/// `metadata` is stored in the inputs file's header (e.g. layer, tp, seed).
pub fn save_case(
    dir: &Path,
    inputs: &TensorMap,
    outputs: &TensorMap,
    metadata: &BTreeMap<String, String>,
) -> Result<(), IoError> {
    std::fs::create_dir_all(dir).map_err(|source| IoError::File {
        path: dir.into(),
        source,
    })?;
    write_tensors(&dir.join(INPUTS_FILE), inputs, metadata)?;
    write_tensors(&dir.join(OUTPUTS_FILE), outputs, &BTreeMap::new())
}

/// Reads a case directory written by [`save_case`] or by the reference system.
pub fn load_case(dir: &Path) -> Result<SavedCase, IoError> {
    let (inputs, metadata) = read_tensors(&dir.join(INPUTS_FILE))?;
    let (outputs, _) = read_tensors(&dir.join(OUTPUTS_FILE))?;
    Ok(SavedCase {
        inputs,
        outputs,
        metadata,
    })
}
