//! Where a plan's kernels run: [`sim`], the CPU model of Ascend C (TP ranks are threads
//! and the collectives copy rows between their buffers), or [`npu`], Ascend devices
//! through CANN (kernels built with its toolchain, ACL for memory and launches, HCCL for
//! the collectives), loaded at run time so the project builds without CANN.
//!
//! The runtime drives a backend through three objects: a [`Backend`] builds the plan's
//! kernels once ([`Kernels`]); for each run the kernels allocate every rank's buffers
//! ([`Group`]), which one thread per rank then uses to launch kernels and exchange rows.

mod exchange;
pub mod npu;
mod progress;
pub mod sim;
mod tiling;

pub use exchange::{Exchange, Pattern, Transfer};
pub use progress::{Observer, Progress};
pub use tiling::Tiling;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::sim::{ArgTraffic, Checks, LaunchStats};
use abi::plan::{Kernel, Launch, VariantPlan};

/// The byte every output and workspace is filled with before a run (NaN in every float
/// type): an element no kernel wrote fails its comparison.
pub const POISON: u8 = 0xFF;

/// Where the generated kernel sources and their building blocks are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSources {
    /// Folders of `<name>.cpp` files, searched in order: `generated/ascendc/kernels`, or
    /// a folder of kernels rendered for a plan that is not in `generated/` before it.
    pub kernels_dirs: Vec<PathBuf>,
    /// `generated/ascendc/include`: the `dsv4/*.h` building blocks.
    pub include_dir: PathBuf,
}

impl KernelSources {
    /// The generated tree of the repository at `root`.
    pub fn in_repo(root: &Path) -> KernelSources {
        KernelSources {
            kernels_dirs: vec![root.join("generated/ascendc/kernels")],
            include_dir: root.join("generated/ascendc/include"),
        }
    }

    /// The first folder's `<kernel>.cpp` that exists (else the first folder's, which the
    /// build then reports missing).
    pub fn source(&self, kernel: &str) -> PathBuf {
        let file = format!("{kernel}.cpp");
        let mut paths = self.kernels_dirs.iter().map(|d| d.join(&file));
        let first = paths.next().expect("at least one kernels folder");
        if first.is_file() {
            return first;
        }
        paths.find(|p| p.is_file()).unwrap_or(first)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The backend cannot run on this machine (no toolkit, no device): one line saying
    /// what is missing and what to do.
    #[error("{0}")]
    Unavailable(String),
    /// Building the kernels failed.
    #[error("{0}")]
    Build(String),
    /// A kernel trapped or a device call failed.
    #[error("{0}")]
    Run(String),
}

/// Counters of one launch, measured by the sim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchCounters {
    pub stats: LaunchStats,
    /// DMA traffic per kernel argument (the workspace and tiling arguments last).
    pub args: Vec<ArgTraffic>,
}

/// A place kernels can run.
pub trait Backend: Send + Sync {
    fn name(&self) -> &'static str;

    /// Whether this machine can use the backend at all (cheap; before any build).
    fn available(&self) -> Result<(), BackendError> {
        Ok(())
    }

    /// Builds `kernels` of `plan` for this backend: its whole kernel list, or the kernels
    /// of the stages a run of single stages launches.
    fn load(
        &self,
        plan: &VariantPlan,
        kernels: &[Kernel],
        sources: &KernelSources,
        progress: &Progress,
    ) -> Result<Box<dyn Kernels>, BackendError>;
}

/// A plan's kernels, built and loaded.
pub trait Kernels: Send + Sync {
    /// Allocates the buffers of every rank with these initial contents
    /// (`initial[rank][buffer id]`; `names[id]` labels them in messages).
    fn group<'a>(
        &'a self,
        initial: Vec<Vec<Vec<u8>>>,
        names: &[&'static str],
    ) -> Result<Box<dyn Group + 'a>, BackendError>;
}

/// The buffers of all TP ranks, used concurrently by one thread per rank.
pub trait Group: Sync {
    /// Called once on each rank's thread before its first step.
    fn enter(&self, _rank: usize) -> Result<(), BackendError> {
        Ok(())
    }

    /// Runs one launch on `rank` with its arguments bound to buffer ids `args`.
    fn launch(
        &self,
        rank: usize,
        launch: &Launch,
        args: &[usize],
        tiling: &Tiling,
    ) -> Result<Option<LaunchCounters>, BackendError>;

    /// `rank`'s part of a collective: every rank calls it between two meetings, so it may
    /// read the other ranks' `src` and writes only its own `dst`.
    fn exchange(
        &self,
        rank: usize,
        exchange: &Exchange,
        tp: usize,
        t: usize,
    ) -> Result<(), BackendError>;

    /// The current contents of a buffer of `rank`.
    fn read(&self, rank: usize, id: usize) -> Result<Vec<u8>, BackendError>;
}

/// The backends `--backend` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    Sim,
    Npu,
}

impl BackendKind {
    /// The backend, on `devices` (one per TP rank; the sim ignores them), with what the sim
    /// checks (the NPU is the device itself).
    pub fn create(self, devices: &[u32], checks: Checks) -> Box<dyn Backend> {
        match self {
            BackendKind::Sim => Box::new(sim::Sim {
                cache_dir: None,
                checks,
            }),
            BackendKind::Npu => Box::new(npu::Npu::new(devices.to_vec())),
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
