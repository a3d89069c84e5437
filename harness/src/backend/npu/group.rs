//! One run's device state on the `npu` backend: per rank a stream, the buffers, the tiling
//! region, events and (TP > 1) a communicator, driven by the rank's thread.
//!
//! Every mode enqueues the rank's whole step before waiting on it. Stream order (the
//! default) records an event before the first step and after each step, so a failed
//! synchronisation names the last step that completed and each step's device time can be
//! read back. Graph mode captures the first run's step into a graph (ACL model capture)
//! and replays it in later runs on the same buffers, which the kernels keep between runs
//! ([`Resident`]): a replayed run uploads its inputs and tiling words, replays, and
//! synchronises — no launch calls at all.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::acl::{Acl, Event, Graph, Stream};
use super::hccl::{Comm, Hccl, RootInfo, all_to_all_rounds};
use super::launchers::{LaunchFn, Launchers};
use crate::backend::{BackendError, DeviceTime, Exchange, Group, LaunchCounters, StepTime, Tiling};
use abi::plan::Launch;
use abi::tiling::TILING_WORDS;

/// A device allocation and its length.
#[derive(Clone, Copy)]
pub(super) struct DevBuf {
    pub(super) ptr: *mut c_void,
    pub(super) len: usize,
}

/// What the ranks' steps use of the loaded kernels.
pub(super) struct Context {
    pub(super) acl: &'static Acl,
    pub(super) hccl: Option<Hccl>,
    /// `None` only while dropping: the kernel library closes before the devices reset.
    pub(super) launchers: Option<Launchers>,
    pub(super) timeout: Duration,
    pub(super) sync_each: bool,
    pub(super) graph: bool,
    /// Graph mode: the last run's ranks, kept for the next run's replay.
    pub(super) resident: Mutex<Resident>,
}

impl Context {
    fn launcher(&self, kernel: &str) -> Result<LaunchFn, BackendError> {
        self.launchers
            .as_ref()
            .expect("closed only on drop")
            .get(kernel)
    }

    /// Keeps a successful graph run's ranks for the next run.
    fn keep(&self, ranks: Resident) {
        let old = std::mem::replace(
            &mut *self.resident.lock().unwrap_or_else(PoisonError::into_inner),
            ranks,
        );
        self.release(old, "freeing a replaced graph's buffers");
    }

    /// Frees `ranks`, reporting what failed.
    pub(super) fn release(&self, ranks: Vec<RankState>, what: &str) {
        let mut failures = Vec::new();
        for (rank, r) in ranks.into_iter().enumerate() {
            let device = r.device;
            let mut mine = Vec::new();
            r.release(self.acl, self.hccl.as_ref(), &mut mine);
            failures.extend(mine.into_iter().map(|e| on_rank(rank, device, e)));
        }
        report_teardown(what, failures);
    }
}

/// Reports teardown failures, which have no caller to return to.
pub(super) fn report_teardown(what: &str, failures: Vec<BackendError>) {
    for e in failures {
        eprintln!("backend npu: {what}: {e}");
    }
}

/// A captured step: its graph and the steps it holds, labelled as [`RankRun::label`] does.
struct Captured {
    graph: Graph,
    steps: Vec<String>,
}

/// What a rank's thread changes during a run.
#[derive(Default)]
struct RankRun {
    /// The tiling words on the device (uploaded before the first step that needs them).
    tiling: Option<Vec<u8>>,
    /// This run's steps in the order enqueued (or, replaying, checked against the graph).
    steps: Vec<String>,
    /// Stream order: `events[0]` before the first step, `events[i]` after step i. Graph
    /// mode: before and after the replay. Created on first use and kept.
    events: Vec<Event>,
    capturing: bool,
    graph: Option<Captured>,
    comm: Option<Comm>,
}

impl RankRun {
    /// The next step's name in messages: `launch 3 (stage kernel)` (the rank's third
    /// launch), or `collective` for `None`.
    fn label(&self, launch: Option<&Launch>) -> String {
        match launch {
            Some(l) => {
                let n = self
                    .steps
                    .iter()
                    .filter(|s| s.starts_with("launch"))
                    .count()
                    + 1;
                format!("launch {n} ({} {})", l.stage, l.kernel)
            }
            None => "collective".into(),
        }
    }

    fn event(&mut self, acl: &Acl, i: usize) -> Result<Event, BackendError> {
        while self.events.len() <= i {
            self.events.push(acl.create_event()?);
        }
        Ok(self.events[i])
    }
}

