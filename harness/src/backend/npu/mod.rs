//! The `npu` backend: the generated kernels built with CANN's toolchain ([`build`]), run on
//! Ascend devices through ACL ([`acl`]), one device per TP rank, with the collectives as
//! HCCL all-to-alls ([`hccl`]). CANN is loaded at run time: the project builds without it,
//! and asking for this backend where it is absent fails with one line saying what is
//! missing ([`toolkit`]).
//!
//! A run is stream-ordered: each rank uploads the run's tiling words once, enqueues every
//! launch and collective on its one stream with no host synchronisation between them, and
//! synchronises once after its last step ([`Npu::with_sync_each`] synchronises after every
//! launch and collective instead, for debugging).

pub mod acl;
pub mod build;
pub mod cores;
pub mod hccl;
pub mod toolkit;

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use acl::{Acl, Stream};
use hccl::{AllToAllV, Comm, Hccl, RootInfo};
use toolkit::Toolkit;

use super::{Backend, BackendError, Group, KernelSources, Kernels, LaunchCounters};
use abi::plan::{Kernel, Launch, VariantPlan};
use abi::tiling::TILING_WORDS;

use crate::backend::{Exchange, Progress, Tiling};

/// How long a stream synchronisation may take before the rank gives up: a peer that
/// failed leaves a collective waiting, and this bounds the wait.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// Ascend devices, one per TP rank.
#[derive(Debug, Clone)]
pub struct Npu {
    devices: Vec<u32>,
    timeout: Duration,
    sync_each: bool,
}

impl Npu {
    pub fn new(devices: Vec<u32>) -> Npu {
        Npu {
            devices,
            timeout: DEFAULT_TIMEOUT,
            sync_each: false,
        }
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
            acl,
            hccl,
            launchers: Some(launchers),
            devices: self.devices.clone(),
            timeout: self.timeout,
            sync_each: self.sync_each,
        }))
    }
}

type LaunchFn = unsafe extern "C" fn(u32, Stream, *mut *mut c_void) -> i32;

/// The `dsv4_launch_<kernel>` entry points of the built library.
struct Launchers {
    fns: Vec<(&'static str, LaunchFn)>,
    _lib: libloading::Library,
}

impl Launchers {
    fn load(path: &Path, kernels: &[Kernel]) -> Result<Launchers, BackendError> {
        let err = |e: libloading::Error| BackendError::Build(format!("{}: {e}", path.display()));
        // SAFETY: the library was built from our launcher sources; each exported launcher
        // has the LaunchFn signature (build::launcher).
        unsafe {
            let lib = libloading::Library::new(path).map_err(err)?;
            let mut fns = Vec::with_capacity(kernels.len());
            for k in kernels {
                let symbol = build::launcher_symbol(k.name);
                let f: LaunchFn = *lib.get(symbol.as_bytes()).map_err(err)?;
                fns.push((k.name, f));
            }
            Ok(Launchers { fns, _lib: lib })
        }
    }

