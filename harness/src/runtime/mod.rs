//! Executes a generated launch plan ([`abi::plan::VariantPlan`]) on a backend.
//!
//! [`Runtime::prepare`] checks the plan can run (every stage has kernels, every launch
//! binds declared buffers, the kernel sources exist) and builds the kernel library once
//! from the plan's kernel list. [`Runtime::run`] then executes the layer on a case's
//! inputs (reference names, `[tp]`-stacked at TP > 1):
//!
//! 1. binds the runtime axes (`t`, `nb`, …) from the inputs' shapes and derives each
//!    rank's tiling words;
//! 2. gives every rank its buffers: its slice of each input, every output and workspace
//!    at capacity filled with 0xFF (NaN in floats);
//! 3. runs one thread per TP rank; each executes the plan's steps in order, launching
//!    kernels, and meets the other ranks at each collective, which moves rows between the
//!    ranks' workspaces (see [`crate::backend::Exchange`]);
//! 4. reads the outputs (and any probed workspaces) back at their runtime extent, noting
//!    any output written beyond it.
//!
//! Stage tests run single stages instead: [`Runtime::prepare_stages`] builds only the
//! kernels those stages launch, and [`Runtime::run_stages`] executes their launches on one
//! rank with the caller's tensors and tiling words, through the same steps, buffers and
//! backend as a layer run.

mod buffers;
mod collectives;
mod error;
mod record;
mod rendezvous;
mod tiling;

pub use buffers::{Collected, Extents, Layout, Role};
pub use error::RuntimeError;
pub use record::{RunRecord, StageTime, StepKind, StepRecord};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::backend::{
    Backend, BackendError, Exchange, Group, KernelSources, Kernels, Progress, Tiling, Transfer,
};
use abi::plan::{Kernel, Launch, Step, VariantPlan};
use rendezvous::{Aborted, Rendezvous};
use tensor::{Tensor, TensorMap};

/// A plan step with its buffer ids resolved.
#[derive(Debug, Clone)]
enum Resolved {
    Launch {
        launch: &'static Launch,
        kernel: &'static Kernel,
        args: Vec<usize>,
        /// 1-based position among its stage's launches, and their count.
        nth: usize,
        of: usize,
    },
    Exchange(Exchange),
}

/// What one run produced.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// Outputs at their runtime extent and the updated pools, stacked like the inputs.
    pub outputs: TensorMap,
    /// The workspaces named in [`RuntimeOptions::probes`], at their runtime extent and
    /// stacked like the outputs.
    pub probes: TensorMap,
    /// Outputs written beyond their runtime extent (a kernel bug), one line each.
    pub stray: Vec<String>,
    pub record: RunRecord,
}

/// What a run of single stages produced ([`Runtime::run_stages`]).
#[derive(Debug, Clone)]
pub struct StageOutput {
    /// Every buffer the launches bind, after the run: the caller's tensors at the shapes
    /// they were given, every other buffer at capacity.
    pub tensors: TensorMap,
    /// The launches in plan order, with the sim's counters.
    pub steps: Vec<StepRecord>,
}

/// Options of [`Runtime::prepare`].
#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    pub progress: Progress,
    /// Workspaces [`Runtime::run`] reads back besides the outputs: intermediates a
    /// comparator needs (the CSA's top-k, see `golden::compare::layer_probes`).
    pub probes: Vec<&'static str>,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions {
            progress: Progress::quiet(),
            probes: Vec::new(),
        }
    }
}

/// A plan ready to run: its steps resolved and its kernels built.
pub struct Runtime {
    plan: &'static VariantPlan,
    layout: Layout,
    /// The steps this runtime executes, each with its index in the plan's steps: all of
    /// them, or the launches of the stages given to [`Runtime::prepare_stages`].
    steps: Vec<(usize, Resolved)>,
    kernels: Box<dyn Kernels>,
    options: RuntimeOptions,
}

impl Runtime {
    /// The whole layer: every step, every kernel of the plan.
    pub fn prepare(
        plan: &'static VariantPlan,
        backend: &dyn Backend,
        sources: &KernelSources,
        options: RuntimeOptions,
    ) -> Result<Runtime, RuntimeError> {
        if !plan.missing.is_empty() {
            return Err(RuntimeError::MissingStages {
                variant: plan.name(),
                stages: plan.missing.to_vec(),
            });
        }
        backend.available()?;
        let layout = Layout::of(plan)?;
        let steps = resolve(plan, &layout)?.into_iter().enumerate().collect();
        Runtime::load(plan, backend, sources, options, layout, steps, plan.kernels)
    }

