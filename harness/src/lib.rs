//! Runs generated decode layers: the runtime that executes a variant's launch plan on a
//! backend (the CPU model of Ascend C, or NPUs through CANN) across its TP ranks. The
//! vocabulary of the plans is the `abi` crate; tensors, fixtures, goldens and comparators
//! are the `golden` crate.

pub mod backend;
pub mod runtime;
pub mod sim;