    fn get(&self, kernel: &str) -> Result<LaunchFn, BackendError> {
        self.fns
            .iter()
            .find(|(n, _)| *n == kernel)
            .map(|(_, f)| *f)
            .ok_or_else(|| BackendError::Run(format!("no launcher for kernel {kernel}")))
    }
}

struct NpuKernels {
    acl: &'static Acl,
    hccl: Option<Hccl>,
    /// `None` only while dropping: the kernel library closes before the devices reset.
    launchers: Option<Launchers>,
    devices: Vec<u32>,
    timeout: Duration,
    sync_each: bool,
}

impl NpuKernels {
    fn launchers(&self) -> &Launchers {
        self.launchers.as_ref().expect("closed only on drop")
    }
}

/// Reports teardown failures, which have no caller to return to.
fn report_teardown(what: &str, failures: Vec<BackendError>) {
    for e in failures {
        eprintln!("backend npu: {what}: {e}");
    }
}

impl Drop for NpuKernels {
    fn drop(&mut self) {
        // The kernel library first, while the devices and ACL are still up; ACL itself is
        // finalised at process exit (acl::Acl::get).
        drop(self.launchers.take());
        let mut failures = Vec::new();
        let mut reset = Vec::new();
        for &d in &self.devices {
            if reset.contains(&d) {
                continue;
            }
            reset.push(d);
            if let Err(e) = self
                .acl
                .set_device(d)
                .and_then(|()| self.acl.reset_device(d))
            {
                failures.push(e);
            }
        }
        report_teardown("releasing the devices", failures);
    }
}

/// A device allocation and its length.
#[derive(Clone, Copy)]
struct DevBuf {
    ptr: *mut c_void,
    len: usize,
}

const NO_BUF: DevBuf = DevBuf {
    ptr: std::ptr::null_mut(),
    len: 0,
};

/// One rank's device state.
struct RankState {
    device: u32,
    stream: Stream,
    bufs: Vec<DevBuf>,
    workspace: DevBuf,
    tiling: DevBuf,
    /// The tiling words uploaded for this run (once, before the first launch).
    uploaded: Mutex<Option<Vec<u8>>>,
    comm: Mutex<Option<Comm>>,
}

struct NpuGroup<'a> {
    k: &'a NpuKernels,
    ranks: Vec<RankState>,
    root: Option<RootInfo>,
}

// SAFETY: a rank's stream, buffers and communicator are used only by that rank's thread
// while the steps run (the runtime's contract for Group), and by the caller's thread
// before and after; ACL binds the device per thread (`enter` / `read` set it).
unsafe impl Sync for NpuGroup<'_> {}

/// `e` prefixed with `whose` device failed.
fn on(whose: String, e: BackendError) -> BackendError {
    match e {
        BackendError::Run(m) => BackendError::Run(format!("{whose}: {m}")),
        other => other,
    }
}

/// `e` as a failure of `rank`'s device, outside the runtime's steps (which name the rank).
fn on_rank(rank: usize, device: u32, e: BackendError) -> BackendError {
    on(format!("rank {rank} (device {device})"), e)
}

/// `e` as a failure of `device` during a step of the runtime.
fn on_device(device: u32, e: BackendError) -> BackendError {
    on(format!("device {device}"), e)
}

impl NpuKernels {
    /// Allocates and fills `rank`'s buffers on `group`.
    fn allocate(
        &self,
        group: &mut NpuGroup<'_>,
        device: u32,
        bufs: &[Vec<u8>],
    ) -> Result<(), BackendError> {
        let acl = self.acl;
        acl.set_device(device)?;
        group.ranks.push(RankState {
            device,
            stream: acl.create_stream()?,
            bufs: Vec::with_capacity(bufs.len()),
            workspace: NO_BUF,
            tiling: NO_BUF,
            uploaded: Mutex::new(None),
            comm: Mutex::new(None),
        });
        // Pushed before allocating so Drop frees whatever was allocated on failure.
        let state = group.ranks.last_mut().expect("just pushed");
        state.workspace = DevBuf {
            ptr: acl.malloc(32)?,
            len: 32,
        };
        state.tiling = DevBuf {
            ptr: acl.malloc(4 * TILING_WORDS)?,
            len: 4 * TILING_WORDS,
        };
        for b in bufs {
            let buf = DevBuf {
                ptr: acl.malloc(b.len())?,
                len: b.len(),
            };
            state.bufs.push(buf);
            acl.upload(buf.ptr, b)?;
        }
        Ok(())
    }
}

impl Kernels for NpuKernels {
    fn group<'a>(
        &'a self,
        initial: Vec<Vec<Vec<u8>>>,
        _names: &[&'static str],
    ) -> Result<Box<dyn Group + 'a>, BackendError> {
        let mut group = NpuGroup {
            k: self,
            ranks: Vec::with_capacity(initial.len()),
            root: None,
        };
        for (rank, bufs) in initial.iter().enumerate() {
            let device = self.devices[rank];
            self.allocate(&mut group, device, bufs)
                .map_err(|e| on_rank(rank, device, e))?;
        }
        if let Some(h) = &self.hccl {
            let device = self.devices[0];
            self.acl
                .set_device(device)
                .and_then(|()| h.root_info())
                .map(|root| group.root = Some(root))
                .map_err(|e| on_rank(0, device, e))?;
        }
        Ok(Box::new(group))
    }
}

