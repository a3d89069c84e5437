//! Where a plan's kernels run: [`sim`], the CPU model of Ascend C (TP ranks are threads
//! and the collectives copy rows between their buffers), or [`npu`], Ascend devices
//! through CANN (kernels built with its toolchain, ACL for memory and launches, HCCL for
//! the collectives), loaded at run time so the project builds without CANN.
//!
//! The runtime drives a backend through three objects: a [`Backend`] builds the plan's
//! kernels once ([`Kernels`]); for each run the kernels allocate every rank's buffers
//! ([`Group`]), which one thread per rank then uses to launch kernels and exchange rows.

mod contract;
mod exchange;
mod l2;
pub mod npu;
mod progress;
pub mod sim;
mod tiling;

pub use contract::{
    Backend, BackendError, DeviceTime, Group, KernelSources, Kernels, LaunchCounters, StepTime,
    poison,
};
pub use exchange::{Exchange, Pattern, Transfer};
pub use progress::{Observer, Progress};
pub use tiling::Tiling;

use std::fmt;
use std::str::FromStr;

use crate::kernel_library::Checks;

/// The backends `--backend` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    Sim,
    Npu,
}

/// How a backend runs: what the sim checks (the NPU is the device itself), and how the
/// npu backend runs a step: synchronising after every step instead of once per run, or
/// replaying a captured graph.
#[derive(Debug, Clone, Copy, Default)]
pub struct BackendOptions {
    pub checks: Checks,
    pub sync_each: bool,
    pub graph: bool,
}

impl From<Checks> for BackendOptions {
    fn from(checks: Checks) -> Self {
        BackendOptions {
            checks,
            ..BackendOptions::default()
        }
    }
}

impl BackendKind {
    /// The backend, on `devices` (one per TP rank; the sim ignores them).
    pub fn create(self, devices: &[u32], options: BackendOptions) -> Box<dyn Backend> {
        match self {
            BackendKind::Sim => Box::new(sim::Sim {
                cache_dir: None,
                checks: options.checks,
            }),
            BackendKind::Npu => Box::new(
                npu::Npu::new(devices.to_vec())
                    .with_sync_each(options.sync_each)
                    .with_graph(options.graph),
            ),
        }
    }
}

impl FromStr for BackendKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "sim" => Ok(BackendKind::Sim),
            "npu" => Ok(BackendKind::Npu),
            _ => Err(format!("unknown backend `{s}` (expected sim or npu)")),
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Sim => "sim",
            BackendKind::Npu => "npu",
        })
    }
}
