//! Spec → validation → plan → rendered files.