impl Group for NpuGroup<'_> {
    fn enter(&self, rank: usize) -> Result<(), BackendError> {
        let r = &self.ranks[rank];
        let joined = self.k.acl.set_device(r.device).and_then(|()| {
            if let (Some(h), Some(root)) = (&self.k.hccl, &self.root) {
                let comm = h.join(self.ranks.len(), root, rank)?;
                *r.comm.lock().unwrap_or_else(PoisonError::into_inner) = Some(comm);
            }
            Ok(())
        });
        joined.map_err(|e| on_device(r.device, e))
    }

    fn launch(
        &self,
        rank: usize,
        launch: &Launch,
        args: &[usize],
        tiling: &Tiling,
    ) -> Result<Option<LaunchCounters>, BackendError> {
        let r = &self.ranks[rank];
        let acl = self.k.acl;
        let words = tiling.to_bytes();
        let mut uploaded = r.uploaded.lock().unwrap_or_else(PoisonError::into_inner);
        match uploaded.as_deref() {
            // before anything is enqueued: nothing on the stream reads the region yet
            None => {
                acl.upload(r.tiling.ptr, &words)?;
                *uploaded = Some(words.to_vec());
            }
            Some(w) if w == words.as_slice() => {}
            Some(_) => {
                return Err(BackendError::Run(
                    "a launch's tiling differs from the run's: the npu backend uploads one per run"
                        .into(),
                ));
            }
        }
        drop(uploaded);
        let mut ptrs: Vec<*mut c_void> = args.iter().map(|&a| r.bufs[a].ptr).collect();
        ptrs.push(r.workspace.ptr);
        ptrs.push(r.tiling.ptr);
        let f = self.k.launchers().get(launch.kernel)?;
        // SAFETY: `ptrs` holds one device pointer per kernel parameter (the runtime checked
        // the count against the kernel), all live allocations of this rank's device.
        let status = unsafe { f(launch.block_dim, r.stream, ptrs.as_mut_ptr()) };
        if status != 0 {
            let call = format!("launching {} on {} blocks", launch.kernel, launch.block_dim);
            return Err(on_device(r.device, acl.error(&call, status)));
        }
        if self.k.sync_each {
            self.finish(rank)?;
        }
        Ok(None)
    }

    fn exchange(
        &self,
        rank: usize,
        ex: &Exchange,
        tp: usize,
        t: usize,
    ) -> Result<(), BackendError> {
        let h = self
            .k
            .hccl
            .as_ref()
            .ok_or_else(|| BackendError::Run("a collective at TP 1".into()))?;
        let r = &self.ranks[rank];
        let comm = (*r.comm.lock().unwrap_or_else(PoisonError::into_inner))
            .ok_or_else(|| BackendError::Run(format!("rank {rank} has no HCCL communicator")))?;
        for round in all_to_all_rounds(ex, rank, tp, t) {
            h.all_to_all_v(
                r.bufs[ex.src].ptr,
                r.bufs[ex.dst].ptr,
                &round,
                comm,
                r.stream,
            )
            .map_err(|e| on_device(r.device, e))?;
        }
        if self.k.sync_each {
            self.finish(rank)?;
        }
        Ok(())
    }

    fn finish(&self, rank: usize) -> Result<(), BackendError> {
        let r = &self.ranks[rank];
        self.k
            .acl
            .synchronize(r.stream, self.k.timeout)
            .map_err(|e| on_device(r.device, e))
    }

    fn read(&self, rank: usize, id: usize) -> Result<Vec<u8>, BackendError> {
        let r = &self.ranks[rank];
        let acl = self.k.acl;
        acl.set_device(r.device)
            .and_then(|()| acl.download(r.bufs[id].ptr, r.bufs[id].len))
            .map_err(|e| on_rank(rank, r.device, e))
    }
}

