//! `cost`: what each kernel launch of one sim run costs — FLOPs by input type and vector
//! element-ops, GM bytes moved against the minimum (inputs read once, outputs written once,
//! a hand-off through GM once per value: `LaunchStats::gm_min_bytes`), scalar GM accesses,
//! its roofline time on the plan's chip profile (max of cube, vector and HBM time, the HBM
//! time of the minimum: a floor of the work, not of how a kernel moves it) — and its
//! modeled device time (the sim's timeline, [`crate::modeled`]) with what bounds it; the
//! layer's modeled time is the chain.

use std::path::Path;
use std::time::Duration;

use abi::plan::ChipProfile;
use harness::backend::LaunchCounters;
use harness::runtime::{RunRecord, StepKind, StepRecord};
use serde_json::{Value, json};

use crate::modeled::{Timeline, us};
use crate::stop::Stop;

/// Moved / minimum above this is flagged (the project's goal per kernel).
pub const RATIO_LIMIT: f64 = 1.25;

/// The cost of one launch.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchCost {
    pub step: usize,
    pub stage: &'static str,
    pub kernel: &'static str,
    pub block_dim: u32,
    /// 2 · MACs with bf16/fp16 inputs.
    pub bf16_flop: f64,
    /// 2 · MACs with int8 inputs.
    pub i8_op: f64,
    /// 2 · MACs with fp32 inputs.
    pub f32_flop: f64,
    pub vec_ops: f64,
    pub moved: u64,
    /// Of `moved`, what the cores read from or wrote to HBM rather than hit in L2 (the
    /// timeline's; 0 without it).
    pub hbm: u64,
    /// Every value read once and written once (`LaunchStats::gm_min_bytes`).
    pub min: u64,
    pub scalar_reads: u64,
    pub scalar_writes: u64,
    pub roofline: Duration,
    pub bound: &'static str,
    /// Cores the launch occupies (MIX: 3 per block).
    pub cores: usize,
    /// The modeled kernel time (op head and the last core's finish) and what bounds it.
    pub modeled: Option<(Duration, &'static str)>,
}

impl LaunchCost {
    /// The cost of a launch step measured by the sim (`None` for collectives, or where
    /// the backend measures nothing).
    pub fn of(s: &StepRecord, chip: &ChipProfile) -> Option<LaunchCost> {
        let StepKind::Launch {
            kernel,
            block_dim,
            counters: Some(LaunchCounters { stats: c, time, .. }),
        } = &s.kind
        else {
            return None;
        };
        let bf16_flop = 2.0 * (c.mac_bf16 + c.mac_f16) as f64;
        let i8_op = 2.0 * c.mac_i8 as f64;
        let f32_flop = 2.0 * c.mac_f32 as f64;
        let vec_ops = c.vec_elem_ops as f64;
        let moved = c.gm_bytes();
        let min = c.gm_min_bytes();
        let times = [
            (
                bf16_flop / chip.cube_bf16_flops
                    + i8_op / chip.cube_int8_ops
                    + f32_flop / chip.cube_f32_flops,
                "cube",
            ),
            (vec_ops / chip.vector_elem_ops, "vector"),
            (min as f64 / chip.hbm_bytes_per_s, "HBM"),
        ];
        let (secs, bound) = times
            .into_iter()
            .fold((0.0, "HBM"), |a, b| if b.0 > a.0 { b } else { a });
        Some(LaunchCost {
            step: s.step,
            stage: s.stage,
            kernel,
            block_dim: *block_dim,
            bf16_flop,
            i8_op,
            f32_flop,
            vec_ops,
            moved,
            hbm: time
                .as_ref()
                .map_or(0, |t| t.cores.iter().map(|k| k.hbm_bytes).sum()),
            min,
            scalar_reads: c.scalar_gm_reads,
            scalar_writes: c.scalar_gm_writes,
            roofline: Duration::from_secs_f64(secs),
            bound,
            cores: time.as_ref().map_or(*block_dim as usize, |t| t.cores.len()),
            modeled: time.as_ref().map(|t| (t.duration(), t.bound())),
        })
    }

    /// GM bytes moved per byte of the minimum.
    pub fn ratio(&self) -> f64 {
        if self.min == 0 {
            1.0
        } else {
            self.moved as f64 / self.min as f64
        }
    }
}

/// The costs of `rank`'s launches in `record`, in plan order.
pub fn launches(record: &RunRecord, rank: usize, chip: &ChipProfile) -> Vec<LaunchCost> {
    record
        .steps
        .iter()
        .filter(|s| s.rank == rank)
        .filter_map(|s| LaunchCost::of(s, chip))
        .collect()
}

