//! The `npu` backend: the generated kernels built with CANN's toolchain ([`build`]), run on
//! Ascend devices through ACL ([`acl`]), one device per TP rank, with the collectives as
//! HCCL all-to-alls ([`hccl`]). CANN is loaded at run time: the project builds without it,
//! and asking for this backend where it is absent fails with one line saying what is
//! missing ([`toolkit`]).

pub mod acl;
pub mod build;
pub mod hccl;
pub mod toolkit;

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use acl::{Acl, Stream};
use hccl::{AllToAllV, Comm, Hccl, RootInfo};
use toolkit::Toolkit;

use super::{Backend, BackendError, Group, KernelSources, Kernels, LaunchCounters};
use abi::plan::{Kernel, Launch, VariantPlan};
use abi::tiling::TILING_WORDS;

use crate::runtime::{Exchange, Progress, Tiling};

/// Ascend devices, one per TP rank.
#[derive(Debug, Clone)]
pub struct Npu {
    devices: Vec<u32>,
}

impl Npu {
    pub fn new(devices: Vec<u32>) -> Npu {
        Npu { devices }
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
        let lib_path = build::build(&toolkit, plan, kernels, sources, &cache_dir(), progress)?;
        let acl = Acl::load(&acl_path)?;
        acl.init()?;
        let hccl = hccl_path.as_deref().map(Hccl::load).transpose()?;
        let launchers = Launchers::load(&lib_path, kernels)?;
        Ok(Box::new(NpuKernels {
            acl,
            hccl,
            launchers,
            devices: self.devices.clone(),
        }))
    }
}

type LaunchFn = unsafe extern "C" fn(u32, Stream, *mut *mut c_void) -> u32;

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
    acl: Acl,
    hccl: Option<Hccl>,
    launchers: Launchers,
    devices: Vec<u32>,
}

impl Drop for NpuKernels {
    fn drop(&mut self) {
        self.acl.finalize();
    }
}

/// A device allocation and its length.
#[derive(Clone, Copy)]
struct DevBuf {
    ptr: *mut c_void,
    len: usize,
}

/// One rank's device state.
struct RankState {
    device: u32,
    stream: Stream,
    bufs: Vec<DevBuf>,
    workspace: DevBuf,
    tiling: DevBuf,
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
        for (rank, bufs) in initial.into_iter().enumerate() {
            let device = self.devices[rank];
            self.acl.set_device(device)?;
            let stream = self.acl.create_stream()?;
            let mut state = RankState {
                device,
                stream,
                bufs: Vec::with_capacity(bufs.len()),
                workspace: DevBuf {
                    ptr: std::ptr::null_mut(),
                    len: 0,
                },
                tiling: DevBuf {
                    ptr: std::ptr::null_mut(),
                    len: 0,
                },
                comm: Mutex::new(None),
            };
            state.workspace = DevBuf {
                ptr: self.acl.malloc(32)?,
                len: 32,
            };
            state.tiling = DevBuf {
                ptr: self.acl.malloc(4 * TILING_WORDS)?,
                len: 4 * TILING_WORDS,
            };
            // Pushed before uploading so Drop frees whatever was allocated on failure.
            group.ranks.push(state);
            let state = group.ranks.last_mut().expect("just pushed");
            for b in &bufs {
                let buf = DevBuf {
                    ptr: self.acl.malloc(b.len())?,
                    len: b.len(),
                };
                state.bufs.push(buf);
                self.acl.upload(buf.ptr, b)?;
            }
        }
        if let Some(h) = &self.hccl {
            self.acl.set_device(self.devices[0])?;
            group.root = Some(h.root_info()?);
        }
        Ok(Box::new(group))
    }
}

impl Group for NpuGroup<'_> {
    fn enter(&self, rank: usize) -> Result<(), BackendError> {
        let r = &self.ranks[rank];
        self.k.acl.set_device(r.device)?;
        if let (Some(h), Some(root)) = (&self.k.hccl, &self.root) {
            let comm = h.join(self.ranks.len(), root, rank)?;
            *r.comm.lock().unwrap_or_else(PoisonError::into_inner) = Some(comm);
        }
        Ok(())
    }

    fn launch(
        &self,
        rank: usize,
        launch: &Launch,
        args: &[usize],
        tiling: &Tiling,
    ) -> Result<Option<LaunchCounters>, BackendError> {
        let r = &self.ranks[rank];
        let acl = &self.k.acl;
        acl.upload(r.tiling.ptr, &tiling.to_bytes())?;
        let mut ptrs: Vec<*mut c_void> = args.iter().map(|&a| r.bufs[a].ptr).collect();
        ptrs.push(r.workspace.ptr);
        ptrs.push(r.tiling.ptr);
        let f = self.k.launchers.get(launch.kernel)?;
        // SAFETY: `ptrs` holds one device pointer per kernel parameter (the runtime checked
        // the count against the kernel), all live allocations of this rank's device.
        let status = unsafe { f(launch.block_dim, r.stream, ptrs.as_mut_ptr()) };
        if status != 0 {
            return Err(BackendError::Run(format!(
                "launching {} failed with status {status}",
                launch.kernel
            )));
        }
        acl.synchronize(r.stream)?;
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
            )?;
        }
        self.k.acl.synchronize(r.stream)
    }

    fn read(&self, rank: usize, id: usize) -> Result<Vec<u8>, BackendError> {
        let r = &self.ranks[rank];
        self.k.acl.set_device(r.device)?;
        self.k.acl.download(r.bufs[id].ptr, r.bufs[id].len)
    }
}

impl Drop for NpuGroup<'_> {
    fn drop(&mut self) {
        let acl = &self.k.acl;
        for r in &self.ranks {
            if acl.set_device(r.device).is_err() {
                continue;
            }
            if let (Some(h), Some(c)) = (
                &self.k.hccl,
                *r.comm.lock().unwrap_or_else(PoisonError::into_inner),
            ) {
                h.destroy(c);
            }
            for b in r.bufs.iter().chain([&r.workspace, &r.tiling]) {
                if !b.ptr.is_null() {
                    acl.free(b.ptr);
                }
            }
            acl.destroy_stream(r.stream);
            acl.reset_device(r.device);
        }
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
    use crate::runtime::Pattern;

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
