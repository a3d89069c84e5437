//! Runs generated layers: the generated host modules (ABI and launch plan per variant)
//! are compiled into this crate — never into the generator or xtask, so `cargo xtask gen`
//! keeps working whatever the templates render — and executed by the harness runtime.
//! `cargo xtask run | cost | bench` reach the [`cli`] as a subprocess.

#[path = "../../generated/host/mod.rs"]
pub mod generated;

pub mod cases;
pub mod cli;
pub mod commands;
pub mod cost;
pub mod launch_plot;
pub mod layer;
pub mod measured;
pub mod modeled;
pub mod plots;
pub mod progress;
pub mod report;
pub mod stop;
pub mod trace;
pub mod variant;
