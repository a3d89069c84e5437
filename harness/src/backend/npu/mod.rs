//! The `npu` backend: the generated kernels built with CANN's toolchain ([`build`]), run on
//! Ascend devices through ACL ([`acl`]), one device per TP rank, with the collectives as
//! HCCL all-to-alls ([`hccl`]). CANN is loaded at run time: the project builds without it,
//! and asking for this backend where it is absent fails with one line saying what is
//! missing ([`toolkit`]).
//!
//! A run is stream-ordered: each rank uploads the run's tiling words once, enqueues every
//! launch and collective on its one stream with no host synchronisation between them, and
//! synchronises once after its last step ([`group`]). [`Npu::with_sync_each`] synchronises
//! after every launch and collective instead, for debugging; [`Npu::with_graph`] captures
//! the first run's step as a graph and replays it in later runs.

pub mod acl;
pub mod build;
pub mod cores;
mod group;
pub mod hccl;
mod launchers;
pub mod toolkit;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use acl::Acl;
use group::{Context, NpuGroup, RankState, on_rank, report_teardown};
use hccl::Hccl;
use launchers::Launchers;
use toolkit::Toolkit;

use super::{Backend, BackendError, Group, KernelSources, Kernels};
use abi::plan::{Kernel, VariantPlan};

use crate::backend::Progress;

/// How long a stream synchronisation may take before the rank gives up: a peer that
/// failed leaves a collective waiting, and this bounds the wait.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// Ascend devices, one per TP rank.
#[derive(Debug, Clone)]
pub struct Npu {
    devices: Vec<u32>,
    timeout: Duration,
    sync_each: bool,
    graph: bool,
}

impl Npu {
    pub fn new(devices: Vec<u32>) -> Npu {
        Npu {
            devices,
            timeout: DEFAULT_TIMEOUT,
            sync_each: false,
            graph: false,
        }
    }

    /// Captures the first run's step with ACL's model capture and replays the graph in
    /// every later run of the same kernels, on the same device buffers (each run uploads
    /// its inputs into them first). Needs the capture API ([`acl::CAPTURE_CANN`]). A replay
    /// runs its steps without the host, so [`Npu::with_sync_each`] does not apply to it.
    pub fn with_graph(self, graph: bool) -> Npu {
        Npu { graph, ..self }
    }

    /// Synchronises the stream after every launch and collective (a failure then names
    /// its step at once; the run pays a host round trip per step).
    pub fn with_sync_each(self, sync_each: bool) -> Npu {
        Npu { sync_each, ..self }
    }

    /// Bounds every stream synchronisation by `timeout` instead of [`DEFAULT_TIMEOUT`].
    pub fn with_timeout(self, timeout: Duration) -> Npu {
        Npu { timeout, ..self }
    }
}

/// Where built kernel libraries are cached: `$CARGO_TARGET_DIR/npu-cache`, else
/// `<workspace>/target/npu-cache`.
fn cache_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) => PathBuf::from(t).join("npu-cache"),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/npu-cache"),
    }
}

impl Backend for Npu {
    fn name(&self) -> &'static str {
        "npu"
    }

    fn available(&self) -> Result<(), BackendError> {
        let toolkit = Toolkit::locate()?;
        toolkit.ascendcl()?;
        toolkit.asc_cmake_dir().map(drop)
    }

    fn load(
        &self,
        plan: &VariantPlan,
        kernels: &[Kernel],
        sources: &KernelSources,
        progress: &Progress,
    ) -> Result<Box<dyn Kernels>, BackendError> {
        let toolkit = Toolkit::locate()?;
        let tp = plan.abi.tp;
        if self.devices.len() != tp {
            return Err(BackendError::Unavailable(format!(
                "backend npu: {} device(s) given for TP {tp}",
                self.devices.len()
            )));
        }
        let acl_path = toolkit.ascendcl()?;
        let hccl_path = if tp > 1 { Some(toolkit.hccl()?) } else { None };
        let acl = Acl::get(&acl_path)?;
        if self.graph
            && let Err(BackendError::Unavailable(why)) = acl.capture_api()
        {
            let version = toolkit
                .version()
                .map_or("names no version".into(), |v| format!("is version {v}"));
            return Err(BackendError::Unavailable(format!(
                "{why}; the toolkit at {} {version}",
                toolkit.root.display()
            )));
        }
        for &d in &self.devices {
            cores::check(plan, kernels, d, &acl.cores(d)?)?;
        }
        let lib_path = build::build(&toolkit, plan, kernels, sources, &cache_dir(), progress)?;
        let hccl = hccl_path
            .as_deref()
            .map(|p| Hccl::load(p, acl))
            .transpose()?;
        let launchers = Launchers::load(&lib_path, kernels)?;
        Ok(Box::new(NpuKernels {
            cx: Context {
                acl,
                hccl,
                launchers: Some(launchers),
                timeout: self.timeout,
                sync_each: self.sync_each,
                graph: self.graph,
                resident: Mutex::new(Vec::new()),
            },
            devices: self.devices.clone(),
        }))
    }
}

/// The built kernels on their devices.
struct NpuKernels {
    cx: Context,
    devices: Vec<u32>,
}

impl Drop for NpuKernels {
    fn drop(&mut self) {
        // A kept graph run's buffers, then the kernel library, while the devices and ACL
        // are still up; ACL itself is finalised at process exit (acl::Acl::get).
        let resident = std::mem::take(
            self.cx
                .resident
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner),
        );
        self.cx.release(resident, "freeing a kept graph's buffers");
        drop(self.cx.launchers.take());
        let mut failures = Vec::new();
        let mut reset = Vec::new();
        for &d in &self.devices {
            if reset.contains(&d) {
                continue;
            }
            reset.push(d);
            if let Err(e) = self
                .cx
                .acl
                .set_device(d)
                .and_then(|()| self.cx.acl.reset_device(d))
            {
                failures.push(e);
            }
        }
        report_teardown("releasing the devices", failures);
    }
}

impl Kernels for NpuKernels {
    fn group<'a>(
        &'a self,
        initial: Vec<Vec<Vec<u8>>>,
        _names: &[&'static str],
    ) -> Result<Box<dyn Group + 'a>, BackendError> {
        let kept = std::mem::take(
            &mut *self
                .cx
                .resident
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let replay =
            kept.len() == initial.len() && kept.iter().zip(&initial).all(|(r, bufs)| r.fits(bufs));
        let mut group = NpuGroup {
            cx: &self.cx,
            ranks: Vec::with_capacity(initial.len()),
            root: None,
            // until set up: a group dropped half-made is released, not kept
            failed: AtomicBool::new(true),
        };
        if replay {
            group.ranks = kept;
            for (rank, (r, bufs)) in group.ranks.iter().zip(&initial).enumerate() {
                r.refill(self.cx.acl, bufs)
                    .map_err(|e| on_rank(rank, r.device, e))?;
            }
        } else {
            self.cx.release(kept, "freeing a kept graph's buffers");
            for (rank, bufs) in initial.iter().enumerate() {
                let device = self.devices[rank];
                RankState::allocate(self.cx.acl, device, bufs, &mut group.ranks)
                    .map_err(|e| on_rank(rank, device, e))?;
            }
        }
        if let Some(h) = &self.cx.hccl
            && group.ranks.iter().any(|r| !r.has_comm())
        {
            let device = self.devices[0];
            self.cx
                .acl
                .set_device(device)
                .and_then(|()| h.root_info())
                .map(|root| group.root = Some(root))
                .map_err(|e| on_rank(0, device, e))?;
        }
        *group.failed.get_mut() = false;
        Ok(Box::new(group))
    }
}