    /// The kernel launches of `stages` only, in plan order, building only their kernels
    /// (for [`Runtime::run_stages`]). A collective step of one of the stages is left out
    /// (a stage run is one rank; its caller places the rows the collective would move); a
    /// stage without launches is refused.
    pub fn prepare_stages(
        plan: &'static VariantPlan,
        backend: &dyn Backend,
        sources: &KernelSources,
        stages: &[&str],
        options: RuntimeOptions,
    ) -> Result<Runtime, RuntimeError> {
        let missing: Vec<&'static str> = plan
            .missing
            .iter()
            .copied()
            .filter(|m| stages.contains(m))
            .collect();
        if !missing.is_empty() {
            return Err(RuntimeError::MissingStages {
                variant: plan.name(),
                stages: missing,
            });
        }
        backend.available()?;
        let layout = Layout::of(plan)?;
        // Every step is resolved, so a stage run checks the same plan a layer run does.
        let steps: Vec<(usize, Resolved)> = resolve(plan, &layout)?
            .into_iter()
            .enumerate()
            .filter(|(_, r)| {
                matches!(r, Resolved::Launch { launch, .. } if stages.iter().any(|s| launch.serves(s)))
            })
            .collect();
        let mut kernels: Vec<Kernel> = Vec::new();
        for (_, r) in &steps {
            if let Resolved::Launch { kernel, .. } = r
                && !kernels.contains(kernel)
            {
                kernels.push(**kernel);
            }
        }
        for stage in stages {
            let launched = steps
                .iter()
                .any(|(_, r)| matches!(r, Resolved::Launch { launch, .. } if launch.serves(stage)));
            if !launched {
                return Err(RuntimeError::Stages(format!(
                    "{}: stage `{stage}` launches no kernels (a collective, or not a stage of the plan)",
                    plan.name()
                )));
            }
        }
        Runtime::load(plan, backend, sources, options, layout, steps, &kernels)
    }

    /// Checks `kernels`' sources exist and builds them.
    fn load(
        plan: &'static VariantPlan,
        backend: &dyn Backend,
        sources: &KernelSources,
        options: RuntimeOptions,
        layout: Layout,
        steps: Vec<(usize, Resolved)>,
        kernels: &[Kernel],
    ) -> Result<Runtime, RuntimeError> {
        for k in kernels {
            let path = sources.source(k.name);
            if !path.is_file() {
                return Err(RuntimeError::Sources(format!(
                    "{}: kernel source {} does not exist; run `cargo xtask gen`",
                    plan.name(),
                    path.display()
                )));
            }
        }
        let started = Instant::now();
        options.progress.building(kernels.len(), backend.name());
        let kernels = backend.load(plan, kernels, sources, &options.progress)?;
        options.progress.built(started.elapsed());
        Ok(Runtime {
            plan,
            layout,
            steps,
            kernels,
            options,
        })
    }

