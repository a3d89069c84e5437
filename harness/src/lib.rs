//! Runtime library for generated decode layers: the ABI and launch-plan vocabulary,
//! the runtime that executes plans on a backend (the CPU model of Ascend C, or NPUs
//! through CANN), tensors, fixtures, goldens, comparators and save/replay.

pub mod abi;
pub mod backend;
pub mod compare;
pub mod fixtures;
pub mod golden;
pub mod io;
pub mod plan;
pub mod runtime;
pub mod sim;
pub mod tensor;
