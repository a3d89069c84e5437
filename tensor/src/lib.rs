//! A dense tensor as the reference ABI exchanges it: a dtype, a shape and
//! contiguous little-endian storage. The storage is typed (so the goldens read
//! `&[f32]` without copies) and viewable as bytes without copying (so the
//! runtime can hand it to kernels as a GM buffer and save/replay can write it).

mod data;
mod dense;
mod element;
mod map;

pub use data::Data;
pub use dense::{Tensor, TensorError, unravel};
pub use element::Element;
pub use map::TensorMap;

#[cfg(not(target_endian = "little"))]
compile_error!(
    "tensor storage is defined as little-endian bytes; big-endian hosts are not supported"
);
