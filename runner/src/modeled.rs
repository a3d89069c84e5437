//! The modeled device time of a layer run (the sim's timeline, `harness/sim/include/sim/
//! timing.h`): every rank enqueues its launches and collectives on one stream, so a launch
//! starts when the rank's previous step ended plus the device's gap between kernels, and
//! lasts its modeled kernel time; a collective starts when every rank reached it and lasts
//! its latency plus the bytes received from other ranks at the interconnect's per-peer
//! bandwidth, the peers sending in parallel. The layer's time is the last rank's end.
//! Omitted: the host (nothing waits for it), overlap of consecutive kernels on the stream.

use std::time::Duration;

use harness::kernel_library::{ChipTiming, KernelTime};
use harness::runtime::{RunRecord, StepKind};

/// One step of a rank on the modeled timeline.
#[derive(Debug, Clone)]
pub struct Span<'a> {
    pub rank: usize,
    pub step: usize,
    pub stage: &'static str,
    /// The kernel, or "collective".
    pub name: &'static str,
    pub start: Duration,
    pub time: Duration,
    /// What bounds it: the kernel's busiest resource, or "interconnect".
    pub bound: &'static str,
    /// The launch's modeled kernel (with its calls when traced), as the record holds it.
    pub kernel: Option<&'a KernelTime>,
}

/// A run on the modeled timeline.
#[derive(Debug, Clone)]
pub struct Timeline<'a> {
    pub chip: ChipTiming,
    /// Every rank's steps in plan order.
    pub spans: Vec<Span<'a>>,
    /// The last rank's end.
    pub total: Duration,
}

impl<'a> Timeline<'a> {
    /// The modeled timeline of `record`, or `None` when its launches carry no modeled time
    /// (the npu backend, or the sim without its timeline).
    pub fn of(record: &'a RunRecord) -> Option<Timeline<'a>> {
        let chip = record.steps.iter().find_map(|s| match &s.kind {
            StepKind::Launch {
                counters: Some(c), ..
            } => c.time.as_ref().map(|t| t.chip),
            _ => None,
        })?;
        let tp = record.tp.max(1);
        let mut clock = vec![Duration::ZERO; tp];
        let mut spans = Vec::with_capacity(record.steps.len());
        let mut order: Vec<usize> = record.steps.iter().map(|s| s.step).collect();
        order.sort_unstable();
        order.dedup();
        for step in order {
            let here: Vec<_> = record.steps.iter().filter(|s| s.step == step).collect();
            let meet = here.iter().map(|s| clock[s.rank]).max().unwrap_or_default();
            for s in &here {
                let (start, time, bound, kernel) = match &s.kind {
                    StepKind::Launch { counters, .. } => {
                        let t = counters.as_ref().and_then(|c| c.time.as_ref())?;
                        let start = clock[s.rank] + chip.launch_gap;
                        (start, t.duration(), t.bound(), Some(t))
                    }
                    StepKind::Exchange {
                        cross_rank_bytes, ..
                    } => {
                        let peers = (tp - 1).max(1) as f64;
                        let wire = *cross_rank_bytes as f64 / (peers * chip.hccs_bytes_per_s);
                        let time = chip.collective_latency + Duration::from_secs_f64(wire);
                        (meet, time, "interconnect", None)
                    }
                };
                clock[s.rank] = start + time;
                spans.push(Span {
                    rank: s.rank,
                    step,
                    stage: s.stage,
                    name: s.kind.name(),
                    start,
                    time,
                    bound,
                    kernel,
                });
            }
        }
        let total = clock.into_iter().max().unwrap_or_default();
        Some(Timeline { chip, spans, total })
    }

    /// The spans of `rank`.
    pub fn rank(&self, rank: usize) -> impl Iterator<Item = &Span<'a>> {
        self.spans.iter().filter(move |s| s.rank == rank)
    }

    /// One line for people: the total and how it divides.
    pub fn summary(&self) -> String {
        let r0: Vec<&Span> = self.rank(0).collect();
        let sum = |kernels: bool| -> Duration {
            r0.iter()
                .filter(|s| s.kernel.is_some() == kernels)
                .map(|s| s.time)
                .sum()
        };
        let (kernels, collectives) = (sum(true), sum(false));
        let launches = r0.iter().filter(|s| s.kernel.is_some()).count();
        format!(
            "modeled device time {:.1} µs: {launches} kernels {:.1} µs + {launches} launch gaps {:.1} µs + collectives {:.1} µs (rank 0)",
            us(self.total),
            us(kernels),
            us(self.chip.launch_gap * launches as u32),
            us(collectives)
        )
    }
}

pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
