//! Runtime library for generated decode layers: the ABI vocabulary, tensors,
//! fixtures, goldens, comparators, save/replay, and the CPU model of Ascend C.

pub mod abi;
