//! Runtime library for generated decode layers: the ABI vocabulary, tensors,
//! fixtures, goldens, comparators, save/replay, and the CPU model of Ascend C.

pub mod abi;
pub mod compare;
pub mod fixtures;
pub mod golden;
pub mod io;
pub mod sim;
pub mod tensor;
