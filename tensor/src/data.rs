//! Typed contiguous storage, one variant per ABI dtype.

use abi::DType;
use half::{bf16, f16};

/// Typed contiguous storage, one variant per ABI dtype.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    Bf16(Vec<bf16>),
    F16(Vec<f16>),
    F32(Vec<f32>),
    I8(Vec<i8>),
    I32(Vec<i32>),
    I64(Vec<i64>),
}

impl Data {
    pub fn dtype(&self) -> DType {
        match self {
            Data::Bf16(_) => DType::Bf16,
            Data::F16(_) => DType::F16,
            Data::F32(_) => DType::F32,
            Data::I8(_) => DType::I8,
            Data::I32(_) => DType::I32,
            Data::I64(_) => DType::I64,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Data::Bf16(v) => v.len(),
            Data::F16(v) => v.len(),
            Data::F32(v) => v.len(),
            Data::I8(v) => v.len(),
            Data::I32(v) => v.len(),
            Data::I64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn zeros(dtype: DType, n: usize) -> Data {
        match dtype {
            DType::Bf16 => Data::Bf16(vec![bf16::ZERO; n]),
            DType::F16 => Data::F16(vec![f16::ZERO; n]),
            DType::F32 => Data::F32(vec![0.0; n]),
            DType::I8 => Data::I8(vec![0; n]),
            DType::I32 => Data::I32(vec![0; n]),
            DType::I64 => Data::I64(vec![0; n]),
        }
    }
}