    pub fn plan(&self) -> &'static VariantPlan {
        self.plan
    }

    /// Runs the layer once on `inputs` (reference names, `[tp]`-stacked at TP > 1).
    pub fn run(&self, inputs: &TensorMap) -> Result<RunOutput, RuntimeError> {
        let plan = self.plan;
        let tp = plan.abi.tp;
        let setup_start = Instant::now();
        let extents = Extents::bind(plan, &self.layout, inputs)?;
        let t = extents.t();
        for (_, s) in &self.steps {
            if let Resolved::Exchange(ex) = s {
                ex.check(tp, t).map_err(RuntimeError::Inputs)?;
            }
        }
        let initial = (0..tp)
            .map(|rank| buffers::initial(plan, &self.layout, inputs, rank))
            .collect::<Result<Vec<_>, _>>()?;
        let names: Vec<&'static str> = (0..self.layout.len())
            .map(|i| self.layout.spec(i).decl.name)
            .collect();
        let group = self.kernels.group(initial, &names)?;
        // Every rank's kernels see the same extents: ranks differ only in their buffers.
        let tiling = Tiling::new(&extents, tp);
        let setup = setup_start.elapsed();

        let launches = self
            .steps
            .iter()
            .filter(|(_, s)| matches!(s, Resolved::Launch { .. }))
            .count();
        self.options.progress.run_started(launches * tp);
        let meet = Rendezvous::new(tp);
        // The order ranks failed in: the first failure is the cause, later ones (a peer
        // timing out in a collective the failed rank never joined) are its consequences.
        let failures = AtomicUsize::new(0);
        let start = Instant::now();
        type RankResult = Result<(Vec<StepRecord>, Option<Duration>), RankFailure>;
        let results: Vec<(usize, RankResult)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..tp)
                .map(|rank| {
                    let (group, meet, tiling) = (&*group, &meet, &tiling);
                    let failures = &failures;
                    s.spawn(move || {
                        let _guard = AbortOnPanic(meet);
                        let out = self.rank_steps(group, meet, rank, tiling, t, start);
                        let mut order = usize::MAX;
                        if out.is_err() {
                            order = failures.fetch_add(1, Ordering::SeqCst);
                            meet.abort();
                        }
                        (order, out)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or((0, Err(RankFailure::Panicked))))
                .collect()
        });
        let execute = start.elapsed();
        self.options.progress.run_finished();
        let first = results
            .iter()
            .filter(|(_, r)| matches!(r, Err(RankFailure::Error(_))))
            .map(|(order, _)| *order)
            .min();
        let mut records = Vec::new();
        let mut device: Option<Duration> = None;
        let mut aborted = false;
        for (rank, (order, r)) in results.into_iter().enumerate() {
            match r {
                Ok((steps, measured)) => {
                    records.extend(steps);
                    device = device.max(measured);
                }
                Err(RankFailure::Error(e)) if Some(order) == first => return Err(e),
                Err(RankFailure::Error(_)) => {}
                Err(RankFailure::Aborted) => aborted = true,
                Err(RankFailure::Panicked) => {
                    return Err(RuntimeError::Step {
                        rank,
                        step: 0,
                        what: "rank thread".into(),
                        message: "panicked".into(),
                    });
                }
            }
        }
        if aborted {
            return Err(RuntimeError::Plan(
                "a rank left a collective without an error".into(),
            ));
        }

        let read_start = Instant::now();
        let results = self.layout.results(&self.options.probes)?;
        let per_rank = (0..tp)
            .map(|rank| {
                results
                    .iter()
                    .map(|&id| Ok((id, group.read(rank, id)?)))
                    .collect::<Result<Vec<_>, BackendError>>()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let collected = buffers::collect(plan, &self.layout, &extents, &results, per_rank)?;
        let readback = read_start.elapsed();
        Ok(RunOutput {
            outputs: collected.outputs,
            probes: collected.probes,
            stray: collected.stray,
            record: RunRecord {
                tp,
                steps: records,
                setup,
                execute,
                readback,
                device,
            },
        })
    }

    /// Runs the prepared launches in plan order on one rank with `tensors` (ABI or
    /// workspace names, per-rank shapes; a runtime axis may be below its capacity, so a
    /// kernel that reads past it traps) and the given tiling words. Every other buffer the
    /// launches bind is allocated at capacity and poisoned, as in a layer run. Collectives
    /// are refused: they need every rank.
    pub fn run_stages(
        &self,
        tensors: &TensorMap,
        tiling: &Tiling,
    ) -> Result<StageOutput, RuntimeError> {
        let mut ids: Vec<usize> = Vec::new();
        for (i, s) in &self.steps {
            let Resolved::Launch { args, .. } = s else {
                return Err(RuntimeError::Stages(format!(
                    "{}: step {i} ({}) is a collective, which a run on one rank cannot execute",
                    self.plan.name(),
                    self.plan.steps[*i].stage()
                )));
            };
            for a in args {
                if !ids.contains(a) {
                    ids.push(*a);
                }
            }
        }
        let buffers = buffers::for_stages(self.plan, &self.layout, &ids, tensors)?;
        let names: Vec<&'static str> = (0..self.layout.len())
            .map(|i| self.layout.spec(i).decl.name)
            .collect();
        let group = self.kernels.group(vec![buffers.initial], &names)?;
        let (steps, _) = self
            .rank_steps(&*group, &Rendezvous::new(1), 0, tiling, 0, Instant::now())
            .map_err(|f| match f {
                RankFailure::Error(e) => e,
                RankFailure::Aborted | RankFailure::Panicked => {
                    unreachable!("one rank without collectives meets no other rank")
                }
            })?;
        let mut out = TensorMap::new();
        for (&id, shape) in ids.iter().zip(buffers.shapes) {
            let decl = self.layout.spec(id).decl;
            let tensor = Tensor::from_le_bytes(decl.dtype, shape, &group.read(0, id)?)
                .map_err(|e| RuntimeError::Plan(format!("{}: {e}", decl.name)))?;
            out.insert(decl.name, tensor);
        }
        Ok(StageOutput {
            tensors: out,
            steps,
        })
    }

    /// One rank's pass over the steps: their records and the rank's device time.
    fn rank_steps(
        &self,
        group: &dyn Group,
        meet: &Rendezvous,
        rank: usize,
        tiling: &Tiling,
        t: usize,
        start: Instant,
    ) -> Result<(Vec<StepRecord>, Option<Duration>), RankFailure> {
        let tp = self.plan.abi.tp;
        let fail = |step: usize, what: String, e: BackendError| {
            RankFailure::Error(RuntimeError::Step {
                rank,
                step,
                what,
                message: e.to_string(),
            })
        };
        group
            .enter(rank)
            .map_err(|e| fail(0, "device setup".into(), e))?;
        let mut out = Vec::with_capacity(self.steps.len());
        for &(i, ref resolved) in &self.steps {
            let step = &self.plan.steps[i];
            let begin = start.elapsed();
            let kind = match resolved {
                Resolved::Launch {
                    launch,
                    args,
                    nth,
                    of,
                    ..
                } => {
                    self.options
                        .progress
                        .launch(rank, launch.stage, *nth, *of, launch.kernel);
                    let counters = group
                        .launch(rank, launch, args, tiling)
                        .map_err(|e| fail(i, format!("{} {}", launch.stage, launch.kernel), e))?;
                    StepKind::Launch {
                        kernel: launch.kernel,
                        block_dim: launch.block_dim,
                        counters,
                    }
                }
                Resolved::Exchange(ex) => {
                    meet.wait().map_err(|Aborted| RankFailure::Aborted)?;
                    group
                        .exchange(rank, ex, tp, t)
                        .map_err(|e| fail(i, step.stage().into(), e))?;
                    meet.wait().map_err(|Aborted| RankFailure::Aborted)?;
                    let incoming = ex.incoming(rank, tp, t);
                    let bytes = |x: &Transfer| (x.rows * ex.row_bytes) as u64;
                    StepKind::Exchange {
                        bytes: incoming.iter().map(bytes).sum(),
                        cross_rank_bytes: incoming
                            .iter()
                            .filter(|x| x.from != rank)
                            .map(bytes)
                            .sum(),
                    }
                }
            };
            out.push(StepRecord {
                rank,
                step: i,
                stage: step.stage(),
                kind,
                start: begin,
                end: start.elapsed(),
                device: None,
            });
        }
        let last = self.steps.last().map_or(0, |(i, _)| *i);
        group
            .finish(rank)
            .map_err(|e| fail(last, "the stream after the last step".into(), e))?;
        let measured = group
            .measured(rank)
            .map_err(|e| fail(last, "reading the device's times".into(), e))?;
        let Some(measured) = measured else {
            return Ok((out, None));
        };
        if let Some(steps) = measured.steps {
            for (record, time) in out.iter_mut().zip(steps) {
                record.device = Some(time);
            }
        }
        Ok((out, Some(measured.total)))
    }
}

/// Releases the other ranks from their collectives if this rank's thread panics.
struct AbortOnPanic<'a>(&'a Rendezvous);