/// The table for people: one line per launch of `rank`, collectives, totals, flags, and
/// (with the run's modeled `timeline`) the chain and the five longest launches.
pub fn print(record: &RunRecord, timeline: Option<&Timeline>, rank: usize, chip: &ChipProfile) {
    let mine: Vec<&StepRecord> = record.steps.iter().filter(|s| s.rank == rank).collect();
    let costs = launches(record, rank, chip);
    let kw = costs
        .iter()
        .map(|c| c.kernel.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let sw = mine.iter().map(|s| s.stage.len()).max().unwrap_or(5).max(5);
    let mb = |b: u64| b as f64 / 1e6;
    println!(
        "{:>3}  {:sw$}  {:kw$}  {:>6}  {:>5}  {:>9}  {:>9}  {:>9}  {:>8}  {:>9}  {:>9}  {:>6}  {:>11}  {:>10}  {:12}  {:>11}  bound",
        "#",
        "stage",
        "kernel",
        "blocks",
        "cores",
        "bf16 GF",
        "int8 GOP",
        "f32 GF",
        "vec Gop",
        "GM MB",
        "min MB",
        "ratio",
        "scalar r/w",
        "modeled µs",
        "(bound)",
        "roofline µs"
    );
    for s in &mine {
        match &s.kind {
            StepKind::Exchange {
                bytes,
                cross_rank_bytes,
            } => {
                let modeled = timeline
                    .and_then(|t| t.rank(rank).find(|x| x.step == s.step))
                    .map(|x| format!("; modeled {:.1} µs", us(x.time)))
                    .unwrap_or_default();
                println!(
                    "{:>3}  {:sw$}  {:kw$}  received {:.2} MB, {:.2} MB of it from other ranks{modeled}",
                    s.step,
                    s.stage,
                    "(collective)",
                    mb(*bytes),
                    mb(*cross_rank_bytes)
                )
            }
            StepKind::Launch { .. } => {
                let Some(c) = costs.iter().find(|c| c.step == s.step) else {
                    continue;
                };
                let flag = if c.ratio() > RATIO_LIMIT { " !" } else { "" };
                let (modeled, why) = match c.modeled {
                    Some((t, b)) => (format!("{:.1}", us(t)), format!("({b})")),
                    None => ("-".into(), String::new()),
                };
                println!(
                    "{:>3}  {:sw$}  {:kw$}  {:>6}  {:>5}  {:>9.3}  {:>9.3}  {:>9.3}  {:>8.3}  {:>9.2}  {:>9.2}  {:>6}  {:>11}  {:>10}  {:12}  {:>11.1}  {}{flag}",
                    c.step,
                    c.stage,
                    c.kernel,
                    c.block_dim,
                    c.cores,
                    c.bf16_flop / 1e9,
                    c.i8_op / 1e9,
                    c.f32_flop / 1e9,
                    c.vec_ops / 1e9,
                    mb(c.moved),
                    mb(c.min),
                    format!("{:.2}", c.ratio()),
                    format!("{}/{}", c.scalar_reads, c.scalar_writes),
                    modeled,
                    why,
                    c.roofline.as_secs_f64() * 1e6,
                    c.bound
                );
            }
        }
    }
    let sum = |f: &dyn Fn(&LaunchCost) -> f64| costs.iter().map(f).sum::<f64>();
    let (moved, hbm, min) = (
        costs.iter().map(|c| c.moved).sum::<u64>(),
        costs.iter().map(|c| c.hbm).sum::<u64>(),
        costs.iter().map(|c| c.min).sum::<u64>(),
    );
    println!(
        "total: bf16 {:.2} GFLOP, int8 {:.2} GOP, f32 {:.2} GFLOP, vector {:.3} Gop; GM {:.1} MB moved ({:.1} MB of it at HBM), {:.1} MB minimum (ratio {:.2}); scalar GM {} reads / {} writes; roofline {:.1} µs",
        sum(&|c| c.bf16_flop) / 1e9,
        sum(&|c| c.i8_op) / 1e9,
        sum(&|c| c.f32_flop) / 1e9,
        sum(&|c| c.vec_ops) / 1e9,
        mb(moved),
        mb(hbm),
        mb(min),
        if min == 0 {
            1.0
        } else {
            moved as f64 / min as f64
        },
        costs.iter().map(|c| c.scalar_reads).sum::<u64>(),
        costs.iter().map(|c| c.scalar_writes).sum::<u64>(),
        sum(&|c| c.roofline.as_secs_f64()) * 1e6,
    );
    let over: Vec<String> = costs
        .iter()
        .filter(|c| c.ratio() > RATIO_LIMIT)
        .map(|c| format!("{} ({:.2}×)", c.kernel, c.ratio()))
        .collect();
    if !over.is_empty() {
        println!(
            "moving more than {RATIO_LIMIT}× their minimum (!): {}",
            over.join(", ")
        );
    }
    let Some(t) = timeline else {
        println!("no modeled time (the sim's timeline was off)");
        return;
    };
    println!(
        "{}; the roofline's sum {:.1} µs",
        t.summary(),
        sum(&|c| c.roofline.as_secs_f64()) * 1e6
    );
    let mut top: Vec<&LaunchCost> = costs.iter().filter(|c| c.modeled.is_some()).collect();
    top.sort_by_key(|c| std::cmp::Reverse(c.modeled.map(|m| m.0)));
    let top: Vec<String> = top
        .iter()
        .take(5)
        .map(|c| {
            let (t, b) = c.modeled.expect("filtered");
            format!("{} {:.1} µs ({b})", c.kernel, us(t))
        })
        .collect();
    println!("longest launches: {}", top.join(", "));
}

/// `cost --report FILE.json`: per launch of `rank` its figures, per collective its
/// modeled time, and the layer totals.
pub fn write_report(
    path: &Path,
    variant: &str,
    record: &RunRecord,
    timeline: Option<&Timeline>,
    rank: usize,
    chip: &ChipProfile,
) -> Result<(), Stop> {
    let span = |step: usize| timeline.and_then(|t| t.rank(rank).find(|x| x.step == step));
    let costs = launches(record, rank, chip);
    let steps: Vec<Value> = record
        .steps
        .iter()
        .filter(|s| s.rank == rank)
        .map(|s| match costs.iter().find(|c| c.step == s.step) {
            Some(c) => json!({
                "step": c.step,
                "stage": c.stage,
                "kernel": c.kernel,
                "blocks": c.block_dim,
                "cores": c.cores,
                "roofline_us": us(c.roofline),
                "roofline_bound": c.bound,
                "modeled_us": c.modeled.map(|m| us(m.0)),
                "bound": c.modeled.map(|m| m.1),
                "start_us": span(c.step).map(|x| us(x.start)),
                "gm_bytes": c.moved,
                "hbm_bytes": c.hbm,
                "gm_min_bytes": c.min,
            }),
            None => json!({
                "step": s.step,
                "stage": s.stage,
                "kernel": null,
                "collective": true,
                "modeled_us": span(s.step).map(|x| us(x.time)),
                "start_us": span(s.step).map(|x| us(x.start)),
            }),
        })
        .collect();
    let doc = json!({
        "variant": variant,
        "rank": rank,
        "steps": steps,
        "launches": costs.len(),
        "roofline_us": costs.iter().map(|c| us(c.roofline)).sum::<f64>(),
        "modeled_us": timeline.map(|t| us(t.total)),
        "launch_gap_us": timeline.map(|t| us(t.chip.launch_gap)),
    });
    let text = serde_json::to_string_pretty(&doc).expect("JSON serialises");
    std::fs::write(path, text + "\n")
        .map_err(|e| Stop::usage(format!("--report {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::kernel_library::LaunchStats;

    const CHIP: ChipProfile = ChipProfile {
        name: "test",
        aic_cores: 1,
        aiv_cores: 1,
        cube_bf16_flops: 1e12,
        cube_int8_ops: 2e12,
        cube_f32_flops: 0.25e12,
        vector_elem_ops: 1e11,
        hbm_bytes_per_s: 1e11,
    };

    fn step(stats: LaunchStats) -> StepRecord {
        StepRecord {
            rank: 0,
            step: 3,
            stage: "o_proj",
            kind: StepKind::Launch {
                kernel: "k",
                block_dim: 4,
                counters: Some(LaunchCounters {
                    stats,
                    args: Vec::new(),
                    time: None,
                }),
            },
            start: Duration::ZERO,
            end: Duration::from_millis(1),
            device: None,
        }
    }

    fn cost(stats: LaunchStats) -> LaunchCost {
        LaunchCost::of(&step(stats), &CHIP).unwrap()
    }

    #[test]
    fn the_roofline_is_the_slowest_unit_on_the_minimum_and_the_ratio_counts_re_reads() {
        // 1e9 bf16 MACs = 2 ms of cube; 1e6 bytes = 10 µs of HBM
        let moved = LaunchStats {
            gm_read_bytes: 750_000,
            gm_write_bytes: 250_000,
            gm_min_read_bytes: 250_000,
            gm_min_write_bytes: 250_000,
            ..Default::default()
        };
        let c = cost(LaunchStats {
            mac_bf16: 1_000_000_000,
            ..moved
        });
        assert_eq!(c.bound, "cube");
        assert!((c.roofline.as_secs_f64() - 2e-3).abs() < 1e-9);
        assert_eq!((c.moved, c.min), (1_000_000, 500_000));
        assert_eq!(c.ratio(), 2.0);
        // bytes bound by their minimum, not by what the kernel moved: 5 µs, not 10
        let copy = cost(moved);
        assert_eq!(copy.bound, "HBM");
        assert!((copy.roofline.as_secs_f64() - 5e-6).abs() < 1e-12);
        // int8 runs twice as fast; bytes dominate a copy
        let q = cost(LaunchStats {
            mac_i8: 1_000_000,
            gm_read_bytes: 1_000_000,
            gm_min_read_bytes: 1_000_000,
            ..Default::default()
        });
        assert_eq!(q.bound, "HBM");
        assert!((q.roofline.as_secs_f64() - 1e-5).abs() < 1e-12);
        assert_eq!(q.ratio(), 1.0);
    }
}
