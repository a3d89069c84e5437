//! What a run measured: every step of every rank with its wall time and (on the sim)
//! its counters, and the per-stage wall times derived from them.

use std::time::Duration;

use crate::backend::{LaunchCounters, StepTime};

/// What a step did.
#[derive(Debug, Clone, PartialEq)]
pub enum StepKind {
    Launch {
        kernel: &'static str,
        block_dim: u32,
        /// Sim counters; `None` on a backend that measures none.
        counters: Option<LaunchCounters>,
    },
    /// A collective: bytes this rank received, and how many of them came from other ranks.
    Exchange { bytes: u64, cross_rank_bytes: u64 },
}

impl StepKind {
    /// The kernel, or "collective".
    pub fn name(&self) -> &'static str {
        match self {
            StepKind::Launch { kernel, .. } => kernel,
            StepKind::Exchange { .. } => "collective",
        }
    }
}

/// One step on one rank; times are offsets from the start of the run's steps.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord {
    pub rank: usize,
    /// Index in the plan's steps.
    pub step: usize,
    pub stage: &'static str,
    pub kind: StepKind,
    pub start: Duration,
    pub end: Duration,
    /// The step's time as the device measured it (the npu backend's events), when known.
    pub device: Option<StepTime>,
}

impl StepRecord {
    pub fn wall(&self) -> Duration {
        self.end.saturating_sub(self.start)
    }
}

/// Wall time of one stage: from its first step's start to its last step's end on a rank,
/// the maximum over ranks (a collective includes waiting for the slowest rank).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageTime {
    pub stage: &'static str,
    pub wall: Duration,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub tp: usize,
    /// Every rank's steps, rank-major, in plan order.
    pub steps: Vec<StepRecord>,
    /// Allocating, poisoning and uploading the buffers.
    pub setup: Duration,
    /// From the first step to the last rank's last step.
    pub execute: Duration,
    /// Reading the outputs back.
    pub readback: Duration,
    /// The layer as the device measured it: the slowest rank's time from before its first
    /// step to after its last (the npu backend's events).
    pub device: Option<Duration>,
}

impl RunRecord {
    pub fn total(&self) -> Duration {
        self.setup + self.execute + self.readback
    }

    /// Stages in plan order with their wall times.
    pub fn stage_times(&self) -> Vec<StageTime> {
        let mut order: Vec<&'static str> = Vec::new();
        for s in &self.steps {
            if !order.contains(&s.stage) {
                order.push(s.stage);
            }
        }
        order
            .into_iter()
            .map(|stage| {
                let wall = (0..self.tp)
                    .filter_map(|rank| {
                        let mut mine = self
                            .steps
                            .iter()
                            .filter(|s| s.rank == rank && s.stage == stage);
                        let first = mine.next()?;
                        let last = mine.next_back().unwrap_or(first);
                        Some(last.end.saturating_sub(first.start))
                    })
                    .max()
                    .unwrap_or_default();
                StageTime { stage, wall }
            })
            .collect()
    }

    /// The steps of one rank, in plan order.
    pub fn rank(&self, rank: usize) -> impl Iterator<Item = &StepRecord> {
        self.steps.iter().filter(move |s| s.rank == rank)
    }
}