/// One rank's device state.
pub(super) struct RankState {
    pub(super) device: u32,
    pub(super) stream: Stream,
    pub(super) bufs: Vec<DevBuf>,
    pub(super) workspace: DevBuf,
    pub(super) tiling: DevBuf,
    run: Mutex<RankRun>,
}

// SAFETY: the handles are ACL's and HCCL's, usable from any thread that binds the device
// (every use below calls set_device first or runs on the rank's thread after `enter`).
unsafe impl Send for RankState {}

/// What graph mode keeps between runs: the ranks' buffers, streams, communicators and
/// captured graphs.
pub(super) type Resident = Vec<RankState>;

impl RankState {
    /// `rank`'s stream and buffers with these contents, on `device`.
    pub(super) fn allocate(
        acl: &Acl,
        device: u32,
        bufs: &[Vec<u8>],
        into: &mut Vec<RankState>,
    ) -> Result<(), BackendError> {
        acl.set_device(device)?;
        let none = DevBuf {
            ptr: std::ptr::null_mut(),
            len: 0,
        };
        into.push(RankState {
            device,
            stream: acl.create_stream()?,
            bufs: Vec::with_capacity(bufs.len()),
            workspace: none,
            tiling: none,
            run: Mutex::new(RankRun::default()),
        });
        // Pushed before allocating so a release frees whatever was allocated on failure.
        let state = into.last_mut().expect("just pushed");
        let alloc = |len: usize| -> Result<DevBuf, BackendError> {
            Ok(DevBuf {
                ptr: acl.malloc(len)?,
                len,
            })
        };
        state.workspace = alloc(32)?;
        state.tiling = alloc(4 * TILING_WORDS)?;
        for b in bufs {
            let buf = alloc(b.len())?;
            state.bufs.push(buf);
            acl.upload(buf.ptr, b)?;
        }
        Ok(())
    }

    /// Whether this rank's buffers have exactly these lengths (a resident rank can take them).
    pub(super) fn fits(&self, bufs: &[Vec<u8>]) -> bool {
        self.bufs.len() == bufs.len() && self.bufs.iter().zip(bufs).all(|(d, h)| d.len == h.len())
    }

    /// Uploads a new run's initial contents into the buffers (a resident rank's next run).
    pub(super) fn refill(&self, acl: &Acl, bufs: &[Vec<u8>]) -> Result<(), BackendError> {
        acl.set_device(self.device)?;
        for (d, h) in self.bufs.iter().zip(bufs) {
            acl.upload(d.ptr, h)?;
        }
        let mut run = self.lock();
        run.steps.clear();
        run.capturing = false;
        Ok(())
    }

    pub(super) fn has_comm(&self) -> bool {
        self.lock().comm.is_some()
    }

    fn lock(&self) -> MutexGuard<'_, RankRun> {
        self.run.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Frees everything of this rank, pushing what failed onto `failures`.
    pub(super) fn release(self, acl: &Acl, hccl: Option<&Hccl>, failures: &mut Vec<BackendError>) {
        let mut step = |res: Result<(), BackendError>| {
            if let Err(e) = res {
                failures.push(e);
            }
        };
        step(acl.set_device(self.device));
        let run = self
            .run
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        if let (Some(h), Some(c)) = (hccl, run.comm) {
            step(h.destroy(c));
        }
        if run.capturing {
            // a run failed mid-capture: end it so the stream can go
            step(
                acl.capture_end(self.stream)
                    .and_then(|g| acl.destroy_graph(g)),
            );
        }
        if let Some(c) = run.graph {
            step(acl.destroy_graph(c.graph));
        }
        for e in run.events {
            step(acl.destroy_event(e));
        }
        for b in self.bufs.iter().chain([&self.workspace, &self.tiling]) {
            if !b.ptr.is_null() {
                step(acl.free(b.ptr));
            }
        }
        step(acl.destroy_stream(self.stream));
    }
}

pub(super) struct NpuGroup<'a> {
    pub(super) cx: &'a Context,
    pub(super) ranks: Vec<RankState>,
    pub(super) root: Option<RootInfo>,
    /// Set by any failed call: a failed run's state is released, never kept for a replay.
    pub(super) failed: AtomicBool,
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
pub(super) fn on_rank(rank: usize, device: u32, e: BackendError) -> BackendError {
    on(format!("rank {rank} (device {device})"), e)
}

/// `e` as a failure of `device` during a step of the runtime.
fn on_device(device: u32, e: BackendError) -> BackendError {
    on(format!("device {device}"), e)
}

/// `e` with `what` the caller knows about it appended.
fn noting(e: BackendError, what: impl std::fmt::Display) -> BackendError {
    match e {
        BackendError::Run(m) => BackendError::Run(format!("{m}; {what}")),
        other => other,
    }
}

