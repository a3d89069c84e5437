//! Runs generated decode layers: the runtime that executes a variant's launch plan on a
//! backend (the CPU model of Ascend C, or NPUs through CANN) across its TP ranks. The
//! vocabulary of the plans is the `abi` crate, the tensors it moves the `tensor` crate; it
//! never reaches the reference side (`golden`: goldens, fixtures, comparators).

pub mod backend;
pub mod kernel_library;
pub mod runtime;
