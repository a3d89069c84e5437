//! A dense tensor: a shape over [`Data`], viewable as little-endian bytes.

use abi::DType;
use half::{bf16, f16};

use crate::data::Data;
use crate::element::{self, Element};

/// Why a tensor could not be built or read as asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TensorError {
    #[error("tensor `{name}` is missing")]
    Missing { name: String },
    #[error("tensor `{name}`: expected dtype {want}, got {got}")]
    DType {
        name: String,
        want: &'static str,
        got: &'static str,
    },
    #[error("tensor `{name}`: expected shape {want}, got {got:?}")]
    Shape {
        name: String,
        want: String,
        got: Vec<usize>,
    },
    #[error("shape {shape:?} holds {want} elements but the data has {got}")]
    Length {
        shape: Vec<usize>,
        want: usize,
        got: usize,
    },
}

/// A dense row-major tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    shape: Vec<usize>,
    data: Data,
}

impl Tensor {
    /// A tensor from typed data; the element count must match the shape.
    pub fn new(shape: Vec<usize>, data: Data) -> Result<Tensor, TensorError> {
        let want = shape.iter().product::<usize>();
        if want != data.len() {
            return Err(TensorError::Length {
                shape,
                want,
                got: data.len(),
            });
        }
        Ok(Tensor { shape, data })
    }

    /// A tensor from a typed vector; the element count must match the shape.
    pub fn from_vec<T: Element>(shape: Vec<usize>, values: Vec<T>) -> Result<Tensor, TensorError> {
        Tensor::new(shape, T::wrap(values))
    }

    /// An all-zero tensor.
    pub fn zeros(dtype: DType, shape: Vec<usize>) -> Tensor {
        let n = shape.iter().product();
        Tensor {
            shape,
            data: Data::zeros(dtype, n),
        }
    }

    /// Decodes little-endian bytes (one copy).
    pub fn from_le_bytes(
        dtype: DType,
        shape: Vec<usize>,
        bytes: &[u8],
    ) -> Result<Tensor, TensorError> {
        let n = shape.iter().product::<usize>();
        if bytes.len() != n * dtype.size() {
            return Err(TensorError::Length {
                shape,
                want: n * dtype.size(),
                got: bytes.len(),
            });
        }
        let data = match dtype {
            DType::Bf16 => Data::Bf16(decode(bytes, |b| bf16::from_bits(u16::from_le_bytes(b)))),
            DType::F16 => Data::F16(decode(bytes, |b| f16::from_bits(u16::from_le_bytes(b)))),
            DType::F32 => Data::F32(decode(bytes, f32::from_le_bytes)),
            DType::I8 => Data::I8(bytes.iter().map(|&b| b as i8).collect()),
            DType::I32 => Data::I32(decode(bytes, i32::from_le_bytes)),
            DType::I64 => Data::I64(decode(bytes, i64::from_le_bytes)),
        };
        Ok(Tensor { shape, data })
    }

    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn numel(&self) -> usize {
        self.data.len()
    }

    pub fn data(&self) -> &Data {
        &self.data
    }

    /// The typed elements, or `None` when the dtype differs.
    pub fn values<T: Element>(&self) -> Option<&[T]> {
        T::slice(&self.data)
    }

    pub fn values_mut<T: Element>(&mut self) -> Option<&mut [T]> {
        T::slice_mut(&mut self.data)
    }

    /// The storage as little-endian bytes, without copying.
    /// The storage as mutable bytes: what a kernel launch binds as a GM buffer.
    pub fn as_le_bytes_mut(&mut self) -> &mut [u8] {
        match &mut self.data {
            Data::Bf16(v) => element::bytes_of_mut(v),
            Data::F16(v) => element::bytes_of_mut(v),
            Data::F32(v) => element::bytes_of_mut(v),
            Data::I8(v) => element::bytes_of_mut(v),
            Data::I32(v) => element::bytes_of_mut(v),
            Data::I64(v) => element::bytes_of_mut(v),
        }
    }

    pub fn as_le_bytes(&self) -> &[u8] {
        match &self.data {
            Data::Bf16(v) => element::bytes_of(v),
            Data::F16(v) => element::bytes_of(v),
            Data::F32(v) => element::bytes_of(v),
            Data::I8(v) => element::bytes_of(v),
            Data::I32(v) => element::bytes_of(v),
            Data::I64(v) => element::bytes_of(v),
        }
    }

    /// Every element widened to f64 (for comparators over any dtype).
    pub fn to_f64(&self) -> Vec<f64> {
        match &self.data {
            Data::Bf16(v) => v.iter().map(|x| f64::from(x.to_f32())).collect(),
            Data::F16(v) => v.iter().map(|x| f64::from(x.to_f32())).collect(),
            Data::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Data::I8(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Data::I32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Data::I64(v) => v.iter().map(|&x| x as f64).collect(),
        }
    }
}

fn decode<T, const N: usize>(bytes: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
    bytes
        .chunks_exact(N)
        .map(|c| f(c.try_into().expect("chunks_exact yields N bytes")))
        .collect()
}

/// Row-major multi-index of a flat index.
pub fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (i, &n) in shape.iter().enumerate().rev() {
        if n > 0 {
            index[i] = flat % n;
            flat /= n;
        }
    }
    index
}