impl NpuGroup<'_> {
    /// `res`, remembering a failure.
    fn noted<T>(&self, res: Result<T, BackendError>) -> Result<T, BackendError> {
        if res.is_err() {
            self.failed.store(true, Ordering::Relaxed);
        }
        res
    }

    /// Runs `enqueue` as the rank's next step `label`: skipped when replaying (the graph
    /// holds it), captured in graph mode's first run, else enqueued between two events.
    fn step(
        &self,
        rank: usize,
        run: &mut RankRun,
        label: String,
        enqueue: impl FnOnce() -> Result<(), BackendError>,
    ) -> Result<(), BackendError> {
        let (acl, r) = (self.cx.acl, &self.ranks[rank]);
        if let Some(c) = &run.graph {
            let n = run.steps.len();
            if c.steps.get(n) != Some(&label) {
                return Err(BackendError::Run(format!(
                    "step {} is {label}, but the captured graph has {} there: graph replay needs the same steps every run",
                    n + 1,
                    c.steps.get(n).map_or("nothing", String::as_str)
                )));
            }
            run.steps.push(label);
            return Ok(());
        }
        if self.cx.graph {
            if !run.capturing {
                acl.capture_begin(r.stream)?;
                run.capturing = true;
            }
        } else if run.steps.is_empty() {
            acl.record(run.event(acl, 0)?, r.stream)?;
        }
        enqueue()?;
        run.steps.push(label);
        if !self.cx.graph {
            let n = run.steps.len();
            acl.record(run.event(acl, n)?, r.stream)?;
            if self.cx.sync_each {
                acl.synchronize(r.stream, self.cx.timeout)?;
            }
        }
        Ok(())
    }

    /// The tiling words on the device before the run's first step; one set per run.
    fn tiling(&self, rank: usize, run: &mut RankRun, tiling: &Tiling) -> Result<(), BackendError> {
        let words = tiling.to_bytes();
        if run.tiling.as_deref() == Some(words.as_slice()) {
            return Ok(());
        }
        if !run.steps.is_empty() {
            return Err(BackendError::Run(
                "a launch's tiling differs from the run's: the npu backend uploads one per run"
                    .into(),
            ));
        }
        // before anything of this run is enqueued: nothing on the stream reads the region
        self.cx.acl.upload(self.ranks[rank].tiling.ptr, &words)?;
        run.tiling = Some(words.to_vec());
        Ok(())
    }

    /// Names, after a failed synchronisation, the steps the stream completed.
    fn completed(&self, run: &RankRun) -> String {
        let acl = self.cx.acl;
        let done = (1..=run.steps.len())
            .take_while(|&i| {
                run.events
                    .get(i)
                    .is_some_and(|&e| acl.completed(e).unwrap_or(false))
            })
            .count();
        let last = match done {
            0 => "none".to_string(),
            n => run.steps[n - 1].clone(),
        };
        let first = run.steps.get(done).map_or("–", String::as_str);
        format!(
            "the stream completed {done} of {} steps (last completed: {last}; failed or not run: {first})",
            run.steps.len()
        )
    }
}

