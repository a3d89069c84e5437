//! The `sim` backend: the plan's kernels compiled with the host C++ compiler against the
//! CPU model of Ascend C (harness/sim) into one shared library, cached by content hash;
//! each rank's buffers are host memory, and a collective copies rows between the ranks'
//! buffers.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError, RwLock, RwLockWriteGuard};

use super::l2::L2;
use super::{Backend, BackendError, Group, KernelSources, Kernels, LaunchCounters};
use super::{Exchange, Progress, Tiling, poison};
use crate::kernel_library::{BuildSpec, Checks, CoreMode, GmArg, SimLibrary};
use abi::plan::{Cores, Kernel, Launch, VariantPlan};
use abi::tiling::TILING_WORDS;

/// GM buffers start where aclrtMalloc would put them: on a 64-byte boundary (CANN runtime
/// API, aclrtMalloc: "内存首地址64字节对齐"), so a buffer's bytes fall on the scalar cache's
/// 64-byte lines, which the timing model charges misses by, as on the device.
const GM_ALIGN: usize = 64;

/// The tiling words in a buffer of their own: one line (the attribute takes no constant:
/// GM_ALIGN).
#[repr(C, align(64))]
struct GmLine([u8; 4 * TILING_WORDS]);

/// A rank's GM buffer: its bytes from the first [`GM_ALIGN`]-aligned address of `raw`,
/// which holds GM_ALIGN - 1 bytes more than they.
struct GmBuf {
    raw: Vec<u8>,
    at: usize,
}

impl GmBuf {
    fn new(bytes: &[u8]) -> GmBuf {
        let mut raw = vec![0u8; bytes.len() + GM_ALIGN - 1];
        let at = raw.as_ptr().align_offset(GM_ALIGN);
        raw[at..at + bytes.len()].copy_from_slice(bytes);
        GmBuf { raw, at }
    }

    fn range(&self) -> std::ops::Range<usize> {
        self.at..self.raw.len() - (GM_ALIGN - 1) + self.at
    }

    fn bytes(&self) -> &[u8] {
        &self.raw[self.range()]
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        let r = self.range();
        &mut self.raw[r]
    }
}

/// The CPU model.
#[derive(Debug, Clone, Default)]
pub struct Sim {
    /// Where built libraries are cached (default: the sim builder's).
    pub cache_dir: Option<PathBuf>,
    /// What the model checks (default: everything, the hazard checker included).
    pub checks: Checks,
}

impl Backend for Sim {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn load(
        &self,
        _plan: &VariantPlan,
        kernels: &[Kernel],
        sources: &KernelSources,
        progress: &Progress,
    ) -> Result<Box<dyn Kernels>, BackendError> {
        let mut spec = BuildSpec::new(kernels.iter().map(|k| sources.source(k.name)))
            .include_dir(&sources.include_dir);
        if let Some(dir) = &self.cache_dir {
            spec = spec.cache_dir(dir);
        }
        let lib = SimLibrary::build_noting(&spec, &mut |m| progress.note(m))
            .map_err(|e| BackendError::Build(e.to_string()))?
            .with_checks(self.checks);
        Ok(Box::new(SimKernels { lib }))
    }
}

struct SimKernels {
    lib: SimLibrary,
}

impl Kernels for SimKernels {
    fn group<'a>(
        &'a self,
        initial: Vec<Vec<Vec<u8>>>,
        names: &[&'static str],
    ) -> Result<Box<dyn Group + 'a>, BackendError> {
        let chip = self.lib.chip_timing();
        Ok(Box::new(SimGroup {
            lib: &self.lib,
            names: names.to_vec(),
            l2: (0..initial.len())
                .map(|_| Mutex::new(L2::new(chip.l2_bytes, chip.l2_line_bytes)))
                .collect(),
            ranks: initial
                .into_iter()
                .map(|bufs| {
                    bufs.into_iter()
                        .map(|b| RwLock::new(GmBuf::new(&b)))
                        .collect()
                })
                .collect(),
        }))
    }
}

