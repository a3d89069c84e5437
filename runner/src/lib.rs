//! Runs generated layers. The generated host modules are compiled into this
//! crate (never into the generator or xtask), so `cargo xtask gen` keeps working
//! whatever the templates render.

#[path = "../../generated/host/mod.rs"]
pub mod generated;