impl Group for NpuGroup<'_> {
    fn enter(&self, rank: usize) -> Result<(), BackendError> {
        let r = &self.ranks[rank];
        let joined = self.cx.acl.set_device(r.device).and_then(|()| {
            let mut run = r.lock();
            if let (Some(h), Some(root), None) = (&self.cx.hccl, &self.root, run.comm) {
                run.comm = Some(h.join(self.ranks.len(), root, rank)?);
            }
            Ok(())
        });
        self.noted(joined.map_err(|e| on_device(r.device, e)))
    }

    fn launch(
        &self,
        rank: usize,
        launch: &Launch,
        args: &[usize],
        tiling: &Tiling,
    ) -> Result<Option<LaunchCounters>, BackendError> {
        let r = &self.ranks[rank];
        let mut run = r.lock();
        let res = self.tiling(rank, &mut run, tiling).and_then(|()| {
            let label = run.label(Some(launch));
            self.step(rank, &mut run, label, || {
                let mut ptrs: Vec<*mut c_void> = args.iter().map(|&a| r.bufs[a].ptr).collect();
                ptrs.push(r.workspace.ptr);
                ptrs.push(r.tiling.ptr);
                let f = self.cx.launcher(launch.kernel)?;
                // SAFETY: `ptrs` holds one device pointer per kernel parameter (the runtime
                // checked the count against the kernel), all live allocations of this
                // rank's device.
                let status = unsafe { f(launch.block_dim, r.stream, ptrs.as_mut_ptr()) };
                if status != 0 {
                    let call =
                        format!("launching {} on {} blocks", launch.kernel, launch.block_dim);
                    return Err(self.cx.acl.error(&call, status));
                }
                Ok(())
            })
        });
        self.noted(res.map(|()| None).map_err(|e| on_device(r.device, e)))
    }

    fn exchange(
        &self,
        rank: usize,
        ex: &Exchange,
        tp: usize,
        t: usize,
    ) -> Result<(), BackendError> {
        let r = &self.ranks[rank];
        let mut run = r.lock();
        let res = (|| {
            let h = self
                .cx
                .hccl
                .as_ref()
                .ok_or_else(|| BackendError::Run("a collective at TP 1".into()))?;
            let comm = run.comm.ok_or_else(|| {
                BackendError::Run(format!("rank {rank} has no HCCL communicator"))
            })?;
            let label = run.label(None);
            self.step(rank, &mut run, label, || {
                for round in all_to_all_rounds(ex, rank, tp, t) {
                    h.all_to_all_v(
                        r.bufs[ex.src].ptr,
                        r.bufs[ex.dst].ptr,
                        &round,
                        comm,
                        r.stream,
                    )?;
                }
                Ok(())
            })
        })();
        self.noted(res.map_err(|e| on_device(r.device, e)))
    }

    fn finish(&self, rank: usize) -> Result<(), BackendError> {
        let (acl, r) = (self.cx.acl, &self.ranks[rank]);
        let mut run = r.lock();
        let res = (|| {
            if !self.cx.graph {
                return acl
                    .synchronize(r.stream, self.cx.timeout)
                    .map_err(|e| noting(e, self.completed(&run)));
            }
            if run.capturing {
                let graph = acl.capture_end(r.stream)?;
                run.capturing = false;
                let steps = run.steps.clone();
                run.graph = Some(Captured { graph, steps });
            }
            let Some(c) = run.graph.as_ref() else {
                // a run without steps captured nothing
                return acl.synchronize(r.stream, self.cx.timeout);
            };
            let (graph, held) = (c.graph, c.steps.len());
            if run.steps.len() != held {
                return Err(BackendError::Run(format!(
                    "the run made {} steps; its captured graph holds {held}",
                    run.steps.len()
                )));
            }
            acl.record(run.event(acl, 0)?, r.stream)?;
            acl.replay(graph, r.stream)?;
            acl.record(run.event(acl, 1)?, r.stream)?;
            acl.synchronize(r.stream, self.cx.timeout).map_err(|e| {
                noting(
                    e,
                    format!(
                        "in the replay of the captured graph of {held} steps (run without --graph to name the step)"
                    ),
                )
            })
        })();
        self.noted(res.map_err(|e| on_device(r.device, e)))
    }

    fn measured(&self, rank: usize) -> Result<Option<DeviceTime>, BackendError> {
        let (acl, r) = (self.cx.acl, &self.ranks[rank]);
        let run = r.lock();
        let read = || -> Result<Option<DeviceTime>, BackendError> {
            if run.steps.is_empty() {
                return Ok(None);
            }
            // every event's time after the first, each read once
            let last = if self.cx.graph { 1 } else { run.steps.len() };
            let at = (0..=last)
                .map(|i| acl.elapsed(run.events[0], run.events[i]))
                .collect::<Result<Vec<_>, BackendError>>()?;
            let steps = (!self.cx.graph).then(|| {
                at.windows(2)
                    .map(|w| StepTime {
                        start: w[0],
                        time: w[1].saturating_sub(w[0]),
                    })
                    .collect()
            });
            Ok(Some(DeviceTime {
                total: at[last],
                steps,
            }))
        };
        self.noted(read().map_err(|e| on_device(r.device, e)))
    }

    fn read(&self, rank: usize, id: usize) -> Result<Vec<u8>, BackendError> {
        let (acl, r) = (self.cx.acl, &self.ranks[rank]);
        let res = acl
            .set_device(r.device)
            .and_then(|()| acl.download(r.bufs[id].ptr, r.bufs[id].len))
            .map_err(|e| on_rank(rank, r.device, e));
        self.noted(res)
    }
}

impl Drop for NpuGroup<'_> {
    fn drop(&mut self) {
        let ranks = std::mem::take(&mut self.ranks);
        if self.cx.graph && !*self.failed.get_mut() {
            // kept for the next run's replay
            self.cx.keep(ranks);
        } else {
            self.cx.release(ranks, "freeing a run's buffers");
        }
    }
}
