//! One safetensors file ⇄ a [`TensorMap`]: an 8-byte little-endian header
//! length, a JSON header (dtype, shape, data_offsets per tensor, optional
//! `__metadata__` strings), then the raw little-endian data.

use super::error::IoError;
use crate::tensor::{Tensor, TensorMap};
use abi::DType;
use safetensors::{Dtype, SafeTensors, View};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

struct TensorView<'a>(&'a Tensor);

impl View for TensorView<'_> {
    fn dtype(&self) -> Dtype {
        match self.0.dtype() {
            DType::Bf16 => Dtype::BF16,
            DType::F16 => Dtype::F16,
            DType::F32 => Dtype::F32,
            DType::I8 => Dtype::I8,
            DType::I32 => Dtype::I32,
            DType::I64 => Dtype::I64,
        }
    }
    fn shape(&self) -> &[usize] {
        self.0.shape()
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self.0.as_le_bytes())
    }
    fn data_len(&self) -> usize {
        self.0.as_le_bytes().len()
    }
}

fn dtype_of(d: Dtype) -> Option<DType> {
    Some(match d {
        Dtype::BF16 => DType::Bf16,
        Dtype::F16 => DType::F16,
        Dtype::F32 => DType::F32,
        Dtype::I8 => DType::I8,
        Dtype::I32 => DType::I32,
        Dtype::I64 => DType::I64,
        _ => return None,
    })
}

/// Writes every tensor of `tensors` (and optional string metadata) to `path`.
pub fn write_tensors(
    path: &Path,
    tensors: &TensorMap,
    metadata: &BTreeMap<String, String>,
) -> Result<(), IoError> {
    let info: Option<HashMap<String, String>> = (!metadata.is_empty()).then(|| {
        metadata
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    });
    safetensors::serialize_to_file(tensors.iter().map(|(n, t)| (n, TensorView(t))), info, path)
        .map_err(|e| match e {
            safetensors::SafeTensorError::IoError(source) => IoError::File {
                path: path.into(),
                source,
            },
            other => IoError::Format {
                path: path.into(),
                message: other.to_string(),
            },
        })
}

/// Reads every tensor of a safetensors file, with its string metadata.
pub fn read_tensors(path: &Path) -> Result<(TensorMap, BTreeMap<String, String>), IoError> {
    let bytes = std::fs::read(path).map_err(|source| IoError::File {
        path: path.into(),
        source,
    })?;
    let format = |message: String| IoError::Format {
        path: path.into(),
        message,
    };
    let (_, header) = SafeTensors::read_metadata(&bytes).map_err(|e| format(e.to_string()))?;
    let metadata = header
        .metadata()
        .as_ref()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let file = SafeTensors::deserialize(&bytes).map_err(|e| format(e.to_string()))?;
    let mut map = TensorMap::new();
    for (name, view) in file.tensors() {
        let dtype = dtype_of(view.dtype()).ok_or_else(|| IoError::Dtype {
            path: path.into(),
            name: name.clone(),
            dtype: view.dtype().to_string(),
        })?;
        let tensor = Tensor::from_le_bytes(dtype, view.shape().to_vec(), view.data())
            .map_err(|e| format(e.to_string()))?;
        map.insert(name, tensor);
    }
    Ok((map, metadata))
}