impl Drop for AbortOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.abort();
        }
    }
}

enum RankFailure {
    Error(RuntimeError),
    /// Released from a collective because another rank failed.
    Aborted,
    Panicked,
}

/// Resolves every step's buffer names to ids and checks launches against their kernels.
fn resolve(plan: &'static VariantPlan, layout: &Layout) -> Result<Vec<Resolved>, RuntimeError> {
    let bad = |what: String| RuntimeError::Plan(format!("{}: {what}", plan.name()));
    let launches_of = |stage: &str| {
        plan.steps
            .iter()
            .filter(|s| matches!(s, Step::Launch(l) if l.stage == stage))
            .count()
    };
    let mut seen: Vec<&str> = Vec::new();
    plan.steps
        .iter()
        .map(|step| {
            if let Some(ex) = collectives::resolve(plan, layout, step)? {
                return Ok(Resolved::Exchange(ex));
            }
            let Step::Launch(launch) = step else {
                unreachable!("every collective resolves to an exchange")
            };
            let kernel = plan
                .kernel(launch.kernel)
                .ok_or_else(|| bad(format!("launch of unknown kernel {}", launch.kernel)))?;
            if kernel.args.len() != launch.args.len() || kernel.cores != launch.cores {
                return Err(bad(format!(
                    "launch of {} binds {} tensors on {:?} cores; the kernel takes {} on {:?}",
                    kernel.name,
                    launch.args.len(),
                    launch.cores,
                    kernel.args.len(),
                    kernel.cores
                )));
            }
            let args = launch
                .args
                .iter()
                .map(|a| {
                    layout.id(a).ok_or_else(|| {
                        bad(format!(
                            "{} binds `{a}`, which is neither an ABI tensor nor a workspace",
                            launch.kernel
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            seen.push(launch.stage);
            Ok(Resolved::Launch {
                launch,
                kernel,
                args,
                nth: seen.iter().filter(|s| **s == launch.stage).count(),
                of: launches_of(launch.stage),
            })
        })
        .collect()
}
