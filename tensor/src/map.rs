//! Named tensors: the inputs or outputs of one layer case, keyed by their
//! reference ABI names. Sorted by name so iteration (and saved files) are
//! deterministic.

use crate::dense::{Tensor, TensorError};
use crate::element::Element;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TensorMap {
    tensors: BTreeMap<String, Tensor>,
}

impl TensorMap {
    pub fn new() -> TensorMap {
        TensorMap::default()
    }

    /// Adds or replaces a tensor.
    pub fn insert(&mut self, name: impl Into<String>, tensor: Tensor) {
        self.tensors.insert(name.into(), tensor);
    }

    pub fn remove(&mut self, name: &str) -> Option<Tensor> {
        self.tensors.remove(name)
    }

    pub fn get(&self, name: &str) -> Result<&Tensor, TensorError> {
        self.tensors
            .get(name)
            .ok_or_else(|| TensorError::Missing { name: name.into() })
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    /// The elements of `name`, which must have dtype `T`.
    pub fn values<T: Element>(&self, name: &str) -> Result<&[T], TensorError> {
        let tensor = self.get(name)?;
        tensor.values::<T>().ok_or_else(|| TensorError::DType {
            name: name.into(),
            want: T::DTYPE.name(),
            got: tensor.dtype().name(),
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Tensor)> {
        self.tensors.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.keys().map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }
}

impl FromIterator<(String, Tensor)> for TensorMap {
    fn from_iter<I: IntoIterator<Item = (String, Tensor)>>(iter: I) -> Self {
        TensorMap {
            tensors: iter.into_iter().collect(),
        }
    }
}