/// Every rank's buffers. A launch write-locks the buffers it binds (its own rank's only);
/// a collective write-locks the rank's `dst` and read-locks the ranks' `src` one at a time.
struct SimGroup<'a> {
    lib: &'a SimLibrary,
    names: Vec<&'static str>,
    ranks: Vec<Vec<RwLock<GmBuf>>>,
    /// Per rank: what the step's launches left in L2 (the timeline's reads of it are hits).
    l2: Vec<Mutex<L2>>,
}

fn core_mode(c: Cores) -> CoreMode {
    match c {
        Cores::Aiv => CoreMode::Aiv,
        Cores::Aic => CoreMode::Aic,
        Cores::Mix => CoreMode::Mix,
    }
}

impl Group for SimGroup<'_> {
    fn launch(
        &self,
        rank: usize,
        launch: &Launch,
        args: &[usize],
        tiling: &Tiling,
    ) -> Result<Option<LaunchCounters>, BackendError> {
        let bufs = &self.ranks[rank];
        // A buffer bound twice is locked once and passed twice.
        let mut ids: Vec<usize> = Vec::with_capacity(args.len());
        for &a in args {
            if !ids.contains(&a) {
                ids.push(a);
            }
        }
        let mut guards: Vec<RwLockWriteGuard<'_, GmBuf>> = ids
            .iter()
            .map(|&i| bufs[i].write().unwrap_or_else(PoisonError::into_inner))
            .collect();
        let raw: Vec<(*mut u8, usize)> = guards
            .iter_mut()
            .map(|g| {
                let b = g.bytes_mut();
                (b.as_mut_ptr(), b.len())
            })
            .collect();
        let mut workspace = [poison(abi::DType::I8); 32];
        let mut tiling = GmLine(tiling.to_bytes());
        let mut l2 = self.l2[rank].lock().unwrap_or_else(PoisonError::into_inner);
        let mut gm: Vec<GmArg<'_>> = args
            .iter()
            .map(|a| {
                let (ptr, len) = raw[ids.iter().position(|i| i == a).expect("locked above")];
                // SAFETY: the buffer is write-locked by `guards` until after the launch, and
                // no other GmArg aliases it except the same buffer bound twice by the plan.
                unsafe { GmArg::from_raw(self.names[*a], ptr, len) }.warm(l2.warm(*a))
            })
            .collect();
        gm.push(GmArg::new("workspace", &mut workspace));
        gm.push(GmArg::new("tiling", &mut tiling.0));
        let launched = self
            .lib
            .launch_measured(
                launch.kernel,
                core_mode(launch.cores),
                launch.block_dim,
                &mut gm,
            )
            .map_err(|e| BackendError::Run(e.to_string()))?;
        drop(gm);
        drop(guards);
        for (a, lines) in args.iter().zip(launched.lines) {
            l2.touch(*a, lines);
        }
        Ok(Some(LaunchCounters {
            stats: launched.stats,
            args: launched.args,
            time: launched.time,
        }))
    }

    fn exchange(
        &self,
        rank: usize,
        ex: &Exchange,
        tp: usize,
        t: usize,
    ) -> Result<(), BackendError> {
        let mut dst = self.ranks[rank][ex.dst]
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        for x in ex.incoming(rank, tp, t) {
            let n = x.rows * ex.row_bytes;
            let src = self.ranks[x.from][ex.src]
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            let (from, to) = (x.src_row * ex.row_bytes, x.dst_row * ex.row_bytes);
            dst.bytes_mut()[to..to + n].copy_from_slice(&src.bytes()[from..from + n]);
        }
        Ok(())
    }

    fn read(&self, rank: usize, id: usize) -> Result<Vec<u8>, BackendError> {
        Ok(self.ranks[rank][id]
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .bytes()
            .to_vec())
    }
}