impl Drop for NpuGroup<'_> {
    fn drop(&mut self) {
        let acl = self.k.acl;
        let mut failures = Vec::new();
        for (rank, r) in self.ranks.iter().enumerate() {
            let mut step = |res: Result<(), BackendError>| {
                if let Err(e) = res {
                    failures.push(on_rank(rank, r.device, e));
                }
            };
            step(acl.set_device(r.device));
            let comm = *r.comm.lock().unwrap_or_else(PoisonError::into_inner);
            if let (Some(h), Some(c)) = (&self.k.hccl, comm) {
                step(h.destroy(c));
            }
            for b in r.bufs.iter().chain([&r.workspace, &r.tiling]) {
                if !b.ptr.is_null() {
                    step(acl.free(b.ptr));
                }
            }
            step(acl.destroy_stream(r.stream));
        }
        report_teardown("freeing a run's buffers", failures);
    }
}

/// `rank`'s HCCL all-to-all calls for a collective: one call per round, a round holding
/// at most one contiguous run per (sender, receiver) pair, in bytes.
pub fn all_to_all_rounds(ex: &Exchange, rank: usize, tp: usize, t: usize) -> Vec<AllToAllV> {
    let all = ex.all(tp, t);
    // The k-th run between a pair goes to round k.
    let mut tagged = Vec::with_capacity(all.len());
    for (i, &(to, x)) in all.iter().enumerate() {
        let k = all[..i]
            .iter()
            .filter(|(o, y)| *o == to && y.from == x.from)
            .count();
        tagged.push((k, to, x));
    }
    let rounds = tagged.iter().map(|(k, _, _)| k + 1).max().unwrap_or(0);
    let rb = ex.row_bytes as u64;
    (0..rounds)
        .map(|round| {
            let mut a = AllToAllV {
                send_counts: vec![0; tp],
                send_displs: vec![0; tp],
                recv_counts: vec![0; tp],
                recv_displs: vec![0; tp],
            };
            for &(k, to, x) in &tagged {
                if k != round {
                    continue;
                }
                if x.from == rank {
                    a.send_counts[to] = x.rows as u64 * rb;
                    a.send_displs[to] = x.src_row as u64 * rb;
                }
                if to == rank {
                    a.recv_counts[x.from] = x.rows as u64 * rb;
                    a.recv_displs[x.from] = x.dst_row as u64 * rb;
                }
            }
            a
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Pattern;

    #[test]
    fn all_to_all_rounds_pair_every_send_with_a_receive() {
        let ex = Exchange {
            pattern: Pattern::GroupAllToAll {
                local_groups: 2,
                src_slab_rows: 16,
                dst_slab_rows: 32,
            },
            src: 0,
            dst: 1,
            row_bytes: 4,
            src_rows: 64,
            dst_rows: 64,
        };
        let (tp, t) = (2, 8);
        let per_rank: Vec<Vec<AllToAllV>> =
            (0..tp).map(|r| all_to_all_rounds(&ex, r, tp, t)).collect();
        // two local groups: two rounds, one run per pair each
        assert!(per_rank.iter().all(|r| r.len() == 2));
        for s in 0..tp {
            for d in 0..tp {
                let rounds = per_rank[s].iter().zip(&per_rank[d]).enumerate();
                for (round, (sender, receiver)) in rounds {
                    assert_eq!(
                        sender.send_counts[d], receiver.recv_counts[s],
                        "round {round}: {s} -> {d}"
                    );
                    assert_eq!(sender.send_counts[d], 8 * 4);
                }
            }
        }
        // rank 1 receives group 2 (round 0) from rank 0's rows 32.. into its rows 0..8
        assert_eq!(per_rank[0][0].send_displs[1], 32 * 4);
        assert_eq!(per_rank[1][0].recv_displs[0], 0);
        assert_eq!(per_rank[1][0].recv_displs[1], 8 * 4);
        // and group 3 in round 1 at rows 32 + r·t
        assert_eq!(per_rank[1][1].recv_displs[1], (32 + 8) * 4);
    }
}
