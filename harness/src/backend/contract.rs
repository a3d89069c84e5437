//! What a backend is: the [`Backend`] → [`Kernels`] → [`Group`] contract the sim and npu
//! modules fulfil, and what they share (where kernel sources are, errors, counters, the
//! poison byte).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::exchange::Exchange;
use super::progress::Progress;
use super::tiling::Tiling;
use crate::kernel_library::{ArgTraffic, KernelTime, LaunchStats};
use abi::DType;
use abi::plan::{Kernel, Launch, VariantPlan};

/// The byte every output and workspace of `dtype` is filled with before a run, so an
/// element no kernel wrote fails its comparison: 0xFF in float types (NaN), 0x80 in
/// integer ones (−128 in i8, 0x8080_8080 in i32), below every value a kernel writes: int8
/// quantisation stays in [−127, 127], indices and their −1 padding are ≥ −1 (an all-0xFF
/// i32 would be that padding).
pub const fn poison(dtype: DType) -> u8 {
    match dtype {
        DType::Bf16 | DType::F16 | DType::F32 => 0xFF,
        DType::I8 | DType::I32 | DType::I64 => 0x80,
    }
}

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

    /// The same sources with the kernels in `dir` found first (kernels rendered for a plan
    /// that `generated/` does not hold).
    pub fn searching_first(mut self, dir: PathBuf) -> KernelSources {
        self.kernels_dirs.insert(0, dir);
        self
    }

    /// The first folder's `<kernel>.cpp` that exists (else the first folder's, which the
    /// build then reports missing).
    pub fn source(&self, kernel: &str) -> PathBuf {
        let file = format!("{kernel}.cpp");
        self.kernels_dirs
            .iter()
            .map(|d| d.join(&file))
            .find(|p| p.is_file())
            .unwrap_or_else(|| self.kernels_dirs[0].join(&file))
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
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchCounters {
    pub stats: LaunchStats,
    /// DMA traffic per kernel argument (the workspace and tiling arguments last).
    pub args: Vec<ArgTraffic>,
    /// The modeled device time, when the sim's timeline ran.
    pub time: Option<KernelTime>,
}

/// A step's device time as the device measured it (events around it on its stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepTime {
    /// From the rank's first event to the step's start.
    pub start: Duration,
    pub time: Duration,
}

/// A rank's run as the device measured it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceTime {
    /// From before the first step to after the last.
    pub total: Duration,
    /// Each step in the order run; `None` when the steps ran as one replayed graph.
    pub steps: Option<Vec<StepTime>>,
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

    /// Runs (or, on a device, enqueues) one launch on `rank` with its arguments bound to
    /// buffer ids `args`. Every launch of a run gets the same `tiling` (the run's extents).
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

    /// Called once on each rank's thread after its last step: waits until everything the
    /// rank enqueued has run (a device's stream), and reports what failed there.
    fn finish(&self, _rank: usize) -> Result<(), BackendError> {
        Ok(())
    }

    /// After [`Group::finish`]: the device's own time of the rank's run, on a backend that
    /// measures one.
    fn measured(&self, _rank: usize) -> Result<Option<DeviceTime>, BackendError> {
        Ok(None)
    }

    /// The current contents of a buffer of `rank`.
    fn read(&self, rank: usize, id: usize) -> Result<Vec<u8>, BackendError>;
}
